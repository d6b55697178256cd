"""Chapter 1's module (eaglebook.chapters.task): its phrases, checks and glue, on fake inputs."""

from types import SimpleNamespace as NS

import pytest
import torch

from eaglebook.chapters import task as chapter_task
from eaglebook.config import TaskConfig


def test_tail_shape_by_the_declared_factor():
    assert chapter_task.tail_shape(0.7, 1.25).startswith("light:")
    assert chapter_task.tail_shape(1.3, 1.25).startswith("heavy:")
    assert chapter_task.tail_shape(1.0, 1.25).startswith("about exponential:")
    assert chapter_task.tail_shape(1 / 1.25, 1.25).startswith("about exponential:")   # the bounds are inside
    assert chapter_task.tail_shape(1.25, 1.25).startswith("about exponential:")


def test_setting_phrase_names_the_shapes():
    assert chapter_task.setting_phrase(TaskConfig()) == "n = 18, d = 18, n′ = 2, d′ = 2, rank s = 10, α = 0.7"
    assert "n = 12, d = 10" in chapter_task.setting_phrase(TaskConfig(n=12, d=10))


def _checks(**kw):
    args = dict(ranks=torch.tensor([10, 10, 10]), nystrom_rel=1e-14, tol=NS(nystrom_rel_err=1e-10, kappa_rel_err=1e-8),
                ols_gap=1e-15, kappa_err=1e-12, generator_rank=40) | kw
    return {c.key: c for c in chapter_task.checks(TaskConfig(), **args)}


def test_checks_hold_on_a_good_task():
    cs = _checks()
    assert list(cs) == ["C1_rank_min", "C1_rank_max", "C1_nystrom_rel_err", "C1_scalar_ols_gap", "C1_kappa_rel_err",
                        "C1_generator_rank"]
    for c in cs.values():
        assert (c.lower is None or c.value >= c.lower) and (c.upper is None or c.value <= c.upper), c.key


def test_checks_catch_a_wrong_rank_and_a_loose_completion():
    cs = _checks(ranks=torch.tensor([10, 9, 11]), nystrom_rel=1e-6)
    assert cs["C1_rank_min"].value == 9 and cs["C1_rank_min"].lower == 10
    assert cs["C1_rank_max"].value == 11 and cs["C1_rank_max"].upper == 10
    assert cs["C1_nystrom_rel_err"].value > cs["C1_nystrom_rel_err"].upper


def test_glued_tail_numbers():
    g = chapter_task.glued(TaskConfig(), mse_noisy=0.2, mse_zero=0.1, n_samples=1000, quantiles=(2.0, 5.0, 9.0),
                           excess=(7.0, 5.0, 3.0), factor=1.25, tail="heavy: heavier than an exponential tail")
    assert g["C1_normA_gap"] == 3.0 and g["C1_normA_max_over_median"] == 4.5 and g["C1_expo_max"] == 7.0
    assert g["C1_tail_ratio"] == pytest.approx(1.4) and g["C1_tail_word"] == "heavy"
    assert g["C1_task_setting"].startswith("n = 18")


def test_glued_refuses_a_noisy_completion_better_than_zero():
    with pytest.raises(AssertionError, match="amplifies the noise"):
        chapter_task.glued(TaskConfig(), mse_noisy=0.05, mse_zero=0.1, n_samples=10, quantiles=(1.0, 2.0, 3.0),
                           excess=(2.0, 2.0, 1.0), factor=1.25, tail="about exponential: …")

"""Chapter 1's module (eaglebook.chapters.task): its phrases, checks and glue, on fake inputs."""

from types import SimpleNamespace as NS

import numpy as np
import pytest
import torch

from eaglebook.chapters import task as chapter_task
from eaglebook.config import TaskConfig


def test_tail_reading_between_the_references_within_the_spread():
    # the paper-profile build: 4.88 between the Gaussian 4.03 and the exponential 5.68, spread 0.79
    r = chapter_task.tail_reading(4.878, gauss=4.033, expo=5.677, spread=0.791)
    assert r.startswith("not distinguishable between Gaussian and exponential: ")
    assert "between the two references" in r and "about equally far from both" in r and "within 2 spreads" in r
    # the ci build: below both, much nearer the Gaussian, the exponential still within two spreads
    r = chapter_task.tail_reading(3.336, gauss=3.469, expo=4.505, spread=0.760)
    assert r.startswith("not distinguishable") and "below both references" in r and "closer to the Gaussian one" in r


def test_tail_reading_excludes_a_reference_beyond_the_declared_spreads():
    assert chapter_task.tail_reading(3.5, gauss=4.0, expo=8.0, spread=0.5).startswith("Gaussian-like: ")
    assert chapter_task.tail_reading(7.5, gauss=4.0, expo=8.0, spread=0.5).startswith("exponential-like: ")
    assert chapter_task.tail_reading(2.0, gauss=4.0, expo=8.0, spread=0.5).startswith("lighter than Gaussian: ")
    assert chapter_task.tail_reading(12.0, gauss=4.0, expo=8.0, spread=0.5).startswith("heavier than exponential: ")
    assert chapter_task.tail_reading(6.0, gauss=4.0, expo=8.0, spread=0.5).startswith("between Gaussian and exponential: ")
    # the bound is inside: exactly k spreads away is not excluded
    assert chapter_task.tail_reading(5.0, gauss=4.0, expo=6.0, spread=0.5, spreads=2).startswith("not distinguishable")
    assert chapter_task.tail_reading(5.0, gauss=4.0, expo=6.0, spread=0.5, spreads=1.5).startswith("between ")


def test_tail_references_pass_through_the_two_quantiles():
    x = np.exp(np.random.default_rng(0).normal(1, 0.3, 4000))
    q50, q99 = np.quantile(x, [0.5, 0.99])
    for t, P in chapter_task.tail_references(x).values():
        assert t[0] == pytest.approx(q50) and P[0] == pytest.approx(0.5)
        assert np.interp(0.01, P[::-1], t[::-1]) == pytest.approx(q99, rel=1e-3)
        assert P[-1] == pytest.approx(1 / 40000, rel=1e-6)


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
    tail = chapter_task.tail_reading(7.0, gauss=3.0, expo=5.0, spread=0.6)
    g = chapter_task.glued(TaskConfig(), mse_noisy=0.2, mse_zero=0.1, n_samples=1000, quantiles=(2.0, 5.0, 9.0),
                           excess=(7.0, 5.0, 3.0), spread=0.6, spreads=2.0, tail=tail)
    assert g["C1_normA_gap"] == 3.0 and g["C1_normA_max_over_median"] == 4.5 and g["C1_expo_max"] == 7.0
    assert g["C1_tail_ratio"] == pytest.approx(1.4) and g["C1_tail_word"] == "heavier than exponential"
    assert g["C1_tail_spread"] == 0.6 and g["C1_tail_spreads"] == 2.0 and "C1_tail_factor" not in g
    assert g["C1_task_setting"].startswith("n = 18")


def test_glued_refuses_a_noisy_completion_better_than_zero():
    with pytest.raises(AssertionError, match="amplifies the noise"):
        chapter_task.glued(TaskConfig(), mse_noisy=0.05, mse_zero=0.1, n_samples=10, quantiles=(1.0, 2.0, 3.0),
                           excess=(2.0, 2.0, 1.0), spread=0.5, spreads=2.0, tail="not distinguishable: …")

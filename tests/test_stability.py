"""Headline verdicts resampled: a verdict decided by a few prompts is not judged, and says which prompts."""

import numpy as np
import pytest

from eaglebook.ledger import HEADLINE, Ledger, at_most
from eaglebook.stability import FLIP_SHARE, Resampled, deciders, stability
from eaglebook.timing import Ratio


def verdict(x):
    return "reproduced" if x <= 1.0 else "not reproduced"


def test_a_median_far_from_the_boundary_is_stable():
    x = np.random.default_rng(0).uniform(0.1, 0.3, 101)
    st = stability(Resampled(x, np.median), verdict)
    assert st.stable and st.share == 0 and st.k is None


def test_a_mean_decided_by_one_prompt_is_unstable_and_names_it():
    x = np.full(50, 0.5)
    x[17] = 30.0                                   # the mean is 1.09: one prompt pushes it over the boundary
    st = stability(Resampled(x, np.mean), verdict)
    assert not st.stable and st.share > FLIP_SHARE
    assert st.k == 1 and st.deciders == (17,)
    assert st.why() == "decided by 1 of 50 prompts (17)"


def test_deciders_counts_the_fewest_removals():
    x = np.array([0.9] * 10 + [1.05] * 9)         # median 0.9; removing 1 of the low ones leaves 0.9 ... until the middle moves
    k, names = deciders(x, np.median, verdict)
    assert k is not None and verdict(np.median(np.delete(x, list(names)))) != verdict(np.median(x))
    assert all(verdict(np.median(np.delete(x, list(names[:j])))) == verdict(np.median(x)) for j in range(k))


def test_the_ledger_does_not_judge_an_unstable_headline(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLEBOOK_CLAIMS", str(tmp_path))
    led = Ledger(chapter="06_newton_schulz", profile="test")
    led.declare("k", what="w", criterion=at_most(1.0), claim="theorem1-kappa", role=HEADLINE)
    x = np.full(50, 0.5)
    x[3] = 30.0
    assert led.record("k", Resampled(x, np.mean)) == "not judged"
    row = led.comparisons["k"]
    assert row["why"].startswith("decided by 1 of 50 prompts") and row["ours"] == pytest.approx(np.mean(x))
    assert row["stability"]["share"] > FLIP_SHARE and row["criterion_verdict"] == "not reproduced"


def test_a_timing_taken_on_a_loaded_machine_is_not_judged(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLEBOOK_CLAIMS", str(tmp_path))
    led = Ledger(chapter="07_benchmarks", profile="test")
    for key in ("busy", "idle"):
        led.declare(key, what="w", criterion=at_most(1.0), claim="cg-100x")
    busy = Ratio("a", "b", 0.5, 0.4, 0.6, 5, load=4.3, cores=2)
    idle = Ratio("a", "b", 0.5, 0.4, 0.6, 5, load=0.7, cores=2)
    assert led.record("busy", 0.5, timing=busy) == "not judged" and led.comparisons["busy"]["why"] == "loaded machine"
    assert led.record("idle", 0.5, timing=idle) == "reproduced"
    assert led.comparisons["busy"]["load"] == [4.3, 2]

"""Chapter 8's module (eaglebook.chapters.distributed): its summaries and phrases on small fake inputs, and its
declared comparisons."""

from types import SimpleNamespace as NS

import numpy as np
import pytest

from eaglebook import comparisons
from eaglebook.chapters import distributed as c8
from eaglebook.comparisons import c08_distributed
from eaglebook.ledger import in_range


def test_rounds_to_counts_from_one_and_says_never():
    assert c8.rounds_to([1.0, 1e-3, 1e-7, 1e-9]) == 3
    assert c8.rounds_to([1e-7]) == 1
    assert c8.rounds_to([1.0, 1e-5]) is None
    assert c8.rounds_to([1.0, 1e-5], eps=1e-4) == 2


def test_small_words():
    assert [c8.words(k) for k in (0, 1, 4, 10, 11)] == ["no", "one", "four", "ten", "11"]
    assert (c8.num(0.011234), c8.num(48.61), c8.num(1330.4)) == ("0.0112", "48.6", "1,330")
    assert (c8.plural(1, "check"), c8.plural(2, "check"), c8.plural(2, "process", "processes")) == \
        ("1 check", "2 checks", "2 processes")
    assert (c8.times(1), c8.times(2), c8.times(5)) == ("once", "twice", "5 times")


def test_kappa_max_ignores_zero_singular_values():
    a = np.diag([10.0, 1.0, 0.0])            # rank 2: κ over the positive singular values is 10
    b = np.diag([4.0, 2.0, 1.0])
    assert c8.kappa_max([a, b]) == pytest.approx(10.0)


def test_sweep_summary_averages_per_value():
    alphas = {(label, t): [t, t] for label, ts in c8.ALPHAS.items() for t in ts}
    rounds = {(label, t): [10, 20] for label, ts in c8.ALPHAS.items() for t in ts}
    s = c8.sweep_summary(alphas, rounds)
    assert list(s) == list(c8.ALPHAS)
    assert s["camera-ready"] == (list(c8.ALPHAS["camera-ready"]), [15.0] * 4)


def test_gd_summary_and_table_mark_capped_runs():
    first = [dict(alpha=a, gd=NS(iterations=it, status=st)) for a, it, st in
             ((1.0, 100, "target"), (0.7, 300, "target"), (0.35, 900, "target"), (0.01, 12_000, "max_iter"))]
    gd = c8.gd_summary(first)
    assert gd == {"camera-ready": ([1.0, 0.7, 0.35, 0.01], [100.0, 300.0, 900.0, 12000.0], [True, True, True, False])}
    sweep = {label: (list(ts), [10.0] * len(ts)) for label, ts in c8.ALPHAS.items()}
    table = c8.sweep_table(sweep, gd)
    assert "12,000 (cap: lower bound)" in table and table.count("\n") == 9


def test_gd_alpha_note_only_when_values_coincide():
    assert c8.gd_alpha_note((1.0, 0.83, 0.35, 0.01), [1.0, 0.67, 0.35, 0.01]) == ""
    note = c8.gd_alpha_note((1.0, 0.83, 0.35, 0.01), [1.0, 1.0, 0.35, 0.01])
    assert note.startswith("; the first problem of ᾱ = 0.83") and "four problems have three distinct values" in note


def test_gd_cap_note_counts():
    assert c8.gd_cap_note([1, 0.5], [True, True]) == "no GD run hit the round cap"
    assert c8.gd_cap_note([1, 0.5], [True, False]).startswith("the GD run at α = 0.5 hit the round cap")
    assert c8.gd_cap_note([1, 0.5], [False, False]).startswith("2 of the 2 GD runs (at α = 1 and 0.5)")


def test_gd_median_range():
    crit = in_range(10, 100, partly=3)
    assert c8.gd_median_range([20.0, 30.0, 40.0], [True, True, True], crit) == ""
    # capped run unbounded: the median of (20, 30, ∞) is 30 — the verdict holds over the range
    assert "holds over that whole range" in c8.gd_median_range([20.0, 30.0, 40.0], [True, True, False], crit)
    # the upper median crosses the criterion's boundary
    text = c8.gd_median_range([50.0, 60.0, 95.0, 99.0, 200.0], [True, False, False, True, True], crit)
    assert "at most" in text and "the criterion would say" in text
    assert "no upper bound" in c8.gd_median_range([20.0, 30.0], [False, False], crit)


def test_gd_trend_compares_spreads():
    assert "so GD's vary more" in c8.gd_trend([10, 20], [100, 1000], [True, True])
    assert "so GD's vary less" in c8.gd_trend([10, 100], [100, 200], [True, True])
    capped = c8.gd_trend([10, 20], [100, 12000], [True, False])
    assert "at least" in capped and "vary at least as much" in capped
    assert "spread is not known" in c8.gd_trend([10, 20], [12000, 12000], [False, False])


def test_slope_story():
    assert c8.slope_story({"a": 0.8, "b": 0.9}).startswith("Both slopes are below 1, as fits")
    assert c8.slope_story({"a": 1.1, "b": 0.9}).startswith("The slope for the b values is below 1")
    assert c8.slope_story({"a": 1.1, "b": 1.2}) == "Neither slope is below 1."


def _row(target, rounds, per, capped=None):
    capped = capped or {k: False for k in rounds}
    return dict(target=target, alpha=target, rounds=rounds, per=per, capped=capped,
                bytes={k: 8 * rounds[k] * per[k] for k in rounds}, rank=9)


def test_decide_and_winners():
    assert c8.decide({"EAGLE": 10, "GD": 100, "CG": 20}, {"EAGLE": False, "GD": False, "CG": False}) == \
        ("EAGLE", "EAGLE, by 2× over CG")
    assert c8.decide({"EAGLE": 10, "CG": 10}, {"EAGLE": False, "CG": False})[0] == "EAGLE = CG (tie)"
    assert c8.decide({"GD": 5, "CG": 10}, {"GD": True, "CG": False})[0] == "undecided (GD hit the cap)"
    per = {"EAGLE": 100, "GD": 96, "CG": 96}
    rows = [_row(1.0, {"EAGLE": 10, "GD": 100, "CG": 20}, per), _row(0.01, {"EAGLE": 30, "GD": 1000, "CG": 20}, per)]
    w = c8.winners(rows, "rounds")
    assert w == [("EAGLE for ᾱ = 1", " (by 2× over CG)"), ("CG for ᾱ = 0.01", " (by 1.5× over EAGLE)")]
    assert "fewest rounds" in c8.decision_table(rows) and c8.decision_table(rows).count("\n") == 3


def test_cg_phrases():
    per = {"EAGLE": 100, "GD": 96, "CG": 96}
    rows = [_row(1.0, {"EAGLE": 10, "GD": 100, "CG": 20}, per),
            _row(0.01, {"EAGLE": 30, "GD": 1000, "CG": 12000}, per, {"EAGLE": False, "GD": True, "CG": True})]
    assert c8.cg_capped(rows) == "1 of the 2 CG runs hit the cap, so its count is a lower bound"
    assert c8.cg_gd_bound(rows) == " (the GD run that hit the cap gives a lower bound)"
    assert c8.cg_story([5.0, 2.0], [2.0, 3.0]) == "CG needs fewer rounds than GD on every problem, and more than EAGLE on every problem"
    assert c8.cg_story([0.5, 2.0], [0.5, 3.0]).endswith("fewer than EAGLE on one of the two")
    assert "Every run here stays within that bound" in c8.cg_rank_story([5, 8], [9, 9])
    assert "One of the two runs need more" in c8.cg_rank_story([5, 12], [9, 9])
    table = c8.dcg_table(rows, d=48, kappa=1e3, cap=12_000)
    assert table.startswith("M = 3, d = 48, κ_max = 1e+03") and "≥ 12,000" in table and table.count("\n") == 5


def _real(**kw):
    base = dict(checks=2, gathers=1, gather_bytes=[120.0, 120.0, 120.0], time_per_round=[6e-3, 6e-3, 6e-3],
                compute_per_round=[6e-4, 6e-4, 6e-4], comm_per_round=[4e-3, 4e-3, 4e-3])
    return NS(**(base | kw))


def test_process_phrases():
    assert c8.checks_text(_real()) == "The rule ran 2 checks; the processes gathered once, 120 bytes per process in all"
    assert c8.checks_text(_real(gathers=0)).endswith("the processes never gathered")
    assert c8.wire_rest(1000.0, 432.0, 3) == "the other 424 bytes per round are gloo's own framing and messages on the same sockets"
    assert c8.wire_rest(500.0, 432.0, 3).startswith("the counter shows 76 bytes per round fewer")
    per_round = {"simulation": np.array([1.8e-3, 2e-3]), "serial loop": np.array([1.8e-3, 2.6e-3])}
    story = c8.parallel_story(3, _real(), per_round, cores=2)
    assert "is slower than one process" in story and "2 usable cores for the 3 processes" in story
    assert "at least one per process" in c8.parallel_story(3, _real(time_per_round=[1e-3] * 3), per_round, cores=4)
    assert "is faster than" in c8.parallel_story(3, _real(time_per_round=[1e-3] * 3), per_round, cores=4)
    parts = c8.round_parts(per_round, _real(), 3)
    assert list(parts)[:2] == ["simulation (1 process)", "serial loop (1 process)"] and parts["process 2"] == (6e-4, 4e-3)
    assert c8.collective_bytes(NS(iterations=10, payload_bytes_per_round=400, gather_bytes=[100, 120])) == 4110.0


def test_comparisons_as_declared():
    keys = [r.key for r in comparisons.rows("08_distributed")]
    assert keys == ["C8_M_spread", "C8_alpha_slope", "C8_alpha_slope_v1", "C8_gd_ratio", "C8_gd_ratio_paired",
                    "C8_freeze_rounds", "C8_freeze_time", "C8_freeze_time_paired"]
    rows = {r.key: r for r in c08_distributed.ROWS}
    # the prose: the earlier version's values get the same criterion
    assert rows["C8_alpha_slope_v1"].criterion == rows["C8_alpha_slope"].criterion
    assert rows["C8_gd_ratio_paired"].supersedes == "C8_gd_ratio"
    assert rows["C8_freeze_time_paired"].supersedes == "C8_freeze_time"

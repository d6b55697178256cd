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
    alone = c8.sweep_table(sweep)
    assert "GD" not in alone and alone.count("\n") == 9 and alone.splitlines()[1] == "|---|---|---|---|"


def test_gd_alpha_note_only_when_values_coincide():
    assert c8.gd_alpha_note((1.0, 0.83, 0.35, 0.01), [1.0, 0.67, 0.35, 0.01]) == ""
    note = c8.gd_alpha_note((1.0, 0.83, 0.35, 0.01), [1.0, 1.0, 0.35, 0.01])
    assert note.startswith("; the first problem of ᾱ = 0.83") and "four problems have three distinct values" in note


def test_gd_cap_note_counts():
    assert c8.gd_cap_note([1, 0.5], [True, True]) == "no GD run hit the round cap"
    assert c8.gd_cap_note([1, 0.5], [True, False]).startswith("the GD run at α = 0.5 hit the round cap")
    assert c8.gd_cap_note([1, 0.5], [False, False]).startswith("2 of the 2 GD runs (at α = 1 and 0.5)")


def test_gd_median_range_and_censoring():
    crit = in_range(10, 100, partly=3)
    assert c8.gd_median_range([20.0, 30.0, 40.0], [True, True, True], crit) == ""
    # capped run unbounded: the median of (20, 30, ∞) is 30 — the verdict holds over the range
    assert c8.median_bounds([20.0, 30.0, 40.0], [True, True, False]) == (30.0, 30.0)
    assert c8.censored_why([20.0, 30.0, 40.0], [True, True, False], crit) == ""
    assert "the same over that whole range" in c8.gd_median_range([20.0, 30.0, 40.0], [True, True, False], crit)
    # the upper median crosses the criterion's boundary: censored, and the range phrase leaves it to the verdict
    v, ok = [50.0, 60.0, 95.0, 99.0, 200.0], [True, False, False, True, True]
    assert c8.median_bounds(v, ok) == (95.0, 200.0)
    assert c8.censored_why(v, ok, crit) == ("2 of the 5 GD runs hit the round cap, so the median is known only "
                                            "to be at least 95 and at most 200, a range that crosses a boundary of the "
                                            "criterion")
    assert c8.gd_median_range(v, ok, crit) == ""
    # two of four capped: no upper bound (the paper-profile and ci case of the issue)
    v, ok = [276.0, 571.0, 187.0, 11.8], [True, False, True, False]
    assert c8.median_bounds(v, ok)[1] == float("inf")
    assert c8.censored_why(v, ok, crit).endswith("at least 232 (no upper bound), a range that crosses a boundary of the "
                                                 "criterion")
    # a lower bound beyond the partly band decides the verdict alone: judged
    assert c8.censored_why([400.0, 500.0, 600.0], [True, False, False], crit) == ""
    assert "has no upper bound" in c8.gd_median_range([400.0, 500.0, 600.0], [True, False, False], crit)


def test_a_censored_median_is_not_judged_where_its_bounds_disagree(tmp_path, monkeypatch):
    from eaglebook.ledger import Censored, Ledger
    from eaglebook.stability import Resampled
    monkeypatch.setenv("EAGLEBOOK_CLAIMS", str(tmp_path))
    led = Ledger(chapter="08_distributed", profile="test")
    for row in c08_distributed.ROWS:
        led.declare(row.key, **row.declaration())
    v, ok = np.array([276.0, 571.0, 187.0, 11.8]), [True, False, True, False]
    upper, why = c8.median_bounds(v, ok)[1], c8.censored_why(v, ok, in_range(10, 100, partly=3))
    assert led.record("C8_gd_ratio", Censored(float(np.median(v)), upper, why)) == "not judged"
    row = led.comparisons["C8_gd_ratio"]
    assert row["why"] == "censored: " + why and row["bounds"] == [float(np.median(v)), None]
    assert row["criterion_verdict"] == "partly"
    paired = Censored(Resampled(v, np.median, unit="problems", names=["a", "b", "c", "d"]), upper, why)
    assert led.record("C8_gd_ratio_paired", paired) == "not judged"
    assert led.comparisons["C8_gd_ratio_paired"]["why"].startswith("censored: " + why)   # the censoring first
    # the bounds agree: the row keeps its verdict, and records its bounds
    assert led.record("C8_M_spread", Censored(1.1, 1.15)) == "reproduced"
    assert led.comparisons["C8_M_spread"]["bounds"] == [1.1, 1.15] and led.comparisons["C8_M_spread"]["why"] == ""


def test_alpha_runs_and_slope_are_the_sweeps_statistic():
    rng = np.random.default_rng(0)
    alphas = {(label, t): list(t * rng.uniform(0.9, 1.1, 3)) for label, ts in c8.ALPHAS.items() for t in ts}
    rounds = {(label, t): list(10 / t * rng.uniform(0.8, 1.2, 3)) for label, ts in c8.ALPHAS.items() for t in ts}
    sweep = c8.sweep_summary(alphas, rounds)
    for label in c8.ALPHAS:
        runs = c8.alpha_runs(alphas, rounds, label)
        assert runs.shape == (3, 4, 2)
        al, it = sweep[label]
        assert c8.alpha_slope(runs) == pytest.approx(np.polyfit(np.log(1 / np.asarray(al)), np.log(it), 1)[0], rel=1e-12)
        assert c8.alpha_slope(runs[[0, 0, 2]]) != c8.alpha_slope(runs)       # a resample of the runs


def test_recorded_resamples_the_headlines_and_times_with_the_load():
    from eaglebook.stability import Resampled
    from eaglebook.timing import Ratio
    ts = c8.ALPHAS["camera-ready"]
    runs = {label: np.ones((2, 4, 2)) * np.array([1.0, 10.0]) for label in c8.ALPHAS}
    r = Ratio("frozen", "plain", 0.5, 0.4, 0.6, 5, load=3.0, cores=2)
    tf = NS(seconds={"frozen": [1.0, 2.0], "plain": [2.0, 4.0]})
    out = c8.recorded(m_rounds=[10, 11], runs=runs, sweep={"camera-ready": (list(ts), [10.0] * 4)},
                      gd={"camera-ready": (list(ts), [100.0] * 4, [True] * 4)}, gd_same=[10.0, 20.0, 30.0, 40.0],
                      frozen=NS(iterations=5), plain=NS(iterations=5), tf=tf, r_freeze=r)
    assert isinstance(out["C8_alpha_slope"], Resampled) and out["C8_alpha_slope"].unit == "runs"
    assert isinstance(out["C8_gd_ratio_paired"], Resampled) and out["C8_gd_ratio_paired"].value == 25.0
    assert out["C8_gd_ratio_paired"].names == [f"ᾱ = {t:g}" for t in ts]
    assert out["C8_freeze_time"] == (0.5, r) and out["C8_freeze_time_paired"] == (0.5, r)   # both timing rows carry the load


def test_timing_load_phrases():
    from eaglebook.timing import Ratio
    r = Ratio("the simulation", "the serial loop", 0.5, 0.4, 0.6, 5)
    busy = c8.with_load(r, {"load": 4.51, "usable_cores": 2}, {"load": 4.39})
    idle = c8.with_load(r, {"load": 0.4, "usable_cores": 16}, {"load": 1.01})
    assert (busy.load, busy.cores, busy.loaded) == (4.51, 2, True) and (idle.load, idle.loaded) == (1.01, False)
    assert c8.timing_verdict(busy) == "not judged: loaded machine (load average 4.51 on 2 usable cores)"
    assert c8.timing_verdict(idle) == "the simulation faster"
    assert c8.load_phrase(busy).endswith("at or above the core count, so the timing is not judged")
    assert c8.load_phrase(idle) == "the load average stayed below the 16 usable cores (at most 1.01)"
    assert c8.load_phrase(r).startswith("the load average was not recorded")
    assert c8.load_short(busy) == "load average 4.51 on 2 usable cores: a loaded machine"
    assert c8.load_short(idle) == "load average at most 1.01 on 16 usable cores"


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
    assert c8.cg_summary(rows) == {"camera-ready": ([1.0, 0.01], [20.0, 12000.0], [True, False])}
    table = c8.dcg_table(rows, d=48, kappa=1e3, cap=12_000)
    assert table.startswith("M = 3, d = 48, κ_max = 1e+03") and "≥ 12,000" in table and table.count("\n") == 5


def test_cg_against_eagle_follows_the_data():
    per = {"EAGLE": 100, "GD": 96, "CG": 96}
    cg_wins = [_row(1.0, {"EAGLE": 21, "GD": 6000, "CG": 9}, per), _row(0.01, {"EAGLE": 1020, "GD": 12000, "CG": 10}, per)]
    assert c8.cg_vs_eagle(cg_wins) == ("needs fewer rounds than EAGLE on every problem (by 2.33× to 102×), and sends fewer "
                                       "bytes than EAGLE on every problem (by 2.43× to 106×)")
    mixed = [_row(1.0, {"EAGLE": 21, "GD": 6000, "CG": 57}, per), _row(0.35, {"EAGLE": 35, "GD": 6000, "CG": 59}, per),
             _row(0.01, {"EAGLE": 976, "GD": 50000, "CG": 65}, per, {"EAGLE": False, "GD": True, "CG": False})]
    assert c8.cg_vs_eagle(mixed).startswith("needs more rounds than EAGLE on two of the three problems (ᾱ = 1 and 0.35; "
                                            "by 1.69× to 2.71×) and fewer on one of the three problems (ᾱ = 0.01; by 15×)")
    # a capped CG count below EAGLE's is a lower bound: the order is not known
    capped = [_row(1.0, {"EAGLE": 21, "GD": 6000, "CG": 12}, per, {"EAGLE": False, "GD": False, "CG": True})]
    (rel, where, factors), = c8.versus(capped, "rounds")
    assert (rel, where) == ("undecided", [1.0]) and np.isnan(factors[0])
    assert "not ranked" in c8.cg_vs_eagle(capped)


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
    loaded = c8.parallel_story(3, _real(), per_round, cores=2, loaded=True)
    assert "not compared" in loaded and "slower" not in loaded and "faster" not in loaded
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

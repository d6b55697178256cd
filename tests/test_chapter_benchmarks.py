"""Chapter 7's module (eaglebook.chapters.benchmarks) and comparisons: its statistics, phrases and tables on
small fake harness results."""

import math

import numpy as np
import pytest

from eaglebook import comparisons, config
from eaglebook.chapters import benchmarks as bm


def test_formats():
    assert bm.fmt_t(None) == "—" and bm.fmt_t(0.0123) == "12.3 ms" and bm.fmt_t(2.5) == "2.5 s"
    assert bm.fmt_i(None) == "—" and bm.fmt_i(12345) == "12,345"


def test_faster_and_floor_story():
    assert bm.faster(2.0, "CG") == "2.0× faster than CG"
    assert bm.faster(0.25, "CG") == "4.0× slower than CG"
    assert bm.floor_story(1.1).startswith("EAGLE runs at its GEMM floor (within 1.1×)")
    assert "take 3 times what the GEMM rate allows" in bm.floor_story(3.0)


def _sweep_row(kappa, eagle, svd, rank_deficient=False):
    return dict(kappa=kappa, rank_deficient=rank_deficient, vs_svd=dict(eagle_times=eagle, svd_times=svd))


def test_svd_ratios_judge_the_worst_full_rank_kappa():
    sweep = [_sweep_row(1e2, [2.0, 2.2, 1.8], [1.0, 1.0, 1.0]),
             _sweep_row(1e4, [4.0, 4.0, 4.0], [1.0, 1.0, 1.0]),
             _sweep_row(1e4, [100.0, 100.0, 100.0], [1.0, 1.0, 1.0], rank_deficient=True)]   # not judged
    r = bm.svd_ratios(sweep)
    assert r.kappas == [1e2, 1e4] and r.raw == pytest.approx([2.0, 4.0]) and r.worst == 1
    assert r.per_log[1] == pytest.approx(4.0 / (math.log2(1e4) + math.log2(math.log2(1e6))))
    assert r.pairs[0].repeats == 3 and r.pairs[0].lo == pytest.approx(1.8)


def test_svd_ratios_a_missed_repeat_is_infinite():
    r = bm.svd_ratios([_sweep_row(1e2, [2.0, 2.0], [1.0, 1.0]), _sweep_row(1e8, [None, 3.0], [1.0, 1.0])])
    assert r.pairs[1] is None and math.isinf(r.raw[1]) and r.worst == 1


def _r_sweep(its6, its2):
    return [dict(n_over_r=q, eagle={"to": {"1e-06": {"iterations": a}, "0.01": {"iterations": b}}})
            for q, a, b in zip((1, 2, 4, 8), its6, its2)]


def test_sketch_slopes():
    its = [10 * q ** 1.5 for q in (1, 2, 4, 8)]
    s = bm.sketch_slopes(_r_sweep(its, [3 * q for q in (1, 2, 4, 8)]))
    assert s["all"] == pytest.approx(1.5) and s["sketched"] == pytest.approx(1.5) and s["to_1e2"] == pytest.approx(1.0)
    s = bm.sketch_slopes(_r_sweep([10, 40, None, 640], [3, None, 12, 24]))   # a run that missed a target
    assert s["all"] == pytest.approx(2.0) and s["sketched"] == pytest.approx(2.0) and math.isnan(s["to_1e2"])
    assert math.isnan(bm.sketch_slopes(_r_sweep([10, None, None, None], [1, 2, 4, 8]))["all"])


def test_sgd_ratio_pairs_only_runs_that_reached_the_target():
    r = bm.sgd_ratio(dict(eagle_times=[1.0, None, 2.0], sgd_times=[3.0, 1.0, 2.0]))
    assert (r.a, r.b, r.repeats) == ("SGD", "EAGLE", 2) and r.median == pytest.approx(2.0)
    assert bm.sgd_ratio(dict(eagle_times=[None], sgd_times=[1.0])) is None


def test_randsketch_best_takes_the_best_eagle_variant():
    assert bm.randsketch_best(dict(ratio={"EAGLE": 2.0, "EAGLE (power)": 1.5, "RandSketch+CG": 1.0, "EAGLE (x)": None})) == 1.5
    assert math.isnan(bm.randsketch_best(dict(ratio={"EAGLE": None, "RandSketch+CG": 1.0})))


def test_exp_conclusion():
    assert "hardly grow" in bm.exp_conclusion({"a": 0.5}, {"a": 1.0, "b": 1.2})
    text = bm.exp_conclusion({"a": 1.0, "b": 2.0}, {"a": 2.8, "b": 2.5})
    assert text.startswith("For every method") and "a is at 2.7 or more" in text
    text = bm.exp_conclusion({"a": 3.0, "b": 2.0}, {"a": 2.0, "b": 2.5})
    assert text.startswith("For 1 of the 2 methods") and "every slope is below 2.7" in text


def test_model_trend_and_batch_floor_story():
    assert bm.model_trend(10.0, 2.0).startswith("the ratio falls")
    assert bm.model_trend(2.0, 10.0).startswith("the ratio does not fall")
    assert bm.batch_floor_story([dict(ratio=dict(max=1.2))]).startswith("within the goal")
    assert bm.batch_floor_story([dict(ratio=dict(max=1.2)), dict(ratio=dict(max=2.0))]).startswith("above the goal")


def _floor_run(final, status="converged"):
    return dict(final=final, floor=final if final is not None else 1e-3, status=status)


def _fl():
    u = {"float64": 1e-16, "float32": 1e-7}
    rows = []
    for k in (1e2, 1e8):
        runs = {"float64": {"gelsy": _floor_run(1e-15), "EAGLE": _floor_run(2e-15), "Newton–Schulz": _floor_run(1e-12)},
                "float32": {"gelsy": _floor_run(1e-6), "EAGLE": _floor_run(1e-6 if k < 1e4 else 1e-5, "rank_deficient" if k > 1e4 else "converged"),
                            "Newton–Schulz": _floor_run(None)}}
        rows.append(dict(kappa=k, runs=runs, reference={dt: dict(kappa_u=k * u[dt]) for dt in u}))
    return dict(unit_roundoff=u, methods=["gelsy", "EAGLE", "Newton–Schulz"], rows=rows, n=64)


def test_floor_stories():
    fl = _fl()
    close, far = bm.near_ref(fl, "float64")
    assert close == ["EAGLE"] and far == ["Newton–Schulz (first at κ = 1e+02: 1e+03× gelsy's error)"]
    close, far = bm.near_ref(fl, "float32")
    assert close == [] and far[0].startswith("EAGLE (first at κ = 1e+08") and far[1] == "Newton–Schulz (first at κ = 1e+02: non-finite)"
    s = bm.floor_stories(fl)
    assert s["C7_af_story_float64"].startswith("In float64, gelsy stays within 10·u at every κ; within 10× of its error at every κ: EAGLE;")
    assert "The worst case does not happen" in s["C7_af_why"]          # gelsy: 1e-15 against κ·u = 1e-8
    assert s["C7_af_eagle"] == "EAGLE's error where it stops is at most 2.0e-15 in float64 and at most 1.0e-05 in float32 over κ = 1e+02 … 1e+08"
    assert s["C7_af_rankdef"].startswith("In float32 EAGLE ends with the status rank-deficient at κ = 1e+08:")
    assert "| κ·u | float32 | 1.0e-05 | 1.0e+01 |" in bm.floors_table(fl)


def _dec(fastest, kind="direct", job="sizes", margin_decided=True, eagle_rank=3):
    return dict(setting="single machine", job=job, shape="square", size="64×64" if job != "batched" else "200 × 8×8",
                kappa=1e4, precision="float64", threads=1, fastest=fastest, runner_up="gelsd",
                margin=dict(median=1.5, lo=1.4, hi=1.6, decided=margin_decided), eagle_rank=eagle_rank, methods=5,
                fastest_over_eagle=dict(median=0.1))


def test_decision_stories():
    rea = dict(matrix="HB/illc1850")
    d = bm.decision_stories([_dec("gelsy"), _dec("SVD", margin_decided=False), _dec("gelsy")], rea)
    assert d["C7_dec_story"].startswith("A direct method (a LAPACK driver or Cholesky) is the fastest in every setting")
    assert (d["C7_dec_rows"], d["C7_dec_direct"], d["C7_dec_noise"], d["C7_dec_eagle_wins"]) == (3, 3, 1, 0)
    assert d["C7_sparse_story"].startswith("On the sparse real matrix (HB/illc1850, part (c)) EAGLE's dense products rank it 3 of 5")
    assert d["C7_batch_story"] == "no batch was timed." and d["C7_dec_pe_best"] == 0.1
    d = bm.decision_stories([_dec("gelsy"), _dec("EAGLE (polar-express)", eagle_rank=2), _dec("CG", eagle_rank=None)], rea)
    assert d["C7_dec_story"].startswith("A direct method is the fastest in 1 of the 3 settings; in the other 2: ")
    assert d["C7_dec_eagle_wins"] == 1 and d["C7_dec_eagle_place"] == "2–3"
    assert "EAGLE did not reach the tolerance" in d["C7_sparse_story"]
    d = bm.decision_stories([_dec("LU (numpy.linalg.solve)", job="batched"), _dec("gelsy")], rea)
    assert d["C7_batch_story"].startswith("for a batch of 200 problems of 8×8 (κ = 1e+04)")


def test_accelerated_and_the_check():
    def run(i6, i12):
        return {"to": {"1e-06": i6, "1e-12": i12}}
    kr = [dict(kappa=k, runs={"EAGLE": run(e6, e12), "EAGLE (polar-express)": run(p6, p12)}, vs_eagle={})
          for k, e6, e12, p6, p12 in ((1e2, 10, None, 5, 6), (1e8, 30, 30, 10, 12))]
    _, fewer = bm.accelerated(kr)
    assert fewer[0][0] == 2.0 and math.isnan(fewer[0][1]) and fewer[1] == [3.0, 2.5]
    [c] = bm.checks({"grid": {"results": {"kappa": {"rows": kr}}}})
    assert c.key == "C7_acc_fewer_1e8" and c.lower == 2.0 and c.value == 2.5     # the smaller of the two, at κ = 1e8


def test_precision_stories():
    q = lambda v: dict(median=0.5, lo=0.4, hi=0.6, verdict=v)
    gr = dict(precision=dict(f32_over_f64={"EAGLE": q("EAGLE [float32] faster"), "SVD": None, "CG": q("within noise")}),
              threads=dict(cores=2, all_over_one={"EAGLE": q("EAGLE [1 thr] faster"), "gelsy": q("gelsy [2 thr] faster")}))
    s = bm.precision_stories(gr)
    assert s["C7_prec_story"] == "float32 is faster beyond the noise for EAGLE (of 2 timed in both precisions)"
    assert s["C7_thr_story"] == "2 threads are faster for gelsy and slower for EAGLE" and s["C7_thr_why"]
    gr["threads"] = dict(cores=1, all_over_one={})
    assert "one core" in bm.precision_stories(gr)["C7_thr_story"] and bm.precision_stories(gr)["C7_thr_why"] == ""


def test_power_table():
    t = bm.power_table({(2 / 3, 2.0, None): [1e-3, 1e-2, 1e-1], (2 / 3, 2.0, 10): [1e-15, 2e-15, 3e-15]})
    assert "| 0.667 | 2.000 | default | 1.0e-02 | 1.0e-01 |" in t and "| 0.667 | 2.000 | 10 | 2.0e-15 | 3.0e-15 |" in t


def test_comparisons_name_the_profile_sizes():
    rows = comparisons.rows("07_benchmarks", config.get("ci"))
    assert len(rows) == 14 and len({r.key for r in rows}) == 14
    by = {r.key: r for r in rows}
    ci = config.get("ci").bench
    assert f"n = {ci.central_n}" in by["C7_svd_time_ratio"].what and f"n = {ci.sketch_n}" in by["C7_sgd_speedup"].what
    assert by["C7_svd_time_ratio"].supersedes == "C7_svd_log_factor" and by["C7_svd_time_ratio"].declared.startswith("after the run")
    assert by["C7_table2_vs_svd"].paper == pytest.approx(np.mean([e / s for _, e, s, _, _ in bm.PAPER_TABLE2]))
    assert f"n = {config.BenchSizes().central_n}" in {r.key: r for r in comparisons.rows("07_benchmarks")}["C7_svd_log_factor"].what

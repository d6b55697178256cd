"""Chapter 11's module (eaglebook.chapters.beyond): its tables, summaries and phrases, on fake inputs."""

import math
from types import SimpleNamespace as NS

import pytest

from eaglebook import beyond
from eaglebook.chapters import beyond as page
from eaglebook.comparisons import rows
from eaglebook.stability import Resampled

ALL = dict(zip(beyond.TESTS, [True] * 4))
NONE = dict(zip(beyond.TESTS, [False] * 4))


def _assessed(**kw):
    return dict(offdiag_qk=0.1, offdiag_vp=0.1, eta=1.0, gamma=1.9, fidelity=1e-4, reduction=40.0, n=18.0, n_prime=2.0) | kw


def test_every_declared_row_is_one_the_chapter_records_resampled_over_seeds():
    seeds = (0, 1, 2)
    stats = {(c.key, s): _assessed(offdiag_qk=0.1 * (s + 1)) for c in beyond.CHANGES for s in seeds}
    out = page.recorded(stats, seeds, {"model": [1.0, 1.3, float("nan")], "eagle": [0.9, 1.0, 1.1]})
    assert set(out) == {r.key for r in rows("11_beyond")}
    assert all(isinstance(v, Resampled) and v.unit == "seeds" and list(v.names) == list(seeds) for v in out.values())
    assert out["C11_softmax_same"].value == beyond.same_algorithm(beyond.median_stats([stats["softmax", s] for s in seeds]))
    assert out["C11_depth8_order"].value == pytest.approx(1.15) and out["C11_depth8_order_eagle"].value == 1.0
    assert all(r.criterion == beyond.CRITERION for r in rows("11_beyond") if "_same" in r.key)


def test_the_sized_rows_supersede_the_declared_ones_for_the_changes_of_size():
    by = {r.key: r for r in rows("11_beyond")}
    assert [k for k in by if k.endswith("_sized")] == ["C11_scale_same_sized"]
    new, old = by["C11_scale_same_sized"], by["C11_scale_same"]
    assert new.supersedes == "C11_scale_same" and new.role == "headline" and new.declared.startswith("after the run (v0.4.0")
    assert old.role == "evidence" and old.declared == "in advance" and by["C11_depth8_same"].role == "headline"
    assert page.headline("scale") == "C11_scale_same_sized" and page.headline("depth8") == "C11_depth8_same"
    med = {"scale": _assessed(offdiag_qk=0.5, n=36.0), "depth8": _assessed(offdiag_qk=0.5)}
    sized = page.sized_results(med)
    assert list(sized) == ["scale"] and sized["scale"][0]["structure"] and sized["scale"][1] == 4.0
    assert page.sized_story(med["scale"])[0] == pytest.approx(beyond.sized_mass(0.5, "qk", 36, 2))


def test_held_list_and_the_reference():
    assert page.held_list(NONE) == "none" and page.held_list(ALL | {"fidelity": False}) == "structure, scaling law, beats zero"
    assert page.ref_story(ALL) == "4 of the 4 tests"
    t = page.ref_story(ALL | {"structure": False})
    assert t.startswith("3 of the 4 tests (it fails: structure), so a change that fails the same test")


@pytest.mark.parametrize("read,text", [
    ({"eagle": 0.2, "gd": 0.5}, "EAGLE (0.20, against 0.50)"),
    ({"eagle": 0.6, "gd": 0.3}, "gradient descent (0.30, against 0.60)"),
    ({"eagle": 1.2, "gd": 1.0}, "neither (both distances are at least 1)")])
def test_nearest(read, text):
    assert page.nearest(read) == text


def test_the_softmax_sentences():
    sm = dict(eta=4.5, gamma=59.0, fidelity=60.0)
    # the reference passes both tests and softmax does not: the softmax normalisation is named
    t = page.softmax_scalars(sm, NONE, ALL)
    assert t.startswith(". A softmax layer divides") and "η = 4.5 and γ = 59," in t and t.endswith("far from the model's activations.")
    assert page.softmax_scalars(sm | {"fidelity": 0.5}, NONE, ALL).endswith("fidelity 5.0e-01.")
    assert page.softmax_scalars(sm, NONE, NONE) == "." and page.softmax_scalars(sm, ALL, ALL) == "."
    same = {"softmax": {"eagle": 0.2, "gd": 0.5}, "paper": {"eagle": 0.1, "gd": 0.6}}
    assert page.softmax_linear(same) == "so is the linear model's (0.10 and 0.60 to EAGLE and GD)."
    other = {"softmax": {"eagle": 0.6, "gd": 0.5}, "paper": {"eagle": 0.1, "gd": 0.6}}
    assert page.softmax_linear(other) == "the linear model's is closest to EAGLE (0.10, against 0.60)."
    far = {"softmax": {"eagle": 2.0, "gd": 1.5}, "paper": {"eagle": 1.1, "gd": 1.2}}
    assert page.softmax_linear(far).startswith("the linear model's is closest to neither")
    assert page.softmax_structure(ALL) == "holds" and page.softmax_structure(NONE) == "fails"


def test_depth_phrases():
    assert page.median_order([1.0, math.nan, 2.0]) == 1.5 and math.isnan(page.median_order([math.nan]))
    assert page.gamma_spread([[1.0, 2.0], [1.0, 4.0]]) == 3.0
    assert math.isnan(page.gamma_spread([[-1.0, 2.0]]))
    assert page.gamma_spread_story([1.44, math.nan]) == "1.4 times the smallest, of the other sign than the smallest"
    read = {"depth8": {"eagle": 0.2, "gd": 0.5}, "paper": {"eagle": 0.3, "gd": 0.4}}
    assert page.depth8_reading(read, ALL) == "EAGLE (0.20, against 0.50); the 4-layer model's sits 0.30 from 4 iterations of EAGLE"
    read["depth8"]["eagle"] = 0.45
    assert page.depth8_reading(read, NONE) == "EAGLE (0.45, against 0.50), though its structure test fails"
    assert page.norm_spread_story(31.0, 3.0).startswith("a few prompts grow far beyond")
    assert page.norm_spread_story(29.0, 3.0) == "within a factor 10 of the 4-layer model's."
    assert [page.rate(p) for p in (2.0, 1.3, 1.0, 0.5, math.nan)] == [
        "quadratic or faster (doubly exponential)", "between linear and quadratic",
        "about linear (a constant factor per layer)", "slower than linear", "slower than linear"]
    t = page.burnin_story(1.0, 1.9, 69.7, 10, 8)
    assert t.startswith(": its doubly exponential phase") and "median κ of 69.7 over their 10" in t and t.endswith("8 iterations do not reach it.")
    assert page.burnin_story(1.6, 1.9, 69.7, 10, 8) == "." and page.burnin_story(1.0, 1.2, 69.7, 10, 8) == "."


def test_noise_summary_and_phrases():
    nmse = {("noise_all", "noisy"): 0.02, ("noise_half", "noisy"): 0.03, ("paper", "noisy"): 0.05,
            ("noise_all", "clean"): 0.004, ("noise_half", "clean"): 0.003, ("paper", "clean"): 0.001,
            ("zero", "noisy"): 0.1, ("zero", "clean"): 0.1}
    ns = page.noise_summary(nmse, ("noise_all", "noise_half", "paper"))
    assert ns["best"] == {"noisy": "noise_all", "clean": "paper"}
    assert ns["half_over_all"] == pytest.approx(1.5) and ns["zero_best"] == pytest.approx(5.0) and ns["clean_ref"] == pytest.approx(100)
    assert page.noise_best(ns["best"]) == ("On noisy prompts the best model is the one trained with σ² = 0.01 on every sample; "
                                           "on clean prompts, the one trained with the paper's set-up.")
    assert page.noise_best({"noisy": "paper", "clean": "paper"}).startswith("On noisy prompts and on clean ones")
    assert page.noise_zero_story(5.0, 100.0).startswith(", below the beats-zero test's 10, while on clean prompts the reference is 100")
    assert page.noise_zero_story(5.0, 8.0) == "." and page.noise_zero_story(20.0, 100.0) == "."


def test_floor_summary_and_phrase():
    ftm = {"true D": {"model": 0.02, "vs_truth": 0.0}, "low-rank part of D": {"model": 0.01, "vs_truth": 0.01},
           "Nyström B A^† C": {"model": 0.03, "vs_truth": 0.05}, "rank-10 Nyström B A_10^† C": {"model": 0.005, "vs_truth": 0.02},
           "zero matrix": {"model": 0.1, "vs_truth": 0.2}}
    fs = page.floor_summary(ftm)
    assert fs == {"closest": "rank-10 Nyström B A_10^† C", "best": "rank-10 Nyström B A_10^† C", "ceiling": pytest.approx(20.0)}
    assert page.floor_ceiling_story(20.0) == "." and page.floor_ceiling_story(8.75).startswith(", below the beats-zero test's 10")
    assert "| zero matrix | 0.1 | 0.2 |" in page.floor_table(ftm)


def test_the_verdict_story_and_the_outcomes_table():
    verdicts = {k: "not reproduced" for k in page.ANSWERED} | {"softmax": "reproduced", "depth2": "partly"}
    read = {k: {"eagle": 0.9, "gd": 0.5} for k in page.CH} | {"paper": {"eagle": 0.2, "gd": 0.9},
                                                            "depth8": {"eagle": 0.1, "gd": 0.6}}
    held = {k: NONE for k in page.CH} | {"lr_low": ALL | {"fidelity": False, "scaling law": False, "beats zero": False}}
    yes, no, end = page.verdict_story(verdicts, read, held)
    assert yes == "1 of the 10 changes (softmax attention)" and no.startswith("8: 8 layers")
    # the word follows the readings table: the 8-layer model fails the structure test yet sits closer to EAGLE
    assert "8 layers (the structure test fails, yet its prediction sits 0.10 from EAGLE's, closer than the reference's 0.20)" in no
    assert ("(the structure test fails, and its prediction sits nearer gradient descent's (0.50) than EAGLE's (0.90; "
            "the reference's: 0.20))") in no
    assert end == ". Under 1 the structure is there but not all four tests hold."
    unjudged = verdicts | {"depth2": "not judged"}
    assert page.verdict_story(unjudged, read, held)[2] == ". Under 1 (2 layers) the answer is not judged: a resample of the seeds changes it."
    assert page.verdict_story({k: "not reproduced" for k in page.ANSWERED}, read, held)[0] == "0 of the 10 changes"
    assert page.no_near_story(verdicts, read) == (", though the prediction of 1 of them (8 layers) sits as close to EAGLE's "
                                                  "as the reference's, or closer")
    one = {k: "partly" for k in page.ANSWERED} | {"depth8": "not reproduced"}
    assert page.no_near_story(one, read).startswith(", though its prediction (8 layers) sits as close")
    assert page.no_near_story(verdicts | {"depth8": "partly"}, read) == ""
    sized = {"scale": (ALL, 4.0)}
    row = lambda v, why="": {"verdict": v, "why": why}
    led = NS(comparisons={f"C11_{k}_same": row("partly") for k in page.ANSWERED} | {"C11_depth8_order": row("not reproduced"),
             "C11_scale_same_sized": row("not judged", "decided by 1 of 3 seeds (2)")})
    table = page.outcomes_table(held, {k: 0.0 for k in page.CH} | {"softmax": 4.0}, 1.04, led, sized)
    assert "| the paper's set-up | ✗ | ✗ | ✗ | ✗ | 0 | (reference) |" in table
    assert "| softmax attention | ✗ | ✗ | ✗ | ✗ | 4 | partly |" in table and table.endswith("| p = 1.04 | no |")
    assert "| n = d = 36, s = 20 (declared test; superseded) | ✗ | ✗ | ✗ | ✗ | 0 | partly |" in table
    assert ("| n = d = 36, s = 20 (structure at the reference's size, added after the run) | ✓ | ✓ | ✓ | ✓ | 4 | "
            "not judged: decided by 1 of 3 seeds (2) |") in table


def test_eagle_story_order_story_and_stability_story():
    ref = {"eagle": 0.2}
    assert page.eagle_story({"eagle": 0.25, "gd": 0.6}, ref) == "its prediction sits 0.25 from EAGLE's, about as close as the reference's 0.20"
    assert page.eagle_story({"eagle": 0.45, "gd": 0.6}, ref) == "its prediction sits 0.45 from EAGLE's, further than the reference's 0.20"
    assert page.eagle_story({"eagle": 1.2, "gd": 1.1}, ref) == "its prediction is no nearer EAGLE's or gradient descent's than predicting zero is"
    assert page.near_eagle({"eagle": 0.3, "gd": 0.6}, ref) and not page.near_eagle({"eagle": 0.31, "gd": 0.6}, ref)
    assert not page.near_eagle({"eagle": 0.2, "gd": 0.1}, ref)                 # gradient descent is nearer
    t = page.order_story(1.23, 0.97, "not reproduced")
    assert t.startswith("the model's error falls faster than EAGLE's, but EAGLE itself does not fall doubly")
    assert page.order_story(1.0, 1.6, "reproduced") == "EAGLE itself falls doubly exponentially here, and the model's error falls no faster than EAGLE's"
    st = lambda share, k=None, d=(): {"share": share, "resamples": 200, "n": 3, "unit": "seeds", "k": k, "deciders": list(d)}
    assert page.stability_story({"a": {"stability": st(0.0)}, "b": {"stability": st(0.05)}}) == "every answer is stable under resampling the 3 seeds"
    assert page.stability_story({"a": {"stability": st(0.3, 1, ["2"])}, "b": {"stability": st(0.0)}}) == (
        "resampling the 3 seeds changes 1 answer, not judged: a (decided by 1 of 3 seeds (2))")
    assert page.answer_text({"verdict": "partly", "why": ""}) == "partly"
    assert page.answer_text({"verdict": "not judged", "why": "decided by 1 of 3 seeds (0)"}) == "not judged: decided by 1 of 3 seeds (0)"
    verdicts = {k: "partly" for k in page.ANSWERED}
    assert page.unjudged_story(verdicts) == ""
    assert page.unjudged_story(verdicts | {"lr_low": "not judged"}) == " (1 more not judged: resampling the seeds changes its answer)"


def test_tables():
    probe_cfgs = [NS(lr=0.1, steps=1250), NS(lr=1.0, steps=1250)]
    probe = [NS(final={"test_mse_median": 0.0123}), NS(final={"test_mse_median": 0.5})]
    assert page.probe_table(probe_cfgs, probe) == ("| SGD learning rate | 0.1 | 1 |\n|---|---|---|\n"
                                                   "| held-out median MSE after 1,250 steps | 0.0123 | 0.5 |")
    m = dict(offdiag_qk=0.1, offdiag_vp=0.2, eta=1.0, gamma=1.9, fidelity=1e-4, reduction=40.0)
    assert "| 2 layers | 0.10 | 0.20 | 1 | 1.9 | 1.0e-04 | 40 | 2.5 |" in page.stats_table({"depth2": m}, {"depth2": 2.5})
    assert page.readings_table({"paper": {"eagle": 0.4, "gd": 0.5}}).endswith("| the paper's set-up | 0.40 | 0.50 |")

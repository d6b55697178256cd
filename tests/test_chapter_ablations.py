"""Chapter 9's module (eaglebook.chapters.ablations): its tables, summaries and phrases, on fake inputs."""

import math
from types import SimpleNamespace as NS

import numpy as np
import pytest

from eaglebook import ablations
from eaglebook.chapters import ablations as page
from eaglebook.comparisons import rows
from eaglebook.stability import Resampled


def test_every_declared_row_is_one_the_chapter_records_and_the_noise_headlines_are_resampled_over_seeds():
    keys = [r.key for r in rows("09_ablations")]
    per = {a.key: {"rel_diff": [0.3]} for a in ablations.SKETCHED}
    defs = {k: [0.3] for k in ablations.REL_DIFF_DEFINITIONS}
    out = page.recorded(per=per, defs=defs, off=[1.0, 1.4, 0.9], gam=[0.5, 0.6, 0.9], ratios=[1.0], noise_seeds=[0, 1, 2])
    assert list(out) == keys
    heads = [r.key for r in rows("09_ablations") if r.role == "headline"]
    assert heads == ["C9_noise_offdiag_ratio", "C9_noise_gamma_ratio"]
    assert all(isinstance(out[k], Resampled) and out[k].unit == "seeds" and list(out[k].names) == [0, 1, 2] for k in heads)
    assert out["C9_noise_offdiag_ratio"].value == 1.0 and out["C9_noise_gamma_ratio"].value == 0.6   # the same statistic


def test_the_mse_reduction_is_chapter_3s_headline_statistic():
    run = NS(baselines={"zero_mse": 0.06}, history={"train_loss": np.r_[np.full(95, 1.0), np.full(5, 0.01)]},
             final={"test_mse_median": 0.001})
    assert ablations.train_loss(run) == pytest.approx(0.01) and ablations.reduction(run) == pytest.approx(6.0)  # not 60
    base = [NS(zero_mse=z, train_loss=t) for z, t in ((0.06, 0.01), (0.07, 0.02), (0.05, 0.005))]
    assert page.base_reduction_headline(base) == pytest.approx(0.06 / 0.01)        # a ratio of medians
    assert "zero ÷ training loss" in page.PANELS["reduction"][1] and "zero ÷ training loss" in page.STATS["reduction"]


def test_fmt_range_and_pct():
    assert page.fmt_range([0.5]) == "0.50" and page.fmt_range([0.4, 0.5, 0.9]) == "0.50 (0.40–0.90)"
    assert page.pct(0.123) == "12%" and page.pct(0.123, ".2f") == "12.30%" and page.pct(math.nan) == "—"


def test_the_chance_that_an_ablation_that_did_nothing_passes_the_seed_rule():
    assert page.chance_outside(2, 1) == pytest.approx(2 / 3)          # one seed against two: outside with 2/3
    assert page.chance_outside(10, 3) == pytest.approx(4 / 286)
    assert "too likely" in page.chance_story(2, 1) and "67%" in page.chance_story(2, 1)
    assert "unlikely to have done nothing" in page.chance_story(10, 3)


@pytest.mark.parametrize("overlap,words", [
    (0.2, "lies below chance"), (0.3, "about as much as random subspaces"), (0.6, "less than halfway"),
    (0.8, "more than halfway"), (0.99, "nearly as much as the same sketch")])
def test_the_overlap_story_places_the_overlap_between_chance_and_the_same_sketch(overlap, words):
    text = page.overlap_story(overlap, 0.28, 5, 18)
    assert words in text and "5-dimensional subspaces of ℝ¹⁸ give 0.28" in text


def test_candidates_split_readings_from_changes_that_contradict_the_paper_and_closest_is_on_a_log_scale():
    per = {a.key: {"rel_diff": [0.3 + i]} for i, a in enumerate(ablations.SKETCHED)}
    defs = {k: [0.6] for k in ablations.REL_DIFF_DEFINITIONS}
    readings, departing = page.candidates(per, defs, verdict=lambda key: key)
    assert {c.departs for c in readings} == {""} and all(c.departs for c in departing)
    assert readings[0].name.startswith("as written,") and readings[0].verdict == "C9_sk_base_rel_diff"
    assert len(readings) + len(departing) == len(ablations.SKETCHED) + len(ablations.REL_DIFF_DEFINITIONS) - 1
    near = [page.Candidate("a", 0.14, "", ""), page.Candidate("b", 0.5, "", "")]   # 2× below against 1.8× above
    assert page.closest(near).name == "b"
    assert "not reproduced" in page.outcome(0) and "reproduced under at least one" in page.outcome(1)


def _summary(**kw):
    s = dict(mean=2.0, median=1.0, diverged=0.001, diverged_error_share=0.6, peak_over_diverged=0.9,
             peak_over_rest=0.05, mean_rescaled=2.0, median_rescaled=1.0, worse=0.01, worse_rescaled=0.01)
    return s | kw


def test_decides_story_in_every_case():
    assert "no prompt diverges" in page.decides_story("sketched", 0, _summary())
    assert page.decides_story("sketched", 3, _summary()).endswith("so they decide the mean")
    assert "the 1 diverging prompt (0.10%) carries 60%" in page.decides_story("sketched", 1, _summary())
    assert page.decides_story("sketched", 1, _summary(diverged_error_share=0.2)).endswith("it does not decide the mean")
    assert "not finite" in page.decides_story("sketched", 2, _summary(diverged_error_share=math.nan))
    assert page.decided(2, _summary(diverged_error_share=math.nan)) and not page.decided(0, _summary())


@pytest.mark.parametrize("a,b,kind", [(0.9, 0.05, "most of the divergence"), (0.4, 0.1, "part of the divergence, not most"),
                                      (0.6, 0.2, "part of the divergence, not most"), (0.1, 0.1, "none of the divergence")])
def test_overshoot_story(a, b, kind):
    assert page.overshoot_story("unconstrained", 4, _summary(peak_over_diverged=a, peak_over_rest=b)).endswith(kind)
    assert "nothing for overshoot to explain" in page.overshoot_story("unconstrained", 0, _summary())


def test_remedy_story():
    t = page.remedy_story("distributed", _summary(mean=100.0, mean_rescaled=5.0, worse_rescaled=0.02))
    assert t.startswith("Distributed: the mean falls by a factor 20") and "removes the tail" in t and "+1.00 points" in t
    t = page.remedy_story("distributed", _summary(mean=100.0, mean_rescaled=95.0))
    assert "barely moves" in t and "does not remove the tail" in t and "is unchanged" in t
    assert "no tail to remove" in page.remedy_story("sketched", _summary())
    assert "stays infinite" in page.remedy_story("sketched", _summary(mean=math.inf, mean_rescaled=math.inf))
    assert "goes from infinite to" in page.remedy_story("sketched", _summary(mean=math.inf))


def test_kappa_split_and_story():
    t = NS(worse=np.array([True, True, False, False, False]), kappa=np.array([10.0, 30.0, 10.0, 20.0, 30.0]))
    assert page.kappa_split(t) == (20.0, 2, 20.0, 3)
    none = NS(worse=np.zeros(3, bool), kappa=np.ones(3))
    assert math.isnan(page.kappa_split(none)[0])
    kq = [10.0, 20.0, 40.0]
    assert page.kappa_story({"a": (20.0, 2, 20.0, 3)}, kq).startswith("does not separate them")
    assert "a factor 4.00 between its 5% and 95%" in page.kappa_story({"a": (20.0, 2, 20.0, 3)}, kq)
    assert page.kappa_story({"a": (40.0, 2, 20.0, 3)}, kq).startswith("separates them in part")
    assert page.kappa_story({"a": (math.nan, 0, 20.0, 3)}, kq).startswith("cannot be tested")
    assert "| a | 2 | 20 | 3 | 20 | 1.000 |" in page.kappa_table({"a": (20.0, 2, 20.0, 3)})


def test_noise_ratios_prune_spread_and_checks():
    a = dict(offdiag_qk=0.1, offdiag_vp=0.3, gamma=2.0)
    b = dict(offdiag_qk=0.2, offdiag_vp=0.2, gamma=1.0)
    off, gam = page.noise_ratios({0: (a, b)})
    assert off == [pytest.approx(1.0)] and gam == [0.5]
    assert page.prune_spread([1.2]) == "from one seed" and page.prune_spread([1.2, 0.9]) == "per seed 0.90–1.20"
    t = NS(norm_ratio=np.array([0.5, 2.0]), mse=np.array([1.0, 5.0]), mse_rescaled=np.array([1.0, 1.0]))
    (c,) = page.checks({"unconstrained": t})
    assert c.key == "C9_unconstrained_remedy_untouched" and c.value == 0.0 and c.upper == 0.0
    t = NS(norm_ratio=np.array([0.5]), mse=np.array([1.0]), mse_rescaled=np.array([1.5]))
    assert page.checks({"unconstrained": t})[0].value == 0.5


def test_ablation_table_lists_the_knobs_and_what_each_contradicts():
    table = page.ablation_table(ablations.SKETCHED)
    assert "| r = 4 | the rank of W_Q, W_K (and W_V, W_P width r + n') | `r = 4` | r = 5 ≈ n/4 (§3, Fig. 1) |" in table
    assert "| as written |" in table and "— (the paper leaves it open)" in table and "`steps = 2 × steps`" in table

"""Chapter 10's module (eaglebook.chapters.noisy_regression) and its comparisons: the errors, the phrases the
prose takes from the data, and the recorded values against the declared rows, on small fake inputs."""

from types import SimpleNamespace as NS

import numpy as np
import pytest
import torch

from eaglebook.chapters import noisy_regression as nr
from eaglebook.comparisons import c10_noisy_regression as c10
from eaglebook.icl import training
from eaglebook.ledger import PAPER_SETTING
from eaglebook.stability import Resampled


def test_one_step_error_and_their_half():
    assert nr.one_step_error(20, 10) == pytest.approx(10 * 11 / 31)
    assert nr.ONE_LAYER / nr.one_step_error(20, 10) == pytest.approx(0.4983, abs=1e-4)


def test_trimmed_leaves_out_the_worst_sequences_and_gap_closed_spans_zero_to_oracle():
    err, oracle = torch.ones(2000, dtype=torch.float64), torch.full((2000,), 0.5, dtype=torch.float64)
    err[7] = 1e6
    assert float((err - oracle).mean()) > 100 and nr.trimmed(err, oracle) == pytest.approx(0.5)
    ev = NS(yq=torch.full((100,), 2.0, dtype=torch.float64))            # predicting zero errs by ½·2² = 2
    orc = torch.full((100,), 0.5, dtype=torch.float64)
    assert nr.gap_closed(orc, orc, ev) == 1.0
    assert nr.gap_closed(torch.full((100,), 2.0, dtype=torch.float64), orc, ev) == 0.0
    assert nr.gap_closed(torch.full((100,), 1.25, dtype=torch.float64), orc, ev) == pytest.approx(0.5)


def test_early_share():
    assert nr.early_share(np.array([0.0, 0.0, 2.0])) == 0.0             # "precondition, then one step"
    assert nr.early_share(np.array([1.0, -1.0])) == 0.5


def test_depth_sentence_says_whether_the_loss_falls():
    up = nr.depth_sentence((1, 2, 3), [1.0, 0.1, 0.2])
    assert up.startswith("Our noiseless GD++ loss does not fall") and "by 0.5 to 10" in up
    down = nr.depth_sentence((1, 2), [1.76, 0.35])
    assert down.startswith("Our noiseless GD++ loss falls") and "divides it by 5.03 (theirs: 5.2 from" in down


def test_tail_sentence_names_the_models_whose_mean_the_tail_decides():
    tasks = {"0": NS(label="σ_max = 0"), "5": NS(label="σ_max = 5")}
    ours = {("0", "gdpp", 1): 1.0, ("5", "diag", 2): 0.5}
    assert nr.tail_sentence(ours, {("0", "gdpp", 1): 0.9, ("5", "diag", 2): 0.4}, tasks).startswith("on no model")
    s = nr.tail_sentence(ours, {("0", "gdpp", 1): 0.9, ("5", "diag", 2): 0.2}, tasks)
    assert s == "on DIAG (2 layers, σ_max = 5) the worst 0.1 % of sequences more than halve the mean when left out"


def test_compare_readings():
    same = nr.compare_readings(dict(model="FULL, 2 layers", fg=2.09, fe=2.07))
    assert "about equally close" in same and "within 10%" in same
    assert "the EAGLE reading is the closer one" in nr.compare_readings(dict(model="DIAG", fg=0.023, fe=0.016))
    assert "their GD++ reading is the closer one" in nr.compare_readings(dict(model="GD++", fg=1e-31, fe=0.04))


def test_shrinkage_phrases():
    assert nr.against_const(1.05, 1.0) == "about as close to the oracle as ConstRR"
    assert nr.against_const(0.5, 1.0) == "closer to the oracle than ConstRR"
    assert nr.against_const(2.0, 1.0) == "farther from the oracle than ConstRR"
    grid = np.linspace(0, 5, 6)
    curves = {"oracle": np.zeros(6), "ConstRR": np.ones(6), "AdaRR": np.ones(6), "GD++": np.ones(6) * 1.02,
              "DIAG": np.linspace(0.1, 3, 6)}
    s = nr.shrink_sentence(grid, curves, {"GD++": "GD++, 2 layers", "DIAG": "DIAG, 2 layers"})
    gd, diag = s.split("; ")
    assert gd.startswith("GD++, 2 layers is about as close") and "at σ_τ ≤ 1" in gd and "at σ_τ ≥ 4" in gd
    assert diag.startswith("DIAG, 2 layers is closer") and "farther from the oracle than ConstRR at σ_τ ≥ 4" in diag
    shaped = curves | {"ConstRR": np.arange(6.0), "GD++": 2 * np.arange(6.0) + 1}        # same shape, other scale
    assert nr.gd_const_corr(shaped) == pytest.approx(1.0)
    assert nr.gd_const_corr(shaped | {"GD++": -np.arange(6.0)}) == pytest.approx(-1.0)
    assert nr.gd_const_story(0.95).startswith("at least 0.9: the two excesses have the same shape")
    assert nr.gd_const_story(0.5).startswith("below 0.9") and "does not support" in nr.gd_const_story(0.5)


def test_verdicts_as_the_prose_quotes_them():
    judged = dict(verdict="reproduced", why="", criterion_verdict="reproduced", ours=0.3771)
    assert nr.verdict_long(judged) == "reproduced" and nr.shown(judged) == "0.377"
    off = dict(verdict="not judged", why="different setting", criterion_verdict="partly", ours=2.0)
    assert nr.verdict_long(off) == "not judged (different setting; by the criterion alone, partly)"
    assert nr.shown(off) == "2.00"


def _ledger(keys_claims):
    return NS(comparisons={k: dict(claim=c, what=k, paper=1.0, paper_text=None, ours=0.5, verdict="not judged",
                                   why="different setting", criterion_verdict="partly") for k, c in keys_claims})


def test_adarr_story_per_kind_tested_or_not():
    led = _ledger([("C10_diag_over_adarr", "v24-beat-adarr")])
    s = nr.adarr_story(led, {"diag": [7], "full": []})
    assert s.startswith("for DIAG, whose largest ratio to AdaRR's adjusted loss over depth 7 is 0.5: not judged")
    assert s.endswith("not tested for FULL, since no FULL model with 4 or more layers is trained under noise in this profile")
    assert nr.adarr_story(_ledger([]), {"diag": [], "full": []}).startswith("not tested for DIAG and FULL, since no DIAG or FULL")


def test_findings_phrases_group_by_part():
    row = lambda claim, part, crit, verdict="not judged", why="different setting": dict(
        claim=claim, part=part, role="headline", criterion_verdict=crit, verdict=verdict, why=why)
    led = NS(comparisons={"a": row("v24-gdpp-noiseless", "1 layer", "reproduced"),
                          "b": row("v24-gdpp-noiseless", "2 layers", "reproduced"),
                          "c": row("v24-gdpp-noiseless", "3 layers", "not reproduced"),
                          "d": row("v24-diag-full", None, "partly"),
                          "e": row("v24-sigma5-ridge", "AdaRR", "reproduced", "reproduced", "")})
    assert nr.by_criterion(led, "v24-gdpp-noiseless") == "reproduced (1 layer, 2 layers), not reproduced (3 layers)"
    assert nr.by_criterion(led, "v24-diag-full") == "partly" and nr.by_criterion(led, "v24-beat-adarr") == "not run"
    s5 = NS(comparisons={k: row("v24-sigma5-models", part, crit) for k, part, crit in (
        ("f", "GD++", "reproduced"), ("g", "DIAG, 3 layers", "partly"), ("h", "DIAG, 7 layers", "partly"))})
    assert nr.by_criterion(s5, "v24-sigma5-models") == "reproduced (GD++), partly (DIAG, 3 layers; DIAG, 7 layers)"
    assert nr.verdicts(led, *nr.MODEL_CLAIMS) == "not judged: different setting"
    assert nr.verdicts(led, "v24-sigma5-ridge", "v24-diag-full") == "not judged: different setting; reproduced"
    assert nr.verdicts(led, "v24-beat-adarr") == "not run"


def test_table1_leaves_out_the_ridge_rows_and_the_evidence_row():
    led = _ledger([("C10_ridge_AdaRR", "v24-sigma5-ridge"), ("C10_gdpp0_L1", "v24-gdpp-noiseless"),
                   ("C10_gamma_early_share", "not-gdpp")])
    rows = nr.table1(led).splitlines()
    assert len(rows) == 3 and rows[2] == "| C10_gdpp0_L1 | 1 | 0.5 | not judged (criterion alone: partly) |"


@pytest.mark.parametrize("profile", ["ci", "paper"])
def test_recorded_values_are_the_declared_rows(profile):
    """Every declared row gets a value and nothing else is recorded, in the order of the declarations."""
    plan = training.plan(profile)
    rng = np.random.default_rng(0)
    excess = {key: rng.exponential(i + 1, 50) for i, key in enumerate(plan)}
    ridge = {n: {m: rng.exponential(v, 50) for m, v in (("ConstRR", 0.3), ("AdaRR", 0.06), ("TunedRR", 0.05))}
             for n in training.noise_tasks()}
    trim = {key: 0.5 * float(v.mean()) for key, v in excess.items()}
    got = nr.recorded(excess, ridge, profile, trim=trim, gamma_share=0.4)
    rows = c10.rows(NS(name=profile))
    assert list(got) == [r.key for r in rows]
    dep = c10.depths(profile)
    heads = [r.key for r in rows if r.role == "headline"]
    assert all(isinstance(got[k], Resampled) and got[k].unit == "sequences" for k in heads)   # every headline resampled
    mean = lambda key: excess[key].mean()
    assert got["C10_ridge_AdaRR"].value == pytest.approx(ridge["5"]["AdaRR"].mean())
    assert got["C10_gdpp_over_const"].value == pytest.approx(mean(("5", "gdpp", dep.gd5)) / ridge["5"]["ConstRR"].mean())
    diag, full = ("5", "diag", dep.full), ("5", "full", dep.full)
    assert got["C10_diag_over_full"].value == pytest.approx(mean(diag) / mean(full))
    assert got["C10_diag_over_full_trimmed"] == pytest.approx(trim[diag] / trim[full])
    if "C10_diag_over_adarr" in got:
        assert got["C10_diag_over_adarr"].value == pytest.approx(
            max(mean(("5", "diag", L)) for L in dep.deep4_of["diag"]) / ridge["5"]["AdaRR"].mean())
    assert got["C10_gamma_early_share"] == 0.4


def test_the_rows_follow_the_profile():
    ci, paper = ({r.key: r for r in c10.rows(NS(name=p))} for p in ("ci", "paper"))
    assert paper["C10_ridge_AdaRR"].setting == PAPER_SETTING != ci["C10_ridge_AdaRR"].setting
    assert "C10_diag_over_adarr" in paper and "C10_full_over_adarr" not in paper and "C10_diag_over_adarr" not in ci
    assert [k for k in paper if k.startswith("C10_s5_")] == ["C10_s5_gdpp7", "C10_s5_diag3", "C10_s5_diag7", "C10_s5_full3"]
    assert [k for k in ci if k.startswith("C10_s5_")] == ["C10_s5_gdpp2"]
    assert paper["C10_gdpp0_L5"].note == "expected out of reach of float32 training this short"
    assert all(r.setting != PAPER_SETTING for k, r in paper.items() if not k.startswith("C10_ridge_"))
    trimmed = paper["C10_diag_over_full_trimmed"]             # added after the run, as evidence
    assert trimmed.role == "evidence" and trimmed.declared.startswith("after the run") and trimmed.claim == "v24-diag-full"


def test_checks_in_order_and_the_gdpp_reading_must_be_exact():
    rows = [dict(fg=1e-31, fe=0.04)]
    cs = nr.checks(N=20, D=10, nystrom_is_ols=1e-15, ridge_forms=2e-15, closed={"a": 0.3, "b": 0.1}, learn=0.02,
                   orientation=4e-16, read_rows=rows, floor=1.8e-14)
    assert [c.key for c in cs] == ["C10_nystrom_is_ols", "C10_ridge_forms", "C10_models_learn",
                                   "C10_orientation_identity", "C10_eagle_departs", "C10_float32_headroom"]
    assert cs[2].value == 0.1 and cs[2].lower == 0.02 and cs[4].value == 0.04
    assert cs[5].value == pytest.approx(2.65e-12 / 1.8e-14) and cs[5].lower == 10
    with pytest.raises(AssertionError):
        nr.checks(N=20, D=10, nystrom_is_ols=0, ridge_forms=0, closed={"a": 1}, learn=0, orientation=0,
                  read_rows=[dict(fg=1e-3, fe=1e-3)], floor=1e-14)


def test_float32_floor_is_half_the_squared_rounding_of_the_labels():
    yq = torch.tensor([3.0, -4.0], dtype=torch.float64)                  # rms² = 12.5
    assert nr.float32_floor(yq) == pytest.approx(0.5 * 2.0 ** -48 * 12.5)
    assert nr.float32_floor(yq) < 1e-13 < float(np.finfo(np.float32).eps) * 1.768   # not machine epsilon × the loss


def test_float32_rounding_of_a_model_is_tiny_and_not_zero():
    cfg = training.plan("ci")[("0", "gdpp", 2)]
    run = training.Run(cfg, torch.zeros(0), np.array([]), np.array([]), np.array([]), 0.0)
    from eaglebook.icl import models, task as icl
    m = models.LinearTransformer(cfg.model, cfg.task.D, generator=torch.Generator().manual_seed(0))
    run.theta = m.theta.detach().clone()
    Z = icl.prompt(icl.sample(cfg.task, 64, torch.Generator().manual_seed(1), dtype=torch.float64))
    assert 0 < nr.float32_rounding(run, Z) < 1e-8


def test_floor_sentence_tells_a_plateau_of_the_recipe_from_float32():
    gd = [1.78, 0.342, 0.0337, 0.00895, 0.00249, 0.00173, 0.00151]
    s = nr.floor_sentence(tuple(range(1, 8)), gd, 1.8e-14, 4.6e-12)
    assert s.startswith("the float32 floor, 1.8e-14, lies a factor 8.4e+10 below the loss of our deepest noiseless GD++, 0.00151")
    assert "float32 is not what limits our models. From 5 layers on each added layer divides our loss by at most 1.4" in s
    assert s.endswith("a plateau of the short recipe, not of float32") and "(Table 1's by 89 or more" in s
    falls = nr.floor_sentence((1, 2), [1.76, 0.35], 1.8e-14, 4e-13)
    assert falls.endswith("float32 is not what limits our models")
    near = nr.floor_sentence((1, 2), [1.0, 1e-12], 1.8e-14, 4e-13)
    assert near.endswith("so float32 may limit it")


def test_negative_steps_name_the_layers_and_what_they_mean():
    rows = [dict(model="GD++, 7 layers", eta=np.array([0.45, 0.49, -0.909, 0.37, -0.142, -1.26, -0.541]),
                 gamma=np.array([2.3, 4.2, 0.64, 1.3, 1.0, 1.7, 10.4])),
            dict(model="FULL, 4 layers", eta=np.array([0.7, 0.6, 0.1, 0.005]), gamma=np.array([0.8, -1.0, 1.6, 0.6]))]
    s = nr.negative_steps(rows)
    assert s == ("GD++, 7 layers: η_ℓ < 0 in layers 3, 5, 6 and 7 (−0.909, −0.142, −1.26, −0.541), every γ_ℓ is positive; "
                 "FULL, 4 layers: every η_ℓ is positive, γ_ℓ < 0 in layer 2 (−1)")
    m = nr.negative_meaning(rows[0])
    assert "raises the condition number" in m and "4 of its 7 layers" in m and "not plain gradient descent" in m
    assert nr.negative_meaning(rows[1]).startswith("Every conditioning step of FULL, 4 layers is positive")


def test_resampling_words():
    stable = dict(share=0.01, resamples=200, n=2000, unit="sequences", k=None, deciders=[])
    flipped = dict(share=0.4, resamples=200, n=100000, unit="sequences", k=3, deciders=["1", "2", "3"])
    assert nr.undecided(None) == nr.undecided(stable) == ""
    assert nr.undecided(flipped) == "decided by 3 of 100000 sequences"
    row = dict(verdict="not judged", why="different setting", criterion_verdict="not reproduced", stability=flipped)
    assert nr.criterion_word(row) == "not reproduced but decided by 3 of 100000 sequences"
    assert nr.verdict_long(row) == ("not judged (different setting; by the criterion alone, not reproduced but decided "
                                    "by 3 of 100000 sequences)")
    own = dict(row, why="decided by 3 of 100000 sequences (1, 2, 3)")        # the ledger's own reason: not twice
    assert nr.verdict_long(own) == f"not judged ({own['why']}; by the criterion alone, not reproduced)"
    assert nr.resampled(row) == "the criterion's verdict is decided by 3 of 100000 sequences"
    assert nr.resampled(dict(row, stability=stable)) == "the criterion's verdict is stable under resampling the 2000 sequences"
    head = lambda claim, part, st: dict(claim=claim, part=part, role="headline", what="w", stability=st)
    led = NS(comparisons={"a": head("v24-gdpp-noiseless", "1 layer", stable), "b": head("v24-diag-full", None, flipped),
                          "c": head("v24-sigma5-models", "DIAG, 3 layers", flipped)})
    assert nr.stability_sentence(led) == ("the verdict by the criterion is decided by 3 of 100000 sequences for DIAG / FULL "
                                          "and decided by 3 of 100000 sequences for DIAG, 3 layers at σ_max = 5; that of "
                                          "the other 1 row is stable under resampling the 2000 sequences")
    assert nr.stability_sentence(NS(comparisons={"a": led.comparisons["a"]})).startswith("the verdict of every one of the 1 rows")


def test_excess_and_ratios_and_used():
    yq = torch.tensor([1.0, 2.0], dtype=torch.float64)
    preds = {"oracle": yq.clone(), "ConstRR": yq + 1, "AdaRR": yq - 2}
    ex = nr.excess_over_oracle(preds, yq)
    assert list(ex) == ["ConstRR", "AdaRR"] and np.allclose(ex["ConstRR"], 0.5) and np.allclose(ex["AdaRR"], 2.0)
    v = np.array([[1.0, 2.0, 8.0], [3.0, 2.0, 0.0]])
    assert nr.ratio_of_means(v) == 1.0 and nr.max_ratio_of_means(v) == 4.0 / 2.0     # column means 2, 2, 4
    names = nr.used(training.plan("ci"))
    assert len(names) == len(training.plan("ci")) and "icl gdpp L=2 noise 0" in names


def test_shrinkage_figure_labels_every_series_on_both_panels():
    import matplotlib
    matplotlib.use("Agg")
    grid = np.linspace(0, 5, 6)
    curves = {"oracle": np.linspace(0.1, 1, 6), "ConstRR": np.linspace(0.5, 1.5, 6), "AdaRR": np.linspace(0.2, 1.2, 6),
              "GD++, 2 layers": np.linspace(0.5, 1.5, 6) + 1e-3}
    fig = nr.plot_shrinkage(grid, curves)
    for ax in fig.axes:
        assert sorted(l.get_label() for l in ax.get_lines()) == sorted(curves)    # no unlabelled line
    const = next(l for l in fig.axes[1].get_lines() if l.get_label() == "ConstRR")
    gd = next(l for l in fig.axes[1].get_lines() if l.get_label().startswith("GD++"))
    assert const.get_zorder() > gd.get_zorder() and const.get_marker() not in ("", "None")   # drawn over GD++
    assert sorted(t.get_text() for t in fig.legends[0].get_texts()) == sorted(curves)

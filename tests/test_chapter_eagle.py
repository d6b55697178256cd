"""Chapter 5's module (eaglebook.chapters.eagle): its phrases, summaries, checks and declared rows, on fake inputs."""

from types import SimpleNamespace as NS

import numpy as np
import pytest
import torch

from eaglebook import comparisons, config
from eaglebook.chapters import eagle
from eaglebook.comparisons.c05_eagle import PAPER_T1


def _rows(median=None, mean=None):
    median = median or {}
    mean = mean or {}
    out = {}
    for r in config.REGIMES:
        out[f"C5_{r}_fidelity_mean"] = dict(verdict=mean.get(r, ("partly", 1e-3))[0], ours=mean.get(r, ("partly", 1e-3))[1])
        out[f"C5_{r}_fidelity_median"] = dict(verdict=median.get(r, ("reproduced", 1e-4))[0], ours=median.get(r, ("reproduced", 1e-4))[1])
    return out


def test_fidelity_story_all_tracking():
    s = eagle.fidelity_story(_rows())
    assert "partly (unconstrained), partly (distributed) and partly (sketched)" in s
    assert "within the bound in the unconstrained, distributed and sketched regimes." in s
    assert "times the bound" not in s


def test_fidelity_story_one_off_says_how_far():
    s = eagle.fidelity_story(_rows(median={"sketched": ("partly", 3e-3)}, mean={"sketched": ("not reproduced", 9e-3)}))
    assert "not reproduced (sketched)" in s
    assert "in the unconstrained and distributed regimes;" in s
    assert "in the sketched regime its largest per-layer median error is 3.0e-03, 5 times the bound." in s


def test_fidelity_story_none_tracking():
    s = eagle.fidelity_story(_rows(median={r: ("partly", 1.2e-3) for r in config.REGIMES}))
    assert "tracks the transformer within the bound in no regime;" in s
    assert s.count("times the bound") == 3 and s.endswith(".")


def test_recorded_takes_the_largest_layer_per_statistic():
    mean = {r: np.array([0.0, 1e-4, 3e-4, 2e-4]) * (i + 1) for i, r in enumerate(config.REGIMES)}
    med = {r: v / 2 for r, v in mean.items()}
    out = eagle.recorded(mean, med)
    assert list(out) == [f"C5_{r}_fidelity_{s}" for r in config.REGIMES for s in ("mean", "median")]
    assert out["C5_distributed_fidelity_mean"] == pytest.approx(6e-4)
    assert out["C5_sketched_fidelity_median"] == pytest.approx(4.5e-4)


def test_block_shares_and_mismatch():
    fid = {"unconstrained": [NS(block_mean={"A": [0, 3.0], "B": [0, 1.0], "C": [0, 0.0], "D": [0, 0.0]})] * 2,
           "sketched": [NS(block_mean={"A": [0, 1.0], "B": [0, 1.0], "C": [0, 0.0], "D": [0, 2.0]})]}
    share = eagle.block_shares(fid)
    assert share["unconstrained"] == pytest.approx({"A": 75.0, "B": 25.0, "C": 0.0, "D": 0.0})
    assert sum(share["sketched"].values()) == pytest.approx(100)
    m = eagle.mismatch(share)
    assert m["C5_mismatch_blocks"] == "unconstrained: A (75%); sketched: D (50%)"
    assert m["C5_mismatch_A_max"] == pytest.approx(75.0)
    assert m["C5_mismatch_A_where"] == "the unconstrained regime"


def test_side_ratios_reads_the_last_layer():
    side = {"unconstrained": np.array([[1.0, 5.0], [2.0, 3.0]]), "sketched": np.array([[1.0, 1.0], [1e-3, 1.2e-3]])}
    assert eagle.side_ratios(side) == "1.5 (unconstrained), 1.2 (sketched)"


def test_top_share_and_story():
    A = torch.zeros(3, 2, 2)
    A[:, 0, 0] = torch.tensor([1.0, 5.0, 2.0])          # prompt 1 has the largest norm
    D_true = torch.zeros(3, 1, 1)
    D = torch.tensor([1.0, 3.0, 0.0]).reshape(3, 1, 1)  # squared errors 1, 9, 0
    assert eagle.top_share(D.numpy(), D_true, A) == pytest.approx(0.9)
    assert eagle.top_story(0.9).startswith("and it carries most")
    assert eagle.top_story(0.3).startswith("but it carries only part")


def _res(*errors):
    return {k: NS(rel_error=np.array([1.0, e]), iterations=i) for i, (k, e) in enumerate(zip(("c", "s", "d"), errors), 1)}


def test_checks_bound_invariant_and_variants():
    cs = eagle.checks(3e-14, _res(1e-15, 2e-15, 3e-9))
    assert [c.key for c in cs] == ["C5_invariant", "C5_central_rel_err", "C5_sketched_rel_err", "C5_distributed_rel_err"]
    assert cs[0].upper == 1e-10 and all(c.upper == 1e-8 for c in cs[1:])
    assert cs[3].value == 3e-9 and cs[2].what == "final relative error of EAGLE, s"


def test_assert_constants_story_fails_when_the_prose_would_be_wrong():
    ok = {k: NS(rel_error=np.array(v)) for k, v in
          (("th", [1e-3, 1e-16]), ("inst", [1.0, 40.0]), ("bmax", [1.0, 3e-2]), ("scaled", [1e-3, 1e-15]))}
    power = NS(status="rank_deficient", rel_error=np.array([1.0, 1e-5]))
    eagle.assert_constants_story(ok, power)
    with pytest.raises(AssertionError):
        eagle.assert_constants_story(ok, NS(status="converged", rel_error=np.array([1.0, 1e-5])))
    bad = dict(ok, inst=NS(rel_error=np.array([1.0, 1e-14])))
    with pytest.raises(AssertionError):
        eagle.assert_constants_story(bad, power)


def test_fidelity_table_has_ours_and_the_papers_rows():
    mean = {r: np.full(5, 2e-4) for r in config.REGIMES}
    lines = eagle.fidelity_table(mean, {r: v / 2 for r, v in mean.items()}).splitlines()
    assert lines[0].startswith("| regime | statistic | layer 0") and lines[0].count("layer") == 5
    assert len(lines) == 2 + 3 * len(config.REGIMES)
    assert lines[2].startswith("| unconstrained | mean | 2 ")
    assert lines[4] == "|  | paper (mean) | " + " | ".join(f"{v:.3g}" for v in PAPER_T1["unconstrained"]) + " |"


def test_rows_declared_per_regime_with_the_papers_table_value():
    rows = [r for r in comparisons.rows("05_eagle") if r.claim == "fidelity"]
    assert [r.key for r in rows] == ([f"C5_{r}_fidelity_{s}" for r in config.REGIMES for s in ("mean", "median")]
                                     + [f"C5_{r}_fidelity_{b}" for r in config.REGIMES for b in "DABC"])
    heads = [r for r in rows if r.role == "headline"]
    assert [r.part for r in heads] == list(config.REGIMES)
    assert [r.key for r in heads] == [f"C5_{r}_fidelity_D" for r in config.REGIMES]
    assert all(r.replaces == f"C5_{r.part}_fidelity_mean" and "never reach the prediction" in r.because for r in heads)
    assert all(r.declared == "after the run (v0.4.0, 2026-12-03)" for r in heads)
    by = {r.key: r for r in rows}
    assert by["C5_sketched_fidelity_mean"].paper_text == "1.4e-05 (≤ 6e-4)"
    assert by["C5_sketched_fidelity_D"].paper_text == "1.4e-05 (≤ 6e-4)"
    assert by["C5_sketched_fidelity_D"].criterion == by["C5_sketched_fidelity_mean"].criterion   # not widened
    assert not by["C5_unconstrained_fidelity_mean"].robust and by["C5_unconstrained_fidelity_mean"].judge
    assert by["C5_unconstrained_fidelity_median"].declared.startswith("after the run")


def test_model_versus_eagle_is_declared_in_advance_one_headline_per_question():
    from eaglebook import claims
    rows = [r for r in comparisons.rows("05_eagle") if r.claim in ("model-vs-eagle4", "model-vs-extracted4")]
    assert [r.key for r in rows] == [f"C5_{r}_model_vs_{v}" for v in ("theorem", "extracted") for r in config.REGIMES]
    assert all(claims.claim(r.claim).kind == claims.BEYOND and claims.claim(r.claim).chapter == "05_eagle" for r in rows)
    assert all(r.declared == "in advance" and r.criterion.text == "≥ 0.5, partly ≥ 0.4" for r in rows)
    heads = [r for r in rows if r.role == "headline"]
    assert [(r.claim, r.key) for r in heads] == [("model-vs-eagle4", "C5_unconstrained_model_vs_theorem"),
                                                 ("model-vs-extracted4", "C5_unconstrained_model_vs_extracted")]

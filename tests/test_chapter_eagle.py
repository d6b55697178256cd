"""Chapter 5's module (eaglebook.chapters.eagle): its phrases, summaries, checks and declared rows, on fake inputs."""

from types import SimpleNamespace as NS

import numpy as np
import pytest
import torch

import eaglebook
from eaglebook import comparisons, config, tasks
from eaglebook.chapters import eagle
from eaglebook.comparisons.c05_eagle import PAPER_T1


def _rows(median=None, mean=None, D=None, stable=True):
    median, mean, D = median or {}, mean or {}, D or {}
    out = {}
    st = dict(share=0.0 if stable else 0.3, resamples=200, n=1024, unit="prompts", k=None, deciders=[])
    for r in config.REGIMES:
        out[f"C5_{r}_fidelity_mean"] = dict(verdict=mean.get(r, ("partly", 1e-3))[0], ours=mean.get(r, ("partly", 1e-3))[1])
        out[f"C5_{r}_fidelity_median"] = dict(verdict=median.get(r, ("reproduced", 1e-4))[0], ours=median.get(r, ("reproduced", 1e-4))[1])
        v, why = D.get(r, ("reproduced", ""))
        out[f"C5_{r}_fidelity_D"] = dict(verdict=v, why=why, ours=2e-4, stability=st)
    return out


def test_fidelity_story_all_tracking():
    s = eagle.fidelity_story(_rows())
    assert s.startswith("is judged on what reaches the prediction, the D block")
    assert "2.0e-04, reproduced (unconstrained), 2.0e-04, reproduced (distributed) and 2.0e-04, reproduced (sketched); " \
           "each verdict is stable under resampling the 1024 prompts." in s
    assert "the mean over prompts gives partly (unconstrained), partly (distributed) and partly (sketched)" in s
    assert "within the bound in the unconstrained, distributed and sketched regimes." in s
    assert "times the bound" not in s


def test_fidelity_story_one_off_says_how_far_against_the_bound_and_the_papers_value():
    s = eagle.fidelity_story(_rows(median={"sketched": ("partly", 1.2e-2)}, mean={"sketched": ("not reproduced", 9e-3)}))
    assert "not reproduced (sketched)" in s
    assert "in the unconstrained and distributed regimes;" in s
    assert ("in the sketched regime its largest per-layer median error is 1.2e-02, 20 times the bound and 860 times "
            "the paper's own value for that regime (1.4e-05).") in s


def test_fidelity_story_not_judged_headline_says_why_and_no_stability_claim():
    s = eagle.fidelity_story(_rows(D={"sketched": ("not judged", "decided by 1 of 1024 prompts (7)")}, stable=False))
    assert "2.0e-04, not judged: decided by 1 of 1024 prompts (7) (sketched)" in s
    assert "stable under resampling" not in s


def test_fidelity_story_none_tracking():
    s = eagle.fidelity_story(_rows(median={r: ("partly", 1.2e-3) for r in config.REGIMES}))
    assert "tracks the transformer within the bound in no regime;" in s
    assert s.count("times the bound") == 3 and s.endswith(".")


def test_times_writes_ratios_out():
    assert [eagle.times(x) for x in (0.944, 1.04, 20.2, 871.4, 12345.0)] == ["0.94", "1", "20", "870", "12000"]


def _pp(blocks, model, extracted, theorem, zero=1.0):
    blocks = np.asarray(blocks, float)
    return eagle.PerPrompt(blocks, blocks.mean(-1), np.asarray(model, float), np.asarray(extracted, float),
                           np.asarray(theorem, float), zero)


def test_divergence_rule_is_ten_times_the_zero_predictor_or_not_finite():
    from eaglebook.comparisons.c05_eagle import DIVERGED
    assert DIVERGED == 10.0
    p = _pp(np.zeros((4, 2, 4)), [1.0, 10.0, 10.5, np.inf], [np.nan, 0.1, 20.0, 0.1], [1.0] * 4)
    assert p.diverged.tolist() == [False, False, True, True]
    assert p.extracted_diverged.tolist() == [True, False, True, False]


def test_fidelity_statistic_leaves_out_diverged_prompts_per_seed_and_takes_the_largest_layer():
    b0 = np.zeros((3, 2, 4))
    b0[:, 1, 3] = [1e-4, 3e-4, 1e9]           # prompt 2 of seed 0: the transformer diverges (left out)
    b1 = np.zeros((3, 2, 4))
    b1[:, 1, 3] = [1e-4, 1e-4, 4e-4]
    b1[:, 1, 2] = [1.0, 1.0, 1.0]             # the C block of seed 1
    pp = {("unconstrained", 0): _pp(b0, [0.1, 0.1, 50.0], [0.1] * 3, [0.1] * 3),
          ("unconstrained", 1): _pp(b1, [0.1] * 3, [0.1] * 3, [0.1] * 3),
          ("sketched", 0): _pp(b1, [0.1] * 3, [0.1] * 3, [0.1] * 3)}
    v = eagle.fidelity_values(pp, "unconstrained")
    assert v.shape == (3, 2, 2, 4) and np.isnan(v[2, 0]).all() and not np.isnan(v[2, 1]).any()
    np.testing.assert_allclose(eagle.fidelity_layers(v), [0.0, (2e-4 + 2e-4) / 2])
    assert eagle.fidelity_statistic(v) == pytest.approx(2e-4)
    assert eagle.fidelity_statistic(v, "C") == pytest.approx(0.5)
    assert eagle.diverged_counts(pp) == {"unconstrained": (1, 6), "sketched": (0, 3)}
    assert eagle.diverged_phrase(eagle.diverged_counts(pp)) == \
        "1 of 6 (17%) in the unconstrained regime and none of 3 in the sketched regime"


def test_mean_deciders_and_story():
    b = np.zeros((4, 2, 4))
    b[:, 1, :] = np.array([1.0, 1.0, 98.0, 0.0])[:, None]
    pp = {("unconstrained", 0): _pp(b, [0.1, 0.1, 0.1, 99.0], [0.1, 0.1, 99.0, 0.1], [0.1] * 4),
          ("distributed", 0): _pp(np.zeros((4, 2, 4)), [0.1] * 4, [0.1] * 4, [0.1] * 4)}
    d = eagle.mean_deciders(pp)
    assert d["unconstrained"] == dict(n=4, seeds=1, model=1, model_share=0.0, extracted=1, extracted_share=0.98)
    s = eagle.mean_story(d)
    assert s == ("in the unconstrained regime (4 prompts over 1 seeds) the transformer diverges on 1 (25%), which carries "
                 "less than 0.01% of it, and the extracted algorithm alone on 1 (25%), which carries 98% of it; in the "
                 "distributed regime neither diverges on any of its 4 prompts over 1 seeds")
    b[3, 1, :] = np.inf                        # a non-finite mean is carried by its non-finite prompts
    assert eagle.mean_deciders({("unconstrained", 0): _pp(b, [0.1, 0.1, 0.1, np.inf], [0.1] * 4, [0.1] * 4)}
                               )["unconstrained"]["model_share"] == 1.0


def test_versus_statistics_table_and_story():
    pp = {("unconstrained", 0): _pp(np.zeros((4, 2, 4)), [1.0, 1.0, 1.0, np.nan], [2.0, 0.5, 4.0, 1.0], [2.0] * 4),
          ("unconstrained", 1): _pp(np.zeros((4, 2, 4)), [1.0] * 4, [0.5] * 4, [2.0] * 4)}
    x = eagle.versus_values(pp, "unconstrained", "extracted")
    assert x.shape == (4, 2, 2)
    assert eagle.model_wins(x) == pytest.approx(2 / 8)          # NaN counts against the transformer
    assert eagle.median_ratio(x) == pytest.approx(2.0)
    t = eagle.versus_table({("unconstrained", "theorem"): eagle.versus_values(pp, "unconstrained", "theorem"),
                            ("unconstrained", "extracted"): x}, layers=4).splitlines()
    assert t[0].startswith("| regime | EAGLE (4 iterations) with |")
    assert t[2].startswith("| unconstrained | Theorem 1's constants | 87.5% of 8 | 0.5 |")
    assert t[3].startswith("| unconstrained | its own extracted constants | 25.0% of 8 | 2 |")
    st = dict(share=0.0, resamples=200, n=1024, unit="prompts", k=None, deciders=[])
    rows = {f"C5_{r}_model_vs_{v}": dict(ours=o, verdict=vd, why=w, stability=st) for r, v, o, vd, w in (
        ("unconstrained", "theorem", 0.87, "reproduced", ""), ("distributed", "theorem", 0.83, "reproduced", ""),
        ("sketched", "theorem", 0.59, "reproduced", ""),
        ("unconstrained", "extracted", 0.43, "not judged", "decided by 3 of 1024 prompts (1, 2, 3)"),
        ("distributed", "extracted", 0.47, "partly", ""), ("sketched", "extracted", 0.74, "reproduced", ""))}
    s = eagle.versus_story(rows, {"theorem": 0.334, "extracted": 1.04})
    assert s.startswith("against EAGLE with Theorem 1's constants the transformer's error is the lower on 87% of the "
                        "unconstrained prompts (median ratio of the errors 0.334): the answer is yes, and its verdict "
                        "is stable under resampling the 1024 prompts; the distributed and sketched regimes' shares are "
                        "83% and 59%. Against EAGLE with its own extracted constants")
    assert s.endswith("the answer is not judged (decided by 3 of 1024 prompts (1, 2, 3)); the distributed and sketched "
                      "regimes' shares are 47% and 74%")
    f = eagle.findings_versus(rows)
    assert f == ("87% of the unconstrained prompts against EAGLE with Theorem 1's constants (yes) and 43% of the "
                 "unconstrained prompts against EAGLE with its own extracted constants (not judged: decided by 3 of "
                 "1024 prompts (1, 2, 3))")


def test_recorded_takes_the_largest_layer_and_resamples_the_prompts():
    from eaglebook.stability import Resampled
    mean = {r: np.array([0.0, 1e-4, 3e-4, 2e-4]) * (i + 1) for i, r in enumerate(config.REGIMES)}
    med = {r: v / 2 for r, v in mean.items()}
    b = np.zeros((3, 4, 4))
    b[:, 2, 3] = 5e-4
    pp = {(r, s_): _pp(b, [0.1, 0.2, 0.3], [0.2, 0.1, 0.2], [0.05, 0.3, 0.4]) for r in config.REGIMES for s_ in (0, 1)}
    out = eagle.recorded(mean, med, pp)
    keys = [k for k in out if k.endswith(("_mean", "_median"))]
    assert keys == [f"C5_{r}_fidelity_{s}" for r in config.REGIMES for s in ("mean", "median")]
    assert out["C5_distributed_fidelity_mean"] == pytest.approx(6e-4)
    assert out["C5_sketched_fidelity_median"] == pytest.approx(4.5e-4)
    d = out["C5_unconstrained_fidelity_D"]
    assert isinstance(d, Resampled) and d.unit == "prompts" and d.value == pytest.approx(5e-4)
    assert out["C5_unconstrained_fidelity_C"].value == 0.0
    assert out["C5_sketched_model_vs_theorem"].value == pytest.approx(2 / 3)
    assert out["C5_sketched_model_vs_extracted"].value == pytest.approx(1 / 3)


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
    lines = eagle.fidelity_table(mean, {r: v / 2 for r, v in mean.items()}, {r: v * 3 for r, v in mean.items()}).splitlines()
    assert lines[0].startswith("| regime | statistic | layer 0") and lines[0].count("layer") == 5
    assert len(lines) == 2 + 4 * len(config.REGIMES)
    assert lines[2].startswith("| unconstrained | mean | 2 ")
    assert lines[4].startswith("|  | D block, mean | 6 ")
    assert lines[5] == "|  | paper (mean) | " + " | ".join(f"{v:.3g}" for v in PAPER_T1["unconstrained"]) + " |"


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


def _cfg(regime, **kw):
    from eaglebook.config import ModelConfig, TrainConfig
    return TrainConfig(model=ModelConfig(regime=regime, **kw), seed=3)


def _eagle_literal(A, B, C, L):
    """Algorithm 1 as printed (M = 1, S = I, η = 1/3, γ = 1, ρ = ‖A_ℓ‖₂⁻² per prompt), float64."""
    D = torch.zeros(A.shape[0], B.shape[-2], C.shape[-1], dtype=torch.float64)
    for _ in range(L):
        rho = torch.linalg.matrix_norm(A, ord=2)[:, None, None] ** -2
        AtA, AtC = A.mT @ A, A.mT @ C
        A, B, C, D = A - rho / 3 * A @ AtA, B - rho / 3 * B @ AtA, C - rho * A @ AtC, D + rho * B @ AtC
    return D


def test_theorem_eagle_is_algorithm_1_with_the_theorem_constants():
    cfg = _cfg("unconstrained")
    X = tasks.sample_X(cfg.task, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)[1]
    A, B, C, _ = tasks.split(X, cfg.task)
    torch.testing.assert_close(eagle.theorem_eagle(A, B, C, cfg), _eagle_literal(A, B, C, 4), rtol=1e-10, atol=1e-12)
    # distributed: Algorithm 1 over the model's machines (contiguous column blocks), as eaglebook.iterate runs it
    cfg = _cfg("distributed", machines=3)
    blocks = [(A[..., 6 * m:6 * (m + 1)], B[..., 6 * m:6 * (m + 1)]) for m in range(3)]
    *_, last = eaglebook.iterate([a for a, _ in blocks], [b for _, b in blocks], C, max_iter=4, rho="exact")
    torch.testing.assert_close(eagle.theorem_eagle(A, B, C, cfg), last.D)
    assert eagle.theorem_eagle(A, B, C, _cfg("sketched", r=5)).shape == (16, 2, 2)


def test_per_prompt_of_a_hand_set_model():
    from eaglebook.models import LinearTransformer
    cfg = _cfg("unconstrained")
    AL = np.array([[1.0, -0.004, -0.01], [-0.8, 0.006, 0.015], [0.5, -0.02, -0.05], [2.0, -0.005, -0.02]])
    m = LinearTransformer(cfg.model, cfg.task, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    m.set_diagonal(AL)
    Xc, Xo = tasks.sample_X(cfg.task, 40, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    p = eagle.per_prompt(m, Xc, Xo, cfg, prompts=32)
    assert p.blocks.shape == (32, 5, 4) and p.whole.shape == (32, 5) and p.model.shape == (32,)
    assert p.blocks.max() < 1e-20 and p.whole.max() < 1e-20        # the extracted algorithm is the model
    np.testing.assert_allclose(p.model, p.extracted, rtol=1e-9)
    D = tasks.split(Xc[:32], cfg.task).D
    assert p.zero == pytest.approx(float(D.square().mean()))
    A, B, C, _ = tasks.split(Xo[:32], cfg.task)
    np.testing.assert_allclose(p.theorem, (_eagle_literal(A, B, C, 4) - D).square().mean((-1, -2)).numpy(), rtol=1e-8)
    assert not p.diverged.any()


def test_plot_versus_draws_both_panels():
    import matplotlib
    matplotlib.use("Agg")
    pp = {(r, 0): _pp(np.zeros((5, 2, 4)), np.linspace(1e-3, 1e-2, 5), np.linspace(2e-3, 2e-2, 5),
                      np.linspace(5e-4, 5e-3, 5)) for r in config.REGIMES}
    fig = eagle.plot_versus(pp, seed=7)      # a seed without models: the first one's
    assert len(fig.axes) == 2 and all(ax.get_xscale() == "log" for ax in fig.axes)

"""Chapter 5 (book/05_eagle.md): EAGLE, its invariant and three variants, the fidelity of the algorithm read
out of the trained weights (the paper's Table 1), and the transformer's constants in a standalone solver."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from .. import config, extraction, regimes, tasks
from .._arrays import to_machines
from ..comparisons.c05_eagle import BOUND, DIVERGED, PAPER_T1, VERSUS, VERSUS_HEADLINE
from ..solver import iterate
from ..glue import and_list
from ..ledger import Check
from .. import stability
from ..stability import Resampled
from ..plotting import METHOD_STYLE, finish, legend_outside, subplots

__all__ = ["VARIANT_KEYS", "checks", "fidelity_table", "recorded", "fidelity_story", "block_shares", "mismatch",
           "side_ratios", "top_share", "top_story", "assert_constants_story", "glued", "plot_variants",
           "plot_side_by_side", "plot_constants", "plot_versus", "PROMPTS", "PerPrompt", "per_prompt", "theorem_eagle",
           "fidelity_values", "fidelity_layers", "fidelity_statistic", "diverged_counts", "diverged_phrase",
           "mean_deciders", "mean_story", "versus_values", "versus_table", "versus_story", "findings_versus",
           "model_wins", "median_ratio"]

#: the glue name of each variant, in the order the chapter runs them (centralized, sketched, distributed)
VARIANT_KEYS = ("central", "sketched", "distributed")


def checks(invariant: float, res: dict) -> list[Check]:
    """The invariant holds to float64 rounding, and every variant (``res``: label -> result, in the order of
    :data:`VARIANT_KEYS`) reaches the completion."""
    out = [Check("C5_invariant", invariant, upper=1e-10,
                 what="max_ℓ ‖D_ℓ + B_ℓ A_ℓ^† C_ℓ − B A^† C‖/‖B A^† C‖ (float64, κ = 1e3)")]
    for key, (label, r) in zip(VARIANT_KEYS, res.items()):
        out.append(Check(f"C5_{key}_rel_err", r.rel_error[-1], upper=1e-8, what=f"final relative error of EAGLE, {label}"))
    return out


def fidelity_table(mean_fid: dict, med_fid: dict, pred: dict) -> str:
    """Per regime and layer (×10⁻⁴): our mean and median squared error per entry of Z_ℓ, the D block's (``pred``:
    regime -> :func:`fidelity_layers`, per entry of D, the prompts on which the transformer diverges left out),
    beside the paper's Table 1."""
    L = len(next(iter(mean_fid.values())))
    rows = ["| regime | statistic | " + " | ".join(f"layer {l}" for l in range(L)) + " |", "|---|---|" + "---|" * L]
    for r in mean_fid:
        for label, vals in (("mean", 1e4 * mean_fid[r]), ("median", 1e4 * med_fid[r]),
                            ("D block, mean", 1e4 * np.asarray(pred[r])), ("paper (mean)", PAPER_T1[r])):
            rows.append(f"| {r if label == 'mean' else ''} | {label} | " + " | ".join(f"{v:.3g}" for v in vals) + " |")
    return "\n".join(rows)


def recorded(mean_fid: dict, med_fid: dict, pp: dict) -> dict:
    """The values of chapter 5's declared comparisons (:mod:`eaglebook.comparisons.c05_eagle`), per regime: the
    largest per-layer value of the whole-Z mean and median; Table 1's statistic on each block over the prompts on
    which the transformer does not diverge, and the share of prompts on which the transformer beats each EAGLE, both
    resampled over the prompts (:class:`eaglebook.stability.Resampled`; ``pp``: (regime, seed) -> :class:`PerPrompt`)."""
    out: dict = {f"C5_{r}_fidelity_{stat}": float(vals.max())
                 for r in mean_fid for stat, vals in (("mean", mean_fid[r]), ("median", med_fid[r]))}
    for r in mean_fid:
        values = fidelity_values(pp, r)
        out |= {f"C5_{r}_fidelity_{b}": Resampled(values, partial(fidelity_statistic, block=b)) for b in BLOCKS}
        out |= {f"C5_{r}_model_vs_{v}": Resampled(versus_values(pp, r, v), model_wins) for v in VERSUS}
    return out


def times(x: float) -> str:
    """A ratio to two significant figures, written out: 0.94, 20, 870, 12000."""
    x = float(f"{x:.2g}")
    return f"{x:.0f}" if abs(x) >= 10 else f"{x:g}"


def stable_clause(heads: list[dict]) -> str:
    """"; each verdict is stable under resampling the 1024 prompts" where every row in ``heads`` was resampled and
    judged stable ("" otherwise: a row that is not stable is not judged, and its reason says why)."""
    st = [h.get("stability") for h in heads]
    if not st or not all(st) or any(h.get("why") for h in heads) or any(x["share"] > stability.FLIP_SHARE for x in st):
        return ""
    return f"; each verdict is stable under resampling the {st[0]['n']} {st[0]['unit']}"


def _verdict(row: dict) -> str:
    return row["verdict"] + (f": {row['why']}" if row.get("why") else "")


def fidelity_story(rows: dict) -> str:
    """The sentences ending on the fidelity verdicts: the headline (the D block over the prompts on which the
    transformer does not diverge) per regime; the whole-Z mean (the headline as declared before the run); where the
    whole-Z median tracks the transformer within the bound, and how far it misses elsewhere, against the bound and
    the paper's own Table 1 value for that regime.  ``rows``: the ledger's recorded comparisons (key -> row)."""
    v = {(r, st): rows[f"C5_{r}_fidelity_{st}"] for r in config.REGIMES for st in ("D", "mean", "median")}
    tracks = [r for r in config.REGIMES if v[r, "median"]["verdict"] == "reproduced"]
    off = [r for r in config.REGIMES if r not in tracks]
    paper = {r: max(PAPER_T1[r]) * 1e-4 for r in config.REGIMES}
    return ("is judged on what reaches the prediction, the D block, over the prompts on which the transformer does "
            "not diverge (the claim's headline, chosen after the run): "
            + and_list(f"{v[r, 'D']['ours']:.1e}, {_verdict(v[r, 'D'])} ({r})" for r in config.REGIMES)
            + stable_clause([v[r, "D"] for r in config.REGIMES])
            + ". On the whole of Z, the paper's own statistic and the headline as declared before the run, the mean "
            "over prompts gives " + and_list(f"{_verdict(v[r, 'mean'])} ({r})" for r in config.REGIMES)
            + ". By the median over prompts (whole Z, a statistic added after the first run) it "
            + (f"tracks the transformer within the bound in the {and_list(tracks)} regime{'s' if len(tracks) > 1 else ''}"
               if tracks else "tracks the transformer within the bound in no regime")
            + ("" if not off else "; " + "; ".join(
                f"in the {r} regime its largest per-layer median error is {v[r, 'median']['ours']:.1e}, "
                f"{times(v[r, 'median']['ours'] / BOUND)} times the bound and {times(v[r, 'median']['ours'] / paper[r])} "
                f"times the paper's own value for that regime ({paper[r]:.1e})" for r in off))
            + ".")


#: The two EAGLEs the transformer is set against (:data:`~eaglebook.comparisons.c05_eagle.VERSUS`), in words.
VERSUS_LABEL = {"theorem": "Theorem 1's constants", "extracted": "its own extracted constants"}
#: Held-out prompts per model (the first of its test set; the paper does not say how many it used).
PROMPTS = 1024
BLOCKS = "ABCD"


@dataclass(frozen=True)
class PerPrompt:
    """One trained model on its held-out prompts (float64).  ``blocks`` (prompts, L+1, 4): Table 1's squared error
    per entry of each block A, B, C, D of Z_ℓ (per entry of that block), transformer vs extracted algorithm (NaN read
    as inf); ``whole`` (prompts, L+1): the same on the whole of Z_ℓ (Table 1's own statistic, per prompt);
    ``model``, ``extracted``, ``theorem`` (prompts,): the squared error per entry of the prediction against
    the clean D of the transformer (−D_L), of the extracted algorithm, and of L iterations of EAGLE with Theorem 1's
    constants (:func:`theorem_eagle`); ``zero``: the zero predictor's (the mean of D² over these prompts)."""

    blocks: np.ndarray
    whole: np.ndarray
    model: np.ndarray
    extracted: np.ndarray
    theorem: np.ndarray
    zero: float

    @property
    def diverged(self) -> np.ndarray:
        """The prompts on which the transformer diverges (:data:`~eaglebook.comparisons.c05_eagle.DIVERGED`)."""
        return ~np.isfinite(self.model) | (self.model > DIVERGED * self.zero)

    @property
    def extracted_diverged(self) -> np.ndarray:
        """The prompts on which the extracted algorithm diverges, by the same rule."""
        return ~np.isfinite(self.extracted) | (self.extracted > DIVERGED * self.zero)


def _inf(x: torch.Tensor) -> np.ndarray:
    x = x.numpy()
    return np.where(np.isnan(x), np.inf, x)


def theorem_eagle(A, B, C, cfg):
    """L iterations of EAGLE with Theorem 1's constants (η = 1/3, γ = 1, each prompt's own ρ = ‖Ã_ℓ‖₂⁻²) in the
    regime of ``cfg`` (a training config): the sketched regime draws a fresh selection of r columns per iteration,
    the distributed one runs Algorithm 1 over the model's machines (contiguous column blocks, as the model holds
    them).  Returns D_L ≈ B A^† C."""
    m = cfg.model
    rg = regimes.get(m.regime)
    if rg.can("heads_share_weights"):      # one block per machine, the weights shared: Algorithm 1 over the machines
        A, B = (list(to_machines(X, m.machines).unbind(-3)) for X in (A, B))
    sketch = m.r if rg.can("sketched") else None
    *_, last = iterate(A, B, C, max_iter=m.layers, sketch=sketch, seed=cfg.seed, eta=1 / 3, gamma=1.0, rho="exact")
    return last.D


def per_prompt(model, X_clean, X_obs, cfg, *, prompts: int = PROMPTS) -> PerPrompt:
    """:class:`PerPrompt` of ``model`` (float64) on the first ``prompts`` held-out prompts of ``cfg``."""
    task = cfg.task
    Xc, Xo = X_clean[:prompts].double(), X_obs[:prompts].double()
    Z0, target = tasks.prompt(Xo, task), tasks.split(Xc, task).D
    with torch.no_grad():
        acts, ext = model.activations(Z0), extraction.extracted_iterates(model, Z0, task)
        blocks = np.stack([np.stack([_inf((bt - be).square().mean((-1, -2))) for bt, be in
                                     zip(tasks.split(Zt, task), tasks.split(Ze, task))], -1)
                           for Zt, Ze in zip(acts, ext)], 1)
        whole = np.stack([_inf((Zt - Ze).square().mean((-1, -2))) for Zt, Ze in zip(acts, ext)], 1)
        err = lambda D: _inf((D - target).square().mean((-1, -2)))
        A, B, C, _ = tasks.split(Xo, task)
        return PerPrompt(blocks, whole, err(-tasks.split(acts[-1], task).D), err(-tasks.split(ext[-1], task).D),
                         err(theorem_eagle(A, B, C, cfg)), float(target.square().mean()))


def fidelity_values(pp: dict, regime: str) -> np.ndarray:
    """(prompts, seeds, L+1, 4): every seed's per-prompt block errors of ``regime`` (``pp``: (regime, seed) ->
    :class:`PerPrompt`), NaN on the prompts where that seed's transformer diverges (left out of the statistic)."""
    return np.stack([np.where(p.diverged[:, None, None], np.nan, p.blocks) for (r, _), p in pp.items()
                     if regimes.among(r, (regime,))], 1)


def fidelity_layers(values: np.ndarray, block: str = "D") -> np.ndarray:
    """Table 1's statistic on one block, per layer: the mean over the prompts on which the transformer does not
    diverge, averaged over seeds (``values``: :func:`fidelity_values`)."""
    v = values[..., BLOCKS.index(block)]
    kept = (~np.isnan(v)).sum(0)
    per_seed = np.where(kept > 0, np.nansum(v, 0) / np.maximum(kept, 1), np.nan)   # (seeds, L+1)
    return np.mean(per_seed, 0)


def fidelity_statistic(values: np.ndarray, block: str = "D") -> float:
    """The headline statistic: the largest over the layers of :func:`fidelity_layers`."""
    return float(np.max(fidelity_layers(values, block)))


def diverged_counts(pp: dict) -> dict[str, tuple[int, int]]:
    """Per regime: (prompts on which the transformer diverges, prompts), over every seed."""
    out: dict[str, tuple[int, int]] = {}
    for (r, _), p in pp.items():
        k, n = out.get(r, (0, 0))
        out[r] = (k + int(p.diverged.sum()), n + len(p.model))
    return out


def diverged_phrase(counts: dict) -> str:
    """"3 of 10240 (0.029%) in the unconstrained regime, none of 10240 in the distributed regime and ..."."""
    def one(r, k, n):
        return (f"none of {n}" if k == 0 else f"{k} of {n} ({100 * k / n:.2g}%)") + f" in the {r} regime"
    return and_list(one(r, k, n) for r, (k, n) in counts.items())


def mean_deciders(pp: dict) -> dict[str, dict]:
    """Per regime, who carries the whole-Z mean (Table 1's own statistic) at its largest layer: the prompts on which
    the transformer diverges, and those on which only the extracted algorithm does (by the same rule): their
    counts and shares of the mean (of its non-finite prompts where the mean is not finite)."""
    out = {}
    for r in dict.fromkeys(r for r, _ in pp):
        ps = [p for (q, _), p in pp.items() if q == r]
        w = np.stack([p.whole for p in ps], 1)                                      # (prompts, seeds, L+1)
        div = np.stack([p.diverged for p in ps], 1)
        alone = np.stack([p.extracted_diverged for p in ps], 1) & ~div
        at = w[..., int(np.argmax(w.mean((0, 1))))]
        inf = ~np.isfinite(at)      # a non-finite mean is carried by its non-finite prompts
        share = (lambda mask: float((inf & mask).sum() / inf.sum())) if inf.any() else (
            lambda mask: float(at[mask].sum() / at.sum()) if at.sum() > 0 else 0.0)
        out[r] = dict(n=div.size, seeds=len(ps), model=int(div.sum()), model_share=share(div), extracted=int(alone.sum()),
                      extracted_share=share(alone))
    return out


def mean_story(dec: dict) -> str:
    """Per regime, in words, which prompts carry the whole-Z mean (``dec``: :func:`mean_deciders`)."""
    def pct(x):
        return "all" if x > 0.995 else "less than 0.01%" if x < 1e-4 else f"{100 * x:.2g}%"
    def one(r, d):
        if d["model"] == d["extracted"] == 0:
            return f"in the {r} regime neither diverges on any of its {d['n']} prompts over {d['seeds']} seeds"
        parts = []
        for who, k, sh in (("the transformer diverges", d["model"], d["model_share"]),
                           ("the extracted algorithm alone", d["extracted"], d["extracted_share"])):
            parts.append(f"{who} on none" if k == 0 else f"{who} on {k} ({100 * k / d['n']:.2g}%), "
                         f"which carr{'ies' if k == 1 else 'y'} {pct(sh)} of it")
        return f"in the {r} regime ({d['n']} prompts over {d['seeds']} seeds) " + ", and ".join(parts)
    return "; ".join(one(r, d) for r, d in dec.items())


def versus_values(pp: dict, regime: str, variant: str) -> np.ndarray:
    """(prompts, seeds, 2): the transformer's and EAGLE's prediction errors per prompt (``variant``: "theorem" or
    "extracted")."""
    return np.stack([np.stack([p.model, getattr(p, variant)], -1) for (r, _), p in pp.items()
                     if regimes.among(r, (regime,))], 1)


def model_wins(values: np.ndarray) -> float:
    """The share of prompts (every seed's pooled) on which the transformer's error is lower than EAGLE's."""
    return float(np.mean(values[..., 0] < values[..., 1]))


def versus_table(vs: dict, layers: int) -> str:
    """Per regime and EAGLE variant (``vs``: (regime, variant) -> :func:`versus_values`; ``layers``: the
    transformer's, EAGLE's iterations): the share of prompts on which the transformer's error is lower, the median
    ratio of the errors, and both median errors."""
    med = lambda x: float(np.median(np.where(np.isnan(x), np.inf, x)))
    rows = [f"| regime | EAGLE ({layers} iterations) with | transformer better on | median ratio transformer / EAGLE "
            "| median error, transformer | median error, EAGLE |", "|---|---|---|---|---|---|"]
    for (r, v), x in vs.items():
        rows.append(f"| {r} | {VERSUS_LABEL[v]} | {100 * model_wins(x):.1f}% of {x[..., 0].size} | {median_ratio(x):.3g} "
                    f"| {med(x[..., 0]):.2e} | {med(x[..., 1]):.2e} |")
    return "\n".join(rows)


def versus_story(rows: dict, ratios: dict) -> str:
    """The answers to the two questions (``rows``: the ledger's recorded comparisons; ``ratios``: variant -> the
    unconstrained median ratio of the errors): per EAGLE variant, the share of the unconstrained prompts on which
    the transformer's error is lower, the answer (yes / partly / no, or not judged and why) and its resampling, and
    the other regimes' shares."""
    from ..scorecard import beyond_label
    out = []
    for v in VERSUS:
        head = rows[f"C5_{VERSUS_HEADLINE}_model_vs_{v}"]
        others = [r for r in config.REGIMES if r != VERSUS_HEADLINE]
        answer = beyond_label(head["verdict"]) + (f" ({head['why']})" if head.get("why") else "")
        stab = stability.phrase(head.get("stability")) if not head.get("why") else ""
        out.append(f"against EAGLE with {VERSUS_LABEL[v]} the transformer's error is the lower on "
                   f"{100 * head['ours']:.0f}% of the {VERSUS_HEADLINE} prompts (median ratio of the errors "
                   f"{ratios[v]:.3g}): the answer is {answer}" + (f", and {stab}" if stab else "")
                   + f"; the {and_list(others)} regimes' shares are "
                   + and_list(f"{100 * rows[f'C5_{r}_model_vs_{v}']['ours']:.0f}%" for r in others))
    return ". ".join(o[0].upper() + o[1:] if k else o for k, o in enumerate(out))


def findings_versus(rows: dict) -> str:
    """For the findings box: on what share of the unconstrained prompts the transformer beats each EAGLE, with the
    answer (``rows``: the ledger's recorded comparisons)."""
    from ..scorecard import beyond_label
    def one(v):
        row = rows[f"C5_{VERSUS_HEADLINE}_model_vs_{v}"]
        return (f"{100 * row['ours']:.0f}% of the {VERSUS_HEADLINE} prompts against EAGLE with {VERSUS_LABEL[v]} "
                f"({beyond_label(row['verdict'])}" + (f": {row['why']}" if row.get("why") else "") + ")")
    return and_list(one(v) for v in VERSUS)


def median_ratio(values: np.ndarray) -> float:
    """The median over prompts (every seed's pooled) of the transformer's error over EAGLE's."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = values[..., 0] / values[..., 1]
    return float(np.median(np.where(np.isnan(r), np.inf, r)))


def block_shares(fid: dict) -> dict[str, dict[str, float]]:
    """Per regime, the percentage of the last layer's mean squared error carried by each block A, B, C, D
    (block means averaged over seeds)."""
    blocks = {r: {k: np.mean([f.block_mean[k][-1] for f in fs]) for k in "ABCD"} for r, fs in fid.items()}
    return {r: {k: 100 * v / sum(b.values()) for k, v in b.items()} for r, b in blocks.items()}


def mismatch(share: dict) -> dict:
    """The block with the largest share per regime, and the A block's largest share and where."""
    top = {r: max(s, key=s.get) for r, s in share.items()}
    return dict(C5_mismatch_blocks="; ".join(f"{r}: {top[r]} ({share[r][top[r]]:.0f}%)" for r in share),
                C5_mismatch_A_max=max(s["A"] for s in share.values()),
                C5_mismatch_A_where=f"the {max(share, key=lambda r: share[r]['A'])} regime")


def side_ratios(side: dict) -> str:
    """The extracted algorithm's median error after the last layer over the transformer's, per regime
    (``side``: regime -> array [layer, (transformer, extracted)])."""
    return ", ".join(f"{v[-1, 1] / v[-1, 0]:.2g} ({r})" for r, v in side.items())


def top_share(D, D_true, A) -> float:
    """The share of a batch's squared error (of ``D`` against ``D_true``) carried by the prompt whose ``A``
    has the largest spectral norm."""
    err = ((torch.as_tensor(D) - D_true) ** 2).sum((-1, -2))
    return float(err[int(torch.linalg.matrix_norm(A, ord=2).argmax())] / err.sum())


def top_story(share: float) -> str:
    """Whether the prompt with the largest norm carries most of the batch's error."""
    return ("and it carries most of the batch's squared error" if share > 0.5 else
            "but it carries only part of the batch's squared error")


def assert_constants_story(const: dict, tr_power) -> None:
    """What the constants section's prose says, asserted (``const``: label -> result, in the chapter's order:
    theorem, per-instance ρ, batch-maximum ρ, ρ from 1.5 × the norm)."""
    th, inst, bmax, scaled = (r.rel_error for r in const.values())
    floor = 1e3 * max(th[-1], 1e-16)
    assert tr_power.status != "converged", "a step with ηρσ² ≥ 0.99 is never called converged"
    assert th[-1] < 1e-8 and scaled[-1] < 1e-8, "prose: the theorem constants and the 1.5× norm converge"
    assert inst.min() > floor, "prose: the transformer's constants with per-instance ρ stall far above"
    assert bmax[-1] > floor, "prose: with the batch-maximum norm the batch error stays far above"
    assert tr_power.rel_error[-1] > floor, "prose: rho='power' with the transformer constants stays far from the theorem's"


def glued(*, n: int, res: dict, n_seeds: int, fid: dict, pp: dict, side: dict, const: dict, tr_power, batch,
          ledger) -> dict:
    """Everything chapter 5's prose quotes, by key, beyond what its checks and comparisons glue (``pp``: (regime,
    seed) -> :class:`PerPrompt`; ``batch``: the constants section's ``(A, D)``; ``ledger``: the chapter's, its
    comparisons recorded)."""
    labels = list(res)
    rows = ledger.comparisons
    first = next(iter(pp.values()))
    out = dict(C5_n=n, C5_n_seeds=n_seeds, C5_n_prompts=len(first.model), C5_layers=first.blocks.shape[1] - 1,
               C5_diverged=diverged_phrase(diverged_counts(pp)), C5_diverged_factor=DIVERGED,
               C5_mean_story=mean_story(mean_deciders(pp)),
               C5_versus_story=versus_story(rows, {v: median_ratio(versus_values(pp, VERSUS_HEADLINE, v)) for v in VERSUS}),
               C5_findings_versus=findings_versus(rows),
               **{f"C5_{key}_iters": res[k].iterations for key, k in zip(VARIANT_KEYS, labels)},
               C5_sketched_over_central=res[labels[1]].iterations / res[labels[0]].iterations,
               C5_fidelity_story=fidelity_story(ledger.comparisons), **mismatch(block_shares(fid)),
               C5_side_ratios=side_ratios(side))
    for key, r in zip(("theorem", "tr_instance", "tr_batchmax", "tr_scaled"), const.values()):
        out[f"C5_const_{key}"], out[f"C5_const_{key}_best"] = r.rel_error[-1], r.rel_error.min()
    share = top_share(list(const.values())[2].D, batch[1], batch[0])
    out |= dict(C5_const_tr_power=tr_power.rel_error[-1], C5_const_tr_power_status=tr_power.status,
                C5_const_top_share=100 * share, C5_const_top_story=top_story(share),
                C5_findings_fidelity=ledger.verdict_phrase("fidelity"))
    return out


def plot_variants(res: dict):
    """Relative error against the iteration (log–log) of the three EAGLE variants (``res``: label -> result,
    centralized, sketched, distributed), with the float64 unit roundoff dotted."""
    fig, ax = subplots()
    for (k, r), style in zip(res.items(), ("EAGLE", "sketched", "distributed")):
        ax.loglog(np.arange(1, len(r.rel_error) + 1), r.rel_error, label=k, **METHOD_STYLE[style])
    ax.axhline(np.finfo(float).eps, color="k", ls=":", lw=0.7)
    ax.set_xlabel(r"iteration $\ell$")
    ax.set_ylabel("relative error")
    legend_outside(ax)
    return finish(fig)


def plot_side_by_side(side: dict):
    """Per regime, the median squared error of the prediction after each layer: the transformer dashed, the
    extracted algorithm solid (``side``: regime -> array [layer, (transformer, extracted)])."""
    fig, ax = subplots()
    for r, v in side.items():
        st = METHOD_STYLE[r]
        ax.semilogy(v[:, 0], color=st["color"], ls="--", marker="o", ms=3)
        ax.semilogy(v[:, 1], color=st["color"], ls="-", marker="x", ms=4, label=r)
    ax.set_xlabel(r"layer $\ell$")
    ax.set_ylabel(r"median MSE of $-D_\ell$")
    legend_outside(ax)
    return finish(fig)


def plot_versus(pp: dict, seed: int):
    """Per held-out prompt of the models of ``seed`` (the first seed in ``pp`` where it has none): the transformer's
    prediction error against EAGLE's after as many iterations as it has layers (log–log, one panel per EAGLE variant, one colour per
    regime), with the diagonal (equal errors)."""
    seeds = [s_ for _, s_ in pp]
    seed = seed if seed in seeds else seeds[0]
    fig, axes = subplots(1, len(VERSUS), sharex=True, sharey=True)
    finite = []
    for ax, v in zip(axes, VERSUS):
        for (r, s_), p in pp.items():
            if s_ != seed:
                continue
            x, y = getattr(p, v), p.model
            ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
            finite += [x[ok], y[ok]]
            ax.loglog(x[ok], y[ok], ls="none", marker=".", ms=2, alpha=0.4, color=METHOD_STYLE[r]["color"],
                      label=r if v == next(iter(VERSUS)) else "_" + r)
        ax.set_xlabel(f"EAGLE's error ({VERSUS_LABEL[v]})")
    lo, hi = (f(np.concatenate(finite)) for f in (np.min, np.max))
    for ax in axes:
        ax.loglog([lo, hi], [lo, hi], color="k", lw=0.7, ls=":", label="_equal")
    axes[0].set_ylabel("transformer's error")
    legend_outside(fig, markerscale=4)
    return finish(fig)


def plot_constants(const: dict):
    """The relative error over a batch per iteration for four choices of constants and norm."""
    fig, ax = subplots()
    for (k, r), style in zip(const.items(), ("EAGLE", "transformer", "GD", "CG")):
        ax.semilogy(np.arange(1, len(r.rel_error) + 1), r.rel_error, label=k, **METHOD_STYLE[style])
    ax.set_xlabel(r"iteration $\ell$")
    ax.set_ylabel("relative error over the batch")
    legend_outside(ax)
    return finish(fig)

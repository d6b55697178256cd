"""Chapter 5 (book/05_eagle.md): EAGLE, its invariant and three variants, the fidelity of the algorithm read
out of the trained weights (the paper's Table 1), and the transformer's constants in a standalone solver."""

from __future__ import annotations

import numpy as np
import torch

from .. import config
from ..comparisons.c05_eagle import BOUND, PAPER_T1
from ..glue import and_list
from ..ledger import Check
from ..plotting import METHOD_STYLE, finish, legend_outside, subplots

__all__ = ["VARIANT_KEYS", "checks", "fidelity_table", "recorded", "fidelity_story", "block_shares", "mismatch",
           "side_ratios", "top_share", "top_story", "assert_constants_story", "glued", "plot_variants",
           "plot_side_by_side", "plot_constants"]

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


def fidelity_table(mean_fid: dict, med_fid: dict) -> str:
    """Per regime and layer: our mean and median squared error per entry (×10⁻⁴) beside the paper's Table 1."""
    L = len(next(iter(mean_fid.values())))
    rows = ["| regime | statistic | " + " | ".join(f"layer {l}" for l in range(L)) + " |", "|---|---|" + "---|" * L]
    for r in mean_fid:
        for label, vals in (("mean", 1e4 * mean_fid[r]), ("median", 1e4 * med_fid[r]), ("paper (mean)", PAPER_T1[r])):
            rows.append(f"| {r if label == 'mean' else ''} | {label} | " + " | ".join(f"{v:.3g}" for v in vals) + " |")
    return "\n".join(rows)


def recorded(mean_fid: dict, med_fid: dict) -> dict[str, float]:
    """The values of chapter 5's declared comparisons (:mod:`eaglebook.comparisons.c05_eagle`): the largest
    per-layer value of each statistic, per regime."""
    return {f"C5_{r}_fidelity_{stat}": float(vals.max())
            for r in mean_fid for stat, vals in (("mean", mean_fid[r]), ("median", med_fid[r]))}


def fidelity_story(rows: dict) -> str:
    """The sentence ending on the fidelity verdicts: the headline (mean) per regime, then where the median
    tracks the transformer within the bound and how far it misses elsewhere.  ``rows``: the ledger's recorded
    comparisons (key -> row with ``verdict`` and ``ours``)."""
    v = {(r, st): rows[f"C5_{r}_fidelity_{st}"] for r in config.REGIMES for st in ("mean", "median")}
    tracks = [r for r in config.REGIMES if v[r, "median"]["verdict"] == "reproduced"]
    off = [r for r in config.REGIMES if r not in tracks]
    return ("is judged on the paper's own statistic, the mean over prompts (the claim's headline): "
            + and_list(f"{v[r, 'mean']['verdict']} ({r})" for r in config.REGIMES)
            + ". By the median over prompts (a statistic added after the first run) it "
            + (f"tracks the transformer within the bound in the {and_list(tracks)} regime{'s' if len(tracks) > 1 else ''}"
               if tracks else "tracks the transformer within the bound in no regime")
            + ("" if not off else "; " + "; ".join(f"in the {r} regime its largest per-layer median error is "
                                                   f"{v[r, 'median']['ours']:.1e}, {v[r, 'median']['ours'] / BOUND:.2g} times the bound"
                                                   for r in off))
            + ".")


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


def glued(*, n: int, res: dict, n_seeds: int, fid: dict, side: dict, const: dict, tr_power, batch, ledger) -> dict:
    """Everything chapter 5's prose quotes, by key, beyond what its checks and comparisons glue (``batch``:
    the constants section's ``(A, D)``; ``ledger``: the chapter's, its comparisons recorded)."""
    labels = list(res)
    out = dict(C5_n=n, C5_n_seeds=n_seeds,
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


def plot_constants(const: dict):
    """The relative error over a batch per iteration for four choices of constants and norm."""
    fig, ax = subplots()
    for (k, r), style in zip(const.items(), ("EAGLE", "transformer", "GD", "CG")):
        ax.semilogy(np.arange(1, len(r.rel_error) + 1), r.rel_error, label=k, **METHOD_STYLE[style])
    ax.set_xlabel(r"iteration $\ell$")
    ax.set_ylabel("relative error over the batch")
    legend_outside(ax)
    return finish(fig)

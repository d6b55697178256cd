"""Chapter 4 (book/04_extract.md): reading the algorithm out of one regime's weights.  Its tables, what it
measures on the weights (:class:`Structure`, :class:`Measured`), its phrases, its glue, recorded values and
checks, and its figures.

The chapter is the same for every regime: what differs comes from the regime's parts
(:mod:`eaglebook.regimes`): its comparisons (:mod:`eaglebook.comparisons.c04_extract`), how its weights are read
(``rg.reading``) and what the paper says about it, in words (``rg.paper``: the sentences the chapter glues
into its prose).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import extraction, regimes
from ..glue import and_list
from ..ledger import HEADLINE, Check
from ..plotting import METHOD_STYLE, finish, legend_outside, subplots

__all__ = ["Structure", "structure", "structure_phrase", "Measured", "measured", "gamma_average", "weights_table",
           "scalars_table", "quant_phrase", "eta_story", "eta_verdicts", "findings_paper", "figures", "recorded",
           "checks", "glued", "plot_sparsification", "plot_scaling", "plot_sketch_spectrum"]

#: The paper's constants of the scaling law (App. B.5).
ETA_PAPER, GAMMA_PAPER = 1.0, 1.9
#: Chapter 4's claims in a few words, for the findings box (a regime's own claim: ``rg.paper.special.short``).
CLAIM_WORDS = {"quantisation": "quantising without loss", "eta": "η ≈ 1", "gamma": "γ ≈ 1.9"}


# ------------------------------------------------------------------------------------------- measurements
@dataclass(frozen=True)
class Structure:
    """Step 2: how far the products are from the paper's structure (means over layers).  ``off_qk``, ``off_vp``:
    the Frobenius mass of W_QK, W_VP off diag(a I_n, b I_n'); ``off_rand``: of random matrices like W_QK;
    ``sketch``: the per-layer sketch blocks (:class:`eaglebook.extraction.SketchLayer`) of a regime whose data
    blocks are read as sketches, else None; ``fit``: then the mean residual of a scaled rank-r projector fitted to
    W_QK's data block."""

    off_qk: float
    off_rand: float
    off_vp: float
    sketch: list | None = None
    fit: float | None = None

    @property
    def structure(self) -> str:
        return structure_phrase(self.off_qk / self.off_rand)


def structure_phrase(rel_off: float) -> str:
    """W_QK's off-structure mass relative to a random matrix's, in words."""
    return ("far from random" if rel_off < 0.5 else "closer to the diagonal pattern than a random matrix" if rel_off < 0.9
            else "no closer to the pattern than a random matrix")


def structure(model, wp: dict) -> Structure:
    """Step 2's means over layers, from :func:`eaglebook.extraction.weight_properties` ``wp`` (and the sketch
    blocks where the regime reads its data blocks as sketches)."""
    sk = extraction.sketch_structure(model) if model.rg.can("sketched") else None
    mean = lambda key: float(np.mean([q.offdiag_mass for q in wp[key]]))
    return Structure(mean("qk"), mean("qk_random"), mean("vp"), sk,
                     None if sk is None else float(np.mean([s.fit_residual_qk for s in sk])))


@dataclass(frozen=True)
class Measured(Structure):
    """Everything chapter 4 measured on the weights that a regime's words (``rg.paper``) may quote: step 2's
    :class:`Structure`, the profile's bounds ``fit_max``, ``cross_data_max``, the ``seed``; where the regime reads
    sketches, ``rel`` (median over layers of the rescaled sketch blocks' relative difference), ``overlap`` (the
    range over layers of their top-r subspaces' overlap), ``random_overlap`` (r/n: two random subspaces), ``r``
    and ``shared`` (median overlap > 0.9); where heads write to the other machines, ``share`` and ``data_share``
    (means over layers of the "other" projection's share in the query and data blocks), ``b`` and ``a3``."""

    fit_max: float = 0.0
    cross_data_max: float = 0.0
    seed: int = 0
    rel: float | None = None
    overlap: tuple[float, float] | None = None
    random_overlap: float | None = None
    r: int | None = None
    shared: bool | None = None
    share: float | None = None
    data_share: float | None = None
    b: np.ndarray | None = None
    a3: np.ndarray | None = None

    @property
    def shared_phrase(self) -> str:
        return "share" if self.shared else "do not share"


def measured(model, st: Structure, al, tol, seed: int) -> Measured:
    """:class:`Measured` from step 2's structure ``st``, the scalars ``al`` (:func:`eaglebook.extraction.alphas`)
    and the profile's tolerances ``tol``."""
    out = dict(st.__dict__, fit_max=tol.sketch_fit_max, cross_data_max=tol.cross_data_max, seed=seed)
    if st.sketch is not None:
        ov = [s.projector_overlap for s in st.sketch]
        out.update(rel=float(np.median([s.rel_diff for s in st.sketch])), overlap=(min(ov), max(ov)), r=model.cfg.r,
                   random_overlap=model.cfg.r / model.task.n, shared=bool(float(np.median(ov)) > 0.9))
    if al.other_query_mass is not None:
        out.update(share=float(np.mean(al.other_query_mass)), data_share=float(np.mean(al.other_data_mass)),
                   b=al.b, a3=al.a3)
    return Measured(**out)


def gamma_average(rg, laws: dict, machines: int) -> float | None:
    """Median over seeds of the median over layers of Algorithm 1's γ (the own head's and the others' together),
    or None for a regime whose heads do not write to each other's copies."""
    per = [rg.reading.gamma_of_average(x.gamma_layer, x.gamma_other_layer, machines) for x in laws.values()]
    return None if any(p is None for p in per) else float(np.median([np.median(p) for p in per]))


# ------------------------------------------------------------------------------------------------ tables
def weights_table(wp: dict) -> str:
    """Step 2's table: per layer, the off-structure masses next to random matrices', W_QK's kept entries, ranks."""
    lines = ["| layer | W_QK off-structure mass | (random) | W_VP off-structure mass | (random) | W_QK kept entries | "
             "W_QK rank | W_VP rank |", "|---|---|---|---|---|---|---|---|"]
    for l, (q, v, qr, vr) in enumerate(zip(wp["qk"], wp["vp"], wp["qk_random"], wp["vp_random"])):
        lines.append(f"| {l} | {q.offdiag_mass:.2f} | {qr.offdiag_mass:.2f} | {v.offdiag_mass:.2f} | {vr.offdiag_mass:.2f} | "
                     f"{100 * q.kept_fraction:.0f}% | {q.numerical_rank} | {v.numerical_rank} |")
    return "\n".join(lines)


def scalars_table(al, law, norm_label: str) -> str:
    """Step 3's table: per layer α¹, α², α³, their products, the batch-maximum norm and η_ℓ, γ_ℓ."""
    tbl = [f"| layer | α¹ | α² | α³ | α¹α² | α¹α³ | max {norm_label} | η_ℓ | γ_ℓ |", "|---|---|---|---|---|---|---|---|---|"]
    for l in range(len(al.a1)):
        tbl.append(f"| {l} | {al.a1[l]:.3f} | {al.a2[l]:.4f} | {al.a3[l]:.3f} | {al.ab[l]:.2e} | {al.cd[l]:.2e} | "
                   f"{law.norm2_max[l]:.3g} | {law.eta_layer[l]:.2f} | {law.gamma_layer[l]:.2f} |")
    return "\n".join(tbl)


# ----------------------------------------------------------------------------------------------- phrases
def _paper_regimes(fact: str) -> str:
    """The paper's regimes for which it states ``fact`` (an attribute of their paper part), in words."""
    return and_list(r for r in regimes.PAPER if getattr(regimes.get(r).paper, fact))


def quant_phrase(rg, row) -> str:
    """Step 1: whether the paper quantises this regime, and the verdict where it does (``row``: the recorded row)."""
    where = _paper_regimes("quantized")
    if row is None:
        return (f"The paper applies this surgery only in the {where} regimes, so in the {rg.name} regime the ratio is "
                "shown without a paper comparison.")
    return (f"The paper applies this surgery in the {where} regimes and reports no loss; the ratio is a paper comparison "
            f"here (declared before the run: reproduced when it is {row['criterion']}), verdict {row['verdict']}.")


def eta_story(rg, eta_v: str, gamma_v: str, gamma_avg_text: str = "") -> str:
    """Step 3's η, γ against the paper's (the sentence goes on after "η = …, γ = …")."""
    if rg.paper.scaling_law:
        return f", against the paper's {ETA_PAPER:g} and {GAMMA_PAPER} (verdicts: {eta_v} and {gamma_v})."
    return (f" in the {rg.name} regime. The paper states η ≈ {ETA_PAPER:g}, γ ≈ {GAMMA_PAPER} for the "
            f"{_paper_regimes('scaling_law')} model; as its EAGLE uses one pair for every regime we compare with them "
            f"too, as evidence (by the criterion: {eta_v} and {gamma_v})." + (f" {gamma_avg_text}" if gamma_avg_text else ""))


def eta_verdicts(rg, eta_v: str, gamma_v: str, gamma_avg: float | None) -> str:
    """The verdicts on η, γ in the chapter's conclusion (inside parentheses)."""
    if rg.paper.scaling_law:
        return f"paper: {ETA_PAPER:g} and {GAMMA_PAPER}; verdicts {eta_v} and {gamma_v}"
    return (f"paper: {ETA_PAPER:g} and {GAMMA_PAPER}, stated for the {_paper_regimes('scaling_law')} model; by the "
            f"criterion {eta_v} and {gamma_v}" + ("" if gamma_avg is None else f"; Algorithm 1's convention gives γ = {gamma_avg:.2f}"))


def findings_paper(rg, ledger) -> str:
    """The findings box's comparison with the paper: each headline row's claim and verdict, then η, γ as evidence
    where the paper does not state them for this regime."""
    words = {**CLAIM_WORDS, **({rg.paper.special.claim: rg.paper.special.short} if rg.paper.special else {})}
    out = [f"{words.get(c['claim'], c['claim'])}: {c['verdict']}" for c in ledger.comparisons.values() if c["role"] == HEADLINE]
    if not out:
        out = [f"the paper states no claim of its own for the {rg.name} regime"]
    if not rg.paper.scaling_law:
        v = lambda name: ledger.comparisons[f"C4_{rg.name}_{name}"]["verdict"]
        out.append(f"η ≈ {ETA_PAPER:g} and γ ≈ {GAMMA_PAPER}, stated for the {_paper_regimes('scaling_law')} model, "
                   f"{v('eta')} and {v('gamma')} here (evidence)")
    return "; ".join(out)


# --------------------------------------------------------------------------------------------- bookkeeping
def recorded(rg, regime: str, *, q_ratio: float, eta: float, gamma: float, gamma_avg: float | None,
             special: float) -> dict[str, float]:
    """The values of chapter 4's declared comparisons (:mod:`eaglebook.comparisons.c04_extract`) for ``regime``."""
    out = {f"C4_{regime}_quantized_ratio": q_ratio} if rg.paper.quantized else {}
    out |= {f"C4_{regime}_eta": eta, f"C4_{regime}_gamma": gamma}
    if gamma_avg is not None:
        out[f"C4_{regime}_gamma_avg"] = gamma_avg
    if rg.paper.special is not None:
        out[rg.paper.special.key] = special
    return out


def checks(regime: str, m: Measured, al, tol) -> list[Check]:
    """The weights are clearly structured (off-structure mass, or the fit of a rank-r projector where the regime
    reads sketches), every layer's products have the signs of a contraction, and (where heads write to the other
    machines) what crosses machines is the query block."""
    L = len(al.cd)
    out = [Check(f"C4_{regime}_fit", m.fit, upper=tol.sketch_fit_max,
                 what=f"{regime}: mean ‖Q − a P‖/‖Q‖ of W_QK's data block against its rank-r projector")
           if m.fit is not None else
           Check(f"C4_{regime}_offdiag_qk", m.off_qk, upper=tol.offdiag_max,
                 what=f"mean W_QK mass off diag(α¹ I, 0) over layers ({regime}; random ≈ 1)"),
           Check(f"C4_{regime}_cd_negative", int((al.cd < 0).sum()), lower=L, upper=L,
                 what=f"layers with α¹α³ < 0 ({regime}, of {L})"),
           Check(f"C4_{regime}_ab_negative", int((al.ab[:-1] < 0).sum()), lower=L - 1, upper=L - 1,
                 what=f"layers 0..L−2 with α¹α² < 0 ({regime}, of {L - 1})")]
    if m.data_share is not None:
        out.append(Check(f"C4_{regime}_cross_data", m.data_share, upper=tol.cross_data_max,
                         what=f"{regime}: share of the 'other' projection in the data block (what crosses machines)"))
    return out


def glued(*, rg, regime: str, m: Measured, al, q_ratio: float, eta: float, gamma: float, gamma_avg: float | None,
          n_seeds: int, machines: int, batch: int, tol, ledger) -> dict:
    """Everything chapter 4's prose quotes, by key (``ledger``: the chapter's, its comparisons recorded)."""
    row = lambda key: ledger.comparisons.get(key)
    verdict = lambda name: ledger.comparisons[f"C4_{regime}_{name}"]["verdict"]
    sp = None if rg.paper.special is None else row(rg.paper.special.key)
    avg = "" if gamma_avg is None else rg.paper.gamma_average_text(gamma_avg, row(f"C4_{regime}_gamma_avg"), machines)
    out = dict(
        C4_regime=regime, C4_label=rg.label.capitalize(), C4_eta_criterion=ledger.declared[f"C4_{regime}_eta"]["criterion"]["text"],
        C4_q_ratio=q_ratio, C4_quant_text=quant_phrase(rg, row(f"C4_{regime}_quantized_ratio")),
        C4_off_qk=m.off_qk, C4_off_rand=m.off_rand, C4_structure=m.structure, C4_structure_text=rg.paper.structure_text(m),
        C4_reading=rg.paper.reading, C4_update_note=rg.paper.update_note, C4_norm=rg.paper.norm,
        C4_cd_negative=int((al.cd < 0).sum()), C4_ab_negative=int((al.ab[:-1] < 0).sum()),
        C4_eta=eta, C4_gamma=gamma, C4_n_seeds=n_seeds, C4_eta_story=eta_story(rg, verdict("eta"), verdict("gamma"), avg),
        C4_eta_verdicts=eta_verdicts(rg, verdict("eta"), verdict("gamma"), gamma_avg),
        C4_special_intro=rg.paper.special_intro(), C4_special=rg.paper.special_value(m),
        C4_special_text=rg.paper.special_text(m, sp), C4_first_finding=rg.paper.first_finding(m, sp),
        C4_findings_paper=findings_paper(rg, ledger), C4_batch=batch, C4_offdiag_bound=tol.offdiag_max)
    if m.sketch is not None:
        out["C4_sketch_shared"] = m.shared_phrase
    return out


# ----------------------------------------------------------------------------------------------- figures
def figures(m: Measured) -> list:
    """The figures only some regimes have: the sketch blocks' spectra where the regime reads sketches."""
    return [] if m.sketch is None else [plot_sketch_spectrum(m.sketch)]


def plot_sparsification(curve):
    """Test MSE (median and mean per sample) after sparsifying at each threshold, with and without quantisation."""
    fig, ax = subplots()
    f = curve.factors
    ax.semilogy(f, curve.mse_median, marker="o", ms=3, label="sparsified, median", **METHOD_STYLE["EAGLE"])
    ax.semilogy(f, curve.quantized_median, marker="s", ms=3, label="+ quantised, median", **METHOD_STYLE["transformer"])
    ax.semilogy(f, curve.mse_mean, marker=".", ms=3, lw=0.8, alpha=0.6, label="sparsified, mean", color="#56B4E9")
    ax.axhline(curve.original_median, color="k", ls=":", lw=0.8, label="trained, median")
    ax.axhline(curve.zero_mse, label="predict zero", **METHOD_STYLE["zero"])
    ax.axvline(1.5, color="#999999", lw=0.6)
    ax.set_xlabel("threshold (× mean |entry|)")
    ax.set_ylabel("test MSE on $D$")
    legend_outside(ax)
    return finish(fig)


def plot_scaling(law, *, eta_paper: float = ETA_PAPER, gamma_paper: float = GAMMA_PAPER):
    """Per-layer η_ℓ = −α¹α²·max‖A_ℓ‖² and γ_ℓ = −α¹α³·max‖A_ℓ‖² with the paper's constants (dotted)."""
    fig, ax = subplots()
    L = len(law.eta_layer)
    ax.plot(range(L), law.eta_layer, marker="o", label=r"$\eta_\ell$", **METHOD_STYLE["EAGLE"])
    ax.plot(range(L), law.gamma_layer, marker="s", label=r"$\gamma_\ell$", **METHOD_STYLE["transformer"])
    ax.axhline(eta_paper, color=METHOD_STYLE["EAGLE"]["color"], lw=0.7, ls=":", label=r"paper's $\eta$")
    ax.axhline(gamma_paper, color=METHOD_STYLE["transformer"]["color"], lw=0.7, ls=":", label=r"paper's $\gamma$")
    ax.set_xticks(range(L))
    ax.set_xlabel(r"layer $\ell$")
    ax.set_ylabel("constant (batch-max norm)")
    legend_outside(ax)
    return finish(fig)


def plot_sketch_spectrum(layers):
    """Fig. 4: normalised singular values of the W_QK and W_VP data blocks per layer vs S Sᵀ for a random
    orthonormal S; right, the distribution of their entries.  One legend, below both panels."""
    fig, (ax1, ax2) = subplots(1, 2, height=3.3)
    shade = lambda l: 0.4 + 0.45 * l / max(1, len(layers) - 1)   # later layers darker, for any number of layers
    for l, s in enumerate(layers):
        ax1.plot(s.sv_qk, color=METHOD_STYLE["EAGLE"]["color"], alpha=shade(l), lw=0.9,
                 label=r"$W_{QK}$" if l == 0 else None)
        ax1.plot(s.sv_vp, color=METHOD_STYLE["transformer"]["color"], ls="--", alpha=shade(l), lw=0.9,
                 label=r"$W_{VP}$" if l == 0 else None)
    ax1.plot(layers[0].sv_reference, color="k", ls=":", label=r"$SS^\top$, random $S$")
    ax1.set_xlabel("index")
    ax1.set_ylabel("singular value / largest")
    bins = np.linspace(-1, 1, 41)
    ax2.hist(np.concatenate([s.entries_qk for s in layers]), bins=bins, density=True, alpha=0.5,
             color=METHOD_STYLE["EAGLE"]["color"], label=r"$W_{QK}$ entries")
    ax2.hist(np.concatenate([s.sign * s.entries_vp for s in layers]), bins=bins, density=True, alpha=0.5,
             color=METHOD_STYLE["transformer"]["color"], label=r"$\pm W_{VP}$ entries")
    ax2.hist(layers[0].entries_reference, bins=bins, density=True, histtype="step", color="k",
             label=r"$SS^\top$ entries")
    ax2.set_yscale("log")
    ax2.set_xlabel("entry (normalised)")
    ax2.set_ylabel("density")
    legend_outside(fig, where="below")
    return finish(fig)

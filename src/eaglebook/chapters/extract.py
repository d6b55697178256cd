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
from ..comparisons.c04_extract import CONSTANT
from ..glue import and_list
from ..ledger import HEADLINE, Check
from ..stability import Resampled, phrase as stability_phrase
from ..plotting import METHOD_STYLE, finish, legend_outside, subplots

__all__ = ["Structure", "structure", "structure_phrase", "Measured", "measured", "gamma_average", "spread", "SeedLaws",
           "over_seeds", "median_ratio", "constancy_word", "constancy_phrase", "seed_phrase", "seed_rank", "model_phrase",
           "pruned_phrase", "law_finding", "OUTLIER_OTHERS", "weights_table",
           "scalars_table", "quant_phrase", "eta_story", "eta_verdicts", "findings_paper", "figures", "recorded",
           "checks", "glued", "plot_sparsification", "plot_scaling", "plot_sketch_spectrum"]

#: The paper's constants of the scaling law (App. B.5).
ETA_PAPER, GAMMA_PAPER = 1.0, 1.9
#: Chapter 4's claims in a few words, for the findings box (a regime's own claim: ``rg.paper.special.short``).
CLAIM_WORDS = {"quantisation": "quantising without loss", "eta": "one η in every layer", "gamma": "one γ in every layer"}
#: The declared outlier rule for the seed shown (v0.4.0): its value lies outside the range of the other seeds, and
#: there are at least this many other seeds (with fewer, any seed is outside the others' range by chance).
OUTLIER_OTHERS = 3


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


def gamma_average(rg, laws: dict, machines: int) -> np.ndarray | None:
    """Per seed, the median over layers of Algorithm 1's γ (the own head's and the others' together; the row is
    their median over seeds), or None for a regime whose heads do not write to each other's copies."""
    per = [rg.reading.gamma_of_average(x.gamma_layer, x.gamma_other_layer, machines) for x in laws.values()]
    return None if any(p is None for p in per) else np.array([float(np.median(p)) for p in per])


def spread(values) -> float:
    """max/min of a scaling-law constant's per-layer values: 1 for one constant in every layer; inf where a value
    is not positive or not finite (no constant of the law's sign)."""
    v = np.asarray(values, dtype=float)
    return float(v.max() / v.min()) if v.size and np.all(np.isfinite(v)) and v.min() > 0 else float("inf")


@dataclass(frozen=True)
class SeedLaws:
    """The scaling law of every seed (arrays over ``seeds``): the median levels ``eta``, ``gamma`` (over layers
    0..L−2 and all layers) and their constancy ``eta_spread``, ``gamma_spread`` (:func:`spread` over the same
    layers); ``eta_layers``, ``gamma_layers``: the per-layer values of each seed."""

    seeds: tuple
    eta: np.ndarray
    gamma: np.ndarray
    eta_spread: np.ndarray
    gamma_spread: np.ndarray
    eta_layers: tuple
    gamma_layers: tuple

    def resampled(self, name: str) -> Resampled:
        """The row's statistic (median over seeds of ``name``), resampled over the seeds."""
        return Resampled(getattr(self, name), np.median, unit="seeds", names=[f"seed {s}" for s in self.seeds])


def over_seeds(laws: dict) -> SeedLaws:
    """:class:`SeedLaws` from {seed: :class:`eaglebook.extraction.ScalingLaw`}."""
    el = [x.eta_layer[list(x.eta_layers)] for x in laws.values()]
    gl = [x.gamma_layer[list(x.gamma_layers)] for x in laws.values()]
    arr = lambda v: np.array(v, dtype=float)
    return SeedLaws(tuple(laws), arr([x.eta for x in laws.values()]), arr([x.gamma for x in laws.values()]),
                    arr([spread(v) for v in el]), arr([spread(v) for v in gl]), tuple(el), tuple(gl))


def median_ratio(pairs: np.ndarray) -> float:
    """median of column 0 / median of column 1 (NaN sorted as +inf, as :func:`eaglebook.extraction.mse_stats` does)."""
    med = lambda v: float(np.median(np.where(np.isnan(v), np.inf, v)))
    return med(pairs[:, 0]) / med(pairs[:, 1])


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
    """Step 3's η, γ levels against the paper's (the sentence goes on after "η = …, γ = …"); the levels are
    evidence in every regime: where the paper states the law, the constancy rows replaced them as headlines."""
    if rg.paper.scaling_law:
        return (f", against the paper's {ETA_PAPER:g} and {GAMMA_PAPER} (by the criterion: {eta_v} and {gamma_v}). "
                "Declared before the run, these median levels were the claims' headlines; they are evidence now, "
                "because the median level does not test a law that says η (and γ) is the same in every layer. The "
                "headlines, declared after the run, test that constancy (below).")
    return (f" in the {rg.name} regime. The paper states η ≈ {ETA_PAPER:g}, γ ≈ {GAMMA_PAPER} for the "
            f"{_paper_regimes('scaling_law')} model; as its EAGLE uses one pair for every regime we compare with them "
            f"too, as evidence (by the criterion: {eta_v} and {gamma_v})." + (f" {gamma_avg_text}" if gamma_avg_text else ""))


def eta_verdicts(rg, v: dict, gamma_avg: float | None) -> str:
    """The verdicts on η, γ in the chapter's conclusion (inside parentheses); ``v``: row name -> verdict."""
    head = "headlines" if rg.paper.scaling_law else "evidence"
    out = (f"one constant over the layers ({head}): {v['eta_constancy']} for η and {v['gamma_constancy']} for γ; "
           f"levels against the paper's {ETA_PAPER:g} and {GAMMA_PAPER} (evidence): {v['eta']} and {v['gamma']}")
    if not rg.paper.scaling_law:
        out += f"; the paper states them for the {_paper_regimes('scaling_law')} model"
    return out + ("" if gamma_avg is None else f"; Algorithm 1's convention gives γ = {gamma_avg:.2f}")


def law_finding(sl: SeedLaws, seed) -> str:
    """The findings box's sentence on the scaling law: its constancy over layers, the levels, the seed shown."""
    e, g = float(np.median(sl.eta_spread)), float(np.median(sl.gamma_spread))
    gam = dict(zip(sl.seeds, sl.gamma))
    return (f"Over the layers, η_ℓ and γ_ℓ vary by a factor {e:.3g} and {g:.3g} (max/min, median over "
            f"{len(sl.seeds)} seeds); their median levels are η = {float(np.median(sl.eta)):.2f} and "
            f"γ = {float(np.median(sl.gamma)):.2f}. The model shown, seed {seed}: {seed_phrase(gam, seed, 'γ')}.")


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def seed_rank(values: dict, seed) -> tuple[int, int, bool | None]:
    """(rank from the highest, number of seeds, outlier) of ``seed``'s value among ``values`` ({seed: value});
    outlier by the declared rule: outside the other seeds' range with at least :data:`OUTLIER_OTHERS` others
    (None: too few others to call one)."""
    v = values[seed]
    others = [x for s, x in values.items() if s != seed]
    rank = 1 + sum(x > v for x in others)
    outlier = None if len(others) < OUTLIER_OTHERS else bool(v > max(others) or v < min(others))
    return rank, len(values), outlier


def seed_phrase(values: dict, seed, name: str) -> str:
    """Where the seed shown sits among the seeds for one statistic, e.g. "its γ (5.95) is the highest of the 10
    seeds, outside the other seeds' range (1.68–2.40): an outlier by our rule"."""
    rank, n, outlier = seed_rank(values, seed)
    v = values[seed]
    if n == 1:
        return f"its {name} ({v:.2f}) is that of the only seed"
    others = [x for s, x in values.items() if s != seed]
    top, bottom = ("higher", "lower") if n == 2 else ("highest", "lowest")
    where = top if rank == 1 else bottom if rank == n else f"{_ordinal(rank)} highest"
    lo, hi = min(others), max(others)
    rng = f"{lo:.2f}" if n == 2 else f"{lo:.2f}–{hi:.2f}"
    what = "the other seed's value" if n == 2 else "the other seeds' range"
    if outlier is None:
        tail = f"; with {n - 1} other seed{'s' if n > 2 else ''}, too few to call an outlier by our rule"
    elif outlier:
        tail = f", outside {what} ({rng}): an outlier by our rule"
    else:
        tail = f", inside {what} ({rng}): not an outlier by our rule"
    return f"its {name} ({v:.2f}) is the {where} of the {n} seeds{tail}"


def constancy_word(ratio: float) -> str:
    """A constant's max/min over layers, in words, graded by the declared criterion (3×, partly 10×)."""
    if ratio <= CONSTANT.a:
        return f"one constant within {CONSTANT.a:g}× over the layers"
    if ratio <= CONSTANT.partly:
        return f"constant only within {CONSTANT.partly:g}× (not {CONSTANT.a:g}×) over the layers"
    return f"no single constant: the layers differ by more than {CONSTANT.partly:g}×"


def constancy_phrase(rg, sl: SeedLaws, seed, rows: dict) -> str:
    """Step 3's sentence on the law as a law: the shown seed's per-layer range, the median over seeds of max/min,
    in words and with the rows' verdicts and resampling (``rows``: name -> recorded row, ``eta_constancy``,
    ``gamma_constancy``)."""
    i = sl.seeds.index(seed)
    el, gl = sl.eta_layers[i], sl.gamma_layers[i]
    e, g = float(np.median(sl.eta_spread)), float(np.median(sl.gamma_spread))
    role = ("the claims' headlines" if rows["eta_constancy"]["role"] == HEADLINE else
            f"evidence (the paper states the law for the {_paper_regimes('scaling_law')} model)")
    return (f"In the model shown (seed {seed}), η_ℓ runs from {el.min():.2f} to {el.max():.2f} over layers 0..L−2 and "
            f"γ_ℓ from {gl.min():.2f} to {gl.max():.2f} over all layers (max/min {sl.eta_spread[i]:.3g} and "
            f"{sl.gamma_spread[i]:.3g}). Over the {len(sl.seeds)} seeds the median max/min is {e:.3g} for η, "
            f"{constancy_word(e)}, and {g:.3g} for γ, {constancy_word(g)}: {role}, verdicts "
            f"{rows['eta_constancy']['verdict']} and {rows['gamma_constancy']['verdict']} (declared after the run: "
            f"reproduced when {rows['eta_constancy']['criterion']}); for η "
            f"{stability_phrase(rows['eta_constancy'].get('stability')) or 'it was recorded without resampling'}, "
            f"for γ {stability_phrase(rows['gamma_constancy'].get('stability')) or 'it was recorded without resampling'}.")


def model_phrase(rg, heads: int, prune_heads: int) -> str:
    """Which model the chapter reads, for the sentence "The chapter reads …"."""
    if not rg.can("prunable"):
        return "one trained model of the regime (the chosen seed), trained as chapter 3 trains it"
    return (f"a {heads}-head model of the regime trained from scratch (the chosen seed). The paper reads another one: "
            f"it prunes its {prune_heads}-head model to one head and fine-tunes it; step 3 reads that model too (chapter "
            "3's), as evidence")


def pruned_phrase(law_pruned, law_shown, seed, small_mean: float, zero_mse: float, rows: dict,
                  prune_heads: int) -> str:
    """Step 3's paragraph on the paper's route: the pruned model's η, γ beside the from-scratch model's, and its
    mean test MSE against predicting zero (``rows``: name -> recorded row of the ``pruned_*`` evidence)."""
    sp = lambda x, layers: spread(x[list(layers)])
    r = small_mean / zero_mse
    vs = f"{r:.3g} times worse than predicting zero" if r > 1 else f"{r:.3g} times the error of predicting zero"
    v = lambda name: rows[name]["verdict"]
    return (f"The paper's route, the {prune_heads}-head model of seed {seed} pruned to one head and fine-tuned "
            f"(chapter 3's), gives η = {law_pruned.eta:.2f} and γ = {law_pruned.gamma:.2f} (median over layers; the "
            f"one-head model trained from scratch: {law_shown.eta:.2f} and {law_shown.gamma:.2f}), with max/min over "
            f"the layers {sp(law_pruned.eta_layer, law_pruned.eta_layers):.3g} for η and "
            f"{sp(law_pruned.gamma_layer, law_pruned.gamma_layers):.3g} for γ (evidence, by the criteria: levels "
            f"{v('pruned_eta')} and {v('pruned_gamma')}, constancy {v('pruned_eta_constancy')} and "
            f"{v('pruned_gamma_constancy')}). That model's mean test MSE is {small_mean:.3g} against the zero "
            f"predictor's {zero_mse:.3g}: {vs}, so its constants describe a model that "
            f"{'does not beat predicting zero on average' if r > 1 else 'beats predicting zero on average'}.")


def findings_paper(rg, ledger) -> str:
    """The findings box's comparison with the paper: each headline row's claim and verdict, then η, γ as evidence
    where the paper does not state them for this regime."""
    words = {**CLAIM_WORDS, **({rg.paper.special.claim: rg.paper.special.short} if rg.paper.special else {})}
    out = [f"{words.get(c['claim'], c['claim'])}: {c['verdict']}" for c in ledger.comparisons.values() if c["role"] == HEADLINE]
    if not out:
        out = [f"the paper states no claim of its own for the {rg.name} regime"]
    if not rg.paper.scaling_law:
        v = lambda name: ledger.comparisons[f"C4_{rg.name}_{name}"]["verdict"]
        out.append(f"the scaling law, stated for the {_paper_regimes('scaling_law')} model, here (evidence): one η and "
                   f"one γ over the layers {v('eta_constancy')} and {v('gamma_constancy')}, η ≈ {ETA_PAPER:g} and "
                   f"γ ≈ {GAMMA_PAPER} {v('eta')} and {v('gamma')}")
    return "; ".join(out)


# --------------------------------------------------------------------------------------------- bookkeeping
def recorded(rg, regime: str, *, q_pairs: np.ndarray, sl: SeedLaws, gamma_avg: np.ndarray | None,
             special: float, pruned=None) -> dict:
    """The values of chapter 4's declared comparisons (:mod:`eaglebook.comparisons.c04_extract`) for ``regime``:
    the quantisation ratio resampled over the held-out prompts (``q_pairs``: per prompt, quantised and trained MSE),
    the scaling law's rows over the seeds (``sl``, :class:`SeedLaws`; ``gamma_avg``: per seed), and the pruned
    model's law (``pruned``: a :class:`eaglebook.extraction.ScalingLaw`, where the regime can be pruned)."""
    out = {f"C4_{regime}_quantized_ratio": Resampled(q_pairs, median_ratio, unit="prompts")} if rg.paper.quantized else {}
    out |= {f"C4_{regime}_{name}": sl.resampled(field) for name, field in
            (("eta", "eta"), ("gamma", "gamma"), ("eta_constancy", "eta_spread"), ("gamma_constancy", "gamma_spread"))}
    if gamma_avg is not None:
        out[f"C4_{regime}_gamma_avg"] = Resampled(gamma_avg, np.median, unit="seeds", names=[f"seed {s}" for s in sl.seeds])
    if rg.paper.special is not None:
        out[rg.paper.special.key] = special
    if pruned is not None:
        out |= {f"C4_{regime}_pruned_eta": pruned.eta, f"C4_{regime}_pruned_gamma": pruned.gamma,
                f"C4_{regime}_pruned_eta_constancy": spread(pruned.eta_layer[list(pruned.eta_layers)]),
                f"C4_{regime}_pruned_gamma_constancy": spread(pruned.gamma_layer[list(pruned.gamma_layers)])}
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


def glued(*, rg, regime: str, m: Measured, al, q_ratio: float, sl: SeedLaws, gamma_avg: np.ndarray | None,
          seed, machines: int, batch: int, tol, ledger, heads: int, prune_heads: int, pruned=None) -> dict:
    """Everything chapter 4's prose quotes, by key (``ledger``: the chapter's, its comparisons recorded;
    ``pruned``: None, or (the pruned model's ScalingLaw, the shown model's ScalingLaw, its mean test MSE, the zero
    predictor's) where the regime can be pruned)."""
    row = lambda key: ledger.comparisons.get(key)
    verdict = lambda name: ledger.comparisons[f"C4_{regime}_{name}"]["verdict"]
    rows = {name: row(f"C4_{regime}_{name}") for name in ("eta_constancy", "gamma_constancy", "pruned_eta",
                                                          "pruned_gamma", "pruned_eta_constancy", "pruned_gamma_constancy")}
    ga = None if gamma_avg is None else float(np.median(gamma_avg))
    sp = None if rg.paper.special is None else row(rg.paper.special.key)
    avg = "" if ga is None else rg.paper.gamma_average_text(ga, row(f"C4_{regime}_gamma_avg"), machines)
    eta, gamma = float(np.median(sl.eta)), float(np.median(sl.gamma))
    seeds = lambda field: dict(zip(sl.seeds, getattr(sl, field)))
    out = dict(
        C4_regime=regime, C4_label=rg.label.capitalize(), C4_eta_criterion=ledger.declared[f"C4_{regime}_eta"]["criterion"]["text"],
        C4_q_ratio=q_ratio, C4_quant_text=quant_phrase(rg, row(f"C4_{regime}_quantized_ratio")),
        C4_off_qk=m.off_qk, C4_off_rand=m.off_rand, C4_structure=m.structure, C4_structure_text=rg.paper.structure_text(m),
        C4_reading=rg.paper.reading, C4_update_note=rg.paper.update_note, C4_norm=rg.paper.norm,
        C4_cd_negative=int((al.cd < 0).sum()), C4_ab_negative=int((al.ab[:-1] < 0).sum()),
        C4_eta=eta, C4_gamma=gamma, C4_n_seeds=len(sl.seeds), C4_eta_story=eta_story(rg, verdict("eta"), verdict("gamma"), avg),
        C4_eta_verdicts=eta_verdicts(rg, {k: verdict(k) for k in ("eta", "gamma", "eta_constancy", "gamma_constancy")}, ga),
        C4_constancy_criterion=ledger.declared[f"C4_{regime}_eta_constancy"]["criterion"]["text"],
        C4_constancy_text=constancy_phrase(rg, sl, seed, rows), C4_law_finding=law_finding(sl, seed),
        C4_seed_text=f"Among the {len(sl.seeds)} seeds, the model shown (seed {seed}): "
                     f"{seed_phrase(seeds('eta'), seed, 'η')}; {seed_phrase(seeds('gamma'), seed, 'γ')}; "
                     f"{seed_phrase(seeds('gamma_spread'), seed, 'max/min of γ_ℓ')}.",
        C4_outlier_others=OUTLIER_OTHERS, C4_model_read=model_phrase(rg, heads, prune_heads),
        C4_pruned_text="" if pruned is None else pruned_phrase(*pruned[:2], seed, *pruned[2:], rows, prune_heads),
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

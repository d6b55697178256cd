"""Chapter 4's comparisons (book/04_extract.md), one page per regime: quantisation without loss, the scaling law's
η and γ, and the regime's own comparison.

What a regime declares follows from its parts (:mod:`eaglebook.regimes`): the quantisation row where the paper
quantises the regime; η and γ in every regime, as the headlines of their claims where the paper states them for
the regime and as evidence elsewhere (its EAGLE uses one η, γ for all); the regime's own comparison
(``paper.special``, the headline of its claim); and Algorithm 1's γ where heads write to each other's copies of
C, D (declared after the first runs).

The scaling law (v0.4.0): declared before the run, ``C4_{regime}_eta`` and ``_gamma`` judged the median level of
η_ℓ, γ_ℓ over layers (and seeds). The paper's law says α¹α² ≈ −η/max‖A_ℓ‖² with ONE η in every layer; a median
level passes a model whose layers scatter over two orders of magnitude. The headlines are now the constancy of
η_ℓ and γ_ℓ over the layers (``_eta_constancy``, ``_gamma_constancy``: max/min over layers per seed, median over
seeds, resampled over the seeds), which ``replace`` the level rows (they stay, as evidence, for the paper's value).
Where the regime's heads can be pruned, the paper's own route (its 8-head model pruned to one head and fine-tuned,
chapter 3's) is read too, as evidence beside the one-head model trained from scratch (``_pruned_*``).
"""

from __future__ import annotations

from .. import regimes
from ..ledger import EVIDENCE, HEADLINE, after_run, at_most, criterion, within_factor
from . import Row

#: How the η, γ rows are measured.
NORMS = "the paper's batch maximum of ‖A_ℓ‖² on a fixed seeded batch, then medians over layers and seeds; resampled over the seeds"
#: The constancy of a scaling-law constant over the layers: max/min of its per-layer values (declared v0.4.0).
CONSTANT = at_most(3, partly=10)
V4 = after_run("v0.4.0, 2026-12-03")
#: Why the level rows are not the paper's claim (shown on the scorecard).
LAW_BECAUSE = ("the median level does not test a law that says η is the same in every layer: the paper's "
               "α¹α² ≈ −η/max‖A_ℓ‖² (and α¹α³ ≈ −γ/max‖A_ℓ‖²) has one constant for all layers, and a median over "
               "layers passes layers that differ by orders of magnitude; the constancy over the layers is tested "
               "(max/min), the level stays as evidence")
CONSTANCY_ROBUST = "per seed the max/min over layers of the batch-max-norm constants; median over seeds, resampled over the seeds"
PRUNED_ROBUST = "one model (the seed shown), pruned and fine-tuned as in chapter 3"


def rows(profile, regime: str | None) -> tuple[Row, ...]:
    """The rows of ``regime``'s page (none without a regime)."""
    if regime is None:
        return ()
    rg = regimes.get(regime)
    law = (lambda old: dict(role=HEADLINE, part="{regime}", replaces=old, because=LAW_BECAUSE)) if rg.paper.scaling_law \
        else (lambda old: dict(role=EVIDENCE))
    per_head = ", per machine's own head" if rg.can("heads_share_weights") else ""
    quant = Row("C4_{regime}_quantized_ratio", "median test MSE after 1.5× sparsification + 2/3-level quantisation / "
                "trained ({regime})", criterion=at_most(1.5, partly=3), paper_text="≈ 1 (no drop)", claim="quantisation",
                role=HEADLINE, part="{regime}", robustness="a ratio of two medians over held-out prompts")
    eta = Row("C4_{regime}_eta", "η (batch-max norm; median over layers and seeds; {regime})", paper=1.0, paper_text="≈ 1",
              criterion=within_factor(1.5, partly=3), claim="eta", robustness=NORMS)
    gamma = Row("C4_{regime}_gamma", f"γ (batch-max norm; median over layers and seeds; {{regime}}{per_head})", paper=1.9,
                paper_text="≈ 1.9", criterion=within_factor(1.5, partly=3), claim="gamma", robustness=NORMS)
    eta_c = Row("C4_{regime}_eta_constancy", "max/min of η_ℓ over layers 0..L−2 (batch-max norm; per seed, median over "
                "seeds; {regime})", paper=1.0, paper_text="1: one η in every layer", criterion=CONSTANT, claim="eta",
                declared=V4, robustness=CONSTANCY_ROBUST, **law("C4_{regime}_eta"))
    gamma_c = Row("C4_{regime}_gamma_constancy", f"max/min of γ_ℓ over all layers (batch-max norm; per seed, median over "
                  f"seeds; {{regime}}{per_head})", paper=1.0, paper_text="1: one γ in every layer", criterion=CONSTANT,
                  claim="gamma", declared=V4, robustness=CONSTANCY_ROBUST, **law("C4_{regime}_gamma"))
    pruned = tuple(Row(f"C4_{{regime}}_pruned_{name}", f"{what} of the {{regime}} model pruned from several heads to one "
                       "and fine-tuned (chapter 3's; the paper's route), batch-max norm, the seed shown",
                       paper=paper, paper_text=text, criterion=crit, claim=name.split("_")[0], declared=V4,
                       robustness=PRUNED_ROBUST)
                   for name, what, paper, text, crit in (
                       ("eta", "η (median over layers 0..L−2)", 1.0, "≈ 1", within_factor(1.5, partly=3)),
                       ("gamma", "γ (median over layers)", 1.9, "≈ 1.9", within_factor(1.5, partly=3)),
                       ("eta_constancy", "max/min of η_ℓ over layers 0..L−2", 1.0, "1: one η in every layer", CONSTANT),
                       ("gamma_constancy", "max/min of γ_ℓ over all layers", 1.0, "1: one γ in every layer", CONSTANT)))
    gamma_avg = Row("C4_{regime}_gamma_avg", "γ of Algorithm 1's averaged C, D update (own head plus the M − 1 others, "
                    "batch-max norm; median over layers and seeds; {regime})", paper=1.9, paper_text="≈ 1.9",
                    criterion=within_factor(1.5, partly=3), claim="gamma", declared=after_run("v0.3.0, 2026-12-01"),
                    robustness=NORMS)
    averaged = rg.reading.gamma_of_average(0.0, 0.0, 1) is not None    # heads that write to each other's copies
    prunable = rg.can("prunable")
    return tuple(r for r, keep in ((quant, rg.paper.quantized), (eta, True), (gamma, True), (eta_c, True), (gamma_c, True),
                                   (own(rg.paper.special), True), (gamma_avg, averaged),
                                   *((p, prunable) for p in pruned)) if keep and r is not None)


def own(sp) -> Row | None:
    """The row of a regime's own comparison (:class:`eaglebook.regimes.PaperComparison`): the headline of its claim."""
    if sp is None:
        return None
    return Row(sp.key, sp.what, criterion=criterion(*sp.criterion), claim=sp.claim, role=HEADLINE, paper=sp.paper,
               paper_text=sp.paper_text, robustness=sp.robustness)

"""Chapter 4's comparisons (book/04_extract.md), one page per regime: quantisation without loss, the scaling law's
η and γ, and the regime's own comparison.

What a regime declares follows from its parts (:mod:`eaglebook.regimes`): the quantisation row where the paper
quantises the regime; η and γ in every regime, as the headlines of their claims where the paper states them for
the regime and as evidence elsewhere (its EAGLE uses one η, γ for all); the regime's own comparison
(``paper.special``, the headline of its claim); and Algorithm 1's γ where heads write to each other's copies of
C, D (declared after the first runs).
"""

from __future__ import annotations

from .. import regimes
from ..ledger import EVIDENCE, HEADLINE, after_run, at_most, criterion, within_factor
from . import Row

#: How the η, γ rows are measured.
NORMS = "the paper's batch maximum of ‖A_ℓ‖² on a fixed seeded batch, then medians over layers and seeds"


def rows(profile, regime: str | None) -> tuple[Row, ...]:
    """The rows of ``regime``'s page (none without a regime)."""
    if regime is None:
        return ()
    rg = regimes.get(regime)
    law = dict(role=HEADLINE, part="{regime}") if rg.paper.scaling_law else dict(role=EVIDENCE)
    per_head = ", per machine's own head" if rg.can("heads_share_weights") else ""
    quant = Row("C4_{regime}_quantized_ratio", "median test MSE after 1.5× sparsification + 2/3-level quantisation / "
                "trained ({regime})", criterion=at_most(1.5, partly=3), paper_text="≈ 1 (no drop)", claim="quantisation",
                role=HEADLINE, part="{regime}", robustness="a ratio of two medians over held-out prompts")
    eta = Row("C4_{regime}_eta", "η (batch-max norm; median over layers and seeds; {regime})", paper=1.0, paper_text="≈ 1",
              criterion=within_factor(1.5, partly=3), claim="eta", robustness=NORMS, **law)
    gamma = Row("C4_{regime}_gamma", f"γ (batch-max norm; median over layers and seeds; {{regime}}{per_head})", paper=1.9,
                paper_text="≈ 1.9", criterion=within_factor(1.5, partly=3), claim="gamma", robustness=NORMS, **law)
    gamma_avg = Row("C4_{regime}_gamma_avg", "γ of Algorithm 1's averaged C, D update (own head plus the M − 1 others, "
                    "batch-max norm; median over layers and seeds; {regime})", paper=1.9, paper_text="≈ 1.9",
                    criterion=within_factor(1.5, partly=3), claim="gamma", declared=after_run("v0.3.0, 2026-12-01"),
                    robustness=NORMS)
    averaged = rg.reading.gamma_of_average(0.0, 0.0, 1) is not None    # heads that write to each other's copies
    return tuple(r for r, keep in ((quant, rg.paper.quantized), (eta, True), (gamma, True), (own(rg.paper.special), True),
                                   (gamma_avg, averaged)) if keep and r is not None)


def own(sp) -> Row | None:
    """The row of a regime's own comparison (:class:`eaglebook.regimes.PaperComparison`): the headline of its claim."""
    if sp is None:
        return None
    return Row(sp.key, sp.what, criterion=criterion(*sp.criterion), claim=sp.claim, role=HEADLINE, paper=sp.paper,
               paper_text=sp.paper_text, robustness=sp.robustness)

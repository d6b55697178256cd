"""Chapter 11's comparisons (book/11_beyond.md): one question per change of the paper's set-up, and the rate of
the 8-layer model.

- ``C11_<change>_same`` (the headline of the change's own claim, kind ``beyond``): the declared "same
  algorithm" test (:data:`eaglebook.beyond.CRITERION`, the one ``python -m eaglebook.study`` applies): the
  tests held of 4, 0 when the structure fails, on the medians over seeds;
- ``C11_depth8_order`` (headline) and ``C11_depth8_order_eagle`` (evidence): the order of convergence of the
  8-layer model's per-layer error, and of EAGLE's on the same prompts.
"""

from .. import beyond
from ..ledger import HEADLINE, at_least
from . import Row

_ORDER_ROBUSTNESS = "medians over held-out prompts, then over consecutive layer triples and seeds"

ROWS = tuple(
    Row(f"C11_{c.key}_same", claim=c.claim, role=HEADLINE, criterion=beyond.CRITERION,
        what="tests held of 4 (structure, scaling law, fidelity, beats zero; 0 when the structure fails), medians over seeds",
        paper_text="—", setting=f"the paper's, changed: {c.label}",
        robustness="each test on the median over seeds of a median over held-out prompts (or a batch maximum)")
    for c in beyond.CHANGES if c.claim
) + (
    Row("C11_depth8_order", claim="b-depth-order", role=HEADLINE, criterion=at_least(1.5, partly=1.2),
        what="order p of the 8-layer model's per-layer error, e_{ℓ+1} ~ e_ℓ^p (median over layer triples and seeds)",
        paper_text="—", setting="the paper's, changed: 8 layers", robustness=_ORDER_ROBUSTNESS),
    Row("C11_depth8_order_eagle", claim="b-depth-order", criterion=at_least(1.5, partly=1.2),
        what="the same order for EAGLE (η = 1, γ = 1.9) run 8 iterations on the same prompts",
        paper_text="—", setting="the paper's, changed: 8 layers", robustness=_ORDER_ROBUSTNESS),
)

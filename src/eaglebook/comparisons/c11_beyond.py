"""Chapter 11's comparisons (book/11_beyond.md): one question per change of the paper's set-up, and the rate of
the 8-layer model.

- ``C11_<change>_same`` (the headline of the change's own claim, kind ``beyond``): the declared "same
  algorithm" test (:data:`eaglebook.beyond.CRITERION`, the one ``python -m eaglebook.study`` applies): the
  tests held of 4, 0 when the structure fails, on the medians over seeds; resampled over the seeds;
- ``C11_<change>_same_sized`` (declared after the runs, v0.4.0; only for a change of the products' size,
  :func:`eaglebook.beyond.resized`): the same test with the structure test at the reference's size
  (:func:`eaglebook.beyond.sized_mass`).  It supersedes the declared row, which stays visible as evidence: the
  declared 0.4 was set at n + n′ = 20 and asks a larger product for a smaller deviation per entry, so at another
  size the declared row does not apply the standard it applies to every other change;
- ``C11_depth8_order`` (headline) and ``C11_depth8_order_eagle`` (evidence): the order of convergence of the
  8-layer model's per-layer error, and of EAGLE's on the same prompts; resampled over the seeds.
"""

from .. import beyond
from ..ledger import EVIDENCE, HEADLINE, at_least
from . import Row

_ORDER_ROBUSTNESS = "medians over held-out prompts, then over consecutive layer triples and seeds"
_WHAT = "tests held of 4 (structure, scaling law, fidelity, beats zero; 0 when the structure fails), medians over seeds"
_ROBUSTNESS = "each test on the median over seeds of a median over held-out prompts (or a batch maximum)"

ROWS = tuple(
    Row(f"C11_{c.key}_same", claim=c.claim, role=EVIDENCE if beyond.resized(c) else HEADLINE, criterion=beyond.CRITERION,
        what=_WHAT, paper_text="—", setting=f"the paper's, changed: {c.label}", robustness=_ROBUSTNESS)
    for c in beyond.CHANGES if c.claim
) + tuple(
    Row(f"C11_{c.key}_same_sized", claim=c.claim, role=HEADLINE, criterion=beyond.CRITERION, declared=beyond.SIZED,
        supersedes=f"C11_{c.key}_same", paper_text="—", setting=f"the paper's, changed: {c.label}",
        what=_WHAT + ", the structure test at the reference's size (each off-structure mass converted to n = 18, "
        "n′ = 2 at the same per-entry deviation)", robustness=_ROBUSTNESS)
    for c in beyond.CHANGES if c.claim and beyond.resized(c)
) + (
    Row("C11_depth8_order", claim="b-depth-order", role=HEADLINE, criterion=at_least(1.5, partly=1.2),
        what="order p of the 8-layer model's per-layer error, e_{ℓ+1} ~ e_ℓ^p (median over layer triples and seeds)",
        paper_text="—", setting="the paper's, changed: 8 layers", robustness=_ORDER_ROBUSTNESS),
    Row("C11_depth8_order_eagle", claim="b-depth-order", criterion=at_least(1.5, partly=1.2),
        what="the same order for EAGLE (η = 1, γ = 1.9) run 8 iterations on the same prompts",
        paper_text="—", setting="the paper's, changed: 8 layers", robustness=_ORDER_ROBUSTNESS),
)

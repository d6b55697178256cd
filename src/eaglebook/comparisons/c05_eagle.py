"""Chapter 5's comparisons (book/05_eagle.md): the fidelity of the algorithm extracted from the weights.

The paper's Table 1 reports, per regime and layer, the squared error per entry between the trained
transformer's activations and the extracted algorithm's (mean over prompts, averaged over 10 seeds), and
finds at most about 6e-4.  Our statistics are the largest per-layer value, per regime:

- ``mean``, the headline of each regime as declared before the run (now evidence): the paper's own statistic on the
  whole of Z; not robust (a mean over prompts is decided by a few prompts), judged anyway as the paper's;
- ``median`` (evidence): the median over prompts, declared after the first ``paper``-profile run.

The headline of each regime (declared after the run, v0.4.0; it ``replaces`` the mean) is Table 1's statistic on
what reaches the prediction, the D block (per entry of that block), over the prompts on which the transformer
itself does not diverge (:data:`DIVERGED`; those are counted and reported); the A, B and C blocks' rows are evidence.

Beside them, one question the paper invites (kind "beyond", :data:`VERSUS`): does the trained transformer predict
better than 4 iterations of EAGLE, with Theorem 1's constants or with its own extracted ones?

Chapter 5 shows all three regimes on one page (it takes no ``regime`` parameter), so its rows are declared
for every regime, regime by regime (each row's paper value is that regime's column of Table 1, so the rows
are written out per regime rather than as one ``{regime}`` template).
"""

from .. import regimes
from ..config import REGIMES
from ..ledger import HEADLINE, after_run, at_least, at_most
from . import Row

#: the paper's Table 1: squared error per entry after each layer, ×10⁻⁴ (mean over prompts, 10 seeds)
PAPER_T1 = {"unconstrained": [0.00, 2.36, 5.27, 3.70, 2.16], "distributed": [0.00, 0.62, 1.40, 1.28, 1.32],
            "sketched": [0.00, 0.01, 0.02, 0.13, 0.14]}
BOUND = 6e-4   # "at most about 6e-4 in every layer"

_ROBUSTNESS = {"median": "a median over prompts",
               "mean": "the paper's statistic; a mean over prompts, decided by the few prompts on which the transformer "
                       "or the extracted algorithm diverges"}


def _fidelity(regime: str, stat: str) -> Row:
    return Row(f"C5_{regime}_fidelity_{stat}", paper=BOUND, paper_text=f"{max(PAPER_T1[regime]) * 1e-4:.1e} (≤ 6e-4)",
               criterion=at_most(BOUND, partly=6e-3), robust=stat == "median", judge=True,
               what=f"largest per-layer squared error per entry, extracted algorithm vs transformer ({regime}; {stat} over prompts)",
               robustness=_ROBUSTNESS[stat], claim="fidelity",
               # the mean was the headline as declared before the run; the prediction's row (below) replaces it
               **({} if stat == "mean" else dict(declared=after_run("v0.2.0, 2026-12-01"))))


#: A prompt on which the transformer's own prediction error (squared error per entry of −D_L against the clean D)
#: exceeds ``DIVERGED`` times the zero predictor's (the mean of D² over that seed's held-out prompts), or is not
#: finite, is one on which the transformer diverges: such prompts are counted and reported, and left out of the
#: statistic of the rows below (declared v0.4.0, after the run).
DIVERGED = 10.0
DECLARED_PREDICTION = after_run("v0.4.0, 2026-12-03")
BECAUSE = ("the row declared first compares the whole of Z_ℓ, whose A, B and C blocks never reach the prediction "
           "(they act on it only through later layers' D updates, C_L on nothing); what the algorithm read out of the "
           "weights must reproduce is what the transformer predicts, its D block")


def _block(regime: str, block: str) -> Row:
    """Table 1's statistic on one block of Z_ℓ (per entry of that block), over the prompts on which the transformer
    does not diverge: the D block (the prediction) is the headline, the others evidence."""
    head = block == "D"
    return Row(f"C5_{regime}_fidelity_{block}", paper=BOUND, paper_text=f"{max(PAPER_T1[regime]) * 1e-4:.1e} (≤ 6e-4)",
               criterion=at_most(BOUND, partly=6e-3), claim="fidelity", declared=DECLARED_PREDICTION,
               what=f"largest per-layer squared error per entry of the {block} block"
                    + (" (the prediction)" if head else "") + f", extracted algorithm vs transformer ({regime}; mean "
                    f"over the prompts on which the transformer does not diverge, averaged over seeds)",
               robustness=f"a mean over the prompts on which the transformer does not diverge (its error at most "
                          f"{DIVERGED:g}× the zero predictor's); resampled over prompts",
               **(dict(role=HEADLINE, part=regime, replaces=f"C5_{regime}_fidelity_mean", because=BECAUSE) if head else {}))


#: A question the paper invites (claims ``model-vs-eagle4`` and ``model-vs-extracted4``, kind "beyond"): does the
#: trained 4-layer transformer predict better than 4 iterations of EAGLE?  Per held-out prompt (every seed's,
#: pooled), the transformer's prediction error (squared error per entry of its −D_L against the clean D) against
#: EAGLE's after 4 iterations from the same prompt; the statistic is the share of prompts on which the
#: transformer's is lower.  Declared before the comparison was first computed.
VERSUS = {"theorem": ("model-vs-eagle4", "Theorem 1's constants (η = 1/3, γ = 1, each prompt's own ρ = ‖Ã_ℓ‖₂⁻²; "
                      "distributed: Algorithm 1 over the model's machines; sketched: a fresh selection of r columns "
                      "per iteration)"),
          "extracted": ("model-vs-extracted4", "the transformer's own per-layer constants (the algorithm extracted "
                        "from its weights)")}
#: the regime whose row answers the question: Theorem 1 is about centralized EAGLE, the paper's main regime; the
#: other regimes' rows are evidence
VERSUS_HEADLINE = "unconstrained"


def _versus(regime: str, variant: str) -> Row:
    claim, how = VERSUS[variant]
    return Row(f"C5_{regime}_model_vs_{variant}", paper_text="— (a question the paper invites)",
               criterion=at_least(0.5, partly=0.4), claim=claim,
               what=f"share of held-out prompts on which the transformer's prediction error is lower than that of 4 "
                    f"iterations of EAGLE with {how} ({regime}; the prompts of every seed pooled)",
               robustness="a share of prompts: a diverging prompt counts once; resampled over prompts",
               **(dict(role=HEADLINE) if regimes.among(regime, (VERSUS_HEADLINE,)) else {}))


ROWS = tuple(_fidelity(r, stat) for r in REGIMES for stat in ("mean", "median")) + tuple(
    _block(r, b) for r in REGIMES for b in "DABC") + tuple(
    _versus(r, v) for v in VERSUS for r in REGIMES)

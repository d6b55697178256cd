"""The claims of the paper that the book tests, one entry per claim: the unit of the scorecard's tally.

A chapter's paper comparison (:meth:`eaglebook.ledger.Ledger.declare`) names the claim it bears on and its
role: the **headline** row (one per claim, or one per regime where the paper states the claim for several
regimes; judged by the statistic declared in advance or the paper's own) or **evidence** (other readings,
post-hoc statistics, ablations that depart from a stated value, other regimes, a superseded row).  Only the
headline rows give the claim its verdict; evidence is shown beneath it and never counted.

``source`` is where the claim is made: the camera-ready paper (section, figure or table), or a secondary
summary of the paper (``kind="secondary"``: claims that circulate about the paper but are not in it; they
are listed apart and never enter the tally), or another paper whose claims the book tests in the
paper's frame (``kind="neighbour"``: chapter 10 tests Vladymyrov et al. 2024; these claims have headline
rows and verdicts of their own, in a table of their own, and never enter the paper's tally), or a question
the paper leaves open (``kind="beyond"``: chapter 11 changes one thing of the set-up and asks whether the
same algorithm emerges; chapter 5 asks whether the trained model beats 4 iterations of EAGLE; there is no
paper value, the verdict is the chapter's declared test, shown as yes / partly / no, in a section of its own,
never tallied).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PaperClaim", "CLAIMS", "claim", "PAPER", "SECONDARY", "NEIGHBOUR", "BEYOND", "KINDS"]

PAPER, SECONDARY, NEIGHBOUR, BEYOND = "paper", "secondary", "neighbour", "beyond"
KINDS = (PAPER, SECONDARY, NEIGHBOUR, BEYOND)
#: The neighbouring paper of chapter 10.
V24 = "Vladymyrov et al. 2024"


@dataclass(frozen=True)
class PaperClaim:
    id: str
    chapter: str          # the chapter that tests it (the scorecard links there)
    statement: str        # the claim, in one sentence
    source: str           # where it is made
    kind: str = PAPER     # PAPER, SECONDARY, NEIGHBOUR or BEYOND
    parts: tuple[str, ...] = ()   # the regimes (or other parts) for which the paper states it; () = one part

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id}: kind must be one of {', '.join(map(repr, KINDS))}")


_U, _D, _S = "unconstrained", "distributed", "sketched"
_LIMITS = "camera-ready, limitations"
ALL3 = (_U, _D, _S)

CLAIMS: tuple[PaperClaim, ...] = (
    # chapter 3
    PaperClaim("final-mse", "03_train", "The trained transformer's final test MSE is about 1e-3.",
               "camera-ready App. C.1 (beside Table 1) and Fig. 9 (median training loss over 10 runs)", parts=ALL3),
    PaperClaim("mse-reduction", "03_train", "The test MSE falls 10–50 times below predicting zero, in all three regimes.",
               "camera-ready Fig. 3 and §4", parts=ALL3),
    PaperClaim("prune", "03_train", "Pruning the unconstrained model from 8 heads to 1 barely changes its test MSE.",
               "camera-ready §3 (head pruning) and App. B.5"),
    # chapter 4
    PaperClaim("quantisation", "04_extract", "Zeroing entries below 1.5× the mean absolute entry and quantising W_QK to 2 "
               "and W_VP to 3 levels does not hurt the model.", "camera-ready §3 (step 1), App. B.5, Fig. 10", parts=(_U, _D)),
    PaperClaim("eta", "04_extract", "The scaling law α¹α² ≈ −η / max‖A_ℓ‖² holds with η ≈ 1.",
               "camera-ready §3 (scaling laws), App. B.5, Figs. 5 and 11 (unconstrained model)", parts=(_U,)),
    PaperClaim("gamma", "04_extract", "The scaling law α¹α³ ≈ −γ / max‖A_ℓ‖² holds with γ ≈ 1.9.",
               "camera-ready §3 (scaling laws), App. B.5, Figs. 5 and 11 (unconstrained model)", parts=(_U,)),
    PaperClaim("sketch-rel-diff", "04_extract", "In the sketched regime the normalised rank-r data blocks of W_QK and W_VP "
               "agree up to sign: relative difference 0.28.", "camera-ready §3 (compute-limited weights), Fig. 4, App. C.3"),
    PaperClaim("cross-machine", "04_extract", "In the distributed regime only the C, D (query) columns cross machines.",
               "camera-ready §3 (distributed weights), Fig. 2"),
    # chapter 5
    PaperClaim("fidelity", "05_eagle", "The extracted algorithm reproduces the transformer's activations to a squared "
               "error per entry of at most about 6e-4, in every layer and regime.", "camera-ready Table 1 (= Table 3), §4",
               parts=ALL3),
    # chapter 5: two questions the paper invites (no paper value; never tallied)
    PaperClaim("model-vs-eagle4", "05_eagle", "On the training distribution the trained 4-layer transformer predicts "
               "better than 4 iterations of EAGLE with Theorem 1's constants (η = 1/3, γ = 1, each prompt's own ρ).",
               "a question the paper invites: its trained model (§4) beside Theorem 1's EAGLE (§5)", kind=BEYOND),
    PaperClaim("model-vs-extracted4", "05_eagle", "On the training distribution the trained 4-layer transformer predicts "
               "better than 4 iterations of EAGLE with its own extracted per-layer constants (the algorithm read out "
               "of its weights).", "a question the paper invites: its trained model (§4) beside its extracted "
               "algorithm (§4, Table 1)", kind=BEYOND),
    # chapter 6
    PaperClaim("theorem1-kappa", "06_newton_schulz", "EAGLE's iterations grow like log κ (Theorem 1).",
               "camera-ready Theorem 1 (§5) and its proof (App. F)"),
    PaperClaim("theorem1-loglog", "06_newton_schulz", "… and like log log 1/ε once conditioned (Theorem 1).",
               "camera-ready Theorem 1 (§5)"),
    # (Theorem 2's growth linear in 1/α is the claim of the paper's Fig. 7: chapter 8's "alpha-rounds", tested on the
    # paper's own sweep; chapter 6's rows on it are evidence there, so that it is counted once)
    PaperClaim("not-gdpp", "06_newton_schulz", "The learned iteration interleaves conditioning and prediction; it is not "
               "GD++ (preconditioning, then one gradient step).", "camera-ready §4 and App. C.5"),
    # chapter 7
    PaperClaim("cg-100x", "07_benchmarks", "EAGLE needs about 100× fewer iterations than CG at κ = 1e4.",
               "camera-ready §5.1, Fig. 6"),
    PaperClaim("svd-log-factor", "07_benchmarks", "EAGLE matches SVD-based solvers up to a log factor.",
               "camera-ready §5.1, Fig. 6 (hardware not stated)"),
    PaperClaim("sketch-n-over-r", "07_benchmarks", "Sketched EAGLE's iterations grow linearly with n/r.",
               "camera-ready §5.3, Fig. 18"),
    PaperClaim("sketch-periter", "07_benchmarks", "A sketched iteration costs 21, 16, 7, 5 ms at sketch size "
               "r = 240, 120, 60, 30.",
               "camera-ready §5.3 (hardware not stated)"),
    PaperClaim("sgd-2.5x", "07_benchmarks", "At sketch size r = n/4 sketched EAGLE reaches 1e-2 about 2.5× faster than SGD.",
               "camera-ready §5.3, Fig. 18"),
    PaperClaim("table2", "07_benchmarks", "On seven SuiteSparse matrices EAGLE is faster than SVD on all seven (average "
               "rank 1.14 of 4 against SVD, CG, LSMR).", "camera-ready §5.4, Table 2 (timed on a GPU)"),
    PaperClaim("distributions", "07_benchmarks", "EAGLE converges on all six data distributions.",
               "camera-ready App. E.3, Fig. 19"),
    PaperClaim("noise-regularises", "07_benchmarks", "With noise, early-stopped EAGLE regularises much like GD.",
               "camera-ready App. E.3, Fig. 21"),
    PaperClaim("step-sizes", "07_benchmarks", "Scaling η and γ (together, or their ratio) within [0.2, 2] has little effect.",
               "camera-ready App. E.3, Fig. 22"),
    # chapter 8
    PaperClaim("m-independent", "08_distributed", "Distributed EAGLE's iteration count does not depend on the number of "
               "machines M.", "camera-ready §5.2, Fig. 7"),
    PaperClaim("alpha-rounds", "08_distributed", "Distributed EAGLE's rounds grow linearly in 1/α.",
               "camera-ready §5.2, Fig. 7 (ᾱ ∈ {1, 0.83, 0.35, 0.01})"),
    PaperClaim("gd-rounds", "08_distributed", "Distributed GD needs 10–100× more rounds than distributed EAGLE.",
               "camera-ready §5.2, Fig. 8"),
    PaperClaim("freeze-rounds", "08_distributed", "Freezing the conditioned A^μ keeps the iteration count.",
               "camera-ready App. E.2, Fig. 16"),
    PaperClaim("freeze-time", "08_distributed", "Freezing the conditioned A^μ reduces the wall-clock time.",
               "camera-ready App. E.2, Fig. 16"),
    # chapter 9
    PaperClaim("noise-structure", "09_ablations", "Training with noise σ² = 0.01 gives the same weight patterns and "
               "layer-wise behaviour.", "camera-ready App. C.2, Figs. 13–14", parts=("weights", "constants")),
    # chapter 10: claims of a neighbouring paper (Vladymyrov et al. 2024), tested in our frame; never tallied
    PaperClaim("v24-gdpp-noiseless", "10_noisy_regression", "On noiseless data GD++'s loss falls with depth: 1.768, "
               "0.341, 0.019, 9.91e-5, 1.14e-7, 2.37e-10 and 2.65e-12 for 1 to 7 layers (second-order decay).",
               f"{V24}, Table 1 (σ_max = 0)", kind=NEIGHBOUR, parts=tuple(f"{L} layer{'s' if L > 1 else ''}" for L in range(1, 8))),
    PaperClaim("v24-sigma5-models", "10_noisy_regression", "At σ_max = 5 the adjusted loss is 0.344 for GD++, 0.118 and "
               "0.047 for DIAG and 0.117 and 0.047 for FULL (3 and 7 layers).", f"{V24}, Table 1 (σ_max = 5)",
               kind=NEIGHBOUR, parts=("GD++", "DIAG, 3 layers", "DIAG, 7 layers", "FULL, 3 layers", "FULL, 7 layers")),
    PaperClaim("v24-sigma5-ridge", "10_noisy_regression", "At σ_max = 5 the adjusted loss of ConstRR is 0.365, of AdaRR "
               "0.068 and of TunedRR 0.049.", f"{V24}, Table 1 (σ_max = 5)", kind=NEIGHBOUR,
               parts=("ConstRR", "AdaRR", "TunedRR")),
    PaperClaim("v24-diag-full", "10_noisy_regression", "DIAG performs about as well as FULL.",
               f"{V24}, §5 and Table 1", kind=NEIGHBOUR),
    PaperClaim("v24-gdpp-constrr", "10_noisy_regression", "GD++ performs like ConstRR, as if it assumed one noise level.",
               f"{V24}, §5 and Table 1", kind=NEIGHBOUR),
    PaperClaim("v24-beat-adarr", "10_noisy_regression", "With 4 or more layers the linear transformers beat AdaRR "
               "for σ_max ≥ 4.", f"{V24}, §5 and Table 1", kind=NEIGHBOUR, parts=("DIAG", "FULL")),
    # chapter 11: the paper's open questions, one change to its set-up each (no paper value; never tallied)
    *(PaperClaim(f"b-{key}", "11_beyond", statement, src, kind=BEYOND) for key, statement, src in (
        ("softmax", "With softmax attention in place of linear attention, the same algorithm emerges.",
         _LIMITS + ": extension to non-linear models is open"),
        ("depth2", "With 2 layers, the same algorithm emerges.", "camera-ready App. B (4 layers throughout)"),
        ("depth8", "With 8 layers, the same algorithm emerges.", "camera-ready App. B (4 layers throughout)"),
        ("depth-order", "With 8 layers the model's error falls doubly exponentially from layer to layer (the rate "
         "Theorem 1 proves for EAGLE only after a conditioning phase; EAGLE's own order on the same prompts and "
         "iterations is its evidence).", "camera-ready Theorem 1 (§5)"),
        ("scale", "At n = d = 36 with s = 20, the same algorithm emerges.", "camera-ready App. B (n = d = 18 in training)"),
        ("noise-half", "With σ² = 0.01 on half of the training samples, the same algorithm emerges.",
         "a secondary summary's reading of App. C"),
        ("noise-all", "With σ² = 0.01 on every sample (the book's reading of App. C), the same algorithm emerges.",
         "camera-ready App. C.2"),
        ("floor", "On data with a full-rank floor (rank X > rank A), the same algorithm emerges.",
         "camera-ready (low-rank data throughout)"),
        ("sgd", "Trained with SGD and momentum instead of Adam, the same algorithm emerges.",
         _LIMITS + ": one pre-training recipe"),
        ("lr-low", "With Adam at 0.3 × the learning rate, the same algorithm emerges.", _LIMITS + ": one pre-training recipe"),
        ("lr-high", "With Adam at 3 × the learning rate, the same algorithm emerges.", _LIMITS + ": one pre-training recipe"),
    )),
    # claims found only in secondary summaries of the paper (listed apart, never tallied)
    PaperClaim("s-randsketch", "07_benchmarks", "EAGLE reaches 1e-6 in about ⅓ of RandSketch+CG's wall-clock at κ = 1e4.",
               "a secondary summary (not in the camera-ready text)", kind=SECONDARY),
    PaperClaim("s-eagle-iterations", "07_benchmarks", "EAGLE needs about 1–2 iterations at κ = 1e4.",
               "a secondary summary (not in the paper)", kind=SECONDARY),
    PaperClaim("s-alpha-v1", "08_distributed", "The α sweep used ᾱ ∈ {1, 0.9, 0.36, 0.004}.",
               "a secondary summary (probably an earlier version of the paper)", kind=SECONDARY),
)

_BY_ID = {c.id: c for c in CLAIMS}
if len(_BY_ID) != len(CLAIMS):  # pragma: no cover - a typo in the table above
    raise RuntimeError("duplicate claim ids in eaglebook.claims.CLAIMS")


def claim(claim_id: str) -> PaperClaim:
    """The claim ``claim_id``; an unknown id is a ``ValueError`` listing the known ones."""
    try:
        return _BY_ID[claim_id]
    except KeyError:
        raise ValueError(f"unknown paper claim {claim_id!r}; known claims: {', '.join(_BY_ID)}") from None

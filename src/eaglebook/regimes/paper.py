"""What the paper says about a regime, and how the book says it: the paper's facts (does it quantise the
regime, does it state the scaling law's η, γ for it), the regime's own comparison of chapter 4 (as plain data,
from which :mod:`eaglebook.comparisons.c04_extract` builds the headline row of its claim) and how chapter 4
reads its value, the tolerance of chapter 3's beats-zero check, its label and plot style, and the sentences
chapter 4 says about the regime.

Chapter 4's sentences are plain text (the chapter glues them into its prose: no Markdown, no LaTeX); the
methods that take ``m`` read what chapter 4 measured on the model's weights
(:class:`eaglebook.chapters.extract.Measured`), and ``row`` is the recorded ledger row of the regime's own
comparison (``verdict``, ``criterion``).  :class:`Paper` says what fits a regime read like the unconstrained
one (mean diagonals, no claim of its own); :class:`SketchedPaper` and :class:`DistributedPaper` say what the
paper claims of those two regimes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["PaperComparison", "Paper", "SketchedPaper", "DistributedPaper"]


@dataclass(frozen=True)
class PaperComparison:
    """A regime's own paper comparison of chapter 4, as plain data (the headline row of its ``claim``):
    ``criterion`` is ``(name of a eaglebook.ledger criterion, positional arguments, keyword arguments)``;
    ``short``: the claim in a few words (chapter 4's findings box)."""

    key: str
    what: str
    criterion: tuple[str, tuple, dict]
    robustness: str
    claim: str
    paper: float | None = None
    paper_text: str | None = None
    short: str = ""


def _holds(verdict: str) -> str:
    """"holds", "holds only in part" or "does not hold", for a verdict."""
    return "holds" if verdict == "reproduced" else "holds only in part" if verdict == "partly" else "does not hold"


@dataclass(frozen=True)
class Paper:
    """The paper's facts about one regime and the book's words for it.

    ``quantized``: the paper sparsifies and quantises its products (chapter 4, claim ``quantisation``);
    ``scaling_law``: the paper states η ≈ 1, γ ≈ 1.9 for it (App. B.5, claims ``eta``, ``gamma``; elsewhere
    chapter 4's η, γ rows are evidence); ``special``: its own comparison of chapter 4 (or None);
    ``variant``: the EAGLE variant it maps to (chapter 5: "centralized", "sketched" or "distributed");
    ``beats_zero_tolerance``: the :class:`eaglebook.config.Tolerances` field of chapter 3's beats-zero check;
    ``vp_label``: a layer's W_VP as :meth:`eaglebook.regimes.reading.Diagonal.vp_parts` shows it (plots);
    ``norm_label``, ``norm_note``: the squared norm whose batch maximum sets a layer's scale, and what it is.

    Chapter 4's words: ``reading`` (how the scalars are read, after "We read"), ``update_note`` (appended to
    the layer's update), ``no_claim`` (step 4's opening without a comparison of its own), ``own`` (step 4's
    paragraph then) and ``own_print`` (its printed line)."""

    label: str
    style: dict = field(default_factory=dict)
    variant: str = "centralized"
    quantized: bool = False
    scaling_law: bool = False
    special: PaperComparison | None = None
    beats_zero_tolerance: str = "beats_zero_factor"
    vp_label: str = "$W_{VP}$"
    norm_label: str = "‖A_ℓ‖²"
    norm_note: str = ""
    reading: str = "each as the mean diagonal of its block"
    update_note: str = ""
    no_claim: str = "The paper makes no claim about this regime's weights beyond the common structure."
    own: str = "The paper states no claim of its own about this regime."
    own_print: str = "the paper states no claim of its own about this regime's weights"

    @property
    def norm(self) -> str:
        """The norm with its note, for prose."""
        return self.norm_label + (f" ({self.norm_note})" if self.norm_note else "")

    # ----------------------------------------------------------------------------- chapter 4's words
    def special_intro(self) -> str:
        """Step 4's opening: the paper's one claim about the regime's weights, or that it makes none."""
        sp = self.special
        if sp is None:
            return self.no_claim
        return (f"The paper makes one claim about this regime's weights beyond the common structure. Its statistic "
                f"here: the {sp.what}; the paper's value: {sp.paper_text or format(sp.paper, 'g')}.")

    def special_value(self, m) -> float:
        """The value of the regime's own comparison, or (without one) the mean off-structure mass of W_VP."""
        return m.off_vp

    def summary(self, m) -> str:
        """Step 4's printed line."""
        return f"{self.label}: {self.own_print}"

    def special_text(self, m, row) -> str:
        """Step 4's paragraph: the regime's own comparison and its verdict."""
        return self.own

    def structure_text(self, m) -> str:
        """Step 2's sentence on the products' structure."""
        return f"The products are {m.structure}."

    def first_finding(self, m, row) -> str:
        """The first sentence of what the chapter established."""
        return (f"The trained model's weights are {m.structure}: on average {m.off_qk:.2f} of W_QK's mass lies off "
                f"the diagonal pattern (random: {m.off_rand:.2f}).")

    def gamma_average_text(self, gamma_avg: float, row, machines: int) -> str:
        """A sentence on Algorithm 1's γ where heads write to each other's copies ("" where none does)."""
        return ""


@dataclass(frozen=True)
class SketchedPaper(Paper):
    """The sketched regime: W_QK's rank-r data block and W_VP's share one sketch (the paper's Fig. 4)."""

    def special_value(self, m) -> float:
        return m.rel

    def summary(self, m) -> str:
        return (f"ranks of the data blocks (W_QK, W_VP) per layer: {[(s.rank_qk, s.rank_vp) for s in m.sketch]}; "
                f"overlap of their top-{m.r} subspaces: {[round(s.projector_overlap, 2) for s in m.sketch]}")

    def special_text(self, m, row) -> str:
        lo, hi = m.overlap
        paper = format(self.special.paper, "g")
        return (f"W_QK's data block is a scaled rank-r projector SSᵀ up to a relative residual of {m.fit:.2f} (checked: "
                f"at most {m.fit_max:g}). The paper says W_VP's block has the same S: after rescaling both to spectral "
                f"norm 1 they differ by {paper} (relative). Ours differ by {m.rel:.2f} (median over layers, seed {m.seed}): "
                f"verdict {row['verdict']} (criterion: {row['criterion']}). Their top-r subspaces overlap by "
                f"{lo:.2f}–{hi:.2f} over the layers (1: the same subspace, {m.random_overlap:.2f}: two random ones), so "
                f"in this model the two blocks {m.shared_phrase} one sketch"
                + ("" if m.shared else ", and a layer is not Algorithm 1 with a single fixed sketch S_ℓ")
                + f". Chapter 9 tests over seeds and one change at a time which of our choices could explain the "
                  f"difference from the paper's {paper}.")

    def structure_text(self, m) -> str:
        return ("In the sketched regime W_QK has rank r by construction, so the diagonal pattern cannot apply; its "
                f"structure is measured in step 4 (the least-squares fit of a scaled rank-r projector leaves {m.fit:.2f} "
                "of it, checked).")

    def first_finding(self, m, row) -> str:
        lo, hi = m.overlap
        return (f"In the sketched regime W_QK's data block is a scaled rank-r projector up to a relative residual of "
                f"{m.fit:.2f}. The paper's main observation about this regime, that W_VP's block has the same sketch, "
                f"{_holds(row['verdict'])} here: the rescaled sketch blocks differ by {m.rel:.2f} against the paper's "
                f"{format(self.special.paper, 'g')} ({row['verdict']}), and their top-r subspaces overlap by "
                f"{lo:.2f}–{hi:.2f} (random subspaces: {m.random_overlap:.2f}).")


@dataclass(frozen=True)
class DistributedPaper(Paper):
    """The distributed regime: only the C, D (query) columns cross machines (the paper's Fig. 2)."""

    def special_value(self, m) -> float:
        return m.share

    def summary(self, m) -> str:
        return (f"other-machine projection: query-block share {m.share:.3f}, data-block share {m.data_share:.4f}; "
                f"its query scalar b per layer {np.round(m.b, 3)} vs the self block's α³ {np.round(m.a3, 3)}")

    def special_text(self, m, row) -> str:
        return (f"Of the cross-machine projection's Frobenius mass, {m.share:.3f} lies in the query block (the C, D "
                f"columns) and {m.data_share:.4f} in the data block (checked: at most {m.cross_data_max:g}): machines "
                "exchange their C and D updates and almost nothing else, as in Algorithm 1 (verdict "
                f"{row['verdict']}; criterion: {row['criterion']}).")

    def gamma_average_text(self, gamma_avg, row, machines) -> str:
        return (f"Here γ is each machine's own head's step on its copy of C, D. Algorithm 1 averages the machines' "
                f"updates, so its γ counts the own head and the other {machines - 1} heads together (chapter 2: "
                f"α³ = γ/M per head): in that convention γ = {gamma_avg:.2f} (by the criterion: {row['verdict']}).")

"""What the paper says about a regime, and how the book shows it: the paper's facts (does it quantise the
regime, does it state the scaling law's η, γ for it), the regime's own comparison of chapter 4 (as plain data:
chapter 4's comparison rows are built from it), the tolerance of chapter 3's beats-zero check, its label and
plot style, and the labels of its quantities in chapter 4."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PaperComparison", "Paper"]


@dataclass(frozen=True)
class PaperComparison:
    """A regime's own paper comparison of chapter 4, as plain data (the headline row of its ``claim``):
    ``criterion`` is ``(name of a eaglebook.ledger criterion, positional arguments, keyword arguments)``."""

    key: str
    what: str
    criterion: tuple[str, tuple, dict]
    robustness: str
    claim: str
    paper: float | None = None
    paper_text: str | None = None


@dataclass(frozen=True)
class Paper:
    """The paper's facts about one regime and the book's words for it.

    ``quantized``: the paper sparsifies and quantises its products (chapter 4, claim ``quantisation``);
    ``scaling_law``: the paper states η ≈ 1, γ ≈ 1.9 for it (App. B.5, claims ``eta``, ``gamma``; elsewhere
    chapter 4's η, γ rows are evidence); ``special``: its own comparison of chapter 4 (or None);
    ``variant``: the EAGLE variant it maps to (chapter 5: "centralized", "sketched" or "distributed");
    ``beats_zero_tolerance``: the :class:`eaglebook.config.Tolerances` field of chapter 3's beats-zero check;
    ``vp_label``: a layer's W_VP as :meth:`eaglebook.regimes.reading.Diagonal.vp_parts` shows it (plots);
    ``norm_label``, ``norm_note``: the squared norm whose batch maximum sets a layer's scale, and what it is."""

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

    @property
    def norm(self) -> str:
        """The norm with its note, for prose."""
        return self.norm_label + (f" ({self.norm_note})" if self.norm_note else "")

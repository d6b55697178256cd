"""Verdicts that do not hang on a few prompts: a headline's verdict recomputed on bootstrap resamples.

A statistic over prompts (or seeds, or problems) is recorded as :class:`Resampled` (the per-unit values and the
statistic); the ledger (:meth:`eaglebook.ledger.Ledger.record`) then recomputes it on :data:`RESAMPLES` bootstrap
resamples of the units (drawn with replacement, seeded) and judges each by the row's declared criterion.  Where
the verdict differs from the full sample's in more than :data:`FLIP_SHARE` of them, the row is "not judged:
decided by k of N prompts", naming the k units whose removal flips the verdict (:func:`deciders`), like the
timing rule's "within noise".  The rule and its numbers are declared here, before any run used them (v0.4.0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["RESAMPLES", "FLIP_SHARE", "Resampled", "Stability", "stability", "deciders"]

#: Bootstrap resamples per headline statistic (declared).
RESAMPLES = 200
#: A verdict that changes in more than this share of the resamples is not judged (declared).
FLIP_SHARE = 0.05


@dataclass(frozen=True)
class Resampled:
    """A statistic of per-unit values, recorded with its resampling stability.  ``values``: one entry (or row) per
    unit; ``statistic``: values -> float (e.g. ``np.median``); ``unit``: what a unit is ("prompts", "seeds");
    ``names``: how the units are named in the row (default: their indices)."""

    values: Any
    statistic: Callable[[Any], float]
    unit: str = "prompts"
    names: Sequence | None = None
    seed: int = 0

    @property
    def value(self) -> float:
        return float(self.statistic(np.asarray(self.values)))


@dataclass(frozen=True)
class Stability:
    share: float            # share of the resamples whose verdict differs from the full sample's
    resamples: int
    n: int                  # units
    unit: str
    k: int | None = None    # the fewest units whose removal flips the verdict (None: none found up to n // 2)
    deciders: tuple = field(default_factory=tuple)

    @property
    def stable(self) -> bool:
        return self.share <= FLIP_SHARE

    def why(self, names: bool = True) -> str:
        """The "not judged" reason of an unstable verdict (``names``: list the units that decide it)."""
        if self.k is None:
            return f"verdict changes in {100 * self.share:.0f}% of {self.resamples} resamples of the {self.n} {self.unit}"
        shown = ", ".join(map(str, self.deciders[:6])) + (", …" if len(self.deciders) > 6 else "")
        return f"decided by {self.k} of {self.n} {self.unit}" + (f" ({shown})" if names else "")

    def summary(self) -> str:
        """For the scorecard: e.g. "0% of 200 resamples of 10 seeds change it"."""
        return f"{100 * self.share:.0f}% of {self.resamples} resamples of {self.n} {self.unit} change it"

    @classmethod
    def from_dict(cls, d: dict) -> "Stability":
        """The stability a ledger row saved (:meth:`as_dict`)."""
        return cls(d["share"], d["resamples"], d["n"], d["unit"], d.get("k"), tuple(d.get("deciders") or ()))

    def as_dict(self) -> dict:
        return dict(share=self.share, resamples=self.resamples, n=self.n, unit=self.unit, k=self.k,
                    deciders=[str(d) for d in self.deciders])


def deciders(values: np.ndarray, statistic, verdict: Callable[[float], str], *, names=None, limit: int | None = None):
    """The fewest units whose removal changes the verdict, found greedily: units ranked by their leave-one-out
    effect on the statistic, removed from either end of that ranking one at a time.  Returns (k, names) or
    (None, ())."""
    x = np.asarray(values)
    n = len(x)
    names = list(range(n)) if names is None else list(names)
    base = float(statistic(x))
    v0 = verdict(base)
    keep = np.ones(n, bool)
    loo = np.empty(n)
    for i in range(n):
        keep[i] = False
        loo[i] = float(statistic(x[keep])) - base
        keep[i] = True
    limit = n // 2 if limit is None else limit
    best = None
    for order in (np.argsort(loo), np.argsort(-loo)):
        mask = np.ones(n, bool)
        for j in range(min(limit, n - 1)):
            mask[order[j]] = False
            if verdict(float(statistic(x[mask]))) != v0:
                if best is None or j + 1 < best[0]:
                    best = (j + 1, tuple(names[i] for i in order[:j + 1]))
                break
    return best if best else (None, ())


def stability(r: Resampled, verdict: Callable[[float], str], *, resamples: int = RESAMPLES) -> Stability:
    """The share of bootstrap resamples (seeded by ``r.seed``) whose verdict differs from the full sample's, and,
    where it exceeds :data:`FLIP_SHARE`, the units that decide it."""
    x = np.asarray(r.values)
    n = len(x)
    v0 = verdict(r.value)
    rng = np.random.default_rng(np.random.SeedSequence([r.seed, n]))
    flips = sum(verdict(float(r.statistic(x[rng.integers(0, n, n)]))) != v0 for _ in range(resamples))
    share = flips / resamples
    if share <= FLIP_SHARE:
        return Stability(share, resamples, n, r.unit)
    k, names = deciders(x, r.statistic, verdict, names=r.names)
    return Stability(share, resamples, n, r.unit, k, names)


def phrase(st: dict | None) -> str:
    """A ledger row's resampling, in words: "its verdict is stable under resampling the 600 prompts" or "its verdict
    is decided by 3 of 600 prompts (17, 201, 4)"; "" for a row recorded without resampling."""
    if not st:
        return ""
    if st["share"] <= FLIP_SHARE:
        units = st["unit"][:-1] if st["n"] == 1 and st["unit"].endswith("s") else st["unit"]
        return f"its verdict is stable under resampling the {st['n']} {units}" if st["n"] > 1 else \
            f"its verdict rests on one {units}: resampling cannot test it"
    return "its verdict is " + Stability.from_dict(st).why()

"""A toy regime, defined in this file alone: the unconstrained regime with two heads, always.

It tests that a regime is one file: its three parts are the unconstrained regime's attention with the head
count fixed at two (so it reads no setting of its own), the unconstrained reading (each block's mean diagonal;
chapter 4 sums the two heads' products, as the paper does for its 8-head model), and its own words; nothing
else in the package or the chapters names it.  The ``ci`` profile registers it
(:attr:`eaglebook.config.Profile.extra_regimes`), so the test build gives it a page of chapter 4 of its own;
the paper book never shows it, and its ledgers stay off the scorecard (a regime the paper does not have is a
changed setting, :func:`eaglebook.chapter.start`).
"""

from __future__ import annotations

from . import Diagonal, Heads, Paper, Regime

__all__ = ["REGIME"]

REGIME = Regime("toy", Heads(count=2), Diagonal(), Paper(
    "toy (two heads)", style=dict(color="#CC79A7", linestyle=":"),
    no_claim="The paper has no such regime: it is the book's own, a test that a regime needs nothing but its "
             "definition.",
    own="Two heads per layer, always: the unconstrained regime with its head count fixed. Its products are summed "
        "over the heads, as the paper sums its 8-head model's, so the steps above read the pair as one layer.",
    own_print="two heads; a regime of the book's tests, not of the paper"))

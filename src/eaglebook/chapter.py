"""What every chapter does in its first cell after the parameters: validate, resolve, set up.

A chapter's parameters cell holds literals only (so papermill can override them); the next cell calls
:func:`start`, which validates every parameter (a bad value fails here, with a message naming the
parameter and its allowed values), resolves ``profile=None`` from ``$EAGLEBOOK_PROFILE``, applies the
plotting style, and returns a :class:`Chapter` holding the profile, the seed and a fresh claims ledger.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from . import config, plotting
from .report import Ledger, provenance


@dataclass
class Chapter:
    name: str
    profile: config.Profile
    seed: int
    ledger: Ledger
    regime: str | None = None

    def rng(self, purpose: int) -> np.random.Generator:
        """An independent numpy generator for one purpose of this chapter (spawned from the seed)."""
        return np.random.default_rng(np.random.SeedSequence(self.seed).spawn(purpose + 1)[purpose])

    def torch_generator(self, purpose: int):
        """An independent torch generator for one purpose (seeded from the chapter seed)."""
        import torch
        s = int(np.random.SeedSequence(self.seed).spawn(purpose + 1)[purpose].generate_state(1)[0])
        return torch.Generator().manual_seed(s)


def start(name: str, *, title: str, profile: str | None, seed: int, regime: str | None = None) -> Chapter:
    """Validate the chapter parameters and set up; see the module docstring."""
    prof = config.get(profile)
    config.check_int("seed", seed)
    if regime is not None:
        regime = config.regime_name(regime)
    plotting.use_style()
    try:  # one thread per process: the matrices are tiny, and 2 threads on a busy core spin
        import torch
        torch.set_num_threads(int(os.environ.get("EAGLEBOOK_THREADS", "1")))
    except ImportError:
        pass
    params = {"seed": seed} | ({"regime": regime} if regime is not None else {})
    ledger = Ledger(chapter=name, profile=prof.name, title=title, variant=regime or "",
                    provenance=provenance(name, prof.name, params))
    ledger.save()   # a rerun replaces the previous ledger at once, so no stale row survives a failed run
    return Chapter(name=name, profile=prof, seed=seed, regime=regime, ledger=ledger)

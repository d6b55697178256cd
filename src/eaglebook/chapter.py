"""What every chapter does in its first cell after the parameters: validate, resolve, set up.

A chapter's parameters cell holds literals only (so papermill can override them); the next cell calls
:func:`start`, which validates every parameter (a bad value fails here, with a message naming the
parameter and its allowed values), resolves ``profile=None`` from ``$EAGLEBOOK_PROFILE``, applies the
plotting style, and returns a :class:`Chapter` holding the profile, the seed and a fresh claims ledger.

**Knobs.**  Chapters 1–5 and 9 also take every knob of the set-up (:data:`eaglebook.config.KNOBS`) as a
parameter, ``None`` meaning the profile's value: their parameters cell lists them, and ``start(...,
namespace=globals())`` reads them from the chapter's namespace.  A knob that changes the setting

* goes into the profile (:func:`eaglebook.config.get`), and so into every training config and its cache key;
* is recorded in the ledger's provenance (``settings``), and the ledger is written to a file of its own,
  which the book's scorecard never shows (:func:`eaglebook.report.stale_reason`);
* is announced at the top of the chapter: a sentence saying which settings differ from the paper's
  (glued as ``C<k>_setting`` for the prose, and displayed).

A regime the paper does not have (one a profile adds, :attr:`eaglebook.config.Profile.regimes`) is recorded as
a changed setting too (``settings["regime"]``): its ledger is a file of its own, off the scorecard.

papermill adds ``-p`` parameters as assignments in a cell of its own ("# Parameters") after the
parameters cell; a name there that the parameters cell does not define (a typo such as ``lyaers``) would
only create a new variable, so :func:`start` refuses it, naming it and listing the knobs.
"""

from __future__ import annotations

import ast
import difflib
import os
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from . import config, plotting, regimes
from . import comparisons
from .ledger import Check
from .report import Ledger, glue, provenance

#: The first line of the cell papermill injects with the ``-p`` parameters.
INJECTED = "# Parameters"


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

    @property
    def rg(self) -> regimes.Regime | None:
        """The chapter's regime object (None when the chapter takes no regime)."""
        return None if self.regime is None else regimes.get(self.regime)

    # ---- the bookkeeping, one call each (the chapter computes; its module says what to glue and check) ----
    def glue(self, values: Mapping[str, Any] | None = None, /, **more: Any) -> None:
        """Glue every ``key: value`` (numbers and phrases for the prose)."""
        for key, value in {**(values or {}), **more}.items():
            glue(key, value)

    def record(self, values: Mapping[str, Any]) -> dict[str, str]:
        """Record the values of declared comparisons (their rows: :mod:`eaglebook.comparisons`) and return the
        verdicts.  A value is a number, or ``(number, timing)`` with the :class:`eaglebook.timing.Ratio`
        behind a timing statistic."""
        out = {}
        for key, v in values.items():
            ours, timing = v if isinstance(v, tuple) else (v, None)
            out[key] = self.ledger.record(key, ours, timing=timing)
        return out

    def check(self, *checks: Check) -> None:
        """Assert each :class:`eaglebook.ledger.Check` (a failure fails the chapter, and the build); glue each
        value and bound."""
        for c in checks:
            if not isinstance(c, Check):
                raise TypeError(f"Chapter.check takes eaglebook.ledger.Check objects, got {type(c).__name__}")
            self.ledger.check(c.key, c.value, lower=c.lower, upper=c.upper, what=c.what)

    def uses(self, cfgs: Mapping[str, Any]) -> None:
        """Record the cached results (name: config) this chapter used, for its provenance."""
        for name, cfg in cfgs.items():
            self.ledger.uses(name, cfg)

    @property
    def setting(self) -> str:
        """The sentence saying how this run's setting differs from the paper's ("" when it does not)."""
        return setting_sentence(self.profile)


def _assigned(source: str) -> list[str]:
    """The names a cell assigns at its top level (``name = ...``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)]


def check_injected(namespace: Mapping[str, Any]) -> None:
    """Refuse a papermill parameter that the chapter's parameters cell does not define.

    The kernel's input history (``In``) holds the parameters cell and, right after it, the cell papermill
    injected (first line ``# Parameters``); every name assigned there must be assigned in the parameters
    cell.  Without an injected cell (JupyterLab, the book build) there is nothing to check."""
    history = list(namespace.get("In") or [])
    for i, src in enumerate(history):
        if i == 0 or not isinstance(src, str) or not src.startswith(INJECTED):
            continue
        defined = set(_assigned(history[i - 1]))
        for name in _assigned(src):
            if name not in defined:
                knobs = [k for k in config.KNOBS if k in defined]
                own = sorted(defined - set(knobs))
                close = difflib.get_close_matches(name, sorted(defined), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"parameter {name!r} is not a parameter of this chapter{hint}; its parameters are "
                                 f"{', '.join(own)} and the knobs {', '.join(knobs) or '(none)'}")


def knobs_of(namespace: Mapping[str, Any] | None) -> dict[str, Any]:
    """The knobs set in a chapter's namespace (a knob left at ``None`` takes the profile's value)."""
    if not namespace:
        return {}
    return {k: namespace[k] for k in config.KNOBS if namespace.get(k) is not None}


def setting_sentence(profile: config.Profile) -> str:
    """"This run differs from the paper's setting: …" for a profile changed by knobs, else ""."""
    what = profile.setting()
    if not what:
        return ""
    return (f"This run differs from the paper's setting: {what}. Every number and verdict below is for this "
            f"setting, and its claims ledger stays off the book's scorecard.")


def start(name: str, *, title: str, profile: str | None, seed: int, regime: str | None = None,
          namespace: Mapping[str, Any] | None = None) -> Chapter:
    """Validate the chapter parameters and set up; see the module docstring.

    ``namespace`` (the chapter's ``globals()``): where the knobs are read from and papermill's injected
    parameters are checked."""
    if namespace is not None:
        check_injected(namespace)
    knobs = knobs_of(namespace)
    prof = config.get(profile, knobs=knobs)
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
    settings = dict(prof.knobs)
    if regime is not None and not regimes.in_paper(regime):   # a regime the paper does not have: off the scorecard
        settings["regime"] = regime
    if settings:   # the ledger says which setting its verdicts are for
        title = f"{title} [{', '.join(f'{k} = {v}' for k, v in settings.items())}]"
    ledger = Ledger(chapter=name, profile=prof.name, title=title, variant=regime or "", settings=settings,
                    provenance=provenance(name, prof.name, params, settings=settings))
    for row in comparisons.rows(name, prof, regime):   # every comparison, declared before any value exists
        ledger.declare(row.key, **row.declaration())
    ledger.save()   # a rerun replaces the previous ledger at once, so no stale row survives a failed run
    ch = Chapter(name=name, profile=prof, seed=seed, regime=regime, ledger=ledger)
    glue(f"C{int(name[:2]) if name[:2].isdigit() else name}_setting", ch.setting)
    if ch.setting:
        _display_markdown(f"**Setting.** {ch.setting}")
    return ch


def _display_markdown(text: str) -> None:
    """Show ``text`` as Markdown in the notebook (printed outside IPython)."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:
        print(text)
        return
    if get_ipython() is None:
        print(text)
    else:
        display(Markdown(text))

"""Every paper comparison of the book, declared as data before its value exists: one module per chapter.

A chapter's comparisons live in ``eaglebook/comparisons/c<NN>_<slug>.py`` (``c03_train.py`` for
``book/03_train.md``), beside the claims registry (:mod:`eaglebook.claims`), as a tuple ``ROWS`` of
:class:`Row` (or, where the rows depend on the profile, a function ``rows(profile, regime)`` returning them).
They are committed before any run computes their values: :func:`eaglebook.chapter.start` declares all of a
chapter's rows in its ledger (:meth:`eaglebook.ledger.Ledger.declare`) before the chapter computes anything,
and the chapter then records its values in one call (:meth:`eaglebook.chapter.Chapter.record`).  The
ledger's guarantees are unchanged: a value can be recorded only under a declared key, a criterion is fixed
before the run, a corrected row names the row it ``supersedes`` (which stays visible), and a statistic
added after a run says so (``declared=after_run(...)``).

Templates.  A row's ``key``, ``what``, ``part``, ``paper_text``, ``note``, ``setting``, ``supersedes`` and ``replaces`` may
contain ``{regime}``:

- ``each_regime=True``: the row is declared once per paper regime (:data:`eaglebook.config.REGIMES`), e.g.
  chapter 3, which trains all three;
- otherwise ``{regime}`` is the chapter's own regime (chapter 4, one page per regime), and
  ``regimes`` (names) limits the row to those regimes.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field, fields, replace
from typing import Callable

from .. import regimes
from ..ledger import Comparison

__all__ = ["Row", "rows", "chapters"]


@dataclass(frozen=True)
class Row(Comparison):
    """One paper comparison as declared: the fields of :class:`eaglebook.ledger.Comparison` (the arguments of
    :meth:`eaglebook.ledger.Ledger.declare`), ``judge=None`` meaning "as ``robust``", and where it is declared."""

    judge: bool | None = None
    each_regime: bool = False
    regimes: tuple[str, ...] | None = None
    when: Callable | None = field(default=None, compare=False)   # when(profile, regime) -> bool: declare only then

    def for_regime(self, regime: str | None) -> "Row":
        """The row with ``{regime}`` filled in."""
        if regime is None:
            return self
        f = lambda s: s.replace("{regime}", regime) if isinstance(s, str) else s
        return replace(self, key=f(self.key), what=f(self.what), part=f(self.part), supersedes=f(self.supersedes),
                       replaces=f(self.replaces), paper_text=f(self.paper_text),
                       note=f(self.note), setting=f(self.setting))

    def declaration(self) -> dict:
        """The keyword arguments of :meth:`eaglebook.ledger.Ledger.declare` (every field of a Comparison but the key)."""
        return {f.name: getattr(self, f.name) for f in fields(Comparison) if f.name != "key"}


def _module(chapter: str):
    return importlib.import_module(f"{__name__}.c{chapter}")


def chapters() -> list[str]:
    """The chapters that declare comparisons (``03_train``, ...)."""
    return sorted(m.name[1:] for m in pkgutil.iter_modules(__path__) if m.name.startswith("c") and m.name[1:3].isdigit())


def rows(chapter: str, profile=None, regime: str | None = None) -> list[Row]:
    """The comparisons of ``chapter`` as its ledger declares them (templates filled in) for ``profile`` and the
    chapter's ``regime``; [] for a chapter with none."""
    from ..config import REGIMES
    if chapter not in chapters():
        return []
    mod = _module(chapter)
    raw = mod.rows(profile, regime) if hasattr(mod, "rows") else mod.ROWS
    out: list[Row] = []
    for row in raw:
        if row.each_regime:
            expanded = [row.for_regime(r) for r in REGIMES]
        elif "{regime}" in row.key:
            if regime is None or (row.regimes is not None and not regimes.among(regime, row.regimes)):
                continue
            expanded = [row.for_regime(regime)]
        else:
            if row.regimes is not None and (regime is None or not regimes.among(regime, row.regimes)):
                continue
            expanded = [row]
        out += [r for r in expanded if r.when is None or r.when(profile, regime)]
    keys = [r.key for r in out]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"chapter {chapter}: comparisons declared twice: {', '.join(dup)}")
    return out

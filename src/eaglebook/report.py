"""The claims ledger: two kinds of numbers, kept apart (house style §2.5).

- A **check** is a property our code must have (the Nyström completion is exact on noiseless data, a
  trained model beats predicting zero).  It asserts: a failure fails the chapter, and so the build.
- A **paper comparison** puts our value beside the paper's with a verdict by a :class:`Criterion`
  declared *before* the run.  It is recorded and shown on the scorecard; it never fails the build.

Every value is glued (``myst_nb.glue``) as a plain ``float`` under its key, so the prose quotes it with
``{glue:text}`\\`key:.2e\\```; bounds and paper values are glued as ``key_bound`` and ``key_paper``.
Each chapter's ledger is written as JSON to ``<repo>/_build/claims/<profile>/<chapter>.json``;
``index.md`` and ``reproducibility.md`` build their tables from those files.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .cache import repo_root

CLAIMS_ENV = "EAGLEBOOK_CLAIMS"
VERDICTS = ("reproduced", "partly", "not reproduced")


def glue(key: str, value: Any) -> None:
    """Glue ``value`` for the prose (plain floats for numbers); a no-op outside the book toolchain."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = float(value)
    try:
        from myst_nb import glue as _myst_glue
    except ImportError:  # the package works without the book toolchain
        return
    _myst_glue(key, value, display=False)


@dataclass(frozen=True)
class Criterion:
    """How a paper comparison is judged; ``text`` is what the scorecard prints."""

    kind: str
    a: float
    b: float | None = None
    partly: float | None = None
    text: str = ""

    def verdict(self, ours: float, paper: float | None) -> str:
        if not math.isfinite(ours):
            return "not reproduced"
        if self.kind == "factor":
            if paper is None or paper == 0 or ours == 0 or (ours > 0) != (paper > 0):
                return "not reproduced"
            r = max(ours / paper, paper / ours)
            return "reproduced" if r <= self.a else ("partly" if self.partly and r <= self.partly else "not reproduced")
        if self.kind == "at_most":
            return "reproduced" if ours <= self.a else ("partly" if self.partly and ours <= self.partly else "not reproduced")
        if self.kind == "at_least":
            return "reproduced" if ours >= self.a else ("partly" if self.partly and ours >= self.partly else "not reproduced")
        if self.kind == "range":
            if self.a <= ours <= self.b:
                return "reproduced"
            if self.partly:
                lo, hi = self.a / self.partly, self.b * self.partly
                return "partly" if lo <= ours <= hi else "not reproduced"
            return "not reproduced"
        raise ValueError(f"unknown criterion kind {self.kind!r}")


def within_factor(f: float, partly: float | None = None) -> Criterion:
    """Reproduced when ours and the paper's value agree within a factor ``f`` (partly: within ``partly``)."""
    t = f"within {f:g}× of the paper" + (f" (partly: {partly:g}×)" if partly else "")
    return Criterion("factor", f, partly=partly, text=t)


def at_most(x: float, partly: float | None = None) -> Criterion:
    t = f"≤ {x:g}" + (f" (partly: ≤ {partly:g})" if partly else "")
    return Criterion("at_most", x, partly=partly, text=t)


def at_least(x: float, partly: float | None = None) -> Criterion:
    t = f"≥ {x:g}" + (f" (partly: ≥ {partly:g})" if partly else "")
    return Criterion("at_least", x, partly=partly, text=t)


def in_range(lo: float, hi: float, partly: float | None = None) -> Criterion:
    """Reproduced when lo ≤ ours ≤ hi; partly when within the range widened by a factor ``partly``."""
    t = f"in [{lo:g}, {hi:g}]" + (f" (partly: within {partly:g}× of it)" if partly else "")
    return Criterion("range", lo, hi, partly=partly, text=t)


def claims_dir(profile: str) -> Path:
    """``$EAGLEBOOK_CLAIMS/<profile>`` or ``<repo>/_build/claims/<profile>`` (``./_build/claims`` outside a repo)."""
    base = os.environ.get(CLAIMS_ENV)
    if base:
        return Path(base) / profile
    repo = repo_root() or Path.cwd()
    return repo / "_build" / "claims" / profile


@dataclass
class Ledger:
    """One chapter's claims.  Create it early in the chapter; call :meth:`save` at the end."""

    chapter: str
    profile: str
    title: str = ""
    variant: str = ""   # e.g. the regime of a parameterised chapter: each variant keeps its own file
    checks: dict = field(default_factory=dict)
    comparisons: dict = field(default_factory=dict)

    def check(self, key: str, value: float, *, lower: float | None = None, upper: float | None = None,
              what: str = "") -> float:
        """Record and **assert** ``lower <= value <= upper``; glue ``key`` and ``key_bound``."""
        if lower is None and upper is None:
            raise ValueError("a check needs a lower or an upper bound")
        v = float(value)
        ok = math.isfinite(v) and (lower is None or v >= lower) and (upper is None or v <= upper)
        self.checks[key] = dict(value=v, lower=lower, upper=upper, ok=ok, what=what)
        glue(key, v)
        glue(f"{key}_bound", float(upper if upper is not None else lower))
        self.save()
        assert ok, f"check {key} ({what}) failed: {v:.4g} not in [{lower}, {upper}]"
        return v

    def compare(self, key: str, ours: float, *, paper: float | None, criterion: Criterion, what: str,
                paper_text: str | None = None, note: str = "") -> str:
        """Record a paper comparison and its verdict (never raises on a mismatch); glue the numbers."""
        v = float(ours)
        verdict = criterion.verdict(v, paper)
        self.comparisons[key] = dict(what=what, ours=v, paper=paper, paper_text=paper_text,
                                     criterion=criterion.text, verdict=verdict, note=note)
        glue(key, v)
        if paper is not None:
            glue(f"{key}_paper", float(paper))
        glue(f"{key}_verdict", verdict)
        self.save()
        return verdict

    def save(self) -> Path:
        """Write the ledger as JSON (atomically); returns the path."""
        d = claims_dir(self.profile)
        d.mkdir(parents=True, exist_ok=True)
        path = d / (f"{self.chapter}--{self.variant}.json" if self.variant else f"{self.chapter}.json")
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(asdict(self), indent=2, default=str))
        os.replace(tmp, path)
        return path

    def markdown(self) -> str:
        """This chapter's comparisons as a Markdown table."""
        return comparisons_table([self])


def load_ledgers(profile: str, chapters: list[str] | None = None) -> list[Ledger]:
    """The saved ledgers of ``profile`` (in ``chapters`` order when given, else by file name); a chapter's
    variants (``<chapter>--<variant>.json``) follow its main file."""
    d = claims_dir(profile)
    files = sorted(d.glob("*.json")) if d.is_dir() else []
    if chapters:
        files = [f for c in chapters for f in files if f.stem == c or f.stem.startswith(f"{c}--")]
    return [Ledger(**json.loads(f.read_text())) for f in files]


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|")


def _fmt(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:.3g}" if 1e-3 <= abs(x) < 1e4 or x == 0 else f"{x:.2e}"
    return str(x)


def comparisons_table(ledgers: list[Ledger], *, link: bool = False) -> str:
    """The scorecard: claim, paper value, our value, criterion, verdict, chapter."""
    rows = ["| claim | paper | ours | criterion (declared before the run) | verdict | chapter |",
            "|---|---|---|---|---|---|"]
    latest = {key: id(led) for led in ledgers for key in led.comparisons}  # a key recorded twice: the last wins
    for led in ledgers:
        ch = f"[{led.title or led.chapter}]({led.chapter}.md)" if link else (led.title or led.chapter)
        for key, c in led.comparisons.items():
            if latest[key] != id(led):
                continue
            paper = c["paper_text"] or _fmt(c["paper"])
            rows.append(f"| {_cell(c['what'])} (`{key}`) | {_cell(paper)} | {_fmt(c['ours'])} | {_cell(c['criterion'])} | "
                        f"**{c['verdict']}** | {ch} |")
    if len(rows) == 2:
        rows.append("| *no paper comparison recorded yet for this profile* | | | | | |")
    return "\n".join(rows)


def checks_table(ledgers: list[Ledger]) -> str:
    """Every check: value, bound, pass/fail."""
    rows = ["| check | value | bound | holds | chapter |", "|---|---|---|---|---|"]
    latest = {key: id(led) for led in ledgers for key in led.checks}
    for led in ledgers:
        for key, c in led.checks.items():
            if latest[key] != id(led):
                continue
            bound = " ".join(s for s in (f"≥ {c['lower']:g}" if c["lower"] is not None else "",
                                          f"≤ {c['upper']:g}" if c["upper"] is not None else "") if s)
            rows.append(f"| {_cell(c['what'])} (`{key}`) | {_fmt(c['value'])} | {bound} | "
                        f"{'yes' if c['ok'] else '**no**'} | {led.title or led.chapter} |")
    if len(rows) == 2:
        rows.append("| *no check recorded yet for this profile* | | | | |")
    return "\n".join(rows)


def toc_chapters() -> list[str]:
    """The book's documents in ``_toc.yml`` order, as names relative to ``book/`` (e.g. ``01_task``)."""
    import yaml

    repo = repo_root()
    if repo is None:
        return []
    toc = yaml.safe_load((repo / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(node):
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key, []) or []:
                if "file" in child:
                    files.append(child["file"])
                walk(child)

    walk(toc)
    return [f.split("/", 1)[1] if f.startswith("book/") else f for f in files]

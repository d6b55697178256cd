"""The claims ledger: two kinds of numbers, kept apart .

- A **check** is a property our code must have (the Nyström completion is exact on noiseless data, a
  trained model beats predicting zero).  It asserts: a failure fails the chapter, and so the build.
- A **paper comparison** puts our value beside the paper's with a verdict by a :class:`Criterion`.
  A chapter first *declares* it (:meth:`Ledger.declare`: the statistic, the criterion, whether it was
  declared in advance or added after seeing a result, and why the statistic is or is not robust to the
  heavy tail of the task distribution), in a cell before the one that computes the value, and the prose
  quotes the glued criterion text; then :meth:`Ledger.record` gives the verdict.  A comparison never
  fails the build.  A statistic dominated by a few diverging prompts (a mean, or a ratio of means) is
  recorded but not judged: its verdict would flip from one machine to the next.

Every ledger carries its **provenance** (package version, git commit, a hash of the package source and
of the chapter source, profile, parameters, date, and the config hash of every cached model it used), and
the scorecard shows only ledgers of the current code, chapter source, profile and default parameters;
:func:`load_ledgers` reports the others as ignored, with the reason.

Every value is glued (``myst_nb.glue``) as a plain ``float`` under its key, so the prose quotes it with
``{eval}`\\`G("key", ".2e")\\``` (or myst-nb's ``{glue:text}`\\`key:.2e\\```); bounds and paper values are
glued as ``key_bound`` and ``key_paper``.  :func:`G` is that expression's kernel side (JupyterLab);
``eaglebook._toolchain.glue_eval`` is its book side.
Each chapter's ledger is written as JSON to ``<repo>/_build/claims/<profile>/<chapter>.json``;
``index.md`` and ``reproducibility.md`` build their tables from those files.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .cache import repo_root

CLAIMS_ENV = "EAGLEBOOK_CLAIMS"
VERDICTS = ("reproduced", "partly", "not reproduced")


_GLUED: dict[str, Any] = {}        # what glue() stored in this process (the kernel), for G()


def glue(key: str, value: Any) -> None:
    """Glue ``value`` for the prose (plain floats for numbers); outside the book toolchain only :func:`G`
    sees it."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = float(value)
    _GLUED[key] = value
    try:
        from myst_nb import glue as _myst_glue
    except ImportError:  # the package works without the book toolchain
        return
    _myst_glue(key, value, display=False)


class GlueKeyError(LookupError):
    """``G(key)`` for a key that no cell of this kernel has glued (yet)."""


class Glued(str):
    """A glued value as the prose shows it: a ``str`` whose ``repr`` is itself, without quotes, so that an
    ``{eval}`` expression shows ``10`` and not ``'10'`` (its only display form is ``text/plain``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def G(key: str, fmt: str = "s") -> Glued:  # noqa: N802 - short on purpose: it is written in the prose
    """The value glued under ``key``, formatted as the book formats it; the kernel side of the prose's
    ``{eval}`\\`G("key", ".2e")\\```.

    JupyterLab (jupyterlab-myst) evaluates the expression in the chapter's kernel and shows the result; the
    book renders the same role from the glue data of the executed notebook (``eaglebook._toolchain.
    glue_eval``), exactly as ``{glue:text}`\\`key:fmt\\```.  Both go through the same steps: the value's
    ``text/plain`` form (IPython's display formatter, as ``myst_nb.glue`` stores it), then myst-nb's
    ``format_plain_text`` with ``fmt`` (default ``"s"``, as ``{glue:text}`` without a format)."""
    if not isinstance(key, str) or not isinstance(fmt, str):
        raise TypeError(f"G(key, fmt) takes two strings, got G({key!r}, {fmt!r})")
    if key not in _GLUED:
        known = ", ".join(sorted(_GLUED)[:8]) + (", …" if len(_GLUED) > 8 else "")
        raise GlueKeyError(f"nothing glued under {key!r} in this kernel yet: run the cell that glues it"
                           f" (glued so far: {known or 'nothing'})")
    try:
        from IPython.core.formatters import format_display_data
        from myst_nb.core.variables import format_plain_text
    except ImportError as exc:  # pragma: no cover - the book toolchain is in requirements.txt
        raise RuntimeError("G() formats as the book does and needs myst-nb: pip install -r requirements.txt") from exc
    text = format_display_data(_GLUED[key])[0]["text/plain"]
    try:
        return Glued(format_plain_text(text, fmt))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"G({key!r}, {fmt!r}): cannot format {text} with {fmt!r}: {exc}") from None


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


ADVANCE = "in advance"


def after_run(when: str) -> str:
    """The ``declared`` value of a statistic or criterion added after seeing a result (``when``: date/version)."""
    return f"after the run ({when})"


@dataclass(frozen=True)
class Comparison:
    """A paper comparison as declared *before* its value is computed (see :meth:`Ledger.declare`)."""

    key: str
    what: str
    criterion: Criterion
    paper: float | None = None
    paper_text: str | None = None
    declared: str = ADVANCE
    robust: bool = True
    robustness: str = ""
    judge: bool = True
    note: str = ""


NOT_JUDGED = "not judged"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def code_hash() -> str:
    """Hash of the installed package's Python source (every ``*.py`` under ``eaglebook/``, by content)."""
    pkg = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(pkg.rglob("*.py")):
        h.update(str(f.relative_to(pkg)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def chapter_hash(chapter: str) -> str | None:
    """Hash of ``book/<chapter>.md`` (None outside a repository)."""
    repo = repo_root()
    f = repo / "book" / f"{chapter}.md" if repo else None
    return _sha(f.read_bytes()) if f is not None and f.is_file() else None


def git_commit() -> str:
    """The repository's HEAD commit (short), with ``-dirty`` when tracked files differ from it; ``unknown``
    outside a git checkout."""
    repo = repo_root()
    try:
        head = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=repo, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError, TypeError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def provenance(chapter: str, profile: str, parameters: dict | None = None) -> dict:
    """What a ledger records about the code and the run that produced it."""
    from . import __version__
    return dict(version=__version__, commit=git_commit(), code=code_hash(), chapter_source=chapter_hash(chapter),
                profile=profile, parameters=dict(parameters or {}), date=time.strftime("%Y-%m-%d %H:%M:%S"),
                models={})


@dataclass
class Ledger:
    """One chapter's claims.  Create it early in the chapter (``chapter.start`` does); it saves itself."""

    chapter: str
    profile: str
    title: str = ""
    variant: str = ""   # e.g. the regime of a parameterised chapter: each variant keeps its own file
    checks: dict = field(default_factory=dict)
    comparisons: dict = field(default_factory=dict)
    declared: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)

    def uses(self, name: str, cfg: Any) -> None:
        """Record that this chapter used the cached result of ``cfg`` (its config hash) under ``name``."""
        from .cache import config_hash
        self.provenance.setdefault("models", {})[name] = config_hash(cfg)
        self.save()

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

    def declare(self, key: str, *, what: str, criterion: Criterion, paper: float | None = None,
                paper_text: str | None = None, declared: str = ADVANCE, robust: bool = True,
                robustness: str = "", judge: bool | None = None, note: str = "") -> Comparison:
        """Declare a paper comparison before its value exists; glue ``key_criterion`` (the criterion's text)
        and ``key_declared``.  ``robust=False`` marks a statistic dominated by a few diverging prompts;
        ``robustness`` says why the statistic is (not) robust.  ``judge`` (default: ``robust``) says
        whether it gets a verdict: a non-robust statistic gets one only where it is the paper's own
        (``judge=True``), and the scorecard flags that verdict as outlier-dominated."""
        if not isinstance(criterion, Criterion):
            raise ValueError(f"argument criterion must be a report.Criterion, got {type(criterion).__name__}")
        if not (declared == ADVANCE or declared.startswith("after the run (")):
            raise ValueError(f"argument declared={declared!r} must be report.ADVANCE or report.after_run(...)")
        if key in self.comparisons:
            raise ValueError(f"comparison {key!r} already has a value: declare it before computing it")
        c = Comparison(key, what, criterion, paper, paper_text, declared, bool(robust), robustness,
                       bool(robust) if judge is None else bool(judge), note)
        self.declared[key] = asdict(c)
        glue(f"{key}_criterion", criterion.text)
        glue(f"{key}_declared", declared)
        return c

    def record(self, comparison: Comparison | str, ours: float) -> str:
        """The value of a declared comparison and its verdict (never raises on a mismatch); glue the numbers."""
        key = comparison.key if isinstance(comparison, Comparison) else comparison
        if key not in self.declared:
            raise ValueError(f"comparison {key!r} was not declared: call Ledger.declare before computing it")
        c = self.declared[key]
        crit = Criterion(**c["criterion"])
        v = float(ours)
        verdict = crit.verdict(v, c["paper"]) if c["judge"] else NOT_JUDGED
        self.comparisons[key] = dict(what=c["what"], ours=v, paper=c["paper"], paper_text=c["paper_text"],
                                     criterion=crit.text, verdict=verdict, declared=c["declared"],
                                     robust=c["robust"], robustness=c["robustness"], note=c["note"])
        glue(key, v)
        if c["paper"] is not None:
            glue(f"{key}_paper", float(c["paper"]))
        glue(f"{key}_verdict", verdict)
        self.save()
        return verdict

    def path(self) -> Path:
        d = claims_dir(self.profile)
        return d / (f"{self.chapter}--{self.variant}.json" if self.variant else f"{self.chapter}.json")

    def save(self) -> Path:
        """Write the ledger as JSON (atomically); returns the path."""
        path = self.path()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(asdict(self), indent=2, default=str))
        os.replace(tmp, path)
        return path


#: The chapter parameters whose ledgers the scorecard accepts (the book's own build).
BOOK_PARAMETERS = {"seed": 0}


def stale_reason(led: Ledger, profile: str) -> str | None:
    """Why ``led`` may not go on the current scorecard (None when it may)."""
    prov = led.provenance or {}
    if not prov:
        return "no provenance (written by older code)"
    if prov.get("profile") != profile or led.profile != profile:
        return f"profile {prov.get('profile')!r}, not {profile!r}"
    if prov.get("code") != code_hash():
        return f"package source {prov.get('code')} differs from the current {code_hash()}"
    if prov.get("chapter_source") != chapter_hash(led.chapter):
        return "the chapter's source changed since it ran"
    params = prov.get("parameters", {})
    odd = {k: params[k] for k in BOOK_PARAMETERS if k in params and params[k] != BOOK_PARAMETERS[k]}
    if odd:
        return f"run with non-default parameters {odd}"
    return None


def load_ledgers(profile: str, chapters: list[str] | None = None, *, ignored: list | None = None) -> list[Ledger]:
    """The saved ledgers of ``profile`` from the current code (in ``chapters`` order when given, else by
    file name; a chapter's variants ``<chapter>--<variant>.json`` follow its main file).  A stale or
    foreign ledger is left out; pass a list as ``ignored`` to receive ``(file name, reason)`` pairs."""
    d = claims_dir(profile)
    files = sorted(d.glob("*.json")) if d.is_dir() else []
    if chapters:
        files = [f for c in chapters for f in files if f.stem == c or f.stem.startswith(f"{c}--")]
    out = []
    for f in files:
        try:
            led = Ledger(**json.loads(f.read_text()))
        except (ValueError, TypeError) as e:
            reason = f"unreadable ({e.__class__.__name__})"
        else:
            reason = stale_reason(led, profile)
            if reason is None:
                out.append(led)
                continue
        if ignored is not None:
            ignored.append((f.name, reason))
    return out


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|")


def _fmt(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:.3g}" if 1e-3 <= abs(x) < 1e4 or x == 0 else f"{x:.2e}"
    return str(x)


def _latest(ledgers: list[Ledger], attr: str) -> dict:
    """key → id of the last ledger that recorded it (a key recorded twice: the last wins)."""
    return {key: id(led) for led in ledgers for key in getattr(led, attr)}


def verdict_counts(ledgers: list[Ledger]) -> dict[str, int]:
    """How many comparisons have each verdict (``reproduced``, ``partly``, ``not reproduced``, ``not judged``)."""
    latest = _latest(ledgers, "comparisons")
    counts = dict.fromkeys((*VERDICTS, NOT_JUDGED), 0)
    for led in ledgers:
        for key, c in led.comparisons.items():
            if latest[key] == id(led):
                counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    return counts


def scorecard_points(ledgers: list[Ledger]) -> list[tuple]:
    """``(key, paper value, ours, verdict)`` of every comparison on the scorecard (for the figure)."""
    latest = _latest(ledgers, "comparisons")
    return [(key, c["paper"], c["ours"], c["verdict"]) for led in ledgers for key, c in led.comparisons.items()
            if latest[key] == id(led)]


def _provenance_line(led: Ledger) -> str:
    p = led.provenance or {}
    models = len(p.get("models", {}))
    return (f"profile `{p.get('profile')}` · eaglebook {p.get('version')} · commit `{p.get('commit')}` · "
            f"source `{p.get('code')}` · run {p.get('date')}" + (f" · {models} cached model(s)" if models else ""))


def comparisons_table(ledgers: list[Ledger], *, link: bool = False, provenance: bool = False) -> str:
    """The scorecard grouped by chapter: claim, paper, ours, criterion, verdict, when it was declared.

    ``provenance=True`` puts each chapter's provenance line (code, profile, date) above its table."""
    latest = _latest(ledgers, "comparisons")
    parts = []
    for led in ledgers:
        rows = ["| claim | paper | ours | criterion | verdict | declared |", "|---|---|---|---|---|---|"]
        for key, c in led.comparisons.items():
            if latest[key] != id(led):
                continue
            paper = c["paper_text"] or _fmt(c["paper"])
            verdict = f"**{c['verdict']}**" if c.get("robust", True) else f"*{c['verdict']}* (outlier-dominated)"
            rows.append(f"| {_cell(c['what'])}<br>`{key}` | {_cell(paper)} | {_fmt(c['ours'])} | {_cell(c['criterion'])} | "
                        f"{verdict} | {_cell(c.get('declared', ADVANCE))} |")
        if len(rows) == 2:
            continue
        name = led.title or led.chapter
        head = f"[{name}]({led.chapter}.md)" if link and not led.variant else name
        if len(ledgers) > 1:
            rows.insert(0, f"**{head}**" + (f" ({led.variant})" if led.variant and led.variant not in name else "")
                        + (f"<br>{_provenance_line(led)}" if provenance else "") + "\n")
        parts.append("\n".join(rows))
    if not parts:
        return "*No paper comparison recorded yet for this profile and code.*"
    return "\n\n".join(parts)


def checks_table(ledgers: list[Ledger]) -> str:
    """Every check: value, bound, pass/fail."""
    rows = ["| check | value | bound | holds | chapter |", "|---|---|---|---|---|"]
    latest = _latest(ledgers, "checks")
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


def toc_chapters(*, generated: bool = False) -> list[str]:
    """The book's documents in ``_toc.yml`` order, as names relative to ``book/`` (e.g. ``01_task``);
    ``generated=True`` includes the generated chapter variants (``_regimes/04_extract-sketched``)."""
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
    docs = [f.split("/", 1)[1] if f.startswith("book/") else f for f in files]
    return docs if generated else [d for d in docs if (repo / "book" / f"{d}.md").is_file()]

"""The claims ledger: two kinds of numbers, kept apart.

- A **check** is a property our code must have (the Nyström completion is exact on noiseless data, a
  trained model beats predicting zero).  It asserts: a failure fails the chapter, and so the build.
- A **paper comparison** puts our value beside the paper's with a verdict by a :class:`Criterion`.
  A chapter first *declares* it (:meth:`Ledger.declare`: the statistic, the criterion, whether it was
  declared in advance or added after seeing a result, the paper claim it bears on and its role there, the
  source of the paper value and the setting it is measured in), in a cell before the one that computes the
  value, and the prose quotes the glued criterion text; then :meth:`Ledger.record` gives the verdict.  A
  comparison never fails the build.

Which comparisons are judged:

- a statistic dominated by a few diverging prompts (a mean, a ratio of means; ``robust=False``) gets no
  verdict unless it is the paper's own statistic (``judge=True``): its verdict would flip from one machine
  to the next;
- a comparison measured in a setting other than the paper's (``setting=...``: another matrix, another
  machine, another set-up) is "not judged: different setting";
- every comparison names its paper claim (:mod:`eaglebook.claims`) and its ``role``: the **headline**
  row(s) give the claim its verdict on the scorecard; **evidence** rows (other readings, post-hoc
  statistics, ablations that depart from a stated value) are shown beneath it with their own verdict, and
  never counted;
- a corrected row names the row it ``supersedes``; the superseded row stays visible on the scorecard,
  marked as such.

Each chapter's ledger is written as JSON to ``<repo>/_build/claims/<profile>/<chapter>.json`` (see
:func:`claims_dir`); ``index.md`` and ``reproducibility.md`` build their tables from those files
(:mod:`eaglebook.scorecard`).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import claims as _claims
from .cache import repo_root
from .glue import glue
from .stability import Resampled, stability

__all__ = ["Censored", "Criterion", "within_factor", "at_most", "at_least", "in_range", "criterion", "settings_slug",
           "Comparison", "Check", "Ledger", "claims_dir",
           "ADVANCE", "after_run", "NOT_JUDGED", "VERDICTS", "PAPER_SETTING", "HEADLINE", "EVIDENCE", "CLAIMS_ENV"]

CLAIMS_ENV = "EAGLEBOOK_CLAIMS"
VERDICTS = ("reproduced", "partly", "not reproduced")
NOT_JUDGED = "not judged"
ADVANCE = "in advance"
PAPER_SETTING = "the paper's"
HEADLINE, EVIDENCE = "headline", "evidence"


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


def within_factor(f: float, partly: float | None = None, *, of: str = "the paper") -> Criterion:
    """Reproduced when ours and the paper's value agree within a factor ``f`` (partly: within ``partly``);
    ``of`` names the reference in the criterion's text (e.g. "our derivation" where the value is ours)."""
    t = f"within {f:g}× of {of}" + (f", partly within {partly:g}×" if partly else "")
    return Criterion("factor", f, partly=partly, text=t)


def at_most(x: float, partly: float | None = None) -> Criterion:
    t = f"≤ {x:g}" + (f", partly ≤ {partly:g}" if partly else "")
    return Criterion("at_most", x, partly=partly, text=t)


def at_least(x: float, partly: float | None = None) -> Criterion:
    t = f"≥ {x:g}" + (f", partly ≥ {partly:g}" if partly else "")
    return Criterion("at_least", x, partly=partly, text=t)


def in_range(lo: float, hi: float, partly: float | None = None) -> Criterion:
    """Reproduced when lo ≤ ours ≤ hi; partly when within the range widened by a factor ``partly``."""
    t = f"in [{lo:.3g}, {hi:.3g}]" + (f", partly within {partly:g}× of it" if partly else "")
    return Criterion("range", lo, hi, partly=partly, text=t)


def criterion(name: str, args: tuple = (), kwargs: dict | None = None) -> Criterion:
    """The criterion ``name`` (``within_factor``, ``at_most``, ``at_least`` or ``in_range``) built from plain
    data, e.g. a regime's own comparison (``eaglebook.regimes.PaperComparison.criterion``)."""
    makers = {"within_factor": within_factor, "at_most": at_most, "at_least": at_least, "in_range": in_range}
    if name not in makers:
        raise ValueError(f"argument name={name!r} is not valid; allowed values: {', '.join(makers)}")
    return makers[name](*args, **(kwargs or {}))


def settings_slug(settings: dict) -> str:
    """A file-name part naming changed settings, e.g. ``layers6-r8`` (a long one is shortened to a hash)."""
    import hashlib
    show = lambda v: "_".join(map(str, v)) if isinstance(v, (list, tuple)) else v
    slug = "-".join(f"{k}{show(v)}" for k, v in sorted(settings.items()))
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in slug.replace(" ", ""))
    return slug if len(slug) <= 60 else hashlib.sha256(slug.encode()).hexdigest()[:12]


def claims_dir(profile: str) -> Path:
    """``$EAGLEBOOK_CLAIMS/<profile>`` or ``<repo>/_build/claims/<profile>`` (``./_build/claims`` outside a repo)."""
    base = os.environ.get(CLAIMS_ENV)
    if base:
        return Path(base) / profile
    repo = repo_root() or Path.cwd()
    return repo / "_build" / "claims" / profile


def after_run(when: str) -> str:
    """The ``declared`` value of a statistic or criterion added after seeing a result (``when``: date/version)."""
    return f"after the run ({when})"


@dataclass(frozen=True)
class Comparison:
    """A paper comparison as declared *before* its value is computed (see :meth:`Ledger.declare`)."""

    key: str
    what: str
    criterion: Criterion
    claim: str
    role: str = EVIDENCE
    part: str | None = None
    paper: float | None = None
    paper_text: str | None = None
    source: str = ""
    setting: str = PAPER_SETTING
    declared: str = ADVANCE
    robust: bool = True
    robustness: str = ""
    judge: bool = True
    supersedes: str | None = None
    note: str = ""
    reason: str = ""
    replaces: str | None = None
    because: str = ""


@dataclass(frozen=True)
class Censored:
    """A statistic known only to lie in [its value, ``upper``] (e.g. a median over runs of which some hit an iteration
    cap and count with the cap): ``value`` is a number or a :class:`eaglebook.stability.Resampled`; ``detail`` says
    why, for the "not judged" reason.  The ledger judges it only where the criterion gives the same verdict at both
    bounds (rule declared v0.4.0, 2026-12-03); the row keeps the bounds."""

    value: Any
    upper: float
    detail: str = ""


@dataclass(frozen=True)
class Check:
    """A property our code must have, as data: ``lower <= value <= upper`` (see :meth:`Ledger.check`).
    A chapter module returns its checks as a list of these; the chapter asserts them in one call
    (:meth:`eaglebook.chapter.Chapter.check`)."""

    key: str
    value: float
    lower: float | None = None
    upper: float | None = None
    what: str = ""


@dataclass
class Ledger:
    """One chapter's claims.  Create it early in the chapter (``chapter.start`` does); it saves itself."""

    chapter: str
    profile: str
    title: str = ""
    variant: str = ""   # e.g. the regime of a parameterised chapter: each variant keeps its own file
    settings: dict = field(default_factory=dict)   # knobs that changed the setting: a file of its own, off the scorecard
    checks: dict = field(default_factory=dict)
    comparisons: dict = field(default_factory=dict)
    declared: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)

    def uses(self, name: str, cfg: Any) -> None:
        """Record that this chapter used the cached result of ``cfg`` (its config hash) under ``name``."""
        from .cache import config_hash
        self.provenance.setdefault("models", {})[name] = config_hash(cfg)
        self.save()

    def timed(self, name: str, before: dict, after: dict | None = None) -> None:
        """Record the machine a timing table ``name`` was taken on (:func:`eaglebook.provenance.machine`
        before and after it); the reproducibility page lists them."""
        self.provenance.setdefault("machines", {})[name] = dict(before=before, after=after)
        self.save()

    def check(self, key: str, value: float, *, lower: float | None = None, upper: float | None = None,
              what: str = "") -> float:
        """Record and **assert** ``lower <= value <= upper``; glue ``key`` and ``key_bound``."""
        if lower is None and upper is None:
            raise ValueError("a check needs a lower or an upper bound")
        v = float(value)
        ok = bool(math.isfinite(v) and (lower is None or v >= lower) and (upper is None or v <= upper))
        self.checks[key] = dict(value=v, lower=lower, upper=upper, ok=ok, what=what)
        glue(key, v)
        glue(f"{key}_bound", float(upper if upper is not None else lower))
        self.save()
        assert ok, f"check {key} ({what}) failed: {v:.4g} not in [{lower}, {upper}]"
        return v

    def declare(self, key: str, *, what: str, criterion: Criterion, claim: str, role: str = EVIDENCE,
                part: str | None = None, paper: float | None = None, paper_text: str | None = None,
                source: str = "", setting: str = PAPER_SETTING, declared: str = ADVANCE, robust: bool = True,
                robustness: str = "", judge: bool | None = None, supersedes: str | None = None,
                note: str = "", reason: str = "", replaces: str | None = None, because: str = "") -> Comparison:
        """Declare a paper comparison before its value exists; glue ``key_criterion`` (the criterion's text)
        and ``key_declared``.

        ``claim``: the id of the paper claim it bears on (:data:`eaglebook.claims.CLAIMS`); ``role``:
        ``"headline"`` (the claim's verdict; for a claim stated for several regimes, one headline per
        ``part``) or ``"evidence"`` (shown beneath the claim, never counted).  ``source``: where the paper
        value comes from when not the claim's own source (e.g. "our derivation from Theorem 1's proof").
        ``setting``: :data:`PAPER_SETTING`, or what differs from the paper's set-up (then "not judged:
        different setting").  ``robust=False`` marks a statistic dominated by a few diverging prompts;
        ``robustness`` says why it is (not) robust; ``judge`` (default: ``robust``) says whether it gets a
        verdict: a non-robust statistic gets one only where it is the paper's own (``judge=True``).
        ``supersedes``: the key of a row this one corrects (the old row stays visible, marked).
        ``reason``: why a row with ``judge=False`` gets no verdict (default: "outlier-dominated").
        ``replaces``: for a headline declared after the run that is not a corrected criterion of the same statistic
        (``supersedes``) but another statistic, the key of the row that was the headline as declared before the run;
        ``because`` says why the declared row is not the paper's claim (the scorecard shows it).  The scorecard's
        tally *as declared* counts the row a post-hoc headline supersedes or replaces."""
        if not isinstance(criterion, Criterion):
            raise ValueError(f"argument criterion must be a report.Criterion, got {type(criterion).__name__}")
        if not (declared == ADVANCE or declared.startswith("after the run (")):
            raise ValueError(f"argument declared={declared!r} must be report.ADVANCE or report.after_run(...)")
        if key in self.comparisons:
            raise ValueError(f"comparison {key!r} already has a value: declare it before computing it")
        pc = _claims.claim(claim)
        if role not in (HEADLINE, EVIDENCE):
            raise ValueError(f"argument role={role!r} must be {HEADLINE!r} or {EVIDENCE!r}")
        if role == HEADLINE:
            if pc.kind == _claims.SECONDARY:
                raise ValueError(f"claim {claim!r} is from a secondary summary: its rows are evidence, not headlines")
            if pc.parts and part not in pc.parts:
                raise ValueError(f"a headline row of claim {claim!r} needs part= one of {', '.join(pc.parts)}; got {part!r}")
            if not pc.parts and part is not None:
                raise ValueError(f"claim {claim!r} has no parts; got part={part!r}")
        if (replaces or because) and (role != HEADLINE or declared == ADVANCE):
            raise ValueError(f"comparison {key!r}: replaces=/because= belong to a headline declared after the run")
        if not isinstance(setting, str) or not setting:
            raise ValueError(f"argument setting={setting!r} must be report.PAPER_SETTING or a description of the difference")
        c = Comparison(key, what, criterion, claim, role, part, paper, paper_text, source or pc.source, setting,
                       declared, bool(robust), robustness, bool(robust) if judge is None else bool(judge),
                       supersedes, note, reason, replaces, because)
        self.declared[key] = asdict(c)
        glue(f"{key}_criterion", criterion.text)
        glue(f"{key}_declared", declared)
        return c

    def record(self, comparison: Comparison | str, ours, *, timing=None) -> str:
        """The value of a declared comparison and its verdict (never raises on a mismatch); glue the numbers.

        The verdict is the criterion's, except "not judged" for an outlier-dominated statistic that is not
        the paper's own, for a comparison in another setting than the paper's, for a timing ratio whose
        spread includes 1, and for one whose spread (scaled to ``ours``) straddles a boundary of the criterion
        (``timing``: the :class:`eaglebook.timing.Ratio` behind ``ours``; ``why`` says which)."""
        key = comparison.key if isinstance(comparison, Comparison) else comparison
        if key not in self.declared:
            raise ValueError(f"comparison {key!r} was not declared: call Ledger.declare before computing it")
        c = self.declared[key]
        crit = Criterion(**c["criterion"])
        bounds = None
        if isinstance(ours, Censored):
            bounds, ours = (ours.upper, ours.detail), ours.value
        stab = None
        if isinstance(ours, Resampled):     # a statistic over prompts or seeds: its verdict is resampled too
            stab = stability(ours, lambda x: crit.verdict(x, c["paper"]))
            ours = ours.value
        v = float(ours)
        why = ""
        censored = bounds is not None and crit.verdict(v, c["paper"]) != crit.verdict(bounds[0], c["paper"])
        if censored:
            verdict, why = NOT_JUDGED, "censored: " + (bounds[1] or f"known only to lie between {v:.3g} and {bounds[0]:.3g}, "
                                                      "a range that crosses a boundary of the criterion")
            if stab is not None and not stab.stable:
                why += "; " + stab.why()
        elif not c["judge"]:
            verdict, why = NOT_JUDGED, c.get("reason") or "outlier-dominated"
        elif c["setting"] != PAPER_SETTING and _claims.claim(c["claim"]).kind != _claims.BEYOND:
            # (chapter 11's questions are about a changed setting: their setting names the change)
            verdict, why = NOT_JUDGED, "different setting"
        elif stab is not None and not stab.stable:
            verdict, why = NOT_JUDGED, stab.why()
        elif timing is not None and getattr(timing, "loaded", False):
            verdict, why = NOT_JUDGED, "loaded machine"
        elif timing is not None and not timing.decided:
            verdict, why = NOT_JUDGED, "within noise"
        elif timing is not None and len({crit.verdict(v * q / timing.median, c["paper"]) for q in (timing.lo, timing.hi)}) > 1:
            # the paired ratios' range (scaled to the statistic) straddles a boundary of the criterion: the
            # verdict would depend on which repeat is the median (a rule added after the paper-profile runs)
            verdict, why = NOT_JUDGED, "the spread spans the criterion's boundary"
        else:
            verdict = crit.verdict(v, c["paper"])
        self.comparisons[key] = dict(
            what=c["what"], ours=v, paper=c["paper"], paper_text=c["paper_text"], criterion=crit.text,
            verdict=verdict, why=why, declared=c["declared"], robust=c["robust"], robustness=c["robustness"],
            note=c["note"], claim=c["claim"], role=c["role"], part=c["part"], source=c["source"],
            setting=c["setting"], supersedes=c["supersedes"], replaces=c.get("replaces"), because=c.get("because", ""),
            # the paired ratios' range scaled to the statistic (a statistic derived from the ratio, e.g. divided
            # by a log factor, shows its own range, not the raw ratio's)
            spread=None if timing is None else [v * timing.lo / timing.median, v * timing.hi / timing.median, timing.repeats],
            # what the criterion alone says, also where the row is not judged (shown as evidence only)
            criterion_verdict=crit.verdict(v, c["paper"]),
            stability=None if stab is None else stab.as_dict(),
            bounds=None if bounds is None else [v, bounds[0] if math.isfinite(bounds[0]) else None],
            load=None if timing is None or getattr(timing, "load", None) is None else [timing.load, timing.cores])
        glue(key, v)
        if c["paper"] is not None:
            glue(f"{key}_paper", float(c["paper"]))
        glue(f"{key}_verdict", verdict + (f": {why}" if why else ""))
        self.save()
        return verdict

    def verdict_phrase(self, claim: str) -> str:
        """The verdicts of ``claim``'s headline rows recorded so far, for a findings sentence: "reproduced"
        (one row, or all alike), else grouped by part, e.g. "reproduced (unconstrained, distributed), partly
        (sketched)"; "not run" when none is recorded."""
        heads = [c for c in self.comparisons.values() if c["claim"] == claim and c["role"] == HEADLINE]
        if not heads:
            return "not run"
        verdict = lambda c: c["verdict"] + (f": {c['why']}" if c.get("why") else "")
        groups: dict[str, list[str]] = {}
        for c in heads:
            groups.setdefault(verdict(c), []).append(c.get("part") or "")
        if len(groups) == 1:
            return next(iter(groups))
        return ", ".join(f"{v} ({', '.join(p for p in parts if p)})" for v, parts in groups.items())

    def path(self) -> Path:
        d = claims_dir(self.profile)
        stem = f"{self.chapter}--{self.variant}" if self.variant else self.chapter
        if self.settings:
            stem += f"@{settings_slug(self.settings)}"
        return d / f"{stem}.json"

    def save(self) -> Path:
        """Write the ledger as JSON (atomically); returns the path."""
        import json
        path = self.path()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(asdict(self), indent=2, default=str))
        os.replace(tmp, path)
        return path

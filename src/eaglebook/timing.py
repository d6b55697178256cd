"""Timings that survive a shared CPU: interleaved repeats, the median and the spread, and a verdict only
when an effect exceeds the spread.

Two things compared in one run are timed A, B, A, B, … (the order rotates every repeat, so neither always
runs first), so a drift of the machine's load hits both alike.  Each repeat gives a *paired* ratio A/B; the
comparison reports the median ratio and the range of the paired ratios, and says which is faster only when
the whole range lies beyond 1 ± :data:`MARGIN` on one side (every repeat agrees, by more than a few per
cent, so that a borderline effect does not flip from one build to the next).  Otherwise the verdict is
"within noise".
Every :class:`Timings` records the machine (:func:`eaglebook.provenance.machine`) before and after.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .provenance import machine

__all__ = ["Timings", "Ratio", "interleaved", "ratio", "WITHIN_NOISE", "MARGIN", "machine_line"]

WITHIN_NOISE = "within noise"
#: Paired ratios within 1 ± MARGIN count as no effect (a shared CPU's timings drift by a few per cent).
MARGIN = 0.05


@dataclass
class Timings:
    """Seconds per repeat for each named callable, timed interleaved, with the machine before and after."""

    seconds: dict[str, list[float]]
    results: dict[str, Any] = field(default_factory=dict)   # each callable's value from its last repeat
    before: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)

    def median(self, name: str) -> float:
        return float(np.median(self.seconds[name]))

    def spread(self, name: str) -> tuple[float, float]:
        """(min, max) over the repeats."""
        s = self.seconds[name]
        return float(min(s)), float(max(s))

    def ratio(self, a: str, b: str) -> "Ratio":
        """The paired ratio a/b (see the module docstring), with the machine's load while timing."""
        from dataclasses import replace
        loads = [m.get("load") for m in (self.before, self.after) if m and m.get("load") is not None]
        cores = (self.before or {}).get("usable_cores") or (self.before or {}).get("cores")
        return replace(ratio(self.seconds[a], self.seconds[b], a, b), load=max(loads) if loads else None, cores=cores)

    def as_dict(self) -> dict:
        return dict(seconds=self.seconds, before=self.before, after=self.after)


@dataclass(frozen=True)
class Ratio:
    """Paired ratios ``a/b`` over interleaved repeats: median, range and verdict."""

    a: str
    b: str
    median: float
    lo: float
    hi: float
    repeats: int
    load: float | None = None     # the highest 1-minute load average before/after the timing (None: not recorded)
    cores: int | None = None      # the cores this process may use

    @property
    def loaded(self) -> bool:
        """The machine was busy while timing: its load reached the core count (a timing verdict is then not judged)."""
        return self.load is not None and self.cores is not None and self.load >= self.cores

    @property
    def verdict(self) -> str:
        """``"<a> faster"`` / ``"<b> faster"`` when every paired ratio is beyond 1 ± MARGIN on one side, else within noise."""
        if self.repeats < 2:
            return WITHIN_NOISE + " (one repeat: no spread measured)"
        if self.hi < 1 - MARGIN:
            return f"{self.a} faster"
        if self.lo > 1 + MARGIN:
            return f"{self.b} faster"
        return WITHIN_NOISE

    @property
    def decided(self) -> bool:
        return not self.verdict.startswith(WITHIN_NOISE)

    def text(self, fmt: str = ".3g") -> str:
        """e.g. ``"0.42×, 0.40–0.45 over 5 repeats"`` (no parentheses: it is usually quoted inside some)."""
        return f"{self.median:{fmt}}×, {self.lo:{fmt}}–{self.hi:{fmt}} over {self.repeats} repeats"


def ratio(a_seconds, b_seconds, a: str = "a", b: str = "b") -> Ratio:
    """The paired ratios ``a_seconds[i] / b_seconds[i]`` of interleaved repeats."""
    a_s, b_s = np.asarray(a_seconds, float), np.asarray(b_seconds, float)
    if a_s.shape != b_s.shape or a_s.size == 0:
        raise ValueError(f"paired ratios need the same number (> 0) of repeats, got {a_s.size} and {b_s.size}")
    r = a_s / b_s
    return Ratio(a, b, float(np.median(r)), float(r.min()), float(r.max()), int(r.size))


def interleaved(fns: dict[str, Callable[[], Any]], repeats: int, *, warmup: int = 1,
                clock: Callable[[], float] = time.perf_counter, threads: int | None = None) -> Timings:
    """Time each callable ``repeats`` times, interleaved (A, B, C, then B, C, A, …), after ``warmup`` untimed
    rounds; record the machine before and after.  Returns :class:`Timings`."""
    if not fns:
        raise ValueError("argument fns must name at least one callable")
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"argument repeats={repeats!r} must be an integer >= 1")
    names = list(fns)
    out = Timings(seconds={k: [] for k in names}, before=machine(threads))
    for _ in range(warmup):
        for k in names:
            fns[k]()
    for rep in range(repeats):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for k in order:
            t0 = clock()
            value = fns[k]()
            out.seconds[k].append(clock() - t0)
            out.results[k] = value
    out.after = machine(threads)
    return out


def machine_line(before: dict, after: dict | None = None) -> str:
    """One line for a timing table's caption: CPU, cores, threads, BLAS, load average before → after."""
    load = f"{before.get('load')}" if before.get("load") is None else f"{before['load']:.2f}"
    if after:
        load += " → " + ("?" if after.get("load") is None else f"{after['load']:.2f}")
    return (f"{before.get('cpu')}; {before.get('cores')} cores ({before.get('usable_cores')} usable), "
            f"{before.get('threads')} thread(s); BLAS {before.get('blas')}; load average {load}")

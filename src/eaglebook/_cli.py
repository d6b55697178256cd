"""Command-line helpers shared by the package's CLIs (``python -m eaglebook.bench``, ``eaglebook.solver.bench``,
``eaglebook.solver.distributed``, ``eaglebook.distributed``): one rule for bad input.

A bad command line prints **one line** on standard error, ``PROG: error: MESSAGE``, and exits with status 2,
before any expensive work (no usage block, no traceback):

* :class:`Parser` is an ``argparse.ArgumentParser`` whose errors are that one line (``--help`` still
  prints the full usage);
* :func:`integer` and :func:`number` build argparse types with a range, whose errors read
  ``argument --n: must be an integer >= 1, got '0'`` (not ``invalid _positive_int value``);
* :func:`check_output` refuses an output path whose folder is missing or not writable, so that a run does
  not fail only after all its work;
* :func:`fail` prints the one line and exits 2 (for checks made after parsing);
* :func:`floor_arguments`: the options of the solver's floor benchmark, which two CLIs share.

Nothing here imports the package's numerics (the solver uses it too).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

__all__ = ["Parser", "integer", "number", "check_output", "fail", "one_line", "floor_arguments"]


def one_line(message: str) -> str:
    """The first non-empty line of ``message`` (an exception's text can span several)."""
    for line in str(message).splitlines():
        if line.strip():
            return line.strip()
    return str(message).strip()


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on standard error and exit status 2.  ``error_name``: the
    name its errors start with (default ``prog``)."""

    def __init__(self, *args, error_name: str | None = None, **kw):
        super().__init__(*args, **kw)
        self.error_name = error_name
        self.error_prefix = ""      # e.g. "[rank 1 of 3] " under torchrun

    def error(self, message):   # noqa: D102 — argparse's hook
        self.exit(2, f"{self.error_name or self.prog}: error: {self.error_prefix}{one_line(message)} (see --help)\n")


def fail(prog: str, message: str, status: int = 2):
    """Print ``PROG: error: MESSAGE`` (one line) on standard error and exit with ``status``."""
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)
    raise SystemExit(status)


class _Type:
    """An argparse type: parse with ``cast``, check the range; a named object so argparse's messages read well."""

    def __init__(self, cast, what: str, lo, hi, lo_open: bool, hi_open: bool):
        self.cast, self.what, self.lo, self.hi, self.lo_open, self.hi_open = cast, what, lo, hi, lo_open, hi_open
        parts = []
        if lo is not None:
            parts.append(f"{'>' if lo_open else '>='} {lo:g}")
        if hi is not None:
            parts.append(f"{'<' if hi_open else '<='} {hi:g}")
        self.rule = f"{what} {' and '.join(parts)}" if parts else what
        self.__name__ = self.rule

    def __repr__(self):
        return self.rule

    def __call__(self, s):
        try:
            v = self.cast(s)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"must be {'an' if self.what[0] in 'aeiou' else 'a'} {self.rule}, "
                                              f"got {s!r}") from None
        ok = isinstance(v, int) or math.isfinite(v)
        if ok and self.lo is not None:
            ok = v > self.lo if self.lo_open else v >= self.lo
        if ok and self.hi is not None:
            ok = v < self.hi if self.hi_open else v <= self.hi
        if not ok:
            raise argparse.ArgumentTypeError(f"must be {'an' if self.what[0] in 'aeiou' else 'a'} {self.rule}, "
                                              f"got {s!r}")
        return v


def integer(lo: int | None = None, hi: int | None = None) -> _Type:
    """An argparse type: an integer in [lo, hi] (either bound may be None)."""
    return _Type(int, "integer", lo, hi, False, False)


def number(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False, hi_open: bool = False) -> _Type:
    """An argparse type: a finite number in the given range (``lo_open``/``hi_open``: strict bounds)."""
    return _Type(float, "number", lo, hi, lo_open, hi_open)


def check_output(flag: str, path) -> None:
    """``ValueError`` (one line, naming ``flag``) unless ``path`` can be written: not a folder, its folder exists
    and is writable, and an existing file there is writable.  Call it before the work whose result goes there."""
    p = os.path.abspath(os.fspath(path))
    if os.path.isdir(p):
        raise ValueError(f"{flag} {path}: is a folder, not a file")
    parent = os.path.dirname(p)
    if not os.path.isdir(parent):
        raise ValueError(f"{flag} {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path}: folder {parent} is not writable")
    if os.path.exists(p) and not os.access(p, os.W_OK):
        raise ValueError(f"{flag} {path}: file exists and is not writable")


def floor_arguments(p) -> None:
    """The options of the floor benchmark (``python -m eaglebook.bench floor`` and ``python -m eaglebook.solver.bench``;
    checked further by :func:`eaglebook.solver.bench.check_arguments`)."""
    p.add_argument("--n", type=integer(8), default=960, help="n = d of the problem, >= 8 (default 960)")
    p.add_argument("--kappa", type=number(1), default=1e4, help="condition number, >= 1 (default 1e4)")
    p.add_argument("--repeats", type=integer(1), default=None,
                   help="interleaved repeats (default 5; 3 with --setting other than single)")
    p.add_argument("--setting", default="single", choices=("single", "n960", "batch20", "batch50", "all"),
                   help="single (default): one problem of --n with factorisation counts and the sketched timings; "
                        "n960, batch20 (10,000 problems of 20×20), batch50 (2,000 of 50×50) or all three: the whole "
                        "solve against its floor and the certification share")
    p.add_argument("--sketch-n", type=integer(8), default=None,
                   help="n of the sketched set-up and per-iteration timings at s = n, n/2, n/4, n/8; >= 8 "
                        "(default: --n)")
    p.add_argument("--machines", type=integer(1), default=3,
                   help="machines of the distributed count, at most --n (default 3)")
    p.add_argument("--seed", type=integer(0), default=0, help="random seed (default 0)")

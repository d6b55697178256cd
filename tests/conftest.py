"""Shared test set-up: an isolated claims folder, a test cache, and a wall-time table for chapters."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    # Chapters executed by the tests record their claims and cache their models apart from the user's
    # own book build; the test cache persists, so a second `make test` reuses the trained ci models.
    os.environ.setdefault("EAGLEBOOK_CACHE", str(REPO / ".cache" / "eaglebook-test"))
    os.environ.setdefault("EAGLEBOOK_CLAIMS", str(REPO / "_build" / "claims-test"))
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")


def _times_dir() -> Path:
    return REPO / "_build" / ".chapter-times"


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):          # the controller (or a run without xdist)
        import shutil
        shutil.rmtree(_times_dir(), ignore_errors=True)
        shutil.rmtree(REPO / "_build" / ".executed-ci", ignore_errors=True)   # tests/test_chapters.py: EXECUTED


def pytest_terminal_summary(terminalreporter):
    times = {}
    d = _times_dir()
    for f in sorted(d.glob("*.tsv")) if d.is_dir() else []:   # the workers' tables (pytest-xdist)
        for line in f.read_text().splitlines():
            name, sec = line.rsplit("\t", 1)
            times[name] = float(sec)
    if times:
        tr = terminalreporter
        tr.section("chapter wall times (papermill, profile ci)")
        for name, sec in times.items():
            tr.write_line(f"{name:<28s} {sec:7.1f} s")
        tr.write_line(f"{'total':<28s} {sum(times.values()):7.1f} s")


class _Times(dict):
    """Chapter name -> wall seconds, also appended to a file of this process (workers report through it)."""

    def __setitem__(self, name, sec):
        super().__setitem__(name, sec)
        d = _times_dir()
        d.mkdir(parents=True, exist_ok=True)
        with open(d / f"{os.getpid()}.tsv", "a") as f:
            f.write(f"{name}\t{sec:.3f}\n")


@pytest.fixture
def nbval_active(request) -> bool:
    o = request.config.option
    return bool(getattr(o, "nbval", False) or getattr(o, "nbval_lax", False))


@pytest.fixture
def chapter_times() -> dict[str, float]:
    """Chapter name -> wall seconds; printed at the end of the run (from every worker)."""
    return _Times()


def pytest_collection_modifyitems(config, items):
    """Unit tests first, then the chapters and the book build (the slow end-to-end part), in TOC order.
    Under pytest-xdist (``-n``) the chapters come first instead: their two files (``--dist loadfile``: each
    on one worker, in order) are the longest path, so they start at once and the unit tests fill the other
    workers meanwhile."""
    parallel = bool(getattr(config.option, "numprocesses", None))
    items.sort(key=lambda it: it.nodeid.startswith("tests/test_chapters") != parallel)

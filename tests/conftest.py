"""Shared test set-up: an isolated claims folder, a test cache, and a wall-time table for chapters."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHAPTER_TIMES: dict[str, float] = {}


def pytest_configure(config):
    # Chapters executed by the tests record their claims and cache their models apart from the user's
    # own book build; the test cache persists, so a second `make test` reuses the trained ci models.
    os.environ.setdefault("EAGLEBOOK_CACHE", str(REPO / ".cache" / "eaglebook-test"))
    os.environ.setdefault("EAGLEBOOK_CLAIMS", str(REPO / "_build" / "claims-test"))
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")


def pytest_terminal_summary(terminalreporter):
    if CHAPTER_TIMES:
        tr = terminalreporter
        tr.section("chapter wall times (papermill, profile ci)")
        for name, sec in CHAPTER_TIMES.items():
            tr.write_line(f"{name:<28s} {sec:7.1f} s")
        tr.write_line(f"{'total':<28s} {sum(CHAPTER_TIMES.values()):7.1f} s")


@pytest.fixture
def nbval_active(request) -> bool:
    o = request.config.option
    return bool(getattr(o, "nbval", False) or getattr(o, "nbval_lax", False))


@pytest.fixture
def chapter_times() -> dict[str, float]:
    """Chapter name -> wall seconds; printed at the end of the run."""
    return CHAPTER_TIMES


def pytest_collection_modifyitems(config, items):
    """Unit tests first, then the chapters and the book build (the slow end-to-end part), in TOC order."""
    items.sort(key=lambda it: it.nodeid.startswith("tests/test_chapters.py"))

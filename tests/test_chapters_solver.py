"""The solver chapters (6, 7, 8), executed by papermill like every other chapter (tests/test_chapters.py).

They train no model and read none, so they live in a file of their own: under pytest-xdist (make test:
``-n auto --dist loadfile``) a file runs on one worker, in order, and these run beside the chapters that
train.  Without xdist they run after the unit tests, with the other chapters.
"""

import pytest

from test_chapters import SOLVER, _not_under_nbval, execute  # noqa: F401  (the fixture applies here too)


@pytest.mark.parametrize("label, params", SOLVER, ids=[r[0] for r in SOLVER])
def test_solver_chapter_executes(label, params, tmp_path, chapter_times, monkeypatch):
    execute(label, params, tmp_path, chapter_times, monkeypatch)

"""The heart of the suite: every chapter in `_toc.yml`, executed by papermill with the ci profile, in order;
then the whole book, built with warnings as errors."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eaglebook import report

REPO = Path(__file__).resolve().parents[1]
DOCS = report.toc_chapters()
# index and reproducibility summarise the others: run them last
ORDER = [d for d in DOCS if d not in ("index", "reproducibility")] + [d for d in ("index", "reproducibility") if d in DOCS]
NOTEBOOKS = [d for d in ORDER if (REPO / "book" / f"{d}.md").read_text().startswith("---\njupytext:")]


@pytest.fixture(autouse=True)
def _not_under_nbval(nbval_active):
    if nbval_active:
        pytest.skip("`pytest --nbval` validates the chapters itself; not running them a second time")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_chapter_executes(name, tmp_path, chapter_times):
    import papermill as pm

    params = {"profile": "ci"} if "tags: [parameters]" in (REPO / "book" / f"{name}.md").read_text() else {}
    t0 = time.perf_counter()
    try:
        pm.execute_notebook(str(REPO / "book" / f"{name}.md"), str(tmp_path / f"{name}.ipynb"),
                            parameters=params, cwd=str(REPO / "book"), progress_bar=False,
                            kernel_name="python3", request_save_on_cell_execute=False)
    finally:
        chapter_times[name] = time.perf_counter() - t0


def test_book_builds_with_warnings_as_errors(tmp_path, chapter_times):
    env = dict(os.environ, EAGLEBOOK_PROFILE="ci")
    t0 = time.perf_counter()
    r = subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(REPO), "-W", "-n",
                        "--keep-going", "--path-output", str(tmp_path)],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=3600)
    chapter_times["(book build, ci)"] = time.perf_counter() - t0
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    html = tmp_path / "_build" / "html"
    assert (html / "index.html").exists()
    for name in DOCS:
        assert (html / "book" / f"{name}.html").exists(), name
    page = (html / "book" / "01_task.html").read_text()
    assert "fig-task-blocks" in page and "<img" in page  # figures rendered

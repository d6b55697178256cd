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


def _runs(name: str) -> list[tuple[str, dict]]:
    """papermill runs of one chapter: profile ci, and every regime where the chapter takes a `regime`."""
    src = (REPO / "book" / f"{name}.md").read_text()
    if "tags: [parameters]" not in src:
        return [(name, {})]
    if "\nregime = " not in src:
        return [(name, {"profile": "ci"})]
    regimes = ["unconstrained", "distributed", "sketched"] if name.startswith("04") else ["unconstrained", "distributed"]
    return [(f"{name}[{r}]", {"profile": "ci", "regime": r}) for r in regimes]


RUNS = [run for name in NOTEBOOKS for run in _runs(name)]
#: Chapters that neither train nor read trained models (the solver's): under pytest-xdist they run in a group
#: of their own, beside the group of the chapters that train (in TOC order, the summaries and the book build
#: last), while the unit tests fill the other workers.
SOLVER_CHAPTERS = ("06_newton_schulz", "07_benchmarks", "08_distributed")


def _group(label: str) -> str:
    return "chapters-solver" if label.split("[")[0] in SOLVER_CHAPTERS else "chapters"


@pytest.fixture(autouse=True)
def _not_under_nbval(nbval_active):
    if nbval_active:
        pytest.skip("`pytest --nbval` validates the chapters itself; not running them a second time")


@pytest.mark.parametrize("label, params", [pytest.param(*r, marks=pytest.mark.xdist_group(_group(r[0]))) for r in RUNS],
                         ids=[r[0] for r in RUNS])
def test_chapter_executes(label, params, tmp_path, chapter_times, monkeypatch):
    import papermill as pm

    monkeypatch.setenv("EAGLEBOOK_FIGURE_AUDIT", "raise")   # every figure meets the standard (plotting.audit)

    name = label.split("[")[0]
    t0 = time.perf_counter()
    try:
        pm.execute_notebook(str(REPO / "book" / f"{name}.md"), str(tmp_path / f"{name}.ipynb"),
                            parameters=params, cwd=str(REPO / "book"), progress_bar=False,
                            kernel_name="python3", request_save_on_cell_execute=False)
    finally:
        chapter_times[label] = time.perf_counter() - t0


def _fresh_clone(dest: Path) -> Path:
    """The files a clone of this checkout has (tracked and new, not ignored; uncommitted edits included), copied
    to ``dest``: no generated regime pages, no _build, no .venv."""
    import shutil

    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@pytest.mark.xdist_group("chapters")     # after the chapters that train: their models are in the test cache
def test_book_builds_with_warnings_as_errors(tmp_path, chapter_times):
    """The standard command, `jupyter-book build .`, on a fresh clone (ci profile, warnings as errors): it
    generates chapter 4's regime pages itself (eaglebook._toolchain.variant_pages) and builds every page.
    The ci models come from the test cache that the chapter runs above filled (EAGLEBOOK_CACHE, conftest)."""
    clone = _fresh_clone(tmp_path / "clone")
    assert not (clone / "book" / "_regimes").exists() and (clone / "_toc.yml").is_file()
    env = dict(os.environ, EAGLEBOOK_PROFILE="ci")
    env.pop("TQDM_DISABLE", None)                          # the build turns the bars off by itself
    t0 = time.perf_counter()
    r = subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", ".", "-W", "-n", "--keep-going"],
                       cwd=clone, env=env, capture_output=True, text=True, timeout=3600)
    chapter_times["(book build, ci)"] = time.perf_counter() - t0
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    assert "executing 04_extract with regime='sketched' (profile ci)" in r.stderr
    for regime in ("distributed", "sketched"):
        assert (clone / "book" / "_regimes" / f"04_extract-{regime}.ipynb").is_file(), regime
    html = clone / "_build" / "html"
    assert (html / "index.html").exists()
    for name in report.toc_chapters(generated=True):
        assert (html / "book" / f"{name}.html").exists(), name
    scorecard = (html / "book" / "index.html").read_text()
    for regime in ("unconstrained", "distributed", "sketched"):   # every regime's chapter-4 rows
        assert f"C4_{regime}_eta" in scorecard, regime
    # every claim of the paper has its headline row(s) recorded by some chapter of the build (the claims of the
    # neighbouring paper follow in their own section: the ci profile trains only part of chapter 10's models)
    paper_claims, found, neighbour = scorecard.partition('id="claims-of-a-neighbouring-paper"')
    assert found and "Vladymyrov" in neighbour
    assert "not run in this build" not in paper_claims and "<em>not run</em>" not in paper_claims
    sketched = (html / "book" / "_regimes" / "04_extract-sketched.html").read_text()
    assert "fig-extract-sketch-sketched" in sketched and "<img" in sketched
    page = (html / "book" / "01_task.html").read_text()
    assert "fig-task-blocks" in page and "<img" in page  # figures rendered
    keep = os.environ.get("EAGLEBOOK_KEEP_BUILD")        # .ci/run checks this build in a browser next
    if keep:
        import shutil
        shutil.copytree(html, REPO / keep, dirs_exist_ok=True)

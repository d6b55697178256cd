"""The heart of the suite: every chapter in `_toc.yml`, executed by papermill with the ci profile, in order;
then the whole book, built with warnings as errors."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eaglebook import regimes, report, variants

REPO = Path(__file__).resolve().parents[1]
DOCS = report.toc_chapters()
# index and reproducibility summarise the others: run them last
ORDER = [d for d in DOCS if d not in ("index", "reproducibility")] + [d for d in ("index", "reproducibility") if d in DOCS]
NOTEBOOKS = [d for d in ORDER if (REPO / "book" / f"{d}.md").read_text().startswith("---\njupytext:")]


def _runs(name: str) -> list[tuple[str, dict]]:
    """papermill runs of one chapter, and, where the chapter takes a `regime`, the paper's regimes (from the
    registry; chapter 3 the first two only, its heaviest runs are the same for every regime).  The profile comes
    from $EAGLEBOOK_PROFILE (ci), so a run with the chapter's own defaults injects no parameter: its executed
    notebook is the book's, and the book-build test below reuses it (:func:`seed_execution_cache`).  The ci
    profile's other regimes (the toy regime) run from their own test (tests/test_regime_toy.py)."""
    src = (REPO / "book" / f"{name}.md").read_text()
    if "\nregime = " not in src:
        return [(name, {})]
    own = variants.default(REPO, name, "regime")
    shown = regimes.PAPER if name in variants.VARIANTS else regimes.PAPER[:2]
    return [(f"{name}[{r}]", {} if r == own else {"regime": r}) for r in shown]


RUNS = [run for name in NOTEBOOKS for run in _runs(name)]
#: Chapters that neither train nor read trained models (the solver's) run from tests/test_chapters_solver.py:
#: under pytest-xdist (make test: ``-n auto --dist loadfile``) a file runs on one worker, in order, so those
#: chapters run beside the ones here (that train; the summaries and the book build last), while the unit
#: tests fill the other workers.
SOLVER_CHAPTERS = ("06_newton_schulz", "07_benchmarks", "08_distributed")
HERE = [r for r in RUNS if r[0].split("[")[0] not in SOLVER_CHAPTERS]
SOLVER = [r for r in RUNS if r[0].split("[")[0] in SOLVER_CHAPTERS]


@pytest.fixture(autouse=True)
def _not_under_nbval(nbval_active):
    if nbval_active:
        pytest.skip("`pytest --nbval` validates the chapters itself; not running them a second time")


#: Executed notebooks of this test session's chapter runs that injected no parameter (the book-build test seeds
#: the clone's execution cache with them); emptied at the start of every session (conftest).
EXECUTED = REPO / "_build" / ".executed-ci"
_CODE_KEY = "eaglebook_code_hash"


def execute(label: str, params: dict, tmp_path: Path, chapter_times, monkeypatch) -> None:
    """Run one chapter with papermill (profile ci), the figure audit on; record its wall time.  A run that
    injects no parameter leaves its executed notebook in :data:`EXECUTED`, stamped with the package's code hash."""
    import json
    import shutil

    import papermill as pm

    monkeypatch.setenv("EAGLEBOOK_FIGURE_AUDIT", "raise")   # every figure meets the standard (plotting.audit)
    monkeypatch.setenv("EAGLEBOOK_PROFILE", "ci")
    monkeypatch.setenv("TQDM_DISABLE", "1")                # as the book build runs them (the notebook may be its page)

    name = label.split("[")[0]
    out = tmp_path / f"{name}.ipynb"
    t0 = time.perf_counter()
    try:
        pm.execute_notebook(str(REPO / "book" / f"{name}.md"), str(out),
                            parameters=params, cwd=str(REPO / "book"), progress_bar=False,
                            kernel_name="python3", request_save_on_cell_execute=False)
    finally:
        chapter_times[label] = time.perf_counter() - t0
    if not params:
        nb = json.loads(out.read_text())
        nb["metadata"][_CODE_KEY] = report.code_hash()
        EXECUTED.mkdir(parents=True, exist_ok=True)
        tmp = EXECUTED / f".tmp-{name}.ipynb"
        tmp.write_text(json.dumps(nb))
        shutil.move(tmp, EXECUTED / f"{name}.ipynb")


def seed_execution_cache(clone: Path) -> list[str]:
    """Put this session's executed chapters (:data:`EXECUTED`) into the clone's execution cache, as the book build
    would have cached them itself: each chapter is read from the clone as myst-nb reads it, given the outputs of the
    papermill run of the same source (its code cells must match one for one), and cached under the hash myst-nb
    looks up; the code stamp tells ``eaglebook.variants`` that the cache is current.  A notebook executed by other
    package code, or whose cells differ, is left out (the build then executes that chapter).  Returns the names."""
    import json

    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    code = report.code_hash()
    cache = get_cache(str(clone / "_build" / ".jupyter_cache"))
    seeded = []
    for f in sorted(EXECUTED.glob("*.ipynb")) if EXECUTED.is_dir() else []:
        ran = json.loads(f.read_text())
        src = clone / "book" / f"{f.stem}.md"
        if ran["metadata"].get(_CODE_KEY) != code or not src.is_file():
            continue
        text = src.read_text()
        if "execution_mode: force" in text.split("\n---", 1)[0]:      # a page the build always executes
            continue
        nb = create_nb_reader(str(src), MdParserConfig(), NbParserConfig(), text).read(text)
        mine = [c for c in nb.cells if c.cell_type == "code"]
        theirs = [c for c in ran["cells"] if c["cell_type"] == "code"]
        if len(mine) != len(theirs) or any(m.source != "".join(t["source"]) for m, t in zip(mine, theirs)):
            continue
        for m, t in zip(mine, theirs):
            m.outputs = nbformat.from_dict(t["outputs"])
            m.execution_count = t["execution_count"]
        cache.cache_notebook_bundle(CacheBundleIn(nb, str(src)), check_validity=False, overwrite=True)
        seeded.append(f.stem)
    (clone / "_build" / ".eaglebook-code").write_text(code + "\n")
    return seeded


@pytest.mark.parametrize("label, params", HERE, ids=[r[0] for r in HERE])
def test_chapter_executes(label, params, tmp_path, chapter_times, monkeypatch):
    execute(label, params, tmp_path, chapter_times, monkeypatch)


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


BEFORE = REPO / "tests" / "data" / "ci_book_before.json"


def machine_kind() -> str:
    """The CPU model and torch version: trained ci models are bit-identical only on the same kind of machine."""
    import platform

    import torch
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else platform.processor()
    return f"{cpu}; torch {torch.__version__}; {os.cpu_count()} cores"


def same_book(build: Path, claims: Path) -> None:
    """The ci build's glued values and claims ledgers equal the snapshot taken before the chapters were restructured
    (tests/data/ci_book_before.json, by tools/glued.py), apart from the keys that differ between two builds of the
    same commit (timings: ``volatile``) and the keys a later change altered on purpose (``changed``: key -> why).
    Trained models are bit-identical only on the machine kind the snapshot was taken on: elsewhere this says so and
    compares nothing."""
    import json
    sys.path.insert(0, str(REPO / "tools"))
    import glued
    before = json.loads(BEFORE.read_text())
    if before["machine"] != machine_kind():
        print(f"same-book comparison not made: snapshot taken on {before['machine']!r}, this is {machine_kind()!r}")
        return
    after = glued.snapshot(build, claims)
    diff = glued.differences(before, after, set(before["volatile"]) | set(before.get("changed", {})))
    diff = [d for d in diff if not d.startswith("new after:")]           # keys added by the restructure (phrases)
    assert not diff, f"{len(diff)} glued values or ledger rows differ from the snapshot:\n" + "\n".join(diff[:40])


def test_book_builds_with_warnings_as_errors(tmp_path, chapter_times):
    """The standard command, `jupyter-book build .`, on a fresh clone (ci profile, warnings as errors): it
    generates chapter 4's regime pages itself (eaglebook._toolchain.variant_pages) and builds every page.
    The ci models come from the test cache that the chapter runs above filled (EAGLEBOOK_CACHE, conftest), the
    claims ledgers from theirs (EAGLEBOOK_CLAIMS), and the chapters they executed with the book's own parameters
    from their executed notebooks (:func:`seed_execution_cache`): the build executes only the rest."""
    clone = _fresh_clone(tmp_path / "clone")
    assert not (clone / "book" / "_regimes").exists() and (clone / "_toc.yml").is_file()
    seeded = seed_execution_cache(clone)     # the chapters this session ran need not run again
    env = dict(os.environ, EAGLEBOOK_PROFILE="ci")
    env.pop("TQDM_DISABLE", None)                          # the build turns the bars off by itself
    t0 = time.perf_counter()
    r = subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", ".", "-W", "-n", "--keep-going"],
                       cwd=clone, env=env, capture_output=True, text=True, timeout=3600)
    chapter_times["(book build, ci)"] = time.perf_counter() - t0
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    pages = variants.values("04_extract", "ci", REPO)                      # the registry's, and the toy regime
    assert "toy" in pages and set(regimes.PAPER) - {variants.default(REPO, "04_extract", "regime")} <= set(pages)
    for regime in pages:
        assert f"executing 04_extract with regime={regime!r} (profile ci)" in r.stderr, regime
    # a build you can watch: one line per chapter with its time (eaglebook._toolchain.build_progress)
    for name in ("01_task", "07_benchmarks", "index"):
        assert re.search(rf"^\[book\] {name}: [0-9][^\n]*(s|min)\b", r.stderr, re.M), name
    assert re.search(r"^\[book\] \d+ pages read in .*; slowest: ", r.stderr, re.M)
    # the seeded chapters came from the cache (a mismatch would only cost time, so it is caught here)
    hits = (r.stdout + r.stderr).count("Using cached notebook")
    assert hits >= len(seeded), f"{len(seeded)} chapters seeded, {hits} taken from the cache"
    for regime in pages:
        assert (clone / "book" / "_regimes" / f"04_extract-{regime}.ipynb").is_file(), regime
    html = clone / "_build" / "html"
    assert (html / "index.html").exists()
    for name in report.toc_chapters() + [f"_regimes/04_extract-{r}" for r in pages]:
        assert (html / "book" / f"{name}.html").exists(), name
    scorecard = (html / "book" / "index.html").read_text()
    for regime in regimes.PAPER:   # every paper regime's chapter-4 rows, and none of the toy regime's
        assert f"C4_{regime}_eta" in scorecard, regime
    assert "C4_toy_eta" not in scorecard
    # every claim of the paper has its headline row(s) recorded by some chapter of the build (the claims of the
    # neighbouring paper follow in their own section: the ci profile trains only part of chapter 10's models)
    paper_claims, found, neighbour = scorecard.partition('id="claims-of-a-neighbouring-paper"')
    assert found and "Vladymyrov" in neighbour
    assert "not run in this build" not in paper_claims and "<em>not run</em>" not in paper_claims
    sketched = (html / "book" / "_regimes" / "04_extract-sketched.html").read_text()
    assert "fig-extract-sketch-sketched" in sketched and "<img" in sketched
    page = (html / "book" / "01_task.html").read_text()
    assert "fig-task-blocks" in page and "<img" in page  # figures rendered
    same_book(clone / "_build", Path(os.environ["EAGLEBOOK_CLAIMS"]) / "ci")
    keep = os.environ.get("EAGLEBOOK_KEEP_BUILD")        # .ci/run checks this build in a browser next
    if keep:
        import shutil
        shutil.copytree(html, REPO / keep, dirs_exist_ok=True)

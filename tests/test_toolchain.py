"""The users' commands: papermill on .md chapters, pytest --nbval, JupyterLab's default viewer."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from eaglebook import report

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CHAPTERS = [c for c in report.toc_chapters()
            if re.search(r":tags: \[parameters\b", (REPO / "book" / f"{c}.md").read_text())]


def run(cmd, cwd=REPO, env=None, timeout=900):
    e = dict(os.environ, **(env or {}))
    return subprocess.run(cmd, cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)


def test_every_toc_chapter_has_a_parameters_cell_with_profile_and_seed():
    assert "01_task" in CHAPTERS
    for c in CHAPTERS:
        src = (REPO / "book" / f"{c}.md").read_text()
        assert "profile = None" in src and "seed = " in src, c


def test_papermill_from_repo_root(tmp_path):
    out = tmp_path / "out.ipynb"
    r = run([str(BIN / "papermill"), "book/01_task.md", str(out), "-p", "seed", "3", "-p", "profile", "ci"])
    assert r.returncode == 0, r.stderr[-3000:]
    nb = nbformat.read(out, as_version=4)
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)


def test_papermill_with_absolute_path_from_elsewhere(tmp_path):
    out = tmp_path / "out.ipynb"
    r = run([str(BIN / "papermill"), str(REPO / "book" / "01_task.md"), str(out), "-p", "profile", "ci"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]


def test_papermill_refuses_text_output(tmp_path):
    r = run([str(BIN / "papermill"), "book/01_task.md", str(tmp_path / "out.md"), "-p", "profile", "ci"])
    assert r.returncode != 0 and ".ipynb" in r.stderr


def _error_cell(path: Path) -> int:
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, c in enumerate(code):
        if any(o.get("output_type") == "error" for o in c.get("outputs", [])):
            return i
    return -1


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("param, value, message", [
    ("profile", "bogus", "profile='bogus' is not valid; allowed values: 'paper', 'ci'"),
    ("seed", "-1", "seed=-1 is not valid; allowed values: integers >= 0"),
])
def test_bad_parameter_fails_early_naming_it(tmp_path, chapter, param, value, message):
    out = tmp_path / "out.ipynb"
    r = run([str(BIN / "papermill"), f"book/{chapter}.md", str(out), "-p", param, value])
    assert r.returncode != 0
    assert message in r.stderr + out.read_text()
    assert 0 <= _error_cell(out) <= 2  # parameters, injected parameters, then the set-up cell raises


def test_bad_regime_is_named():
    from eaglebook import config
    with pytest.raises(ValueError, match="regime='dense' is not valid; allowed values: 'unconstrained'"):
        config.regime_name("dense")


def test_nbval_collects_and_runs_md_chapters():
    r = run([sys.executable, "-m", "pytest", "--nbval", "-q", "book/01_task.md"], env={"EAGLEBOOK_PROFILE": "ci"})
    assert r.returncode == 0, r.stdout[-3000:]
    assert " passed" in r.stdout
    r = run([sys.executable, "-m", "pytest", "--nbval-lax", "-q", "book/01_task.md"], env={"EAGLEBOOK_PROFILE": "ci"})
    assert r.returncode == 0, r.stdout[-3000:]


def test_nbval_fails_on_a_failing_assert(tmp_path):
    src = (REPO / "book" / "01_task.md").read_text().split("```{code-cell}")[0]
    (tmp_path / "bad.md").write_text(src + "```{code-cell} ipython3\nassert 1 + 1 == 3, 'boom'\n```\n")
    r = run([sys.executable, "-m", "pytest", "--nbval", "-q", "-p", "eaglebook.nbval_plugin",
             "-p", "no:cacheprovider", str(tmp_path / "bad.md")], cwd=tmp_path)
    assert r.returncode == 1, r.stdout[-2000:]
    assert "boom" in r.stdout


def test_nbval_collects_each_chapter_once_and_no_build_copies():
    build_copy = REPO / "_build" / "jupyter_execute" / "book"
    build_copy.mkdir(parents=True, exist_ok=True)
    decoy = build_copy / "zz_decoy.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("raise SystemExit(1)")]), decoy)
    try:
        r = run([sys.executable, "-m", "pytest", "--nbval", "--collect-only", "-q"])
    finally:
        decoy.unlink()
    assert r.returncode == 0, r.stdout[-2000:]
    files = {line.split("::")[0] for line in r.stdout.splitlines() if "::" in line}
    assert not any("_build" in f for f in files)
    for c in CHAPTERS:
        assert f"book/{c}.md" in files


def test_jupyterlab_opens_md_chapters_as_notebooks():
    overrides = json.loads((REPO / ".jupyter/lab/settings/overrides.json").read_text())
    viewers = overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["markdown"] == viewers["myst"] == "Jupytext Notebook"
    installed = Path(sys.prefix) / "share/jupyter/lab/settings/overrides.json"
    if Path(sys.prefix) == (REPO / ".venv").resolve() or (REPO / ".venv") == Path(sys.prefix):
        assert json.loads(installed.read_text()) == overrides  # `make` installed it into the venv
    from jupytext import TextFileContentsManager
    cm = TextFileContentsManager(root_dir=str(REPO / "book"))
    model = cm.get("01_task.md", type="notebook", content=True)
    assert model["type"] == "notebook" and any(c.cell_type == "code" for c in model["content"].cells)


def test_extraction_chapter_on_a_clean_cache_trains_what_it_needs(tmp_path):
    """The users' command `papermill book/04_extract.md out.ipynb -p regime sketched`, with an empty cache."""
    out = tmp_path / "out.ipynb"
    r = run([str(BIN / "papermill"), "book/04_extract.md", str(out), "-p", "regime", "sketched", "-p", "profile", "ci"],
            env={"EAGLEBOOK_CACHE": str(tmp_path / "empty-cache")})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "sketched seed 0" in r.stderr + out.read_text()          # the progress bar of the training it needed
    entries = [p for p in (tmp_path / "empty-cache" / "train").iterdir() if not p.name.startswith(".")]
    assert len(entries) == 2 and all(p.is_dir() for p in entries)        # both ci seeds, trained and cached


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if "\nregime = " in (REPO / "book" / f"{c}.md").read_text()])
def test_bad_regime_fails_early_naming_it(tmp_path, chapter):
    out = tmp_path / "out.ipynb"
    r = run([str(BIN / "papermill"), f"book/{chapter}.md", str(out), "-p", "regime", "dense", "-p", "profile", "ci"])
    assert r.returncode != 0
    assert "regime='dense' is not valid; allowed values: 'unconstrained', 'distributed', 'sketched'" in r.stderr + out.read_text()
    assert 0 <= _error_cell(out) <= 2


# ---- `jupyter-book build .` generates chapter 4's regime pages itself ------------------------------------

class _App:                        # what the extension reads of a Sphinx application
    def __init__(self, srcdir, outdir):
        self.srcdir, self.outdir = str(srcdir), str(outdir)
        self.config = type("Config", (), {"nb_execution_cache_path": ""})()


def test_variant_pages_runs_the_variants_step_in_the_book_and_stops_a_failing_build(tmp_path, monkeypatch):
    from sphinx.errors import ExtensionError

    from eaglebook._toolchain import variant_pages

    book = tmp_path / "repo"
    (book / "book").mkdir(parents=True)
    (book / "_toc.yml").write_text("root: book/index\n")
    app = _App(book, book / "_build" / "html")
    assert variant_pages.command(variant_pages._execution_cache(app))[1:] == [
        "-m", "eaglebook.variants", "--execution-cache", str((book / "_build" / ".jupyter_cache").resolve())]
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    probe = ("import os, pathlib, sys; pathlib.Path('ran.txt').write_text(os.environ['TQDM_DISABLE'] + ' ' + "
             "' '.join(sys.argv[1:]))")
    monkeypatch.setattr(variant_pages, "command", lambda cache: [sys.executable, "-c", probe, str(cache)])
    variant_pages._config_inited(app, app.config)
    assert (book / "ran.txt").read_text() == f"1 {(book / '_build' / '.jupyter_cache').resolve()}"   # in the book, bars off
    monkeypatch.setattr(variant_pages, "command", lambda cache: [sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(ExtensionError, match=r"`python -m eaglebook.variants` exited with status 3"):
        variant_pages._config_inited(app, app.config)
    (book / "ran.txt").unlink()
    elsewhere = _App(tmp_path, tmp_path / "_build" / "html")            # no _toc.yml + book/: not this book
    variant_pages._config_inited(elsewhere, elsewhere.config)
    assert not list(tmp_path.rglob("ran.txt"))


def test_variants_empty_the_execution_cache_they_are_given(tmp_path):
    from eaglebook import variants

    cache = tmp_path / "out" / "_build" / ".jupyter_cache"
    cache.mkdir(parents=True)
    (cache / "global.db").write_text("x")
    assert variants.refresh_execution_cache(tmp_path, log=lambda m: None, cache=cache)     # no stamp yet: stale
    assert not cache.exists() and (cache.parent / ".eaglebook-code").is_file()
    cache.mkdir()
    assert not variants.refresh_execution_cache(tmp_path, log=lambda m: None, cache=cache)  # same code: kept
    assert cache.exists() and not (tmp_path / "_build").exists()                          # the repo's own untouched


def test_variant_pages_show_one_parameters_cell_and_map_their_figures():
    from eaglebook import variants
    fig = lambda name, drawn, tags=("hide-input",): {
        "cell_type": "code", "source": "plot()", "metadata": {"tags": list(tags), "mystnb": {"figure": {"name": name}}},
        "outputs": [{"output_type": "display_data", "data": {"image/png": "x"}}] if drawn else []}
    nb = {"metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "(ch-extract)=\n# Reading"},
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": 'regime = "unconstrained"', "outputs": []},
        {"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "source": '# Parameters\nregime = "sketched"\n',
         "outputs": []},
        fig("fig-a", True), fig("fig-b", False), fig("fig-c", True, ("hide-input", "regime-specific"))]}
    nb = variants.figure_note(variants.relabel(variants.merge_parameters(nb), "sketched", "the sketched regime"),
                              "04_extract", "sketched")
    params = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1 and params[0]["source"] == 'regime = "sketched"'
    assert not any("injected-parameters" in c.get("metadata", {}).get("tags", []) for c in nb["cells"])
    note = nb["cells"][1]["source"]
    assert "{numref}`fig-a-sketched` is {numref}`fig-a`" in note and "fig-b" not in note
    assert "{numref}`fig-c-sketched` only this regime has" in note and "{ref}`the chapter <ch-extract>`" in note


def test_build_progress_prints_wall_times_people_read():
    from eaglebook._toolchain.build_progress import duration
    assert [duration(x) for x in (0.42, 12.4, 185, 3725)] == ["0.4 s", "12 s", "3 min 05 s", "1 h 02 min"]


def test_bookkeeping_measure_counts_a_planted_chapter(tmp_path):
    """tools/bookkeeping.py: the measure of how much of a chapter's code is bookkeeping."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("bookkeeping", Path(__file__).resolve().parents[1] / "tools" / "bookkeeping.py")
    bk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bk)
    ch = tmp_path / "99_demo.md"
    ch.write_text("---\njupytext: {}\n---\n# Demo\n\nProse {eval}`G(\"a\")`.\n\n"
                  "```{code-cell} ipython3\n:tags: [parameters]\nprofile = None\n```\n\n"
                  "```{code-cell} ipython3\nx = 1\nglue(\"a\", x)\nc = led.declare(\"k\", what=\"w\",\n"
                  "                criterion=crit)\nMarkdown(f\"{x}\")\nMarkdown(tab)  # table\nch.glue(b=x)\n```\n")
    r = bk.measure(ch)
    # a generated table (marked) is not bookkeeping; ch.glue(...) is
    assert (r["code"], r["bookkeeping"], r["declare"], r["glue"], r["eval"], r["markdown"]) == (7, 5, 1, 1, 1, 1)
    assert r["prose"] == 2 and r["long_cells"] == 0


def test_build_progress_prints_a_line_per_page_in_a_real_sphinx_build(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "conf.py").write_text('extensions = ["myst_parser", "eaglebook._toolchain.build_progress"]\n'
                                      'root_doc = "book/a"\n')
    (tmp_path / "book" / "a.md").write_text("# A\n\ntext\n")
    r = subprocess.run([str(Path(sys.executable).parent / "sphinx-build"), "-q", "-b", "html", ".", "_out"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "[book] a: reading" in r.stderr and re.search(r"^\[book\] a: \d", r.stderr, re.M), r.stderr
    assert "[book] 1 pages read in" in r.stderr

"""The book as a reader gets it: offline MathJax, the real-browser checks (`make check-html`, `make check-lab`),
warnings in the HTML, and chapters that survive a JupyterLab save.

The browser tests need Chromium and chromedriver (system packages, which `.ci/run` installs); without them
they skip and say why.  Everything else runs anywhere."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

from eaglebook._toolchain import browser, check_html, check_lab, lab_server, mathjax_offline

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
needs_chromium = pytest.mark.skipif(browser.find_chromium() is None,
                                    reason=f"browser check skipped: {browser.MISSING}")


# ---- offline MathJax ---------------------------------------------------------------------------------

def test_cdn_pattern():
    for url in ["https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js", "https://unpkg.com/thebe@0.8/x.js",
                "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.4/require.min.js",
                "https://fonts.googleapis.com/css?family=Lato", "http://cdn.example.org/a.png"]:
        assert mathjax_offline.CDN.search(url), url
    for url in ["https://www.mathjax.org", "https://doi.org/10.48550/arXiv.2509.19702", "https://github.com/x/y"]:
        assert not mathjax_offline.CDN.search(url), url


def test_mathjax_copy_is_complete_and_free_of_cdn_addresses(tmp_path):
    src = mathjax_offline.source_dir()
    assert check_html.cdn_references(src), "the pristine MathJax names CDNs: the cleaning below is needed"
    dest = tmp_path / "_static" / "mathjax"
    n = mathjax_offline.copy_mathjax(src, dest)
    assert n > 50 and (dest / "tex-chtml.js").is_file()
    assert list((dest / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))   # CommonHTML's fonts
    assert (dest / "input" / "tex" / "extensions" / "ams.js").is_file()            # autoloaded TeX packages
    assert not (dest / "latest.js").exists()
    assert check_html.cdn_references(tmp_path) == []


def test_book_config_serves_mathjax_and_shows_warnings_without_progress_bars():
    cfg = (REPO / "_config.yml").read_text()
    assert "- eaglebook._toolchain.mathjax_offline" in cfg
    assert re.search(r"^\s*stderr_output:\s*show\b", cfg, re.M)       # a chapter's warnings reach the reader
    make = (REPO / "Makefile").read_text()
    book = re.search(r"^book:.*\n((?:\t.*\n)+)", make, re.M).group(1)   # the recipe of `make book`
    assert re.search(r"^\tTQDM_DISABLE=1 EAGLEBOOK_FIGURE_AUDIT=raise \$\(BIN\)/jupyter-book build", book, re.M)
    # the regime pages come from the build itself (variant_pages), first of the extensions; not a second time
    assert "eaglebook.variants" not in book
    exts = re.search(r"^  extra_extensions:\n((?:    - .*\n)+)", cfg, re.M).group(1)
    assert exts.split("\n")[0].split("#")[0].strip() == "- eaglebook._toolchain.variant_pages"
    # TQDM_DISABLE=1 silences the package's progress bars (training.tqdm_class: tqdm.auto where ipywidgets can draw a bar) and nothing else
    code = ("import sys, warnings\nfrom tqdm.auto import tqdm\nfor _ in tqdm(range(3), desc='bar-shown'): pass\n"
            "warnings.warn('warning-shown')\n")
    on = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,   # whatever this process was given
                        env={k: v for k, v in os.environ.items() if k != "TQDM_DISABLE"})
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, TQDM_DISABLE="1"))
    assert "bar-shown" in on.stderr and "bar-shown" not in off.stderr
    assert "warning-shown" in off.stderr


# ---- make check-html -----------------------------------------------------------------------------------

def test_broken_local_refs(tmp_path):
    (tmp_path / "there.html").write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "index.html").write_text("x")
    page = tmp_path / "p.html"
    page.write_text('<a href="there.html#a">ok</a><a href="sub/">dir</a><a href="#top">anchor</a>'
                    '<a href="https://example.org/x">ext</a><a href="gone.html">bad</a>'
                    '<img src="_images/none.png"><link href="_static/none.css" rel="stylesheet">')
    assert check_html.broken_local_refs(page) == ["_images/none.png", "_static/none.css", "gone.html"]


def test_check_html_without_a_built_book_says_so(tmp_path):
    out = io.StringIO()
    assert check_html.check(tmp_path / "html", tmp_path / "shots", out=out) == 2
    assert "make book" in out.getvalue()
    r = subprocess.run(["make", "-s", "check-html", f"HTML={tmp_path / 'html'}"], cwd=REPO,
                       capture_output=True, text=True)
    assert r.returncode != 0 and "no built book" in r.stderr and "run 'make book' first" in r.stderr


HEAD = """<!DOCTYPE html><html><head><meta charset="utf-8">
<script>window.MathJax = {options: {processHtmlClass: 'tex2jax_process|mathjax_process|math|output_area',
  ignoreHtmlClass: 'tex2jax_ignore|mathjax_ignore|document'}}</script>
<script defer src="_static/mathjax/tex-chtml.js"></script></head><body><div class="document">"""
PAGES = {
    "index.html": HEAD + """<p>Inline <span class="math notranslate nohighlight">\\(X = \\begin{bmatrix} A & C \\\\ B & D
        \\end{bmatrix}\\)</span> and display</p><div class="math notranslate nohighlight">\\[\\hat D = B A^\\dagger C\\]</div>
        <pre>code may say \\(x\\) and $$ and Traceback-free things</pre>
        <div style="overflow-x:auto"><pre style="width:3000px">a code cell wider than the page scrolls inside its box</pre></div>
        <a href="wide.html">a local link</a></div></body></html>""",
    "raw.html": "<html><body><p>Raw maths: \\(x^2\\) and $$y$$</p><span class='math'>\\(z\\)</span></body></html>",
    "img.html": "<html><body><img src='_images/missing.png'><a href='nowhere.html'>x</a></body></html>",
    "tb.html": "<html><body><pre>Traceback (most recent call last):\n  File x\nValueError: boom</pre></body></html>",
    "wide.html": "<html><body><div style='width:2000px'>too wide</div></body></html>",
    "net.html": "<html><body><img src='http://cdn.example.org/pic.png'></body></html>",
}
EXPECT = {"index.html": [], "raw.html": ["unrendered maths in the visible text", "not rendered by MathJax"],
          "img.html": ["broken image", "broken local link(s): _images/missing.png, nowhere.html"],
          "tb.html": ["traceback"], "wide.html": ["page wider than the 1280 px viewport: scrollWidth 20"],
          "net.html": ["requested 1 URL(s) from the network: http://cdn.example.org/pic.png", "broken image"]}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    mathjax_offline.copy_mathjax(mathjax_offline.source_dir(), root / "_static" / "mathjax")
    for name, html in PAGES.items():
        (root / name).write_text(html)
    return root


@needs_chromium
def test_check_html_catches_each_fault_and_passes_a_good_page(site, tmp_path):
    with browser.chromium() as drv:
        reports = {p.name: check_html.check_page(drv, site, p, tmp_path) for p in check_html.pages(site)}
    assert set(reports) == set(PAGES)
    for name, expected in EXPECT.items():
        rep = reports[name]
        text = "\n".join(rep.problems)
        if not expected:
            assert rep.ok, f"{name}: {text}"
        for e in expected:
            assert e in text, f"{name}: expected {e!r} in:\n{text}"
        shot = Path(rep.screenshot)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert reports["index.html"].math == 2
    out = io.StringIO()
    assert check_html.check(site, tmp_path / "shots", out=out) == 1
    text = out.getvalue()
    assert "FAIL  CDN references in the built tree (1):\n      net.html: http://cdn.example.org/pic.png" in text
    assert re.search(r"^check-html: 1 passed, 6 failed$", text, re.M), text      # index.html passes


# ---- make check-html on a small Jupyter Book: content wider than its column, bare return values -----------

def test_bare_number_recognises_numbers_and_nothing_else():
    for text in ["1.8907248475522083e-14", "10.0", "-3", "np.float64(0.0033)", "(1.0, 2.5e-3)", "[1, 2, 3]",
                 "array([1., 2., nan])", "array([[1.0e+00, 2.0e-03],\n       [3.0e+00, 4.0e+00]])", "np.int64(7)",
                 "tensor(0.5000, dtype=torch.float64)", "(np.float64(1.0), np.float64(2.0))", "-inf", "(1+2j)",
                 "Fraction(1, 3)", "[0, 1, ..., 9]"]:
        assert check_html.bare_number(text), text
    for text in ["", "'done'", "<Figure size 640x480 with 1 Axes>", "Text(0.5, 1.0, 'title')", "True", "None",
                 "[<matplotlib.lines.Line2D at 0x7f3a>]", "{'a': 1}", "SolveResult(D=array([1.]), iterations=3)",
                 "array([], dtype=float64)", "12 iterations", "x = 1"]:
        assert not check_html.bare_number(text), text


def _nb(*cells):
    nb = nbformat.v4.new_notebook(cells=list(cells))
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _code(source, *outputs):
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = list(outputs)
    return cell


def _result(text):          # a cell's value (what a cell without ';' leaves)
    return nbformat.v4.new_output("execute_result", data={"text/plain": text}, execution_count=1)


def _printed(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def _markdown(text):        # IPython.display.Markdown, as the chapters show their tables
    return nbformat.v4.new_output("display_data", data={"text/markdown": text,
                                                        "text/plain": "<IPython.core.display.Markdown object>"})


def _table(columns, header="column"):
    return ("| " + " | ".join(f"{header} {i}" for i in range(columns)) + " |\n" + "|---" * columns + "|\n"
            + "| " + " | ".join("1.234e-05" for _ in range(columns)) + " |\n")


WIDE_EQUATION = (r"X = " + " + ".join(rf"A_{{{i}}} B_{{{i}}}^\top C_{{{i}}}" for i in range(40)))


@pytest.fixture(scope="module")
def small_book(tmp_path_factory):
    """A Jupyter Book (this book's theme and settings, outputs stored, nothing executed) with one planted fault
    per page, and a clean page that has what may stay: narrow tables and equations, wide code, printed numbers."""
    root = tmp_path_factory.mktemp("small-book")
    (root / "_toc.yml").write_text("format: jb-book\nroot: clean\nchapters:\n"
                                   + "".join(f"  - file: {n}\n" for n in ("table", "equation", "bare", "block")))
    (root / "_config.yml").write_text(
        "title: planted\nexecute:\n  execute_notebooks: 'off'\nparse:\n  myst_enable_extensions: [amsmath, dollarmath]\n"
        "sphinx:\n  extra_extensions: [eaglebook._toolchain.mathjax_offline]\n"
        "  config:\n    nb_merge_streams: true\n    nb_render_markdown_format: myst\n")
    nbformat.write(_nb(
        nbformat.v4.new_markdown_cell("# Clean\n\nInline $x_1$ and a numbered equation\n\n```{math}\n:label: eq-ok\n"
                                      "\\hat D = B A^\\dagger C\n```\n\n" + _table(3)),
        _code("x = 1.8907248475522083e-14\nprint(x)", _printed("1.8907248475522083e-14\n10.0\n")),
        _code("s = '" + "long source line " * 40 + "'", _printed("printed " * 120 + "\n")),
        _code("Markdown(table)", _markdown(_table(4))),
        _code("'a string value'", _result("'a string value'")),
        _code("fig;")), root / "clean.ipynb")
    nbformat.write(_nb(nbformat.v4.new_markdown_cell("# Table"),
                       _code("Markdown(fidelity)", _markdown(_table(30, "fidelity")))), root / "table.ipynb")
    (root / "equation.md").write_text("# Equation\n\n```{math}\n:label: eq-wide\n" + WIDE_EQUATION + "\n```\n")
    nbformat.write(_nb(nbformat.v4.new_markdown_cell("# Bare"),
                       _code("err = 1.8907248475522083e-14\nerr", _result("1.8907248475522083e-14")),
                       _code("rng.random()\nnp.float64(0.0033)", _result("np.float64(0.0033)")),
                       _code("10.0, 2.5e-3", _result("(10.0, 0.0025)")),
                       _code("print(10.0)", _printed("10.0\n"))), root / "bare.ipynb")
    (root / "block.md").write_text("# Block\n\n<div style='width: 1500px'>a raw block, 1500 px wide</div>\n")
    r = subprocess.run([str(BIN / "jupyter-book"), "build", str(root), "-W", "-n"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    return root / "_build" / "html"


@needs_chromium
def test_check_html_fails_on_wide_tables_equations_blocks_and_bare_numbers(small_book, tmp_path):
    with browser.chromium() as drv:
        reports = {p.name: check_html.check_page(drv, small_book, p, tmp_path) for p in check_html.pages(small_book)}
    problems = {name: rep.problems for name, rep in reports.items()}
    for name in ("clean.html", "index.html", "genindex.html", "search.html"):   # index.html: the redirect
        assert problems[name] == [], f"{name}: {problems[name]}"
    assert reports["clean.html"].math >= 2

    [table] = problems["table.html"]
    assert "wider than the article column (article.bd-article" in table
    assert 'table (30 columns: "fidelity 0 | fidelity 1' in table and "code cell 1 of 1" in table
    m = re.search(r"scrolls sideways: content (\d+) px wide in a (\d+)-px box", table)
    assert m and int(m[1]) > 2 * int(m[2]), table

    [eq] = problems["equation.html"]                             # numbered after the clean page's (1)
    assert "display equation (2) #equation-eq-wide" in eq and "section #equation" in eq, eq
    m = re.search(r"content (\d+) px wide in a (\d+)-px box", eq)
    assert m and int(m[1]) > 2 * int(m[2]), eq

    bare = problems["bare.html"]
    assert len(bare) == 3, bare                                    # the printed 10.0 passes
    for i, (value, last) in enumerate([("'1.8907248475522083e-14'", "'err'"),
                                       ("'np.float64(0.0033)'", "'np.float64(0.0033)'"),
                                       ("'(10.0, 0.0025)'", "'10.0, 2.5e-3'")]):
        assert bare[i].startswith(f"bare return value under a code cell [section #bare, code cell {i + 1} of 4; "
                                  f"its last line {last}]: {value}"), bare[i]

    block = problems["block.html"]
    assert any('block "a raw block, 1500 px wide" [div; section #block] sticks out of the column: 1500 px wide'
               in p for p in block), block
    assert any(p.startswith("page wider than the 1280 px viewport") for p in block), block

    out = io.StringIO()
    assert check_html.check(small_book, tmp_path / "shots", out=out) == 1
    assert re.search(r"^check-html: 5 passed, 4 failed$", out.getvalue(), re.M), out.getvalue()


# ---- JupyterLab ----------------------------------------------------------------------------------------

def test_lab_check_reads_raw_myst_and_unrendered_glue():
    cells = [{"index": 0, "rendered": True, "source": "x", "text": "Learning goals"},
             {"index": 1, "rendered": True, "source": ":::{note}\nhi\n:::", "text": ":::{note} hi :::"},
             {"index": 2, "rendered": False, "source": "y", "text": "{cite:t}`lutz2025linear`"},
             {"index": 3, "rendered": True, "source": "rank {glue:text}`C1_rank:.0f`", "text": "rank C1_rank:.0f"}]
    problems, unglued = check_lab.markdown_problems(cells)
    assert len(problems) == 3 and "cell 1" in problems[0] and ":::{" in problems[0]
    assert "not rendered" in problems[1] and "{cite" in problems[2]
    assert unglued == ["C1_rank:.0f"]


def _ok(text):
    return {"status": "ok", "data": {"text/plain": text}, "metadata": {}}


def test_lab_check_accepts_only_evaluated_glued_numbers():
    """An {eval} number passes only when jupyterlab-myst evaluated it and shows its value (quotes stripped)."""
    e1, e2 = 'G("C1_rank", ".0f")', 'G("C1_err", ".1e")'
    src = f"rank {{eval}}`{e1}`, error {{eval}}`{e2}`."
    good = {"index": 4, "rendered": True, "source": src, "text": "rank 10, error 3.2e-15.",
            "expressions": [{"expression": e1, "result": _ok("10")}, {"expression": e2, "result": _ok("'3.2e-15'")}]}
    assert check_lab.markdown_problems([good]) == ([], [])
    unrun = {**good, "text": f"rank {e1}, error {e2}.", "expressions": []}           # before the cells ran
    assert check_lab.markdown_problems([unrun]) == ([], [e1, e2])
    error = {**good, "text": "rank 10, error GlueKeyError: nothing glued under 'C1_err'.", "expressions": [
        good["expressions"][0], {"expression": e2, "result": {"status": "error", "ename": "GlueKeyError",
                                                              "evalue": "nothing glued under 'C1_err'", "traceback": []}}]}
    problems, unglued = check_lab.markdown_problems([error])
    assert unglued == [] and problems == ["markdown cell 4: {eval}`" + e2 + "` gives GlueKeyError: nothing glued under 'C1_err'"]
    hidden = {**good, "text": "rank 10, error ."}
    assert check_lab.markdown_problems([hidden])[0] == [f"markdown cell 4: {{eval}}`{e2}` = '3.2e-15' is not in its visible text"]
    raw = {**good, "text": "rank {eval}`G(\"C1_rank\")`", "expressions": []}                # not parsed as MyST at all
    assert "shows raw MyST ['{eval']" in check_lab.markdown_problems([raw])[0][0]


@needs_chromium
@pytest.mark.slow
def test_chapter_one_in_jupyterlab(tmp_path):
    """`make check-lab`: JupyterLab opens book/01_task.md as a notebook, runs it, shows no raw MyST and every
    glued number as a number."""
    out = io.StringIO()
    rc = check_lab.check_lab("book/01_task.md", tmp_path, root=REPO, out=out)
    assert rc == 0, out.getvalue()
    m = re.search(r"(\d+) code cells run, \d+ markdown cells read, (\d+) of (\d+) glued values shown", out.getvalue())
    assert m and int(m[1]) >= 12 and int(m[2]) == int(m[3]) >= 13, out.getvalue()
    for shot in ("lab-01_task.png", "lab-01_task-glue.png"):
        assert (tmp_path / shot).read_bytes()[:4] == b"\x89PNG"


# ---- a JupyterLab save keeps the chapter a book chapter ---------------------------------------------------

def _cells(nb):
    return [(c.cell_type, c.source.strip("\n"), dict(c.metadata)) for c in nb.cells]


@pytest.mark.slow
def test_open_execute_save_round_trip_keeps_the_chapter(tmp_path, monkeypatch):
    """Through the server's contents API, as JupyterLab does: GET as a notebook, run, PUT back; the .md keeps
    its header, tags and figure options, gains none of jupyterlab-myst's {eval} results (`user_expressions`
    cell metadata, filtered by book/jupytext.toml), a second save changes nothing, and papermill still runs it."""
    import nbclient

    src = REPO / "book" / "01_task.md"
    (tmp_path / "book").mkdir()
    copy = tmp_path / "book" / "01_task.md"
    shutil.copy(src, copy)
    shutil.copy(REPO / "book" / "jupytext.toml", tmp_path / "book" / "jupytext.toml")
    shutil.copy(REPO / "_toc.yml", tmp_path / "_toc.yml")     # papermill reads a book's chapters (its toc lists them)
    monkeypatch.setenv("EAGLEBOOK_PROFILE", "ci")
    with lab_server.jupyter(tmp_path, app="server") as srv:
        model = srv.api("GET", "/api/contents/book/01_task.md?type=notebook&content=1")
        assert model["type"] == "notebook"
        nb = nbformat.from_dict(model["content"])
        nbclient.NotebookClient(nb, kernel_name="python3", timeout=600,
                                resources={"metadata": {"path": str(tmp_path / "book")}}).execute()
        assert any(o.get("output_type") == "display_data" for c in nb.cells for o in c.get("outputs", []))
        evals = 0
        for c in nb.cells:                       # what jupyterlab-myst stores when it runs a Markdown cell
            exprs = re.findall(r"\{eval\}`([^`]+)`", c.source) if c.cell_type == "markdown" else []
            if exprs:
                c.metadata["user_expressions"] = [{"expression": e, "result": {
                    "status": "ok", "data": {"text/plain": "1.0"}, "metadata": {}}} for e in exprs]
                evals += len(exprs)
        assert evals >= 13
        spec = srv.api("GET", "/api/kernelspecs")["kernelspecs"]["python3"]["spec"]
        nb.metadata.kernelspec = {"name": "python3", "display_name": spec["display_name"],   # what Lab records
                                  "language": spec["language"]}
        srv.api("PUT", "/api/contents/book/01_task.md", {"type": "notebook", "format": "json", "content": nb})
        saved = copy.read_text()
        assert "user_expressions" not in saved
        again = srv.api("GET", "/api/contents/book/01_task.md?type=notebook&content=1")
        srv.api("PUT", "/api/contents/book/01_task.md", {"type": "notebook", "format": "json",
                                                         "content": again["content"]})
        assert copy.read_text() == saved, "a second save must change nothing"

    assert saved.startswith("---\njupytext:\n  formats: md:myst\n")
    assert "\nkernelspec:\n" in saved and "\n  display_name: Python 3\n" in saved   # not renamed by the kernel
    assert re.search(r":tags: \[parameters\b", saved) and "name: fig-task-blocks" in saved
    before, after = jupytext.read(src), jupytext.reads(saved, fmt="md:myst")
    assert _cells(after) == _cells(before)                        # same sources, tags, mystnb figure options
    assert after.metadata["kernelspec"] == before.metadata["kernelspec"]

    out = tmp_path / "out.ipynb"
    r = subprocess.run([str(BIN / "papermill"), str(copy), str(out), "-p", "profile", "ci",
                        "--cwd", str(tmp_path / "book")], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    ran = nbformat.read(out, as_version=4)
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in ran.cells)


@pytest.fixture(scope="module")
def reading_book(tmp_path_factory):
    """A small Jupyter Book (outputs stored, nothing executed): a chapter as the book writes one (findings box,
    collapsed parameters, removed bookkeeping, a visible science cell that glues on its last line), and one page
    with each planted fault: no findings box, a visible ledger cell, a visible parameters cell."""
    root = tmp_path_factory.mktemp("reading-book")
    (root / "_toc.yml").write_text("format: jb-book\nroot: good\nchapters:\n"
                                   + "".join(f"  - file: {n}\n" for n in ("nofindings", "ledger", "params")))
    (root / "_config.yml").write_text("title: planted\nexecute:\n  execute_notebooks: 'off'\n"
                                      "parse:\n  myst_enable_extensions: [colon_fence]\n")
    box = nbformat.v4.new_markdown_cell("# Chapter\n\n:::{admonition} Findings\n:class: findings\n**Asked:** a. "
                                        "**Found:** b.\n:::\n\n## Section\n\ntext")
    params = nbformat.v4.new_code_cell("seed = 0", metadata={"tags": ["parameters", "hide-cell"]})
    removed = nbformat.v4.new_code_cell("ch.record(train.recorded(summary))\nch.glue(train.glued(run))",
                                        metadata={"tags": ["remove-cell"]})
    science = _code("x = run(seed)\nch.glue(C3_x=x)")
    nbformat.write(_nb(box, params, science, removed), root / "good.ipynb")
    nbformat.write(_nb(nbformat.v4.new_markdown_cell("# No findings\n\n## Section"), science), root / "nofindings.ipynb")
    nbformat.write(_nb(box, _code("import numpy as np\nch.record(train.recorded(summary))\n"
                                  "glue('C3_a', 1.0)  # the value\nled.check('C3_b', 2.0,\n          lower=1)")),
                   root / "ledger.ipynb")
    nbformat.write(_nb(box, nbformat.v4.new_code_cell("seed = 0", metadata={"tags": ["parameters"]})), root / "params.ipynb")
    r = subprocess.run([str(BIN / "jupyter-book"), "build", str(root), "-W", "-n"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    return root / "_build" / "html"


def test_check_html_wants_a_findings_box_and_no_visible_bookkeeping(reading_book):
    probs = {name: check_html.reading_problems((reading_book / f"{name}.html").read_text(), findings=True)
             for name in ("good", "nofindings", "ledger", "params")}
    assert probs["good"] == []
    assert len(probs["nofindings"]) == 1 and "no findings box" in probs["nofindings"][0]
    assert len(probs["ledger"]) == 1 and "visible bookkeeping cell" in probs["ledger"][0]
    assert len(probs["params"]) == 1 and "parameters cell" in probs["params"][0]
    # a page that needs no findings box (the reproducibility page, ...) is not asked for one
    assert check_html.reading_problems((reading_book / "nofindings.html").read_text(), findings=False) == []
    assert check_html.FINDINGS_PAGE.match("book/03_train.html") and check_html.FINDINGS_PAGE.match("book/index.html")
    assert check_html.FINDINGS_PAGE.match("book/_regimes/04_extract-sketched.html")
    assert not check_html.FINDINGS_PAGE.match("book/notation.html") and not check_html.FINDINGS_PAGE.match("index.html")


def test_only_bookkeeping_tells_a_ledger_cell_from_a_science_cell():
    from eaglebook._toolchain.bookkeeping import only_bookkeeping
    assert only_bookkeeping("ch.record(x)\nch.glue(a=1,\n        b=2)")
    assert only_bookkeeping("import numpy as np\nglue('k', 1.0)")
    assert not only_bookkeeping("x = f(1)\nch.glue(x=x)")
    assert not only_bookkeeping("import numpy as np")
    assert not only_bookkeeping("Markdown(train.summary_table(s))  # table")
    assert not only_bookkeeping("Markdown(table)")          # a display, not the ledger

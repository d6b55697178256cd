"""One prose syntax for glued numbers: ``{eval}`G("key", "fmt")``` shows the number in the built book (the
Sphinx role in ``eaglebook._toolchain.glue_eval``) and in JupyterLab (the kernel helper ``eaglebook.report.G``),
and ``tools/glue_to_eval.py`` rewrites a chapter's ``{glue:text}`` roles into it."""

from __future__ import annotations

import html
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from eaglebook import report
from eaglebook import glue as glue_module
from eaglebook._toolchain import glue_eval

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO / "tools"))
import glue_to_eval  # noqa: E402

# (key, value, format) glued by the test notebook; every format of the book's prose and a few more
VALUES = {"x": 1.234567e-4, "n": 10, "big": 4.0e16, "neg": -0.5, "txt": "within 2× of the paper", "flag": True}
PAIRS = [("x", ".1e"), ("x", ".2g"), ("x", ".3f"), ("x", None), ("n", ".0f"), ("n", "d"), ("n", None),
         ("big", ".0e"), ("neg", ".2f"), ("neg", ".0%"), ("txt", None), ("txt", "s"), ("flag", None), ("x", "")]


def _eval(key, fmt):
    return f'{{eval}}`G("{key}")`' if fmt is None else f'{{eval}}`G("{key}", "{fmt}")`'


def _glue_text(key, fmt):
    return f"{{glue:text}}`{key}`" if fmt is None else f"{{glue:text}}`{key}:{fmt}`"


# ---- the kernel side: eaglebook.report.G --------------------------------------------------------------

@pytest.fixture
def glued(monkeypatch):
    monkeypatch.setattr(glue_module, "_GLUED", {})
    for k, v in VALUES.items():
        report.glue(k, v)
    return glue_module._GLUED


def test_G_formats_a_glued_value_and_shows_it_without_quotes(glued):
    from IPython.core.formatters import format_display_data
    assert glued["n"] == 10.0 and isinstance(glued["n"], float)      # glue() stores numbers as floats
    assert report.G("x", ".1e") == "1.2e-04" and report.G("n", ".0f") == "10" and report.G("n") == "10.0"
    assert report.G("txt") == "within 2× of the paper" and report.G("neg", ".0%") == "-50%"
    v = report.G("x", ".1e")
    assert isinstance(v, str) and repr(v) == "1.2e-04"                  # what jupyterlab-myst shows
    assert format_display_data(v)[0] == {"text/plain": "1.2e-04"}       # text/plain only, no quotes


def test_G_names_an_unknown_key_and_a_bad_format(glued):
    with pytest.raises(report.GlueKeyError, match=r"nothing glued under 'C9_nope' in this kernel yet: run the cell"):
        report.G("C9_nope", ".2f")
    with pytest.raises(ValueError, match=r"G\('txt', '\.2f'\): cannot format"):
        report.G("txt", ".2f")
    with pytest.raises(TypeError, match="two strings"):
        report.G("x", 2)


def test_role_and_helper_agree_on_the_form(glued):
    """The book's role accepts exactly the calls the kernel helper is written for (same name, same arguments)."""
    assert glue_eval.FUNCTION == report.G.__name__ == "G"
    for key, fmt in PAIRS:
        expr = _eval(key, fmt)[len("{eval}`"):-1]
        assert glue_eval.glue_text(expr) == (key if fmt is None else f"{key}:{fmt}")
        assert eval(expr, {"G": report.G}) == report.G(key, "s" if fmt is None else fmt)  # noqa: S307
    for bad in ["x", "G(x)", 'G("x") + 1', 'G("a::b")', 'G("x", ".2f", 3)', 'print("x")', 'G("x", "a:b")', ""]:
        with pytest.raises(ValueError, match=re.escape('takes only G("key") or G("key", "fmt")')):
            glue_eval.parse(bad)


# ---- the book side: a tiny Sphinx build with myst-nb and the role ---------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A one-notebook book, executed by myst-nb: glue in a code cell, then the prose quotes every (key, fmt)
    both ways, then a cell of faulty roles.  Built with ``-W --keep-going`` as `make book` does."""
    src = tmp_path_factory.mktemp("book")
    (src / "conf.py").write_text(textwrap.dedent("""\
        extensions = ["myst_nb", "eaglebook._toolchain.glue_eval"]
        nb_execution_mode = "force"
        exclude_patterns = ["_build"]
        """))
    code = "from eaglebook.report import G, glue\n" + "\n".join(f"glue({k!r}, {v!r})" for k, v in VALUES.items())
    pairs = "\n".join(f"- pair {i}: [{_eval(k, f)}] [{_glue_text(k, f)}]" for i, (k, f) in enumerate(PAIRS))
    bad = '- bad: {eval}`1 + 1` and {eval}`G("missing", ".2f")` and {eval}`G("txt", ".2f")`'
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Glue test"),
                                         nbformat.v4.new_code_cell(code),
                                         nbformat.v4.new_markdown_cell(pairs),
                                         nbformat.v4.new_markdown_cell(bad)])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, src / "index.ipynb")
    out, warnings = src / "_build" / "html", src / "warnings.txt"
    r = subprocess.run([str(BIN / "sphinx-build"), "-b", "html", "-q", "-W", "--keep-going", "-w", str(warnings),
                        str(src), str(out)], capture_output=True, text=True, timeout=600)
    page = (out / "index.html").read_text() if (out / "index.html").exists() else ""
    return r, page, warnings.read_text() if warnings.exists() else r.stderr


def _pasted(page: str, i: int) -> list[str]:
    item = re.search(rf"pair {i}: \[(.*?)\] \[(.*?)\]", page).groups()
    return [html.unescape(re.sub(r"<[^>]+>", "", s)) for s in item] + list(item)


def test_book_renders_eval_exactly_as_glue_text(built, glued):
    r, page, _ = built
    assert page, r.stderr[-3000:]
    for i, (key, fmt) in enumerate(PAIRS):
        ev, gt, ev_html, gt_html = _pasted(page, i)
        assert ev_html == gt_html, (key, fmt, ev_html, gt_html)                   # same node, same classes
        assert 'class="pasted-text"' in ev_html
        assert ev == gt == report.G(key, "s" if fmt is None else fmt), (key, fmt)  # and the kernel agrees


def test_book_build_fails_on_a_bad_or_unknown_eval_and_says_why(built):
    r, page, warnings = built
    assert r.returncode != 0                                                    # -W: the build fails
    assert re.search(r"index\.ipynb:\d+: ERROR: the book's \{eval\} role takes only G\(\"key\"\) or "
                     r"G\(\"key\", \"fmt\"\) \(a glued value, see eaglebook\.report\.G\), not '1 \+ 1'", warnings), warnings
    assert "No key 'missing' found in glue data for this document." in warnings
    assert "Failed to format text/plain data" in warnings                       # G("txt", ".2f"), as {glue:text}
    assert len([w for w in warnings.splitlines() if "index.ipynb" in w]) == 3, warnings


# ---- tools/glue_to_eval.py ------------------------------------------------------------------------------

CHAPTER = """\
---
jupytext:
  formats: md:myst
---

Rank {glue:text}`C1_rank:.0f`, text {glue:text}`C1_what`, any {glue}`C1_any` in the prose.

```{code-cell} ipython3
from eaglebook import chapter
from eaglebook.report import glue  # the prose's numbers
s = "{glue:text}`C1_rank:.0f`"
```

Two on a line: {glue:text}`C1_a:.2e`/{glue:text}`C1_b:.1%`, an empty format {glue:text}`C1_c:`.
"""


def test_conversion_rewrites_the_prose_only_and_is_idempotent(tmp_path):
    new, n = glue_to_eval.convert(CHAPTER)
    assert n == 6
    assert ('Rank {eval}`G("C1_rank", ".0f")`, text {eval}`G("C1_what")`, any {eval}`G("C1_any")` in the prose.') in new
    assert 'Two on a line: {eval}`G("C1_a", ".2e")`/{eval}`G("C1_b", ".1%")`, an empty format {eval}`G("C1_c", "")`.' in new
    assert 's = "{glue:text}`C1_rank:.0f`"' in new                              # code cells are left alone
    assert "from eaglebook.report import G, glue  # the prose's numbers\n" in new
    assert glue_to_eval.convert(new) == (new, 0)
    for expr in re.findall(r"\{eval\}`([^`]*)`", new):
        glue_eval.parse(expr)                                                  # all accepted by the book's role
    p = tmp_path / "ch.md"
    p.write_text(CHAPTER)
    assert glue_to_eval.main(["--check", str(p)]) == 1 and p.read_text() == CHAPTER
    assert glue_to_eval.main([str(p)]) == 0 and p.read_text() == new
    assert glue_to_eval.main(["--check", str(p)]) == 0


@pytest.mark.parametrize("text, message", [
    ("{glue:text}`other::C1_x:.2f`\n", "glues from another document"),
    ("{glue:text}`C1 x:.2f`\n", "cannot write 'C1 x:.2f'"),
    ("{glue:md}`C1_x`\n", "only {glue:text} and {glue} roles"),
    ("{glue:text}`C1_x`\n", "no code cell has `from eaglebook.report import ...`"),
])
def test_conversion_refuses_what_eval_cannot_hold(text, message):
    with pytest.raises(glue_to_eval.ConversionError, match=re.escape(message)):
        glue_to_eval.convert(text)


def test_chapter_one_is_converted_and_imports_G():
    src = (REPO / "book" / "01_task.md").read_text()
    new, n = glue_to_eval.convert(src)
    assert n == 0 and new == src
    assert "{glue" not in src and src.count("{eval}`G(") >= 13
    assert "\nfrom eaglebook.report import G, glue\n" in src


def test_and_list_joins_items_for_a_sentence():
    from eaglebook.glue import and_list
    assert and_list([]) == "" and and_list(["a"]) == "a" and and_list(("a", "b")) == "a and b"
    assert and_list(x for x in (1, 2, 3)) == "1, 2 and 3"

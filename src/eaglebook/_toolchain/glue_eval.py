"""Sphinx extension: the book's ``{eval}`` role pastes a glued value, so that one prose syntax shows numbers
both in the built book and in JupyterLab.

The prose quotes a glued number as ``{eval}`G("C1_rank_min", ".0f")``` (format optional:
``{eval}`G("key")```).  Two readers understand it:

* **JupyterLab** (jupyterlab-myst) evaluates the expression in the chapter's running kernel when the Markdown
  cell is run, and shows its ``text/plain``: ``eaglebook.report.G`` returns the glued value, formatted.
* **The book** (this extension): myst-nb implements ``{eval}`` only in its ``inline`` execution mode, and the
  book executes in ``cache`` mode, so this extension replaces the role.  It accepts only the form above and
  hands ``key:fmt`` to myst-nb's own ``{glue:text}`` role (``PasteTextRole``: the glue lookup in the
  executed notebook and ``format_plain_text``), so the output is exactly what ``{glue:text}`key:fmt``` gives.
  An unknown key is myst-nb's glue warning; any other expression is an error naming the accepted form.
  The book builds with ``-W``, so both fail the build.

``tools/glue_to_eval.py`` rewrites a chapter's ``{glue:text}`` roles into this form.  The name ``G`` and its
two arguments are the contract with ``eaglebook.report.G`` (this toolchain module may not import the
package's numerics; ``tests/test_glue_eval.py`` checks that both sides agree).
"""

from __future__ import annotations

import re

FUNCTION = "G"                                      # eaglebook.report.G
KEY = r"[A-Za-z_][A-Za-z0-9_]*"                     # a glue key of this book (no `doc::key`: a kernel has one doc)
FMT = r"[^\"'`\\:]*"                                # a format spec: no quotes, backslashes or colons
EXPRESSION = re.compile(rf"""{FUNCTION}\(\s*(?P<q>["'])(?P<key>{KEY})(?P=q)"""
                        rf"""(?:\s*,\s*(?P<q2>["'])(?P<fmt>{FMT})(?P=q2))?\s*\)""")
FORM = f'{FUNCTION}("key") or {FUNCTION}("key", "fmt")'


def parse(expression: str) -> tuple[str, str | None]:
    """``G("key", "fmt")`` -> ``("key", "fmt")``; ``G("key")`` -> ``("key", None)``; ValueError otherwise."""
    m = EXPRESSION.fullmatch(expression.strip())
    if not m:
        raise ValueError(f"the book's {{eval}} role takes only {FORM} (a glued value, see "
                         f"eaglebook.report.G), not {expression!r}")
    return m["key"], m["fmt"]


def glue_text(expression: str) -> str:
    """The ``{glue:text}`` content that ``expression`` stands for: ``key`` or ``key:fmt``."""
    key, fmt = parse(expression)
    return key if fmt is None else f"{key}:{fmt}"


def eval_role(name, rawtext, text, lineno, inliner, options=None, content=()):
    """``{eval}`G("key", "fmt")``` -> what ``{glue:text}`key:fmt``` renders (myst-nb's own role)."""
    from docutils.utils import unescape
    from myst_nb.ext.glue.roles import PasteTextRole

    try:
        target = glue_text(unescape(text))
    except ValueError as exc:
        msg = inliner.reporter.error(str(exc), line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    return PasteTextRole()("glue:text", rawtext, target, lineno, inliner, options or {}, content)


def setup(app):
    app.setup_extension("myst_nb")            # myst-nb registers its own `eval` role; ours replaces it
    app.add_role("eval", eval_role, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


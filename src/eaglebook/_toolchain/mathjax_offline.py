"""Sphinx extension: serve MathJax from the built book, so formulas render with no network.

MathJax 3 comes from the PyPI package ``sphinx-mathjax-offline`` (a Python dependency, see
requirements.txt); this extension copies it into ``_build/html/_static/mathjax/`` and points Sphinx's
``mathjax_path`` at ``_static/mathjax/tex-chtml.js`` (TeX input, CommonHTML output, woff2 fonts beside it).

It copies the MathJax tree itself rather than loading ``sphinx-mathjax-offline`` as an extension, because
the copy has to be cleaned: MathJax's bundles carry CDN addresses as defaults of code that a browser never
runs offline (``latest.js``, which asks a CDN for the newest MathJax, and the speech-rule-engine's fallbacks
for Internet Explorer and Node).  ``latest.js`` is left out and every remaining CDN address inside a string
literal is replaced by a local, non-existent path, so the built HTML holds no reference to a CDN at all
(``eaglebook._toolchain.check_html`` verifies this, and that no page requests anything from the network).

One more CDN address comes from ``sphinx-thebe``, which Jupyter Book always loads: every page defines
``THEBE_JS_URL`` (a CDN) for a "live code" button.  The book has no such button (``launch_buttons`` are off),
so the address is replaced the same way in the inline scripts of every page.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

DIST = "sphinx-mathjax-offline"          # the PyPI distribution (its import name has the same hyphens)
ENTRY = "mathjax/tex-chtml.js"           # relative to _static
SKIP = {"latest.js"}                     # asks a CDN for the newest MathJax version: useless offline
# hosts that serve libraries: jsdelivr, unpkg, cdnjs, Google's APIs/fonts, statically, githack, gitcdn, any *cdn*
CDN = re.compile(r"https?://(?:[\w-]+\.)*(?:jsdelivr\.net|unpkg\.com|cdnjs\.com|cloudflare\.com|"
                 r"googleapis\.com|gstatic\.com|statically\.io|githack\.com|gitcdn\.xyz|[\w-]*cdn[\w-]*\.[\w.-]+)"
                 r"[^\s\"'`)<>]*", re.I)
LOCAL = "./no-cdn-offline/"              # what a removed CDN address becomes (never fetched in a browser)


def source_dir() -> Path:
    spec = importlib.util.find_spec(DIST)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"MathJax for the offline book comes from the PyPI package {DIST!r}: pip install {DIST}")
    root = Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax"
    if not (root / "tex-chtml.js").is_file():
        raise RuntimeError(f"{root} has no tex-chtml.js; reinstall {DIST}")
    return root


def copy_mathjax(src: Path, dest: Path) -> int:
    """Copy the MathJax tree ``src`` to ``dest`` without CDN references; return the number of files."""
    if dest.exists():
        shutil.rmtree(dest)
    n = 0
    for f in sorted(src.rglob("*")):
        rel = f.relative_to(src)
        if f.is_dir() or rel.name in SKIP or "__pycache__" in rel.parts:
            continue
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if f.suffix in {".js", ".json", ".css", ".html"}:
            text = f.read_text(encoding="utf-8")
            out.write_text(CDN.sub(LOCAL, text), encoding="utf-8")
        else:
            shutil.copyfile(f, out)
        n += 1
    return n


def _config_inited(app, config) -> None:
    config.mathjax_path = ENTRY


def _page_context(app, pagename, templatename, context, doctree) -> None:
    """Replace CDN addresses inside inline scripts (sphinx-thebe's THEBE_JS_URL) on every page."""
    from sphinx.builders.html._assets import _JavaScript

    files = context.get("script_files") or []
    for i, js in enumerate(files):
        body = js.attributes.get("body") if isinstance(js, _JavaScript) else None
        if body and CDN.search(body):
            files[i] = _JavaScript(js.filename, priority=js.priority, **{**js.attributes, "body": CDN.sub(LOCAL, body)})


def _build_finished(app, exc) -> None:
    if exc is None and app.builder.format == "html":
        copy_mathjax(source_dir(), Path(app.outdir) / "_static" / "mathjax")


def setup(app):
    source_dir()                                   # fail at start-up, not after executing every chapter
    app.connect("config-inited", _config_inited, priority=900)
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Sphinx extension: generate the chapter variant pages before Sphinx reads the book, so that the standard
``jupyter-book build .`` builds them.

``_toc.yml`` lists pages that are not sources but generated notebooks: chapter 4 executed for each other
regime (``book/_regimes/04_extract-<regime>.ipynb``, see ``eaglebook.variants``).  A fresh clone has none of
them.  This extension runs ``python -m eaglebook.variants`` (with the build's own Python, in a subprocess:
the toolchain imports none of the package's numerics) when Sphinx's configuration is read, before it looks
for source files; the step keeps every page that is up to date, so a rebuild costs nothing.  It gets the
build's execution cache (``--execution-cache``), which it empties when the package source changed.  Its
output goes to the build's terminal; a failure stops the build.

It also sets ``TQDM_DISABLE=1`` for the build (unless set), as ``make book`` does: the chapters' kernels
inherit it, so progress bars do not end up in the HTML whichever command built it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MODULE = "eaglebook.variants"


def command(execution_cache: Path | None = None) -> list[str]:
    """The variants step as run by the build."""
    cmd = [sys.executable, "-m", MODULE]
    return cmd + (["--execution-cache", str(execution_cache)] if execution_cache is not None else [])


def _execution_cache(app) -> Path:
    """Where myst-nb keeps the build's execution cache (its default: ``<outdir>/../.jupyter_cache``)."""
    configured = getattr(app.config, "nb_execution_cache_path", "") or ""
    return Path(configured).resolve() if configured else Path(app.outdir).parent.joinpath(".jupyter_cache").resolve()


def _config_inited(app, config) -> None:
    from sphinx.errors import ExtensionError
    from sphinx.util import logging

    src = Path(app.srcdir)
    if not ((src / "_toc.yml").is_file() and (src / "book").is_dir()):      # not the book's repository
        return
    os.environ.setdefault("TQDM_DISABLE", "1")
    cmd = command(_execution_cache(app))
    logging.getLogger(__name__).info("[variant_pages] %s", " ".join(cmd[1:]))
    rc = subprocess.run(cmd, cwd=app.srcdir, env=dict(os.environ)).returncode
    if rc != 0:
        raise ExtensionError(f"the chapter variant pages could not be generated: `python -m {MODULE}` "
                             f"exited with status {rc} (its output is above)")


def setup(app):
    # before sphinx-external-toc (priority 900) reads _toc.yml and before Sphinx looks for source files
    app.connect("config-inited", _config_inited, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Let papermill read this book's jupytext (MyST Markdown) chapters directly, and nothing else.

``papermill book/01_task.md out.ipynb -p seed 3`` fails out of the box (papermill expects JSON).  This
handler is registered under the ``papermill.io`` entry-point group for local path prefixes (``book/``,
``./``, ``../``, ``/``), so papermill imports it in every run; importing it changes nothing.  A path is
handled here only when it is one of *this book's* chapters (:func:`book_chapter`: a ``.md``/``.py`` file
with jupytext front matter, listed in the ``_toc.yml`` of a directory above it); it is read with jupytext
and, for that run only, an unknown ``-p`` name becomes an error: ``papermill book/01_task.md out.ipynb -p
sed 3`` stops before running anything with ``ValueError: unknown parameter 'sed' for this notebook; its
parameters are: profile, seed`` instead of papermill's warning and a run with the default seed.  Every
other path goes to papermill's own local handler untouched, so any other notebook (``papermill
mine.ipynb out.ipynb -p beta 2``) behaves exactly as with papermill alone.  Outputs of a chapter run
must be ``.ipynb``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import warnings
from pathlib import Path

TEXT_SUFFIXES = {".md", ".py"}
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

# papermill warns that a chapter "does not end in one of ['.ipynb', '.json']" before it hands the path to
# this handler; the filter matches this book's chapter file names only (NN_slug.md, as in book/05_eagle.md).
warnings.filterwarnings("ignore", r"The specified file \((.*[/\\])?\d\d_[\w-]+\.md\) does not end in one of",
                        UserWarning)


def _is_jupytext(path: Path) -> bool:
    try:
        head = path.read_text(encoding="utf-8").split("\n---", 1)[0]
    except (OSError, UnicodeDecodeError):
        return False
    return head.startswith("---") and "jupytext:" in head


def book_chapter(path) -> bool:
    """True when ``path`` is one of this book's jupytext chapters: a ``.md``/``.py`` file with jupytext
    front matter whose path (relative to the nearest directory above it that has a ``_toc.yml``, without
    the suffix) is listed in that ``_toc.yml``."""
    if not isinstance(path, (str, os.PathLike)):
        return False
    p = Path(os.fspath(path))
    if p.suffix not in TEXT_SUFFIXES or not p.is_file():
        return False
    p = p.resolve()
    for root in p.parents:
        toc = root / "_toc.yml"
        if toc.is_file():
            rel = re.escape(p.relative_to(root).with_suffix("").as_posix())
            try:
                text = toc.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return False
            listed = re.search(rf"^\s*(-\s*)?(file|root):\s*['\"]?{rel}(\.md|\.py)?['\"]?\s*(#.*)?$", text, re.M)
            return bool(listed) and _is_jupytext(p)
    return False


class UnknownParameterFilter(logging.Filter):
    """Turn papermill's "Passed unknown parameter: NAME" warning into a ``ValueError`` for this book's
    chapters (other notebooks keep papermill's warning).

    papermill compares the ``-p`` names with the parameters cell (``_infer_parameters``) and only logs a
    warning for an unknown one.  The filter raises instead (logging does not catch exceptions raised by
    filters), naming the unknown parameters and the notebook's own, which it reads from papermill's
    ``execute_notebook`` frame (where it also finds the input path).
    """

    PREFIX = "Passed unknown parameter: "

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        if not msg.startswith(self.PREFIX):
            return True
        unknown, known, path = [msg[len(self.PREFIX):]], None, None
        frame = sys._getframe()
        while frame is not None:
            loc = frame.f_locals
            if "parameter_predefined" in loc and "parameters" in loc:
                known = sorted(loc["parameter_predefined"])
                unknown = [p for p in loc["parameters"] if p not in loc["parameter_predefined"]]
                path = loc.get("input_path")
                break
            frame = frame.f_back
        if path is None or not book_chapter(path):
            return True                     # not one of our chapters: papermill's own behaviour
        names = ", ".join(repr(p) for p in unknown)
        have = f"its parameters are: {', '.join(known)}" if known else "it has no parameters cell"
        raise ValueError(f"unknown parameter {names} for this notebook; {have}")


def install_unknown_parameter_check() -> None:
    """Attach :class:`UnknownParameterFilter` to papermill's logger (idempotent).  Called when a chapter
    is read, never at import."""
    log = logging.getLogger("papermill")
    if not any(isinstance(f, UnknownParameterFilter) for f in log.filters):
        log.addFilter(UnknownParameterFilter())


def _local():
    from papermill.iorw import papermill_io
    return papermill_io.get_handler("local")


def read_text_notebook(path: str) -> str:
    """Read a jupytext file into nbformat JSON, with a default Python kernelspec."""
    import jupytext
    import nbformat

    nb = jupytext.read(path)
    ks = nb.metadata.setdefault("kernelspec", dict(KERNELSPEC))
    for k, v in KERNELSPEC.items():   # papermill needs the language to find the parameters cell
        ks.setdefault(k, v)
    return nbformat.writes(nb)


def _from_chapter(buf) -> bool:
    """Whether a notebook papermill is about to write was run from one of this book's chapters."""
    try:
        meta = json.loads(buf).get("metadata", {}).get("papermill", {})
    except (TypeError, ValueError, AttributeError):
        return False
    return book_chapter(meta.get("input_path"))


class JupytextHandler:
    """papermill I/O handler: jupytext for this book's chapters, papermill's local handler otherwise."""

    def read(self, path):
        if book_chapter(path):
            install_unknown_parameter_check()
            return read_text_notebook(path)
        return _local().read(path)

    def write(self, buf, path):
        if os.path.splitext(path)[1] in TEXT_SUFFIXES and _from_chapter(buf):
            raise ValueError(f"papermill output {path!r} must be an .ipynb file, not a text notebook")
        return _local().write(buf, path)

    def listdir(self, path):
        return _local().listdir(path)

    def pretty_path(self, path):
        return _local().pretty_path(path)


#: The entry point names this instance.
handler = JupytextHandler()

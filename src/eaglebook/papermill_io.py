"""Let papermill read the book's jupytext (MyST Markdown) chapters directly.

``papermill book/01_task.md out.ipynb -p seed 3`` fails out of the box (papermill expects JSON).
This handler is registered under the ``papermill.io`` entry-point group for path prefixes (``book/``,
``./``, ``../``, ``/``); it converts ``.md``/``.py`` sources with jupytext and hands everything else to
papermill's own local handler.  Outputs must be ``.ipynb``.
"""

from __future__ import annotations

import os
import warnings

TEXT_SUFFIXES = {".md", ".py"}
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

warnings.filterwarnings("ignore", r"The specified file .* does not end in one of", UserWarning)


def _local():
    from papermill.iorw import papermill_io
    return papermill_io.get_handler("local")


def read_text_notebook(path: str) -> str:
    """Read a jupytext file into nbformat JSON, with a default Python kernelspec."""
    import jupytext
    import nbformat

    nb = jupytext.read(path)
    nb.metadata.setdefault("kernelspec", dict(KERNELSPEC))
    return nbformat.writes(nb)


class JupytextHandler:
    """papermill I/O handler: jupytext for text notebooks, the local handler otherwise."""

    def read(self, path):
        if os.path.splitext(path)[1] in TEXT_SUFFIXES:
            return read_text_notebook(path)
        return _local().read(path)

    def write(self, buf, path):
        if os.path.splitext(path)[1] in TEXT_SUFFIXES:
            raise ValueError(f"papermill output {path!r} must be an .ipynb file, not a text notebook")
        return _local().write(buf, path)

    def listdir(self, path):
        return _local().listdir(path)

    def pretty_path(self, path):
        return path


#: The entry point names this instance.
handler = JupytextHandler()

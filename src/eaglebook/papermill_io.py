"""Let papermill read the book's jupytext (MyST Markdown) chapters directly.

``papermill book/01_task.md out.ipynb -p seed 3`` fails out of the box (papermill expects JSON).
This handler is registered under the ``papermill.io`` entry-point group for path prefixes (``book/``,
``./``, ``../``, ``/``); it converts ``.md``/``.py`` sources with jupytext and hands everything else to
papermill's own local handler.  Outputs must be ``.ipynb``.

Importing this module (papermill does so when it loads its I/O entry points, before any notebook is
read) also makes an unknown parameter an error: ``papermill book/01_task.md out.ipynb -p sed 3``
stops before running anything with ``ValueError: unknown parameter 'sed' for this notebook; its
parameters are: profile, seed`` instead of papermill's warning and a run with the default seed.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

TEXT_SUFFIXES = {".md", ".py"}
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

warnings.filterwarnings("ignore", r"The specified file .* does not end in one of", UserWarning)


class UnknownParameterFilter(logging.Filter):
    """Turn papermill's "Passed unknown parameter: NAME" warning into a ``ValueError``.

    papermill compares the ``-p`` names with the parameters cell (``_infer_parameters``) and only logs a
    warning for an unknown one.  The filter raises instead (logging does not catch exceptions raised by
    filters), naming the unknown parameters and the notebook's own, which it reads from papermill's
    frame when available.
    """

    PREFIX = "Passed unknown parameter: "

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        if not msg.startswith(self.PREFIX):
            return True
        unknown, known = [msg[len(self.PREFIX):]], None
        frame = sys._getframe()
        while frame is not None:
            loc = frame.f_locals
            if "parameter_predefined" in loc and "parameters" in loc:
                known = sorted(loc["parameter_predefined"])
                unknown = [p for p in loc["parameters"] if p not in loc["parameter_predefined"]]
                break
            frame = frame.f_back
        names = ", ".join(repr(p) for p in unknown)
        if known is None:
            have = "see its parameters cell"
        else:
            have = f"its parameters are: {', '.join(known)}" if known else "it has no parameters cell"
        raise ValueError(f"unknown parameter {names} for this notebook; {have}")


def install_unknown_parameter_check() -> None:
    """Attach :class:`UnknownParameterFilter` to papermill's logger (idempotent)."""
    log = logging.getLogger("papermill")
    if not any(isinstance(f, UnknownParameterFilter) for f in log.filters):
        log.addFilter(UnknownParameterFilter())


install_unknown_parameter_check()


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

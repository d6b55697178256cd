"""Let ``pytest --nbval`` (and ``--nbval-lax``) collect the book's MyST Markdown chapters.

nbval collects only ``.ipynb`` files; this pytest plugin collects ``.md`` files whose front matter
declares ``jupytext:`` and hands nbval the notebook jupytext reads from them.  Enabled from the
repository's ``conftest.py`` (``pytest_plugins = ["eaglebook.nbval_plugin"]``).
"""

from __future__ import annotations

from unittest import mock

from .papermill_io import KERNELSPEC


def _is_jupytext_md(path) -> bool:
    head = path.read_text(encoding="utf-8").split("\n---", 1)[0]
    return head.startswith("---") and "jupytext:" in head


def pytest_collect_file(file_path, parent):
    opt = parent.config.option
    if not (getattr(opt, "nbval", False) or getattr(opt, "nbval_lax", False)):
        return None
    if file_path.suffix != ".md" or not _is_jupytext_md(file_path):
        return None
    import jupytext
    from nbval.plugin import IPyNbFile

    class JupytextNbFile(IPyNbFile):
        def collect(self):
            nb = jupytext.read(str(self.path))
            nb.metadata.setdefault("kernelspec", dict(KERNELSPEC))
            with mock.patch("nbval.plugin.nbformat.read", return_value=nb):
                yield from super().collect()

    return JupytextNbFile.from_parent(parent, path=file_path)

"""Sphinx extension: a build you can watch.  ``make book`` (``jupyter-book build .``) prints one line when it
starts reading a page and one when the page is done, with the time it took (for a chapter, its execution, or
"from the execution cache"), so that a half-hour paper build shows where it is instead of looking like a hang::

    [book] 07_benchmarks: executing ...
    [book] 07_benchmarks: 11 min 52 s (executed)

and, at the end, the slowest pages.  myst-nb executes a notebook while Sphinx reads it (``source-read`` comes
before, ``doctree-read`` after), so the time between the two is the page's execution plus its parse.  The
lines go to stderr, unbuffered, whatever Sphinx's verbosity.
"""

from __future__ import annotations

import os
import sys
import time

PREFIX = "[book]"


def duration(seconds: float) -> str:
    """A wall time as people read it: ``0.4 s``, ``12 s``, ``3 min 05 s``, ``1 h 02 min``."""
    s = max(0.0, float(seconds))
    if s < 10:
        return f"{s:.1f} s"
    if s < 60:
        return f"{s:.0f} s"
    m, sec = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m} min {sec:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def _say(msg: str) -> None:
    print(f"{PREFIX} {msg}", file=sys.stderr, flush=True)


def _notebook(app, docname: str) -> bool:
    try:
        path = str(app.env.doc2path(docname))     # a str in some Sphinx versions, a path in others
    except Exception:   # noqa: BLE001  (a page Sphinx cannot map is not ours to time)
        return False
    return os.path.splitext(path)[1] in (".md", ".ipynb") and docname.startswith("book/")


def _exec_data(app, docname: str) -> dict | None:
    try:
        from myst_nb.sphinx_ import NbMetadataCollector
        return NbMetadataCollector.get_exec_data(app.env, docname)
    except Exception:   # noqa: BLE001  (another myst-nb: no execution data, only the time)
        return None


def _source_read(app, docname, source) -> None:
    if not _notebook(app, docname):
        return
    app._eaglebook_started = getattr(app, "_eaglebook_started", {})
    app._eaglebook_started[docname] = (time.perf_counter(), time.time())
    _say(f"{docname.removeprefix('book/')}: reading (executing it unless the execution cache has it) ...")


def _doctree_read(app, doctree) -> None:
    docname = app.env.docname
    started = getattr(app, "_eaglebook_started", {}).pop(docname, None)
    if started is None:
        return
    took = time.perf_counter() - started[0]
    data = _exec_data(app, docname)
    how = ""
    if data:
        fresh = data.get("mtime", 0) >= started[1] - 1
        how = (f" (executed in {duration(data['runtime'])})" if fresh and data.get("runtime") is not None
               else " (from the execution cache)" if not fresh else "")
    app._eaglebook_times = getattr(app, "_eaglebook_times", {})
    app._eaglebook_times[docname] = took
    _say(f"{docname.removeprefix('book/')}: {duration(took)}{how}")


def _build_finished(app, exception) -> None:
    times = getattr(app, "_eaglebook_times", {})
    if not times:
        return
    slow = sorted(times.items(), key=lambda kv: -kv[1])[:5]
    _say(f"{len(times)} pages read in {duration(sum(times.values()))}; slowest: "
         + ", ".join(f"{k.removeprefix('book/')} {duration(v)}" for k, v in slow))


def setup(app):
    app.connect("source-read", _source_read)
    app.connect("doctree-read", _doctree_read)
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

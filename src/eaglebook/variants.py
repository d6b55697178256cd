"""Chapter variants for the HTML book: one source chapter executed once per value of a parameter.

Chapter 4 takes a ``regime`` parameter; the book shows it for every regime of the profile
(:attr:`eaglebook.config.Profile.regimes`: the registry's paper regimes, and in the ``ci`` profile a toy regime).
The source chapter (``book/04_extract.md``) renders the default regime; :func:`build` executes it with
papermill for each other regime into ``book/_regimes/04_extract-<regime>.ipynb`` and removes the pages of
regimes the profile does not show.  ``_toc.yml`` lists the folder's pages under the chapter (a ``glob``, in
the registry's order for the paper's regimes: distributed, sketched; then the others), and the book build
renders them without executing again.  Labels and figure names get a ``-<regime>`` suffix, so they do not
clash with the source chapter's.

Before that, :func:`refresh_execution_cache` empties the book's execution cache when the package source
changed, so that no chapter shows results of older code.

Each generated notebook records a key: a hash of the chapter source, the package source, the profile and
the parameter.  A notebook whose key matches is kept, so a rebuild costs nothing; anything else is
executed again (atomically: a failed or interrupted run leaves no half-written notebook).  The book build
runs it as ``python -m eaglebook.variants`` before Sphinx reads the sources (the Sphinx extension
``eaglebook._toolchain.variant_pages``, listed in ``_config.yml``), so ``jupyter-book build .`` and
``make book`` both render the pages; run it alone to generate them without building.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from . import config, report
from .cache import repo_root

#: chapter → the parameter whose values are rendered as extra pages (:func:`values`); the source renders its
#: default value.
VARIANTS = {"04_extract": "regime"}
FOLDER = "_regimes"
_KEY = "eaglebook_variant_key"


def default(repo: Path, chapter: str, param: str) -> str:
    """The value the chapter's parameters cell gives ``param`` (a string literal)."""
    m = re.search(rf"^{param} = \"([^\"]+)\"", (repo / "book" / f"{chapter}.md").read_text(), re.M)
    if m is None:
        raise ValueError(f"book/{chapter}.md has no parameter {param} = \"...\"")
    return m.group(1)


def values(chapter: str, profile: str | None = None, repo: Path | None = None) -> tuple[str, ...]:
    """The values of ``chapter``'s parameter rendered as extra pages under ``profile``: every regime the profile
    shows (:attr:`eaglebook.config.Profile.regimes`, from the registry) but the chapter's default."""
    repo = repo or repo_root()
    own = default(repo, chapter, VARIANTS[chapter])
    return tuple(r for r in config.get(profile).regimes if r != own)


def variant_path(repo: Path, chapter: str, value: str) -> Path:
    """Where the generated notebook of ``chapter`` for ``value`` lives."""
    return repo / "book" / FOLDER / f"{chapter}-{value}.ipynb"


def variant_key(repo: Path, chapter: str, param: str, value: str, profile: str) -> str:
    """What a generated notebook must have been executed with to be reused."""
    src = (repo / "book" / f"{chapter}.md").read_bytes()
    blob = json.dumps([hashlib.sha256(src).hexdigest(), report.code_hash(), profile, param, value])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def merge_parameters(nb: dict) -> dict:
    """Show one parameters cell: the values papermill injected, in the place of the chapter's defaults.

    papermill keeps the chapter's ``parameters`` cell and adds an ``injected-parameters`` cell after it; a
    reader of the page would see two.  The injected cell's source replaces the parameters cell's (which
    keeps its tag) and the injected cell is dropped.  Neither has outputs."""
    tags = lambda c: c.get("metadata", {}).get("tags", [])
    injected = [c for c in nb["cells"] if "injected-parameters" in tags(c)]
    params = [c for c in nb["cells"] if "parameters" in tags(c)]
    if injected and params:
        src = injected[0]["source"]
        src = "".join(src) if isinstance(src, list) else src
        params[0]["source"] = "\n".join(l for l in src.splitlines() if l.strip() != "# Parameters")
        nb["cells"] = [c for c in nb["cells"] if c is not injected[0]]
    return nb


def figure_note(nb: dict, chapter: str, suffix: str) -> dict:
    """Add, under the heading, a note that this page is ``chapter`` for another parameter value and which of
    the chapter's figures each of its figures repeats (their numbers run on through the book)."""
    def drawn(c):   # the figure exists on a page only where its cell drew an image
        return any(k.startswith("image/") for o in c.get("outputs", []) for k in o.get("data", {}))

    figs = [c for c in nb["cells"] if c.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name") and drawn(c)]
    own = lambda c: "regime-specific" in c.get("metadata", {}).get("tags", [])
    name = lambda c: c["metadata"]["mystnb"]["figure"]["name"]
    pairs = [(name(c), name(c)[:-len(suffix) - 1]) for c in figs if not own(c) and name(c).endswith(f"-{suffix}")]
    extra = [name(c) for c in figs if own(c)]
    text = (f"This page is {{ref}}`the chapter <ch-{chapter.split('_', 1)[1]}>` executed for the {suffix} regime "
            "(its parameters cell shows the parameters it was given; the others keep the chapter's defaults). Its figures are numbered on through the book; "
            "each repeats one of the chapter's: "
            + ", ".join(f"{{numref}}`{n}` is {{numref}}`{base}`" for n, base in pairs)
            + ("" if not extra else "; " + ", ".join(f"{{numref}}`{n}`" for n in extra) + " only this regime has")
            + ".")
    for i, cell in enumerate(nb["cells"]):
        src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if cell["cell_type"] == "markdown" and re.search(r"^# ", src, flags=re.M):
            note = {"cell_type": "markdown", "metadata": {}, "source": f":::{{seealso}}\n{text}\n:::"}
            nb["cells"].insert(i + 1, note)
            break
    return nb


def relabel(nb: dict, suffix: str, title: str) -> dict:
    """Give every MyST label, figure name and reference to them a ``-suffix``; add ``title`` to the heading."""
    labels: set[str] = set()
    for cell in nb["cells"]:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        labels |= set(re.findall(r"^\(([\w-]+)\)=\s*$", src, flags=re.M))
        labels |= set(re.findall(r"^:label:\s*([\w-]+)", src, flags=re.M))
        fig = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if "name" in fig:
            labels.add(fig["name"])
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(labels, key=len, reverse=True))) + r")(?![\w-])")
    heading_done = False
    for cell in nb["cells"]:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown" and labels:
            src = pattern.sub(lambda m: f"{m.group(1)}-{suffix}", src)
            if not heading_done and re.search(r"^# ", src, flags=re.M):
                src = re.sub(r"^(# .*)$", lambda m: f"{m.group(1)}: {title}", src, count=1, flags=re.M)
                heading_done = True
        cell["source"] = src
        fig = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if "name" in fig:
            fig["name"] = f"{fig['name']}-{suffix}"
    return nb


def refresh_execution_cache(repo: Path, log=print, cache: Path | None = None) -> bool:
    """Empty the book build's execution cache (``cache``, default ``<repo>/_build/.jupyter_cache``) when the
    package source changed.

    The book build re-executes a chapter only when its own text changes; a chapter whose results depend
    on changed package code must run again too, or its outputs and claims ledger would be stale (the
    scorecard drops ledgers of older code).  Returns True when the cache was emptied."""
    import shutil

    jc = Path(cache) if cache is not None else repo / "_build" / ".jupyter_cache"
    stamp = jc.parent / ".eaglebook-code"
    code = report.code_hash()
    stale = jc.exists() and (not stamp.is_file() or stamp.read_text().strip() != code)
    if stale:
        log(f"package source changed ({code}): emptying {jc} so that every chapter runs again")
        shutil.rmtree(jc)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(code + "\n")
    return stale


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s" if m else f"{seconds:.1f} s"


def render(repo: Path, chapter: str, value: str, profile: str, path: Path, key: str = "") -> None:
    """Execute ``chapter`` with its parameter set to ``value`` (profile ``profile``) into the page ``path``:
    one parameters cell, every label suffixed, a note under the heading (atomically: a failed or interrupted run
    leaves no half-written page)."""
    import papermill as pm

    param = VARIANTS[chapter]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".ipynb", dir=path.parent, prefix=".tmp-")
    os.close(fd)
    try:
        pm.execute_notebook(str(repo / "book" / f"{chapter}.md"), tmp, parameters={param: value, "profile": profile},
                            cwd=str(repo / "book"), progress_bar=False, kernel_name="python3")
        nb = relabel(merge_parameters(json.loads(Path(tmp).read_text())), value, f"the {value} regime")
        nb = figure_note(nb, chapter, value)
        nb["metadata"][_KEY] = key
        Path(tmp).write_text(json.dumps(nb, indent=1))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def build(profile: str | None = None, *, force: bool = False, log=print,
          execution_cache: Path | None = None) -> list[Path]:
    """Execute every missing or stale variant notebook of the profile, and remove the pages of values it does not
    show; return the pages' paths.  ``execution_cache``: the book build's jupyter-cache folder (see
    :func:`refresh_execution_cache`)."""
    repo = repo_root()
    if repo is None:
        raise RuntimeError("eaglebook.variants must run inside the book's repository")
    prof = config.resolve_profile(profile)
    refresh_execution_cache(repo, log, execution_cache)
    out = []
    for chapter, param in VARIANTS.items():
        pages = values(chapter, prof, repo)
        for old in sorted((repo / "book" / FOLDER).glob(f"{chapter}-*.ipynb")):   # a regime this profile does not show
            if old.stem[len(chapter) + 1:] not in pages:
                log(f"{old.relative_to(repo)}: removed (not a page of the {prof} profile)")
                old.unlink()
        for value in pages:
            path = variant_path(repo, chapter, value)
            key = variant_key(repo, chapter, param, value, prof)
            out.append(path)
            if not force and path.is_file():
                try:
                    if json.loads(path.read_text())["metadata"].get(_KEY) == key:
                        log(f"{path.relative_to(repo)}: up to date")
                        continue
                except (ValueError, KeyError):
                    pass
            log(f"{path.relative_to(repo)}: executing {chapter} with {param}={value!r} (profile {prof})")
            t0 = time.perf_counter()
            render(repo, chapter, value, prof, path, key)
            log(f"{path.relative_to(repo)}: executed in {_duration(time.perf_counter() - t0)}")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m eaglebook.variants", description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default=None, help="paper or ci (default: $EAGLEBOOK_PROFILE, else paper)")
    ap.add_argument("--force", action="store_true", help="execute even when up to date")
    ap.add_argument("--execution-cache", type=Path, default=None, metavar="DIR",
                    help="the book build's jupyter-cache (default: _build/.jupyter_cache)")
    a = ap.parse_args(argv)
    try:
        config.resolve_profile(a.profile)      # a bad --profile or $EAGLEBOOK_PROFILE: one line, before any work
    except ValueError as e:
        ap.exit(2, f"{ap.prog}: error: {e}\n")
    build(a.profile, force=a.force, log=lambda m: print(f"[book] {m}", file=sys.stderr, flush=True),
          execution_cache=a.execution_cache)


if __name__ == "__main__":
    main()

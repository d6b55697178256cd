"""Chapter variants for the HTML book: one source chapter executed once per value of a parameter.

Chapter 4 takes a ``regime`` parameter; the book shows it for every regime.  The source chapter
(``book/04_extract.md``) renders the default regime; :func:`build` executes it with papermill for each
other regime into ``book/_regimes/04_extract-<regime>.ipynb``, which ``_toc.yml`` lists under the chapter
and the book build renders without executing again.  Labels and figure names get a ``-<regime>`` suffix,
so they do not clash with the source chapter's.

Before that, :func:`refresh_execution_cache` empties the book's execution cache when the package source
changed, so that no chapter shows results of older code.

Each generated notebook records a key: a hash of the chapter source, the package source, the profile and
the parameter.  A notebook whose key matches is kept, so a rebuild costs nothing; anything else is
executed again (atomically: a failed or interrupted run leaves no half-written notebook).  Run it as
``python -m eaglebook.variants`` (the ``make book`` target does, before the build).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

from . import config, report
from .cache import repo_root

#: chapter → (parameter, the values rendered as extra pages); the source renders its default value.
VARIANTS = {"04_extract": ("regime", ("distributed", "sketched"))}
FOLDER = "_regimes"
_KEY = "eaglebook_variant_key"


def variant_path(repo: Path, chapter: str, value: str) -> Path:
    """Where the generated notebook of ``chapter`` for ``value`` lives."""
    return repo / "book" / FOLDER / f"{chapter}-{value}.ipynb"


def variant_key(repo: Path, chapter: str, param: str, value: str, profile: str) -> str:
    """What a generated notebook must have been executed with to be reused."""
    src = (repo / "book" / f"{chapter}.md").read_bytes()
    blob = json.dumps([hashlib.sha256(src).hexdigest(), report.code_hash(), profile, param, value])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


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


def refresh_execution_cache(repo: Path, log=print) -> bool:
    """Empty the book build's execution cache (``_build/.jupyter_cache``) when the package source changed.

    The book build re-executes a chapter only when its own text changes; a chapter whose results depend
    on changed package code must run again too, or its outputs and claims ledger would be stale (the
    scorecard drops ledgers of older code).  Returns True when the cache was emptied."""
    import shutil

    jc = repo / "_build" / ".jupyter_cache"
    stamp = repo / "_build" / ".eaglebook-code"
    code = report.code_hash()
    stale = jc.exists() and (not stamp.is_file() or stamp.read_text().strip() != code)
    if stale:
        log(f"package source changed ({code}): emptying {jc.relative_to(repo)} so that every chapter runs again")
        shutil.rmtree(jc)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(code + "\n")
    return stale


def build(profile: str | None = None, *, force: bool = False, log=print) -> list[Path]:
    """Execute every missing or stale variant notebook; return their paths."""
    import papermill as pm

    repo = repo_root()
    if repo is None:
        raise RuntimeError("eaglebook.variants must run inside the book's repository")
    prof = config.resolve_profile(profile)
    refresh_execution_cache(repo, log)
    out = []
    for chapter, (param, values) in VARIANTS.items():
        for value in values:
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
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(suffix=".ipynb", dir=path.parent, prefix=".tmp-")
            os.close(fd)
            try:
                pm.execute_notebook(str(repo / "book" / f"{chapter}.md"), tmp, parameters={param: value, "profile": prof},
                                    cwd=str(repo / "book"), progress_bar=False, kernel_name="python3")
                nb = relabel(json.loads(Path(tmp).read_text()), value, f"the {value} regime")
                nb["metadata"][_KEY] = key
                Path(tmp).write_text(json.dumps(nb, indent=1))
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m eaglebook.variants", description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default=None, help="paper or ci (default: $EAGLEBOOK_PROFILE, else paper)")
    ap.add_argument("--force", action="store_true", help="execute even when up to date")
    a = ap.parse_args(argv)
    build(a.profile, force=a.force, log=lambda m: print(m, file=sys.stderr))


if __name__ == "__main__":
    main()

"""Provenance: what a result records about the code, the run and the machine that produced it.

- :func:`provenance`: package version, git commit, a hash of the package source and of the chapter source,
  profile, parameters, date (and, filled in later by the ledger, the config hash of every cached model used);
- :func:`machine`: the machine a timing was taken on (CPU model, cores, the threads in use, the BLAS
  library, the load average), recorded with every timing table (see :mod:`eaglebook.timing`).
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import time
from pathlib import Path

from .cache import repo_root

__all__ = ["code_hash", "chapter_hash", "git_commit", "provenance", "machine", "load_average"]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def code_hash() -> str:
    """Hash of the installed package's Python source (every ``*.py`` under ``eaglebook/``, by content)."""
    pkg = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(pkg.rglob("*.py")):
        h.update(str(f.relative_to(pkg)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def chapter_hash(chapter: str) -> str | None:
    """Hash of ``book/<chapter>.md`` (None outside a repository)."""
    repo = repo_root()
    f = repo / "book" / f"{chapter}.md" if repo else None
    return _sha(f.read_bytes()) if f is not None and f.is_file() else None


def git_commit() -> str:
    """The repository's HEAD commit (short), with ``-dirty`` when tracked files differ from it; ``unknown``
    outside a git checkout."""
    repo = repo_root()
    try:
        head = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=repo, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError, TypeError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def provenance(chapter: str, profile: str, parameters: dict | None = None, *, settings: dict | None = None) -> dict:
    """What a ledger records about the code and the run that produced it; ``settings``: the knobs that
    changed the profile's setting (``eaglebook.config.KNOBS``), empty for the book's own runs."""
    from . import __version__
    return dict(version=__version__, commit=git_commit(), code=code_hash(), chapter_source=chapter_hash(chapter),
                profile=profile, parameters=dict(parameters or {}), settings=dict(settings or {}),
                date=time.strftime("%Y-%m-%d %H:%M:%S"), models={})


def load_average() -> float | None:
    """The 1-minute load average (None where the OS does not report one)."""
    try:
        return float(os.getloadavg()[0])
    except (OSError, AttributeError):
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _blas() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    libs = [f"{i.get('internal_api', '?')} {i.get('version') or ''}".strip() for i in threadpool_info()
            if i.get("user_api") == "blas"]
    return ", ".join(dict.fromkeys(libs)) or "none found"


def machine(threads: int | None = None) -> dict:
    """The machine a timing is taken on: CPU model, logical cores (and those this process may use), the
    threads in use (``threads``, else torch's setting), the BLAS library and the 1-minute load average now.
    Record it before *and* after a timing table (the load can change while it runs)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    if threads is None:
        try:
            import torch
            threads = torch.get_num_threads()
        except ImportError:
            threads = None
    return dict(cpu=_cpu_model(), cores=os.cpu_count(), usable_cores=usable, threads=threads, blas=_blas(),
                load=load_average(), python=platform.python_version())

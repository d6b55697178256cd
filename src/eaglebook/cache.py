"""A disk cache for expensive results (trained models), keyed by a hash of the *whole* config.

Layout: ``<root>/<kind>/<hash>/`` holding ``config.json`` (the full config), ``meta.json`` (versions,
seconds, a SHA-256 of the payload) and ``payload.pt`` (``torch.save`` of the result).

- The root is ``$EAGLEBOOK_CACHE`` if set, else ``<repo>/.cache/eaglebook`` (see :func:`repo_root`),
  else ``~/.cache/eaglebook``.
- An entry is written to a temporary folder next to its final place and renamed into place only when
  complete, so an interrupted run leaves no half-written entry behind.
- On load the payload's checksum is verified; a partial or corrupt entry is reported, removed and
  rebuilt, never used.
- Two runs that share a cache are safe: a per-entry lock file (``fcntl.flock``) makes the second run
  wait for the first and then load its result instead of computing it again.
"""

from __future__ import annotations

import dataclasses
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import torch

CACHE_ENV = "EAGLEBOOK_CACHE"
#: Bump when the meaning of a cached result changes without its config changing.
CACHE_SCHEMA = 1
PAYLOAD, META, CONFIG = "payload.pt", "meta.json", "config.json"


def repo_root(start: Path | None = None) -> Path | None:
    """The book's repository: the nearest folder at or above ``start`` (default: the working directory)
    holding ``_toc.yml`` and ``book/``; failing that, the checkout this package was installed from
    (editable install), so a chapter run from anywhere still finds it; else ``None``."""
    starts = [start] if start is not None else [Path.cwd(), Path(__file__).parent]
    for s in starts:
        p = Path(s).resolve()
        for q in (p, *p.parents):
            if (q / "_toc.yml").is_file() and (q / "book").is_dir():
                return q
    return None


def root() -> Path:
    """The cache root (see module docstring)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser().resolve()
    repo = repo_root()
    return (repo / ".cache" / "eaglebook") if repo else Path.home() / ".cache" / "eaglebook"


def _jsonable(cfg: Any) -> Any:
    return dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else cfg


def config_hash(cfg: Any) -> str:
    """SHA-256 (first 16 hex digits) of the canonical JSON of the whole config plus the schema version."""
    blob = json.dumps({"schema": CACHE_SCHEMA, "type": type(cfg).__name__, "cfg": _jsonable(cfg)},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def entry_dir(kind: str, cfg: Any) -> Path:
    """Where the entry for ``(kind, cfg)`` lives (whether or not it exists)."""
    if not kind or "/" in kind or kind.startswith("."):
        raise ValueError(f"argument kind={kind!r} must be a plain folder name")
    return root() / kind / config_hash(cfg)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_valid(d: Path) -> bool:
    """True when ``d`` is a complete entry whose payload matches its recorded checksum."""
    try:
        meta = json.loads((d / META).read_text())
        return meta.get("schema") == CACHE_SCHEMA and _sha256(d / PAYLOAD) == meta["sha256"]
    except (OSError, ValueError, KeyError):
        return False


def load(d: Path) -> Any:
    """Load a valid entry's payload."""
    return torch.load(d / PAYLOAD, map_location="cpu", weights_only=False)


def save_atomic(obj: Any, d: Path, cfg: Any, seconds: float) -> None:
    """Write ``obj`` as entry ``d`` atomically (temporary folder, then rename)."""
    from . import __version__

    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{d.name}-", dir=d.parent))
    try:
        torch.save(obj, tmp / PAYLOAD)
        (tmp / CONFIG).write_text(json.dumps(_jsonable(cfg), indent=2, sort_keys=True, default=str))
        meta = dict(schema=CACHE_SCHEMA, sha256=_sha256(tmp / PAYLOAD), seconds=seconds,
                    eaglebook=__version__, torch=torch.__version__, created=time.strftime("%Y-%m-%dT%H:%M:%S"))
        (tmp / META).write_text(json.dumps(meta, indent=2))
        if d.exists():  # a corrupt leftover (we hold the lock): replace it
            shutil.rmtree(d)
        os.replace(tmp, d)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _locked(d: Path):
    d.parent.mkdir(parents=True, exist_ok=True)
    with open(d.parent / f".{d.name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def cached(kind: str, cfg: Any, compute: Callable[[], Any], *, force: bool = False) -> Any:
    """Return the cached result for ``(kind, cfg)``, computing and storing it if needed.

    ``force=True`` recomputes and overwrites.  ``compute`` takes no arguments; its result must be
    picklable by ``torch.save``.
    """
    d = entry_dir(kind, cfg)
    if not force and is_valid(d):
        return load(d)
    with _locked(d):
        if not force and is_valid(d):  # another run finished it while we waited
            return load(d)
        if d.exists() and not force:
            warnings.warn(f"cache entry {d} is incomplete or corrupt; rebuilding it", RuntimeWarning, stacklevel=2)
        t0 = time.perf_counter()
        obj = compute()
        save_atomic(obj, d, cfg, time.perf_counter() - t0)
    return obj


def clear(kind: str | None = None) -> None:
    """Delete the whole cache (or one kind of entry)."""
    target = root() / kind if kind else root()
    shutil.rmtree(target, ignore_errors=True)

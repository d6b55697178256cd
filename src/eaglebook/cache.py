"""A disk cache for expensive results (trained models), keyed by a hash of the *whole* config.

Layout: ``<root>/<kind>/<hash>/`` holding ``config.json`` (the full config), ``meta.json`` (versions,
seconds, a SHA-256 of the payload) and ``payload.pt`` (``torch.save`` of the result, see below).

- The root is ``$EAGLEBOOK_CACHE`` if set, else ``<repo>/.cache/eaglebook`` (see :func:`repo_root`),
  else ``~/.cache/eaglebook``.
- An entry is written to a temporary folder (``.tmp-*``) next to its final place and renamed into place
  only when complete, so an interrupted run leaves no half-written entry behind.  Temporary folders and
  files older than a day (left by killed writers) are removed whenever the kind folder is written to.
- Payloads are loaded with ``torch.load(weights_only=True)``: a cache entry can hold tensors, numbers,
  strings, ``None``, lists, tuples and dicts, never arbitrary objects, so a planted file cannot run code.
  Numpy arrays and scalars are accepted on save and encoded as tensors and Python numbers (see
  :func:`encode`); anything else is refused with a ``TypeError`` before anything is written.
- On load the payload's checksum is verified, and the config stored with the entry (``config.json`` and a
  copy inside the payload) must equal the requested one; a partial, corrupt or mismatched entry is
  reported, removed and rebuilt, never used.
- Two runs that share a cache are safe: a per-entry lock file (``fcntl.flock``) makes the second run
  wait for the first and then load its result instead of computing it again.
- **Shipped results.**  The repository's ``models/`` folder (same layout; ``$EAGLEBOOK_SHIPPED`` names
  another, ``EAGLEBOOK_SHIPPED=0`` turns it off) holds paper-profile models trained by earlier runs of the
  book, with their configs, timings and checksums, and the resumable checkpoints of runs still in progress.
  On a miss, a valid shipped entry (same config, checksum verified) is copied into the cache and used
  instead of computing it again; a shipped checkpoint is copied next to the entry, so training resumes
  from it.  ``python -m eaglebook.cache ship --from DIR`` adds a cache's entries to the folder;
  ``python -m eaglebook.cache list`` shows what is there.  A shipped entry is a result, like any cached
  one: ``force=True`` (or ``EAGLEBOOK_SHIPPED=0``) recomputes it.

This module imports torch only inside the functions that read or write payloads, so tools that only need
:func:`repo_root` or :func:`root` stay light.
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

CACHE_ENV = "EAGLEBOOK_CACHE"
SHIPPED_ENV = "EAGLEBOOK_SHIPPED"
#: Bump when the meaning of a cached result changes without its config changing.
#: 2: payloads are plain data loaded with ``weights_only=True`` and carry their config.
CACHE_SCHEMA = 2
PAYLOAD, META, CONFIG = "payload.pt", "meta.json", "config.json"
#: Temporary folders and files (prefix ``.tmp-``) older than this many seconds are removed.
STALE_TMP_SECONDS = 24 * 3600
_FORMAT = "eaglebook.cache/2"
_NDARRAY = "__ndarray__"


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


def shipped_root() -> Path | None:
    """The read-only store of shipped results: ``$EAGLEBOOK_SHIPPED`` if set (``0``, ``off``, ``no`` or
    empty: none), else ``<repo>/models``, else ``None``."""
    env = os.environ.get(SHIPPED_ENV)
    if env is not None:
        if env.strip().lower() in ("", "0", "off", "no", "false"):
            return None
        return Path(env).expanduser().resolve()
    repo = repo_root()
    return repo / "models" if repo else None


#: Field metadata key of a hash-neutral config field (``eaglebook.config.neutral``; spelled out here so
#: that this module imports no config).
HASH_NEUTRAL = "eaglebook.hash_neutral"


def _jsonable(cfg: Any) -> Any:
    """The config as plain data, recursively; a hash-neutral field (metadata ``HASH_NEUTRAL``) is left out
    while it holds its default, so adding one keeps every existing config's JSON, hash and stored
    ``config.json`` as they were."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        out = {}
        for f in dataclasses.fields(cfg):
            v = getattr(cfg, f.name)
            if f.metadata.get(HASH_NEUTRAL) and f.default is not dataclasses.MISSING and v == f.default:
                continue
            out[f.name] = _jsonable(v)
        return out
    if isinstance(cfg, (list, tuple)):
        return [_jsonable(v) for v in cfg]
    if isinstance(cfg, dict):
        return {k: _jsonable(v) for k, v in cfg.items()}
    return cfg


def canonical_json(cfg: Any) -> str:
    """The canonical JSON of a config (sorted keys, no whitespace): equal configs give equal strings."""
    return json.dumps(_jsonable(cfg), sort_keys=True, separators=(",", ":"), default=str)


def config_hash(cfg: Any) -> str:
    """SHA-256 (first 16 hex digits) of the canonical JSON of the whole config plus the schema version."""
    blob = json.dumps({"schema": CACHE_SCHEMA, "type": type(cfg).__name__, "cfg": _jsonable(cfg)},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _check_kind(kind: str) -> None:
    if not kind or "/" in kind or kind.startswith("."):
        raise ValueError(f"argument kind={kind!r} must be a plain folder name")


def entry_dir(kind: str, cfg: Any) -> Path:
    """Where the entry for ``(kind, cfg)`` lives (whether or not it exists)."""
    _check_kind(kind)
    return root() / kind / config_hash(cfg)


def checkpoint_path(kind: str, cfg: Any) -> Path:
    """Where a resumable checkpoint of the computation of ``(kind, cfg)`` lives: ``<kind>/.ckpt-<hash>.pt``,
    next to the entry (see :mod:`eaglebook.training`)."""
    _check_kind(kind)
    return root() / kind / f".ckpt-{config_hash(cfg)}.pt"


def shipped_entry(kind: str, cfg: Any) -> Path | None:
    """The valid shipped entry for ``(kind, cfg)`` (see :func:`shipped_root`), or ``None``."""
    _check_kind(kind)
    top = shipped_root()
    if top is None:
        return None
    d = top / kind / config_hash(cfg)
    return d if d.is_dir() and is_valid(d, cfg) else None


def shipped_checkpoint(kind: str, cfg: Any) -> Path | None:
    """The shipped checkpoint of the computation of ``(kind, cfg)``, or ``None``."""
    _check_kind(kind)
    top = shipped_root()
    p = None if top is None else top / kind / checkpoint_path(kind, cfg).name
    return p if p is not None and p.is_file() else None


def available(kind: str, cfg: Any) -> bool:
    """True when ``(kind, cfg)`` needs no computing: a valid entry in the cache or in the shipped store."""
    return is_valid(entry_dir(kind, cfg), cfg) or shipped_entry(kind, cfg) is not None


def _copy_atomic(src: Path, dst: Path) -> None:
    """Copy a file or folder to ``dst`` through a temporary name in its folder, then rename."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.parent / f".tmp-{dst.name.lstrip('.')}-{os.getpid()}-{time.monotonic_ns()}"
    try:
        if src.is_dir():
            shutil.copytree(src, tmp)
        else:
            shutil.copy2(src, tmp)
        if dst.is_dir():
            shutil.rmtree(dst)
        os.replace(tmp, dst)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()


def adopt_checkpoint(kind: str, cfg: Any) -> Path:
    """:func:`checkpoint_path`, after copying the shipped checkpoint there when the cache has none."""
    p = checkpoint_path(kind, cfg)
    src = shipped_checkpoint(kind, cfg)
    if not p.exists() and src is not None:
        _copy_atomic(src, p)
    return p


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _problem(d: Path, cfg: Any = None) -> str | None:
    """Why ``d`` is not a usable entry (for ``cfg`` when given), or ``None`` when it is."""
    try:
        meta = json.loads((d / META).read_text())
        if meta.get("schema") != CACHE_SCHEMA:
            return f"schema {meta.get('schema')!r}, expected {CACHE_SCHEMA}"
        if _sha256(d / PAYLOAD) != meta["sha256"]:
            return "payload checksum mismatch"
        if cfg is not None and canonical_json(json.loads((d / CONFIG).read_text())) != canonical_json(cfg):
            return "stored config differs from the requested one"
    except (OSError, ValueError, KeyError) as e:
        return f"unreadable ({type(e).__name__}: {e})"
    return None


def is_valid(d: Path, cfg: Any = None) -> bool:
    """True when ``d`` is a complete entry whose payload matches its recorded checksum (and, when ``cfg``
    is given, whose stored config equals ``cfg``)."""
    return _problem(d, cfg) is None


# ------------------------------------------------------------------------------------- payload coding
def encode(obj: Any) -> Any:
    """``obj`` as data that ``torch.load(weights_only=True)`` accepts.

    Tensors, ``str``, ``int``, ``float``, ``bool``, ``None``, and lists, tuples and dicts of them pass
    through; a numpy array becomes ``{"__ndarray__": tensor}`` (restored by :func:`decode`); a numpy
    scalar becomes the Python number.  Anything else raises ``TypeError``.
    """
    import numpy as np
    import torch

    if isinstance(obj, np.generic):  # before the Python types: np.float64 is a float subclass
        return obj.item()
    if obj is None or isinstance(obj, (str, bool, int, float, torch.Tensor)):
        return obj
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            raise TypeError("cannot cache a numpy array of dtype object")
        return {_NDARRAY: torch.from_numpy(np.ascontiguousarray(obj))}
    if isinstance(obj, (list, tuple)):  # named tuples and other subclasses become plain ones
        return (tuple if isinstance(obj, tuple) else list)(encode(v) for v in obj)
    if isinstance(obj, dict):
        if _NDARRAY in obj:
            raise TypeError(f"cannot cache a dict with the reserved key {_NDARRAY!r}")
        return {k: encode(v) for k, v in obj.items()}
    raise TypeError(f"cannot cache an object of type {type(obj).__name__}; convert it to tensors, numbers, "
                    "strings, lists or dicts")


def decode(obj: Any) -> Any:
    """Inverse of :func:`encode`."""
    if isinstance(obj, dict):
        if set(obj) == {_NDARRAY}:
            return obj[_NDARRAY].numpy()
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return (tuple if isinstance(obj, tuple) else list)(decode(v) for v in obj)
    return obj


def load_plain(path: Path) -> Any:
    """``torch.load(path, weights_only=True)`` on the CPU: plain data only, never code."""
    import torch

    return torch.load(path, map_location="cpu", weights_only=True)


def load(d: Path, cfg: Any = None) -> Any:
    """Load an entry's payload with ``weights_only=True``; with ``cfg``, raise ``ValueError`` unless the
    config stored inside the payload equals it."""
    p = load_plain(d / PAYLOAD)
    if not isinstance(p, dict) or p.get("format") != _FORMAT:
        raise ValueError(f"{d / PAYLOAD} is not an eaglebook cache payload")
    if cfg is not None and p.get("config") != canonical_json(cfg):
        raise ValueError(f"{d / PAYLOAD} holds the result of another config")
    return decode(p["data"])


# ------------------------------------------------------------------------------------------- writing
def clean_stale_tmp(folder: Path, max_age: float = STALE_TMP_SECONDS) -> list[Path]:
    """Remove temporary folders and files (``.tmp-*``) in ``folder`` last modified more than ``max_age``
    seconds ago: leftovers of killed writers.  Younger ones may belong to a running writer and stay.
    Returns what was removed."""
    now, removed = time.time(), []
    for p in Path(folder).glob(".tmp-*"):
        try:
            if now - p.lstat().st_mtime <= max_age:
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
            removed.append(p)
        except OSError:  # another process removed it first
            pass
    return removed


def save_atomic(obj: Any, d: Path, cfg: Any, seconds: float) -> None:
    """Write ``obj`` (see :func:`encode`) as entry ``d`` atomically (temporary folder, then rename)."""
    import torch

    from . import __version__

    data = encode(obj)
    d.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_tmp(d.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{d.name}-", dir=d.parent))
    try:
        torch.save({"format": _FORMAT, "config": canonical_json(cfg), "data": data}, tmp / PAYLOAD)
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


_MISSING = object()


def _try_load(d: Path, cfg: Any) -> tuple[Any, str | None]:
    """(payload, None) for a usable entry; else (``_MISSING``, why not)."""
    problem = _problem(d, cfg)
    if problem is None:
        try:
            return load(d, cfg), None
        except Exception as e:  # refused by weights_only, truncated, foreign format, other config
            first_line = (str(e).splitlines() or [""])[0]
            problem = f"cannot be loaded safely ({type(e).__name__}: {first_line})"
    return _MISSING, problem


def cached(kind: str, cfg: Any, compute: Callable[[], Any], *, force: bool = False,
           seconds_of: Callable[[Any], float] | None = None) -> Any:
    """Return the cached result for ``(kind, cfg)``, computing and storing it if needed.

    ``force=True`` recomputes and overwrites.  ``compute`` takes no arguments; its result must be plain
    data (see :func:`encode`).  An entry that is corrupt, refused by the safe loader or stored for another
    config is reported with a ``RuntimeWarning`` and rebuilt.  The entry records the compute time:
    ``seconds_of(result)`` when given (a computation that resumed from a checkpoint knows its whole time;
    this call saw only the last part of it), else the time this call spent in ``compute``.
    """
    d = entry_dir(kind, cfg)
    if not force:
        obj, _ = _try_load(d, cfg)
        if obj is not _MISSING:
            return obj
    with _locked(d):
        if not force:
            obj, problem = _try_load(d, cfg)  # another run may have finished it while we waited
            if obj is not _MISSING:
                return obj
            src = shipped_entry(kind, cfg)
            if src is not None:               # shipped with the book: copy it into the cache and use it
                _copy_atomic(src, d)
                obj, problem = _try_load(d, cfg)
                if obj is not _MISSING:
                    return obj
            if d.exists():
                warnings.warn(f"cache entry {d} is incomplete or corrupt ({problem}); rebuilding it",
                              RuntimeWarning, stacklevel=2)
        t0 = time.perf_counter()
        obj = compute()
        save_atomic(obj, d, cfg, float(seconds_of(obj)) if seconds_of else time.perf_counter() - t0)
    return obj


def clear(kind: str | None = None) -> None:
    """Delete the whole cache (or one kind of entry, checkpoints included)."""
    target = root() / kind if kind else root()
    shutil.rmtree(target, ignore_errors=True)


# --------------------------------------------------------------------------------------- the shipped store
def ship(src_root: Path, kind: str = "train", dest_root: Path | None = None, log=print) -> dict:
    """Copy the valid entries of ``src_root/kind`` (a cache root) into the shipped store, and the
    checkpoints of runs not finished yet; drop shipped checkpoints whose entry is now there.  Returns
    the counts."""
    _check_kind(kind)
    dest_root = dest_root or shipped_root()
    if dest_root is None:
        raise ValueError("no shipped store: run inside the repository or set EAGLEBOOK_SHIPPED")
    src, dst = Path(src_root) / kind, Path(dest_root) / kind
    counts = dict(entries=0, checkpoints=0, dropped=0, invalid=0)
    for d in sorted(p for p in src.glob("*") if p.is_dir() and not p.name.startswith(".")):
        if _problem(d) is not None:
            counts["invalid"] += 1
            log(f"skipped {d}: {_problem(d)}")
            continue
        if not (dst / d.name).is_dir() or _problem(dst / d.name) is not None:
            _copy_atomic(d, dst / d.name)
            counts["entries"] += 1
    for ck in sorted(src.glob(".ckpt-*.pt")):
        if not (dst / ck.name[len(".ckpt-"):-len(".pt")]).is_dir():
            _copy_atomic(ck, dst / ck.name)
            counts["checkpoints"] += 1
    for ck in sorted(dst.glob(".ckpt-*.pt")):
        if (dst / ck.name[len(".ckpt-"):-len(".pt")]).is_dir():
            ck.unlink()
            counts["dropped"] += 1
    log(f"shipped to {dst}: {counts}")
    return counts


def listing(kind: str = "train", top: Path | None = None) -> list[dict]:
    """One row per shipped entry (hash, the config's regime/seed/steps when it is a training config, the
    whole config, seconds, created, valid) and per checkpoint (``checkpoint=True``)."""
    top = top or shipped_root()
    rows = []
    if top is None or not (top / kind).is_dir():
        return rows
    for d in sorted((top / kind).iterdir()):
        if d.is_dir() and not d.name.startswith("."):
            cfg, meta = json.loads((d / CONFIG).read_text()), json.loads((d / META).read_text())
            model = cfg.get("model", {}) if isinstance(cfg, dict) else {}
            rows.append(dict(hash=d.name, regime=model.get("regime"), seed=cfg.get("seed"), steps=cfg.get("steps"),
                             seconds=meta.get("seconds"), created=meta.get("created"), valid=_problem(d) is None,
                             config=cfg))
        elif d.name.startswith(".ckpt-"):
            rows.append(dict(hash=d.name[len(".ckpt-"):-len(".pt")], checkpoint=True))
    return rows


def main(argv=None) -> int:
    from ._cli import Parser, fail

    p = Parser(prog="python -m eaglebook.cache", description="The shipped store of trained models.")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("ship", help="copy a cache's entries (and unfinished checkpoints) into the shipped store")
    s.add_argument("--from", dest="src", required=True, help="a cache root (e.g. the EAGLEBOOK_CACHE of a paper build)")
    s.add_argument("--kind", default="train")
    s2 = sub.add_parser("list", help="what the shipped store holds")
    s2.add_argument("--kind", default="train")
    a = p.parse_args(argv)
    if a.cmd == "ship":
        try:
            _check_kind(a.kind)
            if not (Path(a.src) / a.kind).is_dir():    # it copied nothing and said nothing
                raise ValueError(f"--from {a.src}: no folder {Path(a.src) / a.kind} (a cache root holds one folder "
                                 f"per kind: train, ...)")
            if shipped_root() is None:
                raise ValueError("no shipped store: run inside the repository or set EAGLEBOOK_SHIPPED")
        except ValueError as e:
            fail(f"{p.prog} ship", str(e))
        ship(Path(a.src), a.kind)
    else:
        for r in listing(a.kind):
            print(r)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Training on a Dask cluster: the executor that :func:`eaglebook.training.trained_all` trains on.

``$EAGLEBOOK_SCHEDULER`` (or an explicit ``scheduler`` argument, the study's ``--scheduler``) chooses it:

- unset or empty: none; ``trained_all`` trains on a process pool of this machine, as it always did;
- ``local``: a Dask ``LocalCluster`` on this machine (one worker process per core, one thread each,
  loopback only), started for the call and closed after it;
- ``tcp://host:port`` (or ``tls://``, ``ws://``, ``wss://``): an existing Dask scheduler, whose workers
  train; see the README's "Train on a cluster" for starting one.

The workers need no shared file system: each returns the trained payload and the client writes the cache
entry (:func:`eaglebook.training.train_missing`).  Dask itself (``dask[distributed]``) is an optional extra,
``pip install 'eaglebook[cluster]'``; it is imported only when a scheduler is asked for.

This module imports nothing of the package, and Dask only inside :func:`executor`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
from typing import Iterator

SCHEDULER_ENV = "EAGLEBOOK_SCHEDULER"
TIMEOUT_ENV = "EAGLEBOOK_SCHEDULER_TIMEOUT"
#: Seconds to wait for a scheduler to answer before giving up (``$EAGLEBOOK_SCHEDULER_TIMEOUT``).
DEFAULT_TIMEOUT = 20.0
LOCAL = "local"
_ADDRESS = re.compile(r"^(tcp|tls|ws|wss)://\[?[A-Za-z0-9._:-]+\]?:\d{1,5}$")

__all__ = ["SCHEDULER_ENV", "TIMEOUT_ENV", "LOCAL", "SchedulerError", "scheduler_address", "timeout", "executor"]


class SchedulerError(RuntimeError):
    """The scheduler asked for cannot be used (unreachable, or Dask not installed); the message is one line."""


def scheduler_address(scheduler: str | None = None) -> str | None:
    """The scheduler to train on: ``scheduler`` if given, else ``$EAGLEBOOK_SCHEDULER``; ``None`` when neither
    names one (empty, ``0``, ``none``, ``off``).  A malformed address is a one-line ``ValueError``."""
    what = "argument scheduler"
    if scheduler is None:
        scheduler, what = os.environ.get(SCHEDULER_ENV, ""), f"environment variable {SCHEDULER_ENV}"
    s = str(scheduler).strip()
    if s.lower() in ("", "0", "none", "off", "no"):
        return None
    if s.lower() == LOCAL:
        return LOCAL
    if not _ADDRESS.match(s) or not 0 < int(s.rsplit(":", 1)[1]) < 65536:
        raise ValueError(f"{what}={scheduler!r} is not valid; allowed values: 'local' or a scheduler address "
                         "such as 'tcp://127.0.0.1:8786'")
    return s


def timeout() -> float:
    """Seconds to wait for a scheduler: ``$EAGLEBOOK_SCHEDULER_TIMEOUT``, else :data:`DEFAULT_TIMEOUT`."""
    env = os.environ.get(TIMEOUT_ENV, "").strip()
    if not env:
        return DEFAULT_TIMEOUT
    try:
        v = float(env)
    except ValueError:
        v = math.nan
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"environment variable {TIMEOUT_ENV}={env!r} is not valid; allowed values: seconds > 0")
    return v


def _one_line(e: BaseException) -> str:
    text = (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


@contextlib.contextmanager
def executor(scheduler: str | None = None, *, workers: int | None = None) -> Iterator[tuple[object, str] | None]:
    """``(executor, description)`` for the scheduler :func:`scheduler_address` names, or ``None`` when none
    is named.  The executor is ``distributed.Client(...).get_executor()`` (a ``concurrent.futures.Executor``);
    for ``local``, a ``LocalCluster`` of ``workers`` processes (default: one per core), one thread each,
    on 127.0.0.1.  Client and cluster are closed on exit.  Unreachable scheduler, or Dask missing:
    :class:`SchedulerError` with a one-line message."""
    addr = scheduler_address(scheduler)
    if addr is None:
        yield None
        return
    try:
        import distributed
    except ImportError as e:
        raise SchedulerError(f"scheduler {addr!r} asked for, but Dask is not installed ({_one_line(e)}); "
                             "install it with: pip install 'eaglebook[cluster]'") from None
    cluster = client = None
    try:
        if addr == LOCAL:
            n = max(1, int(workers or os.cpu_count() or 1))
            # loopback only; its HTTP server (health, dashboard) on a free port of 127.0.0.1
            cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                               dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
            client = distributed.Client(cluster, timeout=timeout())
            desc = f"a Dask LocalCluster of {n} worker processes ({cluster.scheduler_address})"
        else:
            try:
                client = distributed.Client(addr, timeout=timeout())
            except (OSError, TimeoutError) as e:
                raise SchedulerError(f"cannot reach the Dask scheduler at {addr} within {timeout():g} s "
                                     f"({_one_line(e)}); start one (README: Train on a cluster) or unset "
                                     f"{SCHEDULER_ENV}") from None
            n = len(client.scheduler_info(n_workers=-1).get("workers", {}))
            desc = f"the Dask scheduler at {addr} ({n} worker{'s' if n != 1 else ''} now)"
        yield client.get_executor(pure=False), desc
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()

"""Distributed EAGLE for real: one process per machine on ``torch.distributed``.

:func:`eaglebook.solve_distributed` *simulates* the M machines of Algorithm 1 in one process.  This module
runs them as M processes, with the same engine (:func:`eaglebook.solver.engine.run`): process μ holds only
its own column blocks A^μ, B^μ (a :class:`eaglebook.solver.machine.Machine`) and the shared C, D; every round
it runs the one per-machine step on its blocks with its own ρ^μ, and the machines' C and D increments are
averaged by one ``all_reduce`` (a sum, then a division by M).

* **Backend.** ``gloo`` on CPUs, ``nccl`` on GPUs (process μ then computes on ``cuda:<local rank>``);
  nothing else changes.
* **Communication.** One ``all_reduce`` per round of a flat buffer [ΔC | ΔD | header]: the paper's
  (d + d')·n' floats, (d + d') more for the test column (``certify="gemm"``, which certifies consistent data
  at the end), and a header of 2M + 1 floats per problem (each machine's ηρσ̂² and log2 ‖A^μ_ℓ‖_F, in its
  own slots, and the count of conditioned machines for the freezing variant; :func:`header_floats`).  After
  the reduction every process holds the same C_{ℓ+1}, D_{ℓ+1} and header, so each takes the same decision
  about stopping, with no message of its own.  Besides the rounds: one gather at the start (column counts and
  the exponents of the common power-of-two frame), one reduction for the test column, and one reduction of
  3M floats per problem for each check (a few per run).  ``certify="svd"`` gathers the blocks for each check
  and the original blocks at the end instead; ``certify="none"`` sends the rounds only: the paper's budget.
* **Stopping.** The rule of :func:`eaglebook.solve_distributed`, written once in
  :class:`eaglebook.solver.stopping.StopRule`.  The result equals ``solve_distributed`` to float64
  round-off, with the same iteration count and status.
* **Freezing (the paper's §E.2).** With ``freeze_tol`` set, once every machine's A^μ is conditioned
  (Σ_i (1 − σ_i²/σ_1²)² < freeze_tol over its positive singular values, the paper's
  ‖I − A^{μᵀ}A^μ‖_F² for a normalised A^μ; an SVD of each block per round) the A, B updates stop; the C, D
  updates go on with the frozen blocks, as the linear maps C ↦ ΔC, C ↦ ΔD of the UPDATE.

Entry points
------------
* :func:`run_local` spawns M processes on 127.0.0.1 (a free port, chosen by the kernel), each given
  only its own blocks, and returns a :class:`eaglebook.solver.Result`.  Time-outs and a watchdog turn a
  worker that dies, hangs or never joins into a :class:`DistributedError` naming the rank and the
  cause; every process is stopped and the rendezvous port closed before it is raised.
* :func:`solve_serial` runs the same engine in one process (the M machines one after another, the
  reduction a plain sum): the reference of the single-process time per round.
* ``torchrun --nproc-per-node M -m eaglebook.solver.distributed --input problem.npz --out out.npz``
  (the problem in a ``.npz`` file; ``python -m eaglebook.distributed`` also generates one from a size
  and a seed).  On a cluster only the launcher's flags change: ``torchrun --nnodes N
  --nproc-per-node K --rdzv-backend c10d --rdzv-endpoint HOST:PORT`` (and ``--backend nccl`` on GPUs).
  Without torchrun, or with a bad input file, the command prints one line and exits with status 2; under
  torchrun every process prints that line and exits 2, and torchrun then adds its own summary of the failed
  processes (``ChildFailedError``) and exits 1.  ``--check M`` checks the input, the options and the output
  path for M processes in one process, without torchrun (exit 0 or the one line and 2).

The bytes are counted twice: the payload each process hands to the round's collective (exact), and, for
gloo, the TCP payload bytes the process actually sent in the rounds, read from the kernel's per-socket
counters (``TCP_INFO``; a ring all-reduce sends about 2(M − 1)/M times the payload: its reduce-scatter half
plus its all-gather half, i.e. the upload to and the broadcast back from the paper's centre).
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import signal
import socket
import struct
import sys
import time
import traceback
from typing import Callable, Sequence

import numpy as np
import torch

from .._arrays import int_in, machine_edges, positive
from .._cli import Parser, check_output, integer, number, one_line
from .._arrays import out as to_output
from .eagle import as_blocks, setup
from .engine import Transport, header_floats, local_transport, run
from .result import Result

__all__ = ["DistributedResult", "DistributedError", "run_local", "solve_serial", "run_rank", "main",
           "header_floats", "tcp_bytes_sent", "CLIError", "load_problem", "check_problem"]

_LOOPBACK = "127.0.0.1"
_BACKENDS = ("gloo", "nccl")

#: The multi-process engine returns the one result type of every solve.
DistributedResult = Result


class DistributedError(RuntimeError):
    """A distributed run failed; ``rank`` is the culprit (None when it cannot be told) and ``cause``
    says what happened (``died``, ``hung``, ``never joined``, ``error``, ``timeout``)."""

    def __init__(self, message: str, *, rank: int | None, cause: str, port: int | None = None):
        super().__init__(message)
        self.rank, self.cause, self.port = rank, cause, port


def _inject(fault, rank, ell):
    """Test hook: ``fault = (rank, kind, round)`` makes that rank die, hang or raise in that round."""
    if fault is None or fault[0] != rank or fault[2] != ell:
        return
    kind = fault[1]
    if kind == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind == "hang":
        while True:
            time.sleep(3600)
    elif kind == "raise":
        raise RuntimeError(f"injected failure in round {ell}")


def _opts(*, tol=None, atol=0.0, max_iter=1000, seed=0, eta=1 / 3, gamma=1.0, rho="power", rho_scale=1.0,
          power_iters=5, rescale=True, freeze_tol=None, rcond=None, certify="gemm") -> dict:
    """The options every process gets (plain data: they travel to spawned workers)."""
    if rho not in ("exact", "power"):
        raise ValueError(f"argument rho={rho!r} must be 'exact' or 'power'")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"argument seed={seed!r} must be a non-negative integer (every process draws the same stream)")
    return dict(tol=tol, atol=atol, max_iter=max_iter, seed=int(seed), eta=eta, gamma=gamma, rho=rho,
                rho_scale=rho_scale, power_iters=power_iters, rescale=rescale, freeze_tol=freeze_tol, rcond=rcond,
                certify=certify)


def _setup(A_list, B_list, C, opts: dict, *, first: int, world: int, reference=None):
    names = ("A_blocks[{}]", "B_blocks[{}]") if first == 0 and len(A_list) == world else \
        (f"A_blocks[{first}]", f"B_blocks[{first}]")
    o = {k: v for k, v in opts.items()}
    return setup(A_list, B_list, C, None, names, sketch=None, sketch_kind="columns", redraw=True, eta=o["eta"],
                 gamma=o["gamma"], rho=o["rho"], rho_scale=o["rho_scale"], power_iters=o["power_iters"],
                 rho_pool="instance", max_iter=o["max_iter"], tol=o["tol"], atol=o["atol"], rescale=o["rescale"],
                 seed=o["seed"], reference=reference, rcond=o["rcond"], certify=o["certify"],
                 freeze_tol=o["freeze_tol"], world=world, first=first)


def _engine(P, transport, *, world, first, opts, progress=None, hook=None) -> Result:
    return run(P.As, P.Bs, P.C, P.opts, transport, world=world, first=first, rng=P.rng, us=P.us, tol=opts["tol"],
               atol=opts["atol"], max_iter=opts["max_iter"], rcond=opts["rcond"], certify=opts["certify"],
               test_seed=opts["seed"], reference=P.reference, out_dtype=P.io.out_torch, progress=progress, hook=hook)


def solve_serial(A_blocks: Sequence, B_blocks: Sequence, C, *, tol=None, atol=0.0, max_iter=1000, seed=0,
                 eta=1 / 3, gamma=1.0, rho="power", rho_scale=1.0, power_iters=5, rescale=True,
                 freeze_tol=None, rcond=None, certify="gemm", reference=None) -> Result:
    """The multi-process engine's run in one process: the M machines one after another and the reduction a
    plain sum.  Same arguments and result as :func:`run_local`."""
    A_blocks, B_blocks = as_blocks("A_blocks", A_blocks), as_blocks("B_blocks", B_blocks)
    M = len(A_blocks)
    if len(B_blocks) != M:
        raise ValueError(f"argument B_blocks has {len(B_blocks)} blocks but A_blocks has {M} (need M >= 1)")
    opts = _opts(tol=tol, atol=atol, max_iter=max_iter, seed=seed, eta=eta, gamma=gamma, rho=rho, rho_scale=rho_scale,
                 power_iters=power_iters, rescale=rescale, freeze_tol=freeze_tol, rcond=rcond, certify=certify)
    P = _setup(A_blocks, B_blocks, C, opts, first=0, world=M, reference=reference)
    res = _engine(P, local_transport(), world=M, first=0, opts=opts)
    res.D = to_output(P.io, res.D)
    res.backend = "serial"
    return res


# ----------------------------------------------------------------------------------------------
# One process of a real run (run_local's workers and the torchrun CLI)


def _check_backend(backend: str, what: str) -> None:
    """``ValueError`` unless the backend can run here (nccl needs CUDA: without it torch raised an
    AttributeError from ``torch.cuda.set_device``)."""
    if backend == "nccl" and not torch.cuda.is_available():
        raise ValueError(f"{what} needs CUDA GPUs, and torch.cuda.is_available() is False on this machine; "
                         f"use gloo (the CPU backend)")


def _device(backend: str, local_rank: int) -> torch.device:
    if backend == "nccl":
        dev = torch.device("cuda", local_rank % max(1, torch.cuda.device_count()))
        torch.cuda.set_device(dev)
        return dev
    return torch.device("cpu")


def _all_reduce(bufs):
    import torch.distributed as dist
    dist.all_reduce(bufs[0], op=dist.ReduceOp.SUM)
    return bufs[0]


def _all_gather(items):
    """Every process's item (a tuple of CPU tensors), in rank order (the blocks have any shapes)."""
    import torch.distributed as dist
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, tuple(x.cpu() for x in items[0]))
    return out


def run_rank(A_mu, B_mu, C, *, rank: int, world: int, backend: str, device: torch.device, opts: dict,
             reference=None, progress=None, fault=None) -> Result:
    """Process ``rank``'s part of a run, in an initialised process group: its machine, the rounds.  Returns
    this process's :class:`Result` (D as NumPy for NumPy input; every process holds the same D)."""
    P = _setup([A_mu], [B_mu], C, opts, first=rank, world=world, reference=reference)
    P = P._replace(As=[a.to(device) for a in P.As], Bs=[b.to(device) for b in P.Bs], C=P.C.to(device),
                   us=[u.to(device) if u is not None else None for u in P.us],
                   reference=P.reference.to(device) if P.reference is not None else None)
    transport = Transport(_all_reduce, _all_gather, tcp_bytes_sent if backend == "gloo" else None)
    res = _engine(P, transport, world=world, first=rank, opts=opts, progress=progress,
                  hook=(lambda ell: _inject(fault, rank, ell)) if fault is not None else None)
    res.D = to_output(P.io, res.D.cpu()) if P.io.numpy else res.D.cpu()
    res.backend = backend
    return res


def _combine(r0: Result, stats: list, backend: str) -> Result:
    """Rank 0's result with every process's statistics (lists indexed by rank)."""
    r0.backend = backend
    for k in ("time_per_round", "compute_per_round", "comm_per_round", "wire_bytes_per_round", "gather_bytes"):
        setattr(r0, k, [s[k][0] if isinstance(s[k], list) else s[k] for s in stats])
    r0.wall = max(s["wall"] for s in stats)
    return r0


def _stats(r: Result) -> dict:
    return {k: getattr(r, k) for k in ("time_per_round", "compute_per_round", "comm_per_round",
                                       "wire_bytes_per_round", "gather_bytes", "wall")}


def _child(rank, world, port, backend, timeout, A_mu, B_mu, C, opts, reference, conn, beat, fault):
    """A worker of :func:`run_local` (spawned): report over ``conn``, heartbeat in ``beat[rank]``."""
    try:   # die with the parent (Linux)
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except Exception:
        pass
    torch.set_num_threads(1)
    import torch.distributed as dist
    stage = "start"
    _dbg = os.environ.get("EAGLEBOOK_DEBUG") and (lambda *a: print(f"[rank {rank}]", *a, file=sys.stderr, flush=True))
    _dbg = _dbg or (lambda *a: None)
    try:
        _dbg("started")
        conn.send(("started", rank, None))
        if fault is not None and fault[0] == rank and fault[1] == "absent":
            while True:           # started, never joins
                time.sleep(3600)
        stage = "join"
        _dbg("joining")
        conn.send(("joining", rank, None))
        os.environ["GLOO_SOCKET_IFNAME"] = _loopback_ifname()
        store = dist.TCPStore(_LOOPBACK, port, world, False, datetime.timedelta(seconds=timeout))
        dist.init_process_group(backend, store=store, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout))
        _dbg("joined")
        conn.send(("joined", rank, None))
        stage = "run"

        def progress(code):
            beat[rank] = code

        r = run_rank(A_mu, B_mu, C, rank=rank, world=world, backend=backend, device=_device(backend, rank),
                     opts=opts, reference=reference, progress=progress, fault=fault)
        if rank != 0:
            r.D = None
        conn.send(("done", rank, r))
        dist.destroy_process_group()
    except BaseException as e:   # noqa: BLE001 — report everything, then exit non-zero
        try:
            conn.send(("error", rank, (stage, f"{type(e).__name__}: {e}", traceback.format_exc(limit=4))))
        except Exception:
            pass
        os._exit(3)
    finally:
        conn.close()


def _loopback_ifname() -> str:
    for _, name in socket.if_nameindex():
        if name == "lo" or name.startswith("lo"):
            return name
    return "lo"


def run_local(A_blocks: Sequence, B_blocks: Sequence, C, *, backend: str = "gloo", tol=None, atol=0.0,
              max_iter=1000, seed=0, eta=1 / 3, gamma=1.0, rho="power", rho_scale=1.0, power_iters=5,
              rescale=True, freeze_tol=None, rcond=None, certify="gemm", reference=None, timeout: float = 60.0,
              join_timeout: float | None = None, hang_timeout: float | None = None, fault=None) -> DistributedResult:
    """Run distributed EAGLE as M = len(A_blocks) processes on this host (127.0.0.1 only); returns a
    :class:`eaglebook.solver.Result` (the multi-process fields filled in, per process).

    Process μ receives only A_blocks[μ], B_blocks[μ] and C.  The options are those of
    :func:`eaglebook.solver.solve_distributed` (``rho`` ``"exact"`` or ``"power"``), plus
    ``freeze_tol`` (the §E.2 variant; None = never freeze) and:

    certify : ``"gemm"`` (default): stop exactly as ``solve_distributed`` does; its checks reduce 3M floats
        per problem each (a few per run) and the test column adds (d + d') floats to each round.
        ``"svd"``: the checks and the consistency test at the end gather every process's blocks instead
        (about 2·(d + d')·n_μ floats per process per run).  ``"none"``: only the rounds'
        (d + d')·n' + 2M + 1 floats; the change rule and its tail bound decide alone, so the run may stop at
        another round, and ``converged`` is not checked against rank-deficient or inconsistent data.
    backend : ``"gloo"`` (CPU) or ``"nccl"`` (process μ on GPU μ mod the GPU count).
    timeout : seconds a collective, or the rendezvous, may wait (the process group's time-out); also
        the watchdog's limit on a round in which no rank makes progress (``hang_timeout``).
    join_timeout : seconds, from the launch, within which every process must join (default ``timeout``).
    hang_timeout : seconds without progress after which the watchdog declares the slowest rank hung
        (default ``timeout``).
    fault : test hook, ``(rank, kind, round)`` with kind ``"die"`` (SIGKILL), ``"hang"``, ``"raise"``
        or ``"absent"`` (starts, never joins; round ignored).

    Raises :class:`DistributedError` (after stopping every process and closing the port) when a
    worker dies, hangs, never joins or fails; ``ValueError`` for bad arguments.

    The processes work in the same exact power-of-two frame as ``solve_distributed`` (its exponents travel
    in the gather at the start), so the two agree on every status, ``out_of_range`` included.
    """
    import multiprocessing as mp
    from multiprocessing.connection import wait

    import torch.distributed as dist

    if backend not in _BACKENDS:
        raise ValueError(f"argument backend={backend!r} must be one of {_BACKENDS}")
    _check_backend(backend, "argument backend='nccl'")
    A_blocks, B_blocks = as_blocks("A_blocks", A_blocks), as_blocks("B_blocks", B_blocks)
    M = len(A_blocks)
    if len(B_blocks) != M:
        raise ValueError(f"argument B_blocks has {len(B_blocks)} blocks but A_blocks has {M} (need M >= 1)")
    timeout = positive("timeout", timeout)
    join_timeout = timeout if join_timeout is None else positive("join_timeout", join_timeout)
    hang_timeout = timeout if hang_timeout is None else positive("hang_timeout", hang_timeout)
    opts = _opts(tol=tol, atol=atol, max_iter=max_iter, seed=seed, eta=eta, gamma=gamma, rho=rho,
                 rho_scale=rho_scale, power_iters=power_iters, rescale=rescale, freeze_tol=freeze_tol, rcond=rcond,
                 certify=certify)
    # validate everything here, before any process starts (errors name the argument)
    io = _setup(A_blocks, B_blocks, C, opts, first=0, world=M, reference=reference).io

    def host(x):   # what a worker receives: NumPy arrays (torch tensors travel as NumPy, come back as torch)
        return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)

    ctx = mp.get_context("spawn")
    store = dist.TCPStore(_LOOPBACK, 0, None, True, datetime.timedelta(seconds=join_timeout), wait_for_workers=False)
    port = store.port
    beat = ctx.Array("q", [-1] * M, lock=False)
    procs, conns = [], []
    t_launch = time.monotonic()
    try:
        for mu in range(M):
            r_conn, w_conn = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_child, name=f"eagle-rank{mu}", daemon=True,
                            args=(mu, M, port, backend, timeout, host(A_blocks[mu]), host(B_blocks[mu]), host(C),
                                  opts, host(reference) if (reference is not None and mu == 0) else None,
                                  w_conn, beat, fault))
            p.start()
            w_conn.close()
            procs.append(p), conns.append(r_conn)
        try:
            results = _watch(procs, conns, beat, wait, t_launch=t_launch, join_timeout=join_timeout,
                             hang_timeout=hang_timeout)
        except DistributedError as e:
            e.port = port
            raise
    finally:
        _stop(procs)
        for c in conns:
            c.close()
        del store
    r0 = results[0]
    if not io.numpy and isinstance(r0.D, np.ndarray):
        r0.D = torch.as_tensor(r0.D)
    res = _combine(r0, [_stats(results[mu]) for mu in range(M)], backend)
    if not io.numpy:
        res.D = res.D.to(device=io.device, dtype=io.out_torch)
    return res


def _stop(procs):
    for p in procs:
        if p.is_alive():
            p.terminate()
    end = time.monotonic() + 3
    for p in procs:
        p.join(max(0.0, end - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join(2)
    for p in procs:
        try:
            p.close()
        except ValueError:
            pass


def _describe_exit(code) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _round_of(code) -> str:
    return "before its first round" if code < 0 else f"in round {code // 2}"


def _watch(procs, conns, beat, wait, *, t_launch, join_timeout, hang_timeout) -> dict:
    """Collect the workers' results; raise DistributedError at the first fault (root cause first)."""
    M = len(procs)
    state = {mu: "launched" for mu in range(M)}
    results, errors = {}, {}
    open_conns = dict(enumerate(conns))
    last_beat, last_change = list(beat), [time.monotonic()] * M
    while len(results) < M:
        now = time.monotonic()
        ready = wait(list(open_conns.values()) + [p.sentinel for p in procs if p.exitcode is None and
                                                   procs.index(p) not in results], timeout=0.2)
        for mu, c in list(open_conns.items()):
            if c in ready:
                try:
                    kind, _, payload = c.recv()
                except (EOFError, OSError):
                    del open_conns[mu]
                    continue
                last_change[mu] = time.monotonic()   # a message is progress too
                if kind in ("started", "joining", "joined"):
                    state[mu] = kind
                elif kind == "done":
                    results[mu] = payload
                    state[mu] = "done"
                elif kind == "error":
                    errors[mu] = payload
        # deaths: a process gone without a result
        dead = {mu: p.exitcode for mu, p in enumerate(procs) if mu not in results and not p.is_alive()}
        if dead or errors:
            time.sleep(0.3)   # let the other ranks' messages and exits arrive, then name the root cause
            for mu, c in list(open_conns.items()):
                while c.poll():
                    try:
                        kind, _, payload = c.recv()
                    except (EOFError, OSError):
                        break
                    if kind == "error":
                        errors[mu] = payload
            dead = {mu: p.exitcode for mu, p in enumerate(procs) if mu not in results and not p.is_alive()
                    and mu not in errors}
            if dead:
                mu = min(dead, key=lambda k: (beat[k], k))
                raise DistributedError(f"distributed EAGLE failed: rank {mu} died ({_describe_exit(dead[mu])}) "
                                       f"{_round_of(beat[mu])}; the other ranks were stopped", rank=mu, cause="died")
            own = {mu: e for mu, e in errors.items() if e[0] != "run" or not _is_comm_error(e[1])}
            mu = min(own) if own else min(errors)
            stage, msg, tb = errors[mu]
            raise DistributedError(f"distributed EAGLE failed: rank {mu} raised during {stage} "
                                   f"{_round_of(beat[mu])}: {msg}\n{tb}", rank=mu, cause="error")
        now = time.monotonic()
        joined = [mu for mu in range(M) if state[mu] in ("joined", "done")]
        if len(joined) < M and now - t_launch > join_timeout:
            # the culprits: ranks that never reached the rendezvous (others wait in it)
            missing = [mu for mu in range(M) if state[mu] in ("launched", "started")]
            missing = missing or [mu for mu in range(M) if mu not in joined]
            raise DistributedError(f"distributed EAGLE failed: rank {missing[0]} never joined the process group "
                                   f"within {join_timeout:g} s (ranks not joined: {missing})",
                                   rank=missing[0], cause="never joined")
        for mu in range(M):
            if beat[mu] != last_beat[mu]:
                last_beat[mu], last_change[mu] = beat[mu], now
        if len(joined) == M:
            live = [mu for mu in range(M) if mu not in results]
            if live and all(now - last_change[mu] > hang_timeout for mu in live):
                # the culprit computes (even code) while the others wait in the collective (odd code)
                mu = min(live, key=lambda k: (beat[k] % 2, beat[k], k))
                raise DistributedError(f"distributed EAGLE failed: rank {mu} hung {_round_of(beat[mu])} "
                                       f"(no progress for {hang_timeout:g} s; the others were waiting in the "
                                       f"all_reduce); every process was stopped", rank=mu, cause="hung")
    return results


def _is_comm_error(msg: str) -> bool:
    m = msg.lower()
    return any(w in m for w in ("gloo", "connection", "timed out", "timeout", "peer", "nccl", "socket", "closed"))


def tcp_bytes_sent() -> int:
    """TCP payload bytes this process has sent on its open TCP sockets (the kernel's ``TCP_INFO``
    counters: ``tcpi_bytes_sent``, or ``tcpi_bytes_acked`` on older kernels).  Linux only."""
    total = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            s = socket.socket(fileno=os.dup(int(fd)))
        except OSError:
            continue
        try:
            if s.type != socket.SOCK_STREAM or s.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
            if len(raw) >= 208:
                total += struct.unpack_from("Q", raw, 200)[0]
            elif len(raw) >= 128:
                total += struct.unpack_from("Q", raw, 120)[0]
        except OSError:
            pass
        finally:
            s.close()
    return total


# ----------------------------------------------------------------------------------------------
# The torchrun CLI


class CLIError(ValueError):
    """Bad input to the command line: printed as one line, exit status 2."""


_HINT = ("run it under torchrun, one process per machine (torchrun --nproc-per-node M -m {module} ...), "
         "or from Python call eaglebook.solver.distributed.run_local (it starts the processes) or "
         "eaglebook.solve_distributed (one process)")
_ERRORS = ("Bad input (options, the --input file, the --out path) is one line on standard error and exit status 2, "
           "before any process joins.  Under torchrun every process prints that line and exits 2; torchrun then "
           "prints its own summary of the failed processes (ChildFailedError, each rank's exit code) and exits 1: "
           "the cause is the 'error:' line above it.  `python -m {module} --check M ...` checks everything for M "
           "processes without torchrun, so input errors surface before the launch.")


def _parser(module: str) -> argparse.ArgumentParser:
    p = Parser(
        prog=f"torchrun --nproc-per-node M -m {module}", error_name=module,
        description="Distributed EAGLE, one process per machine (torch.distributed).  Process μ reads only its own "
                    "column block of A and B.",
        epilog=_HINT.format(module=module).capitalize() + ".  " + _ERRORS.format(module=module))
    p.add_argument("--input", help=".npz with A, B, C (split into contiguous column blocks) or A_0, B_0, …, "
                                   "A_{M-1}, B_{M-1}, C (one block per process)")
    p.add_argument("--out", required=True, help="output .npz written by rank 0 (its folder must exist)")
    p.add_argument("--backend", choices=_BACKENDS, default=None, help="default: nccl when CUDA is available, else gloo")
    p.add_argument("--tol", type=number(0, lo_open=True), default=None, help="relative tolerance (default: the "
                                                                              "solver's, by dtype)")
    p.add_argument("--atol", type=number(0), default=0.0, help="absolute tolerance (default 0)")
    p.add_argument("--max-iter", type=integer(1), default=1000, help="rounds at most (default 1000)")
    p.add_argument("--rho", choices=("exact", "power"), default="power")
    p.add_argument("--freeze-tol", type=number(0, lo_open=True), default=None,
                   help="freeze the A, B updates once every block is conditioned to this (the paper's §E.2)")
    p.add_argument("--certify", choices=("gemm", "svd", "none"), default="gemm",
                   help="how the status is certified: gemm (products, default), svd (gathers the blocks), none "
                        "(the rounds' (d + d')·n' floats only; the run may stop at another round than "
                        "solve_distributed)")
    p.add_argument("--timeout", type=number(0, lo_open=True), default=300.0,
                   help="seconds a collective or the rendezvous may wait")
    p.add_argument("--check", type=integer(1), default=None, metavar="M",
                   help="check the input, the options and --out for M processes, in this one process without "
                        "torchrun, and exit (0: fine; 2: the error, one line); runs nothing")
    return p


def _array(z, key: str, path: str):
    try:
        a = np.asarray(z[key])
    except ValueError as e:   # object arrays (allow_pickle=False)
        raise CLIError(f"--input {path}: array {key!r} cannot be read ({e})") from None
    if a.dtype.kind not in "biuf":
        raise CLIError(f"--input {path}: array {key!r} must be real numbers, got dtype {a.dtype}")
    if a.ndim < 2 or any(s == 0 for s in a.shape):
        raise CLIError(f"--input {path}: array {key!r} must be a non-empty matrix (or a batch of them), "
                       f"got shape {a.shape}")
    if not np.isfinite(a).all():
        raise CLIError(f"--input {path}: array {key!r} has non-finite entries (NaN or inf)")
    return a


def check_problem(As: list, Bs: list, C, names=None, where: str = "the problem") -> None:
    """``CLIError`` (one line) unless the blocks fit together: every A^μ has C's d rows, every B^μ the same d'
    rows and A^μ's columns, and all share C's batch shape."""
    names = names or ([f"A_{i}" for i in range(len(As))], [f"B_{i}" for i in range(len(Bs))])
    d, batch = C.shape[-2], C.shape[:-2]
    dp = Bs[0].shape[-2]
    for a, b, an, bn in zip(As, Bs, *names):
        if a.shape[-2] != d:
            raise CLIError(f"{where}: {an!r} has {a.shape[-2]} rows but 'C' has {d}: A and C need the same d")
        if b.shape[-1] != a.shape[-1]:
            raise CLIError(f"{where}: {bn!r} has {b.shape[-1]} columns but {an!r} has {a.shape[-1]}")
        if b.shape[-2] != dp:
            raise CLIError(f"{where}: {bn!r} has {b.shape[-2]} rows but {names[1][0]!r} has {dp}")
        if a.shape[:-2] != batch or b.shape[:-2] != batch:
            raise CLIError(f"{where}: {an!r}, {bn!r} and 'C' need the same batch shape, got "
                           f"{a.shape[:-2]}, {b.shape[:-2]}, {batch}")


def load_problem(path: str, rank: int, world: int):
    """Process ``rank``'s blocks (A^μ, B^μ, C) from the ``.npz`` file ``path``, after checking the whole file
    (so every process reaches the same verdict); ``CLIError`` naming what is wrong."""
    if not os.path.isfile(path):
        raise CLIError(f"--input {path}: no such file")
    try:
        z = np.load(path, allow_pickle=False)
    except Exception as e:    # not a zip, truncated, ...
        raise CLIError(f"--input {path} is not a readable .npz archive ({type(e).__name__}: "
                       f"{str(e).split('.')[0]})") from None
    with z:
        keys = set(getattr(z, "files", []))
        if not keys:
            raise CLIError(f"--input {path} is not an .npz archive of named arrays")
        have = ", ".join(sorted(keys)) or "nothing"
        need = "A, B, C (split by columns) or A_0 … A_{M-1}, B_0 … B_{M-1}, C (one block per process)"
        if "C" not in keys:
            raise CLIError(f"--input {path} has no array 'C' (it has {have}); it needs {need}")
        C = _array(z, "C", path)
        if "A_0" in keys or "B_0" in keys:
            missing = [k for i in range(world) for k in (f"A_{i}", f"B_{i}") if k not in keys]
            if missing:
                raise CLIError(f"--input {path} has no array {missing[0]!r} for {world} processes (it has {have}); "
                               f"it needs {need}")
            extra = sorted(k for k in keys if k[:2] in ("A_", "B_") and k[2:].isdigit() and int(k[2:]) >= world)
            if extra:
                raise CLIError(f"--input {path} has blocks for more than {world} processes ({extra[0]!r}); "
                               f"start as many processes as blocks")
            As = [_array(z, f"A_{i}", path) for i in range(world)]
            Bs = [_array(z, f"B_{i}", path) for i in range(world)]
            check_problem(As, Bs, C, where=f"--input {path}")
            return As[rank], Bs[rank], C
        missing = [k for k in ("A", "B") if k not in keys]
        if missing:
            raise CLIError(f"--input {path} has no array {missing[0]!r} (it has {have}); it needs {need}")
        A, B = _array(z, "A", path), _array(z, "B", path)
        check_problem([A], [B], C, (["A"], ["B"]), where=f"--input {path}")
        n = A.shape[-1]
        if n < world:
            raise CLIError(f"--input {path}: 'A' has {n} columns, fewer than the {world} processes")
        lo, hi = machine_edges(n, world)[rank:rank + 2]
        return np.ascontiguousarray(A[..., lo:hi]), np.ascontiguousarray(B[..., lo:hi]), C


def _environment():
    """(rank, world, local rank) from torchrun's environment; ``CLIError`` when it is missing."""
    missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
    if missing:
        raise CLIError(f"not started by torchrun ({', '.join(missing)} unset)")
    try:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0))
    except ValueError:
        raise CLIError("torchrun's RANK / WORLD_SIZE / LOCAL_RANK are not integers") from None


def main(argv=None, *, make_problem: Callable | None = None, extra_args: Callable | None = None,
         module: str = "eaglebook.solver.distributed") -> int:
    """The CLI (run under torchrun: it reads RANK, WORLD_SIZE, LOCAL_RANK and the rendezvous from the
    environment).  ``make_problem(args, rank, world)`` may supply (A^μ, B^μ, C, reference or None)
    instead of ``--input`` (``python -m eaglebook.distributed`` does); ``extra_args(parser)`` adds its
    options; ``module`` is the name the usage shows.  Bad input (no torchrun, a bad or incomplete
    ``.npz``, blocks that do not fit, bad options, an ``--out`` that cannot be written) prints one line on
    standard error and returns 2, before any process joins; under torchrun every process prints its line,
    tagged ``[rank r of M]``.  ``--check M`` checks all of it for M processes without torchrun."""
    parser = _parser(module)
    if extra_args is not None:
        extra_args(parser)
    env = os.environ
    under = all(env.get(k, "").isdigit() for k in ("RANK", "WORLD_SIZE")) and int(env["WORLD_SIZE"]) > 1
    parser.error_prefix = where = f"[rank {env['RANK']} of {env['WORLD_SIZE']}] " if under else ""
    args = parser.parse_args(argv)
    if args.check is not None:
        where = ""
    try:
        return _run_cli(args, make_problem, module)
    except (CLIError, ValueError) as e:   # every process prints its one line (torchrun shows them all)
        msg = one_line(e) or type(e).__name__
        hint = f"; {_HINT.format(module=module)}" if msg.startswith("not started by torchrun") else ""
        print(f"{module}: error: {where}{msg}{hint}", file=sys.stderr)
        return 2


def _run_cli(args, make_problem, module) -> int:
    import torch.distributed as dist

    if args.input is None and make_problem is None:
        raise CLIError("--input is required (or use `-m eaglebook.distributed` to generate a problem)")
    if args.check is not None:
        rank, world, local_rank = 0, args.check, 0
    else:
        rank, world, local_rank = _environment()
    if not args.out.endswith(".npz"):
        raise CLIError(f"--out {args.out}: must name a .npz file (numpy would write {args.out}.npz)")
    if rank == 0:        # rank 0 writes it: its folder is checked before the run, not after
        check_output("--out", args.out)
    opts = _opts(tol=args.tol, atol=args.atol, max_iter=args.max_iter, seed=0, rho=args.rho,
                 freeze_tol=args.freeze_tol, certify=args.certify)
    positive("timeout", args.timeout)
    backend = args.backend or ("nccl" if torch.cuda.is_available() else "gloo")
    if args.check is None:
        _check_backend(backend, "--backend nccl")
    # every option and the blocks, checked before any process joins (so a bad value is one line, not M tracebacks)
    for mu in (range(world) if args.check is not None else [rank]):
        if args.input is not None:
            A_mu, B_mu, C = load_problem(args.input, mu, world)
            ref = None
        else:
            A_mu, B_mu, C, ref = make_problem(args, mu, world)
        _setup([A_mu], [B_mu], C, opts, first=mu, world=world, reference=ref)
    if args.check is not None:
        print(f"{module}: the input and the options are fine for {world} process(es); --out {args.out} can be "
              f"written")
        return 0
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    device = _device(backend, local_rank)
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=args.timeout),
                            **({"device_id": device} if backend == "nccl" else {}))
    try:
        r = run_rank(A_mu, B_mu, C, rank=rank, world=world, backend=backend, device=device, opts=opts,
                     reference=ref if rank == 0 else None)
        gathered = [None] * world if rank == 0 else None
        dist.gather_object(_stats(r), gathered, dst=0)
        if rank == 0:
            res = _combine(r, gathered, backend)
            np.savez(args.out, D=np.asarray(res.D), iterations=res.iterations, status=res.status, delta=res.delta,
                     rel_error=res.rel_error if res.rel_error is not None else np.zeros(0),
                     machines=world, backend=backend, floats_per_round=res.floats_per_round,
                     test_floats_per_round=res.test_floats_per_round,
                     header_floats=res.header_floats, payload_bytes_per_round=res.payload_bytes_per_round,
                     collectives=res.collectives, gathers=res.gathers, gather_bytes=np.asarray(res.gather_bytes),
                     checks=res.checks, level=res.level, time_per_round=np.asarray(res.time_per_round),
                     compute_per_round=np.asarray(res.compute_per_round), comm_per_round=np.asarray(res.comm_per_round),
                     wire_bytes_per_round=np.asarray([np.nan if w is None else w for w in res.wire_bytes_per_round]))
            print(f"distributed EAGLE: {world} processes ({backend}), {res.iterations} rounds, {res.status}; "
                  f"payload {res.payload_bytes_per_round} B per round per process "
                  f"((d + d')·n' = {res.floats_per_round} floats + {res.test_floats_per_round} test column + "
                  f"{res.header_floats} header); median round {1e3 * float(np.median(res.time_per_round)):.3f} ms "
                  f"-> {args.out}")
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

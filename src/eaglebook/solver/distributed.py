"""Distributed EAGLE for real: one process per machine on ``torch.distributed``.

:func:`eaglebook.solver.solve_distributed` *simulates* the M machines of Algorithm 1 in one process.
This module runs them as M processes.  Process μ holds only its own column blocks A^μ, B^μ and the
shared C, D; every round it runs the one UPDATE (:func:`eaglebook.solver.update.step`) on its blocks
with its own ρ^μ, and the machines' C and D increments are averaged by one ``all_reduce`` (a sum,
then a division by M: the mean of :func:`eaglebook.solver.update.combine`).

* **Backend.** ``gloo`` on CPUs, ``nccl`` on GPUs (process μ then computes on ``cuda:<local rank>``);
  nothing else changes.
* **Communication.** One ``all_reduce`` per round of a flat buffer [ΔC | ΔD | header]: the paper's
  (d + d')·n' floats plus a header of 2M + 1 floats per problem (each machine's ηρσ̂² and log2 ‖A^μ_ℓ‖_F,
  in its own slots, and the count of conditioned machines for the freezing variant;
  :func:`header_floats`).  After the reduction every process holds the same C_{ℓ+1}, D_{ℓ+1} and
  header, so each takes the same decision about stopping, with no message of its own.
* **Stopping.** The rule of :func:`eaglebook.solver.solve_distributed`, written once in
  :class:`eaglebook.solver.stopping.StopRule`: the change of D with the geometric tail bound of the changes
  still to come, the stall and regrowth tests, the divergence test (‖C_ℓ‖, ‖A_ℓ‖ grown 4×: the header's
  norms) and, before a run is called converged, the *spectral check*: one SVD of all machines' blocks
  together.  For that check (a few rounds per run) the processes gather their current blocks (an
  ``all_gather``, counted apart from the rounds' bytes); one more gather of the original blocks at the end
  tests consistency (Theorem 2's assumption).  The result equals ``solve_distributed`` to float64
  round-off, with the same iteration count and status.
* **Freezing (the paper's §E.2).** With ``freeze_tol`` set, once every machine's A^μ is conditioned
  (Σ_i (1 − σ_i²/σ_1²)² < freeze_tol over its positive singular values, the paper's
  ‖I − A^{μᵀ}A^μ‖_F² for a normalised A^μ) the A, B updates stop; the C, D updates go on with the
  frozen blocks, as the linear maps C ↦ ΔC, C ↦ ΔD of the UPDATE (obtained once from
  :func:`~eaglebook.solver.update.step` with C = I).

Entry points
------------
* :func:`run_local` spawns M processes on 127.0.0.1 (a free port, chosen by the kernel), each given
  only its own blocks, and returns a :class:`DistributedResult`.  Time-outs and a watchdog turn a
  worker that dies, hangs or never joins into a :class:`DistributedError` naming the rank and the
  cause; every process is stopped and the rendezvous port closed before it is raised.
* :func:`solve_serial` runs the same round loop in one process (the M machines one after another,
  the reduction a plain sum): the reference of the single-process time per round.
* ``torchrun --nproc-per-node M -m eaglebook.solver.distributed --input problem.npz --out out.npz``
  (the problem in a ``.npz`` file; ``python -m eaglebook.distributed`` also generates one from a size
  and a seed).  On a cluster only the launcher's flags change: ``torchrun --nnodes N
  --nproc-per-node K --rdzv-backend c10d --rdzv-endpoint HOST:PORT`` (and ``--backend nccl`` on GPUs).

The bytes are counted twice: the payload each process hands to the round's collective (exact: (d + d')·n'
+ 2M + 1 floats per round), and, for gloo, the TCP payload bytes the process actually sent in the
rounds, read from the kernel's per-socket counters (``TCP_INFO``; a ring all-reduce sends about
2(M − 1)/M times the payload: its reduce-scatter half plus its all-gather half, i.e. the upload to
and the broadcast back from the paper's centre).
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
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from .._arrays import as_rng, check_batch, check_shapes, int_in, machine_edges, positive, prepare
from .._arrays import out as _out
from .eagle import (_POWER_KICK, DEFAULT_TOL, POWER_MARGIN, STATUSES, _consistency_level, _fro, _maxabs, _norm2, _pool,
                    _pow2_factor, _rescale, _spectral_check)
from .stopping import ANNIHILATES, StopRule
from .update import step

__all__ = ["DistributedResult", "DistributedError", "run_local", "solve_serial", "machine_loop", "main",
           "header_floats", "tcp_bytes_sent"]

_LOOPBACK = "127.0.0.1"
_BACKENDS = ("gloo", "nccl")


# ----------------------------------------------------------------------------------------------
# Results and errors


@dataclass
class DistributedResult:
    """What :func:`run_local`, :func:`solve_serial` and the CLI return.

    ``D``, ``iterations``, ``converged``, ``status``, ``delta``, ``rel_error`` are as in
    :class:`eaglebook.solver.Result`.  Per process (lists indexed by rank; one entry for
    :func:`solve_serial`): ``time_per_round`` (median wall seconds of a round), ``compute_per_round``
    (the local UPDATE), ``comm_per_round`` (the all_reduce, waiting for the slowest machine
    included), ``wire_bytes_per_round`` (TCP payload bytes the process sent per round's all_reduce;
    None where not measurable, e.g. NCCL or in-process), ``gather_bytes`` (bytes of its blocks the process
    contributed to the gathers).  ``floats_per_round`` = (d + d')·n'; ``payload_bytes_per_round`` =
    (floats_per_round + header_floats) × bytes per float, what each process hands to each round's
    all_reduce; ``collectives`` = all collective calls: one all_reduce per round plus ``gathers`` (one at
    the start for the column counts, one per spectral check, one for the consistency test at the end).
    ``level``, ``statuses`` and ``checks`` are as in :class:`eaglebook.solver.Result`.
    """

    D: object
    iterations: int
    converged: bool
    status: str
    delta: np.ndarray
    rel_error: np.ndarray | None
    machines: int
    backend: str
    floats_per_round: int
    header_floats: int
    payload_bytes_per_round: int
    collectives: int
    time_per_round: list = field(default_factory=list)
    compute_per_round: list = field(default_factory=list)
    comm_per_round: list = field(default_factory=list)
    wire_bytes_per_round: list = field(default_factory=list)
    frozen_at: int | None = None
    wall: float = 0.0
    level: float = math.nan
    statuses: object = None
    checks: int = 0
    gathers: int = 0
    gather_bytes: list = field(default_factory=list)


class DistributedError(RuntimeError):
    """A distributed run failed; ``rank`` is the culprit (None when it cannot be told) and ``cause``
    says what happened (``died``, ``hung``, ``never joined``, ``error``, ``timeout``)."""

    def __init__(self, message: str, *, rank: int | None, cause: str, port: int | None = None):
        super().__init__(message)
        self.rank, self.cause, self.port = rank, cause, port


# ----------------------------------------------------------------------------------------------
# One machine


class _Machine:
    """Machine μ's state: its stored blocks 2^{k_A}·A^μ, 2^{k_B}·B^μ and power-iteration vector.
    The round body is that of ``solve_distributed`` for one machine, through ``update.step``."""

    def __init__(self, A, B, u, *, eta, gamma, rho, rho_scale, power_iters, rho_pool, rescale, freeze_tol):
        self.A, self.B, self.u = A, B, u
        self.A0, self.B0 = A, B   # the data as given (the consistency test at the end of a run)
        batch = tuple(A.shape[:-2])
        self.kA = torch.zeros(batch + (1, 1), dtype=torch.int64, device=A.device)
        self.kB = self.kA.clone()
        self.eta, self.gamma, self.rho, self.rho_scale = eta, gamma, rho, rho_scale
        self.power_iters, self.rho_pool, self.rescale, self.freeze_tol = power_iters, rho_pool, rescale, freeze_tol
        self.linear = None   # (ΔC(I), ΔD(I)) once frozen
        self.cond = 0.0      # this machine's vote: its A_ℓ is conditioned
        self.lA = None       # log2 of Algorithm 1's own ‖A_ℓ‖_F at the last UPDATE

    def to(self, device):
        for k in ("A", "B", "A0", "B0", "kA", "kB", "u"):
            if getattr(self, k) is not None:
                setattr(self, k, getattr(self, k).to(device))
        return self

    def _rho(self, A, k, kick=None):
        """(ρ, the raw norm estimate σ̂) for the stored A (see ``eagle._loop``)."""
        if self.freeze_tol is not None and self.rho == "exact":   # one SVD for ρ and the conditioning vote
            s = torch.linalg.svdvals(A)
            self.cond = self._conditioned(s)
            sigma = s[..., :1].unsqueeze(-1)
        else:
            if kick is not None:   # the simulation's 1% kick of the warm start (eagle._POWER_KICK)
                self.u = self.u + (_POWER_KICK / math.sqrt(A.shape[-2])) * kick * torch.linalg.vector_norm(
                    self.u, dim=-2, keepdim=True)
            sigma, self.u = _norm2(A, self.rho, self.u, k)
            if self.freeze_tol is not None:
                self.cond = self._conditioned(torch.linalg.svdvals(A))
        margin = POWER_MARGIN if self.rho == "power" else 1.0   # as the single-process solver
        used = _pool(sigma * (self.rho_scale * margin), self.rho_pool)
        rho = torch.where(used > 0, 1.0 / torch.where(used > 0, used, torch.ones_like(used)) ** 2,
                          torch.zeros_like(used))
        return rho, sigma

    def _d_scale(self):
        return _pow2_factor(self.kA - self.kB, self.A.dtype) if self.rescale else 1.0

    def _rescaled(self):
        """Rescale the stored A, B (exact powers of two); log2 of Algorithm 1's own ‖A_ℓ‖_F."""
        if not self.rescale:
            return torch.log2(_fro(self.A))
        self.A, self.kA, lA = _rescale(self.A, self.kA, self.rho_pool)
        self.B, self.kB, _ = _rescale(self.B, self.kB, "instance")
        return lA

    def step(self, C, D, ell, frozen, kick=None):
        """(A', B', ΔC, ΔD, x, lA, conditioned) of this round, nothing committed; x = ηρσ̂² and lA = log2 ‖A_ℓ‖_F
        are what the stopping rule needs from this machine (per instance)."""
        if frozen:
            if self.linear is None:   # the UPDATE's C, D lines as linear maps of C, for the frozen A, B
                self.lA = self._rescaled()
                rho, _ = self._rho(self.A, 2 * self.power_iters)
                eye = torch.eye(self.A.shape[-2], dtype=self.A.dtype, device=self.A.device).expand(
                    *self.A.shape[:-2], -1, -1)
                _, _, GC, GD = step(self.A, self.B, eye, None, 0.0, self.gamma * rho, d_scale=self._d_scale())
                self.linear = (GC, GD)
            GC, GD = self.linear
            return self.A, self.B, GC @ C, GD @ C, torch.zeros_like(self.lA), self.lA, 1.0
        self.lA = self._rescaled()
        rho, sigma = self._rho(self.A, self.power_iters if ell > 0 else 2 * self.power_iters, kick)
        A2, B2, dC, dD = step(self.A, self.B, C, D, self.eta * rho, self.gamma * rho, d_scale=self._d_scale())
        return A2, B2, dC, dD, self.eta * rho * sigma ** 2, self.lA, self.cond

    def _conditioned(self, s) -> float:
        """1.0 when Σ_i (1 − σ_i²/σ_1²)² < freeze_tol over the positive singular values (every batch member)."""
        top = s[..., :1]
        pos = s > top * 1e-8
        dev = torch.where(pos, (1 - (s / torch.where(top > 0, top, torch.ones_like(top))) ** 2) ** 2,
                          torch.zeros_like(s)).sum(-1)
        return float(bool((dev < self.freeze_tol).all()))

    def commit(self, A2, B2):
        self.A, self.B = A2, B2


# ----------------------------------------------------------------------------------------------
# The round loop, shared by every transport


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _Transport:
    """How the local machines talk to the others: ``reduce(bufs)`` sums the flat buffers over all machines;
    ``gather(items)`` returns every machine's item (a tuple of tensors), in machine order; ``bytes_sent()``
    the TCP bytes this process has sent so far (None where not measurable)."""

    def __init__(self, reduce: Callable, gather: Callable, bytes_sent: Callable | None = None):
        self.reduce, self.gather, self.bytes_sent = reduce, gather, bytes_sent


def _local_transport() -> _Transport:
    return _Transport(lambda bufs: torch.stack(bufs).sum(0), lambda items: list(items))


def header_floats(machines: int, batch: int = 1) -> int:
    """Floats of the per-round header: each machine's ηρσ̂² and log2 ‖A^μ_ℓ‖_F per instance (what the stopping
    rule needs from it), and the count of conditioned machines (the freezing variant)."""
    return 2 * machines * batch + 1


def machine_loop(machines: list, C, transport: _Transport, *, world: int, first: int = 0, rng=None,
                 tol=None, atol=0.0, max_iter=1000, rcond=None, reference=None, out_dtype=None,
                 spectral_check: bool = True, progress: Callable | None = None, fault=None, rank: int = 0) -> dict:
    """Run the outer loop of Algorithm 1 for the local ``machines`` (one per process on a real run, all M in
    :func:`solve_serial`; global indices ``first`` …), stopping by the rule of ``solve_distributed``
    (:class:`~eaglebook.solver.stopping.StopRule`).  One ``transport.reduce`` per round sums the flat buffers
    [ΔC | ΔD | header] over all ``world`` machines; the spectral check (rare) and the consistency test at
    the end gather the blocks.  Every process sees the same reduced numbers and so takes the same decisions.
    ``rng`` continues the generator that drew the power vectors (the kicks of ``rho="power"``).
    ``spectral_check=False`` never gathers: the rule's checks see no band and no dropped directions (the
    change rule and its tail bound decide alone) and the consistency test is skipped, so the run may stop at
    another round than ``solve_distributed`` and ``converged`` is not verified against rank deficiency.
    Returns the final D, the statuses and the per-round statistics."""
    dtype, device = C.dtype, C.device
    batch = tuple(C.shape[:-2])
    nb = max(1, math.prod(batch))
    dp = machines[0].B.shape[-2]
    d = C.shape[-2]
    D = torch.zeros(batch + (dp, C.shape[-1]), dtype=dtype, device=device)
    nC, nD = C.numel(), D.numel()
    H = header_floats(world, nb)
    bufs = [torch.zeros(nC + nD + H, dtype=dtype, device=device) for _ in machines]
    eps = torch.finfo(dtype).eps
    tol = DEFAULT_TOL[dtype] if tol is None else float(tol)
    ref_norm2 = float((reference ** 2).sum()) if reference is not None else None
    progress = progress or (lambda code: None)
    flat = lambda x: x.reshape((nb,) + tuple(x.shape[-2:]))
    host = lambda x: x.reshape(-1).to(torch.float64).cpu().numpy()
    gathers, gather_bytes = 0, 0

    def gather(items):   # collective: every process calls it at the same point of the loop
        nonlocal gathers, gather_bytes
        progress(-1 if ell == 0 else 2 * ell + 1)
        out = transport.gather([tuple(x.cpu() for x in it) for it in items])
        gathers += 1
        gather_bytes += sum(x.numel() * x.element_size() for it in items for x in it)
        return [tuple(x.to(device) for x in it) for it in out]

    ell = 0
    n_total = sum(int(t[0]) for t in gather([(torch.tensor([m.A.shape[-1]]),) for m in machines]))
    rc = float(rcond) if rcond is not None else max(d, n_total) * eps
    rule = StopRule(nb, tol=tol, atol_f=np.full(nb, float(atol)), machines=world, n=n_total, rcond=rc,
                    floor=max(d, n_total) * eps / 2)
    rule.start(host(torch.log2(_fro(C))))
    kick = machines[0].rho == "power" and machines[0].u is not None
    frozen, frozen_at = False, None
    deltas, rels, t_comp, t_comm, t_round = [], [], [], [], []
    rounds_wire = 0
    Dout = D.clone()
    start = time.perf_counter()
    while True:
        progress(2 * ell)
        _inject(fault, rank, ell)
        t0 = time.perf_counter()
        kicks = ([torch.as_tensor(rng.standard_normal(batch + (d, 1)), dtype=dtype, device=device)
                  for _ in range(world)] if kick and ell > 0 else None)
        pending = []
        for j, (m, buf) in enumerate(zip(machines, bufs)):
            g = first + j
            A2, B2, dC, dD, x, lA, cond = m.step(C, D, ell, frozen, kicks[g] if kicks else None)
            buf[:nC] = dC.reshape(-1)
            buf[nC:nC + nD] = dD.reshape(-1)
            head = buf[nC + nD:]
            head.zero_()
            head[g * nb:(g + 1) * nb] = x.reshape(-1)
            head[(world + g) * nb:(world + g + 1) * nb] = lA.reshape(-1).to(dtype)
            head[-1] = cond
            pending.append((A2, B2))
        _sync(device)
        t1 = time.perf_counter()
        progress(2 * ell + 1)
        w0 = transport.bytes_sent() if transport.bytes_sent else 0
        total = transport.reduce(bufs)
        _sync(device)
        t2 = time.perf_counter()
        rounds_wire += (transport.bytes_sent() - w0) if transport.bytes_sent else 0
        t_comp.append(t1 - t0), t_comm.append(t2 - t1)
        head = total[nC + nD:]
        x_max = head[:world * nb].view(world, nb).amax(0)
        lA_max = head[world * nb:2 * world * nb].view(world, nb).amax(0)
        for m, (A2, B2) in zip(machines, pending):
            m.commit(A2, B2)
        if not frozen and machines[0].freeze_tol is not None and float(head[-1]) >= world:
            frozen, frozen_at = True, ell + 1
        C = C + total[:nC].view_as(C) / world
        D_new = D + total[nC:nC + nD].view_as(D) / world
        ell += 1
        fd = _fro(D_new - D)
        deltas.append(float(fd.max()) if fd.numel() else 0.0)
        if reference is not None:
            sq = float(((D_new.to(torch.float64) - reference) ** 2).sum())
            rels.append(math.sqrt(sq / ref_norm2) if ref_norm2 > 0 else (0.0 if sq == 0 else math.inf))
        finish, trig = rule.observe(
            ell, fd=host(fd), nD=host(_fro(D_new)), finite=torch.isfinite(flat(D_new)).all(-1).all(-1).cpu().numpy(),
            lC=host(torch.log2(_fro(C))), lA=host(lA_max),
            growth=host(-torch.log1p(-x_max.clamp(0.0, 0.9))), annihilates=(x_max >= ANNIHILATES).cpu().numpy())
        source = {"cur": flat(D_new), "prev": flat(D), "fin": flat(D_new)}   # distributed keeps D_ℓ
        if trig and not spectral_check:   # the change rule alone
            finish |= rule.resolve(ell, trig, np.full(nb, math.inf), np.zeros(nb))
        elif trig:
            blocks = gather([(m.A, m.B, m.kA, m.kB) for m in machines])
            band_min, _, err_rel = _spectral_check([b[0] for b in blocks], [b[1] for b in blocks], C, D_new,
                                                   [b[2] for b in blocks], [b[3] for b in blocks],
                                                   rule.growth_tensor(C), rc, machines[0].gamma)
            if frozen:   # frozen blocks are conditioned no further: no band to wait for (the change rule decides)
                band_min = np.full_like(band_min, math.inf)
            finish |= rule.resolve(ell, trig, band_min, err_rel)
        for i in rule.write(flat(Dout), finish, source):   # a finished instance stops changing
            for X_ in (*(m.A for m in machines), *(m.B for m in machines), C):
                flat(X_)[i] = 0
        D = D_new
        t_round.append(time.perf_counter() - t0)
        if rule.done.all() or ell >= max_iter:
            break
    rule.fill(flat(Dout), flat(D))
    rule.close(ell)
    if spectral_check and world > 1 and bool((rule.status == "converged").any()):   # the same on every process
        blocks = gather([(m.A0, m.B0) for m in machines])
        rule.consistency(*_consistency_level([b[0] for b in blocks], [b[1] for b in blocks], C, rc), d=d, eps=eps)
    rule.out_of_range(host(_maxabs(Dout)), torch.finfo(out_dtype or dtype))
    status = next((s for s in STATUSES[::-1] if s in set(rule.status)), "converged")
    wall = time.perf_counter() - start
    med = (lambda xs: float(np.median(xs)) if xs else 0.0)
    return dict(D=Dout, iterations=ell, status=status, statuses=rule.status.reshape(batch) if batch else None,
                level=float(np.nanmax(rule.level)) if np.any(np.isfinite(rule.level)) else math.nan,
                checks=rule.checks, delta=np.asarray(deltas, dtype=np.float64),
                rel_error=np.asarray(rels, dtype=np.float64) if reference is not None else None,
                collectives=ell + gathers, gathers=gathers, gather_bytes=gather_bytes,
                time_per_round=med(t_round), compute_per_round=med(t_comp), comm_per_round=med(t_comm),
                wire_bytes_per_round=rounds_wire / ell if transport.bytes_sent and ell else None,
                frozen_at=frozen_at, wall=wall, header_floats=H,
                payload_bytes=(nC + nD + H) * bufs[0].element_size(),
                floats=(d + dp) * C.shape[-1] * nb)


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


def _make_machines(A_list, B_list, C, *, seed, eta, gamma, rho, rho_scale, power_iters, rho_pool, rescale,
                   freeze_tol, first: int, world: int):
    """Validated tensors, the machine objects for ranks first … first + len(A_list) − 1 and the generator
    (continued by the power method's kicks)."""
    positive("eta", eta)
    positive("gamma", gamma)
    if rho not in ("exact", "power"):
        raise ValueError(f"argument rho={rho!r} must be 'exact' or 'power'")
    int_in("power_iters", power_iters, 1)
    if freeze_tol is not None:
        positive("freeze_tol", freeze_tol)
    named = {}
    for i, (a, b) in enumerate(zip(A_list, B_list)):
        named[f"A_blocks[{first + i}]"], named[f"B_blocks[{first + i}]"] = a, b
    named["C"] = C
    ts, io = prepare(named)
    check_batch(ts, "C")
    d = ts["C"].shape[-2]
    for i in range(len(A_list)):
        an, bn = f"A_blocks[{first + i}]", f"B_blocks[{first + i}]"
        try:
            check_shapes(ts[an], ts[bn], ts["C"])
        except ValueError as e:
            raise ValueError(str(e).replace("argument A ", f"argument {an} ").replace("argument B ", f"argument {bn} ")
                             .replace("but A has", f"but {an} has")) from None
    rng = as_rng(seed)
    batch = tuple(ts["C"].shape[:-2])
    us = [None] * world
    if rho == "power":   # the simulation draws every machine's start vector from one generator, in order
        us = [torch.as_tensor(rng.standard_normal(batch + (d, 1)), dtype=io.compute, device=io.device)
              for _ in range(world)]
    ms = [_Machine(ts[f"A_blocks[{first + i}]"], ts[f"B_blocks[{first + i}]"], us[first + i], eta=float(eta),
                   gamma=float(gamma), rho=rho, rho_scale=float(rho_scale), power_iters=int(power_iters),
                   rho_pool=rho_pool, rescale=bool(rescale), freeze_tol=freeze_tol)
          for i in range(len(A_list))]
    return ms, ts["C"], io, rng


def solve_serial(A_blocks: Sequence, B_blocks: Sequence, C, *, tol=None, atol=0.0, max_iter=1000, seed=0,
                 eta=1 / 3, gamma=1.0, rho="power", rho_scale=1.0, power_iters=5, rescale=True,
                 freeze_tol=None, rcond=None, spectral_check=True, reference=None) -> DistributedResult:
    """The round loop of the multi-process solver in one process: the M machines one after another
    and the reduction a plain sum.  Same arguments and result as :func:`run_local`."""
    M = len(A_blocks)
    if M < 1 or len(B_blocks) != M:
        raise ValueError(f"argument B_blocks has {len(B_blocks)} blocks but A_blocks has {M} (need M >= 1)")
    ms, Ct, io, rng = _make_machines(list(A_blocks), list(B_blocks), C, seed=seed, eta=eta, gamma=gamma, rho=rho,
                                     rho_scale=rho_scale, power_iters=power_iters, rho_pool="instance",
                                     rescale=rescale, freeze_tol=freeze_tol, first=0, world=M)
    ref = None if reference is None else torch.as_tensor(np.asarray(reference), dtype=torch.float64)
    r = machine_loop(ms, Ct, _local_transport(), world=M, rng=rng, tol=tol, atol=atol,
                     max_iter=int_in("max_iter", max_iter, 1), rcond=_rcond(rcond), reference=ref,
                     out_dtype=io.out_torch, spectral_check=bool(spectral_check))
    return _result(r, [r], io, M, "serial")


def _rcond(rcond):
    return None if rcond is None else positive("rcond", rcond)


def _result(r0: dict, stats: list, io, M: int, backend: str) -> DistributedResult:
    return DistributedResult(
        D=_out(io, r0["D"]) if io is not None else r0["D"], iterations=r0["iterations"],
        converged=r0["status"] == "converged", status=r0["status"], delta=r0["delta"], rel_error=r0["rel_error"],
        machines=M, backend=backend, floats_per_round=r0["floats"], header_floats=r0["header_floats"],
        payload_bytes_per_round=r0["payload_bytes"], collectives=r0["collectives"],
        time_per_round=[s["time_per_round"] for s in stats], compute_per_round=[s["compute_per_round"] for s in stats],
        comm_per_round=[s["comm_per_round"] for s in stats],
        wire_bytes_per_round=[s["wire_bytes_per_round"] for s in stats], frozen_at=r0["frozen_at"],
        wall=max(s["wall"] for s in stats), level=r0["level"], statuses=r0["statuses"], checks=r0["checks"],
        gathers=r0["gathers"], gather_bytes=[s["gather_bytes"] for s in stats])


# ----------------------------------------------------------------------------------------------
# Bytes on the wire


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
# One process of a real run (run_local's workers and the torchrun CLI)


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
    dist.all_gather_object(out, items[0])
    return out


def run_rank(A_mu, B_mu, C, *, rank: int, world: int, backend: str, device: torch.device, opts: dict,
             reference=None, progress=None, fault=None) -> dict:
    """Process ``rank``'s part of a run, in an initialised process group: its machine, the rounds."""
    ms, Ct, io, rng = _make_machines([A_mu], [B_mu], C, first=rank, world=world, **opts["machine"])
    ms[0].to(device)
    ref = None if reference is None else torch.as_tensor(np.asarray(reference), dtype=torch.float64, device=device)
    transport = _Transport(_all_reduce, _all_gather, tcp_bytes_sent if backend == "gloo" else None)
    r = machine_loop(ms, Ct.to(device), transport, world=world, first=rank, rng=rng, rank=rank, reference=ref,
                     progress=progress, fault=fault, out_dtype=io.out_torch, **opts["loop"])
    r["D"] = _out(io, r["D"].cpu()) if io.numpy else r["D"].cpu()
    return r


def _opts(*, tol, atol, max_iter, seed, eta, gamma, rho, rho_scale, power_iters, rescale, freeze_tol,
          rcond=None, spectral_check=True) -> dict:
    return {"machine": dict(seed=seed, eta=eta, gamma=gamma, rho=rho, rho_scale=rho_scale, power_iters=power_iters,
                            rho_pool="instance", rescale=rescale, freeze_tol=freeze_tol),
            "loop": dict(tol=tol, atol=float(atol), max_iter=int_in("max_iter", max_iter, 1), rcond=_rcond(rcond),
                         spectral_check=bool(spectral_check))}


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
            r["D"] = None
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
              rescale=True, freeze_tol=None, rcond=None, spectral_check=True, reference=None, timeout: float = 60.0,
              join_timeout: float | None = None, hang_timeout: float | None = None, fault=None) -> DistributedResult:
    """Run distributed EAGLE as M = len(A_blocks) processes on this host (127.0.0.1 only).

    Process μ receives only A_blocks[μ], B_blocks[μ] and C.  The options are those of
    :func:`eaglebook.solver.solve_distributed` (``rho`` ``"exact"`` or ``"power"``), plus
    ``freeze_tol`` (the §E.2 variant; None = never freeze) and:

    spectral_check : True (default): stop exactly as ``solve_distributed`` does; its spectral checks (a few
        per run) and the consistency test at the end gather every process's blocks, about 2·(d + d')·n_μ
        floats per process per run on top of the rounds.  False: never gather (only the rounds'
        (d + d')·n' + 2M + 1 floats); the change rule and its tail bound decide alone, so the run may stop
        at another round, and ``converged`` is not checked against rank-deficient or inconsistent data.
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

    One known difference from ``solve_distributed``: each process rescales its own A^μ, B^μ by powers of
    two, but C and D stay in their true scale (a common frame would need one more collective), so a
    completion B A^† C that overflows the *compute* dtype (float32 data with |D| > 3e38) ends
    ``non_finite`` here where ``solve_distributed`` says ``out_of_range``; neither is ``converged``.
    """
    import multiprocessing as mp
    from multiprocessing.connection import wait

    import torch.distributed as dist

    if backend not in _BACKENDS:
        raise ValueError(f"argument backend={backend!r} must be one of {_BACKENDS}")
    A_blocks, B_blocks = list(A_blocks), list(B_blocks)
    M = len(A_blocks)
    if M < 1 or len(B_blocks) != M:
        raise ValueError(f"argument B_blocks has {len(B_blocks)} blocks but A_blocks has {M} (need M >= 1)")
    timeout = positive("timeout", timeout)
    join_timeout = timeout if join_timeout is None else positive("join_timeout", join_timeout)
    hang_timeout = timeout if hang_timeout is None else positive("hang_timeout", hang_timeout)
    opts = _opts(tol=tol, atol=atol, max_iter=max_iter, seed=seed, eta=eta, gamma=gamma, rho=rho,
                 rho_scale=rho_scale, power_iters=power_iters, rescale=rescale, freeze_tol=freeze_tol, rcond=rcond,
                 spectral_check=spectral_check)
    # validate everything here, before any process starts (errors name the argument)
    _, _, io, _ = _make_machines(A_blocks, B_blocks, C, first=0, world=M, **opts["machine"])

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
    if not io.numpy and isinstance(r0["D"], np.ndarray):
        r0["D"] = torch.as_tensor(r0["D"])
    res = _result(r0, [results[mu] for mu in range(M)], None, M, backend)
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


# ----------------------------------------------------------------------------------------------
# The torchrun CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="torchrun --nproc-per-node M -m eaglebook.solver.distributed",
        description="Distributed EAGLE, one process per machine (torch.distributed).  Process μ reads only its own "
                    "column block of A and B.")
    p.add_argument("--input", help=".npz with A, B, C (split into contiguous column blocks) or A_0, B_0, …, "
                                   "A_{M-1}, B_{M-1}, C (one block per process)")
    p.add_argument("--out", required=True, help="output .npz written by rank 0")
    p.add_argument("--backend", choices=_BACKENDS, default=None, help="default: nccl when CUDA is available, else gloo")
    p.add_argument("--tol", type=float, default=None)
    p.add_argument("--atol", type=float, default=0.0)
    p.add_argument("--max-iter", type=int, default=1000)
    p.add_argument("--rho", choices=("exact", "power"), default="power")
    p.add_argument("--freeze-tol", type=float, default=None)
    p.add_argument("--no-spectral-check", dest="spectral_check", action="store_false",
                   help="never gather the blocks (communication within (d + d')·n' floats per round); the run may "
                        "stop at another round than solve_distributed")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a collective or the rendezvous may wait")
    return p


def _load_block(path: str, rank: int, world: int):
    with np.load(path) as z:
        if f"A_{rank}" in z.files:
            return z[f"A_{rank}"], z[f"B_{rank}"], z["C"]
        A = z["A"]
        lo, hi = machine_edges(A.shape[-1], world)[rank:rank + 2]
        A_mu = np.ascontiguousarray(A[..., lo:hi])
        del A
        return A_mu, np.ascontiguousarray(z["B"][..., lo:hi]), z["C"]


def main(argv=None, *, make_problem: Callable | None = None, extra_args: Callable | None = None) -> int:
    """The CLI (run under torchrun: it reads RANK, WORLD_SIZE, LOCAL_RANK and the rendezvous from the
    environment).  ``make_problem(args, rank, world)`` may supply (A^μ, B^μ, C, reference or None)
    instead of ``--input`` (``python -m eaglebook.distributed`` does); ``extra_args(parser)`` adds its
    options."""
    import torch.distributed as dist

    parser = _parser()
    if extra_args is not None:
        extra_args(parser)
    args = parser.parse_args(argv)
    if args.input is None and make_problem is None:
        parser.error("--input is required (or use `-m eaglebook.distributed` to generate a problem)")
    backend = args.backend or ("nccl" if torch.cuda.is_available() else "gloo")
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    device = _device(backend, local_rank)
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=args.timeout),
                            **({"device_id": device} if backend == "nccl" else {}))
    try:
        if args.input is not None:
            A_mu, B_mu, C = _load_block(args.input, rank, world)
            ref = None
        else:
            A_mu, B_mu, C, ref = make_problem(args, rank, world)
        opts = _opts(tol=args.tol, atol=args.atol, max_iter=args.max_iter, seed=0, eta=1 / 3, gamma=1.0, rho=args.rho,
                     rho_scale=1.0, power_iters=5, rescale=True, freeze_tol=args.freeze_tol,
                     spectral_check=args.spectral_check)
        r = run_rank(A_mu, B_mu, C, rank=rank, world=world, backend=backend, device=device, opts=opts,
                     reference=ref if rank == 0 else None)
        stats = {k: r[k] for k in ("time_per_round", "compute_per_round", "comm_per_round", "wire_bytes_per_round", "wall",
                                   "gather_bytes")}
        gathered = [None] * world if rank == 0 else None
        dist.gather_object(stats, gathered, dst=0)
        if rank == 0:
            res = _result(r, gathered, None, world, backend)
            np.savez(args.out, D=np.asarray(res.D), iterations=res.iterations, status=res.status, delta=res.delta,
                     rel_error=res.rel_error if res.rel_error is not None else np.zeros(0),
                     machines=world, backend=backend, floats_per_round=res.floats_per_round,
                     header_floats=res.header_floats, payload_bytes_per_round=res.payload_bytes_per_round,
                     collectives=res.collectives, gathers=res.gathers, gather_bytes=np.asarray(res.gather_bytes),
                     checks=res.checks, level=res.level, time_per_round=np.asarray(res.time_per_round),
                     compute_per_round=np.asarray(res.compute_per_round), comm_per_round=np.asarray(res.comm_per_round),
                     wire_bytes_per_round=np.asarray([np.nan if w is None else w for w in res.wire_bytes_per_round]))
            print(f"distributed EAGLE: {world} processes ({backend}), {res.iterations} rounds, {res.status}; "
                  f"payload {res.payload_bytes_per_round} B per round per process "
                  f"((d + d')·n' = {res.floats_per_round} floats + {res.header_floats}); "
                  f"median round {1e3 * float(np.median(res.time_per_round)):.3f} ms -> {args.out}")
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

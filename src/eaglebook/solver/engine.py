"""The outer loop of Algorithm 1 and its stopping rule, written once for every transport.

:func:`rounds` runs the rounds: every local :class:`~eaglebook.solver.machine.Machine` makes its step
(:meth:`~eaglebook.solver.machine.Machine.step`), one ``transport.reduce`` sums the flat buffers
[ΔC | ΔD | header] over all machines, and C, D move by the mean of the machines' increments.  :func:`run`
drives the rounds with :class:`~eaglebook.solver.stopping.StopRule` and the checks of
:mod:`eaglebook.solver.certify`, in an exact power-of-two frame, and returns a
:class:`~eaglebook.solver.result.Result`.

The in-process solvers (:func:`eaglebook.solve`, :func:`eaglebook.solve_distributed`,
:func:`eaglebook.solver.distributed.solve_serial`) call :func:`run` with all M machines local and
:func:`local_transport` (the reduction a plain sum); each process of the multi-process engine
(:mod:`eaglebook.solver.distributed`) calls it with its own machine and a ``torch.distributed`` transport.
Every process sees the same reduced numbers, so every process takes the same decisions.

Collectives of a run: one gather at the start (each machine's column count and the exponents of its
blocks, for the common frame), one reduction for the test column (sketched and distributed, ``certify=
"gemm"``), one reduction per round, one small reduction per check (``certify="gemm"``: the machines'
certificates, 3 floats per machine and instance) or a gather of the blocks (``certify="svd"``), and for
``certify="svd"`` one gather of the original blocks at the end.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Iterator, NamedTuple

import numpy as np
import torch

from . import purify as purify_mod
from .certify import (FIELDS, TEST_SEED, Certificate, combine, pack, refine_sigma, svd_check, svd_consistency,
                      test_column, test_level, unpack)
from .machine import Machine, Options, draw_sketch
from .norms import exponent, fro, growth_log, maxabs, mul_pow2
from .result import Result
from .status import worst
from .stopping import ANNIHILATES, StopRule

__all__ = ["Transport", "local_transport", "Round", "rounds", "run", "header_floats", "DEFAULT_TOL",
           "test_threshold"]

#: Default relative stopping tolerance per compute dtype (see :func:`eaglebook.solve`).
DEFAULT_TOL = {torch.float64: 1e-12, torch.float32: 1e-6}


class Transport:
    """How the local machines talk to the others: ``reduce(bufs)`` sums the flat buffers of the local
    machines over all machines; ``gather(items)`` returns every machine's item (a tuple of tensors), in
    machine order; ``bytes_sent()`` the TCP bytes this process has sent so far (None where not measurable)."""

    def __init__(self, reduce: Callable, gather: Callable, bytes_sent: Callable | None = None, local: bool = False):
        self.reduce, self.gather, self.bytes_sent = reduce, gather, bytes_sent
        self.local = local      # every machine in this process, the reduction a plain sum
        self.collectives = 0
        self.gathers = 0
        self.gather_bytes = 0

    def sum(self, bufs):
        self.collectives += 1
        return self.reduce(bufs)

    def collect(self, items):
        self.collectives += 1
        self.gathers += 1
        self.gather_bytes += sum(x.numel() * x.element_size() for it in items for x in it)
        return self.gather(items)


def local_transport() -> Transport:
    """All machines in this process: the reduction is a plain sum, the gather the list itself."""
    return Transport(lambda bufs: torch.stack(bufs).sum(0), lambda items: list(items), local=True)


def header_floats(machines: int, batch: int = 1) -> int:
    """Floats of the per-round header: each machine's ηρσ̂² and log2 ‖A^μ_ℓ‖_F per instance (what the
    stopping rule needs from it), and the count of conditioned machines (the freezing variant)."""
    return 2 * machines * batch + 1


def test_threshold(tol: float, p: int, eps: float) -> float:
    """The largest relative error of the test column that still certifies consistent data."""
    return 100 * max(tol, p * eps)


class Round(NamedTuple):
    """One round, as :func:`rounds` yields it: ℓ, C_ℓ, D_ℓ (the machines hold A_ℓ, B_ℓ), the largest
    ηρσ̂² and log2 ‖A^μ_{ℓ−1}‖_F over the machines (batch + (1, 1); None at ℓ = 0), the sketch's columns,
    the freezing vote count and the seconds of the local steps and of the reduction."""
    ell: int
    C: torch.Tensor
    D: torch.Tensor
    x: torch.Tensor | None
    lA: torch.Tensor | None
    cols: torch.Tensor | None
    votes: float
    t_compute: float
    t_comm: float
    wire: int = 0


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def rounds(machines: list, C, D, transport: Transport, *, world: int, first: int = 0, rng=None,
           progress: Callable | None = None, hook: Callable | None = None, frozen: Callable | None = None
           ) -> Iterator[Round]:
    """Run Algorithm 1's rounds forever on the local ``machines`` (global indices ``first`` …), yielding a
    :class:`Round` after each (ℓ = 0 first, before any update).  ``rng`` draws the sketches (one machine)
    and the kicks of ``rho="power"``, in the order of the single-process simulation.  ``hook(ell)`` runs
    before each round (the multi-process engine's fault injection), ``progress(code)`` gets 2ℓ before
    the local steps and 2ℓ + 1 before the reduction (a heartbeat); ``frozen()`` says whether the §E.2
    variant froze A, B."""
    dtype, device = C.dtype, C.device
    batch = tuple(C.shape[:-2])
    nb = max(1, math.prod(batch))
    d = C.shape[-2]
    nC, nD = C.numel(), D.numel()
    H = header_floats(world, nb)
    o: Options = machines[0].opts
    progress = progress or (lambda code: None)
    bufs = [torch.zeros(nC + nD + H, dtype=dtype, device=device) for _ in machines]
    ell = 0
    yield Round(0, C, D, None, None, None, 0.0, 0.0, 0.0)
    while True:
        progress(2 * ell)
        if hook is not None:
            hook(ell)
        t0 = time.perf_counter()
        cols = None
        if o.sketch is not None:        # one machine: a fresh sketch each round (or once)
            m = machines[0]
            if m.sketch is None or o.redraw:
                m.sketch = draw_sketch(m.n, o.sketch, o.sketch_kind, rng, dtype, device)
            cols = m.sketch[0]
        noise = ([torch.as_tensor(rng.standard_normal(batch + (d, 1)), dtype=dtype, device=device)
                  for _ in range(world)] if o.rho == "power" and ell > 0 else None)
        is_frozen = bool(frozen()) if frozen is not None else False
        if world == 1 and transport.local:    # one machine in this process: no buffer to pack and reduce
            m = machines[0]
            s = m.step(C, D, ell, noise=noise[0] if noise else None, sketch=m.sketch if o.sketch is not None else None,
                       frozen=is_frozen)
            _sync(device)
            t1 = time.perf_counter()
            progress(2 * ell + 1)
            transport.collectives += 1
            x_max = s.x.to(dtype).reshape(batch + (1, 1))
            lA_max = s.lA.to(dtype).reshape(batch + (1, 1))
            C, D = C + s.dC.view_as(C), D + s.dD.view_as(D)
            ell += 1
            yield Round(ell, C, D, x_max, lA_max, cols, float(s.cond), t1 - t0, 0.0, 0)
            continue
        for j, (m, buf) in enumerate(zip(machines, bufs)):
            g = first + j
            s = m.step(C, D, ell, noise=noise[g] if noise else None, sketch=m.sketch if o.sketch is not None else None,
                       frozen=is_frozen)
            buf[:nC] = s.dC.reshape(-1)
            buf[nC:nC + nD] = s.dD.reshape(-1)
            head = buf[nC + nD:]
            head.zero_()
            head[g * nb:(g + 1) * nb] = s.x.reshape(-1)
            head[(world + g) * nb:(world + g + 1) * nb] = s.lA.reshape(-1).to(dtype)
            head[-1] = s.cond
        _sync(device)
        t1 = time.perf_counter()
        progress(2 * ell + 1)
        w0 = transport.bytes_sent() if transport.bytes_sent else 0
        total = transport.sum(bufs)
        _sync(device)
        t2 = time.perf_counter()
        wire = (transport.bytes_sent() - w0) if transport.bytes_sent else 0
        head = total[nC + nD:]
        x_max = head[:world * nb].view(world, nb).amax(0).reshape(batch + (1, 1))
        lA_max = head[world * nb:2 * world * nb].view(world, nb).amax(0).reshape(batch + (1, 1))
        if world == 1:
            C, D = C + total[:nC].view_as(C), D + total[nC:nC + nD].view_as(D)
        else:   # the centre averages the machines' C'^μ, D'^μ (summing instead diverges)
            C, D = C + total[:nC].view_as(C) / world, D + total[nC:nC + nD].view_as(D) / world
        ell += 1
        yield Round(ell, C, D, x_max, lA_max, cols, float(head[-1]), t1 - t0, t2 - t1, wire)


def _frame(As, Bs, C, transport: Transport, *, world: int, rho_pool: str):
    """The exact power-of-two frame: the solver iterates on 2^-a A, 2^-b B, 2^-c C (max-abs entries in
    [1/2, 1); a and b common to all machines), whose completion is 2^(a-b-c) D.  Returns the framed local
    blocks, C, E = b + c − a (batch + (1, 1)), the total column count and the first local column."""
    items = [(torch.tensor([a.shape[-1]]), exponent(maxabs(a)).cpu(), exponent(maxabs(b)).cpu())
             for a, b in zip(As, Bs)]
    everyone = transport.collect(items)
    counts = [int(it[0][0]) for it in everyone]
    eA = torch.stack([it[1] for it in everyone]).amax(0).to(C.device)
    if rho_pool == "batch_max" and eA.ndim > 2:          # ρ is pooled: keep the norms comparable
        eA = eA.amax(dim=tuple(range(eA.ndim - 2)), keepdim=True).expand_as(eA)
    eB = torch.stack([it[2] for it in everyone]).amax(0).to(C.device)
    eC = exponent(maxabs(C))
    As = [mul_pow2(a, -eA) for a in As]
    Bs = [mul_pow2(b, -eB) for b in Bs]
    return As, Bs, mul_pow2(C, -eC), eB + eC - eA, counts


def _separated(m: Machine, rule: StopRule, trig, resolved: dict, cert: Certificate, rc: float, C0, purify: bool,
               want_rank: bool, ranks: np.ndarray, purified: dict) -> None:
    """At a centralized check, for the instances it ended whose spectrum is separated at the cut-off (no
    direction between the grown cut-off and 1/2, none in the window below it, and a grown cut-off still small):
    their rank (``want_rank``) and, for those ended ``rank_deficient``, the data to solve again (``purify``),
    from the conditioned A_ℓ (:mod:`eaglebook.solver.purify`)."""
    why = dict(trig)
    sel = [i for i in resolved if why.get(i) != "cut" and cert.wait[i] <= 1 and cert.near[i] == 0
           and rc * math.exp(rule.log_growth[i]) <= purify_mod.SEPARATED]
    if not sel:
        return
    nb = rule.nb
    fl = lambda X: X.reshape((nb,) + tuple(X.shape[-2:]))[sel]    # noqa: E731
    A = fl(m.A)
    sigma = refine_sigma(A, fl(m.u) if m.u is not None else None)
    if want_rank:
        ranks[sel] = np.rint(purify_mod.rank(A, sigma).cpu().numpy()).astype(np.int64)
    again = [j for j, i in enumerate(sel) if purify and rule.status[i] == "rank_deficient"]
    if again:
        Bp, Cp = purify_mod.project(A[again], sigma[again], fl(m.B0)[again], fl(C0)[again])
        for j, k in enumerate(again):
            purified[sel[k]] = (Bp[j], Cp[j])


def _rel(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num > 0, math.inf, 0.0))


def run(As: list, Bs: list, C, opts: Options, transport: Transport, *, world: int, first: int = 0, rng,
        us: list, tol=None, atol: float = 0.0, max_iter: int = 1000, rcond=None, certify: str = "gemm",
        test_seed=None, reference=None, out_dtype=None, progress: Callable | None = None,
        hook: Callable | None = None, purify: bool = True, want_rank: bool = False) -> Result:
    """Solve with the local machines' blocks ``As``, ``Bs`` (validated tensors of the compute dtype) and the
    replicated ``C``; ``us`` their power vectors.  Returns a :class:`Result` whose ``D`` is a tensor in the
    compute dtype (true scale); the callers convert it to the input's array type.  ``reference`` (float64,
    true scale) enables ``error`` and ``rel_error``.

    Centralized with ``certify="gemm"``: an instance that a check ends ``rank_deficient`` with its spectrum
    separated at the cut-off is solved again from its data projected onto A's kept singular subspaces
    (``purify``, :mod:`eaglebook.solver.purify`), and takes that solve's answer when it converges;
    ``want_rank`` fills ``Result.rank`` (the number of kept directions, -1 where the check could not tell)."""
    dtype, device = C.dtype, C.device
    batch = tuple(C.shape[:-2])
    nb = max(1, math.prod(batch))
    flat = lambda x: x.reshape((nb,) + tuple(x.shape[-2:]))          # noqa: E731
    host = lambda x: x.reshape(-1).to(torch.float64).cpu().numpy()   # noqa: E731
    tol = DEFAULT_TOL[dtype] if tol is None else float(tol)
    eps = torch.finfo(dtype).eps
    d, dp, n_prime = C.shape[-2], Bs[0].shape[-2], C.shape[-1]
    progress_ = progress or (lambda code: None)

    progress_(-1)
    As, Bs, C, E, counts = _frame(As, Bs, C, transport, world=world, rho_pool=opts.rho_pool)
    n = sum(counts)
    rc = float(rcond) if rcond is not None else max(d, n) * eps
    Eh = E.reshape(-1).cpu().numpy()
    sketched = opts.sketch is not None and opts.sketch < n
    k = 1 if certify == "gemm" and (world > 1 or sketched) else 0
    T = None
    if k:   # the test column c = A g, whose completion B A^† A g is B g exactly on consistent data
        gen = np.random.default_rng([TEST_SEED, *([int(test_seed)] if test_seed is not None else [])])
        g = gen.standard_normal(batch + (n, k))
        off = sum(counts[:first])
        parts = []
        for a, b in zip(As, Bs):
            ga = torch.as_tensor(g[..., off:off + a.shape[-1], :], dtype=dtype, device=device)
            off += a.shape[-1]
            parts.append(test_column(a, b, ga))
        buf = [torch.cat([ct.reshape(-1), t.reshape(-1)]) for ct, t in parts]
        tot = transport.sum(buf)
        Ct, T = tot[:nb * d * k].view(batch + (d, k)), tot[nb * d * k:].view(batch + (dp, k))
        C_full = torch.cat([C, Ct], -1)
    else:
        C_full = C
    D_full = torch.zeros(batch + (dp, n_prime + k), dtype=dtype, device=device)
    machines = [Machine(a, b, opts, u) for a, b, u in zip(As, Bs, us)]
    ref_f = mul_pow2(reference.to(device), -E) if reference is not None else None
    ref_norm = host(fro(ref_f)) if reference is not None else None
    rule = StopRule(nb, tol=tol, atol_f=np.ldexp(np.full(nb, float(atol)), -Eh), machines=world, n=n, rcond=rc,
                    floor=max(d, n) * eps / 2,   # the dropped directions matter only above rounding, p·u
                    sketched=sketched, redraw=opts.redraw,
                    window=math.ceil(n / opts.sketch * (math.log(n) + 0.5773)) if sketched else 1, gamma=opts.gamma)
    frozen_at = None
    state = {"frozen": False}
    central = world == 1 and not sketched and certify == "gemm"
    ranks = np.full(nb, -1, np.int64)
    purified = {}                  # instance -> (B P_R, P_L C): the data to solve again (purify)
    underflow = np.zeros(nb, bool)
    lA_floor = math.log2(torch.finfo(dtype).tiny / eps)
    deltas, errs, rels, t_comp, t_comm, t_round = [], [], [], [], [], []
    wire = 0
    Dout = torch.zeros(batch + (dp, n_prime), dtype=dtype, device=device)
    D_prev = Dout
    ell = 0
    start = time.perf_counter()
    t_start = start
    gen_rounds = rounds(machines, C_full, D_full, transport, world=world, first=first, rng=rng, progress=progress,
                        hook=hook, frozen=lambda: state["frozen"])
    for rnd in gen_rounds:
        ell = rnd.ell
        Cu, Du = rnd.C[..., :n_prime], rnd.D[..., :n_prime]
        if ell == 0:
            rule.start(host(torch.log2(fro(Cu))))
            continue
        t_comp.append(rnd.t_compute), t_comm.append(rnd.t_comm)
        wire += rnd.wire
        if (not state["frozen"] and opts.freeze_tol is not None and rnd.votes >= world):
            state["frozen"], frozen_at = True, ell + 1
        fd = host(fro(Du - D_prev))
        nD = host(fro(Du))
        with np.errstate(over="ignore"):   # a change beyond float64 in true units is reported as inf
            deltas.append(float(np.max(np.ldexp(fd, Eh))))
            if ref_f is not None:
                e = host(fro(Du.to(torch.float64) - ref_f))
                errs.append(float(np.mean(np.ldexp(e, Eh) ** 2)))
                rels.append(float(np.sqrt(np.sum(e ** 2) / np.sum(ref_norm ** 2))) if np.any(ref_norm > 0)
                            else (0.0 if np.all(e == 0) else math.inf))
        x = rnd.x.to(torch.float64)
        if not opts.rescale:   # ‖A_ℓ‖³ below tiny/eps: the update's products underflow and the iterate freezes
            underflow |= 3 * host(rnd.lA) < lA_floor
        finish, trig = rule.observe(ell, fd=fd, nD=nD, finite=torch.isfinite(flat(Du)).all(-1).all(-1).cpu().numpy(),
                                    lC=host(torch.log2(fro(Cu))), lA=host(rnd.lA),
                                    growth=host(growth_log(x)),
                                    annihilates=host(x >= ANNIHILATES).astype(bool),
                                    cols=rnd.cols.cpu().numpy() if rnd.cols is not None else None)
        D_fin = Du
        if trig:
            if certify == "gemm":   # only the instances that asked (every process has the same list)
                rows = np.unique(np.fromiter((i for i, _ in trig), dtype=np.int64, count=len(trig)))
                part = rows if rows.size < nb else None
                kk = rows.size
                buf = [torch.zeros(len(FIELDS) * world * kk, dtype=torch.float64, device=device) for _ in machines]
                fins = []
                for j, m in enumerate(machines):
                    cert, fin = m.certificate(Cu, rc, key=(ell, first + j), finish=world == 1, rows=part)
                    pack(cert, first + j, world, buf[j])
                    fins.append(fin)
                cert = combine(unpack(transport.sum(buf), world, kk), world)
                if part is not None:    # the others: nothing to wait for, nothing dropped (not read)
                    full = Certificate(np.ones(nb), np.zeros(nb), np.zeros(nb))
                    full.wait[rows], full.err[rows], full.near[rows] = cert.wait, cert.err, cert.near
                    cert = full
                if world == 1 and part is None:
                    D_fin = Du + fins[0]
                elif world == 1:
                    D_fin = Du.clone()
                    flat(D_fin)[torch.as_tensor(rows, device=device)] += fins[0]
            elif certify == "svd":
                blocks = transport.collect([(m.A, m.B, m.kA, m.kB) for m in machines])
                cert, Dc = svd_check([b[0].to(device) for b in blocks], [b[1].to(device) for b in blocks], Cu, Du,
                                     [b[2].to(device) for b in blocks], [b[3].to(device) for b in blocks],
                                     rule.growth_tensor(Cu), rc, opts.gamma)
                if world == 1:   # the finish relies on the centralized invariant (any data)
                    D_fin = Dc
            else:
                cert = Certificate(np.ones(nb), np.zeros(nb), np.zeros(nb))
            if state["frozen"]:   # frozen blocks are conditioned no further: nothing to wait for
                cert = cert._replace(wait=np.ones(nb))
            rel = _rel(np.maximum(cert.err, cert.near), host(fro(D_fin)))
            resolved = rule.resolve(ell, trig, cert.wait, rel)
            finish |= resolved
            if central and resolved and (purify or want_rank):
                _separated(machines[0], rule, trig, resolved, cert, rc, C, purify, want_rank, ranks, purified)
        source = {"cur": flat(Du), "prev": flat(D_prev), "fin": flat(D_fin)}
        ended = rule.write(flat(Dout), finish, source)
        if ended:                                          # a finished instance stops changing
            for m in machines:
                m.freeze_instances(ended)
            flat(rnd.C)[torch.as_tensor(np.asarray(ended, dtype=np.int64), device=device)] = 0
        t_round.append(time.perf_counter() - t_start)
        t_start = time.perf_counter()
        if rule.done.all() or ell >= max_iter:
            break
        D_prev = Du
    gen_rounds.close()
    rule.fill(flat(Dout), flat(Du))
    rule.close(ell)
    rule.underflowed(underflow)
    extra_it = extra_checks = 0
    if purified:
        idx = sorted(purified)
        sub = run([As[0].reshape((nb,) + tuple(As[0].shape[-2:]))[idx]], [torch.stack([purified[i][0] for i in idx])],
                  torch.stack([purified[i][1] for i in idx]), opts, local_transport(), world=1,
                  rng=np.random.default_rng([TEST_SEED, 1]), us=[None], tol=tol, max_iter=max_iter, rcond=rc,
                  certify="gemm", purify=False, want_rank=want_rank)
        sub_st = sub.statuses if sub.statuses is not None else np.array([sub.status], dtype=object)
        sub_rank = np.atleast_1d(sub.rank) if sub.rank is not None else np.full(len(idx), -1)
        for j, i in enumerate(idx):
            if sub_st[j] == "converged":
                flat(Dout)[i] = sub.D[j]
                rule.status[i], rule.level[i] = "converged", sub.level
                if want_rank:
                    ranks[i] = sub_rank[j]
        extra_it, extra_checks = sub.iterations, sub.checks
    p = max(d, n)
    if (world > 1 or sketched) and bool(np.isin(rule.status, ["converged", "rank_deficient"]).any()):   # on every process
        if k:
            rule.consistency(test_level(rnd.D[..., n_prime:], T), threshold=test_threshold(tol, p, eps))
        elif certify == "svd":
            blocks = transport.collect([(m.A0, m.B0) for m in machines])
            cl, epsB = svd_consistency([b[0].to(device) for b in blocks], [b[1].to(device) for b in blocks], rc)
            rule.consistency(cl, threshold=np.where(epsB > 10 * p * eps, tol, math.inf))
    if ref_f is not None and ell > 0:   # the last entries describe the returned D (finished by the check)
        e = host(fro(Dout.to(torch.float64) - ref_f))
        with np.errstate(over="ignore"):
            errs[-1] = float(np.mean(np.ldexp(e, Eh) ** 2))
        rels[-1] = (float(np.sqrt(np.sum(e ** 2) / np.sum(ref_norm ** 2))) if np.any(ref_norm > 0)
                    else (0.0 if np.all(e == 0) else math.inf))
    rule.out_of_range(host(maxabs(Dout)), torch.finfo(out_dtype or dtype), Eh)
    status = worst(rule.status)
    level = float(np.nanmax(rule.level)) if np.any(np.isfinite(rule.level)) else math.nan
    fpr = (d + dp) * n_prime if world > 1 else 0
    med = (lambda xs: float(np.median(xs)) if xs else 0.0)   # noqa: E731
    H = header_floats(world, nb)
    return Result(D=mul_pow2(Dout, E), iterations=ell + extra_it, converged=status == "converged", status=status,
                  delta=np.asarray(deltas, dtype=np.float64),
                  error=np.asarray(errs, dtype=np.float64) if ref_f is not None else None,
                  rel_error=np.asarray(rels, dtype=np.float64) if ref_f is not None else None,
                  machines=world, floats_per_round=fpr, communication=ell * fpr, level=level,
                  statuses=rule.status.reshape(batch) if batch else None, checks=rule.checks + extra_checks,
                  rank=(ranks.reshape(batch) if batch else int(ranks[0])) if want_rank and central else None,
                  log2_scale=int(Eh[0]) if not batch else Eh.reshape(batch).astype(np.int64), certify=certify,
                  test_floats_per_round=(d + dp) * k if world > 1 else 0, header_floats=H,
                  payload_bytes_per_round=(C_full.numel() + D_full.numel() + H) * C.element_size(),
                  collectives=transport.collectives, gathers=transport.gathers, gather_bytes=[transport.gather_bytes],
                  time_per_round=[med(t_round)], compute_per_round=[med(t_comp)], comm_per_round=[med(t_comm)],
                  wire_bytes_per_round=[wire / ell if transport.bytes_sent and ell else None], frozen_at=frozen_at,
                  wall=time.perf_counter() - start)

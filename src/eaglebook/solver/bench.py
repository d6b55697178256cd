"""The solver's cost against its GEMM floor, and its factorisations (the package's benchmark style: ratios to
a baseline timed in the same run, interleaved repeats, the spread; never an absolute time as a goal).

One UPDATE of Algorithm 1 must form the Gram matrix Ãᵀ Ã (or Ã Ãᵀ) and multiply Ã by it, plus the small
products with B̃ and C: :func:`eaglebook.solver.update.directions`.  The *GEMM floor* of a solve that ran L
iterations is L times the time of that call on the same problem.  :func:`bench_floor` times, interleaved,
the floor and the whole default :func:`eaglebook.solve` (set-up, power iterations, stopping rule and checks
included) and reports the ratio per repeat, its median and spread.  :func:`count_factorisations` counts
the SVD, QR, eigen-decomposition and other factorisation calls (torch, NumPy and SciPy) made inside a block;
:func:`bench_floor` reports it for a default solve in each regime, with the sketched regime's set-up and
per-iteration times against s.  ``python -m eaglebook.bench floor`` prints it all (``--json FILE`` writes it);
``python -m eaglebook.solver.bench`` is the same command with the solver's package alone (``--help``).
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
import statistics
import sys
import time

import numpy as np
import scipy.linalg
import torch

from .._arrays import int_in
from .._cli import Parser, fail, floor_arguments, integer
from .eagle import solve, solve_distributed
from .update import directions

__all__ = ["bench_floor", "count_factorisations", "FACTORISATIONS", "check_arguments", "main"]

#: What counts as a factorisation: (module, function name) pairs that are wrapped by count_factorisations.
FACTORISATIONS = {
    torch.linalg: ("svd", "svdvals", "qr", "eig", "eigvals", "eigh", "eigvalsh", "pinv", "lstsq", "matrix_rank",
                   "cholesky", "cholesky_ex", "lu", "lu_factor", "lu_factor_ex", "solve", "solve_ex", "inv",
                   "inv_ex", "cond", "det", "slogdet", "matrix_power"),
    torch: ("svd", "pinverse", "cholesky", "det", "logdet", "slogdet", "inverse", "lu", "ormqr", "geqrf"),
    np.linalg: ("svd", "qr", "eig", "eigvals", "eigh", "eigvalsh", "pinv", "lstsq", "matrix_rank", "cholesky",
                "solve", "inv", "cond", "det", "slogdet"),
    scipy.linalg: ("svd", "svdvals", "qr", "eig", "eigvals", "eigh", "eigvalsh", "pinv", "lstsq", "cholesky",
                   "lu", "lu_factor", "solve", "inv", "schur", "hessenberg", "polar"),
}
_NORMS = {torch.linalg: ("matrix_norm", "norm"), np.linalg: ("norm",)}   # a factorisation for ord = ±2, "nuc"


@contextlib.contextmanager
def count_factorisations():
    """Count the factorisation calls made inside the block: a Counter of ``"module.name"`` → calls
    (``matrix_norm``/``norm`` only with ``ord`` ±2 or ``"nuc"``, which need singular values)."""
    counts: collections.Counter = collections.Counter()
    saved = []

    def wrap(mod, name, f, norm=False):
        label = f"{mod.__name__}.{name}"

        def counted(*a, **kw):
            if not norm or kw.get("ord", a[1] if len(a) > 1 else None) in (2, -2, "nuc"):
                counts[label] += 1
            return f(*a, **kw)
        return counted

    try:
        for mod, names in FACTORISATIONS.items():
            for name in names:
                if hasattr(mod, name):
                    saved.append((mod, name, getattr(mod, name)))
                    setattr(mod, name, wrap(mod, name, getattr(mod, name)))
        for mod, names in _NORMS.items():
            for name in names:
                saved.append((mod, name, getattr(mod, name)))
                setattr(mod, name, wrap(mod, name, getattr(mod, name), norm=True))
        yield counts
    finally:
        for mod, name, f in reversed(saved):
            setattr(mod, name, f)


def _problem(n, d, kappa, dtype, seed):
    g = np.random.default_rng(seed)
    k = min(d, n)
    U, _ = np.linalg.qr(g.standard_normal((d, k)))
    V, _ = np.linalg.qr(g.standard_normal((n, k)))
    A = torch.as_tensor((U * np.geomspace(1, 1 / kappa, k)) @ V.T, dtype=dtype)
    B = torch.as_tensor(g.standard_normal((2, d)), dtype=dtype) @ A
    C = A @ torch.as_tensor(g.standard_normal((n, 2)), dtype=dtype)
    return A, B, C


def _spread(xs):
    return {"median": float(statistics.median(xs)), "min": float(min(xs)), "max": float(max(xs)),
            "values": [float(x) for x in xs]}


def bench_floor(n: int = 960, d: int | None = None, *, kappa: float = 1e4, dtype=torch.float64, threads: int = 1,
                repeats: int = 5, seed: int = 0, sketch_ns: int | None = None, machines: int = 3) -> dict:
    """The whole default ``solve`` against the GEMM floor of its iterations, and factorisation counts.

    The problem: A = U diag(σ) Vᵀ (d×n, σ log-spaced in [1/κ, 1]), consistent B = W A, C = A G with
    d' = n' = 2.  Interleaved ``repeats``: the floor (L calls of ``directions``, L the solve's iteration count)
    and one whole solve; the ratio per repeat, its median and spread (goal: median <= 1.2).  Also: one torch
    SVD of A and ``numpy.linalg.lstsq`` on the same problem (context, same run); the factorisation calls of
    one default solve in each regime (centralized at n, sketched with r = n/4, distributed over ``machines``;
    goal 0); and the sketched regime's set-up and per-iteration time at s = n, n/2, n/4, n/8 (on the same
    problem, or one of size ``sketch_ns``; interleaved, medians) beside the flops of its UPDATE, 4·d·s·min(d, s)
    (nothing per round depends on n but a few O(n) index operations).  ``load_average`` is recorded before
    and after."""
    d = n if d is None else d
    check_arguments(n=n, d=d, kappa=kappa, threads=threads, repeats=repeats, seed=seed, sketch_n=sketch_ns,
                    machines=machines)
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    load0 = os.getloadavg() if hasattr(os, "getloadavg") else None
    try:
        try:
            from threadpoolctl import threadpool_limits
            ctl = threadpool_limits(threads)
        except ImportError:
            ctl = None
        A, B, C = _problem(n, d, kappa, dtype, seed)
        first = solve(A, B, C)                        # warm-up, and the iteration count L
        L = first.iterations
        directions(A, B, C)
        floors, wholes, ratios = [], [], []
        for _ in range(repeats):
            t = time.perf_counter()
            for _ in range(L):
                directions(A, B, C)
            f = time.perf_counter() - t
            t = time.perf_counter()
            r = solve(A, B, C)
            w = time.perf_counter() - t
            floors.append(f), wholes.append(w), ratios.append(w / f)
        svd_t, lstsq_t = [], []
        An, Bn = A.numpy(), B.numpy()
        for _ in range(max(3, repeats // 2)):
            t = time.perf_counter()
            torch.linalg.svd(A, full_matrices=False)
            svd_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            np.linalg.lstsq(An.T, Bn.T, rcond=None)
            lstsq_t.append(time.perf_counter() - t)
        counts = {}
        with count_factorisations() as c:
            solve(A, B, C)
        counts["centralized"] = dict(c)
        with count_factorisations() as c:
            rs = solve(A, B, C, sketch=max(1, n // 4), max_iter=20)     # the first 20 rounds (set-up included)
        counts["sketched"] = dict(c)
        As = [A[:, i::machines].contiguous() for i in range(machines)]
        Bs = [B[:, i::machines].contiguous() for i in range(machines)]
        with count_factorisations() as c:
            rd = solve_distributed(As, Bs, C, max_iter=50)
        counts["distributed"] = dict(c)
        # the sketched regime: set-up and per-iteration time against s, on the same problem (interleaved)
        ns = n if sketch_ns is None else sketch_ns
        As_, Bs_, Cs_ = (A, B, C) if ns == n else _problem(ns, ns, kappa, dtype, seed + 1)
        ss = [ns, ns // 2, ns // 4, ns // 8]
        per, setup = {s: [] for s in ss}, {s: [] for s in ss}
        rounds = 10
        for _ in range(3):
            for s in ss:
                t = time.perf_counter()
                solve(As_, Bs_, Cs_, sketch=s, max_iter=1)
                t1 = time.perf_counter() - t
                t = time.perf_counter()
                solve(As_, Bs_, Cs_, sketch=s, max_iter=rounds + 1)
                tk = time.perf_counter() - t
                setup[s].append(max(t1 - (tk - t1) / rounds, 0.0)), per[s].append((tk - t1) / rounds)
        dd = As_.shape[0]
        flops = {s: (4 * dd * dd * s if dd < s else 4 * s * s * dd) + 4 * (dd + 2) * s * 2 for s in ss}
        if ctl is not None:
            ctl.restore_original_limits()
        return {"n": n, "d": d, "kappa": kappa, "dtype": str(dtype), "threads": threads, "repeats": repeats,
                "iterations": L, "status": r.status, "checks": r.checks,
                "ratio": _spread(ratios), "whole_s": _spread(wholes), "floor_s": _spread(floors),
                "floor_per_iteration_s": float(statistics.median(floors)) / L,
                "svd_s": float(statistics.median(svd_t)), "lstsq_s": float(statistics.median(lstsq_t)),
                "factorisations": counts, "sketched_status": rs.status, "distributed_status": rd.status,
                "sketch": {"n": ns, "s": ss, "rounds": rounds,
                           "per_iteration_s": {str(s): float(statistics.median(per[s])) for s in ss},
                           "setup_s": {str(s): float(statistics.median(setup[s])) for s in ss},
                           "flops_per_iteration": {str(s): float(flops[s]) for s in ss}},
                "load_average": {"before": list(load0) if load0 else None,
                                 "after": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}}
    finally:
        torch.set_num_threads(old)


def summary(res: dict) -> str:
    """The benchmark as a few lines of text."""
    r = res["ratio"]
    lines = [f"default solve at n = {res['n']}, κ = {res['kappa']:g}, {res['dtype']}, {res['threads']} thread(s): "
             f"{res['iterations']} iterations, {res['status']}, {res['checks']} check(s)",
             f"  whole solve / GEMM floor of its iterations: median {r['median']:.3f} (min {r['min']:.3f}, "
             f"max {r['max']:.3f}; {res['repeats']} interleaved repeats; goal <= 1.2)",
             f"  whole solve {res['whole_s']['median']:.3f} s; floor {res['floor_per_iteration_s'] * 1e3:.1f} ms per "
             f"iteration; for context, one SVD of A {res['svd_s']:.3f} s, numpy lstsq {res['lstsq_s']:.3f} s",
             "  factorisations per default solve: " + ", ".join(
                 f"{k} {sum(v.values())}" + (f" {dict(v)}" if v else "") for k, v in res["factorisations"].items()),
             f"  sketched (n = {res['sketch']['n']}): per-iteration ms (MFlop) " + ", ".join(
                 f"s={s}: {1e3 * res['sketch']['per_iteration_s'][str(s)]:.2f} "
                 f"({res['sketch']['flops_per_iteration'][str(s)] / 1e6:.0f})" for s in res["sketch"]["s"])
             + "; set-up ms " + ", ".join(f"s={s}: {1e3 * res['sketch']['setup_s'][str(s)]:.2f}"
                                          for s in res["sketch"]["s"]),
             f"  load average before {res['load_average']['before']}, after {res['load_average']['after']}"]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- command line
def check_arguments(a=None, **kw) -> None:
    """``ValueError`` (one line, naming the option) unless the floor benchmark's arguments fit together: from
    parsed options ``a`` or from keywords (:func:`bench_floor`'s)."""
    v = dict(n=a.n, d=a.n, kappa=a.kappa, threads=a.threads or 1, repeats=a.repeats, seed=a.seed,
             sketch_n=a.sketch_n, machines=a.machines) if a is not None else kw
    for name in ("n", "d", "threads", "repeats"):
        int_in(name, v[name], 1)
    int_in("seed", v["seed"], 0)
    if isinstance(v["kappa"], bool) or not isinstance(v["kappa"], (int, float)) or not math.isfinite(v["kappa"]) \
            or v["kappa"] < 1:
        raise ValueError(f"argument kappa={v['kappa']!r} must be a finite number >= 1 (a condition number)")
    ns = v["n"] if v["sketch_n"] is None else v["sketch_n"]
    if isinstance(ns, bool) or not isinstance(ns, (int, np.integer)) or ns < 8:
        raise ValueError(f"argument sketch_n={ns!r} must be an integer >= 8: the sketched timings use s = n, n/2, "
                         f"n/4, n/8" + (" (it defaults to n)" if v["sketch_n"] is None else ""))
    int_in("machines", v["machines"], 1)
    if v["machines"] > v["n"]:
        raise ValueError(f"argument machines={v['machines']} must be at most n = {v['n']} (--machines, --n): every "
                         f"machine holds at least one column")


def main(argv=None) -> int:
    """``python -m eaglebook.solver.bench [options]``: the floor benchmark (:func:`bench_floor`), its summary
    on standard output.  Bad options: one line on standard error, exit status 2, before any work."""
    p = Parser(prog="python -m eaglebook.solver.bench",
               description="The whole default eaglebook.solve against the GEMM floor of its iterations, and the "
                           "factorisations of a default solve per regime (the same as `python -m eaglebook.bench "
                           "floor`, which also writes --json).  The default n = 960 takes about 40 s on one "
                           "core; --n 64 a few seconds.")
    floor_arguments(p)
    p.add_argument("--threads", type=integer(1), default=None, help="BLAS and torch threads (default 1)")
    a = p.parse_args(argv)
    try:
        check_arguments(a)
    except ValueError as e:
        fail(p.prog, str(e))
    print(summary(bench_floor(a.n, kappa=a.kappa, threads=a.threads or 1, repeats=a.repeats, seed=a.seed,
                              sketch_ns=a.sketch_n, machines=a.machines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

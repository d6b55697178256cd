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

:func:`bench_batch` does the same for a batch of small problems solved in one call (the paper's setting:
many small prompts at once), and reports the *certification share*, the time inside the checks over the
whole solve; :func:`bench_batches` runs the three settings of :data:`SETTINGS` (one n = 960 problem, 10,000
problems of 20×20 and 2,000 of 50×50) in one run: ``python -m eaglebook.bench floor --setting all``.
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

__all__ = ["bench_floor", "bench_batch", "bench_batches", "batch_problem", "count_factorisations", "FACTORISATIONS",
           "SETTINGS", "check_arguments", "main"]

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


#: The settings of :func:`bench_batches`: (instances or None for one problem, n = d, κ).
SETTINGS = {"n960": (None, 960, 1e4), "batch20": (10_000, 20, 1e2), "batch50": (2_000, 50, 1e2)}


def batch_problem(nb: int | None, n: int, d: int | None = None, *, kappa: float = 1e2, dtype=torch.float64,
                  seed: int = 0):
    """``nb`` problems like :func:`bench_floor`'s at once (A_i = U_i diag(σ) V_iᵀ, d×n, σ log-spaced in [1/κ, 1];
    consistent B_i = W_i A_i, C_i = A_i G_i with d' = n' = 2); ``nb=None``: one problem (no batch dimension)."""
    if nb is None:
        return _problem(n, d if d is not None else n, kappa, dtype, seed)
    d = n if d is None else d
    g = np.random.default_rng(seed)
    k = min(d, n)
    U, _ = np.linalg.qr(g.standard_normal((nb, d, k)))
    V, _ = np.linalg.qr(g.standard_normal((nb, n, k)))
    A = (U * np.geomspace(1, 1 / kappa, k)) @ V.transpose(0, 2, 1)
    B = g.standard_normal((nb, 2, d)) @ A
    C = A @ g.standard_normal((nb, n, 2))
    return tuple(torch.as_tensor(x, dtype=dtype) for x in (A, B, C))


@contextlib.contextmanager
def _timed_checks():
    """Seconds spent inside the checks (every machine's :meth:`~eaglebook.solver.machine.Machine.certificate`)
    while the block runs: a one-element list."""
    from .machine import Machine
    spent = [0.0]
    f = Machine.certificate

    def timed(self, *a, **kw):
        t = time.perf_counter()
        try:
            return f(self, *a, **kw)
        finally:
            spent[0] += time.perf_counter() - t
    Machine.certificate = timed
    try:
        yield spent
    finally:
        Machine.certificate = f


def bench_batch(nb: int | None, n: int, d: int | None = None, *, kappa: float = 1e2, dtype=torch.float64,
                threads: int = 1, repeats: int = 3, seed: int = 0) -> dict:
    """The whole default ``solve`` of ``nb`` problems of d×n in one call (``nb=None``: one problem) against
    the GEMM floor of its own iterations: L calls of :func:`~eaglebook.solver.update.directions` on the whole
    batch (L the solve's iteration count), as :func:`bench_floor` does for one problem.

    Interleaved ``repeats`` (floor, solve, floor, solve, …) after one warm-up solve; per repeat the ratio
    whole/floor and the *certification share*, the seconds inside the checks over the whole solve; their
    medians and spreads.  For context, in the same run: ``numpy.linalg.solve`` (square) or ``lstsq`` on the
    same batch.  Goals (issue 34): ratio <= 1.2 for one n = 960 problem, <= 1.5 for the batches;
    certification <= 10% of a solve."""
    from collections import Counter
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    load0 = os.getloadavg() if hasattr(os, "getloadavg") else None
    ctl = None
    try:
        try:
            from threadpoolctl import threadpool_limits
            ctl = threadpool_limits(threads)
        except ImportError:
            pass
        A, B, C = batch_problem(nb, n, d, kappa=kappa, dtype=dtype, seed=seed)
        first = solve(A, B, C)                        # warm-up, and the iteration count L
        L = first.iterations
        directions(A, B, C)
        floors, wholes, ratios, shares, checks = [], [], [], [], []
        for _ in range(repeats):
            t = time.perf_counter()
            for _ in range(L):
                directions(A, B, C)
            f = time.perf_counter() - t
            with _timed_checks() as spent:
                t = time.perf_counter()
                r = solve(A, B, C)
                w = time.perf_counter() - t
            floors.append(f), wholes.append(w), ratios.append(w / f), shares.append(spent[0] / w)
            checks.append(spent[0])
        An, Bn = A.numpy(), B.numpy()
        ctx = []
        for _ in range(max(3, repeats)):
            t = time.perf_counter()
            if An.shape[-1] == An.shape[-2]:
                np.linalg.solve(np.swapaxes(An, -1, -2), np.swapaxes(Bn, -1, -2))
            elif nb is None:
                np.linalg.lstsq(An.T, Bn.T, rcond=None)
            else:
                np.linalg.pinv(An)
            ctx.append(time.perf_counter() - t)
        statuses = Counter(np.asarray(r.statuses).reshape(-1).tolist()) if r.statuses is not None else {r.status: 1}
        return {"instances": nb, "n": n, "d": d if d is not None else n, "kappa": kappa, "dtype": str(dtype),
                "threads": threads, "repeats": repeats, "iterations": L, "status": r.status, "checks": r.checks,
                "statuses": dict(statuses), "ratio": _spread(ratios), "certification_share": _spread(shares),
                "whole_s": _spread(wholes), "floor_s": _spread(floors), "checks_s": _spread(checks),
                "floor_per_iteration_s": float(statistics.median(floors)) / L,
                "numpy_s": float(statistics.median(ctx)),
                "numpy": "solve" if An.shape[-1] == An.shape[-2] else ("lstsq" if nb is None else "pinv"),
                "load_average": {"before": list(load0) if load0 else None,
                                 "after": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}}
    finally:
        if ctl is not None:
            ctl.restore_original_limits()
        torch.set_num_threads(old)


def bench_batches(settings=("n960", "batch20", "batch50"), *, threads: int = 1, repeats: int = 3, seed: int = 0,
                  sizes: dict | None = None) -> dict:
    """:func:`bench_batch` for each of ``settings`` (keys of :data:`SETTINGS`; ``sizes`` may override them
    with (instances, n, κ) triples, e.g. tiny ones in a test), in one run: setting → result."""
    table = dict(SETTINGS, **(sizes or {}))
    out = {}
    for name in settings:
        nb, n, kappa = table[name]
        out[name] = bench_batch(nb, n, kappa=kappa, threads=threads, repeats=repeats, seed=seed)
    return out


def batch_summary(res: dict) -> str:
    """:func:`bench_batches` as a few lines of text."""
    lines = ["whole default solve / GEMM floor of its own iterations (interleaved repeats; median [min–max]); "
             "certification share = time in the checks / whole solve"]
    for name, r in res.items():
        what = (f"1 problem {r['d']}×{r['n']}" if r["instances"] is None
                else f"{r['instances']:,} problems {r['d']}×{r['n']}")
        goal = 1.2 if r["instances"] is None else 1.5
        q, c = r["ratio"], r["certification_share"]
        lines.append(f"  {name}: {what}, κ = {r['kappa']:g}, {r['threads']} thread(s): {r['iterations']} iterations, "
                     f"{r['checks']} check(s), {r['status']}")
        lines.append(f"    ratio {q['median']:.2f} [{q['min']:.2f}–{q['max']:.2f}] (goal <= {goal}); certification "
                     f"{100 * c['median']:.1f}% [{100 * c['min']:.1f}–{100 * c['max']:.1f}%] (goal <= 10%); "
                     f"solve {r['whole_s']['median']:.3f} s, floor {r['floor_s']['median']:.3f} s "
                     f"({1e3 * r['floor_per_iteration_s']:.2f} ms per iteration); numpy {r['numpy']} "
                     f"{r['numpy_s']:.3f} s; {r['repeats']} repeats")
    return "\n".join(lines)


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
    v = dict(n=a.n, d=a.n, kappa=a.kappa, threads=a.threads or 1, repeats=a.repeats or 5, seed=a.seed,
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
    if a.setting == "single":
        print(summary(bench_floor(a.n, kappa=a.kappa, threads=a.threads or 1, repeats=a.repeats or 5, seed=a.seed,
                                  sketch_ns=a.sketch_n, machines=a.machines)))
    else:
        names = tuple(SETTINGS) if a.setting == "all" else (a.setting,)
        print(batch_summary(bench_batches(names, threads=a.threads or 1, repeats=a.repeats or 3, seed=a.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

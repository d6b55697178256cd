"""The solver's cost against its GEMM floor (the package's benchmark style: a ratio to a baseline timed
in the same run, never an absolute time).

One UPDATE of Algorithm 1 must form the Gram matrix Ãᵀ Ã (or Ã Ãᵀ) and multiply Ã by it, plus the
small products with B̃ and C: :func:`eaglebook.solver.update.directions`.  :func:`bench_floor` times
that call (the floor) and the default :func:`eaglebook.solver.solve` on the same problem, and reports
the per-iteration ratio.  ``python -m eaglebook.solver.bench`` prints it.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from .eagle import solve
from .update import directions

__all__ = ["bench_floor"]


def bench_floor(n: int = 960, d: int | None = None, *, kappa: float = 1e4, dtype=torch.float64, threads: int = 1,
                repeats: int = 3, seed: int = 0) -> dict:
    """Per-iteration time of the default ``solve`` divided by the time of one UPDATE's dense products.

    The problem: A = U diag(σ) Vᵀ (d×n, σ log-spaced in [1/κ, 1]), consistent B = W A, C = A G with
    d' = n' = 2.  Returns a dict with ``ratio`` (goal <= 1.2), ``iterations``, ``status``, ``floor_s``
    and ``per_iteration_s`` (seconds, for information only), ``checks`` (spectral checks run).
    """
    d = n if d is None else d
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        g = np.random.default_rng(seed)
        k = min(d, n)
        U, _ = np.linalg.qr(g.standard_normal((d, k)))
        V, _ = np.linalg.qr(g.standard_normal((n, k)))
        A = torch.as_tensor((U * np.geomspace(1, 1 / kappa, k)) @ V.T, dtype=dtype)
        B = torch.as_tensor(g.standard_normal((2, d)), dtype=dtype) @ A
        C = A @ torch.as_tensor(g.standard_normal((n, 2)), dtype=dtype)
        directions(A, B, C)                       # warm-up
        floor = []
        for _ in range(max(5, repeats)):
            t = time.perf_counter()
            directions(A, B, C)
            floor.append(time.perf_counter() - t)
        per = []
        for _ in range(repeats):
            t = time.perf_counter()
            r = solve(A, B, C)
            per.append((time.perf_counter() - t) / max(r.iterations, 1))
        f, p = float(np.median(floor)), float(np.median(per))
        return {"ratio": p / f, "iterations": r.iterations, "status": r.status, "checks": r.checks,
                "floor_s": f, "per_iteration_s": p}
    finally:
        torch.set_num_threads(old)


if __name__ == "__main__":
    print(bench_floor())

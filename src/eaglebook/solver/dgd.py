"""Distributed gradient descent (the paper's distributed GD baseline, its §E.1), simulated in one process.

Least squares f(X) = ½‖X A − B‖_F² over X (d'×d) with A = [A^1 … A^M] split by columns: machine μ
computes its gradient contribution G^μ = (X A^μ − B^μ) A^{μᵀ}; the centre averages them and takes the
step X ← X − (1/L)·mean_μ G^μ with L = λ_max((1/M) Σ_μ A^μ A^{μᵀ}) = ‖[A^1 … A^M]‖₂²/M, estimated by the
package's power iteration (:func:`eaglebook.solver.norms.power_norm`; in a real run each machine would apply
its own Gram matrix to the vector and the results would be summed).  The prediction is
D = X C.  Each machine sends d'·d floats per round (its gradient) and receives X back: for d' = n' the
same order as distributed EAGLE's (d + d')·n'.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from .._arrays import int_in, positive, prepare
from .._arrays import out as to_output
from .engine import DEFAULT_TOL
from .norms import power_norm
from .result import Result

__all__ = ["solve_dgd", "solve_dcg"]


def _blocks(name: str, A_blocks: Sequence, B_blocks: Sequence, C, max_iter: int, reference, target):
    """Check and convert the arguments both distributed baselines take: (As, Bs, C, io, reference)."""
    M = len(A_blocks)
    if M < 1 or len(B_blocks) != M:
        raise ValueError(f"argument B_blocks has {len(B_blocks)} blocks but A_blocks has {M} (need M >= 1)")
    int_in("max_iter", max_iter, 1)
    if target is not None:
        positive("target", target)
        if reference is None:
            raise ValueError("argument target needs a reference")
    named = {f"A_blocks[{i}]": a for i, a in enumerate(A_blocks)} | {f"B_blocks[{i}]": b for i, b in enumerate(B_blocks)}
    ts, io = prepare(named | {"C": C}, {"reference": reference} if reference is not None else None)
    As = [ts[f"A_blocks[{i}]"] for i in range(M)]
    Bs = [ts[f"B_blocks[{i}]"] for i in range(M)]
    Ct = ts["C"]
    if any(a.ndim != 2 for a in As) or Ct.ndim != 2:
        raise ValueError(f"{name} takes single matrices (no batch dimension)")
    return As, Bs, Ct, io, ts.get("reference")


class _Rounds:
    """The per-round record both baselines keep: the prediction D = X C, its change, the error against the
    reference, and the package's stopping rules (target, relative change, non-finite)."""

    def __init__(self, D, ref, *, tol: float, atol: float, target: float | None):
        self.D, self.ref, self.tol, self.atol, self.target = D, ref, tol, atol, target
        self.ref_norm2 = float((ref ** 2).sum()) if ref is not None else None
        self.deltas, self.errs, self.rels, self.ell = [], [], [], 0

    def update(self, D_new) -> str | None:
        """Record one round's prediction; the status that stops the run, or None."""
        self.ell += 1
        fro = float(torch.linalg.matrix_norm(D_new - self.D, "fro"))
        self.D = D_new
        self.deltas.append(fro)
        if self.ref is not None:
            sq = float(((D_new.to(torch.float64) - self.ref) ** 2).sum())
            self.errs.append(sq)
            self.rels.append(math.sqrt(sq / self.ref_norm2) if self.ref_norm2 > 0 else 0.0)
        if not bool(torch.isfinite(D_new).all()):
            return "non_finite"
        if self.target is not None and self.rels[-1] <= self.target:
            return "target"
        if fro <= self.atol + self.tol * float(torch.linalg.matrix_norm(D_new, "fro")):
            return "converged"
        return None

    def result(self, io, status: str, M: int, floats: int) -> Result:
        per_round = floats if M > 1 else 0
        has_ref = self.ref is not None
        return Result(D=to_output(io, self.D), iterations=self.ell, converged=status in ("converged", "target"),
                      status=status, delta=np.asarray(self.deltas), error=np.asarray(self.errs) if has_ref else None,
                      rel_error=np.asarray(self.rels) if has_ref else None, machines=M,
                      floats_per_round=per_round, communication=self.ell * per_round)


def solve_dgd(A_blocks: Sequence, B_blocks: Sequence, C, *, tol: float | None = None, atol: float = 0.0,
              max_iter: int = 10_000, power_iters: int = 30, seed=0, reference=None,
              target: float | None = None) -> Result:
    """Distributed GD on single matrices (no batch); returns a :class:`eaglebook.solver.Result`.

    Stops at the change rule of ``solve_distributed`` (relative change of D below ``tol``: status
    ``"converged"``, not certified further), at ``max_iter`` rounds, or, with a ``reference`` and ``target``,
    once ‖D − reference‖_F/‖reference‖_F ≤ target (status ``"target"``); ``"non_finite"`` when D blows up.
    The statuses are the package's one vocabulary (:data:`eaglebook.solver.STATUSES`).
    """
    As, Bs, Ct, io, ref = _blocks("solve_dgd", A_blocks, B_blocks, C, max_iter, reference, target)
    int_in("power_iters", power_iters, 1)
    M = len(As)
    d, dp = As[0].shape[0], Bs[0].shape[0]
    u0 = torch.as_tensor(np.random.default_rng(seed).standard_normal((d, 1)), dtype=Ct.dtype)
    sigma, _ = power_norm(torch.cat(As, -1), u0, power_iters)        # ‖[A^1 … A^M]‖₂ (a lower bound)
    lam = sigma[..., 0, 0] ** 2 / M
    step = 1.0 / float(lam) if float(lam) > 0 else 0.0
    tol = DEFAULT_TOL[io.compute] if tol is None else float(tol)
    # machine μ's gradient contribution is (X A^μ − B^μ) A^{μᵀ} = X (A^μ A^{μᵀ}) − B^μ A^{μᵀ}: it keeps the two products
    grams = [(a @ a.T, b @ a.T) for a, b in zip(As, Bs)]
    X = torch.zeros((dp, d), dtype=Ct.dtype)
    rounds = _Rounds(X @ Ct, ref, tol=tol, atol=atol, target=target)
    status = "max_iter"
    while rounds.ell < max_iter:
        G = sum(X @ g - r for g, r in grams) / M     # the machines' contributions, averaged
        X = X - step * G
        stop = rounds.update(X @ Ct)
        if stop:
            status = stop
            break
    return rounds.result(io, status, M, dp * d)


def solve_dcg(A_blocks: Sequence, B_blocks: Sequence, C, *, tol: float | None = None, atol: float = 0.0,
              max_iter: int = 10_000, reference=None, target: float | None = None) -> Result:
    """Distributed conjugate gradients on the normal equations X (Σ_μ A^μA^{μᵀ}) = Σ_μ B^μA^{μᵀ}, simulated
    in one process; single matrices (no batch); returns a :class:`eaglebook.solver.Result`.

    The centre (or every machine: the state is small and replicated) holds X, the residual R and the search
    direction P (each d'×d).  One round: machine μ computes P (A^μA^{μᵀ}) from its own columns and the d'·d
    products are summed by one all-reduce (the same message as distributed GD's gradient); α, β and the new
    X, R, P follow from the sum without further communication (the d' rows are d' independent CG runs).  The
    right-hand side Σ_μ B^μA^{μᵀ} costs one more all-reduce of d'·d floats before the first round.  From X = 0
    the iterates stay in the row space of Aᵀ, so CG converges to the minimum-norm B A^† (in exact arithmetic
    in at most rank(A) rounds; in floating point its rounds grow like κ(A), the square root of κ(AAᵀ)).

    The stopping rules, statuses and ``floats_per_round`` (d'·d) are those of :func:`solve_dgd`; a row whose
    search direction vanishes stops moving (``"breakdown"`` when every row has).
    """
    As, Bs, Ct, io, ref = _blocks("solve_dcg", A_blocks, B_blocks, C, max_iter, reference, target)
    M = len(As)
    d, dp = As[0].shape[0], Bs[0].shape[0]
    tol = DEFAULT_TOL[io.compute] if tol is None else float(tol)
    grams = [a @ a.T for a in As]                       # each machine's d×d Gram matrix, formed once
    R = sum(b @ a.T for a, b in zip(As, Bs))            # the set-up all-reduce: Σ B^μ A^{μᵀ} (X = 0)
    X = torch.zeros((dp, d), dtype=Ct.dtype)
    P = R.clone()
    rr = (R * R).sum(-1)
    tiny = torch.finfo(Ct.dtype).tiny
    rounds = _Rounds(X @ Ct, ref, tol=tol, atol=atol, target=target)
    status = "max_iter"
    while rounds.ell < max_iter:
        Q = sum(P @ g for g in grams)                   # the round's one all-reduce (d'·d floats per machine)
        pq = (P * Q).sum(-1)
        live = (pq > tiny) & (rr > tiny)
        alpha = torch.where(live, rr / torch.where(live, pq, torch.ones_like(pq)), torch.zeros_like(pq))
        X = X + alpha[:, None] * P
        R = R - alpha[:, None] * Q
        rr_new = (R * R).sum(-1)
        beta = torch.where(live, rr_new / torch.where(live, rr, torch.ones_like(rr)), torch.zeros_like(rr))
        P = R + beta[:, None] * P
        rr = rr_new
        stop = rounds.update(X @ Ct)
        if stop:
            status = stop
            break
        if not bool(live.any()):
            status = "breakdown"
            break
    return rounds.result(io, status, M, dp * d)

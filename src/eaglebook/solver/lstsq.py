"""Least squares through EAGLE: ``eaglebook.lstsq(A, b)`` is the minimum-norm solution x = A^† b of
min ‖A x − b‖₂, with the field names of SciPy's least-squares solvers."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._arrays import check_finite, densify, to_tensor
from .eagle import solve
from .result import Result
from .status import MEANINGS

__all__ = ["lstsq", "LstsqResult"]


@dataclass
class LstsqResult:
    """What :func:`lstsq` returns; the names are SciPy's where they mean the same.

    Attributes
    ----------
    x : the solution, shape (…, k) for a vector b, (…, k, q) for a matrix b; the input's array type.
    residues : ‖b − A x‖₂² per column of b (``scipy.linalg.lstsq``'s ``residues``, here always given),
        float64 NumPy array of shape (…) or (…, q).
    cost : ½‖A x − b‖² summed over the columns (``scipy.optimize.lsq_linear``'s ``cost``; float, or an
        array over a batch).
    nit : iterations (UPDATEs) run (``lsq_linear``'s ``nit``).
    status : how the solve ended, in the package's vocabulary (:data:`eaglebook.solver.STATUSES`; SciPy's
        ``status`` is an integer code, ours a word with the same role).
    success : True exactly when ``status == "converged"`` (``lsq_linear``'s ``success``).
    message : one sentence: what the status means, with ``level``.
    level : the relative accuracy attached to the status (:class:`eaglebook.solver.Result`).
    rcond : the cut-off that was used (relative to σ_max(A)).
    rank : the number of singular values of A above the cut-off (``scipy.linalg.lstsq``'s ``rank``), found
        with matrix products at the check that ended the solve: an int (an int array over a batch), -1 where
        the spectrum was not separated there so the count is not sharp, or None where it is not computed
        (``certify`` other than ``"gemm"``, ``sketch``, an accelerated ``conditioning``).  There is no ``s``
        (SciPy's singular values): nothing here factorises A.
    result : the underlying :class:`eaglebook.solver.Result` (D = xᵀ-shaped blocks, traces, ...).
    """
    x: object
    residues: np.ndarray
    cost: object
    nit: int
    status: str
    success: bool
    message: str
    level: float
    rcond: float
    rank: object
    result: Result


def lstsq(A, b, *, rcond: float | None = None, tol: float | None = None, atol: float = 0.0, max_iter: int = 1000,
          seed=0, certify: str = "gemm", **options) -> LstsqResult:
    """The minimum-norm least-squares solution x = A^† b of min_x ‖A x − b‖₂, through EAGLE.

    It is the completion D = B A^† C with B = I_k and C = b (:func:`eaglebook.solve`), so everything said
    there holds: no factorisation (``certify="gemm"``), the statuses, the soft cut-off.

    Parameters
    ----------
    A : (…, m, k) matrix (a batch of them): NumPy, torch, nested lists, or sparse (``scipy.sparse``, torch
        sparse, ``scipy.sparse.linalg.LinearOperator``), densified first (m·k floats; a LinearOperator
        costs k products with it).
    b : (…, m) right-hand side, or (…, m, q) for q of them.
    rcond : as in ``numpy.linalg.lstsq``: singular values below ``rcond``·σ_max count as zero (default
        max(m, k)·eps of the compute dtype).  EAGLE's cut is a soft spectral filter, not a hard one: a
        singular value within a factor 4 of the cut may be kept or dropped; where directions near the
        cut would change x by more than ``tol``, the status is ``rank_deficient`` and ``level`` says by
        about how much, rather than an x that silently differs from ``numpy.linalg.lstsq(A, b, rcond)``.
        A rank-deficient A whose singular values are well separated at the cut gets the minimum-norm answer,
        as ``scipy.linalg.lstsq`` returns it, with the ``rank`` found: when the first solve ends
        ``rank_deficient`` because rounding in A's null directions met a b outside A's range, b and the
        identity are projected onto A's kept singular subspaces (with products of the conditioned A) and
        solved again (:mod:`eaglebook.solver.purify`).
    tol, atol, max_iter, seed, certify, options : as in :func:`eaglebook.solve` (``sketch``, ``eta``,
        ``gamma``, ``rho``, ...).

    Cost: each UPDATE multiplies A by its Gram matrix (O(m·k·min(m, k))) and the identity block B = I_k
    by it (O(k²·min(m, k))): about 1.5× a completion of the same A for square A, little more for tall A
    (m ≫ k), and dominated by the k×k block for wide A (m ≪ k).  The iteration count grows like log κ(A).

    Returns
    -------
    :class:`LstsqResult`.
    """
    A = densify("A", A)
    b = densify("b", b)
    At = to_tensor("A", A)
    if isinstance(b, (list, tuple)) or not isinstance(b, (np.ndarray, torch.Tensor)):
        try:
            b = np.asarray(b)
        except Exception as e:  # ragged lists etc.
            raise ValueError(f"argument b is not an array: {e}") from None
    if b.ndim not in (At.ndim - 1, At.ndim):
        raise ValueError(f"argument b must have shape (…, m) or (…, m, q) for A of shape {tuple(At.shape)}, "
                         f"got {tuple(b.shape)}")
    vector = b.ndim == At.ndim - 1
    C = b[..., None] if vector else b
    bt = to_tensor("b", C)                          # real, non-empty, not requiring grad; errors name b
    check_finite("b", bt)
    k = At.shape[-1]
    if bt.shape[-2] != At.shape[-2]:
        raise ValueError(f"argument b has {bt.shape[-2]} rows but A has {At.shape[-2]}: b must have shape (…, m) or "
                         f"(…, m, q) for A of shape (…, m, k) = {tuple(At.shape)}")
    if isinstance(A, torch.Tensor) or isinstance(b, torch.Tensor):
        floats = [x.dtype for x in (A, b) if isinstance(x, torch.Tensor) and x.is_floating_point()]
        dt = floats[0] if floats else torch.float64        # integer input is computed in float64
        dev = A.device if isinstance(A, torch.Tensor) else b.device
        eye = torch.eye(k, dtype=dt, device=dev).expand(*At.shape[:-2], k, k)
    else:
        a = np.asarray(A)
        eye = np.broadcast_to(np.eye(k, dtype=a.dtype if a.dtype.kind == "f" else np.float64), a.shape[:-2] + (k, k))
    try:
        res = solve(A, eye, C, rcond=rcond, tol=tol, atol=atol, max_iter=max_iter, seed=seed, certify=certify,
                    rank=True, **options)
    except ValueError as e:       # the completion's C is lstsq's b
        raise ValueError(str(e).replace("argument C ", "argument b ").replace("argument C=", "argument b=")) from None
    x = res.D[..., 0] if vector else res.D
    # the residual in float64
    A64 = At.to(torch.float64)
    x64 = torch.as_tensor(np.asarray(x, dtype=np.float64)) if not isinstance(x, torch.Tensor) else x.to(torch.float64).cpu()
    b64 = bt.to(torch.float64).cpu()
    r = (A64.cpu() @ (x64[..., None] if vector else x64)) - b64
    residues = (r ** 2).sum(-2).numpy()
    residues = residues[..., 0] if vector else residues
    cost = 0.5 * np.asarray(residues).reshape(residues.shape[:At.ndim - 2] + (-1,)).sum(-1)
    cost = float(cost) if np.ndim(cost) == 0 else cost
    eps = torch.finfo(torch.float64 if res.D.dtype in (np.float64, torch.float64) else torch.float32).eps
    rc = float(rcond) if rcond is not None else max(At.shape[-2:]) * float(eps)
    lvl = "" if math.isnan(res.level) else f" (level {res.level:.2g})"
    return LstsqResult(x=x, residues=residues, cost=cost, nit=res.iterations, status=res.status,
                       success=res.converged, message=f"{res.status}: {MEANINGS[res.status]}{lvl}", level=res.level,
                       rcond=rc, rank=res.rank, result=res)

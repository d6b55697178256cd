"""The Newton–Schulz iteration for the polar factor, and its link with EAGLE's A-update.

For a real matrix X₀ with ‖X₀‖₂ ≤ 1 and singular value decomposition X₀ = U Σ Vᵀ (rank r), the
Newton–Schulz iteration (Higham 2008, *Functions of Matrices*)::

    X_{k+1} = ½ (3I − X_k X_kᵀ) X_k

maps every singular value by g(x) = ½ x (3 − x²) and keeps the singular vectors.  g has fixed points 0
(repelling, g'(0) = 3/2) and 1 (superattracting, g'(1) = 0), and g maps (0, 1] into itself, so
X_k → U_r V_rᵀ, the polar factor (the partial isometry on the range, for a rank-deficient X₀):
first linearly (small singular values grow by about 3/2 per step) and then quadratically.

EAGLE's A-update with the Theorem 1 constants, A' = A − ⅓ ρ A Aᵀ A with ρ = ‖A‖₂⁻², maps the
singular values by s ↦ s(1 − s²/(3‖A‖₂²)); the largest goes to ⅔‖A‖₂.  Renormalised,
A'/‖A'‖₂ = ½(3I − Ā Āᵀ)Ā with Ā = A/‖A‖₂: the A-iteration *is* Newton–Schulz on the normalised
matrix (the paper's App. C.5).  :func:`eagle_a_step` is that update, :func:`step` one Newton–Schulz
step; the chapter and the tests check that they agree to rounding error.

All functions are pure: NumPy in → NumPy out, torch in → torch out (on its device), computed in
float64 or float32 (``eaglebook._arrays.prepare``); a bad argument raises a ``ValueError`` naming it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from .._arrays import int_in, positive, prepare
from .._arrays import out as to_output
from .norms import inv_square
from .update import condition

__all__ = ["PolarResult", "step", "eagle_a_step", "polar", "singular_value_map", "SCALINGS"]

#: How :func:`polar` normalises X₀: by the exact spectral norm, or by the Frobenius norm (an upper bound
#: of it, so always safe, at the price of a smaller start and a few more iterations).
SCALINGS = ("spectral", "frobenius")


class PolarResult(NamedTuple):
    """What :func:`polar` returns.

    ``U``: the polar factor estimate X_k (input's array type and dtype); ``iterations``: k;
    ``converged``: whether the stopping rule fired; ``residual``: float64 array,
    ``residual[i]`` = ‖X_{i+1}ᵀ X_{i+1} − X_iᵀ X_i‖_F (largest over a batch), the change of the Gram
    matrix, which goes to 0 also for a rank-deficient X₀; ``scale``: the norm X₀ was divided by
    (float64 array of the batch shape; a float for a single matrix).
    """
    U: object
    iterations: int
    converged: bool
    residual: np.ndarray
    scale: object


def singular_value_map(x, *, eta: float = 1 / 3):
    """The normalised singular-value map of one EAGLE A-update, x ↦ x(1 − ηx²) for x = s/‖A‖₂.

    With η = 1/3 and renormalisation by its value at x = 1 (2/3) it is Newton–Schulz's ½x(3 − x²).
    Works on NumPy arrays and numbers."""
    positive("eta", eta)
    x = np.asarray(x, dtype=np.float64)
    return x * (1.0 - eta * x ** 2)


def _step(X: torch.Tensor) -> torch.Tensor:
    """½(3I − X Xᵀ)X = (3/2)·(X − ⅓ X Xᵀ X): the UPDATE's A-line with step ⅓ (the cheaper Gram matrix), ×3/2."""
    return 1.5 * condition(X, 1.0 / 3.0)


def step(X):
    """One Newton–Schulz step ½(3I − X Xᵀ)X (batched; NumPy or torch in, the same out)."""
    ts, io = prepare({"X": X})
    return to_output(io, _step(ts["X"]))


def eagle_a_step(A, *, eta: float = 1 / 3):
    """EAGLE's A-update with its own ρ = ‖A‖₂⁻² (exact spectral norm): A − ηρ A Aᵀ A.

    Algorithm 1's step 2 with S = I, through the UPDATE itself (:func:`eaglebook.solver.update.condition`);
    a zero matrix is returned unchanged (ρ = 0).  Batched; NumPy or torch in, the same out."""
    positive("eta", eta)
    ts, io = prepare({"A": A})
    At = ts["A"]
    rho = inv_square(torch.linalg.matrix_norm(At, ord=2, keepdim=True))
    return to_output(io, condition(At, eta * rho))


def polar(A, *, tol: float | None = None, max_iter: int = 100, scale: str = "spectral") -> PolarResult:
    """The polar factor U Vᵀ of A = U Σ Vᵀ by the Newton–Schulz iteration.

    Parameters
    ----------
    A : (…, d, n) NumPy array or torch tensor, finite and not all zero (per batch member).
    tol : stop when ‖X_{k+1}ᵀX_{k+1} − X_kᵀX_k‖_F <= tol·‖X_{k+1}ᵀX_{k+1}‖_F for every batch member
        (relative; default 100·eps of the compute dtype).
    max_iter : the most steps.  From ‖X₀‖₂ = 1 about log_{3/2} κ(A) + 5 steps reach rounding level.
    scale : ``"spectral"`` (X₀ = A/‖A‖₂, the renormalised EAGLE iterate) or ``"frobenius"``
        (X₀ = A/‖A‖_F; convergence needs ‖X₀‖₂ < √3, which both guarantee).

    Returns
    -------
    :class:`PolarResult`; for full-rank A, ``U`` has orthonormal rows (d <= n) or columns (d >= n).

    Raises
    ------
    ValueError naming the argument: non-finite or all-zero A, tol <= 0, max_iter < 1, unknown scale.
    """
    if tol is not None:
        positive("tol", tol)
    int_in("max_iter", max_iter, 1)
    if not isinstance(scale, str) or scale not in SCALINGS:
        raise ValueError(f"argument scale={scale!r} must be one of {SCALINGS}")
    ts, io = prepare({"A": A})
    X = ts["A"]
    nrm = torch.linalg.matrix_norm(X, ord=2 if scale == "spectral" else "fro", keepdim=True)
    if bool((nrm == 0).any()):
        raise ValueError("argument A is zero (in at least one batch member): its polar factor is undefined")
    X = X / nrm
    tol = 100 * torch.finfo(io.compute).eps if tol is None else float(tol)
    G = X.mT @ X
    res, converged, k = [], False, 0
    for k in range(1, max_iter + 1):
        X = _step(X)
        G2 = X.mT @ X
        diff = torch.linalg.matrix_norm(G2 - G, "fro")
        res.append(float(diff.max()))
        G = G2
        if bool((diff <= tol * torch.linalg.matrix_norm(G2, "fro")).all()):
            converged = True
            break
    sc = nrm[..., 0, 0].to(torch.float64).cpu().numpy()
    return PolarResult(to_output(io, X), k, converged, np.asarray(res, dtype=np.float64),
                       float(sc) if sc.ndim == 0 else sc)

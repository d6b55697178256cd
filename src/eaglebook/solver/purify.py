"""The minimum-norm answer for rank-deficient, inconsistent data, with products only.

EAGLE's completion D_ℓ collects, from every direction of A it conditions, that direction's share of
B A^† C.  When A is rank deficient and the data are inconsistent (B has a component in A's right kernel *and*
C one outside A's range), rounding noise in the null directions of A_ℓ (about u·G after the small singular
values grew by G) meets those components and puts about u·G·‖B‖‖C‖/σ of garbage into D: the check then ends
the solve ``rank_deficient`` (:mod:`eaglebook.solver.certify`), although the spectrum may be perfectly
separated at the cut-off, where LAPACK returns the minimum-norm answer.

The cure is to remove those components before solving.  At a check that found the spectrum separated (no
direction of A_ℓ between the grown cut-off thr = rcond·G_ℓ and 1/2 of the top) the normalised Gram matrix
Ĝ = A_ℓᵀA_ℓ/σ² has eigenvalues x² >= 1/4 on the kept directions and <= thr² on the dropped ones, and A_ℓ has
A's singular vectors (A_ℓ = A·R(AᵀA)).  So

    P_R = I − (I − Ĝ)^m,        P_L = I − (I − Ê)^m,   Ê = A_ℓA_ℓᵀ/σ²,

are the projectors onto A's kept right and left singular subspaces up to (3/4)^m on the kept directions and
m·thr² on the dropped ones (:data:`POWER`: (3/4)^m below u), applied to the d'- and n'-column blocks with 2m
thin products each (:func:`project`).  B̃ = B P_R and C̃ = P_L C have the same truncated completion,
B̃ A^† C̃ = B A_rcond^† C, and no component in the null directions: solved again, they cannot collect the
noise, and the solver's own check certifies the result.  The rank found (SciPy's ``rank``) is the trace of
P_R (:func:`rank`: the m-th power by repeated squaring on the smaller Gram side).
"""

from __future__ import annotations

import math

import torch

__all__ = ["POWER", "SEPARATED", "project", "rank"]

#: m of (I − Ĝ)^m: (3/4)^m below the float64 unit roundoff (a kept direction has x² >= 1/4).
POWER = 128
#: The grown cut-off thr = rcond·G_ℓ up to which the split is sharp: a dropped direction keeps at most
#: POWER·thr² <= 1.3e-4 of itself in B̃ and C̃, which the second solve then treats as any small direction.
SEPARATED = 1e-3


def _scale(sigma: torch.Tensor) -> torch.Tensor:
    """1/σ² with σ slightly raised (a power estimate is a lower bound), so that every x² <= 1."""
    s = sigma * 1.02
    return torch.where(s > 0, 1.0 / torch.where(s > 0, s, torch.ones_like(s)) ** 2, torch.zeros_like(s))


def project(A: torch.Tensor, sigma: torch.Tensor, B: torch.Tensor, C: torch.Tensor, m: int = POWER):
    """(B P_R, P_L C) for the conditioned A_ℓ (…, d, n) with ‖A_ℓ‖₂ ≈ ``sigma`` (batch + (1, 1)), B (…, d', n),
    C (…, d, n'): the parts of B and C in A's kept singular subspaces (module doc)."""
    w = _scale(sigma)
    Y, Z = B, C
    for _ in range(m):
        Y = Y - ((Y @ A.mT) @ A) * w
        Z = Z - (A @ (A.mT @ Z)) * w
    return B - Y, C - Z


def rank(A: torch.Tensor, sigma: torch.Tensor, m: int = POWER) -> torch.Tensor:
    """tr(I − (I − Ĝ)^m) per instance (float64, batch shape): the number of kept directions of the
    conditioned A_ℓ, an integer up to m·thr² per dropped direction (module doc)."""
    d, n = A.shape[-2:]
    w = _scale(sigma)
    G = (A @ A.mT if d < n else A.mT @ A) * w
    eye = torch.eye(G.shape[-1], dtype=G.dtype, device=G.device)
    H = eye - G
    for _ in range(int(math.log2(m))):
        H = H @ H
    return (G.shape[-1] - torch.diagonal(H, dim1=-2, dim2=-1).sum(-1)).to(torch.float64)

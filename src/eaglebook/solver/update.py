"""The UPDATE of Algorithm 1, written once.

In the paper's symbols, with a sketch S (n×r; S = I_n when there is none) and Ã = A S, B̃ = B S::

    A' = A − ηρ Ã Ãᵀ Ã Sᵀ        B' = B − ηρ B̃ Ãᵀ Ã Sᵀ
    C' = C − γρ Ã Ãᵀ C           D' = D + γρ B̃ Ãᵀ C

:func:`step` computes it with the *effective* steps ``step_ab`` = ηρ and ``step_cd`` = γρ (numbers or
tensors broadcast over a batch, so per-instance and per-machine ρ need no loop) and returns the new
A, B and the *increments* of C and D.  :func:`update` adds the increments; :func:`combine` merges the
increments of M machines.  Every user of the iteration calls these three:

* the solver (:mod:`eaglebook.solver.eagle`): ρ from the norm of Ã, M machines averaged;
* the per-layer iteration read out of trained weights (:func:`eaglebook.solver.layerwise` and
  ``eaglebook.extraction``), with step = −(the layer's coefficient product), and the transformer's
  self/other weights for the machines;
* the hand-set reference layer of the model (``eaglebook.models.diagonal_update``).

A sketch is given either as ``cols`` (column selection: only those columns of A, B change) or as a
matrix ``S`` with orthonormal columns (or an orthogonal projector P = S Sᵀ, which gives the same
update).
"""

from __future__ import annotations

import torch

__all__ = ["directions", "step", "update", "combine"]


def directions(At, Bt, C):
    """Ã Ãᵀ Ã, B̃ Ãᵀ Ã, Ã Ãᵀ C, B̃ Ãᵀ C, each with the cheaper Gram matrix (d×d or r×r)."""
    d, r = At.shape[-2:]
    if d < r:
        E, V = At @ At.mT, Bt @ At.mT
        return E @ At, V @ At, E @ C, V @ C
    K, P = At.mT @ At, At.mT @ C
    return At @ K, Bt @ K, At @ P, Bt @ P


def step(A, B, C, D, step_ab, step_cd, *, cols=None, S=None, d_scale=1.0):
    """One UPDATE; returns ``(A', B', ΔC, ΔD)`` with C' = C + ΔC and D' = D + ΔD.

    ``d_scale`` (a number or a tensor) multiplies ΔD: the sign of the read-out (the transformer's raw D
    block is −D_EAGLE) and the solver's exact power-of-two rescaling of B relative to A.
    """
    if cols is not None:
        At, Bt = A[..., cols], B[..., cols]
    elif S is not None:
        At, Bt = A @ S, B @ S
    else:
        At, Bt = A, B
    dA, dB, dC, dD = directions(At, Bt, C)
    if cols is not None:
        A2, B2 = A.clone(), B.clone()
        A2[..., cols] = At - step_ab * dA
        B2[..., cols] = Bt - step_ab * dB
    elif S is not None:
        A2, B2 = A - step_ab * (dA @ S.mT), B - step_ab * (dB @ S.mT)
    else:
        A2, B2 = A - step_ab * dA, B - step_ab * dB
    return A2, B2, -(step_cd * dC), d_scale * (step_cd * dD)   # this order: d_scale may be huge


def update(A, B, C, D, step_ab, step_cd, *, cols=None, S=None, d_scale=1.0):
    """One UPDATE; returns ``(A', B', C', D')`` (see :func:`step`)."""
    A2, B2, dC, dD = step(A, B, C, D, step_ab, step_cd, cols=cols, S=S, d_scale=d_scale)
    return A2, B2, C + dC, D + dD


def combine(X, increments: torch.Tensor, *, self_weight=None, other_weight=None):
    """Merge the increments Δ^μ of M machines (stacked on dim −3: shape (…, M, rows, n')) into X.

    Default (Algorithm 1): every machine sends X + Δ^μ and the centre averages, so the shared X becomes
    X + mean_μ Δ^μ (summing instead diverges once the machines' ranges overlap).  With weights (the
    trained transformer's self/other projection), X holds one copy per machine, (…, M, rows, n'), and
    copy ν becomes X^ν + w_self·Δ^ν + w_other·Σ_{μ≠ν} Δ^μ.  The weights are numbers or tensors that
    broadcast against (…, 1, 1, 1).
    """
    if self_weight is None and other_weight is None:
        return X + increments.mean(-3)
    total = increments.sum(-3, keepdim=True)
    return X + self_weight * increments + other_weight * (total - increments)

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

__all__ = ["gram", "directions", "step", "update", "condition", "combine"]


def gram(At):
    """The cheaper Gram matrix of Ã and its side: (Ã Ãᵀ, "left") when d < r, else (Ãᵀ Ã, "right")."""
    d, r = At.shape[-2:]
    return (At @ At.mT, "left") if d < r else (At.mT @ At, "right")


def directions(At, Bt, C, G=None):
    """Ã Ãᵀ Ã, B̃ Ãᵀ Ã, Ã Ãᵀ C, B̃ Ãᵀ C, each with the cheaper Gram matrix (d×d or r×r).

    ``G`` is that Gram matrix when the caller has formed it already (:func:`gram`); ``Bt`` or ``C`` may be
    None (their directions are then None: the A-line alone, as in GD++ and Newton–Schulz)."""
    d, r = At.shape[-2:]
    if d < r:
        E = At @ At.mT if G is None else G
        V = Bt @ At.mT if Bt is not None else None
        return (E @ At, V @ At if V is not None else None, E @ C if C is not None else None,
                V @ C if V is not None and C is not None else None)
    K = At.mT @ At if G is None else G
    P = At.mT @ C if C is not None else None
    return (At @ K, Bt @ K if Bt is not None else None, At @ P if P is not None else None,
            Bt @ P if P is not None and Bt is not None else None)


def step(A, B, C, D, step_ab, step_cd, *, cols=None, S=None, d_scale=1.0, G=None):
    """One UPDATE; returns ``(A', B', ΔC, ΔD)`` with C' = C + ΔC and D' = D + ΔD.

    ``d_scale`` (a number or a tensor) multiplies ΔD: the sign of the read-out (the transformer's raw D
    block is −D_EAGLE) and the solver's exact power-of-two rescaling of B relative to A.  ``G``: the Gram
    matrix of Ã if already formed (:func:`gram`).  ``B`` or ``C`` may be None (then A' alone, or no
    ΔC, ΔD).  With ``cols`` (column selection) A and B are updated *in place* in the selected columns
    (only r columns are touched: the sketched regime's cost is proportional to r) and returned.
    """
    if (cols is None and S is None and A.ndim == 2 and not A.requires_grad
            and (not torch.is_tensor(step_ab) or (step_ab.numel() == 1 and not step_ab.requires_grad))):
        return _fused(A, B, C, step_ab, step_cd, d_scale, G)
    if cols is not None:
        At = A[..., cols]
        Bt = B[..., cols] if B is not None else None
    elif S is not None:
        At, Bt = A @ S, (B @ S if B is not None else None)
    else:
        At, Bt = A, B
    dA, dB, dC, dD = directions(At, Bt, C, G)
    if cols is not None:
        A[..., cols] = torch.addcmul(At, step_ab, dA, value=-1) if torch.is_tensor(step_ab) else At - step_ab * dA
        if B is not None:
            B[..., cols] = torch.addcmul(Bt, step_ab, dB, value=-1) if torch.is_tensor(step_ab) else Bt - step_ab * dB
        A2, B2 = A, B
    elif S is not None:
        A2 = A - step_ab * (dA @ S.mT)
        B2 = B - step_ab * (dB @ S.mT) if B is not None else None
    elif torch.is_tensor(step_ab):
        # dA, dB are this call's own products: write A', B' over them (no fresh buffer of A's size to fault in,
        # 15 ms a round on 2,000 problems of 50×50) unless autograd needs them
        reuse = not (torch.is_grad_enabled() and (A.requires_grad or step_ab.requires_grad or dA.requires_grad
                                                  or (B is not None and B.requires_grad)))

        def line(X, dX):
            if (reuse and X.dtype == dX.dtype == step_ab.dtype and dX.shape == X.shape
                    and torch.broadcast_shapes(X.shape, step_ab.shape) == X.shape):
                return torch.addcmul(X, step_ab, dX, value=-1, out=dX)
            return torch.addcmul(X, step_ab, dX, value=-1)
        A2 = line(A, dA)
        B2 = line(B, dB) if B is not None else None
    else:
        A2 = A - step_ab * dA
        B2 = B - step_ab * dB if B is not None else None
    if dC is None:
        return A2, B2, None, None
    return A2, B2, -(step_cd * dC), (d_scale * (step_cd * dD) if dD is not None else None)   # this order: d_scale may be huge


def _fused(A, B, C, step_ab, step_cd, d_scale, G):
    """:func:`step` for one matrix without a sketch: A' = A − s·A K (or A − s·E A) as one GEMM with the
    addition folded in (``addmm``), so the A/B lines cost no pass over A beyond the products themselves."""
    s = float(step_ab)
    d, r = A.shape
    if d < r:
        E = A @ A.mT if G is None else G
        V = B @ A.mT if B is not None else None
        A2 = torch.addmm(A, E, A, alpha=-s)
        B2 = torch.addmm(B, V, A, alpha=-s) if V is not None else None
        dC = E @ C if C is not None else None
        dD = V @ C if V is not None and C is not None else None
    else:
        K = A.mT @ A if G is None else G
        P = A.mT @ C if C is not None else None
        A2 = torch.addmm(A, A, K, alpha=-s)
        B2 = torch.addmm(B, B, K, alpha=-s) if B is not None else None
        dC = A @ P if P is not None else None
        dD = B @ P if P is not None and B is not None else None
    if dC is None:
        return A2, B2, None, None
    return A2, B2, -(step_cd * dC), (d_scale * (step_cd * dD) if dD is not None else None)


def update(A, B, C, D, step_ab, step_cd, *, cols=None, S=None, d_scale=1.0):
    """One UPDATE; returns ``(A', B', C', D')`` (see :func:`step`; with ``cols`` the inputs A, B are not
    modified: this returns new arrays)."""
    if cols is not None:
        A, B = A.clone(), B.clone()
    A2, B2, dC, dD = step(A, B, C, D, step_ab, step_cd, cols=cols, S=S, d_scale=d_scale)
    return A2, B2, C + dC, D + dD


def condition(A, step_ab, *, G=None):
    """The A-line of the UPDATE alone, A' = A − step·A Aᵀ A (with the cheaper Gram matrix): GD++'s
    conditioning layer and, with step 1/3 and a factor 3/2, a Newton–Schulz step."""
    return step(A, None, None, None, step_ab, 0.0, G=G)[0]


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

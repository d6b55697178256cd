"""The sketched regime's structure (the paper's Fig. 4): per-layer sketch projectors, spectra and
the relative difference between the rescaled W_QK and W_VP sketch blocks.  (What differs between the
regimes themselves lives in :mod:`eaglebook.regimes`.)"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models import LinearTransformer
from ..regimes import top_projector
from ._common import check_model
from .products import products


@dataclass(frozen=True, eq=False)
class SketchLayer:
    """Sketched regime, one layer's n×n data blocks Q (of W_QK) and V (of W_VP), the paper's Fig. 4.

    ``S`` (n×r, orthonormal columns) spans the top-r eigenvectors (by |eigenvalue|) of the symmetrised
    Q, ``P = S Sᵀ`` the layer's effective sketch projector.  ``sv_qk``, ``sv_vp``: singular values of Q
    and V rescaled to spectral norm 1; ``sv_reference``: those of S_rnd S_rndᵀ for a Haar-random n×r
    S_rnd (r ones, n−r zeros).  ``rank_qk``, ``rank_vp``: numerical ranks (σᵢ > rank_tol·σ₁).
    ``rel_diff``: min over s = ±1 of ‖Q/‖Q‖₂ − s V/‖V‖₂‖_F / ‖Q/‖Q‖₂‖_F (paper: 0.28), attained at
    ``sign``.  ``projector_overlap``: tr(P_Q P_V)/r ∈ [0, 1] between the top-r subspaces of Q and V.
    ``entries_qk``, ``entries_vp``, ``entries_reference``: the normalised entries (flattened) for the
    histogram.  ``fit_residual_qk``: ‖Q − a P‖_F/‖Q‖_F with a the least-squares scale.
    """
    S: np.ndarray
    P: np.ndarray
    sv_qk: np.ndarray
    sv_vp: np.ndarray
    sv_reference: np.ndarray
    rank_qk: int
    rank_vp: int
    rel_diff: float
    sign: int
    projector_overlap: float
    fit_residual_qk: float
    entries_qk: np.ndarray
    entries_vp: np.ndarray
    entries_reference: np.ndarray


def _sketch_rank(model: LinearTransformer, rank: int | None) -> tuple[int, int]:
    """(n, r) for a sketched model; ``rank`` defaults to the model's r and must lie in 1..n."""
    check_model(model, "sketched")
    n = model.task.n
    r = model.cfg.r if rank is None else rank
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not (1 <= r <= n):
        raise ValueError(f"argument rank={rank!r} must be an integer in 1..n={n}")
    return n, r


def sketch_structure(model: LinearTransformer, *, rank: int | None = None, rank_tol: float = 1e-2,
                     seed: int = 0) -> list[SketchLayer]:
    """Per-layer :class:`SketchLayer` of a sketched model (``rank`` defaults to the model's r)."""
    n, r = _sketch_rank(model, rank)
    prod = products(model)
    rng = np.random.default_rng(seed)
    out = []
    for l in range(model.L):
        Q, V = prod.wqk[l, 0, :n, :n], prod.wvp[l, 0, :n, :n]
        S = top_projector(Q, r)
        P = S @ S.T
        Sv = top_projector(V, r)
        sq, sv = np.linalg.svd(Q, compute_uv=False), np.linalg.svd(V, compute_uv=False)
        Qn = Q / sq[0] if sq[0] > 0 else Q
        Vn = V / sv[0] if sv[0] > 0 else V
        diffs = [np.linalg.norm(Qn - s * Vn) for s in (1, -1)]
        k = int(np.argmin(diffs))
        G, _ = np.linalg.qr(rng.standard_normal((n, r)))
        R = G @ G.T

        def resid(M):
            a = np.sum(M * P) / r
            nm = np.linalg.norm(M)
            return float(np.linalg.norm(M - a * P) / nm) if nm > 0 else 0.0

        out.append(SketchLayer(
            S=S, P=P, sv_qk=sq / (sq[0] or 1.0), sv_vp=sv / (sv[0] or 1.0),
            sv_reference=np.linalg.svd(R, compute_uv=False),
            rank_qk=int((sq > rank_tol * sq[0]).sum()), rank_vp=int((sv > rank_tol * sv[0]).sum()),
            rel_diff=float(diffs[k] / (np.linalg.norm(Qn) or 1.0)), sign=(1, -1)[k],
            projector_overlap=float(np.trace(P @ (Sv @ Sv.T)) / r),
            fit_residual_qk=resid(Q),
            entries_qk=Qn.ravel().copy(), entries_vp=Vn.ravel().copy(), entries_reference=R.ravel().copy()))
    return out


def sketch_projectors(model: LinearTransformer, *, rank: int | None = None) -> np.ndarray:
    """(L, n, n): each layer's effective sketch projector P_ℓ = S_ℓ S_ℓᵀ (top-r eigenvectors of sym(W_QK data block))."""
    n, r = _sketch_rank(model, rank)
    prod = products(model)
    out = []
    for l in range(model.L):
        S = top_projector(prod.wqk[l, 0, :n, :n], r)
        out.append(S @ S.T)
    return np.asarray(out)

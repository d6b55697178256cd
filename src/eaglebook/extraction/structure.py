"""Step 2 (book chapter 4): matrix property tests of the products against random references."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models import LinearTransformer
from ._common import np64, like, check_factor, check_model
from .products import products, sparsify


def structure_projection(W, n: int, kind: str):
    """Least-squares projection of a square W onto the paper's structure.

    ``kind="qk"``: span{diag(I_n, 0_{n'})} → diag(a I_n, 0) with a = mean of the data block's diagonal.
    ``kind="vp"``: span{diag(I_n, 0), diag(0, I_{n'})} → diag(a I_n, b I_{n'}) with a, b the means of the
    two diagonal blocks' diagonals.  Returns the projection in the type of ``W``.
    """
    if kind not in ("qk", "vp"):
        raise ValueError(f"argument kind={kind!r} must be 'qk' or 'vp'")
    w = np64(W)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or not (1 <= n <= w.shape[0]):
        raise ValueError(f"argument W must be square with n={n} <= its size, got shape {w.shape}")
    dg = np.diag(w)
    a = dg[:n].mean()
    b = dg[n:].mean() if (kind == "vp" and w.shape[0] > n) else 0.0
    return like(np.diag(np.r_[np.full(n, a), np.full(w.shape[0] - n, b)]), W)


@dataclass(frozen=True, eq=False)
class MatrixProperties:
    """Structure statistics of one square product W (data block first n rows/columns).

    ``offdiag_mass``: ‖W − Π(W)‖_F/‖W‖_F with Π = :func:`structure_projection` (0: exactly the
    paper's structure; ≈1: none of it).  ``kept_fraction``: entries surviving the ``factor`` × mean|w| threshold; ``kept_on_diagonal``: share
    of the survivors that are diagonal.  ``numerical_rank``: #σᵢ > rank_tol·σ₁; ``data_rank``: the same
    for the n×n data block.
    """
    offdiag_mass: float
    kept_fraction: float
    kept_on_diagonal: float
    numerical_rank: int
    data_rank: int


def matrix_properties(W, n: int, kind: str, *, factor: float = 1.5, rank_tol: float = 1e-2) -> MatrixProperties:
    """:class:`MatrixProperties` of one square product (``kind`` 'qk' or 'vp', see :func:`structure_projection`)."""
    check_factor(factor)
    check_factor(rank_tol, "rank_tol")
    w = np64(W)
    proj = np64(structure_projection(w, n, kind))
    fro = float(np.linalg.norm(w))
    safe = fro if fro > 0 else 1.0
    kept = np64(sparsify(w, factor)) != 0
    sv = np.linalg.svd(w, compute_uv=False)
    svd_ = np.linalg.svd(w[:n, :n], compute_uv=False)
    nk = int(kept.sum())
    return MatrixProperties(
        offdiag_mass=float(np.linalg.norm(w - proj)) / safe,
        kept_fraction=nk / w.size,
        kept_on_diagonal=float(np.trace(kept)) / nk if nk else 0.0,
        numerical_rank=int((sv > rank_tol * sv[0]).sum()) if sv[0] > 0 else 0,
        data_rank=int((svd_ > rank_tol * svd_[0]).sum()) if svd_[0] > 0 else 0,
    )


def weight_properties(model: LinearTransformer, *, factor: float = 1.5, rank_tol: float = 1e-2,
                      seed: int = 0) -> dict[str, list[MatrixProperties]]:
    """Per-layer :class:`MatrixProperties` of the model's products, next to random references.

    Keys ``"qk"`` and ``"vp"`` (lists over layers; multi-head: of Σ_h W^h, the paper's W_QK = Σ_h W_Q W_Kᵀ;
    distributed: the shared W_QK block, the self part of W_VP, and ``"vp_other"`` the other part, whose
    expected structure is diag(c I, b I) with c ≈ 0), and ``"qk_random"``, ``"vp_random"``: the same
    statistics for i.i.d. Gaussian matrices of the same shape and Frobenius norm (``seed``).
    """
    check_model(model)
    prod = products(model)
    rng = np.random.default_rng(seed)
    n = model.n_mu
    out: dict[str, list[MatrixProperties]] = {"qk": [], "vp": [], "qk_random": [], "vp_random": []}

    def rnd(w):
        g = rng.standard_normal(w.shape)
        return g * (np.linalg.norm(w) / np.linalg.norm(g))

    for l in range(model.L):
        q = prod.wqk[l].sum(0)
        parts = model.rg.reading.vp_parts(prod.wvp[l])      # "vp" (and the regime's others, e.g. "vp_other")
        v = parts.pop("vp")
        out["qk"].append(matrix_properties(q, n, "qk", factor=factor, rank_tol=rank_tol))
        out["vp"].append(matrix_properties(v, n, "vp", factor=factor, rank_tol=rank_tol))
        out["qk_random"].append(matrix_properties(rnd(q), n, "qk", factor=factor, rank_tol=rank_tol))
        out["vp_random"].append(matrix_properties(rnd(v), n, "vp", factor=factor, rank_tol=rank_tol))
        for k, w in parts.items():
            out.setdefault(k, []).append(matrix_properties(w, n, "vp", factor=factor, rank_tol=rank_tol))
    return out

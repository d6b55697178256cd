"""Steps 3 and 4 (the paper's Figs. 5, 11 and 12): the per-layer scalars α¹, α², α³, their sign
alignment, and the batch-max scaling laws that give η and γ."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .. import tasks
from ..models import LinearTransformer
from ._common import check_model, as_batch, model64, F64
from .products import Products, products


@dataclass(frozen=True, eq=False)
class Alphas:
    """The per-layer scalars (book chapter 4), arrays of length L, sign-aligned unless ``aligned`` is False.

    ``a1``: mean diagonal of W_QK's n×n data block; ``a2``, ``a3``: mean diagonals of W_VP's data and
    query blocks (multi-head: of Σ_h W^h; sketched: least-squares scales a = tr(W_data P)/r with the
    layer's projector ``P``, :func:`sketch_projectors`).  ``ab`` = c_AB and ``cd`` = c_CD, the
    coefficients of the layer update (A' = A + c_AB A Aᵀ A, C' = C + c_CD A Aᵀ C): a1·a2 and a1·a3 for
    one head; for H heads Σ_h a1^h a2^h and Σ_h a1^h a3^h (exact for diagonal heads, unlike
    (Σ a1^h)(Σ a2^h)).  ``flipped``: layers whose (a1, a2, a3) were negated so that a1 > 0 (Fig. 12; a
    negation of W_Q and W_P, which leaves the function unchanged).

    Distributed only (else None): ``b`` / ``c``: mean diagonals of the *other* part's query / data
    block; ``cd_other`` = a1·b (coefficient of the other machines' C/D contributions);
    ``other_query_mass`` / ``other_data_mass``: shares of ‖W_other‖_F² in its
    n'×n' query block, its n_μ×n_μ data block (paper: only C, D cross machines, so
    the query share ≈ 1).  Sketched only: ``P`` (L, n, n).
    """
    regime: str
    a1: np.ndarray
    a2: np.ndarray
    a3: np.ndarray
    ab: np.ndarray
    cd: np.ndarray
    flipped: np.ndarray
    aligned: bool
    b: np.ndarray | None = None
    c: np.ndarray | None = None
    cd_other: np.ndarray | None = None
    other_query_mass: np.ndarray | None = None
    other_data_mass: np.ndarray | None = None
    P: np.ndarray | None = None


def alphas(model: LinearTransformer, *, align: bool = True) -> Alphas:
    """Read the per-layer scalars α¹, α², α³ (and the products) from the model's weights; see :class:`Alphas`."""
    check_model(model)
    prod = products(model)
    extra = model.rg.reading.alphas(prod.wqk, prod.wvp, model)      # the regime's read-out, see eaglebook.regimes
    a1, a2, a3, ab, cd = (extra.pop(k) for k in ("a1", "a2", "a3", "ab", "cd"))
    flipped = (a1 < 0) if align else np.zeros(model.L, dtype=bool)
    s = np.where(flipped, -1.0, 1.0)
    a1, a2, a3 = a1 * s, a2 * s, a3 * s
    model.rg.reading.align_extra(extra, s, a1)
    return Alphas(model.regime, a1, a2, a3, np.asarray(ab, float), np.asarray(cd, float), flipped, bool(align), **extra)


def aligned_products(model: LinearTransformer) -> Products:
    """The products with the Fig. 12 sign alignment: every head's (W_QK, W_VP) negated where its
    data-block mean diagonal α¹ (sketched: tr(W_QK P)/r) is negative, so large W_QK entries are
    positive (and, in a converging model, large W_VP entries negative).  The function is unchanged."""
    check_model(model)
    prod = products(model)
    wqk, wvp = prod.wqk.copy(), prod.wvp.copy()
    n = model.n_mu
    P = model.rg.reading.projectors(prod.wqk, model)
    for l in range(model.L):
        model.rg.reading.align_layer(wqk[l], wvp[l], n, None if P is None else P[l])
    return Products(prod.regime, wqk, wvp)


def _prompt_batch(model: LinearTransformer, X_obs, batch: int, seed: int) -> torch.Tensor:
    if X_obs is None:
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
            raise ValueError(f"argument batch={batch!r} must be an integer >= 1")
        _, X_obs = tasks.sample_X(model.task, int(batch), generator=torch.Generator().manual_seed(int(seed)), dtype=F64)
    return tasks.prompt(as_batch("X_obs", X_obs, model.task), model.task)


def batch_norms(model: LinearTransformer, X_obs=None, *, batch: int = 1024, seed: int = 0) -> np.ndarray:
    """‖A_ℓ‖₂² of the transformer's own activations, shape (L, batch) (distributed: (L, batch, M), one
    per machine block A^μ_ℓ; sketched: ‖A_ℓ S_ℓ‖₂² with the layer's effective sketch S_ℓ).

    ``X_obs``: the samples (default: ``batch`` fresh samples of the task distribution drawn with ``seed``).
    """
    check_model(model)
    Z0 = _prompt_batch(model, X_obs, batch, seed)
    with torch.no_grad():
        acts = model64(model).activations(Z0)
    d, n = model.task.d, model.task.n
    out = []
    Ss = model.rg.reading.sketches(products(model).wqk, model)
    for l in range(model.L):
        A = model.rg.reading.norm_blocks(model, acts[l][:, :d, :n], l, Ss)   # distributed: per machine; sketched: A S_ℓ
        out.append(torch.linalg.matrix_norm(A, ord=2).square().numpy())
    return np.asarray(out)


@dataclass(frozen=True, eq=False)
class ScalingLaw:
    """α¹α² ≈ −η/‖A_ℓ‖², α¹α³ ≈ −γ/‖A_ℓ‖² with the batch-max norm (the paper's Figs. 5 and 11).  Arrays have length L.

    ``norm2_max``, ``norm2_median``: max and median over the batch (distributed: and machines) of
    ‖A_ℓ‖₂².  ``eta_layer`` = −c_AB·norm2_max, ``gamma_layer`` = −c_CD·norm2_max; ``eta`` = median of
    ``eta_layer`` over ``eta_layers`` (0..L−2: the last layer's A update never reaches the read-out),
    ``gamma`` = median of ``gamma_layer`` over all layers (``gamma_layers``).  Per-instance variant:
    ``eta_instance`` / ``gamma_instance`` = −c·norm2_median (what the constants would be with the
    per-sample ρ of the median instance).  Distributed: ``gamma_other_layer`` = −a1·b·norm2_max.
    """
    ab: np.ndarray
    cd: np.ndarray
    norm2_max: np.ndarray
    norm2_median: np.ndarray
    eta_layer: np.ndarray
    gamma_layer: np.ndarray
    eta: float
    gamma: float
    eta_layers: tuple[int, ...]
    gamma_layers: tuple[int, ...]
    eta_instance: np.ndarray
    gamma_instance: np.ndarray
    batch: int
    gamma_other_layer: np.ndarray | None = None


def scaling_law(model: LinearTransformer, X_obs=None, *, batch: int = 1024, seed: int = 0) -> ScalingLaw:
    """Fit the scaling laws (the paper's Figs. 5 and 11) from the model's α's and its own activations; see :class:`ScalingLaw`."""
    al = alphas(model)
    nr = batch_norms(model, X_obs, batch=batch, seed=seed)
    flat = nr.reshape(nr.shape[0], -1)
    finite = [f[np.isfinite(f)] for f in flat]
    mx = np.array([f.max() if f.size else np.inf for f in finite])
    med = np.array([np.median(f) if f.size else np.inf for f in finite])
    L = model.L
    eta_l, gam_l = -al.ab * mx, -al.cd * mx
    el = tuple(range(L - 1)) if L > 1 else (0,)
    gl = tuple(range(L))
    return ScalingLaw(al.ab, al.cd, mx, med, eta_l, gam_l, float(np.median(eta_l[list(el)])),
                      float(np.median(gam_l)), el, gl, -al.ab * med, -al.cd * med, int(nr.shape[1]),
                      (-al.cd_other * mx) if al.cd_other is not None else None)

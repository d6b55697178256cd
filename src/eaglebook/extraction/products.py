"""Step 1 of the extraction (the paper's App. B.5): the per-layer weight products, a forward pass
parametrised by them (every regime), sparsification and quantisation (Fig. 10)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np
import torch

from .. import regimes, tasks
from ..config import TaskConfig
from ..models import LinearTransformer
from ._common import np64, like, check_factor, check_levels, check_model, check_task, as_batch, model64, mse_stats, F64


def sparsify(W, factor: float = 1.5):
    """Zero the entries with |w| < ``factor`` × mean|w| (the paper's App. B.5: τ = 1.5·‖W‖₁/#entries).

    ``W``: a NumPy array or torch tensor of any shape (the mean is over all its entries).  Returns the
    same type (NumPy input → float64).  An all-zero W is returned unchanged.
    """
    factor = check_factor(factor)
    w = np64(W)
    tau = factor * np.abs(w).mean() if w.size else 0.0
    out = np.where(np.abs(w) >= tau, w, 0.0) if tau > 0 else w.copy()
    return like(out, W)


def kmeans_1d(values, k: int, *, iters: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic 1-D k-means (Lloyd) of ``values`` into at most ``k`` clusters.

    Started from the quantiles (i + ½)/k of the values; empty clusters are dropped.  Returns
    ``(centers, labels)`` with ``centers`` sorted ascending and ``labels[i]`` the center index of
    ``values[i]``.  With at most ``k`` distinct values every value is its own center (exact).
    """
    k = check_levels(k, "k")
    x = np64(values).ravel()
    if x.size == 0:
        return np.zeros(0), np.zeros(0, dtype=int)
    uniq = np.unique(x)
    if uniq.size <= k:
        return uniq, np.searchsorted(uniq, x)
    c = np.unique(np.quantile(x, (np.arange(k) + 0.5) / k))
    labels = None
    for _ in range(iters):
        new = np.abs(x[:, None] - c[None, :]).argmin(1)
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        used = np.unique(labels)
        c = np.array([x[labels == j].mean() for j in used])
        labels = np.searchsorted(used, labels)
    order = np.argsort(c)
    c = c[order]
    labels = np.argsort(order)[labels]
    return c, labels


def quantize(W, levels: int, *, factor: float | None = 1.5, return_levels: bool = False):
    """Sparsify ``W`` at ``factor`` (None: no threshold), then cluster it into ``levels`` levels.

    The zero level counts: the surviving non-zero entries are replaced by the centers of a 1-D
    k-means with ``levels − 1`` clusters (:func:`kmeans_1d`), so W_QK uses ``levels=2`` ({0, α¹}) and
    W_VP ``levels=3`` ({0, α², α³}).  ``levels=1`` gives the zero matrix.  Returns the same type as
    ``W``, and with ``return_levels`` also the sorted non-zero levels (NumPy).
    """
    levels = check_levels(levels)
    w = np64(sparsify(W, factor) if factor is not None else np64(W))
    out = np.zeros_like(w)
    nz = w != 0
    cent = np.zeros(0)
    if levels > 1 and nz.any():
        cent, lab = kmeans_1d(w[nz], levels - 1)
        out[nz] = cent[lab]
    out = like(out, W)
    return (out, cent) if return_levels else out


class Products(NamedTuple):
    """Per-layer weight products of a model, float64 NumPy.

    unconstrained/sketched: ``wqk``, ``wvp`` of shape (L, H, n+n', n+n') (sketched: H = 1).
    distributed: ``wqk`` (L, 1, F_μ, F_μ) (the block shared by every machine) and ``wvp``
    (L, 2, F_μ, F_μ) = [self part, other part] (see :mod:`eaglebook.models`).
    """
    regime: str
    wqk: np.ndarray
    wvp: np.ndarray


def products(model: LinearTransformer) -> Products:
    """The per-layer products W_QK^h = W_Q^h W_K^hᵀ and W_VP^h = W_V^h W_P^hᵀ of every head (float64)."""
    check_model(model)
    m = model64(model)
    with torch.no_grad():
        wqk = (m.W_Q @ m.W_K.transpose(-1, -2)).numpy()
        wvp = (m.W_V @ m.W_P.transpose(-1, -2)).numpy()
    return Products(m.regime, wqk, wvp)


def layer_products(model: LinearTransformer, layer: int, head: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One layer's (W_QK, W_VP) as float64 NumPy: Σ_h over heads, or head ``head``'s.

    Distributed: W_QK is the shared F_μ×F_μ block and W_VP the (2, F_μ, F_μ) [self, other] pair
    (``head`` ignored).  ``layer`` must be in 0..L−1 (``ValueError`` naming ``layer`` otherwise).
    """
    check_model(model)
    if model.rg.can("heads_share_weights"):
        head = None
    elif head is not None:
        if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not (0 <= head < model.W_Q.shape[1]):
            raise ValueError(f"argument head={head!r} must be an integer in 0..{model.W_Q.shape[1] - 1}")
    return np64(model.qk(layer, head)), np64(model.vp(layer, head))


def _check_products(regime: str, wqk, wvp, task: TaskConfig):
    """Normalise to per-layer (H, F, F) arrays; return them, the regime and its number of feature blocks
    (machines; 1 unless distributed)."""
    rg = regimes.get(regime)
    qs = [np.asarray(np64(q)) for q in wqk]
    vs = [np.asarray(np64(v)) for v in wvp]
    if len(qs) != len(vs) or not qs:
        raise ValueError(f"arguments wqk and wvp must list the same number (>= 1) of layers, got {len(qs)} and {len(vs)}")
    qs = [q[None] if q.ndim == 2 else q for q in qs]
    vs = [v[None] if v.ndim == 2 else v for v in vs]
    return qs, vs, rg, rg.reading.check_products(qs, vs, task)


def forward_products(wqk, wvp, Z0, task: TaskConfig, *, regime: str = "unconstrained",
                     activations: bool = False):
    """Run the layers defined by their products (float64); return −D_L or all activations.

    Layer: Z ← Z + Σ_h (Z W_QK^h Z_kᵀ) Z_k W_VP^h with Z_k = the first d tokens (the paper's mask).
    ``wqk[l]``, ``wvp[l]``: (F, F) or (H, F, F) for unconstrained/sketched (F = n+n'); for distributed
    ``wqk[l]`` is the shared (F_μ, F_μ) block and ``wvp[l]`` the (2, F_μ, F_μ) [self, other] pair (the
    number of machines M = n/n_μ is read from the shapes), with machine ν receiving
    O_ν W_self + Σ_{μ≠ν} O_μ W_other exactly as :class:`~eaglebook.models.LinearTransformer`.

    ``Z0``: prompt (batch, d+d', n+n') in the common layout.  Returns the prediction −D_L
    (batch, d', n') as a float64 tensor, or with ``activations=True`` the list Z_0..Z_L in the common
    layout (distributed: C and D averaged over the machines' copies).
    """
    qs, vs, rg, M = _check_products(regime, wqk, wvp, task)
    Z = as_batch("Z0", Z0, task)
    qs = [torch.from_numpy(q) for q in qs]
    vs = [torch.from_numpy(v) for v in vs]
    acts = rg.reading.forward_products(qs, vs, Z, task, M)                     # the regime's layer, see eaglebook.regimes
    return acts if activations else -acts[-1][:, task.d:, task.n:]


def run_products(prod: Products, Z0, task: TaskConfig, *, activations: bool = False):
    """:func:`forward_products` for a :class:`Products`."""
    return forward_products(prod.wqk, prod.wvp, Z0, task, regime=prod.regime, activations=activations)


def _map_products(prod: Products, f_qk, f_vp) -> Products:
    """Apply ``f_qk`` to every W_QK matrix and ``f_vp`` to every W_VP^μ (distributed: [self | other] jointly)."""
    wqk = np.stack([[f_qk(q) for q in layer] for layer in prod.wqk])
    return Products(prod.regime, wqk, regimes.get(prod.regime).reading.map_vp(prod.wvp, f_vp))


def sparsified_products(prod: Products, factor: float = 1.5) -> Products:
    """Every product sparsified at ``factor`` (per head; distributed W_VP self/other jointly)."""
    check_factor(factor)
    return _map_products(prod, lambda w: sparsify(w, factor), lambda w: sparsify(w, factor))


def quantized_products(prod: Products, *, factor: float | None = 1.5, levels_qk: int = 2, levels_vp: int = 3) -> Products:
    """Every product sparsified and quantised (W_QK: ``levels_qk``, W_VP: ``levels_vp`` levels, zero included)."""
    if factor is not None:
        check_factor(factor)
    check_levels(levels_qk, "levels_qk")
    check_levels(levels_vp, "levels_vp")
    return _map_products(prod, lambda w: quantize(w, levels_qk, factor=factor),
                         lambda w: quantize(w, levels_vp, factor=factor))


def from_products(model: LinearTransformer, prod: Products) -> LinearTransformer:
    """A copy of ``model`` whose products equal ``prod`` (a regime that can hold any product: unconstrained,
    distributed; see :meth:`eaglebook.regimes.Regime.can`).

    Factorisation: W_Q = W_QK, W_K = I, W_V = I, W_P = W_VPᵀ (per head; distributed: W_P[:, 0] = selfᵀ,
    W_P[:, 1] = otherᵀ).  Any factorisation with the same products computes the same function.  The
    sketched regime cannot hold a product of rank > r: use :func:`forward_products` instead.
    """
    check_model(model, "refactorable")
    if regimes.get(prod.regime) is not model.rg:
        raise ValueError(f"argument prod has regime {prod.regime!r}, the model {model.regime!r}")
    m = copy.deepcopy(model)
    p = next(m.parameters())
    wqk = torch.as_tensor(prod.wqk, dtype=F64)
    wvp = torch.as_tensor(prod.wvp, dtype=F64)
    if tuple(wqk.shape) != tuple(m.W_Q.shape) or tuple(wvp.shape) != tuple(m.W_P.shape):
        raise ValueError(f"argument prod has shapes {tuple(wqk.shape)}, {tuple(wvp.shape)}; the model needs "
                         f"{tuple(m.W_Q.shape)}, {tuple(m.W_P.shape)}")
    F = m.W_Q.shape[-1]
    with torch.no_grad():
        m.W_Q.copy_(wqk.to(p.dtype))
        m.W_K.copy_(torch.eye(F, dtype=F64).expand_as(m.W_K).to(p.dtype))
        m.W_V.copy_(torch.eye(F, dtype=F64).expand_as(m.W_V).to(p.dtype))
        m.W_P.copy_(wvp.transpose(-1, -2).to(p.dtype))
    return m


def quantized_model(model: LinearTransformer, *, factor: float = 1.5, levels_qk: int = 2,
                    levels_vp: int = 3) -> LinearTransformer:
    """The model with every W_QK, W_VP replaced by its sparsified and quantised version (extraction step 1).

    Unconstrained (per head) and distributed (shared block; W_VP^μ = [self | other] jointly) only: the
    paper quantises these two regimes, and the sketched W_Q (n+n')×r cannot carry a full-rank product.
    """
    check_model(model, "refactorable")
    return from_products(model, quantized_products(products(model), factor=factor, levels_qk=levels_qk,
                                                   levels_vp=levels_vp))


@dataclass(frozen=True, eq=False)
class SparsificationCurve:
    """Test MSE on D against the sparsification threshold (Fig. 10).

    ``factors`` (k,); ``mse_mean``, ``mse_median`` (k,): products sparsified at each factor;
    ``quantized_mean``, ``quantized_median`` (k,): sparsified then quantised (2 / 3 levels) at each
    factor; ``kept_fraction`` (k,): fraction of all product entries that survive the threshold;
    ``original_mean``/``original_median``: unmodified products; ``quantized_1p5_mean`` /
    ``quantized_1p5_median``: the paper's setting (factor 1.5, 2 and 3 levels); ``zero_mse``:
    predicting 0; ``original_per_sample``, ``quantized_1p5_per_sample``: the per-prompt MSEs behind the two.
    """
    factors: np.ndarray
    mse_mean: np.ndarray
    mse_median: np.ndarray
    quantized_mean: np.ndarray
    quantized_median: np.ndarray
    kept_fraction: np.ndarray
    original_mean: float
    original_median: float
    quantized_1p5_mean: float
    quantized_1p5_median: float
    zero_mse: float
    original_per_sample: np.ndarray | None = None       # per held-out prompt: the trained products' MSE ...
    quantized_1p5_per_sample: np.ndarray | None = None  # ... and the paper's setting's (for resampling over prompts)


def sparsification_curve(model: LinearTransformer, X_clean, X_obs, task: TaskConfig,
                         factors: Sequence[float] = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0),
                         *, levels_qk: int = 2, levels_vp: int = 3) -> SparsificationCurve:
    """Test MSE (mean and median per sample) after sparsifying all products at each factor (float64).

    Every regime (evaluated with :func:`forward_products`).  The prompt is built from ``X_obs``, the
    target is the clean D of ``X_clean``.
    """
    check_model(model)
    check_task(task, model)
    fs = [check_factor(f, "factors") for f in np.atleast_1d(np.asarray(factors, dtype=float))]
    Xc = as_batch("X_clean", X_clean, task)
    Z0 = tasks.prompt(as_batch("X_obs", X_obs, task), task)
    prod = products(model)
    total = prod.wqk.size + prod.wvp.size

    def ev(p):
        return mse_stats(run_products(p, Z0, task), Xc, task)

    orig = ev(prod)
    mm, md, qm, qd, kept = [], [], [], [], []
    for f in fs:
        sp = sparsified_products(prod, f)
        r = ev(sp)
        q = ev(quantized_products(prod, factor=f, levels_qk=levels_qk, levels_vp=levels_vp))
        mm.append(r["mean"]); md.append(r["median"]); qm.append(q["mean"]); qd.append(q["median"])
        kept.append((np.count_nonzero(sp.wqk) + np.count_nonzero(sp.wvp)) / total)
    q15 = ev(quantized_products(prod, factor=1.5, levels_qk=levels_qk, levels_vp=levels_vp))
    zero = float(tasks.split(Xc, task).D.square().mean())
    return SparsificationCurve(np.asarray(fs), np.asarray(mm), np.asarray(md), np.asarray(qm), np.asarray(qd),
                               np.asarray(kept), orig["mean"], orig["median"], q15["mean"], q15["median"], zero,
                               orig["per_sample"], q15["per_sample"])

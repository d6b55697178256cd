"""Extracting the algorithm from a trained linear transformer (paper-facts §5, §8.1).

The paper's pipeline, step by step, with the functions that implement it:

1. **Quantisation / sparsification** (§5.1 step 1).  :func:`sparsify` zeroes every entry below
   ``factor`` × the mean absolute entry (the paper's τ = 1.5·‖W‖₁/#entries); :func:`quantize` then
   clusters the surviving values.  *Levels and zeros*: the zero produced by the threshold **counts as
   one of the levels**, so W_QK's "2 levels" are {0, α¹} and W_VP's "3 levels" are {0, α², α³}; the
   non-zero survivors are clustered into ``levels − 1`` values by a deterministic 1-D k-means (Lloyd's
   algorithm started from the quantiles).  This is the only reading under which the reported
   structures diag(α¹I, 0) and diag(α²I, α³I) have exactly 2 and 3 distinct entries.
   :func:`quantized_model` returns a model whose products are replaced by their quantised versions
   (unconstrained: per head; distributed: the shared W_QK block, and the self and other parts of W_VP
   quantised *jointly* as the machine's (F_μ × 2F_μ) W_VP^μ).  The sketched regime cannot be
   re-factorised after quantisation (W_Q is (n+n')×r), so everything that changes weights is
   evaluated through the *product-parametrised* forward pass :func:`forward_products`, which runs the
   layer definition Z ← Z + Σ_h (Z W_QK^h Z_kᵀ) Z_k W_VP^h (keys Z_k = the first d tokens) for every
   regime.  :func:`sparsification_curve` is Fig. 10 (test MSE against the threshold factor).
2. **Matrix property tests** (§5.1 step 2).  :func:`matrix_properties` / :func:`weight_properties`:
   mass off the expected structure, sparsity, numerical and stable rank, with a Gaussian matrix of the
   same shape and Frobenius norm as the "random" reference.
3. **Per-layer scalars** (§5.2–5.4).  :func:`alphas` reads α¹, α², α³ per layer (distributed: also
   the "other" part b, c; sketched: relative to the layer's effective projector P_ℓ, see
   :func:`sketch_structure`), sign-aligned as in Fig. 12 (α¹ > 0, so that α², α³ < 0 in a converging
   model).  The products c_AB = α¹α², c_CD = α¹α³ are sign-invariant.
4. **Scaling laws** (§5.2).  :func:`scaling_law`: η_ℓ = −c_AB,ℓ · max_batch ‖A_ℓ‖₂² and
   γ_ℓ = −c_CD,ℓ · max_batch ‖A_ℓ‖₂², with A_ℓ the transformer's *own* layer-ℓ activations.  The
   fitted η is the median of η_ℓ over layers 0..L−2 (the last layer's A update never reaches the
   read-out, so its α² stays near its initial value); γ is the median over all L layers.
5. **Fidelity** (§8.1, Table 1).  :func:`fidelity`: per layer, ‖Z_ℓ − Ẑ_ℓ‖_F² / #entries(Z), batch
   mean, between the transformer's activations and the extracted iteration with constant per-layer
   coefficients, both in float64 and in the common (d+d')×(n+n') layout.  *D sign*: the raw D block of
   the transformer's residual stream is compared with the extracted iteration run with
   ``readout="transformer"`` (D' = D + c_CD B Aᵀ C), i.e. −D_EAGLE; no sign is flipped afterwards.
6. **Heads** (§5.1 step 3, §8.6).  :func:`head_ablation` and :func:`prune_to` (unconstrained).

Everything is a pure function: weights are read, never modified (copies are returned).  Inputs are
torch tensors or NumPy arrays; results are frozen dataclasses or dicts of floats and NumPy arrays
(float64).  Regime-specific functions raise ``ValueError`` naming ``model`` when given the wrong
regime; bad numeric arguments raise ``ValueError`` naming the argument.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np
import torch

from . import eagle, tasks
from .config import TaskConfig
from .models import LinearTransformer, diagonal_update

__all__ = [
    "sparsify", "quantize", "kmeans_1d", "Products", "products", "layer_products", "aligned_products", "from_products",
    "forward_products", "run_products", "sparsified_products", "quantized_products", "quantized_model",
    "SparsificationCurve", "sparsification_curve", "MatrixProperties", "matrix_properties",
    "structure_projection", "weight_properties", "Alphas", "alphas", "SketchLayer", "sketch_structure",
    "sketch_projectors", "ScalingLaw", "batch_norms", "scaling_law", "Fidelity", "fidelity",
    "extracted_iterates", "head_ablation", "prune_to",
]

F64 = torch.float64


# ============================================================================ small helpers
class _AsDict:
    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (arrays stay NumPy arrays)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def _np(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", F64).numpy()
    return np.asarray(x, dtype=np.float64)


def _like(out: np.ndarray, ref):
    """Return ``out`` in the type of ``ref`` (torch tensor on its device/dtype, else float64 NumPy)."""
    if isinstance(ref, torch.Tensor):
        return torch.as_tensor(out, dtype=ref.dtype if ref.is_floating_point() else F64, device=ref.device)
    return out


def _check_factor(factor, name="factor") -> float:
    if isinstance(factor, bool) or not isinstance(factor, (int, float, np.integer, np.floating)) \
            or not np.isfinite(factor) or factor <= 0:
        raise ValueError(f"argument {name}={factor!r} must be a finite number > 0")
    return float(factor)


def _check_levels(levels, name="levels") -> int:
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or levels < 1:
        raise ValueError(f"argument {name}={levels!r} must be an integer >= 1 (the zero level included)")
    return int(levels)


def _check_model(model, *regimes) -> LinearTransformer:
    if not isinstance(model, LinearTransformer):
        raise TypeError(f"argument model must be a LinearTransformer, got {type(model).__name__}")
    if regimes and model.regime not in regimes:
        raise ValueError(f"argument model has regime {model.regime!r}; this function needs "
                         f"{' or '.join(repr(r) for r in regimes)}")
    return model


def _check_task(task: TaskConfig, model: LinearTransformer) -> TaskConfig:
    if not isinstance(task, TaskConfig):
        raise TypeError(f"argument task must be a TaskConfig, got {type(task).__name__}")
    keys = ("n", "d", "n_prime", "d_prime")
    if any(getattr(task, k) != getattr(model.task, k) for k in keys):
        raise ValueError(f"argument task has shapes {[getattr(task, k) for k in keys]} but the model was built "
                         f"for {[getattr(model.task, k) for k in keys]} (n, d, n', d')")
    return task


def _as_batch(name: str, X, task: TaskConfig) -> torch.Tensor:
    t = X.detach() if isinstance(X, torch.Tensor) else torch.as_tensor(np.asarray(X))
    t = t.to("cpu", F64)
    want = (task.d + task.d_prime, task.n + task.n_prime)
    if t.dim() != 3 or tuple(t.shape[-2:]) != want:
        raise ValueError(f"argument {name} has shape {tuple(t.shape)}, expected (batch, d+d', n+n') = (batch, {want[0]}, {want[1]})")
    return t


def _model64(model: LinearTransformer) -> LinearTransformer:
    m = copy.deepcopy(model).to("cpu", F64)
    m.eval()
    return m


def _mse_stats(pred: torch.Tensor, X_clean: torch.Tensor, task: TaskConfig) -> dict[str, Any]:
    D = tasks.split(X_clean, task).D.to(F64)
    per = (pred.to(F64) - D).square().mean((-1, -2)).numpy()
    zero = D.square().mean((-1, -2)).numpy()
    srt = np.where(np.isnan(per), np.inf, per)
    return {"per_sample": per, "mean": float(per.mean()), "median": float(np.median(srt)),
            "frac_worse_than_zero": float((~(per <= zero)).mean())}


# ============================================================================ 1. quantisation
def sparsify(W, factor: float = 1.5):
    """Zero the entries with |w| < ``factor`` × mean|w| (paper §5.1: τ = 1.5·‖W‖₁/#entries).

    ``W``: a NumPy array or torch tensor of any shape (the mean is over all its entries).  Returns the
    same type (NumPy input → float64).  An all-zero W is returned unchanged.
    """
    factor = _check_factor(factor)
    w = _np(W)
    tau = factor * np.abs(w).mean() if w.size else 0.0
    out = np.where(np.abs(w) >= tau, w, 0.0) if tau > 0 else w.copy()
    return _like(out, W)


def kmeans_1d(values, k: int, *, iters: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic 1-D k-means (Lloyd) of ``values`` into at most ``k`` clusters.

    Started from the quantiles (i + ½)/k of the values; empty clusters are dropped.  Returns
    ``(centers, labels)`` with ``centers`` sorted ascending and ``labels[i]`` the center index of
    ``values[i]``.  With at most ``k`` distinct values every value is its own center (exact).
    """
    k = _check_levels(k, "k")
    x = _np(values).ravel()
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
    levels = _check_levels(levels)
    w = _np(sparsify(W, factor) if factor is not None else _np(W))
    out = np.zeros_like(w)
    nz = w != 0
    cent = np.zeros(0)
    if levels > 1 and nz.any():
        cent, lab = kmeans_1d(w[nz], levels - 1)
        out[nz] = cent[lab]
    out = _like(out, W)
    return (out, cent) if return_levels else out


# ============================================================================ products and a product-parametrised forward
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
    _check_model(model)
    m = _model64(model)
    with torch.no_grad():
        wqk = (m.W_Q @ m.W_K.transpose(-1, -2)).numpy()
        wvp = (m.W_V @ m.W_P.transpose(-1, -2)).numpy()
    return Products(m.regime, wqk, wvp)


def layer_products(model: LinearTransformer, layer: int, head: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One layer's (W_QK, W_VP) as float64 NumPy: Σ_h over heads, or head ``head``'s.

    Distributed: W_QK is the shared F_μ×F_μ block and W_VP the (2, F_μ, F_μ) [self, other] pair
    (``head`` ignored).  ``layer`` must be in 0..L−1 (``ValueError`` naming ``layer`` otherwise).
    """
    _check_model(model)
    if head is not None and model.regime != "distributed":
        if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not (0 <= head < model.W_Q.shape[1]):
            raise ValueError(f"argument head={head!r} must be an integer in 0..{model.W_Q.shape[1] - 1}")
    if model.regime == "distributed":
        head = None
    return _np(model.qk(layer, head)), _np(model.vp(layer, head))


def _check_products(regime: str, wqk, wvp, task: TaskConfig) -> tuple[list[np.ndarray], list[np.ndarray], int]:
    """Normalise to per-layer (H, F, F) arrays; return them and the number of machines (1 unless distributed)."""
    if regime not in ("unconstrained", "sketched", "distributed"):
        raise ValueError(f"argument regime={regime!r} must be 'unconstrained', 'sketched' or 'distributed'")
    qs = [np.asarray(_np(q)) for q in wqk]
    vs = [np.asarray(_np(v)) for v in wvp]
    if len(qs) != len(vs) or not qs:
        raise ValueError(f"arguments wqk and wvp must list the same number (>= 1) of layers, got {len(qs)} and {len(vs)}")
    qs = [q[None] if q.ndim == 2 else q for q in qs]
    vs = [v[None] if v.ndim == 2 else v for v in vs]
    n, np_ = task.n, task.n_prime
    M = 1
    if regime == "distributed":
        Fm = qs[0].shape[-1]
        nm = Fm - np_
        if nm < 1 or n % nm:
            raise ValueError(f"argument wqk has blocks of size {Fm}, which is not n_μ + n' for an n_μ dividing n={n}")
        M = n // nm
        for l, (q, v) in enumerate(zip(qs, vs)):
            if q.shape != (1, Fm, Fm) or v.shape != (2, Fm, Fm):
                raise ValueError(f"argument wqk/wvp layer {l}: expected shapes (1, {Fm}, {Fm}) and (2, {Fm}, {Fm}), "
                                 f"got {q.shape} and {v.shape}")
    else:
        F = n + np_
        for l, (q, v) in enumerate(zip(qs, vs)):
            if q.ndim != 3 or q.shape[1:] != (F, F) or v.shape != q.shape:
                raise ValueError(f"argument wqk/wvp layer {l}: expected (heads, {F}, {F}) for both, got {q.shape} and {v.shape}")
    return qs, vs, M


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
    qs, vs, M = _check_products(regime, wqk, wvp, task)
    Z = _as_batch("Z0", Z0, task)
    qs = [torch.from_numpy(q) for q in qs]
    vs = [torch.from_numpy(v) for v in vs]
    d, n = task.d, task.n
    Bn, T = Z.shape[:2]
    if regime != "distributed":
        acts = [Z]
        for q, v in zip(qs, vs):
            Zk = Z[:, :d]
            G = Zk.transpose(1, 2) @ Zk
            upd = sum((Z @ q[h]) @ G @ v[h] for h in range(q.shape[0]))
            Z = Z + upd
            acts.append(Z)
        return acts if activations else -Z[:, d:, n:]
    nm = n // M
    data = Z[..., :n].reshape(Bn, T, M, nm).permute(0, 2, 1, 3)
    query = Z[:, None, :, n:].expand(Bn, M, T, task.n_prime)
    Zm = torch.cat([data, query], -1)                                  # (B, M, T, F_μ)

    def common(Zm):
        dat = Zm[..., :nm].permute(0, 2, 1, 3).reshape(Bn, T, n)
        return torch.cat([dat, Zm[..., nm:].mean(1)], -1)

    acts = [common(Zm)]
    for q, v in zip(qs, vs):
        Zk = Zm[:, :, :d]
        G = Zk.transpose(-1, -2) @ Zk
        O = (Zm @ q[0]) @ G
        Zm = Zm + O @ (v[0] - v[1]) + O.sum(1, keepdim=True) @ v[1]
        acts.append(common(Zm))
    return acts if activations else -acts[-1][:, d:, n:]


def run_products(prod: Products, Z0, task: TaskConfig, *, activations: bool = False):
    """:func:`forward_products` for a :class:`Products`."""
    return forward_products(prod.wqk, prod.wvp, Z0, task, regime=prod.regime, activations=activations)


def _map_products(prod: Products, f_qk, f_vp) -> Products:
    """Apply ``f_qk`` to every W_QK matrix and ``f_vp`` to every W_VP^μ (distributed: [self | other] jointly)."""
    wqk = np.stack([[f_qk(q) for q in layer] for layer in prod.wqk])
    if prod.regime == "distributed":
        out = []
        for s, o in prod.wvp:
            F = s.shape[1]
            j = f_vp(np.concatenate([s, o], 1))
            out.append([j[:, :F], j[:, F:]])
        wvp = np.asarray(out)
    else:
        wvp = np.stack([[f_vp(v) for v in layer] for layer in prod.wvp])
    return Products(prod.regime, wqk, wvp)


def sparsified_products(prod: Products, factor: float = 1.5) -> Products:
    """Every product sparsified at ``factor`` (per head; distributed W_VP self/other jointly)."""
    _check_factor(factor)
    return _map_products(prod, lambda w: sparsify(w, factor), lambda w: sparsify(w, factor))


def quantized_products(prod: Products, *, factor: float | None = 1.5, levels_qk: int = 2, levels_vp: int = 3) -> Products:
    """Every product sparsified and quantised (W_QK: ``levels_qk``, W_VP: ``levels_vp`` levels, zero included)."""
    if factor is not None:
        _check_factor(factor)
    _check_levels(levels_qk, "levels_qk")
    _check_levels(levels_vp, "levels_vp")
    return _map_products(prod, lambda w: quantize(w, levels_qk, factor=factor),
                         lambda w: quantize(w, levels_vp, factor=factor))


def from_products(model: LinearTransformer, prod: Products) -> LinearTransformer:
    """A copy of ``model`` (unconstrained or distributed) whose products equal ``prod``.

    Factorisation: W_Q = W_QK, W_K = I, W_V = I, W_P = W_VPᵀ (per head; distributed: W_P[:, 0] = selfᵀ,
    W_P[:, 1] = otherᵀ).  Any factorisation with the same products computes the same function.  The
    sketched regime cannot hold a product of rank > r: use :func:`forward_products` instead.
    """
    _check_model(model, "unconstrained", "distributed")
    if prod.regime != model.regime:
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
    """The model with every W_QK, W_VP replaced by its sparsified and quantised version (§5.1 step 1).

    Unconstrained (per head) and distributed (shared block; W_VP^μ = [self | other] jointly) only: the
    paper quantises these two regimes, and the sketched W_Q (n+n')×r cannot carry a full-rank product.
    """
    _check_model(model, "unconstrained", "distributed")
    return from_products(model, quantized_products(products(model), factor=factor, levels_qk=levels_qk,
                                                   levels_vp=levels_vp))


@dataclass(frozen=True, eq=False)
class SparsificationCurve(_AsDict):
    """Test MSE on D against the sparsification threshold (Fig. 10).

    ``factors`` (k,); ``mse_mean``, ``mse_median`` (k,): products sparsified at each factor;
    ``quantized_mean``, ``quantized_median`` (k,): sparsified then quantised (2 / 3 levels) at each
    factor; ``kept_fraction`` (k,): fraction of all product entries that survive the threshold;
    ``original_mean``/``original_median``: unmodified products; ``quantized_1p5_mean`` /
    ``quantized_1p5_median``: the paper's setting (factor 1.5, 2 and 3 levels); ``zero_mse``:
    predicting 0.
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


def sparsification_curve(model: LinearTransformer, X_clean, X_obs, task: TaskConfig,
                         factors: Sequence[float] = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0),
                         *, levels_qk: int = 2, levels_vp: int = 3) -> SparsificationCurve:
    """Test MSE (mean and median per sample) after sparsifying all products at each factor (float64).

    Every regime (evaluated with :func:`forward_products`).  The prompt is built from ``X_obs``, the
    target is the clean D of ``X_clean``.
    """
    _check_model(model)
    _check_task(task, model)
    fs = [_check_factor(f, "factors") for f in np.atleast_1d(np.asarray(factors, dtype=float))]
    Xc = _as_batch("X_clean", X_clean, task)
    Z0 = tasks.prompt(_as_batch("X_obs", X_obs, task), task)
    prod = products(model)
    total = prod.wqk.size + prod.wvp.size

    def ev(p):
        return _mse_stats(run_products(p, Z0, task), Xc, task)

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
                               np.asarray(kept), orig["mean"], orig["median"], q15["mean"], q15["median"], zero)


# ============================================================================ 2. matrix properties
def structure_projection(W, n: int, kind: str):
    """Least-squares projection of a square W onto the paper's structure.

    ``kind="qk"``: span{diag(I_n, 0_{n'})} → diag(a I_n, 0) with a = mean of the data block's diagonal.
    ``kind="vp"``: span{diag(I_n, 0), diag(0, I_{n'})} → diag(a I_n, b I_{n'}) with a, b the means of the
    two diagonal blocks' diagonals.  Returns the projection in the type of ``W``.
    """
    if kind not in ("qk", "vp"):
        raise ValueError(f"argument kind={kind!r} must be 'qk' or 'vp'")
    w = _np(W)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or not (1 <= n <= w.shape[0]):
        raise ValueError(f"argument W must be square with n={n} <= its size, got shape {w.shape}")
    dg = np.diag(w)
    a = dg[:n].mean()
    b = dg[n:].mean() if (kind == "vp" and w.shape[0] > n) else 0.0
    return _like(np.diag(np.r_[np.full(n, a), np.full(w.shape[0] - n, b)]), W)


@dataclass(frozen=True, eq=False)
class MatrixProperties(_AsDict):
    """Structure statistics of one square product W (data block first n rows/columns).

    ``offdiag_mass``: ‖W − Π(W)‖_F/‖W‖_F with Π = :func:`structure_projection` (0: exactly the
    paper's structure; ≈1: none of it).  ``cross_block_mass``: ‖[W_{data,query}; W_{query,data}]‖_F/‖W‖_F.
    ``kept_fraction``: entries surviving the ``factor`` × mean|w| threshold; ``kept_on_diagonal``: share
    of the survivors that are diagonal.  ``numerical_rank``: #σᵢ > rank_tol·σ₁; ``data_rank``: the same
    for the n×n data block; ``stable_rank``: ‖W‖_F²/‖W‖₂².  ``singular_values``: σ₁ ≥ … (NumPy).
    """
    offdiag_mass: float
    cross_block_mass: float
    kept_fraction: float
    kept_on_diagonal: float
    numerical_rank: int
    data_rank: int
    stable_rank: float
    fro_norm: float
    singular_values: np.ndarray


def matrix_properties(W, n: int, kind: str, *, factor: float = 1.5, rank_tol: float = 1e-2) -> MatrixProperties:
    """:class:`MatrixProperties` of one square product (``kind`` 'qk' or 'vp', see :func:`structure_projection`)."""
    _check_factor(factor)
    _check_factor(rank_tol, "rank_tol")
    w = _np(W)
    proj = _np(structure_projection(w, n, kind))
    fro = float(np.linalg.norm(w))
    safe = fro if fro > 0 else 1.0
    cross = float(np.sqrt(np.sum(w[:n, n:] ** 2) + np.sum(w[n:, :n] ** 2)))
    kept = _np(sparsify(w, factor)) != 0
    sv = np.linalg.svd(w, compute_uv=False)
    svd_ = np.linalg.svd(w[:n, :n], compute_uv=False)
    nk = int(kept.sum())
    return MatrixProperties(
        offdiag_mass=float(np.linalg.norm(w - proj)) / safe,
        cross_block_mass=cross / safe,
        kept_fraction=nk / w.size,
        kept_on_diagonal=float(np.trace(kept)) / nk if nk else 0.0,
        numerical_rank=int((sv > rank_tol * sv[0]).sum()) if sv[0] > 0 else 0,
        data_rank=int((svd_ > rank_tol * svd_[0]).sum()) if svd_[0] > 0 else 0,
        stable_rank=float(fro ** 2 / sv[0] ** 2) if sv[0] > 0 else 0.0,
        fro_norm=fro, singular_values=sv)


def weight_properties(model: LinearTransformer, *, factor: float = 1.5, rank_tol: float = 1e-2,
                      seed: int = 0) -> dict[str, list[MatrixProperties]]:
    """Per-layer :class:`MatrixProperties` of the model's products, next to random references.

    Keys ``"qk"`` and ``"vp"`` (lists over layers; multi-head: of Σ_h W^h, the paper's W_QK = Σ_h W_Q W_Kᵀ;
    distributed: the shared W_QK block, the self part of W_VP, and ``"vp_other"`` the other part, whose
    expected structure is diag(c I, b I) with c ≈ 0), and ``"qk_random"``, ``"vp_random"``: the same
    statistics for i.i.d. Gaussian matrices of the same shape and Frobenius norm (``seed``).
    """
    _check_model(model)
    prod = products(model)
    rng = np.random.default_rng(seed)
    n = model.n_mu if model.regime == "distributed" else model.task.n
    out: dict[str, list[MatrixProperties]] = {"qk": [], "vp": [], "qk_random": [], "vp_random": []}
    if model.regime == "distributed":
        out["vp_other"] = []

    def rnd(w):
        g = rng.standard_normal(w.shape)
        return g * (np.linalg.norm(w) / np.linalg.norm(g))

    for l in range(model.L):
        q = prod.wqk[l].sum(0)
        v = prod.wvp[l][0] if model.regime == "distributed" else prod.wvp[l].sum(0)
        out["qk"].append(matrix_properties(q, n, "qk", factor=factor, rank_tol=rank_tol))
        out["vp"].append(matrix_properties(v, n, "vp", factor=factor, rank_tol=rank_tol))
        out["qk_random"].append(matrix_properties(rnd(q), n, "qk", factor=factor, rank_tol=rank_tol))
        out["vp_random"].append(matrix_properties(rnd(v), n, "vp", factor=factor, rank_tol=rank_tol))
        if model.regime == "distributed":
            out["vp_other"].append(matrix_properties(prod.wvp[l][1], n, "vp", factor=factor, rank_tol=rank_tol))
    return out


# ============================================================================ 3. per-layer scalars
@dataclass(frozen=True, eq=False)
class SketchLayer(_AsDict):
    """Sketched regime, one layer's n×n data blocks Q (of W_QK) and V (of W_VP), §5.4 / Fig. 4.

    ``S`` (n×r, orthonormal columns) spans the top-r eigenvectors (by |eigenvalue|) of the symmetrised
    Q, ``P = S Sᵀ`` the layer's effective sketch projector.  ``sv_qk``, ``sv_vp``: singular values of Q
    and V rescaled to spectral norm 1; ``sv_reference``: those of S_rnd S_rndᵀ for a Haar-random n×r
    S_rnd (r ones, n−r zeros).  ``rank_qk``, ``rank_vp``: numerical ranks (σᵢ > rank_tol·σ₁).
    ``rel_diff``: min over s = ±1 of ‖Q/‖Q‖₂ − s V/‖V‖₂‖_F / ‖Q/‖Q‖₂‖_F (paper: 0.28), attained at
    ``sign``.  ``projector_overlap``: tr(P_Q P_V)/r ∈ [0, 1] between the top-r subspaces of Q and V.
    ``entries_qk``, ``entries_vp``, ``entries_reference``: the normalised entries (flattened) for the
    histogram.  ``fit_residual_qk``/``_vp``: ‖Q − a P‖_F/‖Q‖_F with a the least-squares scale.
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
    fit_residual_vp: float
    entries_qk: np.ndarray
    entries_vp: np.ndarray
    entries_reference: np.ndarray


def _top_projector(Q: np.ndarray, r: int) -> np.ndarray:
    Qs = (Q + Q.T) / 2
    ev, U = np.linalg.eigh(Qs)
    idx = np.argsort(-np.abs(ev), kind="stable")[:r]
    S = U[:, np.sort(idx)]
    return S


def _sketch_rank(model: LinearTransformer, rank: int | None) -> tuple[int, int]:
    """(n, r) for a sketched model; ``rank`` defaults to the model's r and must lie in 1..n."""
    _check_model(model, "sketched")
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
        S = _top_projector(Q, r)
        P = S @ S.T
        Sv = _top_projector(V, r)
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
            fit_residual_qk=resid(Q), fit_residual_vp=resid(V),
            entries_qk=Qn.ravel().copy(), entries_vp=Vn.ravel().copy(), entries_reference=R.ravel().copy()))
    return out


def sketch_projectors(model: LinearTransformer, *, rank: int | None = None) -> np.ndarray:
    """(L, n, n): each layer's effective sketch projector P_ℓ = S_ℓ S_ℓᵀ (top-r eigenvectors of sym(W_QK data block))."""
    n, r = _sketch_rank(model, rank)
    prod = products(model)
    out = []
    for l in range(model.L):
        S = _top_projector(prod.wqk[l, 0, :n, :n], r)
        out.append(S @ S.T)
    return np.asarray(out)


@dataclass(frozen=True, eq=False)
class Alphas(_AsDict):
    """The per-layer scalars (§5.2–5.4), arrays of length L, sign-aligned unless ``aligned`` is False.

    ``a1``: mean diagonal of W_QK's n×n data block; ``a2``, ``a3``: mean diagonals of W_VP's data and
    query blocks (multi-head: of Σ_h W^h; sketched: least-squares scales a = tr(W_data P)/r with the
    layer's projector ``P``, :func:`sketch_projectors`).  ``ab`` = c_AB and ``cd`` = c_CD, the
    coefficients of the layer update (A' = A + c_AB A Aᵀ A, C' = C + c_CD A Aᵀ C): a1·a2 and a1·a3 for
    one head; for H heads Σ_h a1^h a2^h and Σ_h a1^h a3^h (exact for diagonal heads, unlike
    (Σ a1^h)(Σ a2^h)).  ``flipped``: layers whose (a1, a2, a3) were negated so that a1 > 0 (Fig. 12; a
    negation of W_Q and W_P, which leaves the function unchanged).

    Distributed only (else None): ``b`` / ``c``: mean diagonals of the *other* part's query / data
    block; ``cd_other`` = a1·b (coefficient of the other machines' C/D contributions);
    ``other_query_mass`` / ``other_data_mass`` / ``other_rest_mass``: shares of ‖W_other‖_F² in its
    n'×n' query block, its n_μ×n_μ data block, and the rest (paper: only C, D cross machines, so
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
    other_rest_mass: np.ndarray | None = None
    P: np.ndarray | None = None


def alphas(model: LinearTransformer, *, align: bool = True) -> Alphas:
    """Read the per-layer scalars α¹, α², α³ (and the products) from the model's weights; see :class:`Alphas`."""
    _check_model(model)
    prod = products(model)
    L = model.L
    n = model.n_mu if model.regime == "distributed" else model.task.n
    extra: dict[str, Any] = {}

    def md(w, lo, hi):
        return float(np.diag(w)[lo:hi].mean())

    if model.regime == "sketched":
        P = sketch_projectors(model)
        r = model.cfg.r
        a1 = np.array([np.sum(prod.wqk[l, 0, :n, :n] * P[l]) / r for l in range(L)])
        a2 = np.array([np.sum(prod.wvp[l, 0, :n, :n] * P[l]) / r for l in range(L)])
        a3 = np.array([md(prod.wvp[l, 0], n, None) for l in range(L)])
        ab, cd = a1 * a2, a1 * a3
        extra["P"] = P
    else:
        a1 = np.array([md(prod.wqk[l].sum(0), 0, n) for l in range(L)])
        if model.regime == "distributed":
            a2 = np.array([md(prod.wvp[l, 0], 0, n) for l in range(L)])
            a3 = np.array([md(prod.wvp[l, 0], n, None) for l in range(L)])
            ab, cd = a1 * a2, a1 * a3
            b = np.array([md(prod.wvp[l, 1], n, None) for l in range(L)])
            c = np.array([md(prod.wvp[l, 1], 0, n) for l in range(L)])
            tot = np.array([np.sum(prod.wvp[l, 1] ** 2) for l in range(L)])
            tot = np.where(tot > 0, tot, 1.0)
            qm = np.array([np.sum(prod.wvp[l, 1, n:, n:] ** 2) for l in range(L)]) / tot
            dm = np.array([np.sum(prod.wvp[l, 1, :n, :n] ** 2) for l in range(L)]) / tot
            extra.update(b=b, c=c, other_query_mass=qm, other_data_mass=dm, other_rest_mass=1 - qm - dm)
        else:
            a2 = np.array([md(prod.wvp[l].sum(0), 0, n) for l in range(L)])
            a3 = np.array([md(prod.wvp[l].sum(0), n, None) for l in range(L)])
            h1 = np.array([[md(q, 0, n) for q in prod.wqk[l]] for l in range(L)])
            h2 = np.array([[md(v, 0, n) for v in prod.wvp[l]] for l in range(L)])
            h3 = np.array([[md(v, n, None) for v in prod.wvp[l]] for l in range(L)])
            ab, cd = (h1 * h2).sum(1), (h1 * h3).sum(1)
    flipped = (a1 < 0) if align else np.zeros(L, dtype=bool)
    s = np.where(flipped, -1.0, 1.0)
    a1, a2, a3 = a1 * s, a2 * s, a3 * s
    if model.regime == "distributed":
        extra["b"], extra["c"] = extra["b"] * s, extra["c"] * s
        extra["cd_other"] = a1 * extra["b"]
    return Alphas(model.regime, a1, a2, a3, np.asarray(ab, float), np.asarray(cd, float), flipped, bool(align), **extra)


def aligned_products(model: LinearTransformer) -> Products:
    """The products with the Fig. 12 sign alignment: every head's (W_QK, W_VP) negated where its
    data-block mean diagonal α¹ (sketched: tr(W_QK P)/r) is negative, so large W_QK entries are
    positive (and, in a converging model, large W_VP entries negative).  The function is unchanged."""
    _check_model(model)
    prod = products(model)
    wqk, wvp = prod.wqk.copy(), prod.wvp.copy()
    n = model.n_mu if model.regime == "distributed" else model.task.n
    P = sketch_projectors(model) if model.regime == "sketched" else None
    for l in range(model.L):
        if model.regime == "distributed":
            if np.diag(wqk[l, 0])[:n].mean() < 0:
                wqk[l] *= -1
                wvp[l] *= -1
            continue
        for h in range(wqk.shape[1]):
            a = np.sum(wqk[l, h, :n, :n] * P[l]) if P is not None else np.diag(wqk[l, h])[:n].mean()
            if a < 0:
                wqk[l, h] *= -1
                wvp[l, h] *= -1
    return Products(prod.regime, wqk, wvp)


# ============================================================================ 4. scaling laws
def _prompt_batch(model: LinearTransformer, X_obs, batch: int, seed: int) -> torch.Tensor:
    if X_obs is None:
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
            raise ValueError(f"argument batch={batch!r} must be an integer >= 1")
        _, X_obs = tasks.sample_X(model.task, int(batch), generator=torch.Generator().manual_seed(int(seed)), dtype=F64)
    return tasks.prompt(_as_batch("X_obs", X_obs, model.task), model.task)


def batch_norms(model: LinearTransformer, X_obs=None, *, batch: int = 1024, seed: int = 0) -> np.ndarray:
    """‖A_ℓ‖₂² of the transformer's own activations, shape (L, batch) (distributed: (L, batch, M), one
    per machine block A^μ_ℓ; sketched: ‖A_ℓ S_ℓ‖₂² with the layer's effective sketch S_ℓ).

    ``X_obs``: the samples (default: ``batch`` fresh samples of the task distribution drawn with ``seed``).
    """
    _check_model(model)
    Z0 = _prompt_batch(model, X_obs, batch, seed)
    with torch.no_grad():
        acts = _model64(model).activations(Z0)
    d, n = model.task.d, model.task.n
    out = []
    if model.regime == "sketched":
        Ss = [torch.from_numpy(x.S) for x in sketch_structure(model)]
    for l in range(model.L):
        A = acts[l][:, :d, :n]
        if model.regime == "distributed":
            M, nm = model.machines, model.n_mu
            A = A.reshape(A.shape[0], d, M, nm).permute(0, 2, 1, 3)
        elif model.regime == "sketched":
            A = A @ Ss[l]
        out.append(torch.linalg.matrix_norm(A, ord=2).square().numpy())
    return np.asarray(out)


@dataclass(frozen=True, eq=False)
class ScalingLaw(_AsDict):
    """α¹α² ≈ −η/‖A_ℓ‖², α¹α³ ≈ −γ/‖A_ℓ‖² with the batch-max norm (§5.2).  Arrays have length L.

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
    """Fit the §5.2 scaling laws from the model's α's and its own activations; see :class:`ScalingLaw`."""
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


# ============================================================================ 5. fidelity
def extracted_iterates(model: LinearTransformer, Z0, task: TaskConfig, *, al: Alphas | None = None) -> list[torch.Tensor]:
    """The extracted algorithm's iterates Ẑ_0..Ẑ_L (float64, common layout, raw-transformer D sign).

    unconstrained: :func:`eagle.layerwise` with (c_AB, c_CD) = (ab, cd), ``readout="transformer"``.
    sketched: :func:`models.diagonal_update` with (a1, a2, a3) and the layer's projector P_ℓ.
    distributed: every machine ν updates its own A^ν, B^ν with c_AB and its copies of C, D with
    c_CD·A^ν A^νᵀ C^ν + a1·b·Σ_{μ≠ν} A^μ A^μᵀ C^μ (D likewise with B^μ); the common layout averages
    the copies.  ``al`` defaults to :func:`alphas` of the model.
    """
    _check_model(model)
    _check_task(task, model)
    al = alphas(model) if al is None else al
    Z = _as_batch("Z0", Z0, task)
    A, B, C, D = (x.clone() for x in tasks.split(Z, task))
    out = [Z.clone()]
    if model.regime == "unconstrained":
        its = eagle.layerwise(A, B, C, list(zip(al.ab, al.cd)), D=D, readout="transformer")
        return [tasks.assemble(*it) for it in its]
    if model.regime == "sketched":
        for l in range(model.L):
            P = torch.from_numpy(np.asarray(al.P[l], dtype=np.float64))
            A, B, C, D = diagonal_update(A, B, C, D, float(al.a1[l]), float(al.a2[l]), float(al.a3[l]), P)
            out.append(tasks.assemble(A, B, C, D))
        return out
    M, nm = model.machines, model.n_mu
    Bn, d = A.shape[0], task.d
    Am = A.reshape(Bn, d, M, nm).permute(0, 2, 1, 3)                       # (B, M, d, n_μ)
    Bm = B.reshape(Bn, task.d_prime, M, nm).permute(0, 2, 1, 3)
    Cm = C[:, None].expand(Bn, M, *C.shape[1:]).clone()
    Dm = D[:, None].expand(Bn, M, *D.shape[1:]).clone()
    for l in range(model.L):
        cab, ccd, cot = float(al.ab[l]), float(al.cd[l]), float(al.cd_other[l])
        At = Am.transpose(-1, -2)
        K = At @ Am
        dC, dD = Am @ (At @ Cm), Bm @ (At @ Cm)                            # machine μ's own directions
        Am, Bm = Am + cab * Am @ K, Bm + cab * Bm @ K
        sC, sD = dC.sum(1, keepdim=True), dD.sum(1, keepdim=True)
        Cm = Cm + ccd * dC + cot * (sC - dC)
        Dm = Dm + ccd * dD + cot * (sD - dD)
        A2 = Am.permute(0, 2, 1, 3).reshape(Bn, d, task.n)
        B2 = Bm.permute(0, 2, 1, 3).reshape(Bn, task.d_prime, task.n)
        out.append(tasks.assemble(A2, B2, Cm.mean(1), Dm.mean(1)))
    return out


@dataclass(frozen=True, eq=False)
class Fidelity(_AsDict):
    """Table 1: per layer ℓ = 0..L (arrays of length L+1), batch statistics of
    e_ℓ = ‖Z_ℓ − Ẑ_ℓ‖_F² / #entries(Z) between the transformer and the extracted algorithm.

    ``mean`` (the paper's number), ``median``; ``block_mean``: dict 'A', 'B', 'C', 'D' → the batch mean
    of that block's squared error divided by #entries(Z) (so the four add up to ``mean``);
    ``relative_median``: median of ‖Z_ℓ − Ẑ_ℓ‖_F²/‖Z_ℓ‖_F²; ``prediction_mean``: mean squared error
    between the two read-outs −D_ℓ (per entry of D).  ``gauge_relative``: dict 'A', 'AAt', 'BAt' → batch medians of the
    relative errors ‖A_ℓ − Â_ℓ‖_F²/‖A_ℓ‖_F², ‖A_ℓA_ℓᵀ − Â_ℓÂ_ℓᵀ‖_F²/‖A_ℓA_ℓᵀ‖_F² and the same for
    B_ℓA_ℓᵀ: the products are invariant to the gauge A → AQ, B → BQ (Q orthogonal), which leaves
    every C/D update unchanged, so 'AAt' ≪ 'A' means the A-block mismatch is mostly gauge.  ``mse_model`` / ``mse_extracted``: not filled
    here (None) unless ``X_clean`` is given: test MSE (mean, median) of both read-outs at layer L.
    """
    mean: np.ndarray
    median: np.ndarray
    block_mean: dict[str, np.ndarray]
    relative_median: np.ndarray
    prediction_mean: np.ndarray
    gauge_relative: dict[str, np.ndarray]
    mse_model: dict[str, float] | None = None
    mse_extracted: dict[str, float] | None = None


def fidelity(model: LinearTransformer, X_obs, task: TaskConfig, *, al: Alphas | None = None,
             X_clean=None) -> Fidelity:
    """Per-layer fidelity of the extracted algorithm to the transformer (Table 1), float64.

    The transformer's activations (:meth:`LinearTransformer.activations`, common layout) are compared
    with :func:`extracted_iterates` run on the same prompt (built from ``X_obs``) with the
    coefficients read from the weights (``al``, default :func:`alphas`; pass the α's of a
    :func:`quantized_model` to use quantised weights).  D blocks are compared raw (transformer sign).
    """
    _check_model(model)
    _check_task(task, model)
    Z0 = tasks.prompt(_as_batch("X_obs", X_obs, task), task)
    with torch.no_grad():
        acts = _model64(model).activations(Z0)
    ext = extracted_iterates(model, Z0, task, al=al)
    N = Z0.shape[-1] * Z0.shape[-2]
    mean, med, rel, pred = [], [], [], []
    blocks = {k: [] for k in "ABCD"}
    gauge = {"A": [], "AAt": [], "BAt": []}

    def relmed(x, ref):
        den = ref.square().sum((-1, -2))
        r = ((x - ref).square().sum((-1, -2)) / torch.where(den > 0, den, torch.ones_like(den))).numpy()
        return float(np.median(np.where(np.isnan(r), np.inf, r)))

    for Zt, Ze in zip(acts, ext):
        At, Bt = tasks.split(Zt, task)[:2]
        Ae, Be = tasks.split(Ze, task)[:2]
        gauge["A"].append(relmed(Ae, At))
        gauge["AAt"].append(relmed(Ae @ Ae.mT, At @ At.mT))
        gauge["BAt"].append(relmed(Be @ Ae.mT, Bt @ At.mT))
        E = (Zt - Ze).square()
        per = E.sum((-1, -2)) / N
        mean.append(float(per.mean()))
        med.append(float(np.median(np.where(np.isnan(per.numpy()), np.inf, per.numpy()))))
        den = Zt.square().sum((-1, -2))
        rel.append(float(np.nanmedian((E.sum((-1, -2)) / torch.where(den > 0, den, torch.ones_like(den))).numpy())))
        for k, blk in zip("ABCD", tasks.split(E, task)):
            blocks[k].append(float((blk.sum((-1, -2)) / N).mean()))
        pred.append(float(tasks.split(E, task).D.mean()))
    extra = {}
    if X_clean is not None:
        Xc = _as_batch("X_clean", X_clean, task)
        d, n = task.d, task.n
        extra["mse_model"] = {k: v for k, v in _mse_stats(-acts[-1][:, d:, n:], Xc, task).items() if k != "per_sample"}
        extra["mse_extracted"] = {k: v for k, v in _mse_stats(-ext[-1][:, d:, n:], Xc, task).items() if k != "per_sample"}
    return Fidelity(np.asarray(mean), np.asarray(med), {k: np.asarray(v) for k, v in blocks.items()},
                    np.asarray(rel), np.asarray(pred), {k: np.asarray(v) for k, v in gauge.items()}, **extra)


# ============================================================================ 6. heads
def prune_to(model: LinearTransformer, keep: Sequence[int]) -> LinearTransformer:
    """A new unconstrained :class:`LinearTransformer` with only the heads ``keep`` (ModelConfig heads=len(keep)).

    Same dtype and device; the kept heads' parameters are copied in the given order.
    """
    _check_model(model, "unconstrained")
    try:
        idx = [int(k) for k in keep]
    except TypeError:
        raise ValueError("argument keep must be a sequence of head indices") from None
    if not idx or len(set(idx)) != len(idx) or not all(0 <= k < model.heads for k in idx) \
            or any(isinstance(k, bool) for k in keep):
        raise ValueError(f"argument keep={list(keep)!r} must list distinct head indices in 0..{model.heads - 1}")
    p = next(model.parameters())
    cfg = dataclasses.replace(model.cfg, heads=len(idx))
    m = LinearTransformer(cfg, model.task, generator=torch.Generator().manual_seed(0), dtype=p.dtype, device=p.device)
    with torch.no_grad():
        for name in ("W_Q", "W_K", "W_V", "W_P"):
            getattr(m, name).copy_(getattr(model, name)[:, idx])
    return m


def head_ablation(model: LinearTransformer, X_clean, X_obs, task: TaskConfig) -> dict[str, Any]:
    """Test MSE keeping only head h, for every head (unconstrained).  Float64.

    Returns ``{'head': (H,), 'mse_mean': (H,), 'mse_median': (H,), 'frac_worse_than_zero': (H,),
    'full_mean', 'full_median', 'zero_mse'}``.
    """
    from .training import evaluate
    _check_model(model, "unconstrained")
    _check_task(task, model)
    Xc, Xo = _as_batch("X_clean", X_clean, task), _as_batch("X_obs", X_obs, task)
    m64 = _model64(model)
    full = evaluate(m64, Xc, Xo, task)
    res = [evaluate(prune_to(m64, [h]), Xc, Xo, task) for h in range(model.heads)]
    return {"head": np.arange(model.heads), "mse_mean": np.array([r["mean"] for r in res]),
            "mse_median": np.array([r["median"] for r in res]),
            "frac_worse_than_zero": np.array([r["frac_worse_than_zero"] for r in res]),
            "full_mean": full["mean"], "full_median": full["median"],
            "zero_mse": float(tasks.split(Xc, task).D.square().mean())}

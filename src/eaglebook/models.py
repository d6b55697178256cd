"""The attention-only linear transformer of the paper (the paper's App. B), in its three regimes.

One layer is

    Z_{ℓ+1} = Z_ℓ + Σ_h ((Z W_Q^h)(Z W_K^h)ᵀ ⊙ M) Z W_V^h (W_P^h)ᵀ

with no softmax, MLP, LayerNorm or 1/√k scaling (``ModelConfig.attention = "softmax"`` puts a softmax over
the keys in, for chapter 11's question; everything else stays).  ``Z`` is ``(batch, d+d', features)``: the tokens
are the d+d' *rows* of X = [[A, C], [B, D]], the features its columns (the book's reading notes: token orientation).
``M = tasks.token_mask`` lets every token read the first d tokens only.

How it is computed (the same algebra, reassociated for speed; the unit tests check it against the
definition and against the update of the book's eq. for hand-set diagonal weights):

* The mask keeps exactly the keys 0..d-1 for every query, so ``(Q Kᵀ ⊙ M) V = Q K_{:d}ᵀ V_{:d}``: keys
  and values are *sliced* to the first d tokens instead of multiplied by M.
* Attention is linear, so ``(Z W_QK Z_kᵀ)(Z_k W_VP) = (Z W_QK) G W_VP`` with the per-sample Gram
  matrix ``G = Z_kᵀ Z_k`` (features × features, shared by all heads).  The products
  ``W_QK^h = W_Q^h W_K^hᵀ`` and ``W_VP^h = W_V^h W_P^hᵀ`` are formed once per forward (tiny), the
  weight products ``Z W_QK`` and ``(·) W_VP`` are single large GEMMs with the batch folded into the
  rows, and the only batched products are ``G`` and ``(Z W_QK) G``.  All heads are batched into the
  matrix dimensions; there is no Python loop over heads.

Regimes (``model_cfg.regime``; each is an object of :mod:`eaglebook.regimes`, which owns everything that
differs between them and maps ``centralized``/``compute-limited`` to the names below):

``unconstrained``
    H = ``model_cfg.heads`` heads, W_Q, W_K, W_V, W_P each (n+n') × k with k = n+n'.  Parameters are
    stored batched over heads, shape ``(L, H, n+n', k)``.
``sketched``
    One head; W_Q, W_K are (n+n') × r (r = ``model_cfg.r``), W_V, W_P are (n+n') × k with k = r+n'
    (the paper's App. B.4 as written) unless ``model_cfg.vp_width`` sets k (an ablation).
    Parameter shapes ``(L, 1, n+n', r)`` and ``(L, 1, n+n', k)``.
``distributed``
    M = ``model_cfg.machines`` machines, one head per machine (the paper's Fig. 2 and App. B.4; the book's reading notes).  The n
    data columns are split contiguously with :func:`tasks.feature_owner`; **M must divide n** (weights
    are shared across machines, which needs equal blocks; otherwise a ``ValueError`` is raised).  With
    n_μ = n/M and F_μ = n_μ + n', machine μ holds the block [[A^μ, C], [B^μ, D]] (its n_μ data
    columns followed by its own copy of the n' query columns).  The blocks are concatenated along the
    feature axis (machine-major), so the model's ("raw") layout has n + M·n' feature columns.
    Head μ computes attention from block μ only (W_QK^μ is zero outside block μ), its values read
    block μ, and its projection writes to every block.  Weights are shared "up to permutation"
    (paper §B.4): one W_Q, W_K, W_V (F_μ × F_μ) for all heads, and a projection with two parts,
    ``W_P[:, 0]`` (self: written back to the head's own block) and ``W_P[:, 1]`` (other: written to
    each of the other M-1 blocks).  So block ν receives ``O_ν W_self + Σ_{μ≠ν} O_μ W_other`` with
    ``W_self = W_V W_P[:,0]ᵀ``, ``W_other = W_V W_P[:,1]ᵀ`` and ``O_μ`` head μ's attention output.
    :meth:`LinearTransformer.readout` averages the M copies of D.  :meth:`activations` returns by
    default the common (d+d') × (n+n') layout (each A^μ, B^μ put back in its columns, C and D
    averaged over the machines); ``raw=True`` returns the model's own layout.

Read-out (the read-out sign: the book's reading notes): the prediction is **−D_L**, the von Oswald convention.  With
W_QK = diag(a₁I, 0), W_VP = diag(a₂I, a₃I) one layer adds a₁a₃·B Aᵀ C to D and a₁a₃·A Aᵀ C to C, so
the iteration converges (a₁a₃ < 0) to D_L → −B A^† C.

The input of :meth:`forward` is the prompt Z₀ = ``tasks.prompt(X)`` (D zeroed) in the common layout.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import torch
from torch import nn

from . import regimes
from .config import ModelConfig, TaskConfig
from .solver.update import update
from .tasks import token_mask

__all__ = ["LinearTransformer", "diagonal_update", "prune_to"]


class LinearTransformer(nn.Module):
    """Attention-only linear transformer; see the module docstring for the regimes and layouts.

    Parameters ``W_Q, W_K, W_V, W_P`` have shape ``(L, heads, rows, cols)``, as the regime lays them out
    (:meth:`eaglebook.regimes.attention.Heads.layout`):

    * unconstrained: ``(L, H, n+n', n+n')`` for all four;
    * sketched: ``(L, 1, n+n', r)`` for W_Q, W_K and ``(L, 1, n+n', r+n')`` for W_V, W_P;
    * distributed: ``(L, 1, F_μ, F_μ)`` for W_Q, W_K, W_V (shared by all machines) and
      ``(L, 2, F_μ, F_μ)`` for W_P (index 0: self part, 1: other part).

    ``rg`` is the regime object, ``layout`` its :class:`~eaglebook.regimes.attention.Layout`; ``machines``,
    ``F_mu`` and ``n_mu`` are the raw layout's feature blocks, their width and their data columns (one
    block of n + n' features, n of them data, outside the distributed regime).

    Initialisation: i.i.d. N(0, init_std²) drawn from ``generator`` (on the generator's device, then
    moved to ``device``).
    """

    def __init__(self, model_cfg: ModelConfig, task: TaskConfig, *, generator: torch.Generator,
                 dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"):
        super().__init__()
        if not isinstance(model_cfg, ModelConfig):
            raise TypeError(f"argument model_cfg must be a ModelConfig, got {type(model_cfg).__name__}")
        if not isinstance(task, TaskConfig):
            raise TypeError(f"argument task must be a TaskConfig, got {type(task).__name__}")
        self.cfg = model_cfg
        self.task = task
        self.regime = model_cfg.regime
        self.rg = regimes.get(model_cfg.regime)
        self.L = model_cfg.layers
        n, np_, d = task.n, task.n_prime, task.d
        self.F = n + np_
        # The fixed mask lets every token read exactly tokens 0..d-1; the forward pass slices keys to
        # them.  Guard the assumption so that a change of token_mask cannot go unnoticed.
        M = token_mask(task)
        expect = torch.zeros_like(M)
        expect[:, :d] = 1
        if not torch.equal(M, expect):
            raise ValueError("tasks.token_mask is not [1 1_dᵀ, 0]; LinearTransformer slices keys to the first d tokens")
        self.layout = self.rg.attention.layout(model_cfg, task)
        self.kernel = KERNELS[model_cfg.attention]
        self.heads = self.layout.heads
        self.machines, self.F_mu, self.n_mu = self.layout.blocks, self.layout.block, self.layout.data
        gdev = generator.device
        for name, shape in self.layout.shapes.items():
            w = torch.randn(shape, generator=generator, dtype=dtype, device=gdev) * model_cfg.init_std
            self.register_parameter(name, nn.Parameter(w.to(device)))

    # ------------------------------------------------------------------ layouts
    @property
    def features(self) -> int:
        """Number of feature columns of the model's own (raw) layout."""
        return self.layout.features

    def embed(self, Z0: torch.Tensor) -> torch.Tensor:
        """Map a (batch, d+d', n+n') prompt (or X) to the model's raw feature layout.

        Identity for unconstrained/sketched; for distributed returns (batch, d+d', n + M·n') with the
        machine blocks [A^μ C | B^μ D] concatenated machine-major.
        """
        self._check_input(Z0)
        return self.rg.attention.embed(self, Z0)

    def readout(self, Z: torch.Tensor) -> torch.Tensor:
        """The prediction −D_L (batch, d', n') from a raw-layout activation (distributed: mean of the M copies)."""
        return self.rg.attention.readout(self, Z)

    def unembed(self, Z: torch.Tensor) -> torch.Tensor:
        """Raw layout → common (d+d') × (n+n') layout (distributed: C and D averaged over machines)."""
        return self.rg.attention.unembed(self, Z)

    def _check_input(self, Z0: torch.Tensor) -> None:
        want = (self.task.d + self.task.d_prime, self.F)
        if Z0.dim() != 3 or tuple(Z0.shape[-2:]) != want:
            raise ValueError(f"argument Z0 has shape {tuple(Z0.shape)}, expected (batch, d+d', n+n') = (batch, {want[0]}, {want[1]})")

    # ------------------------------------------------------------------ weights
    def _products(self):
        """Per-layer W_QK (L,H,·,·) and W_VP (L,H',·,·) with gradients (distributed: H'=2, self/other)."""
        wqk = self.W_Q @ self.W_K.transpose(-1, -2)
        wvp = self.W_V @ self.W_P.transpose(-1, -2)  # distributed: (L,1,F,F) @ (L,2,F,F) -> (L,2,F,F)
        return wqk, wvp

    @torch.no_grad()
    def qk(self, layer: int, head: int | None = None) -> torch.Tensor:
        """W_QK of ``layer``: Σ_h W_Q^h W_K^hᵀ, or one head's product if ``head`` is given.

        Unconstrained/sketched: (n+n') × (n+n').  Distributed: the F_μ × F_μ block shared by every machine
        (head μ's full matrix is this block at machine μ's position; see :meth:`heads_qk`).
        """
        self._check_layer(layer)
        w = self.W_Q[layer] @ self.W_K[layer].transpose(-1, -2)
        return w.sum(0) if head is None else w[head]

    @torch.no_grad()
    def vp(self, layer: int, head: int | None = None) -> torch.Tensor:
        """W_VP of ``layer``: Σ_h W_V^h W_P^hᵀ, or one head's product.

        Distributed: a (2, F_μ, F_μ) tensor, [self block, other block] (``head`` is ignored).
        """
        self._check_layer(layer)
        return self.rg.attention.vp(self.W_V[layer], self.W_P[layer], head)

    @torch.no_grad()
    def heads_qk(self, layer: int) -> torch.Tensor:
        """Every head's W_QK in the raw feature layout: (heads, features, features)."""
        self._check_layer(layer)
        return self.rg.attention.heads_qk(self, layer)

    @torch.no_grad()
    def heads_vp(self, layer: int) -> torch.Tensor:
        """Every head's W_VP in the raw feature layout: (heads, features, features).

        Distributed: head μ's rows are block μ (it reads its own block); its column block μ is the self
        part, every other column block the other part.
        """
        self._check_layer(layer)
        return self.rg.attention.heads_vp(self, layer)

    def _check_layer(self, layer: int) -> None:
        if not (isinstance(layer, (int, np.integer)) and 0 <= layer < self.L):
            raise ValueError(f"argument layer={layer!r} must be an integer in 0..{self.L - 1}")

    def n_parameters(self) -> int:
        """Number of trainable scalars."""
        return sum(p.numel() for p in self.parameters())

    @torch.no_grad()
    def set_diagonal(self, alphas, *, sketches: Sequence | None = None, other: Sequence[float] | None = None):
        """Hand-set every layer so that W_QK = diag(a₁I_n, 0_{n'}) and W_VP = diag(a₂I_n, a₃I_{n'}).

        ``alphas``: (L, 3) array-like of (a₁, a₂, a₃) per layer.  Returns ``self``.  The regime sets each
        layer (:meth:`eaglebook.regimes.attention.Heads.set_diagonal_layer`):

        * unconstrained: head 0 carries the weights, the other heads are zero.
        * sketched: W_QK = a₁ S Sᵀ ⊕ 0 and W_VP = a₂ S Sᵀ ⊕ a₃ I with S = ``sketches[ℓ]`` (an n × r matrix,
          or a length-r sequence of column indices meaning a column selection).  Default: the first r
          coordinates.  Requires r <= n for index sketches.
        * distributed: shared block W_QK = diag(a₁I_{n_μ}, 0), self part W_VP = diag(a₂I, a₃I) and other
          part diag(0, b I) with b = ``other[ℓ]`` (default b = a₃, the paper's "same factor").
          Machine ν's copies of C, D then receive a₁a₃ A^ν A^νᵀ C + a₁b Σ_{μ≠ν} A^μ A^μᵀ C (and the
          same with B^μ for D); with b = a₃ this is a₁a₃ Σ_μ (...) on every machine.  Pass a₃/M (and
          b = a₃/M) for Algorithm 1's average.
        """
        al = np.asarray(alphas, dtype=float)
        if al.shape != (self.L, 3):
            raise ValueError(f"argument alphas has shape {al.shape}, expected (layers, 3) = ({self.L}, 3)")
        for p in self.parameters():
            p.zero_()
        for l, (a1, a2, a3) in enumerate(al):
            self.rg.attention.set_diagonal_layer(self, l, a1, a2, a3, sketch=None if sketches is None else sketches[l],
                                       other=None if other is None else other[l])
        return self

    # ------------------------------------------------------------------ forward
    def _weights(self):
        """Per-layer (query weight, value weights) in the form the layer kernels use
        (:meth:`eaglebook.regimes.attention.Heads.layer_weights`)."""
        wqk, wvp = self._products()
        return self.rg.attention.layer_weights(wqk, wvp)

    def _layers(self, Z: torch.Tensor, keep: bool):
        """Run the layers on Z (raw layout, or the regime's prompt state).

        ``keep=True``: return the list Z_0..Z_L (raw layout).  ``keep=False``: return only the bottom-right
        block D_L (batch, d', n') (distributed: (batch, M, d', n'), one copy per machine); the last layer
        then updates only the d' query rows (the other rows of Z_L never reach the read-out).
        """
        d, L, at = self.task.d, self.L, self.rg.attention
        wq, wv = self._weights()
        Z = at.state(self, Z)
        acts = [Z] if keep else None
        for l in range(L):
            if l == L - 1 and not keep:
                O = at.attend(self, self.kernel, Z, wq[l], d)               # the d' query rows only
                return at.last_update(self, Z, O, wv[l]), None
            Z = at.add_update(self, Z, at.attend(self, self.kernel, Z, wq[l], 0), wv[l])   # Σ_h O^h W_VP^h
            if keep:
                acts.append(Z)
        return None, [at.raw(self, a) for a in acts]

    def forward(self, Z0: torch.Tensor) -> torch.Tensor:
        """Prediction −D_L, shape (batch, d', n'), from the prompt Z₀ (batch, d+d', n+n')."""
        self._check_input(Z0)
        D, _ = self._layers(self.rg.attention.prompt_state(self, Z0), keep=False)
        return self.rg.attention.prediction(D)

    def activations(self, Z0: torch.Tensor, *, raw: bool = False) -> list[torch.Tensor]:
        """Z_0..Z_L (L+1 tensors).  Common (d+d') × (n+n') layout unless ``raw`` (distributed only differs)."""
        _, acts = self._layers(self.embed(Z0), keep=True)
        return acts if raw else [self.unembed(a) for a in acts]

    def extra_repr(self) -> str:
        att = "" if self.cfg.attention == "linear" else f", attention={self.cfg.attention}"
        return f"regime={self.regime}, layers={self.L}, heads={self.heads}, features={self.features}{att}"


class _Attention(torch.autograd.Function):
    """Masked linear attention of all heads with a hand-written backward (fewer, fused products).

    Inputs: Z (N, T, F) contiguous, ``wq`` = [W_QK^1 | … | W_QK^H] (F, H·F), ``d`` (keys are tokens
    0..d-1, i.e. the mask [1 1_dᵀ, 0]), ``q0`` (queries are tokens q0..T-1; 0 or d).
    Output: O (N, T-q0, H·F) with block h = ((Z_q W_QK^h Z_kᵀ)) Z_k = (Z_q W_QK^h) G, G = Z_kᵀ Z_k.
    Multiplying by [W_VP^1; …; W_VP^H] then gives Σ_h ((Z W_Q^h)(Z W_K^h)ᵀ ⊙ M) Z W_V^h W_P^hᵀ.
    """

    @staticmethod
    def forward(ctx, Z, wq, d, q0):
        N, T, F = Z.shape
        HF = wq.shape[1]
        Zk = Z[:, :d]
        G = torch.bmm(Zk.transpose(1, 2), Zk)                       # (N, F, F), symmetric
        Zq = Z[:, q0:] if q0 else Z
        Tq = T - q0
        P = torch.matmul(Zq, wq).view(N, Tq * (HF // F), F)           # row (t, h) = Z_t W_QK^h
        O = torch.bmm(P, G)
        ctx.save_for_backward(Z, wq, G, P)
        ctx.d, ctx.q0 = d, q0
        return O.view(N, Tq, HF)

    @staticmethod
    def backward(ctx, dO):
        Z, wq, G, P = ctx.saved_tensors
        d, q0 = ctx.d, ctx.q0
        N, T, F = Z.shape
        HF = wq.shape[1]
        Tq = T - q0
        dOv = dO.contiguous().view(N, Tq * (HF // F), F)
        dP = torch.bmm(dOv, G)                                        # G = Gᵀ
        dZ = dwq = None
        if ctx.needs_input_grad[1]:
            Zq = Z[:, q0:] if q0 else Z
            dwq = Zq.reshape(N * Tq, F).t() @ dP.view(N * Tq, HF)
        if ctx.needs_input_grad[0]:
            dG = torch.bmm(P.transpose(1, 2), dOv)
            dG = dG + dG.transpose(1, 2)
            Zk = Z[:, :d]
            dPq = dP.view(N, Tq, HF)
            if q0 == 0:
                dZ = torch.matmul(dPq, wq.t())
                dZ[:, :d] += torch.bmm(Zk, dG)   # (baddbmm_ into a strided slice falls back to a slow loop)
            else:
                dZ = Z.new_zeros(Z.shape)
                dZ[:, q0:] = torch.matmul(dPq, wq.t())
                dZ[:, :d] += torch.bmm(Zk, dG)
        return dZ, dwq, None, None


def _attention(Z: torch.Tensor, wq: torch.Tensor, d: int, q0: int) -> torch.Tensor:
    return _Attention.apply(Z, wq, d, q0)


def _softmax_attention(Z: torch.Tensor, wq: torch.Tensor, d: int, q0: int) -> torch.Tensor:
    """Masked *softmax* attention of all heads (chapter 11's change; autograd backward).

    Same inputs and output layout as :class:`_Attention`; block h of the output is
    softmax_row(Z_q W_QK^h Z_kᵀ) Z_k: each query's weights over the d keys the mask leaves sum to 1.
    No 1/√k scaling, as in the linear layers (the weights can learn any scale).
    """
    N, T, F = Z.shape
    HF = wq.shape[1]
    Zk = Z[:, :d]
    Zq = Z[:, q0:] if q0 else Z
    Tq = T - q0
    P = torch.matmul(Zq, wq).view(N, Tq * (HF // F), F)                   # row (t, h) = Z_t W_QK^h
    S = torch.softmax(torch.bmm(P, Zk.transpose(1, 2)), dim=-1)           # (N, Tq·H, d)
    return torch.bmm(S, Zk).view(N, Tq, HF)


#: The layer kernels by ``ModelConfig.attention``.
KERNELS = {"linear": _attention, "softmax": _softmax_attention}


def diagonal_update(A, B, C, D, a1: float, a2: float, a3: float, S=None):
    """One step of the layer update with hand-set diagonal weights (the reference the tests compare a
    hand-set layer with), written through the package's one UPDATE (:mod:`eaglebook.solver.update`).

    A' = A + a₁a₂ A P Aᵀ A P,  B' = B + a₁a₂ B P Aᵀ A P,  C' = C + a₁a₃ A P Aᵀ C,  D' = D + a₁a₃ B P Aᵀ C
    with P = S Sᵀ for the layer's sketch S (n × r; P = I when ``S`` is None).  This is Algorithm 1's
    UPDATE with Ã = A S, the steps ηρ = −a₁a₂ and γρ = −a₁a₃, and the transformer's D sign.
    """
    return update(A, B, C, D, -a1 * a2, -a1 * a3, S=S, d_scale=-1.0)


def prune_to(model: LinearTransformer, keep: Sequence[int]) -> LinearTransformer:
    """A new :class:`LinearTransformer` with only the heads ``keep`` (ModelConfig heads=len(keep)), for a
    regime whose heads are independent (:meth:`eaglebook.regimes.Regime.can`: the unconstrained one).

    Same dtype and device; the kept heads' parameters are copied in the given order.
    """
    if not isinstance(model, LinearTransformer) or not model.rg.can("prunable"):
        raise ValueError("argument model must be a LinearTransformer of a regime with independent heads "
                         "(unconstrained)")
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



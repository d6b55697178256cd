"""The attention-only linear transformer of the paper (the paper's App. B), in its three regimes.

One layer is

    Z_{ℓ+1} = Z_ℓ + Σ_h ((Z W_Q^h)(Z W_K^h)ᵀ ⊙ M) Z W_V^h (W_P^h)ᵀ

with no softmax, MLP, LayerNorm or 1/√k scaling.  ``Z`` is ``(batch, d+d', features)``: the tokens
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

Regimes (``model_cfg.regime``; config maps ``centralized``/``compute-limited`` to the names below):

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
import math
from typing import Sequence

import numpy as np
import torch
from torch import nn

from .config import ModelConfig, TaskConfig
from ._arrays import common_layout, machine_blocks
from .solver.update import update
from .tasks import feature_owner, token_mask

__all__ = ["LinearTransformer", "diagonal_update", "prune_to"]


class LinearTransformer(nn.Module):
    """Attention-only linear transformer; see the module docstring for the regimes and layouts.

    Parameters ``W_Q, W_K, W_V, W_P`` have shape ``(L, heads, rows, cols)``:

    * unconstrained: ``(L, H, n+n', n+n')`` for all four;
    * sketched: ``(L, 1, n+n', r)`` for W_Q, W_K and ``(L, 1, n+n', r+n')`` for W_V, W_P;
    * distributed: ``(L, 1, F_μ, F_μ)`` for W_Q, W_K, W_V (shared by all machines) and
      ``(L, 2, F_μ, F_μ)`` for W_P (index 0: self part, 1: other part).

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

        if self.regime == "unconstrained":
            H, k = model_cfg.heads, self.F
            shapes = {"W_Q": (self.L, H, self.F, k), "W_K": (self.L, H, self.F, k),
                      "W_V": (self.L, H, self.F, k), "W_P": (self.L, H, self.F, k)}
            self.heads = H
        elif self.regime == "sketched":
            r = model_cfg.r
            k = model_cfg.vp_width or r + np_
            shapes = {"W_Q": (self.L, 1, self.F, r), "W_K": (self.L, 1, self.F, r),
                      "W_V": (self.L, 1, self.F, k), "W_P": (self.L, 1, self.F, k)}
            self.heads = 1
        else:  # distributed
            Mm = model_cfg.machines
            if not (1 <= Mm <= n) or n % Mm:
                raise ValueError(f"parameter machines={Mm} is not valid for n={n}: the distributed model shares "
                                 f"weights across machines and needs equal blocks, so machines must divide n")
            owner = feature_owner(task, Mm)
            self.machines = Mm
            self.n_mu = n // Mm
            self.F_mu = self.n_mu + np_
            if not np.array_equal(owner, np.repeat(np.arange(Mm), n // Mm)):   # the layout assumes it
                raise ValueError("tasks.feature_owner is not a contiguous equal split")
            Fm = self.F_mu
            shapes = {"W_Q": (self.L, 1, Fm, Fm), "W_K": (self.L, 1, Fm, Fm),
                      "W_V": (self.L, 1, Fm, Fm), "W_P": (self.L, 2, Fm, Fm)}
            self.heads = Mm
        gdev = generator.device
        for name, shape in shapes.items():
            w = torch.randn(shape, generator=generator, dtype=dtype, device=gdev) * model_cfg.init_std
            self.register_parameter(name, nn.Parameter(w.to(device)))

    # ------------------------------------------------------------------ layouts
    @property
    def features(self) -> int:
        """Number of feature columns of the model's own (raw) layout."""
        if self.regime == "distributed":
            return self.machines * self.F_mu
        return self.F

    def embed(self, Z0: torch.Tensor) -> torch.Tensor:
        """Map a (batch, d+d', n+n') prompt (or X) to the model's raw feature layout.

        Identity for unconstrained/sketched; for distributed returns (batch, d+d', n + M·n') with the
        machine blocks [A^μ C | B^μ D] concatenated machine-major.
        """
        self._check_input(Z0)
        if self.regime != "distributed":
            return Z0
        return self._raw(machine_blocks(Z0, self.machines, self.task.n))

    def _raw(self, Zm: torch.Tensor) -> torch.Tensor:
        """(batch, M, T, F_μ) machine blocks → the raw layout (batch, T, M·F_μ), machine-major."""
        B, Mm, T, Fm = Zm.shape
        return Zm.transpose(1, 2).reshape(B, T, Mm * Fm)

    def _blocks(self, Z: torch.Tensor) -> torch.Tensor:
        """Raw layout (…, T, M·F_μ) → machine blocks (…, M, T, F_μ)."""
        return Z.reshape(*Z.shape[:-1], self.machines, self.F_mu).transpose(-3, -2)

    def readout(self, Z: torch.Tensor) -> torch.Tensor:
        """The prediction −D_L (batch, d', n') from a raw-layout activation (distributed: mean of the M copies)."""
        d = self.task.d
        if self.regime != "distributed":
            return -Z[..., d:, self.task.n:]
        return -self._blocks(Z)[..., d:, self.n_mu:].mean(-3)

    def unembed(self, Z: torch.Tensor) -> torch.Tensor:
        """Raw layout → common (d+d') × (n+n') layout (distributed: C and D averaged over machines)."""
        if self.regime != "distributed":
            return Z
        return common_layout(self._blocks(Z), self.n_mu)

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
        if self.regime == "distributed":
            return self.W_V[layer] @ self.W_P[layer].transpose(-1, -2)
        w = self.W_V[layer] @ self.W_P[layer].transpose(-1, -2)
        return w.sum(0) if head is None else w[head]

    @torch.no_grad()
    def heads_qk(self, layer: int) -> torch.Tensor:
        """Every head's W_QK in the raw feature layout: (heads, features, features)."""
        self._check_layer(layer)
        if self.regime != "distributed":
            return self.W_Q[layer] @ self.W_K[layer].transpose(-1, -2)
        Mm, Fm = self.machines, self.F_mu
        out = self.W_Q.new_zeros(Mm, Mm * Fm, Mm * Fm)
        blk = self.qk(layer)
        for mu in range(Mm):
            out[mu, mu * Fm:(mu + 1) * Fm, mu * Fm:(mu + 1) * Fm] = blk
        return out

    @torch.no_grad()
    def heads_vp(self, layer: int) -> torch.Tensor:
        """Every head's W_VP in the raw feature layout: (heads, features, features).

        Distributed: head μ's rows are block μ (it reads its own block); its column block μ is the self
        part, every other column block the other part.
        """
        self._check_layer(layer)
        if self.regime != "distributed":
            return self.W_V[layer] @ self.W_P[layer].transpose(-1, -2)
        Mm, Fm = self.machines, self.F_mu
        s, o = self.vp(layer)
        out = self.W_Q.new_zeros(Mm, Mm * Fm, Mm * Fm)
        for mu in range(Mm):
            for nu in range(Mm):
                out[mu, mu * Fm:(mu + 1) * Fm, nu * Fm:(nu + 1) * Fm] = s if mu == nu else o
        return out

    def _check_layer(self, layer: int) -> None:
        if not (isinstance(layer, (int, np.integer)) and 0 <= layer < self.L):
            raise ValueError(f"argument layer={layer!r} must be an integer in 0..{self.L - 1}")

    def n_parameters(self) -> int:
        """Number of trainable scalars."""
        return sum(p.numel() for p in self.parameters())

    @torch.no_grad()
    def set_diagonal(self, alphas, *, sketches: Sequence | None = None, other: Sequence[float] | None = None):
        """Hand-set every layer so that W_QK = diag(a₁I_n, 0_{n'}) and W_VP = diag(a₂I_n, a₃I_{n'}).

        ``alphas``: (L, 3) array-like of (a₁, a₂, a₃) per layer.  Returns ``self``.

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
        n, np_ = self.task.n, self.task.n_prime
        def eye(k):  # float64, so that sqrt(|a1|) etc. are not rounded before the copy into the parameter
            return torch.eye(k, dtype=torch.float64)

        for p in self.parameters():
            p.zero_()
        for l, (a1, a2, a3) in enumerate(al):
            c, sg = math.sqrt(abs(a1)), (1.0 if a1 >= 0 else -1.0)
            if self.regime == "unconstrained":
                F = self.F
                self.W_Q[l, 0] = c * eye(F)
                self.W_K[l, 0, :n, :n] = sg * c * eye(n)
                self.W_V[l, 0] = eye(F)
                self.W_P[l, 0] = torch.diag(torch.tensor([a2] * n + [a3] * np_, dtype=torch.float64))
            elif self.regime == "sketched":
                r = self.cfg.r
                if self.W_V.shape[-1] < r + np_:
                    raise ValueError(f"the reference layer needs W_V, W_P with at least r + n' = {r + np_} columns; "
                                     f"this model has vp_width={self.W_V.shape[-1]}")
                S = self._sketch(None if sketches is None else sketches[l])
                self.W_Q[l, 0, :n, :] = c * S
                self.W_K[l, 0, :n, :] = sg * c * S
                self.W_V[l, 0, :n, :r] = S
                self.W_V[l, 0, n:, r:] = eye(np_)
                self.W_P[l, 0, :n, :r] = a2 * S
                self.W_P[l, 0, n:, r:] = a3 * eye(np_)
            else:
                nm, Fm = self.n_mu, self.F_mu
                b = a3 if other is None else float(other[l])
                self.W_Q[l, 0] = c * eye(Fm)
                self.W_K[l, 0, :nm, :nm] = sg * c * eye(nm)
                self.W_V[l, 0] = eye(Fm)
                self.W_P[l, 0] = torch.diag(torch.tensor([a2] * nm + [a3] * np_, dtype=torch.float64))
                self.W_P[l, 1] = torch.diag(torch.tensor([0.0] * nm + [b] * np_, dtype=torch.float64))
        return self

    def _sketch(self, s) -> torch.Tensor:
        n, r = self.task.n, self.cfg.r
        if s is None:
            s = list(range(r))
        t = torch.as_tensor(np.asarray(s), dtype=torch.float64)
        if t.dim() == 1:
            idx = [int(i) for i in np.asarray(s)]
            if len(idx) != r or len(set(idx)) != r or not all(0 <= i < n for i in idx):
                raise ValueError(f"sketch indices {idx} must be {r} distinct column indices in 0..{n - 1}")
            S = torch.zeros(n, r, dtype=torch.float64)
            S[idx, torch.arange(r)] = 1.0
            return S
        if tuple(t.shape) != (n, r):
            raise ValueError(f"sketch has shape {tuple(t.shape)}, expected (n, r) = ({n}, {r})")
        return t

    # ------------------------------------------------------------------ forward
    def _weights(self):
        """Per-layer (query weight, value weights) in the form the layer kernels use.

        unconstrained/sketched: ``qcat[l]`` = [W_QK^1 | … | W_QK^H] (F, H·F) and ``vstack[l]`` =
        [W_VP^1; …; W_VP^H] (H·F, F).  distributed: ``W_QK`` (F_μ, F_μ) and the pair
        (W_self − W_other, W_other).
        """
        wqk, wvp = self._products()
        if self.regime == "distributed":
            return wqk[:, 0], (wvp[:, 0] - wvp[:, 1], wvp[:, 1])
        L, H, F = wqk.shape[0], wqk.shape[1], wqk.shape[2]
        return wqk.transpose(1, 2).reshape(L, F, H * F), wvp.reshape(L, H * F, F)

    def _layers(self, Z: torch.Tensor, keep: bool):
        """Run the layers on raw-layout Z.

        ``keep=True``: return the list Z_0..Z_L (raw layout).  ``keep=False``: return only the bottom-right
        block D_L (batch, d', n') (distributed: (batch, M, d', n'), one copy per machine); the last layer
        then updates only the d' query rows (the other rows of Z_L never reach the read-out).
        """
        d, L = self.task.d, self.L
        wq, wv = self._weights()
        B, T = Z.shape[0], Z.shape[-2]
        if self.regime == "distributed":
            Mm, Fm, nm = self.machines, self.F_mu, self.n_mu
            wd, wo = wv
            if Z.dim() == 3:                                            # raw layout → (B, M, T, Fm)
                Z = self._blocks(Z).contiguous()
            acts = [Z] if keep else None
            for l in range(L):
                last = l == L - 1 and not keep
                O = _attention(Z.view(B * Mm, T, Fm), wq[l], d, d if last else 0)
                O = O.view(B, Mm, -1, Fm)                                # head μ's output, from block μ only
                if last:                                                 # block ν gets O_ν W_self + Σ_{μ≠ν} O_μ W_other
                    return Z[:, :, d:, nm:] + O @ wd[l][:, nm:] + O.sum(1, keepdim=True) @ wo[l][:, nm:], None
                Z = Z + O @ wd[l] + O.sum(1, keepdim=True) @ wo[l]
                if keep:
                    acts.append(Z)
            return None, [self._raw(a) for a in acts]
        n = self.task.n
        acts = [Z] if keep else None
        for l in range(L):
            if l == L - 1 and not keep:
                O = _attention(Z, wq[l], d, d)                            # (B, d', H·F): query rows only
                return Z[:, d:, n:] + O @ wv[l][:, n:], None
            Z = Z + _attention(Z, wq[l], d, 0) @ wv[l]                   # Σ_h O^h W_VP^h
            if keep:
                acts.append(Z)
        return None, acts

    def forward(self, Z0: torch.Tensor) -> torch.Tensor:
        """Prediction −D_L, shape (batch, d', n'), from the prompt Z₀ (batch, d+d', n+n')."""
        self._check_input(Z0)
        Zr = machine_blocks(Z0, self.machines, self.task.n) if self.regime == "distributed" else Z0
        D, _ = self._layers(Zr, keep=False)
        return -(D.mean(1) if self.regime == "distributed" else D)

    def activations(self, Z0: torch.Tensor, *, raw: bool = False) -> list[torch.Tensor]:
        """Z_0..Z_L (L+1 tensors).  Common (d+d') × (n+n') layout unless ``raw`` (distributed only differs)."""
        _, acts = self._layers(self.embed(Z0), keep=True)
        return acts if raw else [self.unembed(a) for a in acts]

    def extra_repr(self) -> str:
        return f"regime={self.regime}, layers={self.L}, heads={self.heads}, features={self.features}"


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


def diagonal_update(A, B, C, D, a1: float, a2: float, a3: float, S=None):
    """One step of the layer update with hand-set diagonal weights (the reference the tests compare a
    hand-set layer with), written through the package's one UPDATE (:mod:`eaglebook.solver.update`).

    A' = A + a₁a₂ A P Aᵀ A P,  B' = B + a₁a₂ B P Aᵀ A P,  C' = C + a₁a₃ A P Aᵀ C,  D' = D + a₁a₃ B P Aᵀ C
    with P = S Sᵀ for the layer's sketch S (n × r; P = I when ``S`` is None).  This is Algorithm 1's
    UPDATE with Ã = A S, the steps ηρ = −a₁a₂ and γρ = −a₁a₃, and the transformer's D sign.
    """
    return update(A, B, C, D, -a1 * a2, -a1 * a3, S=S, d_scale=-1.0)


def prune_to(model: LinearTransformer, keep: Sequence[int]) -> LinearTransformer:
    """A new unconstrained :class:`LinearTransformer` with only the heads ``keep`` (ModelConfig heads=len(keep)).

    Same dtype and device; the kept heads' parameters are copied in the given order.
    """
    if not isinstance(model, LinearTransformer) or model.regime != "unconstrained":
        raise ValueError("argument model must be an unconstrained LinearTransformer")
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



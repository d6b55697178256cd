"""How a regime's tokens attend: its parameter layout, its part of the model's forward pass, and its hand-set
diagonal layer.  Used by :class:`eaglebook.models.LinearTransformer` (every method takes the model, or tensors,
as an argument and keeps no state of its own).

* :class:`Heads`: H heads over all n + n' features, one feature block (unconstrained: H is the model's
  ``heads`` setting; a regime may fix it);
* :class:`Sketch`: one head whose W_Q, W_K have rank r (sketched);
* :class:`Machines`: M machines, one head each, with weights shared across machines (distributed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._arrays import common_layout, machine_blocks, machine_edges

__all__ = ["Layout", "Heads", "Sketch", "Machines"]


@dataclass(frozen=True)
class Layout:
    """How a regime lays out one model.

    ``shapes``: parameter name → shape ``(L, heads or parts, rows, cols)``; ``heads``: attention heads;
    ``blocks``: feature blocks of the raw layout (distributed: one per machine, else 1); ``block``:
    features per block (F_μ = n_μ + n', else n + n'); ``data``: data columns per block (n_μ, else n).
    """

    shapes: dict[str, tuple[int, ...]]
    heads: int
    blocks: int
    block: int
    data: int

    @property
    def features(self) -> int:
        """Feature columns of the raw layout."""
        return self.blocks * self.block


def _eye(k: int) -> torch.Tensor:
    # float64, so that sqrt(|a1|) etc. are not rounded before the copy into the parameter
    return torch.eye(k, dtype=torch.float64)


@dataclass(frozen=True)
class Heads:
    """H heads over the n + n' features, W_Q, W_K, W_V, W_P each (n+n') × (n+n') per head; the prediction is
    read from the D block; one feature block.  ``count``: a fixed number of heads, or None to take the model's
    ``heads`` setting (the unconstrained regime: the paper trains 8 heads and prunes to 1).

    Capabilities: ``refactorable`` (any product can be written back as weights: quantisation),
    ``prunable`` (heads can be dropped: the head count is a setting), ``heads_share_weights`` (every head is
    one shared block, no per-head products)."""

    count: int | None = None
    refactorable = True
    heads_share_weights = False

    @property
    def uses(self) -> frozenset[str]:
        """The ModelConfig fields this part reads besides ``layers`` and ``init_std``."""
        return frozenset({"heads"}) if self.count is None else frozenset()

    @property
    def prunable(self) -> bool:
        return self.count is None

    def n_heads(self, model_cfg) -> int:
        return model_cfg.heads if self.count is None else self.count

    # ----------------------------------------------------------------------------------- layout
    def validate(self, model_cfg, task) -> None:
        """Raise ``ValueError`` naming the setting when ``model_cfg`` cannot be built on ``task``."""

    def layout(self, model_cfg, task) -> Layout:
        """Parameter shapes and feature blocks (H heads, each (n+n') × (n+n'))."""
        L, F = model_cfg.layers, task.n + task.n_prime
        H = self.n_heads(model_cfg)
        shapes = {k: (L, H, F, F) for k in ("W_Q", "W_K", "W_V", "W_P")}
        return Layout(shapes=shapes, heads=H, blocks=1, block=F, data=task.n)

    # ------------------------------------------------------------------ the model: layouts and layer
    def embed(self, model, Z0: torch.Tensor) -> torch.Tensor:
        """(batch, d+d', n+n') prompt → the raw layout."""
        return Z0

    def unembed(self, model, Z: torch.Tensor) -> torch.Tensor:
        """Raw layout → common (d+d') × (n+n') layout."""
        return Z

    def readout(self, model, Z: torch.Tensor) -> torch.Tensor:
        """The prediction −D_L (batch, d', n') from a raw-layout activation."""
        return -Z[..., model.task.d:, model.task.n:]

    def prompt_state(self, model, Z0: torch.Tensor) -> torch.Tensor:
        """What the layers of the forward pass run on, from the prompt (common layout)."""
        return Z0

    def state(self, model, Z: torch.Tensor) -> torch.Tensor:
        """What the layers run on, from the raw layout (or from :meth:`prompt_state`'s result)."""
        return Z

    def layer_weights(self, wqk: torch.Tensor, wvp: torch.Tensor):
        """Per-layer (query weight, value weight) for the layer kernels: ``qcat[l]`` = [W_QK^1 | … | W_QK^H]
        (F, H·F) and ``vstack[l]`` = [W_VP^1; …; W_VP^H] (H·F, F)."""
        L, H, F = wqk.shape[0], wqk.shape[1], wqk.shape[2]
        return wqk.transpose(1, 2).reshape(L, F, H * F), wvp.reshape(L, H * F, F)

    def attend(self, model, attention, Z, wq, q0: int):
        """Every head's attention output O (from :func:`eaglebook.models._attention`), queries q0..T-1."""
        return attention(Z, wq, model.task.d, q0)

    def add_update(self, model, Z, O, wv):
        """Z_{ℓ+1} = Z_ℓ + Σ_h O^h W_VP^h."""
        return Z + O @ wv

    def last_update(self, model, Z, O, wv):
        """The last layer's D block only (O holds the d' query rows)."""
        d, n = model.task.d, model.task.n
        return Z[:, d:, n:] + O @ wv[:, n:]

    def raw(self, model, Z):
        """A layer state → the raw layout."""
        return Z

    def prediction(self, D: torch.Tensor) -> torch.Tensor:
        """−D_L from the last layer's D block(s)."""
        return -D

    def vp(self, W_V, W_P, head):
        """One layer's W_VP from its W_V, W_P (L-sliced): Σ_h, or head ``head``'s."""
        w = W_V @ W_P.transpose(-1, -2)
        return w.sum(0) if head is None else w[head]

    def heads_qk(self, model, layer: int) -> torch.Tensor:
        """Every head's W_QK in the raw layout: (heads, features, features)."""
        return model.W_Q[layer] @ model.W_K[layer].transpose(-1, -2)

    def heads_vp(self, model, layer: int) -> torch.Tensor:
        """Every head's W_VP in the raw layout: (heads, features, features)."""
        return model.W_V[layer] @ model.W_P[layer].transpose(-1, -2)

    def set_diagonal_layer(self, model, l: int, a1: float, a2: float, a3: float, *, sketch=None, other=None) -> None:
        """Hand-set layer ``l`` (parameters already zero): W_QK = diag(a₁I_n, 0), W_VP = diag(a₂I_n, a₃I_{n'})
        carried by head 0."""
        n, np_ = model.task.n, model.task.n_prime
        c, sg = math.sqrt(abs(a1)), (1.0 if a1 >= 0 else -1.0)
        F = n + np_
        model.W_Q[l, 0] = c * _eye(F)
        model.W_K[l, 0, :n, :n] = sg * c * _eye(n)
        model.W_V[l, 0] = _eye(F)
        model.W_P[l, 0] = torch.diag(torch.tensor([a2] * n + [a3] * np_, dtype=torch.float64))


@dataclass(frozen=True)
class Sketch(Heads):
    """Compute-limited: one head, W_Q, W_K (n+n') × r (r = ``model_cfg.r``), W_V, W_P (n+n') × k with
    k = r + n' (the paper's App. B.4 as written) unless ``model_cfg.vp_width`` sets k (an ablation).  Its W_Q
    cannot hold a product of rank > r, so its products cannot be written back as weights."""

    refactorable = False

    @property
    def uses(self) -> frozenset[str]:
        return frozenset({"r", "vp_width"})

    @property
    def prunable(self) -> bool:
        return False

    def validate(self, model_cfg, task) -> None:
        if model_cfg.r > task.n:
            raise ValueError(f"parameter r={model_cfg.r} is not valid; allowed values: integers in 1..n = {task.n} "
                             "(the sketch keeps r of the n data columns)")

    def layout(self, model_cfg, task) -> Layout:
        L, F, r = model_cfg.layers, task.n + task.n_prime, model_cfg.r
        k = model_cfg.vp_width or r + task.n_prime
        shapes = {"W_Q": (L, 1, F, r), "W_K": (L, 1, F, r), "W_V": (L, 1, F, k), "W_P": (L, 1, F, k)}
        return Layout(shapes=shapes, heads=1, blocks=1, block=F, data=task.n)

    def set_diagonal_layer(self, model, l, a1, a2, a3, *, sketch=None, other=None) -> None:
        """W_QK = a₁ S Sᵀ ⊕ 0 and W_VP = a₂ S Sᵀ ⊕ a₃ I with S = ``sketch`` (see :meth:`sketch_matrix`)."""
        n, np_, r = model.task.n, model.task.n_prime, model.cfg.r
        if model.W_V.shape[-1] < r + np_:
            raise ValueError(f"the reference layer needs W_V, W_P with at least r + n' = {r + np_} columns; "
                             f"this model has vp_width={model.W_V.shape[-1]}")
        c, sg = math.sqrt(abs(a1)), (1.0 if a1 >= 0 else -1.0)
        S = self.sketch_matrix(model, sketch)
        model.W_Q[l, 0, :n, :] = c * S
        model.W_K[l, 0, :n, :] = sg * c * S
        model.W_V[l, 0, :n, :r] = S
        model.W_V[l, 0, n:, r:] = _eye(np_)
        model.W_P[l, 0, :n, :r] = a2 * S
        model.W_P[l, 0, n:, r:] = a3 * _eye(np_)

    @staticmethod
    def sketch_matrix(model, s) -> torch.Tensor:
        """An n × r sketch from ``s``: an n × r matrix, or r distinct column indices (a column selection);
        None: the first r coordinates."""
        n, r = model.task.n, model.cfg.r
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


@dataclass(frozen=True)
class Machines(Heads):
    """M = ``model_cfg.machines`` machines, one head each (the paper's Fig. 2 and App. B.4).

    The n data columns are split contiguously; **M must divide n** (the weights are shared across
    machines, which needs equal blocks).  With n_μ = n/M and F_μ = n_μ + n', machine μ holds the block
    [[A^μ, C], [B^μ, D]], and the raw layout concatenates the blocks along the features (machine-major,
    n + M·n' columns).  Head μ attends within block μ (one W_Q, W_K, W_V shared by all heads) and writes
    to every block through a two-part projection: ``W_P[:, 0]`` (self) and ``W_P[:, 1]`` (other), so block
    ν receives O_ν W_self + Σ_{μ≠ν} O_μ W_other.  The read-out averages the M copies of D.
    """

    heads_share_weights = True

    @property
    def uses(self) -> frozenset[str]:
        return frozenset({"machines"})

    @property
    def prunable(self) -> bool:
        return False

    def validate(self, model_cfg, task) -> None:
        M, n = model_cfg.machines, task.n
        if not (1 <= M <= n) or n % M:
            divisors = ", ".join(str(k) for k in range(1, n + 1) if n % k == 0)
            raise ValueError(f"parameter machines={M} is not valid for n={n}: the distributed model shares weights "
                             f"across machines and needs equal blocks, so machines must divide n (allowed: {divisors})")

    def layout(self, model_cfg, task) -> Layout:
        self.validate(model_cfg, task)
        M, n, L = model_cfg.machines, task.n, model_cfg.layers
        edges = machine_edges(n, M)
        if not np.array_equal(np.diff(edges), np.full(M, n // M)):   # the layout assumes it
            raise ValueError("the contiguous split of the data columns is not an equal split")
        Fm = n // M + task.n_prime
        shapes = {"W_Q": (L, 1, Fm, Fm), "W_K": (L, 1, Fm, Fm), "W_V": (L, 1, Fm, Fm), "W_P": (L, 2, Fm, Fm)}
        return Layout(shapes=shapes, heads=M, blocks=M, block=Fm, data=n // M)

    # raw layout (…, T, M·F_μ) ↔ machine blocks (…, M, T, F_μ)
    @staticmethod
    def _raw(Zm: torch.Tensor) -> torch.Tensor:
        B, Mm, T, Fm = Zm.shape
        return Zm.transpose(1, 2).reshape(B, T, Mm * Fm)

    @staticmethod
    def _blocks(model, Z: torch.Tensor) -> torch.Tensor:
        return Z.reshape(*Z.shape[:-1], model.machines, model.F_mu).transpose(-3, -2)

    def embed(self, model, Z0):
        return self._raw(machine_blocks(Z0, model.machines, model.task.n))

    def unembed(self, model, Z):
        return common_layout(self._blocks(model, Z), model.n_mu)

    def readout(self, model, Z):
        return -self._blocks(model, Z)[..., model.task.d:, model.n_mu:].mean(-3)

    def prompt_state(self, model, Z0):
        return machine_blocks(Z0, model.machines, model.task.n)           # (B, M, T, F_μ)

    def state(self, model, Z):
        return self._blocks(model, Z).contiguous() if Z.dim() == 3 else Z   # raw layout → (B, M, T, F_μ)

    def layer_weights(self, wqk, wvp):
        """The shared W_QK (F_μ, F_μ) and, per layer, the pair (W_self − W_other, W_other)."""
        wd, wo = wvp[:, 0] - wvp[:, 1], wvp[:, 1]
        return wqk[:, 0], [(wd[l], wo[l]) for l in range(wd.shape[0])]

    def attend(self, model, attention, Z, wq, q0):
        B, Mm, T, Fm = Z.shape
        O = attention(Z.view(B * Mm, T, Fm), wq, model.task.d, q0)
        return O.view(B, Mm, -1, Fm)                                     # head μ's output, from block μ only

    def add_update(self, model, Z, O, wv):
        wd, wo = wv
        return Z + O @ wd + O.sum(1, keepdim=True) @ wo

    def last_update(self, model, Z, O, wv):
        wd, wo = wv
        d, nm = model.task.d, model.n_mu                                 # block ν gets O_ν W_self + Σ_{μ≠ν} O_μ W_other
        return Z[:, :, d:, nm:] + O @ wd[:, nm:] + O.sum(1, keepdim=True) @ wo[:, nm:]

    def raw(self, model, Z):
        return self._raw(Z)

    def prediction(self, D):
        return -(D.mean(1))

    def vp(self, W_V, W_P, head):
        """A (2, F_μ, F_μ) tensor, [self block, other block] (``head`` is ignored)."""
        return W_V @ W_P.transpose(-1, -2)

    def heads_qk(self, model, layer):
        Mm, Fm = model.machines, model.F_mu
        out = model.W_Q.new_zeros(Mm, Mm * Fm, Mm * Fm)
        blk = model.qk(layer)
        for mu in range(Mm):
            out[mu, mu * Fm:(mu + 1) * Fm, mu * Fm:(mu + 1) * Fm] = blk
        return out

    def heads_vp(self, model, layer):
        """Head μ's rows are block μ (it reads its own block); its column block μ is the self part, every
        other column block the other part."""
        Mm, Fm = model.machines, model.F_mu
        s, o = model.vp(layer)
        out = model.W_Q.new_zeros(Mm, Mm * Fm, Mm * Fm)
        for mu in range(Mm):
            for nu in range(Mm):
                out[mu, mu * Fm:(mu + 1) * Fm, nu * Fm:(nu + 1) * Fm] = s if mu == nu else o
        return out

    def set_diagonal_layer(self, model, l, a1, a2, a3, *, sketch=None, other=None) -> None:
        """Shared block W_QK = diag(a₁I_{n_μ}, 0), self part W_VP = diag(a₂I, a₃I), other part diag(0, b I)
        with b = ``other`` (default a₃)."""
        nm, Fm, np_ = model.n_mu, model.F_mu, model.task.n_prime
        c, sg = math.sqrt(abs(a1)), (1.0 if a1 >= 0 else -1.0)
        b = a3 if other is None else float(other)
        model.W_Q[l, 0] = c * _eye(Fm)
        model.W_K[l, 0, :nm, :nm] = sg * c * _eye(nm)
        model.W_V[l, 0] = _eye(Fm)
        model.W_P[l, 0] = torch.diag(torch.tensor([a2] * nm + [a3] * np_, dtype=torch.float64))
        model.W_P[l, 1] = torch.diag(torch.tensor([0.0] * nm + [b] * np_, dtype=torch.float64))

"""Single-head linear transformers over the tokens e_i = (x_i, y_i): the columns of Z (see :mod:`.task`).

One layer (Vladymyrov et al. 2024, no MLP, no LayerNorm, keys and values over the N context tokens only)::

    Δe_i = P (Σ_{j ≤ N} e_j e_jᵀ) Q e_i         i.e.   Z ← Z + P G Q Z,   G = Z_ctx Z_ctxᵀ

for every token, the query (x_q, 0) included; the prediction is ŷ = −(the query's last coordinate) after
the last layer (their sign).  Parameterisations, per layer:

- ``full``: P, Q ∈ R^{(D+1)×(D+1)};
- ``diag``: P = diag(p_x I, p_y), Q = diag(q_x I, q_y): four scalars, ω_xx = p_x q_x, ω_xy = p_x q_y,
  ω_yx = p_y q_x, ω_yy = p_y q_y, and the layer is
  x_i ← x_i + ω_xx Σ x_i + ω_xy α y_i,  y_i ← y_i + ω_yx ⟨α, x_i⟩ + ω_yy λ y_i
  with Σ = Σ_j x_j x_jᵀ, α = Σ_j y_j x_j, λ = Σ_j y_j²;
- ``gdpp``: ``diag`` with q_y = 0 (so ω_xy = ω_yy = 0): a preconditioning step on x, a gradient step on y.
"""

from __future__ import annotations

import torch
from torch import nn

from .task import ICLModel

__all__ = ["LinearTransformer", "omegas", "OMEGA_NAMES", "offdiag_share"]

OMEGA_NAMES = ("ω_xx", "ω_xy", "ω_yx", "ω_yy")


class LinearTransformer(nn.Module):
    """The model of ``cfg`` (:class:`~eaglebook.icl.task.ICLModel`) for tokens of dimension D + 1."""

    def __init__(self, cfg: ICLModel, D: int, *, generator: torch.Generator | None = None, dtype=torch.float32):
        super().__init__()
        if not isinstance(cfg, ICLModel):
            raise ValueError(f"argument cfg must be an ICLModel, got {type(cfg).__name__}")
        self.cfg, self.D = cfg, int(D)
        L, s = cfg.layers, cfg.init_std
        if cfg.kind == "full":
            shape = (L, 2, D + 1, D + 1)
        else:
            shape = (L, 4)      # p_x, p_y, q_x, q_y
        self.theta = nn.Parameter(s * torch.randn(shape, generator=generator, dtype=dtype))
        if cfg.kind == "gdpp":
            mask = torch.ones(shape, dtype=dtype)
            mask[:, 3] = 0.0
            self.register_buffer("mask", mask)
        else:
            self.mask = None

    def pq(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(P, Q) of a layer as (D+1)×(D+1) matrices."""
        th = self.theta if self.mask is None else self.theta * self.mask
        if self.cfg.kind == "full":
            return th[layer, 0], th[layer, 1]
        px, py, qx, qy = th[layer]
        one = torch.ones(self.D, dtype=th.dtype, device=th.device)
        return torch.diag(torch.cat([px * one, py[None]])), torch.diag(torch.cat([qx * one, qy[None]]))

    def layer(self, Z: torch.Tensor, layer: int) -> torch.Tensor:
        """Z + P G Q Z for one layer."""
        N = Z.shape[-1] - 1
        P, Q = self.pq(layer)
        ctx = Z[..., :N]
        G = ctx @ ctx.mT
        return Z + P @ (G @ (Q @ Z))

    def forward(self, Z: torch.Tensor, *, iterates: bool = False):
        """ŷ = −Z_L[..., D, N] (shape (B,)); with ``iterates=True`` also the list Z_0 … Z_L.

        Every layer multiplies Z on the left by a per-sequence matrix, Z ← (I + P G Q) Z, so G and the query
        column follow a (D+1)×(D+1) recursion, G ← M G Mᵀ, z_q ← M z_q with M = I + P G Q; without
        ``iterates`` the forward runs on it (the same numbers as the token update, in a third of the work)."""
        if Z.ndim != 3 or Z.shape[-2] != self.D + 1:
            raise ValueError(f"argument Z of shape {tuple(Z.shape)} is not a batch of prompts (B, {self.D + 1}, N + 1)")
        if not iterates:
            N = Z.shape[-1] - 1
            ctx, z = Z[..., :N], Z[..., N:]
            G = ctx @ ctx.mT
            eye = torch.eye(self.D + 1, dtype=Z.dtype, device=Z.device)
            for l in range(self.cfg.layers):
                P, Q = self.pq(l)
                M = eye + P @ G @ Q
                G = M @ G @ M.mT
                z = M @ z
            return -z[:, self.D, 0]
        out = [Z]
        for l in range(self.cfg.layers):
            Z = self.layer(Z, l)
            if iterates:
                out.append(Z)
        yhat = -Z[:, self.D, -1]
        return (yhat, out) if iterates else yhat


def omegas(model: LinearTransformer) -> torch.Tensor:
    """The ω's per layer, shape (L, 4) in the order :data:`OMEGA_NAMES` (float64).

    DIAG and GD++: the products of the layer's four scalars.  FULL: the same products of p_x, q_x (the mean
    of the diagonal of the x–x block of P, Q) and p_y, q_y (their y–y entries); :func:`offdiag_share` says
    how much of P and Q that leaves out."""
    rows = []
    with torch.no_grad():
        for l in range(model.cfg.layers):
            P, Q = (M.double() for M in model.pq(l))
            D = model.D
            px, py = P[:D, :D].diagonal().mean(), P[D, D]
            qx, qy = Q[:D, :D].diagonal().mean(), Q[D, D]
            rows.append(torch.stack([px * qx, px * qy, py * qx, py * qy]))
    return torch.stack(rows)


def offdiag_share(model: LinearTransformer) -> torch.Tensor:
    """Per layer, the share ‖M − diag(m_x I, m_y)‖_F / ‖M‖_F of P and Q (mean of the two) left out by the
    diagonal reading (0 for DIAG and GD++)."""
    out = []
    with torch.no_grad():
        for l in range(model.cfg.layers):
            s = []
            for M in model.pq(l):
                M = M.double()
                D = model.D
                diag = torch.diag(torch.cat([M[:D, :D].diagonal().mean().repeat(D), M[D, D][None]]))
                s.append(torch.linalg.norm(M - diag) / torch.linalg.norm(M).clamp_min(1e-300))
            out.append(torch.stack(s).mean())
    return torch.stack(out)

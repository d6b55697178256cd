"""Two readings of the learned iteration, and their fidelity to the transformer's activations.

In the frame of :mod:`.task` (Z = [[A, C], [B, D]], A = Xᵀ, tokens = columns) a layer of DIAG or GD++ with
ω_xy = ω_yy = 0 is::

    [A, C] ← (I + ω_xx A Aᵀ) [A, C]          (a preconditioning step on the x's)
    [B, D] ← [B, D] + ω_yx B Aᵀ [A, C]       (a gradient step on the y's)

**Their reading (GD++, von Oswald et al. 2023; Vladymyrov et al. 2024):** exactly this, with the layer's
constant ω_xx and ω_yx (the ω_xy, ω_yy terms dropped).

**The paper's reading (EAGLE, Algorithm 1) on the transposed task:** Zᵀ = [[Aᵀ, Bᵀ], [Cᵀ, Dᵀ]] is a
block-completion prompt whose blocks are A' = Aᵀ, B' = Cᵀ, C' = Bᵀ, D' = Dᵀ.  EAGLE's UPDATE on it,
mapped back, is A ← A − ηρ AAᵀA, C ← C − ηρ AAᵀC, B ← B − γρ BAᵀA, D ← D − γρ BAᵀC (the transformer's
D is −D_EAGLE): the same update with ω_xx = −ηρ and ω_yx = −γρ.  With one ρ per layer the two readings
are one algorithm written in two orientations (:func:`eagle_transposed` with ``rho="batch"`` equals
:func:`gdpp` to rounding; a property of the algebra, checked in the tests).  They part where EAGLE takes
ρ_ℓ = 1/‖A_ℓ‖₂² *per prompt* (``rho="instance"``): its steps adapt to each prompt's scale, the
transformer's constants cannot.  η_ℓ and γ_ℓ are read as in chapter 4, against a typical scale of the
transformer's own A_ℓ (the batch median of ‖A_ℓ‖₂², :func:`read_eagle`).

Fidelity (as chapter 5): per layer, the batch mean of ‖Z_ℓ − Ẑ_ℓ‖_F² / #entries.  Everything float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..solver.update import step
from .models import LinearTransformer, omegas
from .task import blocks

__all__ = ["gdpp", "eagle_transposed", "read_eagle", "EagleReading", "fidelity", "sq_norm_A"]


def _assemble(A, B, C, D):
    return torch.cat([torch.cat([A, C], -1), torch.cat([B, D], -1)], -2)


def sq_norm_A(Z: torch.Tensor) -> torch.Tensor:
    """‖A‖₂² of every prompt of a batch (B,)."""
    A = blocks(Z)[0]
    return torch.linalg.matrix_norm(A, ord=2) ** 2


def gdpp(om, Z0: torch.Tensor) -> list[torch.Tensor]:
    """Their reading: the iterates Z_0 … Z_L of GD++ with the per-layer constants ω_xx = om[l, 0] and
    ω_yx = om[l, 2] (see the module docstring)."""
    om = torch.as_tensor(np.asarray(om), dtype=torch.float64)
    Z = Z0.double()
    out = [Z]
    for wxx, _, wyx, _ in om:
        A, B, C, D = blocks(Z)
        AC = torch.cat([A, C], -1)
        AAt, BAt = A @ A.mT, B @ A.mT
        Z = torch.cat([AC + wxx * (AAt @ AC), torch.cat([B, D], -1) + wyx * (BAt @ AC)], -2)
        out.append(Z)
    return out


def eagle_transposed(Z0: torch.Tensor, eta, gamma, *, rho="instance") -> list[torch.Tensor]:
    """The paper's reading: EAGLE's UPDATE (:func:`eaglebook.solver.update.step`) on Zᵀ with per-layer
    η_ℓ, γ_ℓ, mapped back to the frame of Z (iterates Z_0 … Z_L).

    ``rho="instance"``: ρ_ℓ = 1/‖A_ℓ‖₂² of each prompt's own iterate (Algorithm 1); a sequence of numbers:
    one ρ_ℓ per layer for the whole batch."""
    eta, gamma = np.asarray(eta, float), np.asarray(gamma, float)
    if eta.shape != gamma.shape or eta.ndim != 1:
        raise ValueError(f"arguments eta, gamma must be 1-d of equal length; got shapes {eta.shape}, {gamma.shape}")
    if not (isinstance(rho, str) and rho == "instance"):
        rho = np.asarray(rho, float)
        if rho.shape != eta.shape:
            raise ValueError(f"argument rho must be 'instance' or one value per layer ({eta.size}); got {rho.shape}")
    Z = Z0.double()
    out = [Z]
    for l in range(eta.size):
        A, B, C, D = blocks(Z)
        At, Bt, Ct, Dt = A.mT, C.mT, B.mT, D.mT          # the transposed task's blocks
        if isinstance(rho, str):
            r = (1.0 / sq_norm_A(Z))[:, None, None]
        else:
            r = torch.tensor(rho[l], dtype=torch.float64)
        A2, B2, dC, dD = step(At, Bt, Ct, Dt, eta[l] * r, gamma[l] * r, d_scale=-1.0)
        Z = _assemble(A2.mT, (Ct + dC).mT, B2.mT, (Dt + dD).mT)
        out.append(Z)
    return out


@dataclass(frozen=True)
class EagleReading:
    """η_ℓ, γ_ℓ read from a model against R_ℓ, the batch median of ‖A_ℓ‖₂² along its own iterates:
    η_ℓ = −ω_xx R_ℓ, γ_ℓ = −ω_yx R_ℓ (so that ηρ = −ω_xx at ρ = 1/R_ℓ)."""

    eta: np.ndarray
    gamma: np.ndarray
    R: np.ndarray
    omegas: np.ndarray


def read_eagle(model: LinearTransformer, Z0: torch.Tensor) -> EagleReading:
    """:class:`EagleReading` of ``model`` on the prompts ``Z0``."""
    if model.theta.dtype != torch.float64:
        raise ValueError("read_eagle needs a float64 model (Run.model() gives one)")
    om = omegas(model).numpy()
    with torch.no_grad():
        _, its = model(Z0.double(), iterates=True)
    R = np.array([float(sq_norm_A(Z).median()) for Z in its[:-1]])
    return EagleReading(-om[:, 0] * R, -om[:, 2] * R, R, om)


def fidelity(reference: list[torch.Tensor], reading: list[torch.Tensor]) -> np.ndarray:
    """Per layer ℓ = 0 … L: the batch mean of ‖Z_ℓ − Ẑ_ℓ‖_F² / #entries(Z) (chapter 5's statistic)."""
    if len(reference) != len(reading):
        raise ValueError(f"the two iterate lists differ in length: {len(reference)} and {len(reading)}")
    out = []
    for Z, Zh in zip(reference, reading):
        Z, Zh = Z.detach(), Zh.detach()
        e = ((Z.double() - Zh.double()) ** 2).sum((-2, -1)) / (Z.shape[-1] * Z.shape[-2])
        out.append(float(e.mean()))
    return np.array(out)

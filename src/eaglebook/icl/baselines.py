"""Ridge baselines of Vladymyrov et al. (2024) and their metric, the adjusted evaluation loss.

All predict ŷ = ⟨w_λ, x_q⟩ with w_λ = (XᵀX + λ I)⁻¹ Xᵀ y (the posterior mean under w ~ N(0, I) when
λ = σ²); they differ in λ, per sequence:

- **oracle**: λ = σ_τ², the true noise variance of the sequence (Bayes-optimal given σ_τ);
- **ConstRR**: one λ for all sequences, tuned to the task's noise law;
- **AdaRR**: λ = σ̂², estimated from the least-squares residuals: σ̂² = ‖y − X w_OLS‖² / (N − D);
- **TunedRR**: AdaRR with a tuned multiplier m and cap c: λ = min(m σ̂², c).

Loss convention (theirs): ½ (ŷ − y_q)², averaged over sequences, with the noiseless query label.  The
**adjusted evaluation loss** is a predictor's loss minus the oracle's on the same sequences (0 for the
oracle, and the plain loss on the noiseless task, where the oracle is exact least squares).

:class:`Ridge` diagonalises XᵀX once per sequence, so that ŷ(λ) = Σ_k (x_qᵀu_k)(u_kᵀXᵀy)/(s_k + λ) costs
O(D) per λ and tuning is cheap.  Everything is float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy import optimize

from .task import Batch

__all__ = ["loss", "Ridge", "tune_const", "tune_tuned", "Tuned", "predictions", "METHODS"]

METHODS = ("oracle", "ConstRR", "AdaRR", "TunedRR")


def loss(yhat: torch.Tensor, yq: torch.Tensor) -> float:
    """½ mean (ŷ − y_q)² (their convention), in float64."""
    return float(0.5 * ((yhat.double() - yq.double()) ** 2).mean())


class Ridge:
    """Ridge predictions on one batch for any per-sequence λ (see the module docstring)."""

    def __init__(self, b: Batch):
        x, y, xq = b.x.double(), b.y.double(), b.xq.double()
        N, D = x.shape[-2:]
        if N <= D:
            raise ValueError(f"AdaRR needs N > D (the residual has N − D degrees of freedom); got N={N}, D={D}")
        S = x.mT @ x
        s, U = torch.linalg.eigh(S)
        alpha = (x.mT @ y[..., None])[..., 0]
        self.s = s
        self.a = (U.mT @ xq[..., None])[..., 0] * (U.mT @ alpha[..., None])[..., 0]
        w_ols = (U @ ((U.mT @ alpha[..., None])[..., 0] / s)[..., None])[..., 0]
        r = y - (x @ w_ols[..., None])[..., 0]
        self.sigma2_hat = (r ** 2).sum(-1) / (N - D)
        self.yq, self.sigma = b.yq.double(), b.sigma.double()

    def predict(self, lam) -> torch.Tensor:
        lam = torch.as_tensor(lam, dtype=torch.float64)
        lam = lam[..., None] if lam.ndim else lam
        return (self.a / (self.s + lam)).sum(-1)

    def loss(self, lam) -> float:
        return loss(self.predict(lam), self.yq)


def tune_const(r: Ridge) -> float:
    """ConstRR's λ: the one value minimising the loss on ``r``'s sequences (bounded search in log λ)."""
    f = lambda t: r.loss(math.exp(t))
    grid = np.linspace(-12, 6, 37)
    t0 = grid[int(np.argmin([f(t) for t in grid]))]
    res = optimize.minimize_scalar(f, bounds=(t0 - 0.5, t0 + 0.5), method="bounded", options={"xatol": 1e-4})
    return float(math.exp(res.x))


@dataclass(frozen=True)
class Tuned:
    """TunedRR's parameters: λ = min(multiplier · σ̂², cap)."""

    multiplier: float
    cap: float

    def lam(self, r: Ridge) -> torch.Tensor:
        return torch.clamp(self.multiplier * r.sigma2_hat, max=self.cap)


def tune_tuned(r: Ridge) -> Tuned:
    """TunedRR's multiplier and cap, minimising the loss on ``r``'s sequences (grid, then Nelder–Mead in
    log space)."""
    f = lambda v: r.loss(Tuned(math.exp(v[0]), math.exp(v[1])).lam(r))
    top = float(r.sigma2_hat.max()) + 1.0
    best = min(((m, c) for m in np.linspace(-2, 1.5, 15) for c in np.linspace(-6, math.log(top), 15)),
               key=lambda v: f(v))
    res = optimize.minimize(f, np.array(best), method="Nelder-Mead", options={"xatol": 1e-4, "fatol": 1e-10})
    return Tuned(float(math.exp(res.x[0])), float(math.exp(res.x[1])))


def predictions(r: Ridge, const_lam: float, tuned: Tuned) -> dict[str, torch.Tensor]:
    """ŷ of every baseline on ``r``'s sequences (ConstRR and TunedRR with parameters tuned elsewhere)."""
    return {"oracle": r.predict(r.sigma ** 2), "ConstRR": r.predict(const_lam),
            "AdaRR": r.predict(r.sigma2_hat), "TunedRR": r.predict(tuned.lam(r))}

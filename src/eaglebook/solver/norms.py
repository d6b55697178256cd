"""Norms and exact power-of-two scaling, written once for every solver of the package.

* :func:`spectral_norm`: ‖Ã‖₂ of a (batched) matrix, exactly (an SVD), by warm-started power iteration (a
  lower bound, the solvers' default), or by a user callable; :func:`power_norm` is the power iteration
  alone, optionally on a Gram matrix the caller has already formed.  EAGLE, GD++, the NumPy baselines
  (:func:`eaglebook.solver.baselines.sigma_max`) and distributed GD all call these.
* :func:`inv_square`: ρ = s⁻² (0 where s = 0, so that a zero matrix makes no step).
* :func:`fro`, :func:`maxabs`: Frobenius norm and largest modulus over the last two dimensions.
* :func:`mul_pow2`, :func:`exponent`, :func:`pow2_factor`: exact multiplication by powers of two (the
  solvers' rescaling and frames).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

from .._arrays import is_number

__all__ = ["POWER_MARGIN", "POWER_KICK", "RHO_METHODS", "spectral_norm", "power_norm", "inv_square", "fro",
           "fro_safe", "maxabs", "mul_pow2", "exponent", "pow2_factor", "check_rho_method", "kick"]

#: ``rho="power"`` multiplies its estimate (a lower bound of ‖Ã‖₂) by this margin.
POWER_MARGIN = 1.02
#: The warm-started power vector gets a random 1% kick each UPDATE: an UPDATE can annihilate the direction
#: it had found (η = 1 sends the top singular value to 0), and a vector with no component along the new top
#: direction would then underestimate ‖Ã‖₂ by up to √min(d, r) (the Frobenius floor), making ρσ² > 2/γ and C
#: grow.  With the kick, a top direction σ₁ >= 2σ̂ is amplified by (σ₁/σ̂)^(2k) >= 1000 in k = 5 iterations;
#: the Rayleigh quotient moves only by O(kick²) when the vector was right.
POWER_KICK = 1e-2
RHO_METHODS = ("exact", "power")


def check_rho_method(rho, name: str = "rho") -> None:
    """``ValueError`` unless ``rho`` is ``"exact"``, ``"power"`` or a callable."""
    if not (callable(rho) or (isinstance(rho, str) and rho in RHO_METHODS)):
        raise ValueError(f"argument {name}={rho!r} must be one of {RHO_METHODS} or a callable returning ‖Ã‖₂")


def maxabs(X: torch.Tensor) -> torch.Tensor:
    """Largest modulus over the last two dimensions (shape batch + (1, 1))."""
    return X.abs().amax(dim=(-2, -1), keepdim=True)


def fro(X: torch.Tensor) -> torch.Tensor:
    """Frobenius norm over the last two dimensions (batch + (1, 1)), one pass over X.  The solvers call it
    on iterates kept inside an exact power-of-two frame, where the squares cannot overflow."""
    return torch.linalg.vector_norm(X, dim=(-2, -1), keepdim=True)


def fro_safe(X: torch.Tensor) -> torch.Tensor:
    """Frobenius norm that neither overflows nor underflows (entries divided by their largest modulus)."""
    m = maxabs(X)
    ms = torch.where(m > 0, m, torch.ones_like(m))
    return m * torch.linalg.vector_norm(X / ms, dim=(-2, -1), keepdim=True)


def inv_square(s: torch.Tensor) -> torch.Tensor:
    """s⁻², and 0 where s = 0 (a zero matrix makes no step)."""
    return torch.where(s > 0, 1.0 / torch.where(s > 0, s, torch.ones_like(s)) ** 2, torch.zeros_like(s))


def mul_pow2(X: torch.Tensor, k) -> torch.Tensor:
    """X·2^k for an integer tensor k broadcastable to X; exact in binary floating point (in steps of at
    most 2^±64, so no factor overflows, and intermediate values move monotonically to the result)."""
    k = torch.as_tensor(k, device=X.device).to(torch.int64)
    while bool((k != 0).any()):
        s = k.clamp(-64, 64)
        X = X * torch.exp2(s.to(X.dtype))
        k = k - s
    return X


def exponent(m: torch.Tensor) -> torch.Tensor:
    """The integer e with m·2^-e in [1/2, 1) (0 where m = 0)."""
    _, e = torch.frexp(m)
    return torch.where(m > 0, e.to(torch.int64), torch.zeros_like(e, dtype=torch.int64))


def pow2_factor(k: torch.Tensor, dtype) -> torch.Tensor:
    """2^k in ``dtype``, with k clamped so that the factor stays finite."""
    cap = int(math.log2(torch.finfo(dtype).max)) - 1
    return torch.exp2(k.clamp(-cap, cap).to(dtype))


def kick(u: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """The warm start's random kick (:data:`POWER_KICK`): u + (kick/√d)·noise·‖u‖."""
    return u + (POWER_KICK / math.sqrt(u.shape[-2])) * noise * torch.linalg.vector_norm(u, dim=-2, keepdim=True)


def power_norm(At: torch.Tensor, u: torch.Tensor, iters: int, *, gram: torch.Tensor | None = None,
               side: str = "left", trace: torch.Tensor | None = None):
    """``iters`` power iterations on Ã Ãᵀ from the left vector ``u`` (batch + (d, 1)); returns
    (σ̂, u) with σ̂ = max(‖Ãᵀu‖, ‖Ã‖_F/√min(d, r)), a lower bound of ‖Ã‖₂ (batch + (1, 1)), and the new,
    normalised left vector.

    ``gram`` may be Ã Ãᵀ (d×d, ``side="left"``) or Ãᵀ Ã (r×r, ``side="right"``), already formed by the
    caller: the iterations then run on it (one pass over the Gram matrix each instead of two over Ã),
    with the same iterates in exact arithmetic.  ``trace``: the Gram matrix's trace ‖Ã‖_F² (batch + (1, 1)),
    when the caller has it already."""
    tiny = torch.finfo(At.dtype).tiny
    d, r = At.shape[-2:]
    if gram is not None and side == "right":      # the right Gram K = ÃᵀÃ: iterate w = Ãᵀu
        # a batch iterates on rows, wᵀ = uᵀÃ and (K w)ᵀ = wᵀK (K is symmetric): the same iteration, whose
        # batched products with one row run 1.5–2× faster than with one column (10,000 of 20×20, 2,000 of 50×50)
        rows = At.ndim > 2
        ax = -1 if rows else -2
        w = u.mT @ At if rows else At.mT @ u
        q = None
        for _ in range(iters):
            Kw = w @ gram if rows else gram @ w
            q = torch.sqrt((w * Kw).sum(ax, keepdim=True).clamp_min(0)).clamp_min(tiny)   # ‖Ã w‖
            w_prev, w = w, Kw / q
        s = torch.linalg.vector_norm(w, dim=ax, keepdim=True)
        u_new = (w_prev @ At.mT).mT / q if rows else At @ w_prev / q   # the left vector u = Ã w/‖Ã w‖
        u = torch.where(s > 0, u_new, u)                           # Ã ⊥ u (e.g. a zero Ã): keep the old vector
        tr = torch.diagonal(gram, dim1=-2, dim2=-1).sum(-1)[..., None, None] if trace is None else trace
    else:
        E = gram
        for _ in range(iters):
            v = E @ u if E is not None else At @ (At.mT @ u)
            nv = torch.linalg.vector_norm(v, dim=-2, keepdim=True)
            u = torch.where(nv > 0, v / nv.clamp_min(tiny), u)      # Ã ⊥ u (e.g. a zero Ã): keep the old vector
        if E is not None:
            s = torch.sqrt((u * (E @ u)).sum(-2, keepdim=True).clamp_min(0))
            tr = torch.diagonal(E, dim1=-2, dim2=-1).sum(-1)[..., None, None] if trace is None else trace
        else:
            s = torch.linalg.vector_norm(At.mT @ u, dim=-2, keepdim=True)
            tr = fro(At) ** 2
    floor = torch.sqrt(tr.clamp_min(0) / min(d, r))
    return torch.maximum(s, floor), u


def check_rho_value(s, At: torch.Tensor) -> torch.Tensor:
    """Validate what a ``rho`` callable returned: a finite number > 0 per instance (0 only for Ã = 0)."""
    batch = At.shape[:-2]
    if isinstance(s, str) or not (is_number(s) or isinstance(s, (torch.Tensor, np.ndarray))):
        raise ValueError(f"argument rho: the callable must return ‖Ã‖₂ as a number or an array of shape {tuple(batch)}, "
                         f"got {type(s).__name__}")
    try:
        s = torch.as_tensor(np.asarray(s, dtype=np.float64) if not isinstance(s, torch.Tensor) else s,
                            device=At.device).to(At.dtype)
    except (TypeError, ValueError) as e:
        raise ValueError(f"argument rho: the callable returned a value that is not a number: {e}") from None
    if s.ndim == len(batch):
        s = s[..., None, None]
    try:
        s = s.expand(*batch, 1, 1)
    except RuntimeError:
        raise ValueError(f"argument rho: the callable returned shape {tuple(s.shape)}, expected {tuple(batch)}") from None
    zero = maxabs(At) == 0
    if not bool(torch.isfinite(s).all()) or bool(((s <= 0) & ~zero).any()):
        raise ValueError("argument rho: the callable must return a finite ‖Ã‖₂ > 0 (got a value <= 0, NaN or inf)")
    return s


def spectral_norm(At: torch.Tensor, method: str | Callable = "power", u: torch.Tensor | None = None,
                  iters: int = 5, *, gram: torch.Tensor | None = None, side: str = "left", seed=0,
                  trace: torch.Tensor | None = None):
    """‖Ã‖₂ of ``At`` (…, d, r) as batch + (1, 1), and the power vector; ``method``:

    * ``"exact"``: ``torch.linalg.matrix_norm(ord=2)`` (an SVD);
    * ``"power"``: :func:`power_norm`, ``iters`` iterations from ``u`` (a seeded Gaussian start when None);
      a lower bound;
    * a callable: called with Ã, must return ‖Ã‖₂ (a number or a tensor of the batch shape); validated.
    """
    if callable(method):
        try:
            s = method(At)
        except Exception as e:   # a user callable: report it under the argument's name
            raise ValueError(f"argument rho: the callable raised {type(e).__name__}: {e}") from e
        return check_rho_value(s, At), u
    if method == "exact":
        return torch.linalg.matrix_norm(At, ord=2, keepdim=True), u
    if method != "power":
        check_rho_method(method)
    if u is None:
        g = np.random.default_rng(seed)
        u = torch.as_tensor(g.standard_normal(tuple(At.shape[:-2]) + (At.shape[-2], 1)), dtype=At.dtype,
                            device=At.device)
    return power_norm(At, u, iters, gram=gram, side=side, trace=trace if gram is not None else None)


def growth_log(x: torch.Tensor) -> torch.Tensor:
    """log of the growth, in one UPDATE, of a small singular value relative to the largest one, given the
    step x = ηρσ_max² (float64): a lower bound the stopping rule and the certificate may count on.

    The A-update maps a singular value s to s(1 − x s²/σ_max²).  For x ≤ 1/3 that map is increasing on
    [0, σ_max], so the order of the singular values is kept, the largest shrinks by 1 − x, and a small one
    gains 1/(1 − x) relative to it.  For x > 1/3 the map peaks at s = σ_max/√(3x) with the value
    (2/3)·σ_max/√(3x), so the largest value after the step is at most that and a small one gains at least
    3√(3x)/2 relative to it; but the map is not monotone there (see :data:`MONOTONE_GROWTH`): values above
    the peak's argument are pushed below others, and the order of the directions changes (x clamped at 0.9)."""
    x = x.to(torch.float64).clamp(0.0, 0.9)
    return torch.where(x <= 1 / 3, -torch.log1p(-x), torch.log(1.5 * torch.sqrt(3 * x)))


#: log 1.5, the growth of the step x = 1/3 at which the A-update's singular-value map stops being monotone:
#: a larger :func:`growth_log` means a step that may have reordered the directions.
MONOTONE_GROWTH = math.log(1.5)

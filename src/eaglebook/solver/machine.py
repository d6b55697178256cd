"""One machine of Algorithm 1: its blocks, its step size and one round's work, written once.

A :class:`Machine` holds machine μ's column blocks A^μ, B^μ as *stored* iterates 2^{k_A}·A^μ_ℓ and
2^{k_B}·B^μ_ℓ (exact power-of-two rescaling, see :mod:`eaglebook.solver.eagle`), its power-iteration
vector and the accumulated growth of its small singular values.  :meth:`Machine.step` runs one round on
them: rescale, the Gram matrix of Ã = A S, ρ = (rho_scale·margin·σ̂)⁻² from it, the UPDATE
(:func:`eaglebook.solver.update.step`), and returns the increments of C and D plus the two numbers the
stopping rule needs from this machine.  :meth:`Machine.certificate` is this machine's share of a check
(:mod:`eaglebook.solver.certify`).  The in-process solvers (M machines in one loop) and the multi-process
engine (one machine per process) both run this class, through :mod:`eaglebook.solver.engine`.

Cost per round: the two products of the UPDATE on Ã (its Gram matrix and Ã times it), the power
iterations on that Gram matrix, and one elementwise pass over A and B.  With a column sketch (``cols``)
only the r selected columns of A and B are read or written: the work is proportional to r (‖A‖_F is kept
from per-column squared norms).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch

from .certify import gemm_certificate, refine_sigma
from .norms import POWER_MARGIN, fro, growth_log, inv_square, kick, mul_pow2, pow2_factor, spectral_norm
from .update import gram, step

__all__ = ["Options", "Step", "Machine", "RESCALE_BOUNDS", "SKETCH_KINDS", "POOLS", "pool", "draw_sketch"]

#: ‖A_ℓ‖_F and ‖B_ℓ‖_F are each kept inside these bounds by exact power-of-two rescaling.
RESCALE_BOUNDS = (2.0 ** -16, 2.0 ** 16)
SKETCH_KINDS = ("columns", "haar")
POOLS = ("instance", "batch_max")


class Options(NamedTuple):
    """A machine's options (validated by the caller)."""
    eta: float
    gamma: float
    rho: object
    rho_scale: float
    power_iters: int
    rho_pool: str
    rescale: bool
    sketch: int | None = None
    sketch_kind: str = "columns"
    redraw: bool = True
    freeze_tol: float | None = None


class Step(NamedTuple):
    """What one round of one machine returns: the increments ΔC, ΔD, and x = ηρσ̂² and log2 of Algorithm
    1's own ‖A_ℓ‖_F (both batch + (1, 1)) for the stopping rule; ``cond``: its vote for freezing (0 or 1)."""
    dC: torch.Tensor
    dD: torch.Tensor
    x: torch.Tensor
    lA: torch.Tensor
    cond: float


def pool(x: torch.Tensor, how: str) -> torch.Tensor:
    """x has shape batch + (1, 1); ``batch_max`` replaces it by its maximum over the batch."""
    if how == "batch_max" and x.ndim > 2:
        return x.amax(dim=tuple(range(x.ndim - 2)), keepdim=True).expand_as(x)
    return x


def draw_sketch(n: int, r: int, kind: str, rng: np.random.Generator, dtype, device):
    """A fresh sketch: ``(cols, None)`` (r sorted distinct columns) or ``(None, S)`` (Haar n×r)."""
    if kind == "columns":
        return torch.as_tensor(np.sort(rng.choice(n, size=r, replace=False)), device=device), None
    Q, R = np.linalg.qr(rng.standard_normal((n, r)))
    return None, torch.as_tensor(Q * np.sign(np.diag(R)), dtype=dtype, device=device)


def _shift(k: torch.Tensor, lo: float, hi: float, f: torch.Tensor) -> torch.Tensor:
    """The integer k with f·2^k near 1 where f lies outside [lo, hi] (0 elsewhere)."""
    out = ((f < lo) | (f > hi)) & (f > 0)
    return torch.where(out, -torch.round(torch.log2(torch.where(out, f, torch.ones_like(f)))),
                       torch.zeros_like(f)).to(torch.int64)


class Machine:
    """Machine μ's state and its round (module doc).  ``A``, ``B``: its blocks (…, d, n_μ), (…, d', n_μ), in
    the solver's frame; the machine owns them (with a column sketch it updates them in place).  ``u``: the
    power vector (…, d, 1) for ``rho="power"``."""

    def __init__(self, A: torch.Tensor, B: torch.Tensor, opts: Options, u: torch.Tensor | None = None):
        self.opts = opts
        self.A0, self.B0 = A, B          # the data as given (the SVD consistency test of certify="svd")
        inplace = opts.sketch is not None and opts.sketch_kind == "columns"
        self.A, self.B = (A.clone(), B.clone()) if inplace else (A, B)
        batch = tuple(A.shape[:-2])
        self.kA = torch.zeros(batch + (1, 1), dtype=torch.int64, device=A.device)
        self.kB = self.kA.clone()
        self.u = u
        self.log_growth = torch.zeros(batch + (1, 1), dtype=torch.float64, device=A.device)
        self.sketch = None               # the current (cols, S)
        self.linear = None               # (ΔC(I), ΔD(I)) once frozen
        self.cond = 0.0
        self.lA = None
        # a column sketch touches r columns per round: keep ‖A‖_F², ‖B‖_F² from per-column squared norms
        self.colsq = ((self.A * self.A).sum(-2), (self.B * self.B).sum(-2)) if inplace else None

    @property
    def n(self) -> int:
        return self.A.shape[-1]

    def to(self, device):
        for k in ("A", "B", "A0", "B0", "kA", "kB", "u", "log_growth"):
            if getattr(self, k) is not None:
                setattr(self, k, getattr(self, k).to(device))
        if self.colsq is not None:
            self.colsq = tuple(c.to(device) for c in self.colsq)
        return self

    # ------------------------------------------------------------------ rescaling
    def _rescale(self, fa2: torch.Tensor, G: torch.Tensor | None):
        """Rescale the stored A, B (exact powers of two) from ‖A‖_F² = ``fa2``; returns log2 of Algorithm
        1's own ‖A_ℓ‖_F and the Gram matrix ``G`` rescaled with A."""
        fa = torch.sqrt(fa2.clamp_min(0))
        lA = torch.log2(fa) - self.kA.to(fa.dtype)
        if not self.opts.rescale:
            return lA, G
        lo, hi = RESCALE_BOUNDS
        k = _shift(self.kA, lo, hi, pool(fa, self.opts.rho_pool))
        if bool((k != 0).any()):
            self.A = mul_pow2(self.A, k)
            G = mul_pow2(G, 2 * k) if G is not None else None
            if self.colsq is not None:
                self.colsq = (mul_pow2(self.colsq[0], 2 * k[..., 0]), self.colsq[1])
            self.kA = self.kA + k
        fb = torch.sqrt(self.colsq[1].sum(-1)[..., None, None]) if self.colsq is not None else fro(self.B)
        k = _shift(self.kB, lo, hi, fb)
        if bool((k != 0).any()):
            self.B = mul_pow2(self.B, k)
            if self.colsq is not None:
                self.colsq = (self.colsq[0], mul_pow2(self.colsq[1], 2 * k[..., 0]))
            self.kB = self.kB + k
        return lA, G

    def d_scale(self):
        """The factor 2^{k_A − k_B} of the D increment (the stored A and B have their own exponents)."""
        return pow2_factor(self.kA - self.kB, self.A.dtype) if self.opts.rescale else 1.0

    # ------------------------------------------------------------------ the round
    def _rho(self, At, G, side, iters, noise, trace=None):
        o = self.opts
        if o.freeze_tol is not None and o.rho == "exact":   # one SVD for ρ and the conditioning vote
            s = torch.linalg.svdvals(At)
            self.cond = self._conditioned(s)
            sigma = s[..., :1].unsqueeze(-1)
        else:
            if noise is not None and o.rho == "power":
                self.u = kick(self.u, noise)
            sigma, self.u = spectral_norm(At, o.rho, self.u, iters, gram=G, side=side, trace=trace)
            if o.freeze_tol is not None:
                self.cond = self._conditioned(torch.linalg.svdvals(At))
        margin = POWER_MARGIN if o.rho == "power" else 1.0
        return inv_square(pool(sigma * (o.rho_scale * margin), o.rho_pool)), sigma

    def step(self, C, D, ell: int, *, noise=None, sketch=None, frozen: bool = False) -> Step:
        """Round ``ell`` on this machine: returns :class:`Step` and commits the new A, B.  ``noise``: this
        round's kick of the power vector (ℓ > 0); ``sketch``: ``(cols, S)`` for the sketched regime."""
        if frozen:
            return self._frozen(C, D)
        o = self.opts
        cols, S = sketch if sketch is not None else (None, None)
        if cols is None and S is None:
            G, side = gram(self.A)
            fa2 = torch.diagonal(G, dim1=-2, dim2=-1).sum(-1)[..., None, None]
        else:
            G = side = None
            fa2 = self.colsq[0].sum(-1)[..., None, None] if self.colsq is not None else fro(self.A) ** 2
        G0 = G
        lA, G = self._rescale(fa2, G)
        trace = fa2 if (G is G0 and G is not None) else None      # G's trace, unless it was rescaled
        if cols is not None:
            At = self.A[..., cols]
            G, side = gram(At)
        elif S is not None:
            At = self.A @ S
            G, side = gram(At)
        else:
            At = self.A
        rho, sigma = self._rho(At, G, side, o.power_iters if ell > 0 else 2 * o.power_iters, noise,
                               trace if cols is None and S is None else None)
        A2, B2, dC, dD = step(self.A, self.B, C, D, o.eta * rho, o.gamma * rho, cols=cols, S=S,
                              d_scale=self.d_scale(), G=G)
        self.A, self.B = A2, B2
        if self.colsq is not None and cols is not None:
            self.colsq[0][..., cols] = (A2[..., cols] ** 2).sum(-2)
            self.colsq[1][..., cols] = (B2[..., cols] ** 2).sum(-2)
        elif self.colsq is not None:      # a full step (no sketch given): every column changed
            self.colsq = ((A2 * A2).sum(-2), (B2 * B2).sum(-2))
        x = o.eta * rho * sigma ** 2
        self.log_growth = self.log_growth + growth_log(x)
        self.lA = lA
        return Step(dC, dD, x, lA, self.cond)

    def _frozen(self, C, D) -> Step:
        """The §E.2 freezing variant: A, B stay; the C, D lines of the UPDATE are linear maps of C, obtained
        once from :func:`eaglebook.solver.update.step` with C = I."""
        if self.linear is None:
            G, _ = gram(self.A)
            self.lA, _ = self._rescale(torch.diagonal(G, dim1=-2, dim2=-1).sum(-1)[..., None, None], None)
            rho, _ = self._rho(self.A, None, "left", 2 * self.opts.power_iters, None)
            eye = torch.eye(self.A.shape[-2], dtype=self.A.dtype, device=self.A.device).expand(
                *self.A.shape[:-2], -1, -1)
            _, _, GC, GD = step(self.A, self.B, eye, None, 0.0, self.opts.gamma * rho, d_scale=self.d_scale())
            self.linear = (GC, GD)
        GC, GD = self.linear
        return Step(GC @ C, GD @ C, torch.zeros_like(self.lA), self.lA, 1.0)

    def _conditioned(self, s) -> float:
        """1.0 when Σ_i (1 − σ_i²/σ_1²)² < freeze_tol over the positive singular values (every batch member)."""
        top = s[..., :1]
        pos = s > top * 1e-8
        dev = torch.where(pos, (1 - (s / torch.where(top > 0, top, torch.ones_like(top))) ** 2) ** 2,
                          torch.zeros_like(s)).sum(-1)
        return float(bool((dev < self.opts.freeze_tol).all()))

    def freeze_instance(self, i: int) -> None:
        """Batch member ``i`` (flat index) has finished: zero its blocks, so that it stops changing."""
        self.freeze_instances([i])

    def freeze_instances(self, rows) -> None:
        """Batch members ``rows`` (flat indices) have finished: zero their blocks (one indexed write each)."""
        if len(rows) == 0:
            return
        nb = max(1, math.prod(self.A.shape[:-2]))
        idx = torch.as_tensor(np.asarray(rows, dtype=np.int64), device=self.A.device)
        for X in (self.A, self.B):
            X.reshape((nb,) + tuple(X.shape[-2:]))[idx] = 0
        if self.colsq is not None:
            for c in self.colsq:
                c.reshape(nb, -1)[idx] = 0

    # ------------------------------------------------------------------ the check
    def certificate(self, C, rcond: float, *, key=(0, 0), finish: bool = True, rows=None):
        """This machine's share of a check on its current blocks (:func:`eaglebook.solver.certify.gemm_certificate`).
        ``rows``: check only these instances (flat indices) of the batch; the certificate and the finishing
        increment then hold those instances, in that order, and equal what a check of the whole batch gives them."""
        if rows is None:
            sigma = refine_sigma(self.A, self.u, seed=key[0])
            return gemm_certificate(self.A, self.B, C, self.kA, self.kB, sigma, self.log_growth, rcond,
                                    self.opts.gamma, key=key, finish=finish)
        nb = max(1, math.prod(self.A.shape[:-2]))
        idx = torch.as_tensor(np.asarray(rows, dtype=np.int64), device=self.A.device)
        pick = lambda X: X.reshape((nb,) + tuple(X.shape[-2:]))[idx]   # noqa: E731
        A = pick(self.A)
        sigma = refine_sigma(A, pick(self.u) if self.u is not None else None, seed=key[0], rows=rows)
        return gemm_certificate(A, pick(self.B), pick(C), pick(self.kA), pick(self.kB), sigma, pick(self.log_growth),
                                rcond, self.opts.gamma, key=key, finish=finish, rows=rows)

"""EAGLE, the algorithm extracted from the trained transformers (the paper's Algorithm 1).

EAGLE estimates the Nyström completion D̂* = B A^† C of X = [[A, C], [B, D]] (A: d×n, B: d'×n,
C: d×n', D: d'×n').  One UPDATE, in the paper's symbols, is::

    Ã = A S,  B̃ = B S,  ρ = ‖Ã‖₂⁻²
    A' = A − ηρ Ã Ãᵀ Ã Sᵀ        B' = B − ηρ B̃ Ãᵀ Ã Sᵀ
    C' = C − γρ Ã Ãᵀ C           D' = D + γρ B̃ Ãᵀ C

and the outer loop runs it on M machines (each holding a column block A^μ, B^μ of the data and the
shared C, D), then *averages* the machines' C' and D'.  Three regimes:

* centralized (:func:`solve`, ``sketch=None``): M = 1, S = I_n;
* sketched / compute-limited (:func:`solve` with ``sketch=r``): M = 1, S an n×r column selection
  (r of the n columns, orthonormal columns), redrawn every iteration;
* distributed (:func:`solve_distributed`): M machines, S = I on each, ρ^μ per machine.

The iteration keeps the invariant D_ℓ + B_ℓ A_ℓ^† C_ℓ = B A^† C and drives C_ℓ to its component in
ker(A_ℓ A_ℓᵀ), so that D_ℓ → B A^† C.  For S = I (centralized) the invariant holds for *any* data:
A' = A R and B' = B R with R = I − ηρ AᵀA, a function of AᵀA.  For a sketch (R = I − ηρ S ÃᵀÃ Sᵀ)
and in the distributed regime it holds when the data are consistent (B = W A, e.g. noiseless
rank(X) = rank(A), Theorem 2's assumption) or A has full column rank; on noisy wide data
(d < n, B ∉ row space of A) sketched and distributed EAGLE converge to a *re-weighted* least-squares
completion instead of B A^† C (measured: 46% relative error on a noisy 30×50 problem).  With the theorem constants η = 1/3, γ = 1 the number of
iterations grows like log κ(A) + log log(1/ε) (the paper's Theorem 1).

Implementation notes
--------------------
* One torch core serves every entry point.  NumPy arrays in → NumPy arrays out; torch tensors in →
  torch tensors out, on their device.  float64 and float32 are computed natively; integer input is
  computed in float64 (NumPy) or the torch default dtype, half precision in float32 (and returned in
  the input dtype).  Leading batch dimensions (…, d, n) are supported everywhere.
* ρ comes from the spectral norm of the (sketched) Ã: ``rho="exact"`` (an SVD-based 2-norm),
  ``rho="power"`` (``power_iters`` warm-started power iterations, see :func:`solve`) or a callable.
  ``rho_scale`` multiplies the norm (ρ = (rho_scale·‖Ã‖₂)⁻²); ``rho_pool="batch_max"`` uses the largest
  norm in the batch, as the trained transformer does (the paper's Figs. 5 and 11).
* Rescaling: ‖A_ℓ‖ shrinks like (2/3)^ℓ, so A_ℓ Ãᵀ Ã underflows in float32 after ~100 iterations
  (the update then silently freezes).  Before each UPDATE, if ‖A_ℓ‖_F lies outside [2⁻¹⁶, 2¹⁶] (per
  instance and machine), A_ℓ is multiplied by the power of two 2^k that brings ‖A_ℓ‖_F closest to 1;
  B_ℓ is treated the same way with its *own* exponent.  The stored iterates are 2^{k_A}·A_ℓ and
  2^{k_B}·B_ℓ; the A, B and C updates are invariant to these factors (ρ scales like ‖A‖⁻²) and the D
  increment is multiplied by 2^{k_A − k_B}, so in exact arithmetic nothing changes, and powers of two
  are exact in binary floating point.  (A common factor for A and B is not enough: B's component in
  the right kernel of A is never shrunk by the update, and rescaling it with A's factor made it
  overflow after a few hundred float32 iterations on rank-deficient or noisy wide data.)
  ``rescale=False`` turns it off.
* A = 0 (or a sketch that selects only zero columns) gives ρ = 0 for that step: nothing moves, and
  D stays at D₀ = 0, which is the correct completion B·0^†·C = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator, NamedTuple, Sequence

import numpy as np
import torch

from .._arrays import (Blocks, as_rng, check_batch, check_finite, check_shapes, int_in, is_number,
                       machine_edges, positive, prepare, to_tensor)
from .._arrays import out as _out
from .stopping import ANNIHILATES as _ANNIHILATES
from .stopping import CONDITIONED, StopRule
from .update import combine, step
from .update import update as _update

__all__ = [
    "Result", "Iterate", "update", "iterate", "solve", "solve_distributed", "layerwise",
    "split_columns", "diversity_index", "DEFAULT_TOL", "RESCALE_BOUNDS", "POWER_MARGIN", "STATUSES",
]

#: Default relative stopping tolerance per compute dtype (see :func:`solve`).
DEFAULT_TOL = {torch.float64: 1e-12, torch.float32: 1e-6}
#: ‖A_ℓ‖_F and ‖B_ℓ‖_F are each kept inside these bounds by exact power-of-two rescaling.
RESCALE_BOUNDS = (2.0 ** -16, 2.0 ** 16)
#: ``rho="power"`` multiplies its estimate (a lower bound of ‖Ã‖₂) by this margin (see :func:`solve`).
POWER_MARGIN = 1.02
#: Every way a solve can end, from best to worst (a batch reports its worst member's).
STATUSES = ("converged", "max_iter", "stalled", "fixed_sketch", "rank_deficient", "out_of_range", "diverged",
            "non_finite")
_CHECK_GAP = 4.0      # between the growth-adjusted rcond cut-off and the band of directions being conditioned
# The warm-started power vector gets a random 1% kick each UPDATE: an UPDATE can annihilate the direction
# it had found (η = 1 sends the top singular value to 0), and a vector with no component along the new top
# direction would then underestimate ‖Ã‖₂ by up to √min(d, r) (the Frobenius floor), making ρσ² > 2/γ and C
# grow.  With the kick, a top direction σ₁ >= 2σ̂ is amplified by (σ₁/σ̂)^(2k) >= 1000 in k = 5 iterations;
# the Rayleigh quotient moves only by O(kick²) when the vector was right.
_POWER_KICK = 1e-2

_RHO_METHODS = ("exact", "power")
_POOLS = ("instance", "batch_max")
_SKETCH_KINDS = ("columns", "haar")


# ----------------------------------------------------------------------------------------------
# Results


@dataclass
class Result:
    """What :func:`solve` and :func:`solve_distributed` return.

    Attributes
    ----------
    D : the completion D_L ≈ B A_rcond^† C (A's singular values below rcond·σ_max count as zero, as in
        ``lstsq``), with the input's array type, device and floating dtype.
    iterations : number L of UPDATE rounds that were run.
    converged : True exactly when ``status == "converged"``.
    status : how the solve ended (for a batch: the worst member's, in the order of ``STATUSES``):

        * ``"converged"``: ‖D_ℓ − D_{ℓ−1}‖_F <= atol + tol·‖D_ℓ‖_F held, the spectral check found no
          direction of A_ℓ still being conditioned, and the directions dropped by ``rcond`` have put at
          most max(tol, p·u)·‖D‖ (p = max(d, n); the estimate is ``level``) into D.  Use D; its error against B A_rcond^† C is
          then limited by rounding, about κ(A)·u times ‖B‖‖A^†‖‖C‖ (u the compute dtype's unit
          roundoff).  Sketched: the rule must hold for W = ⌈(n/r)(ln n + 0.58)⌉ UPDATEs in a row (every
          column drawn once in expectation) and, for column selection, until every column has been
          drawn during that run; and the geometric tail W·δ/(1 − q^W) of the changes still to
          come (δ the largest change of the last W, q^W its ratio to the W before) must be <= the rule's
          bound; there is no spectral check.  Distributed: the same tail bound with W = 4 replaces the
          exact finish of the kept directions.
        * ``"max_iter"``: ``max_iter`` rounds without meeting the rule.  Raise ``max_iter`` (or ``tol``).
        * ``"stalled"``: every direction is conditioned but the D change stopped shrinking above ``tol``:
          the precision floor of the compute dtype (``level`` is the relative size of the change there,
          typically κ(A)·u).  Use D at that accuracy, or compute in float64.  Also (``level`` nan) when
          a step had ηρσ_max² >= 0.99, which can send the top singular value of A_ℓ to 0 and lose that
          direction's part of D for good (η = 1 with each instance's own ρ): use η < 1 or ``rho_scale``.
        * ``"fixed_sketch"``: ``redraw=False`` with r < n: D stopped changing, but only r columns of A
          were ever used, so D is not B A^† C.  Use ``redraw=True``.
        * ``"rank_deficient"``: A is numerically rank deficient and the data are inconsistent (B, C not
          in A's row/column space): the directions below the cut-off were conditioned too far and
          contaminate D by about ``level``·‖D‖ (centralized), or the sketched/distributed regime
          converged to its re-weighted completion instead of B A^† C (``level`` estimates ε_B·κ(A), ε_B
          the relative component of B in A's right kernel).  D is the best available (the kept
          directions finished exactly); use the centralized solver or ``lstsq`` if ``level`` is too large.
        * ``"out_of_range"``: D was found in the solver's rescaled frame but is not representable in the
          output dtype (it overflows, or its largest entry is below the smallest normal number); pass wider input (float64).
        * ``"diverged"``: ‖C_ℓ‖ or ‖A_ℓ‖ grew by 4× (with a valid ρ both never grow): ρ is too large
          (``rho_scale`` < 1, a wrong ``rho`` callable, η or γ too large).  D is the last iterate before.
        * ``"non_finite"``: D became NaN or inf in the rescaled frame; stopped.
    level : a relative accuracy attached to the status (``nan`` when none applies): the dropped-direction
        estimate for ``converged``/``rank_deficient``, the stalled D change for ``stalled``, the last D
        change for ``max_iter`` and ``fixed_sketch`` (max over a batch).
    statuses : per batch member (an object array of the batch shape), or None for a single problem.
    delta : float64 array, ``delta[i]`` = ‖D_ℓ − D_{ℓ−1}‖_F for ℓ = i+1 (max over a batch).
    error : float64 array, ``error[i]`` = ‖D_ℓ − reference‖_F² for ℓ = i+1 (mean over a batch,
        computed in float64), or None when no reference was given; the last entry is for the returned D.
    rel_error : float64 array, ‖D_ℓ − reference‖_F / ‖reference‖_F (over the whole batch), or None.
    machines : M (1 for :func:`solve`).
    floats_per_round : floats each machine sends to the centre per round, (d + d')·n' (its C'^μ and
        D'^μ; the broadcast back has the same size); 0 for a single machine.
    communication : ``iterations * floats_per_round``.
    checks : how many spectral checks (one SVD of A_ℓ each) were run.
    log2_scale : E (int, or an int array of the batch shape): the solver worked on exactly rescaled
        2^-a A, 2^-b B, 2^-c C and returned D = 2^E·D_frame, E = b + c − a (module doc).
    """

    D: object
    iterations: int
    converged: bool
    status: str
    delta: np.ndarray
    error: np.ndarray | None = None
    rel_error: np.ndarray | None = None
    machines: int = 1
    floats_per_round: int = 0
    communication: int = 0
    level: float = math.nan
    statuses: np.ndarray | None = None
    checks: int = 0
    log2_scale: object = 0


class Iterate(NamedTuple):
    """One iterate of :func:`iterate`.

    ``A``/``B`` are the *stored* iterates 2^{k_A}·A_ℓ and 2^{k_B}·B_ℓ (see the module doc on
    rescaling): arrays for a single machine, tuples of per-machine blocks in the distributed case.
    ``log2_scale_A``/``log2_scale_B`` are k_A, k_B (ints; int64 NumPy arrays of the batch shape for
    batched input; tuples per machine).  With ``rescale=False`` both are 0.  C and D are never
    rescaled.  Use :meth:`unscaled` for Algorithm 1's own A_ℓ, B_ℓ and :meth:`invariant` for
    D_ℓ + B_ℓ A_ℓ^† C_ℓ.
    """
    ell: int
    A: object
    B: object
    C: object
    D: object
    log2_scale_A: object
    log2_scale_B: object

    def unscaled(self) -> tuple:
        """(A_ℓ, B_ℓ) of Algorithm 1 in float64 (may under/overflow after many iterations)."""
        if isinstance(self.A, tuple):
            return (tuple(_times_pow2(a, -k) for a, k in zip(self.A, self.log2_scale_A)),
                    tuple(_times_pow2(b, -k) for b, k in zip(self.B, self.log2_scale_B)))
        return _times_pow2(self.A, -self.log2_scale_A), _times_pow2(self.B, -self.log2_scale_B)

    def invariant(self, rcond: float | None = None):
        """D_ℓ + B_ℓ A_ℓ^† C_ℓ in float64 (single machine); it equals B A^† C along the iteration.

        Computed as D_ℓ + 2^{k_A − k_B}·(stored B)(stored A)^†C_ℓ, so it does not under/overflow.
        ``rcond`` is the pseudo-inverse cut-off relative to the largest singular value (default
        max(d, n)·eps).  Note that after many iterations of a rank-deficient problem the rounding-level
        singular values of A_ℓ are conditioned up to the size of the others (the update does not
        know they are rounding errors), so pass a larger ``rcond`` or check early iterates.
        """
        if isinstance(self.A, tuple):
            raise ValueError("invariant() is defined for a single machine; this iterate is distributed")
        is_t = isinstance(self.A, torch.Tensor)
        A, B, C, D = (torch.as_tensor(x).to(torch.float64) for x in (self.A, self.B, self.C, self.D))
        k = torch.as_tensor(np.asarray(self.log2_scale_A) - np.asarray(self.log2_scale_B), dtype=torch.float64,
                            device=A.device)
        rt = rcond if rcond is not None else max(A.shape[-2:]) * torch.finfo(torch.float64).eps
        out = D + torch.exp2(k)[..., None, None] * (B @ torch.linalg.pinv(A, rtol=rt) @ C)
        return out if is_t else out.cpu().numpy()


def _times_pow2(x, k):
    if isinstance(x, torch.Tensor):
        kt = torch.as_tensor(np.asarray(k), dtype=torch.float64, device=x.device)
        return x.to(torch.float64) * torch.exp2(kt)[..., None, None]
    return np.asarray(x, dtype=np.float64) * np.exp2(np.asarray(k, dtype=np.float64))[..., None, None]


# ----------------------------------------------------------------------------------------------
# Validation


def _check_options(*, eta, gamma, rho, rho_scale, power_iters, rho_pool, max_iter, tol, atol, rcond=None,
                   max_iter_none=False):
    positive("eta", eta)
    positive("gamma", gamma)
    if not (callable(rho) or (isinstance(rho, str) and rho in _RHO_METHODS)):
        raise ValueError(f"argument rho={rho!r} must be one of {_RHO_METHODS} or a callable returning ‖Ã‖₂")
    positive("rho_scale", rho_scale)
    int_in("power_iters", power_iters, 1)
    if rho_pool not in _POOLS:
        raise ValueError(f"argument rho_pool={rho_pool!r} must be one of {_POOLS}")
    if max_iter is not None or not max_iter_none:
        int_in("max_iter", max_iter, 1)
    if rcond is not None and (not is_number(rcond) or not 0 <= float(rcond) < 1):
        raise ValueError(f"argument rcond={rcond!r} must be a number in [0, 1) or None")
    if tol is not None:
        positive("tol", tol)
    if not is_number(atol) or not math.isfinite(float(atol)) or atol < 0:
        raise ValueError(f"argument atol={atol!r} must be a finite number >= 0")


# ----------------------------------------------------------------------------------------------
# The torch loop (the UPDATE itself lives in .update)


def _pool(x: torch.Tensor, pool: str) -> torch.Tensor:
    """x has shape batch + (1, 1); ``batch_max`` replaces it by its maximum over the batch."""
    if pool == "batch_max" and x.ndim > 2:
        return x.amax(dim=tuple(range(x.ndim - 2)), keepdim=True).expand_as(x)
    return x


def _check_rho_value(s, At):
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
    zero = _maxabs(At) == 0
    if not bool(torch.isfinite(s).all()) or bool(((s <= 0) & ~zero).any()):
        raise ValueError("argument rho: the callable must return a finite ‖Ã‖₂ > 0 (got a value <= 0, NaN or inf)")
    return s


def _norm2(At, method, u, power_iters):
    """Spectral norm (or its power-iteration lower bound) of At, batch + (1, 1), and the power vector."""
    if callable(method):
        try:
            s = method(At)
        except Exception as e:   # a user callable: report it under the argument's name
            raise ValueError(f"argument rho: the callable raised {type(e).__name__}: {e}") from e
        return _check_rho_value(s, At), u
    if method == "exact":
        return torch.linalg.matrix_norm(At, ord=2, keepdim=True), u
    tiny = torch.finfo(At.dtype).tiny
    for _ in range(power_iters):  # on the left Gram Ã Ãᵀ: the left singular vectors of A_ℓ are preserved
        u = At @ (At.mT @ u)
        u = u / torch.linalg.vector_norm(u, dim=-2, keepdim=True).clamp_min(tiny)
    s = torch.linalg.vector_norm(At.mT @ u, dim=-2, keepdim=True)
    fro = _fro(At) / math.sqrt(min(At.shape[-2:]))
    return torch.maximum(s, fro), u   # both are lower bounds of ‖Ã‖₂


def _maxabs(X):
    return X.abs().amax(dim=(-2, -1), keepdim=True)


def _fro(X):
    """Frobenius norm over the last two dims (batch + (1, 1)), scale-invariant and overflow-safe: the
    entries are divided by their maximum modulus before squaring."""
    m = _maxabs(X)
    ms = torch.where(m > 0, m, torch.ones_like(m))
    return m * torch.linalg.matrix_norm(X / ms, "fro", keepdim=True)


def _mul_pow2(X, k):
    """X·2^k for an integer tensor k broadcastable to X; exact in binary floating point (in steps of at
    most 2^±64, so no factor overflows, and intermediate values move monotonically to the result)."""
    k = torch.as_tensor(k, device=X.device).to(torch.int64)
    while bool((k != 0).any()):
        s = k.clamp(-64, 64)
        X = X * torch.exp2(s.to(X.dtype))
        k = k - s
    return X


def _exponent(m):
    """The integer e with m·2^-e in [1/2, 1) (0 where m = 0)."""
    _, e = torch.frexp(m)
    return torch.where(m > 0, e.to(torch.int64), torch.zeros_like(e, dtype=torch.int64))


def _rescale(X, log2_scale, pool):
    """Multiply X by 2^k (k integer) where ‖X‖_F is outside RESCALE_BOUNDS; k brings it near 1.

    Returns the new X, the new exponent and log2 of Algorithm 1's own ‖X_ℓ‖_F (= ‖stored X‖·2^-exponent).
    """
    lo, hi = RESCALE_BOUNDS
    raw = _fro(X)
    log_true = torch.log2(raw) - log2_scale.to(raw.dtype)
    fro = _pool(raw, pool)
    out = ((fro < lo) | (fro > hi)) & (fro > 0)
    if not bool(out.any()):
        return X, log2_scale, log_true
    k = torch.where(out, -torch.round(torch.log2(torch.where(out, fro, torch.ones_like(fro)))),
                    torch.zeros_like(fro)).to(torch.int64)
    return _mul_pow2(X, k), log2_scale + k, log_true


def _pow2_factor(k: torch.Tensor, dtype) -> torch.Tensor:
    """2^k in ``dtype``, with k clamped so that the factor stays finite."""
    cap = int(math.log2(torch.finfo(dtype).max)) - 1
    return torch.exp2(k.clamp(-cap, cap).to(dtype))


class _Opts(NamedTuple):
    eta: float
    gamma: float
    sketch: int | None
    sketch_kind: str
    redraw: bool
    rho: object
    rho_scale: float
    power_iters: int
    rho_pool: str
    rescale: bool


def _draw(n, r, kind, rng, dtype, device):
    if kind == "columns":
        return torch.as_tensor(np.sort(rng.choice(n, size=r, replace=False)), device=device), None
    Q, R = np.linalg.qr(rng.standard_normal((n, r)))
    return None, torch.as_tensor(Q * np.sign(np.diag(R)), dtype=dtype, device=device)


def _loop(As, Bs, C, D, o: _Opts, rng: np.random.Generator, info: dict | None = None):
    """Run Algorithm 1 forever, yielding (ell, As, Bs, C, D, kAs, kBs) with ell = 0, 1, 2, ...

    ``info`` (optional) receives, per UPDATE, ``"log_growth"``: log of the factor 1/(1 − ηρσ̂²) by which
    the normalised small singular values s/σ_max of A_ℓ grow (max over machines), and ``"log2_normA"``:
    log2 of Algorithm 1's own ‖A_ℓ‖_F (max over machines), both of shape batch + (1, 1).
    """
    M = len(As)
    dtype, device = C.dtype, C.device
    batch = tuple(C.shape[:-2])
    d = C.shape[-2]
    us = [None] * M
    if o.rho == "power":
        us = [torch.as_tensor(rng.standard_normal(batch + (d, 1)), dtype=dtype, device=device) for _ in range(M)]
    kA = [torch.zeros(batch + (1, 1), dtype=torch.int64, device=device) for _ in range(M)]
    kB = list(kA)
    fixed = [None] * M
    ell = 0
    yield ell, As, Bs, C, D, list(kA), list(kB)
    while True:
        As2, Bs2, dCs, dDs, growth, normA, annih = [], [], [], [], [], [], []
        for mu in range(M):
            A, B = As[mu], Bs[mu]
            if o.rescale:
                A, kA[mu], lA = _rescale(A, kA[mu], o.rho_pool)
                B, kB[mu], _ = _rescale(B, kB[mu], "instance")
            else:
                lA = torch.log2(_fro(A))
            cols = S = None
            if o.sketch is not None:
                if fixed[mu] is None or o.redraw:
                    fixed[mu] = _draw(A.shape[-1], o.sketch, o.sketch_kind, rng, dtype, device)
                cols, S = fixed[mu]
            At = A if o.sketch is None else (A[..., cols] if cols is not None else A @ S)
            k = o.power_iters if ell > 0 else 2 * o.power_iters   # cold start: twice as many
            if o.rho == "power" and ell > 0:   # keep every direction in the warm start (see _POWER_KICK)
                kick = torch.as_tensor(rng.standard_normal(batch + (d, 1)), dtype=dtype, device=device)
                us[mu] = us[mu] + (_POWER_KICK / math.sqrt(d)) * kick * torch.linalg.vector_norm(
                    us[mu], dim=-2, keepdim=True)
            sigma, us[mu] = _norm2(At, o.rho, us[mu], k)
            margin = POWER_MARGIN if o.rho == "power" else 1.0
            used = _pool(sigma * (o.rho_scale * margin), o.rho_pool)
            rho = torch.where(used > 0, 1.0 / torch.where(used > 0, used, torch.ones_like(used)) ** 2,
                              torch.zeros_like(used))
            A2, B2, dC, dD = step(A, B, C, D, o.eta * rho, o.gamma * rho, cols=cols, S=S,
                                  d_scale=_pow2_factor(kA[mu] - kB[mu], dtype) if o.rescale else 1.0)
            As2.append(A2), Bs2.append(B2), dCs.append(dC), dDs.append(dD)
            if info is not None and cols is not None:
                info["cols"] = cols
            if info is not None:
                x = o.eta * rho * sigma ** 2
                growth.append(-torch.log1p(-x.clamp(0.0, 0.9)))
                annih.append(x >= _ANNIHILATES)
                normA.append(lA)
        As, Bs = As2, Bs2
        if M == 1:
            C, D = C + dCs[0], D + dDs[0]
        else:   # the centre averages the machines' C'^μ, D'^μ
            C, D = combine(C, torch.stack(dCs, -3)), combine(D, torch.stack(dDs, -3))
        if info is not None:
            info["log_growth"] = torch.stack(growth).amax(0)
            info["log2_normA"] = torch.stack(normA).amax(0)
            info["annihilates"] = torch.stack(annih).any(0)
        ell += 1
        yield ell, As, Bs, C, D, list(kA), list(kB)


def _setup(A_list, B_list, C, D, names, *, sketch, sketch_kind, redraw, eta, gamma, rho, rho_scale,
           power_iters, rho_pool, max_iter, tol, atol, rescale, seed, reference=None, rcond=None,
           max_iter_none=False):
    """Validate everything, convert to torch; return (As, Bs, C, D, ref, io, opts, rng, dims)."""
    _check_options(eta=eta, gamma=gamma, rho=rho, rho_scale=rho_scale, power_iters=power_iters,
                   rho_pool=rho_pool, max_iter=max_iter, tol=tol, atol=atol, rcond=rcond,
                   max_iter_none=max_iter_none)
    if sketch_kind not in _SKETCH_KINDS:
        raise ValueError(f"argument sketch_kind={sketch_kind!r} must be one of {_SKETCH_KINDS}")
    rng = as_rng(seed)
    aname, bname = names
    M = len(A_list)
    named = {}
    for mu in range(M):
        named[aname.format(mu)] = A_list[mu]
        named[bname.format(mu)] = B_list[mu]
    named["C"] = C
    if D is not None:
        named["D"] = D
    ts, io = prepare(named, {"reference": reference} if reference is not None else None)
    a0 = aname.format(0)
    batch = check_batch(ts, a0)
    d = ts[a0].shape[-2]
    dp = ts[bname.format(0)].shape[-2]
    for mu in range(M):
        an, bn = aname.format(mu), bname.format(mu)
        if ts[an].shape[-2] != d:
            raise ValueError(f"argument {an} has {ts[an].shape[-2]} rows but {a0} has {d}: all blocks need the same d")
        if ts[bn].shape[-2] != dp:
            raise ValueError(f"argument {bn} has {ts[bn].shape[-2]} rows but {bname.format(0)} has {dp}: "
                             "all blocks need the same d'")
        try:
            check_shapes(ts[an], ts[bn], ts["C"], ts.get("D"))
        except ValueError as e:  # name the block, not just "A"/"B"
            msg = str(e).replace("argument B ", f"argument {bn} ").replace("but A has", f"but {an} has")
            raise ValueError(msg) from None
    n_prime = ts["C"].shape[-1]
    if reference is not None and tuple(ts["reference"].shape[-2:]) != (dp, n_prime):
        raise ValueError(f"argument reference has shape {tuple(ts['reference'].shape[-2:])}, "
                         f"expected d'×n' = {(dp, n_prime)}")
    if sketch is not None:
        n = ts[a0].shape[-1]
        int_in("sketch", sketch, 1, n)
    As = [ts[aname.format(mu)] for mu in range(M)]
    Bs = [ts[bname.format(mu)] for mu in range(M)]
    Dt = ts["D"] if D is not None else torch.zeros(batch + (dp, n_prime), dtype=io.compute, device=io.device)
    ref = ts.get("reference")
    if ref is not None:
        ref = ref.to(torch.float64)
    opts = _Opts(float(eta), float(gamma), None if sketch is None else int(sketch), sketch_kind, bool(redraw),
                 rho, float(rho_scale), int(power_iters), rho_pool, bool(rescale))
    return As, Bs, ts["C"], Dt, ref, io, opts, rng, (d, dp, n_prime)


class _Frame(NamedTuple):
    """The exact power-of-two frame: the solver iterates on 2^-a A, 2^-b B, 2^-c C (max-abs entries in
    [1/2, 1)), whose completion is 2^(a-b-c) D; ``E`` = b + c − a brings it back (batch + (1, 1))."""
    E: torch.Tensor
    A0: list
    B0: list


def _to_frame(As, Bs, C, rho_pool):
    eA = torch.stack([_exponent(_maxabs(a)) for a in As]).amax(0)   # one A exponent for all machines
    if rho_pool == "batch_max" and eA.ndim > 2:                      # ρ is pooled: keep the norms comparable
        eA = eA.amax(dim=tuple(range(eA.ndim - 2)), keepdim=True).expand_as(eA)
    eB = torch.stack([_exponent(_maxabs(b)) for b in Bs]).amax(0)
    eC = _exponent(_maxabs(C))
    As = [_mul_pow2(a, -eA) for a in As]
    Bs = [_mul_pow2(b, -eB) for b in Bs]
    return As, Bs, _mul_pow2(C, -eC), _Frame(eB + eC - eA, As, Bs)


def _spectral_check(As, Bs, C, D, kA, kB, log_growth, rcond, gamma):
    """One SVD of A_ℓ (the stored, rescaled iterate; the machines' blocks side by side).

    Returns, per instance (flattened batch): the smallest normalised singular value s/σ_max still being
    conditioned (in (thr, 1/2), thr = 4·rcond·G_ℓ the growth-adjusted cut-off; inf when none), the
    finished completion D_ℓ + B_ℓ A_ℓ^† C_ℓ over the kept directions (s/σ_max > thr), and the bound of
    what the dropped directions have already put into D_ℓ (see ``_run``), relative to ‖D_fin‖.
    """
    k0 = torch.stack(kA).amin(0)
    A = torch.cat([_mul_pow2(a, k0 - k) for a, k in zip(As, kA)], -1)
    kb0 = torch.stack(kB).amin(0)
    B = torch.cat([_mul_pow2(b, kb0 - k) for b, k in zip(Bs, kB)], -1)
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    smax = S[..., :1]
    sbar = S / torch.where(smax > 0, smax, torch.ones_like(smax))
    thr = _CHECK_GAP * rcond * torch.exp(log_growth[..., 0])          # batch + (1,)
    kept = (sbar > thr) | (sbar >= CONDITIONED)
    band = kept & (sbar < CONDITIONED)
    band_min = torch.where(band, sbar, torch.full_like(sbar, math.inf)).amin(-1)
    BV, UC = B @ Vh.mT, U.mT @ C
    w = torch.where(kept, 1.0 / torch.where(kept, S, torch.ones_like(S)), torch.zeros_like(S))
    dsc = k0 - kb0
    D_fin = D + _mul_pow2((BV * w[..., None, :]) @ UC, dsc)
    # a dropped direction i has put (1 − Π_i)/Π_i of its remaining term (B_ℓ v_i)(u_iᵀ C_ℓ)/s_i into D_ℓ,
    # and 1 − Π_i <= γ Σ_k (s_i(k)/σ_k)² <= γ s̄_i²/(1 − g⁻²) <= 2.5γ s̄_i² (growth g >= 1.4 per UPDATE)
    drop = torch.where(kept, torch.zeros_like(S), S / torch.where(smax > 0, smax, torch.ones_like(smax)) ** 2)
    terms = torch.linalg.vector_norm(BV, dim=-2) * torch.linalg.vector_norm(UC, dim=-1) * drop
    err = _mul_pow2(2.5 * gamma * terms.sum(-1)[..., None, None], dsc)
    nfin = _fro(D_fin)
    rel = torch.where(nfin > 0, err / torch.where(nfin > 0, nfin, torch.ones_like(nfin)),
                      torch.where(err > 0, math.inf, 0.0))
    return (band_min.reshape(-1).cpu().numpy().astype(np.float64), D_fin,
            rel.reshape(-1).cpu().numpy().astype(np.float64))


def _consistency_level(A0s, B0s, C, rcond):
    """For the sketched and distributed regimes: ε_B·κ, where ε_B = ‖B − B A^†A‖_F/‖B‖_F is B's relative
    component in A's right kernel (0 when A has full column rank) and κ = κ(A) at cut-off ``rcond``.
    Those regimes reach B A^† C when this is small (consistent data or full column rank); otherwise
    they converge to a re-weighted completion.  Returns (level, ε_B) per instance."""
    A, B = torch.cat(A0s, -1), torch.cat(B0s, -1)
    _, S, Vh = torch.linalg.svd(A, full_matrices=False)
    smax = S[..., :1]
    keep = S > rcond * smax
    V = Vh.mT * keep[..., None, :]
    Bk = B - (B @ V) @ V.mT
    nB = _fro(B)
    epsB = torch.where(nB > 0, _fro(Bk) / torch.where(nB > 0, nB, torch.ones_like(nB)), torch.zeros_like(nB))
    smin = torch.where(keep, S, torch.full_like(S, math.inf)).amin(-1, keepdim=True)
    kappa = torch.where(smax > 0, smax / smin, torch.ones_like(smax))
    f = lambda x: x.reshape(-1).cpu().numpy().astype(np.float64)
    return f(epsB[..., 0] * kappa), f(epsB[..., 0])


def _run(As, Bs, C, D, ref, io, opts, rng, dims, *, tol, atol, max_iter, machines, rcond) -> Result:
    tol = DEFAULT_TOL[io.compute] if tol is None else float(tol)
    atol = float(atol)
    eps = torch.finfo(io.compute).eps
    d, dp, n_prime = dims
    n = sum(a.shape[-1] for a in As)
    rc = float(rcond) if rcond is not None else max(d, n) * eps
    batch = tuple(C.shape[:-2])
    nb = max(1, math.prod(batch))
    As, Bs, C, frame = _to_frame(As, Bs, C, opts.rho_pool)
    E = frame.E.reshape(-1).cpu().numpy()
    ref_f = _mul_pow2(ref, -frame.E) if ref is not None else None
    ref_norm = _fro(ref_f).reshape(-1).cpu().numpy() if ref is not None else None
    sketched = opts.sketch is not None and opts.sketch < n
    rule = StopRule(nb, tol=tol, atol_f=np.ldexp(np.full(nb, atol), -E), machines=machines, n=n, rcond=rc,
                    floor=max(d, n) * eps / 2,   # the dropped directions matter only above rounding, p·u
                    sketched=sketched, redraw=opts.redraw,
                    window=math.ceil(n / opts.sketch * (math.log(n) + 0.5773)) if sketched else 1)
    info: dict = {}
    deltas, errs, rels = [], [], []
    Dout, D_prev = D.clone(), D
    flat = lambda x: x.reshape((nb,) + tuple(x.shape[-2:]))
    host = lambda x: x.reshape(-1).cpu().numpy()
    ell = 0
    for ell, As_, Bs_, C_, D_, kA, kB in _loop(As, Bs, C, D, opts, rng, info):
        if ell == 0:
            rule.start(host(torch.log2(_fro(C_))))
            continue
        fd = host(_fro(D_ - D_prev).to(torch.float64))
        nD = host(_fro(D_).to(torch.float64))
        deltas.append(float(np.max(np.ldexp(fd, E))))
        if ref is not None:
            e = host(_fro(D_.to(torch.float64) - ref_f))
            errs.append(float(np.mean(np.ldexp(e, E) ** 2)))
            rels.append(float(np.sqrt(np.sum(e ** 2) / np.sum(ref_norm ** 2))) if np.any(ref_norm > 0)
                        else (0.0 if np.all(e == 0) else math.inf))
        finish, trig = rule.observe(ell, fd=fd, nD=nD, finite=torch.isfinite(flat(D_)).all(-1).all(-1).cpu().numpy(),
                                    lC=host(torch.log2(_fro(C_))), lA=host(info["log2_normA"]),
                                    growth=host(info["log_growth"].to(torch.float64)),
                                    annihilates=host(info["annihilates"]),
                                    cols=info["cols"].cpu().numpy() if "cols" in info else None)
        source = {"cur": flat(D_), "prev": flat(D_prev)}
        if trig:
            band_min, D_fin, err_rel = _spectral_check(As_, Bs_, C_, D_, kA, kB, rule.growth_tensor(C_), rc,
                                                       opts.gamma)
            # the finish D_ℓ + B_ℓ A_ℓ^† C_ℓ relies on the centralized invariant (any data); distributed
            # keeps D_ℓ (its invariant needs consistent data)
            source["fin"] = flat(D_fin) if machines == 1 else flat(D_)
            finish |= rule.resolve(ell, trig, band_min, err_rel)
        for i in rule.write(flat(Dout), finish, source):   # freeze a finished instance (nothing to pool)
            for X_ in (*As_, *Bs_, C_):
                flat(X_)[i] = 0
        if rule.done.all() or ell >= max_iter:
            break
        D_prev = D_
    rule.fill(flat(Dout), flat(D_))
    rule.close(ell)
    if machines > 1 or sketched:   # these regimes reach B A^† C only on consistent data or full column rank
        rule.consistency(*_consistency_level(frame.A0, frame.B0, C, rc), d=d, eps=eps)
    status, level, checks = rule.status, rule.level, rule.checks
    if ref is not None and ell > 0:   # the last entries describe the returned D (finished by the check)
        e = _fro(Dout.to(torch.float64) - ref_f).reshape(-1).cpu().numpy()
        errs[-1] = float(np.mean(np.ldexp(e, E) ** 2))
        rels[-1] = (float(np.sqrt(np.sum(e ** 2) / np.sum(ref_norm ** 2))) if np.any(ref_norm > 0)
                    else (0.0 if np.all(e == 0) else math.inf))
    D_true = _mul_pow2(Dout, frame.E)
    rule.out_of_range(_maxabs(Dout).reshape(-1).to(torch.float64).cpu().numpy(), torch.finfo(io.out_torch), E)
    st = next((s for s in STATUSES[::-1] if s in set(status)), "converged")
    fpr = (d + dp) * n_prime if machines > 1 else 0
    return Result(D=_out(io, D_true), iterations=ell, converged=st == "converged", status=st,
                  delta=np.asarray(deltas, dtype=np.float64),
                  error=np.asarray(errs, dtype=np.float64) if ref is not None else None,
                  rel_error=np.asarray(rels, dtype=np.float64) if ref is not None else None,
                  machines=machines, floats_per_round=fpr, communication=ell * fpr,
                  level=float(np.nanmax(level)) if np.any(np.isfinite(level)) else math.nan,
                  statuses=status.reshape(batch) if batch else None, checks=checks,
                  log2_scale=int(E[0]) if not batch else E.reshape(batch))


# ----------------------------------------------------------------------------------------------
# Public API


def solve(A, B, C, *, sketch: int | None = None, tol: float | None = None, atol: float = 0.0,
          max_iter: int = 1000, seed=0, eta: float = 1 / 3, gamma: float = 1.0,
          rho: str | Callable = "power", rho_scale: float = 1.0, power_iters: int = 5,
          rho_pool: str = "instance", sketch_kind: str = "columns", redraw: bool = True,
          rescale: bool = True, reference=None, rcond: float | None = None) -> Result:
    """Complete D ≈ B A^† C with EAGLE on one machine (Algorithm 1 with M = 1).

    Parameters
    ----------
    A, B, C : arrays (NumPy or torch) of shapes (…, d, n), (…, d', n), (…, d, n'); the same leading
        batch shape.  The result has the input's array type, device and floating dtype.
    sketch : None for the centralized regime (S = I_n).  An int r with 1 <= r <= n for the sketched
        regime: each iteration S is a fresh random selection of r of the n columns (an n×r matrix with
        orthonormal columns); ρ comes from the sketched Ã = A S, and only the selected columns of A and B
        change.  Expect about n/r times more iterations.  The same S is used for every batch member.
    tol, atol : stop at the first ℓ with ‖D_ℓ − D_{ℓ−1}‖_F <= atol + tol·‖D_ℓ‖_F for every batch
        member.  ``tol`` is *relative* (so the rule is scale invariant); the paper's absolute τ
        is ``atol``.  Default tol: 1e-12 in float64, 1e-6 in float32.
    max_iter : the most UPDATE rounds to run.
    seed : int, None or ``numpy.random.Generator``; drives the sketches and power-iteration starts.
    eta, gamma : the step constants η, γ.  The defaults are the Theorem 1 constants η = 1/3, γ = 1.
        The transformer's η ≈ 1, γ ≈ 1.9 are relative to the *batch-maximum* norm; with the
        per-instance ρ they stall (η = 1 sends the top singular value of A to exactly 0) — use
        ``rho_scale`` ≈ 1.5 or ``rho_pool="batch_max"`` on a batch to reproduce their convergence.
    rho : how ‖Ã‖₂ is obtained for ρ = (rho_scale·‖Ã‖₂)⁻².  ``"exact"``: the spectral norm (SVD).
        ``"power"``: ``power_iters`` power iterations on Ã Ãᵀ (d-dimensional vectors), started from a
        seeded Gaussian vector at ℓ = 0 (with 2·power_iters iterations) and warm-started from the previous iteration's vector after that
        (A_ℓ keeps its left singular vectors, so the warm start is nearly exact); the estimate is
        max(‖Ãᵀu‖, ‖Ã‖_F/√min(d, r)), a lower bound of ‖Ã‖₂.  A callable gets the (possibly rescaled)
        torch tensor Ã of shape (…, d, r) and must return ‖Ã‖₂ (a number or a tensor of shape (…)).
    rho_scale : multiply the norm by this factor (> 1 gives smaller, safer steps).
    power_iters : power iterations per UPDATE for ``rho="power"``.
    rho_pool : ``"instance"`` (one ρ per batch member, the theorem's choice) or ``"batch_max"`` (the
        largest norm in the batch for all members, as in the trained transformer).
    sketch_kind : ``"columns"`` (default; column selection, the paper's implementation) or ``"haar"``
        (a Haar-random n×r orthonormal S; converges much worse at small r).
    redraw : redraw S every iteration (default).  ``False`` keeps one S, which cannot converge for
        r < n — only useful to demonstrate that.
    rescale : keep ‖A_ℓ‖_F and ‖B_ℓ‖_F in [2⁻¹⁶, 2¹⁶] by exact power-of-two rescaling (module doc);
        it does not change the iterates in exact arithmetic, only prevents under/overflow.
    reference : optional (…, d', n') target, e.g. ``tasks.nystrom(A, B, C)``; enables ``error`` and
        ``rel_error`` in the result.

    Returns
    -------
    :class:`Result`.  A = 0 returns D = 0 (ρ is set to 0 for a zero Ã).

    Raises
    ------
    ValueError (naming the argument) for non-finite entries, mismatched shapes, sketch outside
    [1, n], tol <= 0, max_iter < 1, eta or gamma <= 0, or an unknown rho / rho_pool / sketch_kind.
    """
    state = _setup([A], [B], C, None, ("A", "B"), sketch=sketch, sketch_kind=sketch_kind, redraw=redraw,
                   eta=eta, gamma=gamma, rho=rho, rho_scale=rho_scale, power_iters=power_iters,
                   rho_pool=rho_pool, max_iter=max_iter, tol=tol, atol=atol, rescale=rescale, seed=seed,
                   reference=reference, rcond=rcond)
    return _run(*state, tol=tol, atol=atol, max_iter=max_iter, machines=1, rcond=rcond)


def solve_distributed(A_blocks: Sequence, B_blocks: Sequence, C, *, tol: float | None = None,
                      atol: float = 0.0, max_iter: int = 1000, seed=0, eta: float = 1 / 3,
                      gamma: float = 1.0, rho: str | Callable = "power", rho_scale: float = 1.0,
                      power_iters: int = 5, rho_pool: str = "instance", rescale: bool = True,
                      reference=None, rcond: float | None = None) -> Result:
    """Distributed EAGLE: machine μ holds the column blocks A^μ (…, d, n_μ), B^μ (…, d', n_μ).

    Each round every machine runs UPDATE on (A^μ, B^μ, C_ℓ, D_ℓ) with its own ρ^μ = ‖A^μ_ℓ‖₂⁻², sends
    its C'^μ, D'^μ ((d + d')·n' floats) to a centre, and the centre broadcasts the averages
    C_{ℓ+1} = mean_μ C'^μ, D_{ℓ+1} = mean_μ D'^μ (summing instead diverges).  The limit is
    B A^† C for A = [A^1 … A^M] when C lies in the column span of A (Theorem 2's assumption); the rate
    is governed by the diversity index α of the machines' ranges (the paper's Theorem 2).

    ``A_blocks`` and ``B_blocks`` are sequences of the same length M >= 1 (see :func:`split_columns`);
    all A^μ have d rows, all B^μ have d' rows.  The other arguments are as in :func:`solve`; the
    result's ``floats_per_round`` and ``communication`` count what each machine sends.
    """
    A_blocks, B_blocks = _as_list("A_blocks", A_blocks), _as_list("B_blocks", B_blocks)
    if len(B_blocks) != len(A_blocks):
        raise ValueError(f"argument B_blocks has {len(B_blocks)} blocks but A_blocks has {len(A_blocks)}")
    state = _setup(A_blocks, B_blocks, C, None, ("A_blocks[{}]", "B_blocks[{}]"), sketch=None,
                   sketch_kind="columns", redraw=True, eta=eta, gamma=gamma, rho=rho, rho_scale=rho_scale,
                   power_iters=power_iters, rho_pool=rho_pool, max_iter=max_iter, tol=tol, atol=atol,
                   rescale=rescale, seed=seed, reference=reference, rcond=rcond)
    return _run(*state, tol=tol, atol=atol, max_iter=max_iter, machines=len(A_blocks), rcond=rcond)


def _as_list(name, blocks) -> list:
    if isinstance(blocks, (np.ndarray, torch.Tensor)) or not isinstance(blocks, Sequence):
        raise ValueError(f"argument {name} must be a list of matrices (one per machine)")
    if len(blocks) < 1:
        raise ValueError(f"argument {name} is empty: need M >= 1 machines")
    return list(blocks)


def diversity_index(A_blocks: Sequence, *, rtol: float | None = None) -> float:
    """The paper's Definition 1: α = smallest positive eigenvalue of (1/M) Σ_μ P_μ.

    P_μ is the orthogonal projector onto range(A^μ) (numerical rank with relative cut-off ``rtol``,
    default max(d, n_μ)·eps, computed in float64).  α = 1 when every machine sees the whole joint
    range; small α (heavily overlapping ranges that only together span it) slows distributed EAGLE
    (Theorem 2: about α⁻¹·log(1/ε) iterations after the burn-in).  Single matrices only (no batch).
    """
    blocks = _as_list("A_blocks", A_blocks)
    Ps = []
    for mu, Am in enumerate(blocks):
        a = to_tensor(f"A_blocks[{mu}]", Am)
        if a.ndim != 2:
            raise ValueError(f"argument A_blocks[{mu}] must be a d×n_μ matrix, got shape {tuple(a.shape)}")
        check_finite(f"A_blocks[{mu}]", a)
        a = a.detach().cpu().to(torch.float64).numpy()
        if a.shape[0] != Ps[0].shape[0] if Ps else False:
            raise ValueError(f"argument A_blocks[{mu}] has {a.shape[0]} rows but A_blocks[0] has {Ps[0].shape[0]}")
        U, sv, _ = np.linalg.svd(a, full_matrices=False)
        cut = (rtol if rtol is not None else max(a.shape) * np.finfo(np.float64).eps) * (sv[0] if sv.size else 0)
        U = U[:, sv > cut] if sv.size and sv[0] > 0 else U[:, :0]
        Ps.append(U @ U.T)
    ev = np.linalg.eigvalsh(sum(Ps) / len(Ps))
    pos = ev[ev > 1e-10]
    return float(pos.min()) if pos.size else 0.0


def split_columns(A, B, machines: int) -> tuple[list, list]:
    """Split the n columns of A and B into ``machines`` contiguous blocks (the distributed layout of
    ``eaglebook._arrays.machine_edges``, shared with the model and the task)."""
    A = A if isinstance(A, (np.ndarray, torch.Tensor)) else np.asarray(to_tensor("A", A))
    B = B if isinstance(B, (np.ndarray, torch.Tensor)) else np.asarray(to_tensor("B", B))
    n = A.shape[-1]
    edges = machine_edges(n, machines)
    if B.shape[-1] != n:
        raise ValueError(f"argument B has {B.shape[-1]} columns but A has {n}")
    return ([A[..., a:b] for a, b in zip(edges[:-1], edges[1:])],
            [B[..., a:b] for a, b in zip(edges[:-1], edges[1:])])


def iterate(A, B, C, D=None, *, sketch: int | None = None, max_iter: int | None = None, seed=0,
            eta: float = 1 / 3, gamma: float = 1.0, rho: str | Callable = "exact", rho_scale: float = 1.0,
            power_iters: int = 5, rho_pool: str = "instance", sketch_kind: str = "columns",
            redraw: bool = True, rescale: bool = True) -> Iterator[Iterate]:
    """Yield every iterate of Algorithm 1 as an :class:`Iterate`, starting with ℓ = 0.

    No stopping rule: it runs until ``max_iter`` rounds (forever when None) or until the caller stops.
    ``A`` and ``B`` may be single matrices (M = 1) or equally long lists of per-machine column blocks
    (distributed; then the yielded A, B are tuples).  ``D`` defaults to 0.  The options are those of
    :func:`solve`.  Iterates have the input's array type.  A and B are yielded as stored, i.e. rescaled
    by powers of two (``rescale=True``, see :class:`Iterate`); ``it.invariant()`` gives
    D_ℓ + B_ℓ A_ℓ^† C_ℓ, which stays equal to B A^† C.  Pass ``rescale=False`` to get Algorithm 1's
    literal iterates (fine for the few dozen iterations of a centralized float64 run).
    """
    multi = isinstance(A, (list, tuple))
    if multi:
        A_l, B_l = _as_list("A", A), _as_list("B", B)
        if len(B_l) != len(A_l):
            raise ValueError(f"argument B has {len(B_l)} blocks but A has {len(A_l)}")
        names = ("A[{}]", "B[{}]")
    else:
        A_l, B_l, names = [A], [B], ("A", "B")
    state = _setup(A_l, B_l, C, D, names, sketch=sketch, sketch_kind=sketch_kind, redraw=redraw, eta=eta,
                   gamma=gamma, rho=rho, rho_scale=rho_scale, power_iters=power_iters, rho_pool=rho_pool,
                   max_iter=max_iter, tol=None, atol=0.0, rescale=rescale, seed=seed, max_iter_none=True)
    return _iterate_gen(*state, multi=multi, max_iter=max_iter)


def _iterate_gen(As, Bs, C, D, ref, io, opts, rng, dims, *, multi, max_iter):
    def scal(s):
        s = s[..., 0, 0]
        return int(s) if s.ndim == 0 else s.cpu().numpy()

    for ell, As_, Bs_, C_, D_, kA, kB in _loop(As, Bs, C, D, opts, rng):
        A_o = tuple(_out(io, a) for a in As_)
        B_o = tuple(_out(io, b) for b in Bs_)
        kA_o = tuple(scal(s) for s in kA)
        kB_o = tuple(scal(s) for s in kB)
        if not multi:
            A_o, B_o, kA_o, kB_o = A_o[0], B_o[0], kA_o[0], kB_o[0]
        yield Iterate(ell, A_o, B_o, _out(io, C_), _out(io, D_), kA_o, kB_o)
        if max_iter is not None and ell >= max_iter:
            return


def update(A, B, C, D, *, eta: float = 1 / 3, gamma: float = 1.0, S=None, rho=None) -> Blocks:
    """One UPDATE of the paper's Algorithm 1; returns ``Blocks(A', B', C', D')``.

    ``S``: None (S = I_n), an n×r matrix, or a 1-D integer array of r distinct column indices (column
    selection).  ``rho``: None for ρ = ‖A S‖₂⁻² (0 when A S = 0), or a number / array broadcastable to
    the batch shape.  Batched and NumPy/torch like :func:`solve`.
    """
    positive("eta", eta)
    positive("gamma", gamma)
    ts, io = prepare({"A": A, "B": B, "C": C, "D": D})
    check_shapes(ts["A"], ts["B"], ts["C"], ts["D"])
    check_batch(ts, "A")
    n = ts["A"].shape[-1]
    cols = Smat = None
    if S is not None:
        St = torch.as_tensor(np.asarray(S) if not isinstance(S, torch.Tensor) else S, device=io.device)
        if St.ndim == 1 and not St.is_floating_point():
            if St.numel() < 1 or int(St.min()) < 0 or int(St.max()) >= n or St.unique().numel() != St.numel():
                raise ValueError(f"argument S must hold distinct column indices in [0, {n})")
            cols = St.long()
        elif St.ndim == 2 and St.shape[0] == n:
            check_finite("S", St)
            Smat = St.to(io.compute)
        else:
            raise ValueError(f"argument S must be an n×r matrix with n = {n} or a 1-D index array, "
                             f"got shape {tuple(St.shape)}")
    At = ts["A"][..., cols] if cols is not None else (ts["A"] @ Smat if Smat is not None else ts["A"])
    if rho is None:
        s = torch.linalg.matrix_norm(At, ord=2, keepdim=True)
        r = torch.where(s > 0, 1.0 / torch.where(s > 0, s, torch.ones_like(s)) ** 2, torch.zeros_like(s))
    else:
        r = torch.as_tensor(rho if isinstance(rho, torch.Tensor) else np.asarray(rho, dtype=np.float64),
                            dtype=io.compute, device=io.device)
        check_finite("rho", r)
        r = r.reshape(r.shape + (1, 1)) if r.ndim else r
    new = _update(ts["A"], ts["B"], ts["C"], ts["D"], eta * r, gamma * r, cols=cols, S=Smat)
    return Blocks(*(_out(io, x) for x in new))


def layerwise(A, B, C, coeffs, *, D=None, readout: str = "eagle") -> list[Blocks]:
    """Run the *extracted per-layer* iteration with given effective step sizes; return all L+1 iterates.

    ``coeffs`` is a sequence of L pairs ``(c_AB, c_CD)``, the products of the trained transformer's
    scalars (the book's chapter 4): c_AB = α¹α² (= −ηρ_ℓ) and c_CD = α¹α³ (= −γρ_ℓ), both negative
    for a converging model.  Layer ℓ applies (S = I, no normalisation, no rescaling)::

        A' = A + c_AB A Aᵀ A       B' = B + c_AB B Aᵀ A
        C' = C + c_CD A Aᵀ C       D' = D − c_CD B Aᵀ C     (readout="eagle": D_L → +B A^† C)

    With ``readout="transformer"`` the last line is D' = D + c_CD B Aᵀ C, the raw D block of the
    transformer's residual stream, which is −D_EAGLE when D₀ = 0 (the read-out sign: the book's reading notes).
    Each coefficient is a number or an array of shape batch (one per instance).  A, B, C are
    (…, d, n), (…, d', n), (…, d, n') NumPy arrays or torch tensors; ``D`` defaults to 0.
    Returns ``[Blocks(A_0, B_0, C_0, D_0), …, Blocks(A_L, …)]`` in the input's type.
    """
    if readout not in ("eagle", "transformer"):
        raise ValueError(f"argument readout={readout!r} must be 'eagle' or 'transformer'")
    named = {"A": A, "B": B, "C": C}
    if D is not None:
        named["D"] = D
    ts, io = prepare(named)
    d, n, dp, n_prime = check_shapes(ts["A"], ts["B"], ts["C"], ts.get("D"))
    batch = check_batch(ts, "A")
    try:
        pairs = [tuple(p) for p in coeffs]
    except TypeError:
        raise ValueError("argument coeffs must be a sequence of (c_AB, c_CD) pairs") from None
    steps = []
    for i, p in enumerate(pairs):
        if len(p) != 2:
            raise ValueError(f"argument coeffs[{i}] must be a pair (c_AB, c_CD), got {len(p)} values")
        pair = []
        for c in p:
            t = c.detach() if isinstance(c, torch.Tensor) else np.asarray(c, dtype=np.float64)
            t = torch.as_tensor(t, dtype=io.compute, device=io.device)
            check_finite(f"coeffs[{i}]", t)
            pair.append(t.reshape(t.shape + (1, 1)) if t.ndim else t)
        steps.append(pair)
    A_, B_, C_ = ts["A"], ts["B"], ts["C"]
    D_ = ts.get("D", torch.zeros(batch + (dp, n_prime), dtype=io.compute, device=io.device))
    sign = 1.0 if readout == "eagle" else -1.0
    out = [Blocks(*(_out(io, x) for x in (A_, B_, C_, D_)))]
    for c_ab, c_cd in steps:
        A_, B_, C_, D_ = _update(A_, B_, C_, D_, -c_ab, -c_cd, d_scale=sign)
        out.append(Blocks(*(_out(io, x) for x in (A_, B_, C_, D_))))
    return out

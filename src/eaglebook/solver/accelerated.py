r"""A faster EAGLE: odd-polynomial conditioning steps with a re-derived D accumulation (beyond the paper).

EAGLE (the paper's Algorithm 1, :mod:`eaglebook.solver.eagle`) interleaves two things in every UPDATE: a
*conditioning* step of A and B by the fixed cubic map σ ↦ σ(1 − ηρσ²), and a *prediction* step that moves
part of the query block C into the output D.  This module keeps that structure and replaces both halves by
better polynomials.  It is a standalone solver (:func:`solve`, :func:`iterate`); the integration into
``eaglebook.solve`` comes later.

Derivation
==========

Notation: A is d×n, B is d'×n, C is d×n', D is d'×n'; the target is D̂* = B A^† C.  Write A = U Σ Vᵀ (thin
SVD over the positive singular values), E = A Aᵀ (d×d) and G = Aᵀ A (n×n).

**1. Any odd polynomial step keeps B A^†.**  Let q be a polynomial with q(σ²) ≠ 0 for every singular value σ
of A, and update

    A' = A q(AᵀA),        B' = B q(AᵀA).

Then A' = U Σ q(Σ²) Vᵀ (the map σ ↦ σ q(σ²) is an odd polynomial of σ, the same singular vectors), so
A'^† = V (Σ q(Σ²))^{-1} Uᵀ and B' A'^† = B V q(Σ²) q(Σ²)^{-1} Σ^{-1} Uᵀ = B A^†.  EAGLE's A-update is
q(λ) = 1 − ηρλ; the Newton–Schulz steps and the Polar Express polynomials below are other choices.  With a
left Gram matrix the same step reads A' = q(AAᵀ) A, and B' = q₀B + (B Aᵀ) s(AAᵀ) A with
q(λ) = q₀ + λ s(λ), which is B q(AᵀA) expanded (so B' is formed from d'×d and d'×n products only).

**2. The prediction step: any correction keeps the invariant.**  For *any* X ∈ R^{d×n'} put Y = AᵀX and

    C' = C − A Y = C − E X,        D' = D + B Y = D + B Aᵀ X.

Then D' + B A^† C' = D + B A^† C + (B − B A^† A) Aᵀ X = D + B A^† C, because A^† A Aᵀ = Aᵀ (A^†A is the
projector onto the row space of A, which contains the columns of Aᵀ).  So

    D_ℓ + B_ℓ A_ℓ^† C_ℓ = B A^† C                                                          (invariant)

holds along the whole iteration, for every data set (consistent or not, any rank), whatever X is chosen.
With X = r(E) C for a polynomial r this is the general form of the brief,

    C' = p(E) C,    D' = D + B Aᵀ r(E) C,    p(λ) = 1 − λ r(λ),

and the relation p = 1 − λr is *necessary* as well: on the direction u_i the invariant needs
σ_i r(σ_i²) + (p(σ_i²) − 1)/σ_i = 0.  EAGLE is r ≡ γρ, p(λ) = 1 − γρλ: its C-update I − γρAAᵀ is what
makes D accumulate; with γ = 1 it removes the top direction of C exactly.

**3. What the iteration count is decided by.**  By the invariant the error is D_ℓ − D̂* = −B_ℓ A_ℓ^† C_ℓ.
All A_ℓ share the singular vectors of A, so with N_ℓ(σ) = Π_j p_j(σ_j²) (σ_j the value of σ at round j)

    D_ℓ − D̂* = −B V diag(N_ℓ(σ_i)/σ_i) Uᵀ C_0 :

the error in direction i falls by p_j(σ_{j,i}²) per round.  A direction is only *harvested* (N shrinks) once
its σ_{j,i} is comparable to the top: any p with p(0) = 1 of low degree has p(λ) ≈ 1 − r(0)λ near 0, and
|p| ≤ 1 must hold on the whole current spectrum.  So there are two jobs: **conditioning** (q_j: bring every
σ up into a known band [b_j, u_j] near the top as fast as possible) and **harvesting** (p_j: make |p_j| small
on that band).  EAGLE does both slowly: its normalised map x ↦ x(3 − x²)/2 grows a small x by 3/2 per round,
and its p_j = 1 − λ/σ_max² leaves a fraction 1 − (b/u)² of a band direction per round.  The C-component
in ker(Aᵀ) is never touched (p(0) = 1) and does not matter (A^† kills it).

**4. The best p given q: Chebyshev on the band.**  The prediction step only multiplies E = A_ℓA_ℓᵀ with
d×n' blocks: for n' ≪ n it costs O(d²n') per degree against O(d²n) for one conditioning GEMM, so a
high-degree p is nearly free.  Given the band [b, u] of the conditioned directions (known from the tracked
bounds below, no SVD), the best p of degree m with p(0) = 1 is the Chebyshev residual polynomial

    p_m(λ) = T_m((u² + b² − 2λ)/(u² − b²)) / T_m((u² + b²)/(u² − b²)),

with |p_m| ≤ 2 ((u − b)/(u + b))^m on the band and 0 < p_m ≤ 1 on [0, b²] (so directions that have not
reached the band are never hurt).  It is computed by m steps of the Chebyshev iteration for E X = C_ℓ
started at X = 0, which returns X = r_m(E) C_ℓ; the C and D updates are then those of item 2, so the
invariant holds exactly.  The choice of p is thus decoupled from q: q only has to keep the band invariant
and to pull new directions into it quickly.

**5. The best q: odd minimax polynomials with a cushion.**  After normalising so that every σ of A_ℓ lies in
[0, 1] (divide by s = u(1 + δ), u an upper bound of ‖A_ℓ‖₂ and δ = 1% of slack), a step is an odd
polynomial p(x) = x q(x²) = Σ c_i x^{2i+1}.  Following Chen & Chow (a scaled Newton–Schulz) and Amsel,
Persson, Musco & Gower (*The Polar Express*, arXiv 2505.16932), the step for the design interval [a, 1] is

    p_a = argmin over odd p of degree 2k+1 of max_{x ∈ [a, 1]} |1 − p(x)|,

found by the Remez exchange (:func:`odd_minimax`).  It equioscillates: it maps [a, 1] onto
[1 − E, 1 + E] and grows x < a by the factor c₀ = p'(0).  Two facts decide how to use it here:

* The growth that matters is that of a small σ *relative to the new top*, c₀/(1 + E).  For tiny a it is
  4.26 per round at degree 5 (2.60 at degree 3, 5.92 at degree 7), against 1.5 for EAGLE's cubic; per GEMM
  (k + 1 GEMMs per round) degrees 3 and 5 are equally good (0.48 nepers) and 2.4 times EAGLE (0.20).
* A minimax step for a tiny a maps an interior point of [a, 1] down to 1 − E ≈ c₀a: it nearly annihilates
  a direction that was already conditioned (a *numerical* hazard; the step also amplifies an error of the
  top bound by p'(1) ≈ 24 per round).  We therefore design for a = max(cushion, l/s) with a cushion c
  (default 0.1): every direction above c·s stays in the band [1 − E, 1 + E] (for c = 0.1 at degree 5:
  E = 0.45, band ratio (1 − E)/(1 + E) = 0.38), and smaller directions still grow by c₀/((1 + E)(1 + δ)) =
  3.82 per round (c = 0.2: E = 0.22, ratio 0.64, growth 3.44).  The band is invariant, so the harvest of
  item 4 has fixed, known bounds and removes all but 2·E^m of every band direction per round.

Because no lower bound of the spectrum is needed for the cushioned step, the iteration adapts to the actual
κ(A): a direction σ enters the band after about log(c/σ)/log 3.82 rounds and is harvested within one or two
more.  The tracked bounds (exact in exact arithmetic) are: u_{ℓ+1} = max p on [0, 1/(1+δ)], the band floor
b_{ℓ+1} = min p on [a, 1/(1+δ)], and the certified floor l_{ℓ+1} = min p on [l_ℓ/s, 1/(1+δ)] started at
l_0 = ``lower``·σ̂_0 (``lower`` defaults to the pseudo-inverse cut-off rcond).  When l_ℓ reaches the band
every singular value above ``lower``·‖A‖ is in it.  ``certify=True`` asks more (:func:`solve`): that *every*
direction of A_ℓ is in the band, checked with Chebyshev probes, before rounding noise in a null direction of a
rank-deficient A (about u·G after a growth G) could have grown into it; otherwise the status is
``rank_deficient``.  A polynomial
cannot separate a singular value of 10⁻¹⁴ from 0 without being of degree ~10⁷, so without an SVD this
certificate needs about log(c/rcond)/log 3.82 rounds (23 in float64, 8 in float32 at n = 240) whatever κ
is; the accuracy itself is reached much earlier (it depends on the actual κ).  ``eaglebook.solve`` certifies with
one SVD of A_ℓ instead (its spectral check); the integration can reuse that.

Steps offered (``step``): ``"polar-express"`` (the cushioned minimax step of degree 3, 5 or 7; degree 3 is
the optimal scaled cubic, Chen & Chow's kind of step), ``"quintic"`` (the fixed quintic Newton–Schulz step
x(15 − 10x² + 3x⁴)/8, design-free, growth 1.875 per round), ``"cubic"`` (the fixed cubic x(3 − x²)/2, i.e.
EAGLE's own A-map, growth 1.5): each with the Chebyshev harvest of degree ``harvest_degree``.

Implementation notes
====================
* One torch core; NumPy in → NumPy out, torch in → torch out on its device; float64 and float32 computed
  natively (``eaglebook._arrays.prepare``), leading batch dimensions supported (per-instance bounds and
  coefficients).
* The Gram matrix is taken on the smaller side: E = AAᵀ when d <= n (then A' = Q A with Q = q(E), and B'
  as in item 1), G = AᵀA otherwise (A' = A Q, B' = B Q).  GEMMs per round (products with all dimensions
  >= min(d, n)): k + 1 for degree 2k + 1 (cubic 2, quintic 3, septic 4); EAGLE needs 2.
* ‖A_ℓ‖₂ is tracked (the scalar recursion above) and *checked* every round by a warm-started power
  iteration on the Gram matrix already formed (a lower bound σ̂); if σ̂ exceeds the tracked bound (rounding,
  or a power estimate at ℓ = 0 that was more than 3% low) the bound is raised to 1.02 σ̂.  The initial bound
  is 1.02 times the power estimate (30 iterations on the Gram matrix).
* Exact power-of-two frames, as in :mod:`eaglebook.solver.eagle`: A, B, C are first scaled by powers of two
  (largest entry in [1/2, 1)); A_ℓ stays normalised (‖A_ℓ‖ <= 2) by the step itself; B_ℓ keeps its own
  power-of-two exponent k_B (its component in the right kernel of A grows by c₀/s per round and is never
  shrunk) and the D increment is multiplied by 2^{k_B}.  Powers of two are exact, so in exact arithmetic
  nothing changes.
* Accuracy floor: a direction with σ/σ_max = 1/κ carries a relative rounding error of about u·κ per round
  while it is small, so with a query block spread over all directions the floor is ~u·κ(A) relative, as for
  EAGLE (measured at n = 240 against the exact target: 2e-9 here and 9e-10 for EAGLE at κ = 1e8, 5e-5 and
  4e-5 at κ = 1e12); with C = A G (``tasks.make_problem``, small directions weighted by σ) both reach ~1e-15
  at every κ up to 1e12.  In float32 the floor is about twice EAGLE's (5e-7 against 3e-7 at κ ≤ 1e4): the
  step's coefficients are larger (Σ|c_i| = 29 at degree 5, cushion 0.1).
* There is no hard pseudo-inverse cut-off (a polynomial filter cannot make one): singular values below
  ``rcond``·‖A‖ (rounding-level ones of a rank-deficient A) are grown like all others and start to be
  harvested after about log(cushion/σ)/log 3.8 rounds, which matters only for inconsistent data (B or C
  outside A's row or column space), as for EAGLE.  ``rcond`` only sets the default of ``lower``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterator, NamedTuple

import numpy as np
import torch

from .._arrays import as_rng, check_batch, check_shapes, int_in, is_number, positive, prepare
from .._arrays import out as _out
from .norms import exponent, mul_pow2
from .result import Result
from .stopping import unrepresentable

__all__ = [
    "STEPS", "HARVESTS", "DEGREES", "DEFAULT_TOL", "odd_minimax", "newton_schulz_coefficients", "step_coefficients",
    "poly_eval", "poly_range", "chebyshev_residual", "Bounds", "next_bounds", "schedule", "gemms_per_round",
    "flops_per_round", "PolyResult", "PolyIterate", "solve", "iterate",
]

#: The conditioning steps (see the module docstring).
STEPS = ("polar-express", "quintic", "cubic")
#: The prediction steps: the Chebyshev residual polynomial on the tracked band (default), or EAGLE's own
#: C/D step p(λ) = 1 − λ/u² (γ = 1 with the tracked bound u; ``harvest_degree`` is then ignored).
HARVESTS = ("chebyshev", "eagle")
#: Degrees offered for ``step="polar-express"``.
DEGREES = (3, 5, 7)
#: Default relative stopping tolerance per compute dtype (as for ``eaglebook.solve``).
DEFAULT_TOL = {torch.float64: 1e-12, torch.float32: 1e-6}
#: Slack between the tracked bound u of ‖A_ℓ‖ and the normalisation s = u(1 + SLACK).
SLACK = 0.01
#: The power-iteration estimate (a lower bound) is multiplied by this to serve as an upper bound.
POWER_MARGIN = 1.02
_COLD_POWER = 30
_RESCALE = (2.0 ** -16, 2.0 ** 16)
#: The certificate's noise model: rounding puts about NOISE·u·‖A_ℓ‖ into every direction of A_ℓ (the null
#: directions of a rank-deficient A included), and such a direction then grows like every small one (by the
#: tracked growth G).  The certificate stops trusting the band once NOISE·u·G could exceed NOISE_LEVEL:
#: measured, the rounding-level part of the null space of rank-deficient A (d up to 200) stays below 10·u·G.
NOISE = 64.0
NOISE_LEVEL = 1e-2
#: Gaussian probe vectors of the band check (:meth:`_Engine.below_band`), and the level of ‖p(Gram) g‖²/‖g‖²
#: (the Chebyshev residual polynomial on the band: ≈ 1 on a direction below the band, ≈ 0 in it) above which a
#: direction below the band is declared: with one such direction the mean over PROBES Gaussian probes is a
#: χ²_8/8 variable, below 0.01 with probability < 1e-9.
PROBES = 8
PROBE_LEVEL = 1e-2


# ----------------------------------------------------------------------------------------------
# Odd polynomials (scalar work, NumPy float64)


def poly_eval(c, x):
    """p(x) = Σ_i c_i x^{2i+1} (Horner in x²), for a NumPy array or number x."""
    x = np.asarray(x, dtype=np.float64)
    y, s = x * x, np.zeros_like(x)
    for ci in np.asarray(c, dtype=np.float64)[::-1]:
        s = s * y + ci
    return s * x


def _critical_points(c, lo, hi):
    """Real x in (lo, hi) with p'(x) = Σ c_i (2i+1) x^{2i} = 0 (a polynomial in y = x²)."""
    dc = np.array([ci * (2 * i + 1) for i, ci in enumerate(c)], dtype=np.float64)
    if dc.size < 2:
        return np.zeros(0)
    y = np.roots(dc[::-1])
    y = y[np.abs(y.imag) <= 1e-9 * np.maximum(1.0, np.abs(y))].real
    x = np.sqrt(y[y > 0])
    return np.sort(x[(x > lo) & (x < hi)])


def poly_range(c, lo: float, hi: float) -> tuple[float, float]:
    """(min, max) of the odd polynomial p on [lo, hi] (0 <= lo <= hi), exactly up to rounding: the
    endpoints and the real critical points inside."""
    xs = np.concatenate([[lo, hi], _critical_points(c, lo, hi)])
    v = poly_eval(c, xs)
    return float(v.min()), float(v.max())


def newton_schulz_coefficients(degree: int) -> np.ndarray:
    """The Newton–Schulz polynomial of odd degree 2k+1 for the polar factor: x·Σ_{i<=k} binom(2i, i)4^-i
    (1 − x²)^i, the Taylor truncation of x(1 − (1 − x²))^{-1/2}; (3/2, −1/2) for degree 3 and
    (15/8, −10/8, 3/8) for degree 5.  Returns c_0..c_k of Σ c_i x^{2i+1}."""
    k = _half_degree(degree)
    out = np.zeros(k + 1)
    for i in range(k + 1):
        t = math.comb(2 * i, i) / 4 ** i
        for j in range(i + 1):
            out[j] += t * math.comb(i, j) * (-1) ** j
    return out


def _half_degree(degree) -> int:
    if isinstance(degree, bool) or not isinstance(degree, (int, np.integer)) or degree < 3 or degree % 2 == 0:
        raise ValueError(f"argument degree={degree!r} must be an odd integer >= 3")
    return (int(degree) - 1) // 2


@lru_cache(maxsize=512)
def _minimax(a: float, k: int) -> tuple[tuple, float]:
    """Remez exchange for min over odd p of degree 2k+1 of max_{[a, 1]} |1 − p| (0 < a < 1)."""
    j = np.arange(k + 2)
    x = a + (1 - a) * (1 - np.cos(np.pi * j / (k + 1))) / 2          # Chebyshev extrema as the start
    sign = (-1.0) ** j
    c = E = None
    for _ in range(100):
        M = np.column_stack([x ** (2 * i + 1) for i in range(k + 1)] + [sign])
        sol = np.linalg.solve(M, np.ones(k + 2))        # p(x_j) + (−1)^j E = 1: p(a) = 1 − E, alternating
        c, E = sol[:k + 1], float(sol[k + 1])
        inner = _critical_points(c, a, 1.0)
        if inner.size != k:
            raise ArithmeticError(f"Remez exchange lost the alternation (a={a}, degree {2 * k + 1})")
        xn = np.concatenate([[a], inner, [1.0]])
        if np.max(np.abs(xn - x)) <= 1e-15:
            break
        x = xn
    return tuple(float(v) for v in c), E


def odd_minimax(a: float, degree: int = 5) -> tuple[np.ndarray, float]:
    """The odd polynomial p of the given degree that best approximates 1 on [a, 1] in the max norm.

    Returns ``(c, E)``: the coefficients c_0..c_k of p(x) = Σ c_i x^{2i+1} and E = max_{[a,1]} |1 − p|.
    p equioscillates k + 2 times on [a, 1], starting with p(a) = 1 − E and ending with p(1) = 1 + E for
    even k (1 − E for odd k); it is increasing on [0, a] with slope c_0 at 0.  For a close to 1 (the
    exchange is then ill-posed) the Newton–Schulz polynomial of the degree is returned, with its E.
    ``a`` in (0, 1); cached.
    """
    k = _half_degree(degree)
    if not is_number(a) or not 0 < float(a) < 1:
        raise ValueError(f"argument a={a!r} must be a number in (0, 1)")
    a = float(a)
    if a < 1 - 1e-6:
        try:
            c, E = _minimax(a, k)
            if all(math.isfinite(v) for v in c) and 0 <= E < 1:
                return np.array(c), E
        except (ArithmeticError, np.linalg.LinAlgError):
            pass
    c = newton_schulz_coefficients(degree)
    lo, hi = poly_range(c, a, 1.0)
    return c, max(1 - lo, hi - 1)


def step_coefficients(step: str, a: float, degree: int = 5) -> np.ndarray:
    """Coefficients of the normalised conditioning step for design interval [a, 1] (see the module doc):
    ``"polar-express"``: :func:`odd_minimax` of ``degree``; ``"quintic"``/``"cubic"``: the fixed
    Newton–Schulz polynomials (``a`` and ``degree`` are ignored)."""
    if step == "polar-express":
        return odd_minimax(a, degree)[0]
    if step == "quintic":
        return newton_schulz_coefficients(5)
    if step == "cubic":
        return newton_schulz_coefficients(3)
    raise ValueError(f"argument step={step!r} must be one of {STEPS}")


def chebyshev_residual(lam, lo: float, hi: float, m: int):
    """The Chebyshev residual polynomial of degree m on [lo, hi] (0 < lo <= hi), normalised to 1 at 0:
    T_m((hi + lo − 2λ)/(hi − lo)) / T_m((hi + lo)/(hi − lo)); (1 − λ/hi)^m when lo = hi."""
    lam = np.asarray(lam, dtype=np.float64)
    if m == 0:
        return np.ones_like(lam)
    if hi - lo <= 1e-14 * hi:
        return (1 - lam / hi) ** m

    def T(t):
        t = np.asarray(t, dtype=np.float64)
        inside = np.cos(m * np.arccos(np.clip(t, -1, 1)))
        outside = np.cosh(m * np.arccosh(np.maximum(np.abs(t), 1))) * np.sign(t) ** m
        return np.where(np.abs(t) <= 1, inside, outside)

    return T((hi + lo - 2 * lam) / (hi - lo)) / T((hi + lo) / (hi - lo))


class Bounds(NamedTuple):
    """Tracked bounds of the singular values of A_ℓ (valid in exact arithmetic): every singular value is
    <= ``u``; the directions of the band are in [``b``, ``u``]; every singular value that started above
    ``lower``·‖A_0‖ is >= ``l``."""
    u: float
    b: float
    l: float


def _design(bounds: Bounds, cushion: float, slack: float) -> float:
    """The design point a = max(cushion, l/s) of the next step (normalised by s = u(1 + slack))."""
    s = bounds.u * (1 + slack)
    return min(max(cushion, bounds.l / s), 1 - 1e-9)


def next_bounds(c, bounds: Bounds, a: float, slack: float = SLACK) -> Bounds:
    """The bounds after one step x ↦ p(x) applied to A_ℓ/s, s = u(1 + slack), with design point ``a``.

    u' = max p on [0, 1/(1+slack)]; b' = min p on [a, 1/(1+slack)] (the new band, which contains the image
    of the old one because b >= a·s); l' = min p on [l/s, 1/(1+slack)]."""
    s = bounds.u * (1 + slack)
    top = 1 / (1 + slack)
    u = poly_range(c, 0.0, top)[1]
    b = poly_range(c, min(a, top), top)[0]
    l = poly_range(c, min(bounds.l / s, top), top)[0]
    return Bounds(u, min(b, u), min(l, b))


def schedule(step: str = "polar-express", rounds: int = 30, *, degree: int = 5, cushion: float = 0.1,
             lower: float = 1e-14, slack: float = SLACK) -> list[dict]:
    """The scalar side of :func:`solve` for ‖A_0‖₂ = 1 known exactly: per round the design point a, the
    coefficients of the step, and the tracked bounds after it.  Pure; no matrices.  Returns a list of
    dicts with keys ``a``, ``coefficients``, ``bounds`` (:class:`Bounds` after the step), ``growth``
    (p'(0)/(u'(1 + slack)): the factor by which a small singular value grows relative to the next
    normalisation) and ``band_ratio`` (b'/u')."""
    _check_design(step, degree, cushion, lower)
    int_in("rounds", rounds, 1)
    bd = Bounds(1.0, min(1.0, cushion * (1 + slack)), lower)
    out = []
    for _ in range(rounds):
        a = _design(bd, cushion, slack)
        c = step_coefficients(step, a, degree)
        new = next_bounds(c, bd, a, slack)
        out.append(dict(a=a, coefficients=c, bounds=new, growth=c[0] / (new.u * (1 + slack)),
                        band_ratio=new.b / new.u))
        bd = new
    return out


def gemms_per_round(step: str = "polar-express", degree: int = 5) -> int:
    """Products with all three dimensions >= min(d, n) per round: the Gram matrix, k − 1 powers of it for
    degree 2k + 1, and the product with A (EAGLE: 2)."""
    k = 2 if step == "quintic" else 1 if step == "cubic" else _half_degree(degree)
    return k + 1


def flops_per_round(d: int, n: int, d_prime: int, n_prime: int, *, step: str = "polar-express",
                    degree: int = 5, harvest_degree: int = 8, power_iters: int = 4) -> dict:
    """Flop model of one round (a multiply–add counts 2), by part.

    With g = min(d, n) (the Gram side), h = max(d, n) and k = (degree − 1)/2: ``gram`` 2g²h (the Gram
    matrix), ``powers`` (k − 1)·2g³ (the powers of it in Q = q(Gram)), ``apply`` 2g²h (Q·A or A·Q),
    ``B`` B's update (4d'dn + 2d'd² [k >= 2] for d <= n, else 2d'n²), ``harvest`` (m − 1) products of the
    Gram operator with d×n' blocks (2d²n' each for d <= n, 4dnn' via A and Aᵀ otherwise) plus the final
    corrections Y = AᵀX, C − AY, BY (4dnn' + 2d'nn'), ``power`` the norm check ((power_iters + 1)·2g²).
    ``condition`` is gram + powers + apply + B, ``total`` adds harvest and power."""
    k = gemms_per_round(step, degree) - 1
    int_in("harvest_degree", harvest_degree, 1)
    g, h = min(d, n), max(d, n)
    out = dict(gram=2 * g * g * h, powers=(k - 1) * 2 * g ** 3, apply=2 * g * g * h)
    if d <= n:
        out["B"] = 4 * d_prime * d * n + (2 * d_prime * d * d if k >= 2 else d_prime * d)
        op = 2 * d * d * n_prime
    else:
        out["B"] = 2 * d_prime * n * n
        op = 4 * d * n * n_prime
    out["harvest"] = (harvest_degree - 1) * op + 4 * d * n * n_prime + 2 * d_prime * n * n_prime
    out["power"] = (power_iters + 1) * 2 * g * g
    out["condition"] = out["gram"] + out["powers"] + out["apply"] + out["B"]
    out["total"] = out["condition"] + out["harvest"] + out["power"]
    return out


# ----------------------------------------------------------------------------------------------
# Results


@dataclass
class PolyResult(Result):
    """What :func:`solve` returns: a :class:`eaglebook.solver.Result` (the package's one result type) with this
    solver's own fields added.

    The fields of :class:`~eaglebook.solver.Result` it fills:

    D : the completion D_L ≈ B A^† C (input's array type, device and floating dtype).
    iterations : rounds run (each: one harvest; all but the last also one conditioning step).
    converged : ``status == "converged"``.
    status : ``"converged"`` (the rule of :func:`solve` held), ``"max_iter"``, ``"out_of_range"`` (D was found but
        the output dtype cannot hold it), ``"rank_deficient"`` (``certify``:
        a direction of A_ℓ stayed below the band until the growth cap, so it cannot be told from rounding; D is
        not certified), ``"diverged"`` (the power check found ‖A_ℓ‖ above 4× its tracked bound) or
        ``"non_finite"``; a batch reports its worst member's.
    statuses : per batch member, or None for a single problem.
    delta : ‖D_ℓ − D_{ℓ−1}‖_F per round (max over a batch), in the input's units.
    rel_error : ‖D_ℓ − reference‖_F/‖reference‖_F per round (whole batch), or None.

    certify : ``"gemm"`` when :func:`solve` ran with ``certify=True`` (its band check is products only), else
        ``"none"``.

    The others keep their defaults (``error`` None, ``level`` nan, one machine, no checks or communication);
    :func:`eaglebook.solve` with an accelerated ``conditioning`` fills ``error``.  Its own fields:

    gemms : big products (all dimensions >= min(d, n)) done, in total.
    flops : the flop model's total over the run (:func:`flops_per_round`, plus the initial Gram and power
        iteration).
    certified : per instance: with ``certify``, whether the band check found every direction of A_ℓ in the
        band (A has full rank above the cut-off); without it, whether the tracked floor had reached the band
        when the solve stopped (every singular value above ``lower``·‖A‖ was then conditioned, in exact
        arithmetic).
    bounds : the tracked :class:`Bounds` of the last round (first batch member, in the solver's
        power-of-two frame, where the largest entry of A_0 is in [1/2, 1)).
    step, degree : the conditioning step used.
    coefficients : per conditioning step, the coefficients c_0..c_k of the normalised odd polynomial
        (first batch member).
    """

    gemms: int = 0
    flops: int = 0
    certified: object = False
    bounds: Bounds | None = None
    step: str = "polar-express"
    degree: int = 5
    coefficients: list = field(default_factory=list)


class PolyIterate(NamedTuple):
    """One state of :func:`iterate` (after round ℓ's harvest and conditioning step), in the input's units
    and float64 NumPy: A_ℓ, B_ℓ, C_ℓ, D_ℓ of the iteration, and the tracked :class:`Bounds` of the singular
    values of this A_ℓ.  ``invariant()`` is D_ℓ + B_ℓ A_ℓ^† C_ℓ."""
    ell: int
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    bounds: Bounds

    def invariant(self, rcond: float | None = None) -> np.ndarray:
        """D_ℓ + B_ℓ A_ℓ^† C_ℓ in float64 (pseudo-inverse cut-off ``rcond``, default max(d, n)·eps)."""
        rt = rcond if rcond is not None else max(self.A.shape[-2:]) * np.finfo(np.float64).eps
        A = torch.as_tensor(self.A)
        return self.D + self.B @ torch.linalg.pinv(A, rtol=rt).numpy() @ self.C


# ----------------------------------------------------------------------------------------------
# The torch core


def _maxabs(X):
    return X.abs().amax(dim=(-2, -1), keepdim=True)


def _fro(X):
    m = _maxabs(X)
    ms = torch.where(m > 0, m, torch.ones_like(m))
    return m * torch.linalg.matrix_norm(X / ms, "fro", keepdim=True)


def _scalar_t(v, like):
    """A per-instance NumPy array (batch shape) → tensor of shape batch + (1, 1) in like's dtype/device."""
    return torch.as_tensor(np.asarray(v, dtype=np.float64), dtype=like.dtype, device=like.device)[..., None, None]


def _power(M, v, iters):
    """``iters`` power iterations on the PSD matrix M (…, g, g) from v (…, g, 1); returns (λ̂, v): λ̂ a lower
    bound of λ_max(M) (the larger of the Rayleigh quotient and ‖M‖_F/√g), batch + (1, 1)."""
    tiny = torch.finfo(M.dtype).tiny
    for _ in range(iters):
        v = M @ v
        v = v / torch.linalg.vector_norm(v, dim=-2, keepdim=True).clamp_min(tiny)
    rq = (v.mT @ (M @ v)).clamp_min(0)
    fro = _fro(M) / math.sqrt(M.shape[-1])
    return torch.maximum(rq, fro), v


def _horner_S(M, a):
    """S = Σ_{i>=1} a_i M^{i−1} (a: list of tensors batch + (1, 1)); None if it is the scalar a_1."""
    k = len(a) - 1
    if k == 1:
        return None
    S = a[k] * M
    S.diagonal(dim1=-2, dim2=-1).add_(a[k - 1][..., 0])
    for i in range(k - 2, 0, -1):
        S = M @ S
        S.diagonal(dim1=-2, dim2=-1).add_(a[i][..., 0])
    return S


def _chebyshev(apply_E, C, lo2, hi2, m):
    """m steps of the Chebyshev iteration for E X = C from X = 0 with spectrum bounds [lo2, hi2] (tensors
    batch + (1, 1)); returns X = r_m(E) C, whose residual C − E X is the Chebyshev residual polynomial."""
    theta = (hi2 + lo2) / 2
    delta = (hi2 - lo2) / 2
    flat = delta <= 1e-12 * theta
    delta = torch.where(flat, theta * 1e-12, delta)
    sigma1 = theta / delta
    rho = 1 / sigma1
    R = C
    P = R / theta
    X = torch.zeros_like(C)
    for j in range(m):
        X = X + P
        if j == m - 1:
            break
        R = R - apply_E(P)
        rho_new = 1 / (2 * sigma1 - rho)
        P = (rho_new * rho) * P + (2 * rho_new / delta) * R
        rho = rho_new
    return X


class _State(NamedTuple):
    A: torch.Tensor
    B: torch.Tensor
    C: torch.Tensor
    D: torch.Tensor
    kB: torch.Tensor          # B_true = 2^kB · B (stored), batch + (1, 1), int64


def _check_design(step, degree, cushion, lower):
    if step not in STEPS:
        raise ValueError(f"argument step={step!r} must be one of {STEPS}")
    if step == "polar-express" and degree not in DEGREES:
        raise ValueError(f"argument degree={degree!r} must be one of {DEGREES} for step='polar-express'")
    if not is_number(cushion) or not 1e-3 <= float(cushion) <= 0.9:
        raise ValueError(f"argument cushion={cushion!r} must be a number in [0.001, 0.9]")
    if not is_number(lower) or not 0 < float(lower) < 1:
        raise ValueError(f"argument lower={lower!r} must be a number in (0, 1)")


class _Engine:
    """The iteration on torch tensors in the power-of-two frame (see :func:`solve`)."""

    def __init__(self, A, B, C, *, step, degree, cushion, harvest_degree, lower, power_iters, rng, harvest):
        self.step, self.degree, self.cushion = step, degree, float(cushion)
        self.eagle_harvest = harvest == "eagle"
        self.m = 1 if self.eagle_harvest else harvest_degree
        self.power_iters = power_iters
        d, n = A.shape[-2:]
        self.left = d <= n
        self.batch = tuple(A.shape[:-2])
        self.nb = max(1, math.prod(self.batch))
        self.gemms = 0
        self.flops = 0
        self.coefficients = []
        dims = (d, n, B.shape[-2], C.shape[-1])
        self.dims = dims
        self.model = flops_per_round(*dims, step=step, degree=degree, harvest_degree=self.m,
                                     power_iters=power_iters)
        g = d if self.left else n
        M = self._gram(A)
        v = torch.as_tensor(rng.standard_normal(self.batch + (g, 1)), dtype=A.dtype, device=A.device)
        lam, self.v = _power(M, v, _COLD_POWER)
        self.flops += _COLD_POWER * 2 * g * g + 2 * g * g * max(d, n)
        sig = torch.sqrt(lam).reshape(-1).to(torch.float64).cpu().numpy()
        self.zero = sig == 0
        u = np.where(self.zero, 1.0, sig * POWER_MARGIN)
        self.bounds = [Bounds(float(ui), float(min(1.0, cushion * (1 + SLACK)) * ui), float(lower * si) if si > 0 else 0.0)
                       for ui, si in zip(u, sig)]
        self.M = M
        self.diverged = np.zeros(self.nb, bool)
        self.log_growth = np.zeros(self.nb)     # log of the growth of a small singular value relative to u
        self.rng = rng
        self.state = _State(A, B, C, torch.zeros(self.batch + (B.shape[-2], C.shape[-1]), dtype=A.dtype,
                                                 device=A.device),
                            torch.zeros(self.batch + (1, 1), dtype=torch.int64, device=A.device))

    # ---- pieces
    def _gram(self, A):
        self.gemms += 1
        return A @ A.mT if self.left else A.mT @ A

    def check_norm(self):
        """Warm power iteration on the current Gram matrix; raise the tracked u where it is exceeded."""
        lam, self.v = _power(self.M, self.v, self.power_iters)
        self.flops += self.model["power"]
        sig = torch.sqrt(lam).reshape(-1).to(torch.float64).cpu().numpy()
        for i, (bd, s) in enumerate(zip(self.bounds, sig)):
            if s > 4 * bd.u:
                self.diverged[i] = True
            if s > bd.u:
                self.bounds[i] = Bounds(s * POWER_MARGIN, bd.b, bd.l)

    def harvest(self):
        """Chebyshev prediction step on the band; returns the D increment."""
        A, B, C, D, kB = self.state
        like = A
        lo2 = _scalar_t(np.array([(b.u if self.eagle_harvest else b.b) ** 2 for b in self.bounds]).reshape(self.batch),
                        like)
        hi2 = _scalar_t(np.array([b.u ** 2 for b in self.bounds]).reshape(self.batch), like)
        if self.left:
            M = self.M
            apply_E = lambda X: M @ X
        else:
            apply_E = lambda X: A @ (A.mT @ X)
        X = _chebyshev(apply_E, C, lo2, hi2, self.m)
        self.flops += self.model["harvest"]
        Y = A.mT @ X
        C2 = C - A @ Y
        dD = mul_pow2(B @ Y, kB)
        zero = torch.as_tensor(self.zero.reshape(self.batch), device=A.device)[..., None, None]
        dD = torch.where(zero, torch.zeros_like(dD), dD)
        C2 = torch.where(zero, C, C2)
        self.state = _State(A, B, C2, D + dD, kB)
        return dD

    def condition(self):
        """One odd-polynomial step of A and B; updates the tracked bounds and forms the next Gram matrix."""
        A, B, C, D, kB = self.state
        like = A
        coefs, designs = [], []
        for bd in self.bounds:
            a = _design(bd, self.cushion, SLACK)
            designs.append(a)
            coefs.append(step_coefficients(self.step, a, self.degree))
        coefs_np = np.array(coefs)                                   # (nb, k+1)
        s = np.array([bd.u * (1 + SLACK) for bd in self.bounds])
        k = coefs_np.shape[1] - 1
        scaled = coefs_np / s[:, None] ** (2 * np.arange(k + 1) + 1)[None, :]   # q_s(λ) = Σ c_i s^-(2i+1) λ^i
        a_t = [_scalar_t(scaled[:, i].reshape(self.batch), like) for i in range(k + 1)]
        M = self.M
        S = _horner_S(M, a_t)
        if S is None:
            Q = a_t[1] * M
        else:
            Q = M @ S
            self.gemms += 1
        self.gemms += max(0, k - 2)
        Q.diagonal(dim1=-2, dim2=-1).add_(a_t[0][..., 0])
        if self.left:
            A2 = Q @ A
            V = B @ A.mT
            BS = V * a_t[1] if S is None else V @ S
            B2 = a_t[0] * B + BS @ A
        else:
            A2 = A @ Q
            B2 = B @ Q
        self.gemms += 1
        self.flops += self.model["condition"]
        self.coefficients.append(coefs_np[0])
        self.bounds = [next_bounds(c, bd, a, SLACK) for c, bd, a in zip(coefs, self.bounds, designs)]
        self.log_growth += np.log([c[0] / (bd.u * (1 + SLACK)) for c, bd in zip(coefs, self.bounds)])
        # B keeps its own power-of-two exponent (its part in ker A grows)
        fB = _fro(B2)
        lo, hi = _RESCALE
        out = ((fB < lo) | (fB > hi)) & (fB > 0)
        if bool(out.any()):
            sh = torch.where(out, -torch.round(torch.log2(torch.where(out, fB, torch.ones_like(fB)))),
                             torch.zeros_like(fB)).to(torch.int64)
            B2 = mul_pow2(B2, sh)
            kB = kB - sh
        zero = torch.as_tensor(self.zero.reshape(self.batch), device=A.device)[..., None, None]
        A2 = torch.where(zero, A, A2)
        B2 = torch.where(zero, B, B2)
        self.state = _State(A2, B2, C, D, kB)
        self.M = self._gram(A2)

    def certified(self) -> np.ndarray:
        return np.array([bd.l >= bd.b * (1 - 1e-12) for bd in self.bounds]) | self.zero

    def below_band(self) -> np.ndarray:
        """Per instance: does A_ℓ have a direction below the tracked band [b, u]?  Products only: the Chebyshev
        residual polynomial p of the band (p(0) = 1, |p| <= 1e-3/√g on the band) applied to :data:`PROBES`
        Gaussian vectors on the Gram side; the mean of ‖p(Gram) g‖²/‖g‖² is about the number of directions below
        the band (each counts ≈ p(x²)² ≈ 1 when x ≪ b), ≈ 0 when every direction is in the band."""
        M = self.M
        g = M.shape[-1]
        lo = np.array([max(bd.b, 0.0) for bd in self.bounds])
        hi = np.array([bd.u for bd in self.bounds])
        ratio = np.where(lo > 0, (hi - lo) / np.maximum(hi + lo, 1e-300), 1.0)
        target = math.sqrt(1e-3 / (4 * g))
        with np.errstate(divide="ignore"):
            need = np.where(ratio < 0.98, np.log(target) / np.log(np.clip(ratio, 1e-300, 0.98)), math.inf)
        m = int(min(256, max(1, math.ceil(float(np.max(np.where(self.zero, 1, need)))))))
        V = torch.as_tensor(self.rng.standard_normal(self.batch + (g, PROBES)), dtype=M.dtype, device=M.device)
        lo2 = _scalar_t((np.maximum(lo, 1e-300) ** 2).reshape(self.batch), M)
        hi2 = _scalar_t((hi ** 2).reshape(self.batch), M)
        X = _chebyshev(lambda Z: M @ Z, V, lo2, hi2, m)
        R = V - M @ X
        self.flops += 2 * m * g * g * PROBES
        est = ((R * R).sum((-2, -1)) / (V * V).sum((-2, -1)) * PROBES).reshape(-1).to(torch.float64).cpu().numpy()
        return (est > PROBE_LEVEL) & ~self.zero


def _setup(A, B, C, reference, *, step, degree, cushion, harvest_degree, lower, power_iters, max_iter, tol,
           atol, seed, rcond, harvest):
    _check_design(step, degree, cushion, 0.5 if lower is None else lower)
    if harvest not in HARVESTS:
        raise ValueError(f"argument harvest={harvest!r} must be one of {HARVESTS}")
    int_in("harvest_degree", harvest_degree, 1)
    int_in("power_iters", power_iters, 1)
    if max_iter is not None:
        int_in("max_iter", max_iter, 1)
    if tol is not None:
        positive("tol", tol)
    if not is_number(atol) or not math.isfinite(float(atol)) or atol < 0:
        raise ValueError(f"argument atol={atol!r} must be a finite number >= 0")
    if rcond is not None and (not is_number(rcond) or not 0 < float(rcond) < 1):
        raise ValueError(f"argument rcond={rcond!r} must be a number in (0, 1) or None")
    rng = as_rng(seed)
    ts, io = prepare({"A": A, "B": B, "C": C}, {"reference": reference} if reference is not None else None)
    d, n, dp, n_prime = check_shapes(ts["A"], ts["B"], ts["C"])
    check_batch({k: v for k, v in ts.items() if k != "reference"}, "A")
    if reference is not None and tuple(ts["reference"].shape[-2:]) != (dp, n_prime):
        raise ValueError(f"argument reference has shape {tuple(ts['reference'].shape[-2:])}, "
                         f"expected d'×n' = {(dp, n_prime)}")
    eps = torch.finfo(io.compute).eps
    low = float(lower) if lower is not None else (float(rcond) if rcond is not None else max(d, n) * eps)
    eA, eB, eC = (exponent(_maxabs(ts[k])) for k in ("A", "B", "C"))
    Af, Bf, Cf = mul_pow2(ts["A"], -eA), mul_pow2(ts["B"], -eB), mul_pow2(ts["C"], -eC)
    E = eB + eC - eA
    eng = _Engine(Af, Bf, Cf, step=step, degree=degree, cushion=cushion, harvest_degree=harvest_degree,
                  lower=low, power_iters=power_iters, rng=rng, harvest=harvest)
    ref = ts.get("reference")
    ref_f = mul_pow2(ref, -E) if ref is not None else None
    return eng, io, E, ref_f, (eA, eB, eC)


def solve(A, B, C, *, step: str = "polar-express", degree: int = 5, cushion: float = 0.1,
          harvest_degree: int = 8, harvest: str = "chebyshev", tol: float | None = None, atol: float = 0.0,
          max_iter: int = 200, patience: int = 1, certify: bool = False, lower: float | None = None,
          rcond: float | None = None, power_iters: int = 4, seed=0, reference=None) -> PolyResult:
    """Complete D ≈ B A^† C with polynomial conditioning steps and a Chebyshev prediction step.

    Each round: (1) the *harvest*: ``harvest_degree`` Chebyshev steps for A_ℓA_ℓᵀX = C_ℓ on the band
    [b_ℓ, u_ℓ] give X, and C ← C − A_ℓ(A_ℓᵀX), D ← D + B_ℓ(A_ℓᵀX); (2) the stopping rule; (3) the
    *conditioning step* A ← A q(AᵀA), B ← B q(AᵀA) with the odd polynomial of ``step`` (module docstring).
    D_ℓ + B_ℓA_ℓ^†C_ℓ = B A^† C holds throughout (for any data).

    Parameters
    ----------
    A, B, C : (…, d, n), (…, d', n), (…, d, n') NumPy arrays or torch tensors, one batch shape.
    step : ``"polar-express"`` (default), ``"quintic"`` or ``"cubic"`` (see :data:`STEPS`).
    degree : 3, 5 or 7, the degree of the ``"polar-express"`` step (GEMMs per round: (degree + 1)/2).
    cushion : the design interval's smallest lower end (0.001 … 0.9); directions above ``cushion``·‖A_ℓ‖
        are kept in the band.  Smaller: faster growth of small singular values, wider band, larger
        coefficients.
    harvest_degree : m, the Chebyshev steps per round (each one product of the d×d Gram matrix, or of A
        and Aᵀ, with a d×n' block).
    harvest : ``"chebyshev"`` (default) or ``"eagle"``: EAGLE's own C/D step C ← (I − AAᵀ/u²)C,
        D ← D + BAᵀC/u² (γ = 1); with ``step="cubic"`` this is Algorithm 1 with the tracked ρ = u⁻²
        instead of the power-iteration one (an ablation).
    tol, atol : stop when ‖D_ℓ − D_{ℓ−1}‖_F <= atol + tol·‖D_ℓ‖_F held in ``patience`` consecutive rounds
        (default tol 1e-12 in float64, 1e-6 in float32), and, with ``certify=True``, a band check found every
        direction of A_ℓ in the tracked band (:meth:`_Engine.below_band`: products only) before the growth of
        small singular values reached the cap min(1/rcond, :data:`NOISE_LEVEL`/(:data:`NOISE`·u)) beyond which
        rounding noise in a null direction could enter the band; an instance that reaches the cap with a
        direction still below the band ends ``"rank_deficient"`` (rank-deficient A, or singular values too small
        for this step to tell from rounding).  Without ``certify`` a singular value far below the others (a
        spectral gap) can still be on its way when the rule stops, and a rank-deficient A with inconsistent data
        can return a D contaminated by rounding-level directions.
    max_iter : the most rounds.
    lower : relative lower bound of the singular values that count (default: ``rcond``).  A larger value
        known to hold (e.g. 1/κ for a known κ) also lets the step converge instead of staying cushioned.
    rcond : the relative size below which singular values do not count (default max(d, n)·eps of the compute
        dtype); it only sets the default of ``lower`` (there is no hard cut-off, see the module docstring).
    power_iters : warm power iterations per round for the check of the tracked ‖A_ℓ‖ bound.
    seed : int, None or numpy Generator (the power iteration's start).
    reference : optional (…, d', n') target (e.g. ``tasks.nystrom(A, B, C)``) for ``rel_error``.

    Returns
    -------
    :class:`PolyResult` (a :class:`eaglebook.solver.Result`).  A = 0 (per instance) gives D = 0.

    Raises
    ------
    ValueError (naming the argument) for non-finite entries, mismatched shapes, an unknown step, a degree not
    in :data:`DEGREES`, cushion or lower out of range, harvest_degree/power_iters/max_iter/patience < 1,
    tol <= 0, atol < 0.
    """
    int_in("patience", patience, 1)
    if not isinstance(certify, (bool, np.bool_)):
        raise ValueError(f"argument certify={certify!r} must be True or False")
    eng, io, E, ref_f, _ = _setup(A, B, C, reference, step=step, degree=degree, cushion=cushion,
                                  harvest_degree=harvest_degree, lower=lower, power_iters=power_iters,
                                  max_iter=max_iter, tol=tol, atol=atol, seed=seed, rcond=rcond, harvest=harvest)
    tol = DEFAULT_TOL[io.compute] if tol is None else float(tol)
    nb, batch = eng.nb, eng.batch
    Eh = E.reshape(-1).cpu().numpy()
    atol_f = np.ldexp(np.full(nb, float(atol)), -Eh)
    host = lambda x: x.reshape(-1).to(torch.float64).cpu().numpy()
    ref_norm = host(_fro(ref_f)) if ref_f is not None else None
    done = np.zeros(nb, bool)
    status = np.array(["max_iter"] * nb, dtype=object)
    streak = np.zeros(nb, np.int64)
    D_out = torch.zeros_like(eng.state.D)
    flat = lambda x: x.reshape((nb,) + tuple(x.shape[-2:]))
    deltas, rels, cert = [], [], np.zeros(nb, bool)
    clean = np.zeros(nb, bool)          # a band check found every direction of A_ℓ in the band (full rank)
    p_dim = max(eng.state.A.shape[-2:])
    rc = float(rcond) if rcond is not None else p_dim * torch.finfo(io.compute).eps
    log_cap = min(math.log(NOISE_LEVEL / (NOISE * torch.finfo(io.compute).eps / 2)), math.log(1 / rc))
    ell = 0
    for ell in range(1, max_iter + 1):
        if ell > 1:
            eng.check_norm()
        dD = eng.harvest()
        D = eng.state.D
        fd, nD = host(_fro(dD)), host(_fro(D))
        with np.errstate(over="ignore"):   # a change beyond float64 in true units is reported as inf
            deltas.append(float(np.max(np.ldexp(fd, Eh))))
        if ref_f is not None:
            e = host(_fro(D.to(torch.float64) - ref_f))
            tot = float(np.sum(ref_norm ** 2))
            rels.append(float(np.sqrt(np.sum(e ** 2) / tot)) if tot > 0 else (0.0 if np.all(e == 0) else math.inf))
        finite = torch.isfinite(flat(D)).all(-1).all(-1).cpu().numpy()
        small = fd <= atol_f + tol * nD
        streak = np.where(small, streak + 1, 0)
        capped = eng.log_growth >= log_cap
        if certify:
            ask = ~done & ~clean & ((streak >= patience) | capped) & finite
            if ask.any():
                clean |= ask & ~eng.below_band()
            finish = ~done & (streak >= patience) & clean
            lost = ~done & capped & ~clean & finite          # small directions it cannot tell from rounding
        else:
            finish = ~done & (streak >= patience)
            lost = np.zeros(nb, bool)
        cert_now = eng.certified()
        bad = ~done & ~finite
        div = ~done & eng.diverged
        for i in np.flatnonzero(finish | bad | div | lost):
            status[i] = ("non_finite" if bad[i] else "diverged" if div[i] else "converged" if finish[i]
                         else "rank_deficient")
            flat(D_out)[i] = flat(D)[i]
            cert[i] = clean[i] if certify else cert_now[i]
            done[i] = True
        if done.all() or ell >= max_iter:
            break
        eng.condition()
    for i in np.flatnonzero(~done):
        flat(D_out)[i] = flat(eng.state.D)[i]
        cert[i] = clean[i] if certify else eng.certified()[i]
    # a converged D that the output dtype cannot hold (it overflows, or its largest entry is below the smallest
    # normal number) is out_of_range, as for the cubic step
    status[unrepresentable(host(_maxabs(D_out)), torch.finfo(io.out_torch), Eh) & (status == "converged")] = "out_of_range"
    rank = {"converged": 0, "max_iter": 1, "rank_deficient": 2, "out_of_range": 3, "diverged": 4, "non_finite": 5}
    st = max(status, key=lambda s: rank[s])
    return PolyResult(D=_out(io, mul_pow2(D_out, E)), iterations=ell, converged=st == "converged", status=st,
                      delta=np.asarray(deltas, dtype=np.float64),
                      rel_error=np.asarray(rels, dtype=np.float64) if ref_f is not None else None,
                      statuses=status.reshape(batch) if batch else None, gemms=eng.gemms,
                      flops=int(eng.flops), certified=cert.reshape(batch) if batch else bool(cert[0]),
                      bounds=eng.bounds[0], step=step, degree=degree if step == "polar-express" else
                      (5 if step == "quintic" else 3), coefficients=eng.coefficients,
                      certify="gemm" if certify else "none")


def iterate(A, B, C, *, step: str = "polar-express", degree: int = 5, cushion: float = 0.1,
            harvest_degree: int = 8, harvest: str = "chebyshev", max_iter: int = 30, lower: float | None = None,
            rcond: float | None = None, power_iters: int = 4, seed=0) -> Iterator[PolyIterate]:
    """Yield the states of :func:`solve`'s iteration, ℓ = 0 (the input, D = 0) to ``max_iter``, in the
    input's units as float64 NumPy arrays (single problems only; for the invariant and for plots).

    State ℓ >= 1 is the one after round ℓ's harvest *and* conditioning step; ``it.invariant()`` gives
    D_ℓ + B_ℓA_ℓ^†C_ℓ, which stays equal to B A^† C.
    """
    eng, io, E, _, (eA, eB, eC) = _setup(A, B, C, None, step=step, degree=degree, cushion=cushion,
                                         harvest_degree=harvest_degree, lower=lower, power_iters=power_iters,
                                         max_iter=max_iter, tol=None, atol=0.0, seed=seed, rcond=rcond,
                                         harvest=harvest)
    if eng.batch:
        raise ValueError("iterate() takes a single problem (A of shape d×n), not a batch")

    unit = math.ldexp(1.0, int(eA))                 # the tracked bounds are in the frame's units

    def state(ell):
        A_, B_, C_, D_, kB = eng.state
        f = lambda X, k: mul_pow2(X.to(torch.float64), k).cpu().numpy()
        bd = eng.bounds[0]
        return PolyIterate(ell, f(A_, eA), f(B_, eB + kB), f(C_, eC), f(D_, E),
                           Bounds(bd.u * unit, bd.b * unit, bd.l * unit))

    yield state(0)
    for ell in range(1, max_iter + 1):
        if ell > 1:
            eng.check_norm()
        eng.harvest()
        eng.condition()
        yield state(ell)

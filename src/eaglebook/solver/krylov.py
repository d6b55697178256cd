"""LSQR and LSMR with a per-iteration callback, for the baselines' traces.

Both run Golub–Kahan bidiagonalisation on min ‖M x − b‖₂ (one product with M and one with Mᵀ per
iteration) and differ in what they minimise over the Krylov space: LSQR the residual ‖r_k‖ (Paige and
Saunders, *LSQR: An algorithm for sparse linear equations and sparse least squares*, ACM TOMS 8, 1982), LSMR
‖Mᵀr_k‖ (Fong and Saunders, *LSMR: An iterative algorithm for sparse least-squares problems*, SIAM J. Sci.
Comput. 33, 2011).  From x₀ = 0 both stay in the row space of M and converge to the minimum-norm solution.

The stopping tests are the papers' (and ``scipy.sparse.linalg``'s), with ``atol``, ``btol``, ``conlim``:

* ``istop = 1``: ‖r‖ <= btol·‖b‖ + atol·‖M‖·‖x‖ (a compatible system solved);
* ``istop = 2``: ‖Mᵀr‖ <= atol·‖M‖·‖r‖ (a least-squares solution);
* ``istop = 3``: the estimate of cond(M) exceeds ``conlim``;
* ``istop = 4, 5, 6``: the same three tests at machine precision;
* ``istop = 7``: ``maxiter`` iterations.

``callback(x, k)`` is called after iteration k with the current iterate (a view: copy it to keep it) and
may return True to stop (``istop = 8``).  The tests compare the iterates and outcomes with SciPy's.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

__all__ = ["KrylovResult", "lsqr", "lsmr"]

_EPS = np.finfo(np.float64).eps


class KrylovResult(NamedTuple):
    """x, istop (module doc), itn, the estimates ‖r‖, ‖Mᵀr‖, ‖M‖_F, cond(M) and ‖x‖."""
    x: np.ndarray
    istop: int
    itn: int
    normr: float
    normar: float
    normA: float
    condA: float
    normx: float


def _start(matvec_t: Callable, b: np.ndarray):
    beta = float(np.linalg.norm(b))
    u = b * (1.0 / beta) if beta > 0 else b.copy()
    v = matvec_t(u) if beta > 0 else np.zeros(0)
    alpha = float(np.linalg.norm(v)) if beta > 0 else 0.0
    if alpha > 0:
        v = v * (1.0 / alpha)
    return beta, u, v, alpha


def _tests(k, normr, normar, normA, condA, normx, normb, atol, btol, ctol, maxiter) -> int:
    test1 = normr / normb
    test2 = normar / (normA * normr) if normA * normr > 0 else math.inf
    test3 = 1.0 / condA if condA > 0 else math.inf
    t1 = test1 / (1.0 + normA * normx / normb)
    rtol = btol + atol * normA * normx / normb
    istop = 0
    if k >= maxiter:
        istop = 7
    if 1.0 + test3 <= 1.0:
        istop = 6
    if 1.0 + test2 <= 1.0:
        istop = 5
    if 1.0 + t1 <= 1.0:
        istop = 4
    if test3 <= ctol:
        istop = 3
    if test2 <= atol:
        istop = 2
    if test1 <= rtol:
        istop = 1
    return istop


def lsqr(matvec: Callable, rmatvec: Callable, b, *, atol: float = 1e-6, btol: float = 1e-6, conlim: float = 1e8,
         maxiter: int | None = None, callback: Callable | None = None) -> KrylovResult:
    """LSQR for min ‖M x − b‖₂ (module doc); ``matvec(v)`` = M v, ``rmatvec(u)`` = Mᵀ u.  ``conlim=0`` turns
    the condition test off; ``atol = btol = 0`` (with ``conlim=0``) leave only ``maxiter`` and the callback."""
    b = np.asarray(b, dtype=np.float64)
    beta, u, v, alpha = _start(rmatvec, b)
    n = v.size if beta > 0 else int(np.asarray(rmatvec(np.zeros_like(b))).size)
    maxiter = 2 * n if maxiter is None else int(maxiter)
    x = np.zeros(n)
    normb = beta
    if beta == 0 or alpha == 0:          # x = 0 is exact (b = 0, or b ⊥ range(M))
        return KrylovResult(x, 0, 0, beta, 0.0, alpha, 1.0, 0.0)
    ctol = 1.0 / conlim if conlim > 0 else 0.0
    w = v.copy()
    phibar, rhobar = beta, alpha
    anorm2, ddnorm, res2, xxnorm, z, cs2, sn2 = 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0
    normr, normar = beta, alpha * beta
    istop, k = 0, 0
    while istop == 0:
        k += 1
        u = matvec(v) - alpha * u                    # bidiagonalisation: β u = M v − α u, α v = Mᵀ u − β v
        beta = float(np.linalg.norm(u))
        if beta > 0:
            u = u * (1.0 / beta)
            anorm2 += alpha * alpha + beta * beta
            v = rmatvec(u) - beta * v
            alpha = float(np.linalg.norm(v))
            if alpha > 0:
                v = v * (1.0 / alpha)
        else:
            anorm2 += alpha * alpha
        rho = math.hypot(rhobar, beta)               # the plane rotation that eliminates β
        c, s = rhobar / rho, beta / rho
        theta, rhobar = s * alpha, -c * alpha
        phi, phibar = c * phibar, s * phibar
        dk = w / rho
        ddnorm += float(dk @ dk)
        x += phi * dk
        w = v - (theta / rho) * w
        # ‖x‖ estimate (for the tests), as in the paper's section 5
        delta = sn2 * rho
        gambar = -cs2 * rho
        rhs = phi - delta * z
        zbar = rhs / gambar if gambar != 0 else 0.0
        normx = math.sqrt(xxnorm + zbar * zbar)
        gamma = math.hypot(gambar, theta)
        cs2, sn2 = gambar / gamma, theta / gamma
        z = rhs / gamma
        xxnorm += z * z
        normA = math.sqrt(anorm2)
        condA = normA * math.sqrt(ddnorm)
        normr = phibar
        normar = alpha * abs(s * phi)                # ‖Mᵀ r_k‖ = α_{k+1} |s_k φ_k|... in the paper's notation
        istop = _tests(k, normr, normar, normA, condA, normx, normb, atol, btol, ctol, maxiter)
        if callback is not None and callback(x, k) and istop == 0:
            istop = 8
    return KrylovResult(x, istop, k, normr, normar, normA, condA, float(np.linalg.norm(x)))


def lsmr(matvec: Callable, rmatvec: Callable, b, *, atol: float = 1e-6, btol: float = 1e-6, conlim: float = 1e8,
         maxiter: int | None = None, callback: Callable | None = None) -> KrylovResult:
    """LSMR for min ‖M x − b‖₂ (module doc; no damping); arguments as :func:`lsqr`."""
    b = np.asarray(b, dtype=np.float64)
    beta, u, v, alpha = _start(rmatvec, b)
    n = v.size if beta > 0 else int(np.asarray(rmatvec(np.zeros_like(b))).size)
    maxiter = min(b.size, n) if maxiter is None else int(maxiter)
    x = np.zeros(n)
    normb = beta
    if beta == 0 or alpha == 0:
        return KrylovResult(x, 0, 0, beta, 0.0, alpha, 1.0, 0.0)
    ctol = 1.0 / conlim if conlim > 0 else 0.0
    zetabar, alphabar = alpha * beta, alpha
    rho = rhobar = cbar = 1.0
    sbar = 0.0
    h, hbar = v.copy(), np.zeros(n)
    # for the estimate of ‖r‖
    betadd, betad, rhodold, tautildeold, thetatilde, zeta, dsum = beta, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0
    normA2 = alpha * alpha
    maxrbar, minrbar = 0.0, 1e100
    istop, k = 0, 0
    normr, normar = beta, alpha * beta
    while istop == 0:
        k += 1
        u = matvec(v) - alpha * u
        beta = float(np.linalg.norm(u))
        if beta > 0:
            u = u * (1.0 / beta)
            v = rmatvec(u) - beta * v
            alpha = float(np.linalg.norm(v))
            if alpha > 0:
                v = v * (1.0 / alpha)
        # the rotation P_k on the lower bidiagonal (no damping: α̂ = ᾱ)
        rhoold = rho
        rho = math.hypot(alphabar, beta)
        c, s = alphabar / rho, beta / rho
        thetanew = s * alpha
        alphabar = c * alpha
        # the rotation P̄_k on the upper bidiagonal
        rhobarold, zetaold = rhobar, zeta
        thetabar = sbar * rho
        rhotemp = cbar * rho
        rhobar = math.hypot(cbar * rho, thetanew)
        cbar, sbar = cbar * rho / rhobar, thetanew / rhobar
        zeta = cbar * zetabar
        zetabar = -sbar * zetabar
        hbar = h - (thetabar * rho / (rhoold * rhobarold)) * hbar
        x += (zeta / (rho * rhobar)) * hbar
        h = v - (thetanew / rho) * h
        # ‖r_k‖ from the two rotations applied to β e₁ (the paper's section 3.3)
        betahat, betadd = c * betadd, -s * betadd
        thetatildeold = thetatilde
        rhotildeold = math.hypot(rhodold, thetabar)
        ctildeold, stildeold = rhodold / rhotildeold, thetabar / rhotildeold
        thetatilde = stildeold * rhobar
        rhodold = ctildeold * rhobar
        betad = -stildeold * betad + ctildeold * betahat
        tautildeold = (zetaold - thetatildeold * tautildeold) / rhotildeold
        taud = (zeta - thetatilde * tautildeold) / rhodold
        normr = math.sqrt(dsum + (betad - taud) ** 2 + betadd * betadd)
        normA2 += beta * beta
        normA = math.sqrt(normA2)
        normA2 += alpha * alpha
        maxrbar = max(maxrbar, rhobarold)
        if k > 1:
            minrbar = min(minrbar, rhobarold)
        condA = max(maxrbar, rhotemp) / min(minrbar, rhotemp)
        normar = abs(zetabar)
        normx = float(np.linalg.norm(x))
        istop = _tests(k, normr, normar, normA, condA, normx, normb, atol, btol, ctol, maxiter)
        if callback is not None and callback(x, k) and istop == 0:
            istop = 8
    return KrylovResult(x, istop, k, normr, normar, normA, condA, float(np.linalg.norm(x)))

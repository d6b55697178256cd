"""Certifying a solve: is every direction of A_ℓ conditioned, and how much did the dropped ones put into D?

The stopping rule (:class:`eaglebook.solver.stopping.StopRule`) asks these questions when the change of D
has become small.  Two ways to answer them (``certify=`` of :func:`eaglebook.solve`):

``"gemm"`` (the default): only matrix products, no factorisation.  After conditioning, the normalised Gram
matrix G = A_ℓᵀA_ℓ/σ² (σ = ‖A_ℓ‖₂) is close to a projector: each right singular direction has an
eigenvalue x² with x = s/σ near 1 (conditioned) or near 0 (dropped by the cut-off, or not yet reached).  The
matrix M = A_ℓ(I − G)²/σ has the singular values β = x(1 − x²)² (≈ x for small x, ≈ 4δ² for x = 1 − δ, so
that a conditioned direction that is still tightening does not hide a small one), and a few block power
iterations on MᵀM (each ten products of A_ℓ with a few vectors, whose rounding errors are proportional to
x, so that x down to about p·u is visible) give β̂ ≈ max β: a direction still being conditioned shows up as
β̂ above the growth-adjusted cut-off thr = rcond·G_ℓ (G_ℓ the accumulated growth of small singular values,
so a direction with s/σ_max = rcond at the start sits at thr now).  What the dropped directions (x <= thr) put
into D is bounded by Cauchy–Schwarz with products only: (2.5γ + 1)·‖B_ℓ(I − G)‖_F·‖(I − G)A_ℓᵀC_ℓ‖_F/σ²
(:func:`gemm_certificate`).  Small blocks (min(d, n) <= :data:`SMALL_CHECK`, the many small problems of a batch)
form M once instead, from the Gram matrix of the smaller side, and iterate with two products with M per step: M's
rounding error is O(p·u) in norm, the same order as that of each matrix-free product (X − A(AᵀX)/σ² carries an
absolute error of about p·u), so x down to about p·u stays visible; MᵀM is never formed (that would square the
errors and hide x below √u).  The finished completion uses A_ℓ^† = A_ℓᵀ/σ² on the conditioned directions: D_ℓ +
B_ℓA_ℓᵀC_ℓ/σ².  The sketched and distributed regimes reach B A^† C only on consistent data (B in the row space of
A) or for full column rank; that is certified by a *test column*: C gets one more column c = A g (g Gaussian)
whose completion B A^† A g equals B g exactly when the data are consistent; the solver compares its D for that
column with B g (:func:`test_column`, :func:`test_level`).

``"svd"``: one SVD of A_ℓ per check and one of A for the consistency (:func:`svd_check`,
:func:`svd_consistency`), the exact version of the same quantities.  ``"none"``: no check (the change
rule alone decides; ``converged`` is then not certified against rank deficiency or inconsistent data).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch

from .norms import fro, mul_pow2

__all__ = ["CERTIFY", "CONDITIONED", "CHECK_STEPS", "CHECK_BLOCK", "SMALL_CHECK", "Certificate", "gemm_certificate",
           "combine", "svd_check", "svd_consistency", "test_column", "test_level", "TEST_SEED", "refine_sigma",
           "pack", "unpack", "FIELDS", "START_CHUNK"]

CERTIFY = ("gemm", "svd", "none")
#: A direction of A_ℓ counts as conditioned once s/σ_max >= this.
CONDITIONED = 0.5
#: Block power iterations on MᵀM per check, and the block's width.  With a Gaussian start the Rayleigh
#: quotient of a column falls below 1/16 of λ_max(MᵀM) with probability below 1.7·√n·(1/16)^7.5 < 1e-7 (the
#: Kuczyński–Woźniakowski bound), so β̂ >= max β/4 for all practical purposes.
CHECK_STEPS = 8
CHECK_BLOCK = 4
#: Blocks whose smaller side is at most this form M once (a few products of the small side's size) and
#: iterate with two products with M per step instead of ten with A (see the module doc).
SMALL_CHECK = 64
#: The check's random start vectors and the test columns come from their own generators (seeded by this,
#: the round and the machine), so that checking never changes the solver's own random stream.
TEST_SEED = 0x7E57
#: The per-instance numbers a machine contributes to a check (and the slots of its reduction).
FIELDS = ("wait", "err", "near")


class Certificate(NamedTuple):
    """One check's answer, per instance (flat float64 arrays).

    ``wait``: the growth factor of small singular values still needed before the next check (1.0: no
    direction is being conditioned); ``err``: the bound of what the dropped directions have put into D,
    in D's units; ``near``: the estimated full contribution of directions just below the cut-off (within
    the 4× window the estimate cannot resolve), in D's units (0 when there are none)."""
    wait: np.ndarray
    err: np.ndarray
    near: np.ndarray


def _flat(x: torch.Tensor) -> np.ndarray:
    return x.reshape(-1).to(torch.float64).cpu().numpy()


#: The random start vectors of a check come in chunks of this many instances, each chunk from its own generator
#: (the first from the check's own seed, so a batch of at most START_CHUNK instances draws exactly what one
#: generator for the whole batch draws): a check of a few instances of a large batch draws only their chunks.
START_CHUNK = 256


def _start(seed: list, shape: tuple, rows) -> np.ndarray:
    """Gaussian start vectors of ``shape`` (batch + (m, k)) for the check seeded by ``seed``.  Instance i (flat
    index) takes its vectors from chunk c = i // START_CHUNK, drawn by the generator of ``seed`` (c = 0) or of
    ``seed`` + [START_CHUNK, c] (c > 0) in C order.  ``rows``: the batch holds only these instances (flat indices) of a
    larger one, and each gets what the whole batch would draw for it."""
    mk = tuple(shape[-2:])
    idx = np.arange(max(1, math.prod(shape[:-2]))) if rows is None else np.asarray(rows, dtype=np.int64)
    out = np.empty((idx.size,) + mk)
    chunk = idx // START_CHUNK
    for c in np.unique(chunk):
        sel = chunk == c
        pos = idx[sel] - c * START_CHUNK
        g = np.random.default_rng(seed if c == 0 else [*seed, START_CHUNK, int(c)])
        out[sel] = g.standard_normal((int(pos.max()) + 1,) + mk)[pos]
    return out.reshape(shape) if rows is None else out


def refine_sigma(A: torch.Tensor, u: torch.Tensor | None, iters: int = 3, seed: int = 0, *, rows=None) -> torch.Tensor:
    """‖A‖₂ (batch + (1, 1)) by ``iters`` power iterations on A Aᵀ from the left vector ``u`` (warm: the
    machine's own power vector), at least ‖A‖_F/√min(d, n).  ``rows``: A holds these instances (flat indices)
    of a larger batch (see :func:`gemm_certificate`)."""
    if u is None:
        u = torch.as_tensor(_start([TEST_SEED, seed], tuple(A.shape[:-2]) + (A.shape[-2], 1), rows),
                            dtype=A.dtype, device=A.device)
    tiny = torch.finfo(A.dtype).tiny
    for _ in range(iters):
        u = A @ (A.mT @ u)
        u = u / torch.linalg.vector_norm(u, dim=-2, keepdim=True).clamp_min(tiny)
    s = torch.linalg.vector_norm(A.mT @ u, dim=-2, keepdim=True)
    return torch.maximum(s, fro(A) / math.sqrt(min(A.shape[-2:])))


def gemm_certificate(A, B, C, kA, kB, sigma, log_growth, rcond: float, gamma: float, *, key=(0, 0),
                     finish: bool = True, rows=None):
    """The factorisation-free check of one machine's stored blocks A (…, d, n), B (…, d', n) and the current
    C (…, d, n'); ``kA``, ``kB`` their power-of-two exponents, ``sigma`` ≈ ‖A‖₂ (batch + (1, 1)),
    ``log_growth`` the accumulated log growth of small singular values (batch + (1, 1)).

    Returns ``(Certificate, fin)``: ``fin`` the finishing increment 2^{kA−kB}·B Aᵀ C/σ² of D (None unless
    ``finish``).  Only products with A and Aᵀ: about 10·CHECK_STEPS + 8 passes over A with at most
    CHECK_BLOCK vectors; see the module doc.  ``rows``: the blocks are those of these instances (flat indices)
    of a larger batch, checked alone; each gets the random start the whole batch would give it, so the answer
    per instance is the one a check of the whole batch gives."""
    dtype, device = A.dtype, A.device
    batch = tuple(A.shape[:-2])
    d, n = A.shape[-2:]
    p = max(d, n)
    u = torch.finfo(dtype).eps / 2
    s = torch.where(sigma > 0, sigma, torch.ones_like(sigma))
    s2 = s * s
    left = d < n                      # iterate on the smaller side (the singular values are the same)
    dim = d if left else n
    V = torch.as_tensor(_start([TEST_SEED, *key], batch + (dim, CHECK_BLOCK), rows), dtype=dtype, device=device)
    tiny = torch.finfo(dtype).tiny

    if dim <= SMALL_CHECK:   # small blocks: form M (d×n) once, then two products with it per step
        Ah = A / s                                                # Â = A/σ
        X, Y = (Ah, Ah.mT) if left else (Ah.mT, Ah)
        eye = torch.eye(dim, dtype=dtype, device=device)
        P = torch.baddbmm(eye, X.reshape(-1, dim, X.shape[-1]), Y.reshape(-1, Y.shape[-2], dim), alpha=-1)
        P = P.reshape(batch + (dim, dim))                         # I − G, G = ÂÂᵀ or ÂᵀÂ
        P2 = P @ P
        M = P2 @ Ah if left else Ah @ P2            # M_L = (I − AAᵀ/σ²)²A/σ, or M = A(I − AᵀA/σ²)²/σ
        Mt = M.mT

        def cnorm(X):                 # column norms (the blocks are small: one fused pass)
            return torch.sqrt((X * X).sum(-2))

        def apply(X):                 # M_L M_Lᵀ X (or Mᵀ M X) and ‖M_Lᵀ X‖ (or ‖M X‖) per column
            Y = (Mt if left else M) @ X
            return (M if left else Mt) @ Y, cnorm(Y)

        def xnorm(X):
            return cnorm((Ah.mT if left else Ah) @ X)
    elif left:   # M_L = (I − A Aᵀ/σ²)² A/σ; M_L M_Lᵀ on d-vectors
        def proj(X):
            X = X - A @ (A.mT @ X) / s2
            return X - A @ (A.mT @ X) / s2

        def apply(X):                 # M_L M_Lᵀ X and ‖M_Lᵀ X‖ per column
            Y = A.mT @ proj(X) / s
            return proj(A @ Y / s), torch.linalg.vector_norm(Y, dim=-2)

        def xnorm(X):
            return torch.linalg.vector_norm(A.mT @ X, dim=-2) / s[..., 0]
    else:        # M = A (I − Aᵀ A/σ²)²/σ; Mᵀ M on n-vectors
        def proj(X):
            X = X - A.mT @ (A @ X) / s2
            return X - A.mT @ (A @ X) / s2

        def apply(X):
            Y = A @ proj(X) / s
            return proj(A.mT @ Y / s), torch.linalg.vector_norm(Y, dim=-2)

        def xnorm(X):
            return torch.linalg.vector_norm(A @ X, dim=-2) / s[..., 0]

    if dim <= SMALL_CHECK:
        norm = lambda X: cnorm(X)[..., None, :]                                  # noqa: E731
    else:
        norm = lambda X: torch.linalg.vector_norm(X, dim=-2, keepdim=True)       # noqa: E731
    V = V / norm(V).clamp_min(tiny)
    beta = None
    for _ in range(CHECK_STEPS):
        W, beta = apply(V)                        # beta: ‖M v‖ for the unit columns v of V
        V = W / norm(W).clamp_min(tiny)
    best = beta.argmax(-1, keepdim=True)           # the column with the largest β estimate
    beta_hat = beta.gather(-1, best)[..., 0]       # batch
    Vb = torch.gather(V, -1, best[..., None, :].expand(*batch, dim, 1))
    xb = xnorm(Vb)[..., 0]                          # x of the detected direction
    thr = rcond * torch.exp(log_growth[..., 0, 0].to(dtype))
    floor = 16 * p * u
    bh, xb, thr_ = _flat(beta_hat), _flat(xb), _flat(thr)
    wait = np.ones_like(bh)
    zero = _flat(sigma)[...] <= 0 if sigma.numel() == bh.size else np.zeros_like(bh, bool)
    hidden = (thr_ < floor) & ~zero                  # the cut-off is still below what products can see
    wait[hidden] = floor / np.maximum(thr_[hidden], tiny)
    band = ~hidden & ~zero & (bh > thr_)
    mid = band & (xb < CONDITIONED)
    wait[mid] = CONDITIONED / np.maximum(xb[mid], thr_[mid])
    wait[band & ~mid] = 1.5                          # conditioned directions still tightening: a round or two
    # the dropped directions (right side P = I − G): ‖B P‖_F ‖P Aᵀ C‖_F / σ², and the finish B Aᵀ C/σ²
    AtC = A.mT @ C
    BP = B - (B @ A.mT) @ A / s2
    PAtC = AtC - A.mT @ (A @ AtC) / s2
    dsc = kA - kB
    bound = fro(BP) * fro(PAtC) / s2 * (2.5 * gamma + 1.0)
    err = _flat(mul_pow2(bound, dsc))
    # directions just below the cut-off, within the 4× window (at and after the stopping rule's cut, where thr
    # has grown past 1/4, the window is x in (1/16, 1/2): directions that started within 4× below rcond)
    near_mask = ~hidden & ~band & ~zero & (bh > np.minimum(thr_, 0.25) / 4) & (xb < CONDITIONED) & (bh > 0)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        near = np.where(near_mask, err / np.where(near_mask, bh, 1.0) ** 2, 0.0)
    fin = None
    if finish:   # A_ℓ^† = A_ℓᵀ/(x²σ²) on a conditioned direction x = 1 − δ: the finish misses 2δ of it, δ <= √β
        fin = mul_pow2(B @ AtC / s2, dsc)
        err = err + 2 * np.sqrt(np.maximum(bh, 0.0)) * _flat(fro(fin))
    return Certificate(wait, err, near), fin


def combine(certs: list, machines: int) -> Certificate:
    """The machines' certificates of one check: wait for the slowest machine; D is the mean of the machines'
    increments, so the dropped directions' share is the mean of theirs."""
    wait = np.max([c.wait for c in certs], axis=0)
    err = np.sum([c.err for c in certs], axis=0) / machines
    near = np.sum([c.near for c in certs], axis=0) / machines
    return Certificate(wait, err, near)


def pack(cert: Certificate, slot: int, world: int, out: torch.Tensor) -> None:
    """Write one machine's certificate into its slots of a reduction buffer (len(FIELDS)·world·nb floats)."""
    nb = cert.wait.size
    for f, name in enumerate(FIELDS):
        lo = (f * world + slot) * nb
        out[lo:lo + nb] = torch.as_tensor(getattr(cert, name), dtype=out.dtype)


def unpack(buf: torch.Tensor, world: int, nb: int) -> list:
    """The machines' certificates from a reduced buffer (:func:`pack`)."""
    x = buf.reshape(len(FIELDS), world, nb).to(torch.float64).cpu().numpy()
    return [Certificate(*(x[f, mu] for f in range(len(FIELDS)))) for mu in range(world)]


# ---------------------------------------------------------------------------------------------- test columns
def test_column(A, B, g):
    """The test column c = A g and its known completion B g (one machine's share; the caller sums them over
    machines).  ``g``: (…, n_μ, k) Gaussian."""
    return A @ g, B @ g


def test_level(D_t, T):
    """Per instance ‖D_t − T‖_F/‖T‖_F (0/0 = 0): how far the regime's completion of the test column is from
    its known value B g.  Small for consistent data or full column rank; about ε_B (B's relative component
    in A's right kernel) or more otherwise."""
    num = fro(D_t.to(torch.float64) - T.to(torch.float64))
    den = fro(T.to(torch.float64))
    rel = torch.where(den > 0, num / torch.where(den > 0, den, torch.ones_like(den)),
                      torch.where(num > 0, torch.full_like(num, math.inf), torch.zeros_like(num)))
    return _flat(rel)


# ---------------------------------------------------------------------------------------------- the SVD check
def svd_check(As, Bs, C, D, kA, kB, log_growth, rcond, gamma, check_gap: float = 4.0):
    """``certify="svd"``: one SVD of A_ℓ (the stored, rescaled iterate; the machines' blocks side by side).

    Returns, per instance (flattened batch): the growth factor still needed for the smallest normalised
    singular value s/σ_max still being conditioned (in (thr, 1/2), thr = 4·rcond·G_ℓ), the finished
    completion D_ℓ + B_ℓ A_ℓ^† C_ℓ over the kept directions, and the bound of what the dropped directions
    have already put into D_ℓ (in D's units)."""
    k0 = torch.stack(kA).amin(0)
    A = torch.cat([mul_pow2(a, k0 - k) for a, k in zip(As, kA)], -1)
    kb0 = torch.stack(kB).amin(0)
    B = torch.cat([mul_pow2(b, kb0 - k) for b, k in zip(Bs, kB)], -1)
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    smax = S[..., :1]
    sbar = S / torch.where(smax > 0, smax, torch.ones_like(smax))
    thr = check_gap * rcond * torch.exp(log_growth[..., 0].to(S.dtype))          # batch + (1,)
    kept = (sbar > thr) | (sbar >= CONDITIONED)
    band = kept & (sbar < CONDITIONED)
    band_min = torch.where(band, sbar, torch.full_like(sbar, math.inf)).amin(-1)
    BV, UC = B @ Vh.mT, U.mT @ C
    w = torch.where(kept, 1.0 / torch.where(kept, S, torch.ones_like(S)), torch.zeros_like(S))
    dsc = k0 - kb0
    D_fin = D + mul_pow2((BV * w[..., None, :]) @ UC, dsc)
    # a dropped direction i has put (1 − Π_i)/Π_i of its remaining term (B_ℓ v_i)(u_iᵀ C_ℓ)/s_i into D_ℓ,
    # and 1 − Π_i <= γ Σ_k (s_i(k)/σ_k)² <= γ s̄_i²/(1 − g⁻²) <= 2.5γ s̄_i² (growth g >= 1.4 per UPDATE)
    drop = torch.where(kept, torch.zeros_like(S), S / torch.where(smax > 0, smax, torch.ones_like(smax)) ** 2)
    terms = torch.linalg.vector_norm(BV, dim=-2) * torch.linalg.vector_norm(UC, dim=-1) * drop
    err = mul_pow2(2.5 * gamma * terms.sum(-1)[..., None, None], dsc)
    bm = _flat(band_min)
    wait = np.where(np.isfinite(bm), CONDITIONED / np.where(np.isfinite(bm), bm, 1.0), 1.0)
    return Certificate(wait, _flat(err), np.zeros_like(bm)), D_fin


def svd_consistency(A0s, B0s, rcond):
    """``certify="svd"`` for the sketched and distributed regimes: ε_B·κ per instance, where
    ε_B = ‖B − B A^†A‖_F/‖B‖_F is B's relative component in A's right kernel (0 when A has full column
    rank) and κ = κ(A) at cut-off ``rcond`` (one SVD of A).  Returns (level, ε_B)."""
    A, B = torch.cat(A0s, -1), torch.cat(B0s, -1)
    _, S, Vh = torch.linalg.svd(A, full_matrices=False)
    smax = S[..., :1]
    keep = S > rcond * smax
    V = Vh.mT * keep[..., None, :]
    Bk = B - (B @ V) @ V.mT
    nB = fro(B)
    epsB = torch.where(nB > 0, fro(Bk) / torch.where(nB > 0, nB, torch.ones_like(nB)), torch.zeros_like(nB))
    smin = torch.where(keep, S, torch.full_like(S, math.inf)).amin(-1, keepdim=True)
    kappa = torch.where(smax > 0, smax / smin, torch.ones_like(smax))
    return _flat(epsB[..., 0] * kappa), _flat(epsB[..., 0])

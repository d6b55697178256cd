"""The masked-block completion task (the paper's problem set-up and App. B).

X = [[A, C], [B, D]] with A (d×n), C (d×n'), B (d'×n), D (d'×n').  D is hidden; the target is the
Nyström completion D̂* = B A^† C = B Aᵀ(AAᵀ)^† C.  Tokens are the d+d' *rows* of X, features its n+n'
columns; the mask lets every token attend to the first d tokens only.

All functions are pure: randomness comes in as a ``torch.Generator`` (training batches) or a
``numpy.random.Generator`` (test problems), dtype and device are arguments.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ._arrays import Blocks, as_rng, check_finite, check_shapes, is_number, machine_edges, to_tensor
from .config import TaskConfig

__all__ = [
    "Blocks", "split", "assemble", "prompt", "sample_X", "sample_parts", "nystrom", "token_mask",
    "feature_owner", "make_problem", "scalar_regression", "check_finite", "diverse_problem", "alpha_schedule",
    "MAX_PARTIAL_ALPHA",
]


def split(Z, task: TaskConfig) -> Blocks:
    """Split ``Z`` (..., d+d', n+n') into its blocks A, B, C, D (views, no copies)."""
    d, n = task.d, task.n
    want = (task.d + task.d_prime, task.n + task.n_prime)
    if tuple(Z.shape)[-2:] != want:
        raise ValueError(f"argument Z has trailing shape {tuple(Z.shape)[-2:]}, expected (d+d', n+n') = {want}")
    return Blocks(Z[..., :d, :n], Z[..., d:, :n], Z[..., :d, n:], Z[..., d:, n:])


def assemble(A, B, C, D):
    """Stack blocks back into X = [[A, C], [B, D]], checking that the shapes agree."""
    check_shapes(A, B, C, D)
    lib = torch if isinstance(A, torch.Tensor) else np
    top = lib.concatenate([A, C], -1) if lib is np else torch.cat([A, C], -1)
    bot = lib.concatenate([B, D], -1) if lib is np else torch.cat([B, D], -1)
    return lib.concatenate([top, bot], -2) if lib is np else torch.cat([top, bot], -2)


def prompt(X, task: TaskConfig):
    """The transformer's input Z₀ = [[A, C], [B, 0]]: X with the hidden block D zeroed."""
    Z = X.clone() if isinstance(X, torch.Tensor) else np.array(X, copy=True)
    split(Z, task).D[...] = 0
    return Z


def _sigma_sqrt(task: TaskConfig, dtype, device) -> torch.Tensor:
    i = torch.arange(1, task.s + 1, dtype=dtype, device=device)  # Σ_ii = α^i, i = 1..s (the book's reading notes)
    return task.alpha ** (i / 2)


def sample_parts(task: TaskConfig, batch: int, *, generator: torch.Generator, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Draw a batch; return ``(X_lowrank, X_clean, X_observed)``.

    ``X_lowrank`` = R₁ R₂ᵀ/√s with i.i.d. rows of R₁, R₂ from N(0, Σ) (the paper's data model).  ``X_clean``,
    the truth, adds i.i.d. N(0, σ²_floor) entries when ``task.floor_var > 0`` (a full-rank part: data that is
    not low-rank, chapter 11) and is ``X_lowrank`` otherwise.  ``X_observed`` adds i.i.d. N(0, σ²) noise when
    ``task.noise_var > 0``: to every sample, or with ``task.noise_fraction`` < 1 to the first
    round(fraction · batch) samples of the batch only.  Sampling happens on ``generator``'s device, then moves
    to ``device``; with the default floor and fraction it draws exactly what it always drew.
    """
    if batch < 1:
        raise ValueError(f"argument batch={batch} must be >= 1")
    gdev = generator.device
    sq = _sigma_sqrt(task, dtype, gdev)
    R1 = torch.randn(batch, task.d + task.d_prime, task.s, generator=generator, dtype=dtype, device=gdev) * sq
    R2 = torch.randn(batch, task.n + task.n_prime, task.s, generator=generator, dtype=dtype, device=gdev) * sq
    X_low = R1 @ R2.transpose(-1, -2) / math.sqrt(task.s)
    X = X_low
    if task.floor_var > 0:
        X = X_low + math.sqrt(task.floor_var) * torch.randn(X.shape, generator=generator, dtype=dtype, device=gdev)
    Xo = X
    if task.noise_var > 0:
        E = math.sqrt(task.noise_var) * torch.randn(X.shape, generator=generator, dtype=dtype, device=gdev)
        if task.noise_fraction < 1:
            E[round(task.noise_fraction * batch):] = 0
        Xo = X + E
    return X_low.to(device), X.to(device), Xo.to(device)


def sample_X(task: TaskConfig, batch: int, *, generator: torch.Generator,
             dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Draw a batch from the paper's distribution; return ``(X_clean, X_observed)`` (:func:`sample_parts`).

    X = R₁ R₂ᵀ/√s with i.i.d. rows of R₁, R₂ from N(0, Σ) (the paper's data model).  ``X_observed`` adds
    i.i.d. N(0, σ²) noise to every entry when ``task.noise_var > 0`` and is ``X_clean`` otherwise.
    """
    _, X, Xo = sample_parts(task, batch, generator=generator, dtype=dtype, device=device)
    return X, Xo


def nystrom(A, B, C, *, rcond: float | None = None):
    """The Nyström completion D̂* = B A^† C (batched), computed in float64 via the pseudo-inverse.

    ``rcond`` is the relative cut-off for small singular values of A (default: ``max(d, n)·eps`` of
    float64), so a rank-deficient A is handled as the paper's minimum-rank completion.  A, B and C are
    first multiplied by exact powers of two (max-abs entry near 1), so huge or tiny data neither overflow
    nor underflow; the result is scaled back exactly.  Returns the input's array type; a floating input
    keeps its dtype, integer or bool input gives float64 (NumPy and torch alike).
    """
    if rcond is not None and (not is_number(rcond) or not 0 <= float(rcond) < 1):
        raise ValueError(f"argument rcond={rcond!r} must be a number in [0, 1) or None")
    is_t = any(isinstance(x, torch.Tensor) for x in (A, B, C))
    ts = {k: to_tensor(k, x) for k, x in (("A", A), ("B", B), ("C", C))}
    check_shapes(ts["A"], ts["B"], ts["C"])
    for k, t in ts.items():
        check_finite(k, t)
    floats = [t.dtype for t in ts.values() if t.is_floating_point()]
    out_dtype = floats[0] if floats else torch.float64
    for f in floats[1:]:
        out_dtype = torch.promote_types(out_dtype, f)
    device = next((x.device for x in (A, B, C) if isinstance(x, torch.Tensor)), torch.device("cpu"))
    A64, B64, C64 = (ts[k].to(device=device, dtype=torch.float64) for k in ("A", "B", "C"))
    exps = []
    for X in (A64, B64, C64):
        m = X.abs().amax(dim=(-2, -1), keepdim=True)
        _, e = torch.frexp(m)
        exps.append(torch.where(m > 0, e, torch.zeros_like(e)).to(torch.float64))
    ea, eb, ec = exps
    A1, B1, C1 = A64 * torch.exp2(-ea), B64 * torch.exp2(-eb), C64 * torch.exp2(-ec)
    # the completion itself (chapter 1 shows these lines)
    d, n = A1.shape[-2:]
    rtol = float(rcond) if rcond is not None else max(d, n) * torch.finfo(torch.float64).eps
    D1 = B1 @ torch.linalg.pinv(A1, rtol=rtol) @ C1
    # (end of the completion)
    k = eb + ec - ea
    half = torch.floor(k / 2)
    out = D1 * torch.exp2(half) * torch.exp2(k - half)      # exact; inf/0 only if D* itself is out of range
    if is_t:
        return out.to(out_dtype)
    with np.errstate(over="ignore"):
        return out.numpy().astype(torch.empty(0, dtype=out_dtype).numpy().dtype)


def token_mask(task: TaskConfig, *, dtype=torch.float32, device="cpu") -> torch.Tensor:
    """The fixed attention mask M = [1 1_dᵀ, 0]: (d+d')×(d+d'); every query reads the first d tokens only.

    Entry (i, j) is 1 when token i may attend to token j.  It is the same in every regime and layer;
    the regimes differ in the constraints on the weights (see :func:`feature_owner`).
    """
    T = task.d + task.d_prime
    M = torch.zeros(T, T, dtype=dtype, device=device)
    M[:, : task.d] = 1
    return M


def feature_owner(task: TaskConfig, machines: int) -> np.ndarray:
    """For the distributed regime: which machine holds each of the n data columns (contiguous split).

    Returns an int array of length n with values 0..M-1.  The n' query columns (C, D) are replicated on
    every machine (the paper's Fig. 2 and App. B.4; the book's reading notes).  Requires 1 <= M <= n.
    """
    return np.repeat(np.arange(machines), np.diff(machine_edges(task.n, machines)))


def make_problem(n: int, d: int, n_prime: int = 2, d_prime: int = 2, *, rank: int | None = None,
                 kappa: float = 100.0, rng, noise_std: float = 0.0,
                 spectrum: str = "log-uniform", dtype=np.float64) -> Blocks:
    """A test problem with A of size d×n, the given rank and condition number κ(A)

    A = U diag(σ) Vᵀ with Haar-random U, V and σ in [1/κ, 1] (log-uniform, endpoints included, or
    ``spectrum='log-spaced'``).  B = W A and D = W C for a Gaussian W (d'×d), so X is noiseless and
    rank(X) = rank(A); C = A G for a Gaussian G so that C lies in the column span of A.  With
    ``noise_std > 0``, i.i.d. Gaussian noise of that standard deviation is added to A, B, C (D stays
    the clean completion of the clean data).  ``rng`` is a ``numpy.random.Generator`` or a seed (a
    non-negative int).  Returns ``Blocks(A, B, C, D)`` in ``dtype`` (a floating dtype).
    """
    for name, v in (("n", n), ("d", d), ("n_prime", n_prime), ("d_prime", d_prime)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"argument {name}={v!r} must be a positive integer")
    rng = as_rng(rng, "rng")
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        raise ValueError(f"argument dtype={dtype!r} is not a NumPy dtype") from None
    if np_dtype.kind != "f":
        raise ValueError(f"argument dtype={dtype!r} must be a floating dtype (the entries are in [-1, 1])")
    for name, v in (("kappa", kappa), ("noise_std", noise_std)):
        if not is_number(v):
            raise ValueError(f"argument {name}={v!r} must be a number")
    rank = min(n, d) if rank is None else rank
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not (1 <= rank <= min(n, d)):
        raise ValueError(f"argument rank={rank!r} is impossible for a {d}×{n} matrix: need 1 <= rank <= {min(n, d)}")
    if not (np.isfinite(kappa) and kappa >= 1):
        raise ValueError(f"argument kappa={kappa!r} must be a finite number >= 1")
    if not (np.isfinite(noise_std) and noise_std >= 0):
        raise ValueError(f"argument noise_std={noise_std!r} must be a finite number >= 0")
    if spectrum not in ("log-uniform", "log-spaced"):
        raise ValueError(f"argument spectrum={spectrum!r} must be 'log-uniform' or 'log-spaced'")
    U = _haar(d, rank, rng)
    V = _haar(n, rank, rng)
    if spectrum == "log-spaced" or rank <= 2:
        logs = np.linspace(0.0, -np.log(kappa), rank)
    else:  # log-uniform, with both endpoints present so that κ(A) is exactly the requested κ
        logs = np.concatenate([[0.0, -np.log(kappa)], rng.uniform(-np.log(kappa), 0.0, rank - 2)])
    sigma = np.sort(np.exp(logs))[::-1]
    A = (U * sigma) @ V.T
    W = rng.standard_normal((d_prime, d)) / np.sqrt(d)
    G = rng.standard_normal((n, n_prime)) / np.sqrt(n)
    C = A @ G
    B, D = W @ A, W @ C
    if noise_std > 0:
        A, B, C = (x + noise_std * rng.standard_normal(x.shape) for x in (A, B, C))
    return Blocks(*(np.asarray(x, dtype=dtype) for x in (A, B, C, D)))


def _haar(m: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """m×k matrix with orthonormal columns, Haar distributed (QR of a Gaussian with sign fix)."""
    Q, R = np.linalg.qr(rng.standard_normal((m, k)))
    return Q * np.sign(np.diag(R))


def scalar_regression(X: np.ndarray, y: np.ndarray, x_query: np.ndarray) -> Blocks:
    """The scalar-regression special case d' = n' = 1 (the paper's App. B).

    ``X`` is d×n (the n training inputs as columns), ``y`` the n labels, ``x_query`` the query (length d).
    Returns the prompt blocks with D = 0 (to be predicted); ``nystrom`` on them gives the OLS prediction.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float).reshape(1, -1)
    xq = np.asarray(x_query, dtype=float).reshape(-1, 1)
    if X.ndim != 2:
        raise ValueError(f"argument X must be a d×n matrix, got shape {X.shape}")
    if y.shape[1] != X.shape[1]:
        raise ValueError(f"argument y has {y.shape[1]} labels but X has {X.shape[1]} columns")
    if xq.shape[0] != X.shape[0]:
        raise ValueError(f"argument x_query has length {xq.shape[0]} but X has {X.shape[0]} rows")
    for name, v in (("X", X), ("y", y), ("x_query", xq)):
        check_finite(name, v)
    return Blocks(X, y, xq, np.zeros((1, 1)))


#: Largest diversity index below 1 that :func:`diverse_problem` constructs.
MAX_PARTIAL_ALPHA = 2 / 3


def diverse_problem(d: int, machines: int, alpha: float, *, r: int, kappa: float = 1e3, n_prime: int = 2,
                    d_prime: int = 2, rng: np.random.Generator):
    """Per-machine blocks whose ranges have a controlled diversity index (the paper's Definition 1).

    The joint range is an r-dimensional subspace V of R^d (Haar).  Machine μ's range is V minus one
    direction w_μ: with e a unit vector of V and f_μ unit vectors at equal angles 2πμ/M in a plane of V
    orthogonal to e, w_μ = cos θ·e + sin θ·f_μ.  Then (1/M) Σ_μ P_μ has eigenvalues sin²θ, 1 − sin²θ/2
    and 1 on V, so α = sin²θ for α ≤ 2/3 (``MAX_PARTIAL_ALPHA``); ``alpha=1`` gives every machine the
    same (r−1)-dimensional range (θ = 0).  No α strictly between 2/3 and 1 exists for M = 3 machines: a
    direction of the joint range missing from one machine's range has eigenvalue at most (M − 1)/M; a
    *mean* α in between comes from mixing runs (:func:`alpha_schedule`).

    A^μ = Q_μ diag(σ) V_μᵀ has full column rank r − 1 (exactly r − 1 columns, so rounding cannot add
    directions to its range), σ log-spaced in [1/κ, 1] (κ(A^μ) = κ); B^μ = W A^μ, C = A G with
    A = [A^1 … A^M] (C in the column span of A, Theorem 2's assumption), and the completion D = W C.
    Returns ``(A_blocks, B_blocks, C, D)``; compute α with ``eaglebook.diversity_index(A_blocks)``.
    """
    if isinstance(machines, bool) or not isinstance(machines, (int, np.integer)) or machines < 3:
        raise ValueError(f"argument machines={machines!r} must be an integer >= 3")
    if not (isinstance(r, (int, np.integer)) and 3 <= r <= d):
        raise ValueError(f"argument r={r!r} must be an integer with 3 <= r <= d = {d}")
    if not (alpha == 1 or 0 < alpha <= MAX_PARTIAL_ALPHA):
        raise ValueError(f"argument alpha={alpha!r} must be 1 or in (0, {MAX_PARTIAL_ALPHA:.4g}]: with {machines} "
                         f"machines no single problem has (M−1)/M < α < 1; mix runs for a mean in between "
                         f"(alpha_schedule)")
    if not (np.isfinite(kappa) and kappa >= 1):
        raise ValueError(f"argument kappa={kappa!r} must be a finite number >= 1")
    V = _haar(d, r, rng)
    theta = 0.0 if alpha == 1 else float(np.arcsin(np.sqrt(alpha)))
    sigma = np.exp(np.linspace(0.0, -np.log(kappa), r - 1))
    A_blocks = []
    for mu in range(machines):
        phi = 2 * np.pi * mu / machines
        w = np.zeros(r)
        w[0], w[1], w[2] = np.cos(theta), np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi)
        U, _, _ = np.linalg.svd(w[:, None])           # columns 1..r−1: an orthonormal basis of w^⊥ in V
        Q = V @ U[:, 1:] @ _haar(r - 1, r - 1, rng)
        A_blocks.append((Q * sigma) @ _haar(r - 1, r - 1, rng).T)
    A = np.concatenate(A_blocks, axis=1)
    W = rng.standard_normal((d_prime, d)) / np.sqrt(d)
    C = A @ (rng.standard_normal((A.shape[1], n_prime)) / np.sqrt(A.shape[1]))
    return A_blocks, [W @ a for a in A_blocks], C, W @ C


def alpha_schedule(mean_alpha: float, runs: int, machines: int = 3) -> list[float]:
    """Per-run α targets for :func:`diverse_problem` whose mean is ``mean_alpha`` (as close as ``runs``
    allows): the value itself when it can be constructed, else a mix of runs with α = 1 and α = 2/3
    (the paper reports *mean* α values such as 0.83 ≈ (1 + 2/3)/2 for M = 3)."""
    if mean_alpha == 1 or 0 < mean_alpha <= MAX_PARTIAL_ALPHA:
        return [float(mean_alpha)] * runs
    if not (MAX_PARTIAL_ALPHA < mean_alpha < 1):
        raise ValueError(f"argument mean_alpha={mean_alpha!r} must be in (0, 1]")
    ones = int(round(runs * (mean_alpha - MAX_PARTIAL_ALPHA) / (1 - MAX_PARTIAL_ALPHA)))
    return [1.0] * ones + [MAX_PARTIAL_ALPHA] * (runs - ones)

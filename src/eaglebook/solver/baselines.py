"""The solvers EAGLE is compared with (the paper's §5.1, §5.3, §5.4 and App. E.1), with one common trace.

Every function here estimates the same completion as EAGLE, D̂* = X* C with X* = B A^† the minimum-norm
solution of min_X ‖X A − B‖_F (A: d×n, B: d'×n, C: d×n'), and returns a :class:`Trace`: the completion,
the monitored error after every iteration, the solver time at the end of every iteration, the number of
iterations and a status.  One harness (``eaglebook.bench``) can then compare them all.

=====================  ==============================================================================
function               method, and what one *iteration* is
=====================  ==============================================================================
:func:`eagle`          EAGLE (Algorithm 1) through :func:`eaglebook.solver.iterate`; one UPDATE
:func:`lstsq`          LAPACK least squares (NumPy / SciPy ``gelsd`` / torch ``gelsd``); direct, 1
:func:`svd`            X* = B V Σ⁺ Uᵀ from an SVD of A (NumPy, LAPACK ``gesdd``); direct, 1
:func:`gd`             gradient descent on ½‖XA − B‖², step 1/σ̂², σ̂ by power iteration; one step
:func:`cgls`           CG on the normal equations X AAᵀ = BAᵀ in CGLS form; one CG step
:func:`lsqr`, :func:`lsmr`  LSQR / LSMR (:mod:`eaglebook.solver.krylov`) on Aᵀ x_j = b_j, one
                       right-hand side at a time; one Golub–Kahan bidiagonalisation step
:func:`sgd`            GD on an r-column sketch (fresh columns each step); one step
:func:`randsketch_cg`  sketch-and-precondition: a Gaussian sketch of Aᵀ, its QR as a right
                       preconditioner, then LSQR; one LSQR step (sketch + QR are set-up time)
:func:`gdpp`           GD++ (chapter 6): l conditioning layers and a one-step read-out; one layer
:func:`cholesky`       the normal equations by Cholesky on the smaller Gram matrix; direct, 1
:func:`newton_schulz`  Newton–Schulz (Schulz) iteration Z ← 2Z − Z A Z for A^†; GEMMs only; one step
:func:`sketch_lsqr`    sketch-and-precondition LSQR on the tall side (Blendenpik/LSRN); one LSQR step
:func:`eagle_accelerated`  EAGLE with the Polar-Express conditioning step; one round
=====================  ==============================================================================

**The registry.**  :data:`REGISTRY` is the one table of these solvers: name → :class:`Method` (the function,
``REGISTRY[name].fn``, its kind and fixed options, and which harness parts and problem shapes run it), in
the order the tables list them; ``REGISTRY[name].run(A, B, C, ...)`` runs it with the harness's arguments.

**Counting iterations comparably.**  GD, CGLS, LSQR, LSMR, SGD and the LSQR phase of RandSketch+CG
all touch A exactly twice per iteration (one product with A and one with Aᵀ per right-hand side), so
their iteration counts are counts of passes over the data.  An EAGLE iteration multiplies d×n matrices
(O(d n min(d, n)) flops) and is *not* a pass: compare EAGLE's iterations with theirs as the papers do,
and its cost with their cost through the timings.  The column-by-column SciPy solvers run the d'
right-hand sides one after the other; their iteration count is the largest per-column count, and their
time at iteration k is the sum over columns of each column's time to min(k, its own count).

**What is monitored.**  ``monitor=None`` (needs ``reference``): ‖D_k − ref‖_F / ‖ref‖_F.
``monitor="residual"``: ‖X_k A − B‖_F² / ‖B‖_F² (the paper's Table 2 stopping rule; EAGLE's X is its
D, so this needs C = I_d).  ``target`` stops a run at the first iteration whose monitored value is at
most ``target`` (column-by-column methods stop each column when *its* row meets the target, which
implies the target for the whole).  ``tol`` is each method's own stopping rule where it has one:
‖D_k − D_{k−1}‖_F ≤ tol·‖D_k‖_F (EAGLE's and the paper's CG rule); for LSQR/LSMR it is their
``atol = btol = tol`` (as in SciPy).

**Timing.**  ``Trace.times[k-1]`` is the solver time at the end of iteration k, set-up included;
computing the monitor runs on a paused clock (its cost is ``Trace.bookkeeping``, excluded).  Timings
are wall-clock on whatever threads NumPy's BLAS and torch are set to use; the caller controls those.

Bad input (non-finite or non-numeric arrays, mismatched shapes, options out of range) raises
``ValueError`` naming the argument.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import scipy.linalg
import torch

from .._arrays import check_finite, check_shapes, int_in, is_number, positive, to_tensor
from . import krylov
from .eagle import iterate as eagle_iterate
from .norms import power_norm
from .status import STATUSES as _VOCABULARY

__all__ = ["Trace", "Method", "REGISTRY", "STATUSES", "eagle", "lstsq", "svd", "gd", "cgls", "lsqr",
           "lsmr", "sgd", "randsketch_cg", "gdpp", "sigma_max",
           "cholesky", "newton_schulz", "sketch_lsqr", "eagle_accelerated", "DTYPES"]

#: The statuses a trace can have (a subset of the package's one vocabulary, :data:`eaglebook.solver.STATUSES`).
STATUSES = ("direct", "target", "converged", "max_iter", "time_limit", "non_finite", "breakdown")
assert set(STATUSES) <= set(_VOCABULARY)
MONITORS = ("error", "residual")


@dataclass
class Trace:
    """What every solver of this module returns.

    Attributes
    ----------
    method : the solver's name.
    D : the completion X C (float64 NumPy, d'×n').
    iterations : iterations run (1 for a direct method).
    status : ``"direct"``, ``"target"`` (monitor reached ``target``), ``"converged"`` (own stopping
        rule), ``"max_iter"``, ``"time_limit"``, ``"non_finite"`` or ``"breakdown"`` (the package's one
        status vocabulary, :data:`eaglebook.solver.STATUSES`).
    elapsed : solver seconds, set-up included, bookkeeping excluded.
    setup : seconds before the first iteration (power iterations, sketch and QR, input conversion).
    times : float64 array, ``times[k-1]`` = solver seconds at the end of iteration k.
    values : float64 array of the monitored value after each iteration (None without a monitor).
    monitor : ``"error"``, ``"residual"`` or None.
    bookkeeping : seconds spent computing the monitor (on a paused clock, not in ``elapsed``).
    info : method-specific details (step size, sketch size, rank of the preconditioner, ...).
    """

    method: str
    D: np.ndarray
    iterations: int
    status: str
    elapsed: float
    setup: float
    times: np.ndarray
    values: np.ndarray | None
    monitor: str | None
    bookkeeping: float = 0.0
    info: dict = field(default_factory=dict)

    def iterations_to(self, level: float) -> int | None:
        """The first iteration whose monitored value is ≤ ``level`` (None if never)."""
        if self.values is None:
            return None
        hit = np.flatnonzero(self.values <= level)
        return int(hit[0]) + 1 if hit.size else None

    def time_to(self, level: float) -> float | None:
        """Solver seconds to the first iteration whose monitored value is ≤ ``level`` (None if never)."""
        k = self.iterations_to(level)
        return None if k is None else float(self.times[k - 1])

    @property
    def per_iteration(self) -> float:
        """Seconds per iteration, set-up excluded."""
        return (self.elapsed - self.setup) / max(self.iterations, 1)

    @property
    def final(self) -> float | None:
        return None if self.values is None or not self.values.size else float(self.values[-1])

    def summary(self, levels=(1e-2, 1e-6, 1e-12)) -> dict:
        """Plain-data summary (JSON friendly)."""
        return dict(method=self.method, iterations=self.iterations, status=self.status, elapsed=self.elapsed,
                    setup=self.setup, per_iteration=self.per_iteration, final=self.final, monitor=self.monitor,
                    bookkeeping=self.bookkeeping, info=dict(self.info),
                    to={f"{lv:g}": dict(iterations=self.iterations_to(lv), time=self.time_to(lv)) for lv in levels})


# ----------------------------------------------------------------------------------------------- inputs
class _Problem:
    """A, B, C (and the reference) as float64 NumPy arrays, validated; the monitor's pieces."""

    def __init__(self, A, B, C, reference, monitor):
        named = {}
        for name, x in (("A", A), ("B", B), ("C", C)):
            t = to_tensor(name, x)
            if t.ndim != 2:
                raise ValueError(f"argument {name} must be a single matrix (no batch), got shape {tuple(t.shape)}")
            check_finite(name, t)
            named[name] = t.detach().cpu().to(torch.float64).numpy()
        self.A, self.B, self.C = named["A"], named["B"], named["C"]
        self.d, self.n, self.dp, self.np_ = check_shapes(self.A, self.B, self.C)
        if monitor is not None and monitor not in MONITORS:
            raise ValueError(f"argument monitor={monitor!r} must be one of {MONITORS} or None")
        self.ref = None
        if reference is not None:
            r = to_tensor("reference", reference)
            check_finite("reference", r)
            if tuple(r.shape) != (self.dp, self.np_):
                raise ValueError(f"argument reference has shape {tuple(r.shape)}, expected d'×n' = {(self.dp, self.np_)}")
            self.ref = r.detach().cpu().to(torch.float64).numpy()
        if monitor == "error" and self.ref is None:
            raise ValueError("argument reference is required for monitor='error'")
        self.monitor = monitor
        if monitor == "error":
            self.den = float((self.ref ** 2).sum()) or 1.0
            self.row_den = np.maximum((self.ref ** 2).sum(1), np.finfo(float).tiny)
        elif monitor == "residual":
            self.den = float((self.B ** 2).sum()) or 1.0
            self.row_den = np.maximum((self.B ** 2).sum(1), np.finfo(float).tiny)

    @staticmethod
    def cast(x, dtype: str):
        """``x`` as a C-contiguous array of ``dtype`` (a no-op for float64)."""
        return x if dtype == "float64" else np.ascontiguousarray(x, dtype=np.float32)

    def row_num(self, x, j: int) -> float:
        """Squared numerator of the monitor for row j of X, given that row x (length d)."""
        if self.monitor == "error":
            return float(((x @ self.C - self.ref[j]) ** 2).sum())
        return float(((x @ self.A - self.B[j]) ** 2).sum())

    def value(self, num_total: float) -> float:
        v = num_total / self.den
        return math.sqrt(v) if self.monitor == "error" else v


def _monitor(monitor, reference):
    """None means: the error when a reference is given, else no monitor."""
    if monitor is None:
        return "error" if reference is not None else None
    return monitor


def _opts(max_iter, target, tol, time_limit):
    int_in("max_iter", max_iter, 1)
    if target is not None:
        positive("target", target)
    if tol is not None:
        positive("tol", tol)
    if time_limit is not None:
        positive("time_limit", time_limit)


DTYPES = ("float64", "float32")


def _dtype(dtype) -> str:
    if dtype not in DTYPES:
        raise ValueError(f"argument dtype={dtype!r} must be one of {DTYPES}")
    return dtype


def _nonneg(name, v):
    if not is_number(v) or not math.isfinite(float(v)) or v < 0:
        raise ValueError(f"argument {name}={v!r} must be a finite number >= 0")
    return float(v)


class _Recorder:
    """Timestamps and monitored values of one run; the clock pauses while the monitor is computed."""

    def __init__(self, prob: _Problem | None, *, target, tol, max_iter, time_limit, t0=None):
        self.prob, self.target, self.tol, self.max_iter, self.time_limit = prob, target, tol, max_iter, time_limit
        self.t0 = time.perf_counter() if t0 is None else t0
        self.paused = 0.0
        self.setup = 0.0
        self.times: list[float] = []
        self.values: list[float] = []
        self.status = "max_iter"
        self._prev_D = None

    def now(self) -> float:
        return time.perf_counter() - self.t0 - self.paused

    def mark_setup(self) -> None:
        self.setup = self.now()

    def step(self, X=None, D=None) -> bool:
        """Record the end of an iteration (X: d'×d iterate, or D directly); return True to stop."""
        t = self.now()
        self.times.append(t)
        b0 = time.perf_counter()
        stop = False
        p = self.prob
        need_D = self.tol is not None or (p is not None and p.monitor is not None)
        if need_D:
            if D is None:
                D = X @ p.C if X is not None else None
            if not np.isfinite(D).all():
                self.status, stop = "non_finite", True
            if p is not None and p.monitor is not None:
                if p.monitor == "residual" and X is None:
                    X = D       # EAGLE with C = I
                num = ((D - p.ref) ** 2).sum() if p.monitor == "error" else ((X @ p.A - p.B) ** 2).sum()
                v = p.value(float(num))
                self.values.append(v)
                if not stop and self.target is not None and v <= self.target:
                    self.status, stop = "target", True
            if not stop and self.tol is not None and self._prev_D is not None:
                if np.linalg.norm(D - self._prev_D) <= self.tol * np.linalg.norm(D):
                    self.status, stop = "converged", True
            if self.tol is not None:
                self._prev_D = np.array(D, copy=True)
        self.paused += time.perf_counter() - b0
        if not stop and len(self.times) >= self.max_iter:
            self.status, stop = "max_iter", True
        if not stop and self.time_limit is not None and t >= self.time_limit:
            self.status, stop = "time_limit", True
        return stop

    def trace(self, method, D, info=None, status=None) -> Trace:
        vals = np.asarray(self.values, dtype=np.float64) if self.prob is not None and self.prob.monitor else None
        return Trace(method=method, D=np.asarray(D, dtype=np.float64), iterations=len(self.times),
                     status=status or self.status, elapsed=self.times[-1] if self.times else self.now(),
                     setup=self.setup, times=np.asarray(self.times, dtype=np.float64), values=vals,
                     monitor=self.prob.monitor if self.prob is not None else None, bookkeeping=self.paused,
                     info=dict(info or {}))


# ----------------------------------------------------------------------------------------------- EAGLE
def eagle(A, B, C, *, reference=None, monitor=None, target=None, tol=None, max_iter=1000,
          time_limit=None, sketch=None, rho="power", seed=0, **options) -> Trace:
    """EAGLE through :func:`eaglebook.solver.iterate` (so the iteration is exactly the solver's), traced.

    ``sketch``, ``rho`` (default ``"power"``, as the paper's timing experiments) and ``options`` (eta,
    gamma, power_iters, ...) are passed to ``iterate``; the stopping rules are this module's (see the
    module doc).  Computed in float64.  With ``monitor="residual"``, C must be I_d so that D = X.
    """
    _opts(max_iter, target, tol, time_limit)
    t0 = time.perf_counter()
    prob = _Problem(A, B, C, reference, _monitor(monitor, reference))
    if monitor == "residual" and (prob.np_ != prob.d or not np.array_equal(prob.C, np.eye(prob.d))):
        raise ValueError("argument C must be the identity I_d for EAGLE with monitor='residual' (then D = X)")
    rec = _Recorder(prob, target=target, tol=tol, max_iter=max_iter, time_limit=time_limit, t0=t0)
    it = eagle_iterate(prob.A, prob.B, prob.C, sketch=sketch, rho=rho, seed=seed, **options)
    D = None
    for state in it:
        if state.ell == 0:
            rec.mark_setup()
            continue
        D = state.D
        if rec.step(D=D):
            break
    return rec.trace("EAGLE" if sketch is None else f"EAGLE (r = {sketch})", D,
                     info=dict(sketch=sketch, rho=rho if isinstance(rho, str) else "callable", **options))


# ----------------------------------------------------------------------------------------------- direct
def lstsq(A, B, C, *, reference=None, monitor=None, backend="numpy", driver="gelsd", dtype="float64") -> Trace:
    """X* = argmin ‖XA − B‖_F by LAPACK least squares on Aᵀ Xᵀ = Bᵀ, then D = X* C (one "iteration").

    ``backend``: ``"numpy"`` (``numpy.linalg.lstsq``, LAPACK ``gelsd``), ``"scipy"``
    (``scipy.linalg.lstsq`` with ``driver``), or ``"torch"`` (``torch.linalg.lstsq`` with ``driver``;
    ``gelsd`` is SVD-based and handles rank-deficient A, as the paper's torch baseline; ``gelsy`` is
    QR with column pivoting, usually faster).  ``dtype``: ``"float64"`` or ``"float32"`` (computed natively
    in that precision by SciPy and torch; NumPy's lstsq would silently promote float32, so ``backend="numpy"``
    with float32 computes in float64 like NumPy).  The time includes the conversion to the backend's arrays.
    """
    backends = ("numpy", "scipy", "torch")
    if backend not in backends:
        raise ValueError(f"argument backend={backend!r} must be one of {backends}")
    drivers = ("gelsd", "gelsy", "gelss")
    if driver not in drivers:
        raise ValueError(f"argument driver={driver!r} must be one of {drivers}")
    if backend == "numpy" and driver != "gelsd":
        raise ValueError(f"argument driver={driver!r}: numpy.linalg.lstsq always uses gelsd; pass backend='scipy' "
                         "or backend='torch' for another driver")
    dt = _dtype(dtype)
    prob = _Problem(A, B, C, reference, _monitor(monitor, reference))
    rec = _Recorder(prob, target=None, tol=None, max_iter=1, time_limit=None)
    M, Rhs = prob.cast(prob.A.T, dt), prob.cast(prob.B.T, dt)
    if backend == "numpy":
        Xt = np.linalg.lstsq(M, Rhs, rcond=None)[0]
    elif backend == "scipy":
        Xt = scipy.linalg.lstsq(M, Rhs, lapack_driver=driver, check_finite=False)[0]
    else:
        Xt = torch.linalg.lstsq(torch.from_numpy(M), torch.from_numpy(Rhs), driver=driver).solution.numpy()
    X = Xt.T
    D = X @ prob.cast(prob.C, dt)
    rec.step(X=X, D=D)
    name = f"lstsq ({backend})" if driver == "gelsd" else f"lstsq ({backend} {driver})"
    return rec.trace(name, D, info=dict(backend=backend, driver=driver, dtype=dt), status="direct")


def svd(A, B, C, *, reference=None, monitor=None, rcond=None) -> Trace:
    """X* = B V Σ⁺ Uᵀ from the thin SVD A = U Σ Vᵀ (NumPy, LAPACK ``gesdd``); singular values below
    ``rcond``·σ_max (default max(d, n)·eps) are treated as zero.  One "iteration"."""
    prob = _Problem(A, B, C, reference, _monitor(monitor, reference))
    if rcond is not None:
        _nonneg("rcond", rcond)
    rec = _Recorder(prob, target=None, tol=None, max_iter=1, time_limit=None)
    U, s, Vt = np.linalg.svd(prob.A, full_matrices=False)
    cut = (rcond if rcond is not None else max(prob.d, prob.n) * np.finfo(float).eps) * (s[0] if s.size else 0)
    keep = s > cut
    X = ((prob.B @ Vt[keep].T) / s[keep]) @ U[:, keep].T
    D = X @ prob.C
    rec.step(X=X, D=D)
    return rec.trace("SVD", D, info=dict(rank=int(keep.sum())), status="direct")


def cholesky(A, B, C, *, reference=None, monitor=None, dtype="float64") -> Trace:
    """The normal equations by Cholesky on the smaller Gram matrix (one "iteration").

    d <= n: X* = B Aᵀ (AAᵀ)⁻¹ from the d×d Gram matrix AAᵀ = LLᵀ, then D = X* C.  d > n:
    D = B (AᵀA)⁻¹ Aᵀ C from the n×n Gram matrix (the overdetermined least-squares problem A Y = C, Y = A^† C).
    Both equal B A^† C when the Gram matrix is positive definite (A of full rank); its condition number is
    κ(A)², so the accuracy is about κ(A)²·u, and a rank-deficient or very ill-conditioned A makes the
    factorisation fail: the trace then has status ``"breakdown"`` and D = 0 (``info["error"]`` says why).
    Cost: one Gram product (2·min(d, n)²·max(d, n) flops; a GEMM) and a Cholesky of min(d, n)³/3.
    """
    dt = _dtype(dtype)
    prob = _Problem(A, B, C, reference, _monitor(monitor, reference))
    rec = _Recorder(prob, target=None, tol=None, max_iter=1, time_limit=None)
    A_, B_, C_ = prob.cast(prob.A, dt), prob.cast(prob.B, dt), prob.cast(prob.C, dt)
    side = "left" if prob.d <= prob.n else "right"
    info = dict(dtype=dt, gram=side)
    try:
        if side == "left":                       # X (AAᵀ) = B Aᵀ
            F = scipy.linalg.cho_factor(A_ @ A_.T, check_finite=False)
            D = scipy.linalg.cho_solve(F, A_ @ B_.T, check_finite=False).T @ C_
        else:                                    # (AᵀA) Y = Aᵀ C, D = B Y
            F = scipy.linalg.cho_factor(A_.T @ A_, check_finite=False)
            D = B_ @ scipy.linalg.cho_solve(F, A_.T @ C_, check_finite=False)
        status = "direct" if np.isfinite(D).all() else "non_finite"
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError) as e:
        D, status = np.zeros((prob.dp, prob.np_)), "breakdown"
        info["error"] = f"the Gram matrix is not numerically positive definite ({e})"
    rec.step(D=D)
    return rec.trace("Cholesky (normal eq.)", D, info=info, status=status)


def newton_schulz(A, B, C, *, reference=None, monitor=None, target=None, tol=None, max_iter=200, time_limit=None,
                  power_iters=10, seed=0, dtype="float64") -> Trace:
    """The Newton–Schulz (Schulz, Ben-Israel–Cohen) iteration for the pseudo-inverse, GEMMs only.

    Z₀ = α Aᵀ with α = 1/(1.05 σ̂)² (σ̂ ≈ ‖A‖₂ from ``power_iters`` power iterations: set-up time), then
    Z_{k+1} = 2Z_k − Z_k (A Z_k) (d <= n: the d×d product A Z_k) or 2Z_k − (Z_k A) Z_k (d > n: n×n);
    Z_k → A^† (for any rank: from αAᵀ the iterates stay in the row space), the error in direction i
    falls like (1 − ασ_i²)^(2^k): about log₂(κ²) iterations to start, then quadratic.  D_k = B Z_k C.
    Two GEMMs of 2·min(d, n)²·max(d, n) flops per iteration, the same as one EAGLE UPDATE; it needs the
    whole pseudo-inverse (n×d) where EAGLE carries only d'×n and d×n' blocks besides A.  ``tol``: the
    change rule on D (module doc).
    """
    _opts(max_iter, target, tol, time_limit)
    int_in("power_iters", power_iters, 1)
    dt = _dtype(dtype)
    t0 = time.perf_counter()
    prob = _Problem(A, B, C, reference, _monitor(monitor, reference))
    rec = _Recorder(prob, target=target, tol=tol, max_iter=max_iter, time_limit=time_limit, t0=t0)
    A_, B_ = prob.cast(prob.A, dt), prob.cast(prob.B, dt)
    s, _ = sigma_max(prob.A, power_iters, seed=seed)
    alpha = 1.0 / (1.05 * s) ** 2 if s > 0 else 0.0
    Z = (alpha * A_.T).astype(A_.dtype)               # n×d
    left = prob.d <= prob.n
    rec.mark_setup()
    with np.errstate(over="ignore", invalid="ignore"):   # a diverging run ends with status "non_finite"
        while True:
            Z = 2 * Z - Z @ (A_ @ Z) if left else 2 * Z - (Z @ A_) @ Z
            if rec.step(X=B_ @ Z):
                break
        D = (B_ @ Z) @ prob.cast(prob.C, dt)
    return rec.trace("Newton–Schulz (A⁺)", D, info=dict(alpha=alpha, sigma_hat=s, dtype=dt, gram="left" if left else "right"))


def sketch_lsqr(A, B, C, *, reference=None, monitor=None, target=None, tol=None, max_iter=10_000, time_limit=None,
                oversample=2.0, seed=0) -> Trace:
    """Sketch-and-precondition LSQR (Blendenpik / LSRN style) on the *tall* side of the problem.

    B A^† C can be computed from either least-squares problem: min ‖XA − B‖ (the matrix Aᵀ, n×d) or
    min ‖A Y − C‖ (the matrix A, d×n; D = B Y).  This solver takes the one whose matrix is tall (d > n:
    A Y = C with the n' columns of C; d < n: Aᵀ Xᵀ = Bᵀ, as :func:`randsketch_cg`): a Gaussian sketch with
    m = ⌈oversample·k⌉ rows (k the short side) of the tall matrix, the pivoted QR of the sketch as a right
    preconditioner, then LSQR.  It needs m < the tall side (a sketch smaller than the matrix): otherwise
    (square problems, or oversample too large) it raises ``ValueError``; use :func:`randsketch_cg` there.
    With full column rank of the tall matrix both sides give B A^† C.
    """
    _opts(max_iter, target, tol, time_limit)
    oversample = positive("oversample", oversample)
    if oversample < 1:
        raise ValueError(f"argument oversample={oversample!r} must be >= 1")
    prob0 = _Problem(A, B, C, reference, _monitor(monitor, reference))
    d, n = prob0.d, prob0.n
    short, tall = min(d, n), max(d, n)
    m = int(math.ceil(oversample * short))
    if m >= tall:
        raise ValueError(f"sketch-and-precondition needs a tall problem: the sketch has ⌈{oversample:g}·{short}⌉ = {m} "
                         f"rows, not fewer than the {tall} rows of the tall side (A is {d}×{n}); use randsketch_cg or a "
                         "direct solver for square problems")
    if d < n:
        tr = randsketch_cg(A, B, C, reference=reference, monitor=monitor, target=target, tol=tol, max_iter=max_iter,
                           time_limit=time_limit, oversample=oversample, seed=seed)
        tr.method = "Sketch+LSQR"
        tr.info["side"] = "XA = B"
        return tr
    if prob0.monitor == "residual":
        raise ValueError("argument monitor='residual' (‖XA − B‖) is not available on the A Y = C side (d > n)")
    # d > n: min ‖A Y − C‖ column by column; the monitor is on D = B Y, i.e. row j of the trace's X is a
    # column of Y.  Run it as the transposed completion: Aᵀ → A, B ↔ Cᵀ (D = B A^† C ⇔ Dᵀ = Cᵀ (Aᵀ)^† Bᵀ).
    ref_t = None if prob0.ref is None else prob0.ref.T
    tr = randsketch_cg(prob0.A.T, prob0.C.T, prob0.B.T, reference=ref_t, monitor=monitor, target=target, tol=tol,
                       max_iter=max_iter, time_limit=time_limit, oversample=oversample, seed=seed)
    tr.D = np.ascontiguousarray(tr.D.T)
    tr.method = "Sketch+LSQR"
    tr.info["side"] = "AY = C"
    return tr


def eagle_accelerated(A, B, C, *, reference=None, monitor=None, target=None, max_iter=200, time_limit=None,
                      conditioning="polar-express", seed=0, dtype="float64", tol=None) -> Trace:
    """EAGLE with an accelerated conditioning step (``eaglebook.solve(..., conditioning=...)``;
    :mod:`eaglebook.solver.accelerated`), traced: the error per round comes from the solver's own
    ``rel_error`` (so the trace needs a reference and ``monitor="error"``); the time per round is the solve's
    wall time split evenly over its rounds (every round costs the same).  ``target`` truncates the trace at the
    first round that meets it, as for GD++."""
    from .eagle import solve as _solve
    _opts(max_iter, target, tol, time_limit)
    dt = _dtype(dtype)
    mon = _monitor(monitor, reference)
    if mon not in (None, "error"):
        raise ValueError(f"argument monitor={monitor!r}: the accelerated EAGLE trace supports only the error monitor")
    prob = _Problem(A, B, C, reference, mon)
    A_, B_, C_ = (prob.cast(x, dt) for x in (prob.A, prob.B, prob.C))
    t0 = time.perf_counter()
    res = _solve(A_, B_, C_, conditioning=conditioning, max_iter=max_iter, seed=seed, tol=tol,
                 reference=prob.ref, certify="none")
    elapsed = time.perf_counter() - t0
    L = res.iterations
    times = elapsed * np.arange(1, L + 1) / L
    values = None if res.rel_error is None else np.asarray(res.rel_error, dtype=np.float64)
    status = {"converged": "converged", "max_iter": "max_iter", "non_finite": "non_finite"}.get(res.status, "breakdown")
    if target is not None and values is not None and (values <= target).any():
        L, status = int(np.flatnonzero(values <= target)[0]) + 1, "target"
    return Trace(f"EAGLE ({conditioning})", np.asarray(res.D, dtype=np.float64), L, status, float(times[L - 1]), 0.0,
                 times[:L], None if values is None else values[:L], mon, 0.0,
                 info=dict(conditioning=conditioning, dtype=dt, timing="one solve, split evenly over its rounds",
                           solver_status=res.status))


# ----------------------------------------------------------------------------------------------- gradient methods
def sigma_max(A, iters: int = 2, *, seed=0, u0=None) -> tuple[float, np.ndarray]:
    """Estimate ‖A‖₂ by ``iters`` power iterations on A Aᵀ from a Gaussian (or the given) start vector: the
    package's one power iteration (:func:`eaglebook.solver.norms.power_norm`) on NumPy arrays.

    Returns (estimate, last vector).  The estimate is a lower bound of ‖A‖₂ (the paper's GD uses two
    iterations; its step 1/σ̂² is then at most 1/(cos² θ σ²), still below the stability limit 2/σ²
    unless the start is nearly orthogonal to the top singular vector).
    """
    int_in("iters", iters, 1)
    A = np.asarray(A, dtype=np.float64)
    u = np.random.default_rng(seed).standard_normal(A.shape[0]) if u0 is None else np.array(u0, dtype=np.float64)
    s, u = power_norm(torch.from_numpy(A), torch.from_numpy(u)[:, None], iters)
    return float(s), u[:, 0].numpy()


def _gradient_step(X, A, B, eta: float, ridge: float) -> None:
    """X ← X − η ∇f(X) in place for f(X) = ½‖XA − B‖_F² + ½·ridge·‖X‖_F² (shared by GD and SGD)."""
    G = (X @ A - B) @ A.T
    if ridge:
        G += ridge * X
    X -= eta * G


def gd(A, B, C, *, reference=None, monitor=None, target=None, tol=None, max_iter=100_000, time_limit=None,
       ridge=0.0, power_iters=2, seed=0) -> Trace:
    """Gradient descent on f(X) = ½‖XA − B‖_F² + ½·ridge·‖X‖_F² from X = 0 (the paper's App. E.1).

    Step η = 1/(σ̂² + ridge) with σ̂ ≈ ‖A‖₂ from ``power_iters`` power iterations (set-up time).  The
    paper adds ridge = 1e-3 when A is rank-deficient and uses 0 when it has full rank; note that the
    ridge moves the limit away from B A^† C (the error then floors).  One iteration: X ← X − η∇f.
    """
    _opts(max_iter, target, tol, time_limit)
    ridge = _nonneg("ridge", ridge)
    int_in("power_iters", power_iters, 1)
    t0 = time.perf_counter()
    prob = _Problem(A, B, C, reference, _monitor(monitor, reference))
    rec = _Recorder(prob, target=target, tol=tol, max_iter=max_iter, time_limit=time_limit, t0=t0)
    A_, B_ = prob.A, prob.B
    s, _ = sigma_max(A_, power_iters, seed=seed)
    eta = 1.0 / (s * s + ridge) if s > 0 else 0.0
    X = np.zeros((prob.dp, prob.d))
    rec.mark_setup()
    while True:
        _gradient_step(X, A_, B_, eta, ridge)
        if rec.step(X=X):
            break
    return rec.trace("GD", X @ prob.C, info=dict(eta=eta, sigma_hat=s, ridge=ridge))


def cgls(A, B, C, *, reference=None, monitor=None, target=None, tol=None, max_iter=100_000, time_limit=None) -> Trace:
    """Conjugate gradients on the normal equations X (AAᵀ) = BAᵀ, in the CGLS form that never forms AAᵀ.

    The d' rows of X are d' independent CG runs (each with its own α, β), advanced together with
    matrix products.  From X = 0 CG stays in the row space of A, so it converges to B A^† (the
    minimum-norm solution) in exact arithmetic; in floating point its iteration count grows like κ(A)
    (κ(AAᵀ) = κ²).  One iteration = one product with A and one with Aᵀ.  ``tol`` is the paper's CG rule
    ‖X_k C − X_{k−1} C‖_F ≤ tol·‖X_k C‖_F.  A right-hand side whose search direction vanishes stops
    moving (status ``"breakdown"`` if every one does before a stopping rule fires).
    """
    _opts(max_iter, target, tol, time_limit)
    t0 = time.perf_counter()
    prob = _Problem(A, B, C, reference, _monitor(monitor, reference))
    rec = _Recorder(prob, target=target, tol=tol, max_iter=max_iter, time_limit=time_limit, t0=t0)
    A_, At = prob.A, np.ascontiguousarray(prob.A.T)
    X = np.zeros((prob.dp, prob.d))
    R = prob.B.copy()                 # residual B − X A  (d'×n)
    S = R @ At                        # gradient direction (d'×d)
    P = S.copy()
    gam = (S * S).sum(1)
    tiny = np.finfo(float).tiny
    rec.mark_setup()
    status = None
    while True:
        Q = P @ A_
        qq = (Q * Q).sum(1)
        alpha = np.where(qq > tiny, gam / np.where(qq > tiny, qq, 1.0), 0.0)
        X += alpha[:, None] * P
        R -= alpha[:, None] * Q
        S = R @ At
        gnew = (S * S).sum(1)
        beta = np.where(gam > tiny, gnew / np.where(gam > tiny, gam, 1.0), 0.0)
        P = S + beta[:, None] * P
        gam = gnew
        if rec.step(X=X):
            break
        if not (gam > tiny).any():
            status = "breakdown"
            break
    return rec.trace("CG", X @ prob.C, status=status)


def sgd(A, B, C, *, sketch, reference=None, monitor=None, target=None, tol=None, max_iter=100_000,
        time_limit=None, ridge=0.0, power_iters=2, seed=0) -> Trace:
    """GD on an r-column sketch (the paper's SGD baseline of the compute-limited regime, App. E.1).

    Each iteration draws r of the n columns at random (without replacement), Ã = A S, B̃ = B S, and steps
    X ← X − η_k ((X Ã − B̃) Ãᵀ + ridge·X) with η_k = 1/(σ̂_k² + ridge), σ̂_k ≈ ‖Ã‖₂ from ``power_iters``
    power iterations warm-started from the previous step's vector.  One iteration = one sketched step.
    """
    _opts(max_iter, target, tol, time_limit)
    ridge = _nonneg("ridge", ridge)
    int_in("power_iters", power_iters, 1)
    t0 = time.perf_counter()
    prob = _Problem(A, B, C, reference, _monitor(monitor, reference))
    r = int_in("sketch", sketch, 1, prob.n)
    rec = _Recorder(prob, target=target, tol=tol, max_iter=max_iter, time_limit=time_limit, t0=t0)
    rng = np.random.default_rng(seed)
    A_, B_ = prob.A, prob.B
    X = np.zeros((prob.dp, prob.d))
    u = rng.standard_normal(prob.d)
    rec.mark_setup()
    while True:
        cols = rng.choice(prob.n, size=r, replace=False)
        At, Bt = A_[:, cols], B_[:, cols]
        s, u = sigma_max(At, power_iters, u0=u)
        eta = 1.0 / (s * s + ridge) if s > 0 else 0.0
        _gradient_step(X, At, Bt, eta, ridge)
        if rec.step(X=X):
            break
    return rec.trace(f"SGD (r = {r})", X @ prob.C, info=dict(sketch=r, ridge=ridge))


# ----------------------------------------------------------------------------------------------- LSQR / LSMR
def _column_krylov(kind, prob: _Problem, op, col_map, *, target, tol, max_iter, time_limit, setup_t, t_start,
                   record=True):
    """Run LSQR/LSMR (:mod:`eaglebook.solver.krylov`, the papers' algorithms with SciPy's stopping tests) on
    ``op`` (n×k) for each row b_j of B, the iterate of every iteration coming through the solver's callback;
    ``col_map(y)`` maps a solution of the (preconditioned) problem to x_j (length d).  Returns the combined
    trace pieces."""
    solve = krylov.lsqr if kind == "lsqr" else krylov.lsmr
    a = b = tol if tol is not None else 0.0
    conlim = 1e8 if tol is not None else 0.0        # SciPy's default, or every test off
    matvec = op.matvec if hasattr(op, "matvec") else (lambda v: op @ v)
    rmatvec = op.rmatvec if hasattr(op, "rmatvec") else (lambda u: op.T @ u)
    rows = []
    status_all = []
    bookkeeping = 0.0
    monitored = record and prob.monitor is not None
    for j in range(prob.dp):
        bj = prob.B[j]
        t_times, nums = [], []
        pause = [0.0]
        stopped = [None, None]         # why a callback stopped the column, and its iterate
        t0 = time.perf_counter()

        def now():
            return time.perf_counter() - t0 - pause[0]

        def observe(y, k):
            t = now()
            b0 = time.perf_counter()
            x = col_map(y)
            t_times.append(t)
            stop = None
            if monitored:
                num = prob.row_num(x, j)
                nums.append(num)
                if target is not None and _row_value(prob, num, j) <= target:
                    stop = "target"
            pause[0] += time.perf_counter() - b0
            if stop is None and time_limit is not None and t >= time_limit:
                stop = "time_limit"
            if stop:
                stopped[0], stopped[1] = stop, np.array(x, copy=True)
                return True
            return False

        out = solve(matvec, rmatvec, bj, atol=a, btol=b, conlim=conlim, maxiter=max_iter,
                    callback=observe if record else None)
        itn = out.itn
        if stopped[0] is not None:
            status, x = stopped
        else:
            x = col_map(out.x)
            if out.istop in (0, 1, 2, 4, 5):     # 0: x = 0 is exact; 4, 5: the tests hit machine precision
                status = "converged"
            elif out.istop == 7:
                status = "max_iter"
            else:
                status = "breakdown"
        if not np.isfinite(x).all():
            status = "non_finite"
        if not record:                       # no trace: one timestamp for the whole column
            t_times.append(now())
            if prob.monitor is not None:
                b0 = time.perf_counter()
                nums.append(prob.row_num(x, j))
                bookkeeping += time.perf_counter() - b0
        elif not t_times:                    # stopped before the first iteration (x = 0 exact)
            t_times.append(now())
            if monitored:
                nums.append(prob.row_num(x, j))
        bookkeeping += pause[0]
        rows.append(dict(x=x, times=np.asarray(t_times), nums=np.asarray(nums), itn=max(itn, 1), status=status))
        status_all.append(status)
    K = max(r["itn"] for r in rows)      # a bare run's one timestamp stands for all its iterations
    times = np.zeros(K)
    num = np.zeros(K)
    for r in rows:
        k = len(r["times"])
        idx = np.minimum(np.arange(K), k - 1)
        times += r["times"][idx]
        if monitored:
            num += r["nums"][idx]
    times += setup_t
    X = np.stack([r["x"] for r in rows])
    values = None
    if monitored:
        values = np.sqrt(num / prob.den) if prob.monitor == "error" else num / prob.den
    order = ("non_finite", "breakdown", "time_limit", "max_iter", "converged", "target")
    status = min(status_all, key=order.index)
    return X, times, (values if monitored else None), status, bookkeeping, [r["itn"] for r in rows]


def _row_value(prob, num, j):
    v = num / prob.row_den[j]
    return math.sqrt(v) if prob.monitor == "error" else v


def _krylov(kind, A, B, C, reference, monitor, target, tol, max_iter, time_limit, record=True):
    _opts(max_iter, target, tol, time_limit)
    t0 = time.perf_counter()
    prob = _Problem(A, B, C, reference, _monitor(monitor, reference))
    M = np.ascontiguousarray(prob.A.T)
    setup = time.perf_counter() - t0
    X, times, values, status, book, its = _column_krylov(kind, prob, M, lambda y: np.asarray(y, dtype=np.float64),
                                                         target=target, tol=tol, max_iter=max_iter,
                                                         time_limit=time_limit, setup_t=setup, t_start=t0, record=record)
    name = "LSQR" if kind == "lsqr" else "LSMR"
    return Trace(name, X @ prob.C, len(times), status, float(times[-1]), setup, times, values,
                 prob.monitor if values is not None else None, book, info=dict(iterations_per_column=its))


def lsqr(A, B, C, *, reference=None, monitor=None, target=None, tol=None, max_iter=100_000,
         time_limit=None, record=True) -> Trace:
    """LSQR (Paige and Saunders 1982; :func:`eaglebook.solver.krylov.lsqr`, the iterates and stopping tests of
    ``scipy.sparse.linalg.lsqr``, tested against it) on Aᵀ x_j = b_j for each of the d' rows b_j of B, one
    after the other.

    One iteration = one Golub–Kahan step (one product with A, one with Aᵀ); the count is the largest
    per-column count, the time at iteration k the sum over columns (module doc).  The per-iteration
    iterate comes through the solver's callback.  ``tol`` sets ``atol = btol`` (LSQR's own stopping rule,
    with SciPy's default ``conlim = 1e8``); without it the tests are off (atol = btol = 0, conlim = 0) and
    only ``target``/``max_iter``/``time_limit`` stop a column.  ``record=False`` runs without the callback
    (no per-iteration trace: for measuring the harness's overhead).
    """
    return _krylov("lsqr", A, B, C, reference, monitor, target, tol, max_iter, time_limit, record)


def lsmr(A, B, C, *, reference=None, monitor=None, target=None, tol=None, max_iter=100_000,
         time_limit=None, record=True) -> Trace:
    """LSMR (Fong and Saunders 2011; :func:`eaglebook.solver.krylov.lsmr`, tested against
    ``scipy.sparse.linalg.lsmr``), column by column; as :func:`lsqr` (same iteration count, same rules)."""
    return _krylov("lsmr", A, B, C, reference, monitor, target, tol, max_iter, time_limit, record)


class _Precond:
    """x = N y with N = P R⁻¹ (QR with column pivoting) or N = V_k Σ_k⁻¹ (SVD, rank-deficient)."""

    def __init__(self, M, N_apply, Nt_apply, k):
        self.M, self.N, self.Nt, self.k = M, N_apply, Nt_apply, k
        self.shape = (M.shape[0], k)

    def matvec(self, y):
        return self.M @ self.N(y)

    def rmatvec(self, u):
        return self.Nt(self.M.T @ u)


def randsketch_cg(A, B, C, *, reference=None, monitor=None, target=None, tol=None, max_iter=10_000,
                  time_limit=None, oversample=2.0, seed=0, rcond=None, record=True) -> Trace:
    """Sketch-and-precondition (Rokhlin–Tygert / Blendenpik style), then LSQR, column by column.

    With M = Aᵀ (n×d): a Gaussian sketch S (m×n, m = ⌈oversample·d⌉) gives SM; its QR with column
    pivoting SM Π = Q R is the right preconditioner N = Π R⁻¹, and LSQR solves min ‖M N y − b_j‖,
    x_j = N y.  M N is well conditioned (κ ≈ (√m + √d)/(√m − √d) whatever κ(A)), so LSQR needs a few
    dozen iterations.  When R is numerically rank-deficient (|R_kk| ≤ rcond·|R_00|, default
    max(m, d)·eps) the preconditioner is N = V_k Σ_k⁻¹ from an SVD of SM instead (LSRN), which keeps the
    minimum-norm solution.  Set-up = sketch + factorisation; one iteration = one LSQR step.  ``record=False``
    runs without the per-iteration callback, as :func:`lsqr`'s (a bare run, for timing without the trace).
    """
    _opts(max_iter, target, tol, time_limit)
    oversample = positive("oversample", oversample)
    if oversample < 1:
        raise ValueError(f"argument oversample={oversample!r} must be >= 1")
    t0 = time.perf_counter()
    prob = _Problem(A, B, C, reference, _monitor(monitor, reference))
    M = np.ascontiguousarray(prob.A.T)
    n, d = M.shape
    m = int(math.ceil(oversample * d))
    rng = np.random.default_rng(seed)
    SM = rng.standard_normal((m, n)) @ M / math.sqrt(m)
    R, piv = scipy.linalg.qr(SM, mode="r", pivoting=True, check_finite=False)
    R = R[:d]
    diag = np.abs(np.diag(R))
    cut = (rcond if rcond is not None else max(m, d) * np.finfo(float).eps) * (diag[0] if diag.size else 0)
    k = int((diag > cut).sum())
    if k == d:
        inv_piv = np.argsort(piv)
        kind = "QR"

        def N(y):
            z = scipy.linalg.solve_triangular(R, y, check_finite=False)
            return z[inv_piv]

        def Nt(u):
            return scipy.linalg.solve_triangular(R, u[piv], trans="T", check_finite=False)
    else:
        _, s, Vt = np.linalg.svd(SM, full_matrices=False)
        keep = s > (rcond if rcond is not None else max(m, d) * np.finfo(float).eps) * s[0]
        V, s = Vt[keep].T, s[keep]
        k = int(keep.sum())
        kind = "SVD"

        def N(y):
            return V @ (y / s)

        def Nt(u):
            return (V.T @ u) / s
    op = _Precond(M, N, Nt, k)
    setup = time.perf_counter() - t0
    X, times, values, status, book, its = _column_krylov("lsqr", prob, op, N, target=target, tol=tol,
                                                         max_iter=max_iter, time_limit=time_limit, setup_t=setup,
                                                         t_start=t0, record=record)
    return Trace("RandSketch+CG", X @ prob.C, len(times), status, float(times[-1]), setup, times, values,
                 prob.monitor if values is not None else None, book,
                 info=dict(sketch_rows=m, preconditioner=kind, rank=k, iterations_per_column=its))


def gdpp(A, B, C, *, reference=None, monitor=None, target=None, layers: int = 60, rho="power", seed=0) -> Trace:
    """GD++ (chapter 6's :func:`eaglebook.solver.gdpp.gdpp`): L conditioning layers, then one gradient step.

    One pass of ``gdpp`` computes the read-out of every depth l = 1..``layers``; iteration l of the trace is
    the GD++ network with l layers.  Its solver time is the pass's time interpolated linearly in l (every
    conditioning layer costs the same); ``target`` truncates the trace at the first depth that meets it.
    Only ``monitor="error"`` is supported.
    """
    from .gdpp import gdpp as _gdpp
    int_in("layers", layers, 1)
    if target is not None:
        positive("target", target)
    mon = _monitor(monitor, reference)
    if mon not in (None, "error"):
        raise ValueError(f"argument monitor={monitor!r}: GD++ supports only the error monitor")
    prob = _Problem(A, B, C, reference, mon)
    t0 = time.perf_counter()
    res = _gdpp(prob.A, prob.B, prob.C, layers=layers, rho=rho, seed=seed,
                reference=prob.ref if prob.ref is not None else None)
    elapsed = time.perf_counter() - t0
    times = elapsed * np.arange(1, layers + 1) / layers
    values = None if res.rel_error is None else np.asarray(res.rel_error[1:], dtype=np.float64)
    L, status = layers, "max_iter"
    if target is not None and values is not None and (values <= target).any():
        L, status = int(np.flatnonzero(values <= target)[0]) + 1, "target"
    D = np.asarray(res.D_trace[L], dtype=np.float64)
    return Trace("GD++", D, L, status, float(times[L - 1]), 0.0, times[:L], None if values is None else values[:L],
                 mon, 0.0, info=dict(layers=layers, timing="one pass, interpolated per layer"))


# ----------------------------------------------------------------------------------------------- the registry
@dataclass(frozen=True)
class Method:
    """One entry of :data:`REGISTRY`: how the benchmark harness runs a solver.

    ``kind``: ``"direct"`` (one factorisation), ``"iterative"`` or ``"sketched"`` (needs ``sketch``);
    ``options``: fixed keyword arguments; ``seeded``: takes ``seed``; ``ridge``: takes the paper's ridge
    (1e-3 on rank-deficient problems, 0 otherwise); ``stops``: takes ``max_iter`` / ``target`` /
    ``time_limit``."""
    name: str
    fn: Callable[..., Trace]
    kind: str
    options: dict = field(default_factory=dict)
    seeded: bool = False
    ridge: bool = False
    stops: bool = True
    parts: tuple = ("sweep",)              # which harness parts run it ("sweep": chapter 7's κ sweep, "grid": the grid)
    shapes: tuple = ("square", "tall", "wide")   # which problem shapes it applies to
    dtyped: bool = False                   # takes ``dtype`` ("float64" / "float32"); otherwise float64 only
    timed: bool = True                     # its trace times are per iteration (False: a solve split evenly)

    def run(self, A, B, C, *, reference=None, monitor=None, target=None, max_iter=None, time_limit=None, seed=0,
            rank_deficient=False, **extra) -> Trace:
        """Run the method with the harness's common arguments (those it does not take are dropped)."""
        kw = dict(self.options)
        kw.update(extra)
        if reference is not None:
            kw["reference"] = reference
        if monitor is not None:
            kw["monitor"] = monitor
        if self.stops:
            for k, v in (("target", target), ("max_iter", max_iter), ("time_limit", time_limit)):
                if v is not None:
                    kw[k] = v
        elif target is not None and self.kind != "direct":
            kw["target"] = target
        if self.seeded:
            kw["seed"] = seed
        if self.ridge:
            kw["ridge"] = 1e-3 if rank_deficient else 0.0
        if "dtype" in kw and not self.dtyped and kw["dtype"] != "float64":
            raise ValueError(f"method {self.name!r} computes in float64 only, got dtype={kw['dtype']!r}")
        if not self.dtyped:
            kw.pop("dtype", None)
        return self.fn(A, B, C, **kw)


#: Every solver the harness compares, by name, in the order its tables list them.
REGISTRY: dict[str, Method] = {m.name: m for m in (
    Method("lstsq (numpy)", lstsq, "direct", dict(backend="numpy"), stops=False),
    Method("lstsq (scipy)", lstsq, "direct", dict(backend="scipy"), stops=False),
    Method("lstsq (torch)", lstsq, "direct", dict(backend="torch"), stops=False),
    Method("SVD", svd, "direct", stops=False, parts=("sweep", "grid")),
    Method("EAGLE", eagle, "iterative", dict(tol=1e-14), seeded=True,    # its own rule too: stop when D stagnates
           parts=("sweep", "grid")),
    Method("GD", gd, "iterative", seeded=True, ridge=True),
    Method("CG", cgls, "iterative"),
    Method("LSQR", lsqr, "iterative"),
    Method("LSMR", lsmr, "iterative"),
    Method("RandSketch+CG", randsketch_cg, "iterative", seeded=True),
    Method("GD++", gdpp, "iterative", dict(layers=60), seeded=True, stops=False),
    Method("SGD", sgd, "sketched", seeded=True, ridge=True),
    # the solver-choice grid (issue 23): more direct drivers, GEMM-only competitors, sketch-and-precondition
    Method("gelsy", lstsq, "direct", dict(backend="scipy", driver="gelsy"), stops=False, parts=("grid",), dtyped=True),
    Method("gelsd", lstsq, "direct", dict(backend="scipy", driver="gelsd"), stops=False, parts=("grid",), dtyped=True),
    Method("Cholesky", cholesky, "direct", stops=False, parts=("grid",), dtyped=True),
    Method("Newton–Schulz", newton_schulz, "iterative", dict(tol=1e-14), seeded=True, parts=("grid",), dtyped=True),
    Method("EAGLE (polar-express)", eagle_accelerated, "iterative", dict(conditioning="polar-express"), seeded=True,
           parts=("grid",), dtyped=True, timed=False),
    Method("Sketch+LSQR", sketch_lsqr, "iterative", seeded=True, parts=("grid",), shapes=("tall", "wide")),
)}

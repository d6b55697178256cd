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
  torch tensors out, on their device.  float64 and float32 are computed natively; integer (and bool)
  input is computed and returned in float64, NumPy and torch alike; half precision in float32 (and
  returned in the input dtype).  Leading batch dimensions (…, d, n) are supported everywhere.
* ρ comes from the spectral norm of the (sketched) Ã: ``rho="exact"`` (an SVD-based 2-norm),
  ``rho="power"`` (``power_iters`` warm-started power iterations on the Gram matrix the UPDATE forms
  anyway, see :func:`solve`) or a callable.
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
* No factorisation by default: the default ``solve`` (every regime) runs matrix products only; its
  status is certified with products too (``certify="gemm"``, :mod:`eaglebook.solver.certify`), and
  ``certify="svd"`` keeps the exact SVD check as an option.  One engine (:mod:`eaglebook.solver.engine`)
  runs every regime, in-process and multi-process, with one per-machine step
  (:class:`eaglebook.solver.machine.Machine`) and one stopping rule
  (:class:`eaglebook.solver.stopping.StopRule`).
"""

from __future__ import annotations


from __future__ import annotations

from typing import Callable, Iterator, NamedTuple, Sequence

import numpy as np
import torch

from .._arrays import (Blocks, as_rng, check_batch, check_finite, check_shapes, int_in, is_number, positive, prepare,
                       to_tensor)
from .._arrays import out as to_output
from .certify import CERTIFY
from .engine import DEFAULT_TOL, local_transport, rounds, run
from .machine import POOLS, RESCALE_BOUNDS, SKETCH_KINDS, Machine, Options
from .norms import POWER_MARGIN, RHO_METHODS, check_rho_method, inv_square, mul_pow2
from .result import Result
from .status import EAGLE_STATUSES, STATUSES
from .update import update as update_step

__all__ = [
    "Result", "Iterate", "update", "iterate", "solve", "solve_distributed", "DEFAULT_TOL", "RESCALE_BOUNDS",
    "POWER_MARGIN", "STATUSES", "EAGLE_STATUSES", "CERTIFY", "check_options", "as_blocks", "setup",
]


# ----------------------------------------------------------------------------------------------
# Iterates


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

        Computed as D_ℓ + 2^{k_A − k_B}·(stored B)(stored A)^†C_ℓ, so it does not under/overflow (one
        pseudo-inverse, i.e. an SVD: this is an analysis tool, not part of a solve).  ``rcond`` is the
        pseudo-inverse cut-off relative to the largest singular value (default max(d, n)·eps).  Note that
        after many iterations of a rank-deficient problem the rounding-level singular values of A_ℓ are
        conditioned up to the size of the others (the update does not know they are rounding errors), so
        pass a larger ``rcond`` or check early iterates.
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


def _flag(name: str, v) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise ValueError(f"argument {name}={v!r} must be True or False")
    return bool(v)


def _choice(name: str, v, allowed) -> str:
    if not isinstance(v, str) or v not in allowed:
        raise ValueError(f"argument {name}={v!r} must be one of {tuple(allowed)}")
    return v


def check_options(*, eta, gamma, rho, rho_scale, power_iters, rho_pool, max_iter, tol, atol, rcond=None,
                  certify="gemm", sketch_kind="columns", redraw=True, rescale=True, max_iter_none=False) -> None:
    """Validate the options shared by :func:`solve`, :func:`solve_distributed`, :func:`iterate` and the
    multi-process engine; ``ValueError`` naming the argument."""
    positive("eta", eta)
    positive("gamma", gamma)
    check_rho_method(rho)
    positive("rho_scale", rho_scale)
    int_in("power_iters", power_iters, 1)
    _choice("rho_pool", rho_pool, POOLS)
    _choice("sketch_kind", sketch_kind, SKETCH_KINDS)
    _choice("certify", certify, CERTIFY)
    _flag("redraw", redraw)
    _flag("rescale", rescale)
    if max_iter is not None or not max_iter_none:
        int_in("max_iter", max_iter, 1)
    if rcond is not None and (not is_number(rcond) or not 0 <= float(rcond) < 1):
        raise ValueError(f"argument rcond={rcond!r} must be a number in [0, 1) or None")
    if tol is not None:
        positive("tol", tol)
    if not is_number(atol) or not np.isfinite(float(atol)) or atol < 0:
        raise ValueError(f"argument atol={atol!r} must be a finite number >= 0")


def as_blocks(name: str, blocks) -> list:
    """A non-empty list of per-machine blocks (``ValueError`` for an array or an empty sequence)."""
    if isinstance(blocks, (np.ndarray, torch.Tensor)) or not isinstance(blocks, Sequence):
        raise ValueError(f"argument {name} must be a list of matrices (one per machine)")
    if len(blocks) < 1:
        raise ValueError(f"argument {name} is empty: need M >= 1 machines")
    return list(blocks)


class Problem(NamedTuple):
    """A validated problem: the blocks as tensors of the compute dtype, the reference, how to return."""
    As: list
    Bs: list
    C: torch.Tensor
    D: torch.Tensor | None
    reference: torch.Tensor | None
    io: object
    opts: Options
    rng: np.random.Generator
    us: list


def setup(A_list, B_list, C, D, names, *, sketch, sketch_kind, redraw, eta, gamma, rho, rho_scale, power_iters,
          rho_pool, max_iter, tol, atol, rescale, seed, reference=None, rcond=None, certify="gemm",
          max_iter_none=False, freeze_tol=None, world: int | None = None, first: int = 0) -> Problem:
    """Validate everything and convert to torch (errors name the argument): the common set-up of every
    entry point.  Draws the power vectors of all ``world`` machines (default: the given ones) from the seeded
    generator, in machine order, and keeps those of the given machines ``first`` …, so that every process
    of a multi-process run continues the same random stream."""
    check_options(eta=eta, gamma=gamma, rho=rho, rho_scale=rho_scale, power_iters=power_iters, rho_pool=rho_pool,
                  max_iter=max_iter, tol=tol, atol=atol, rcond=rcond, certify=certify, sketch_kind=sketch_kind,
                  redraw=redraw, rescale=rescale, max_iter_none=max_iter_none)
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
            msg = (str(e).replace("argument A ", f"argument {an} ").replace("argument B ", f"argument {bn} ")
                   .replace("but A has", f"but {an} has"))
            raise ValueError(msg) from None
    n_prime = ts["C"].shape[-1]
    if reference is not None and tuple(ts["reference"].shape[-2:]) != (dp, n_prime):
        raise ValueError(f"argument reference has shape {tuple(ts['reference'].shape[-2:])}, "
                         f"expected d'×n' = {(dp, n_prime)}")
    if sketch is not None:
        int_in("sketch", sketch, 1, ts[a0].shape[-1])
    opts = Options(float(eta), float(gamma), rho, float(rho_scale), int(power_iters), rho_pool, bool(rescale),
                   None if sketch is None else int(sketch), sketch_kind, bool(redraw),
                   None if freeze_tol is None else float(freeze_tol))
    if freeze_tol is not None:
        positive("freeze_tol", freeze_tol)
    us = [None] * M
    if rho == "power":   # every machine's start vector from one generator, in order
        us = [torch.as_tensor(rng.standard_normal(batch + (d, 1)), dtype=io.compute, device=io.device)
              for _ in range(world or M)][first:first + M]
    ref = ts.get("reference")
    return Problem([ts[aname.format(mu)] for mu in range(M)], [ts[bname.format(mu)] for mu in range(M)], ts["C"],
                   ts.get("D"), ref.to(torch.float64) if ref is not None else None, io, opts, rng, us)


def _test_seed(seed):
    return int(seed) if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else None


def _solve(P: Problem, *, tol, atol, max_iter, rcond, certify, seed, rank: bool = False) -> Result:
    res = run(P.As, P.Bs, P.C, P.opts, local_transport(), world=len(P.As), rng=P.rng, us=P.us, tol=tol, atol=atol,
              max_iter=max_iter, rcond=rcond, certify=certify, test_seed=_test_seed(seed), reference=P.reference,
              out_dtype=P.io.out_torch, want_rank=rank)
    res.D = to_output(P.io, res.D)
    res.gathers, res.gather_bytes, res.collectives = 0, [], 0     # in-process: nothing travels
    res.time_per_round = res.compute_per_round = res.comm_per_round = res.wire_bytes_per_round = []
    return res


# ----------------------------------------------------------------------------------------------
# Public API


def solve(A, B, C, *, sketch: int | None = None, tol: float | None = None, atol: float = 0.0,
          max_iter: int = 1000, seed=0, eta: float = 1 / 3, gamma: float = 1.0,
          rho: str | Callable = "power", rho_scale: float = 1.0, power_iters: int = 5,
          rho_pool: str = "instance", sketch_kind: str = "columns", redraw: bool = True,
          rescale: bool = True, reference=None, rcond: float | None = None, certify: str = "gemm",
          conditioning: str = "cubic", rank: bool = False) -> Result:
    """Complete D ≈ B A^† C with EAGLE on one machine (Algorithm 1 with M = 1).

    Parameters
    ----------
    A, B, C : arrays of shapes (…, d, n), (…, d', n), (…, d, n'); the same leading batch shape.  NumPy
        arrays, torch tensors (on any device), nested lists, or sparse matrices (``scipy.sparse``, torch
        sparse tensors, ``scipy.sparse.linalg.LinearOperator``), which are densified first: EAGLE's UPDATE
        multiplies dense d×n matrices, so a sparse A costs d·n floats of memory (a LinearOperator also n
        products with it).  The result has the input's array type, device and floating dtype.  Tensors
        that require grad are refused (no gradient through the iterations): pass ``.detach()``.
    sketch : None for the centralized regime (S = I_n).  An int r with 1 <= r <= n for the sketched
        regime: each iteration S is a fresh random selection of r of the n columns (an n×r matrix with
        orthonormal columns); ρ comes from the sketched Ã = A S, and only the selected columns of A and B
        change (per-iteration work proportional to r).  Expect about n/r times more iterations.  The same
        S is used for every batch member.
    tol, atol : stop at the first ℓ with ‖D_ℓ − D_{ℓ−1}‖_F <= atol + tol·‖D_ℓ‖_F for every batch
        member (and the check of ``certify``).  ``tol`` is *relative* (so the rule is scale invariant); the
        paper's absolute τ is ``atol``.  Default tol: 1e-12 in float64, 1e-6 in float32.
    max_iter : the most UPDATE rounds to run.
    seed : int, None or ``numpy.random.Generator``; drives the sketches and power-iteration starts.
    eta, gamma : the step constants η, γ.  The defaults are the Theorem 1 constants η = 1/3, γ = 1.
        The transformer's η ≈ 1, γ ≈ 1.9 are relative to the *batch-maximum* norm; with the
        per-instance ρ they stall (η = 1 sends the top singular value of A to exactly 0) — use
        ``rho_scale`` ≈ 1.5 or ``rho_pool="batch_max"`` on a batch to reproduce their convergence.
        With ηρ‖Ã‖₂² > 1/3 the A-update's singular-value map is not monotone (directions above its peak are
        pushed below others), so the stopping rule counts only the growth that is certain and never stops
        at the rcond cut-off; such runs take longer to certify and may end ``rank_deficient`` on full-rank
        data (never ``converged`` on a wrong D).
    rho : how ‖Ã‖₂ is obtained for ρ = (rho_scale·‖Ã‖₂)⁻².  ``"power"`` (default): ``power_iters`` power
        iterations on the Gram matrix of Ã (which the UPDATE forms anyway), started from a seeded Gaussian
        vector at ℓ = 0 (with 2·power_iters iterations) and warm-started from the previous iteration's
        vector after that (A_ℓ keeps its left singular vectors, so the warm start is nearly exact); the
        estimate is max(‖Ãᵀu‖, ‖Ã‖_F/√min(d, r)), a lower bound of ‖Ã‖₂, times the margin
        ``POWER_MARGIN``.  ``"exact"``: the spectral norm (an SVD per iteration).  A callable gets the
        (possibly rescaled) torch tensor Ã of shape (…, d, r) and must return ‖Ã‖₂ (a number or a tensor
        of shape (…)).
    rho_scale : multiply the norm by this factor (> 1 gives smaller, safer steps).
    power_iters : power iterations per UPDATE for ``rho="power"``.
    rho_pool : ``"instance"`` (one ρ per batch member, the theorem's choice) or ``"batch_max"`` (the
        largest norm in the batch for all members, as in the trained transformer).
    sketch_kind : ``"columns"`` (default; column selection, the paper's implementation) or ``"haar"``
        (a Haar-random n×r orthonormal S; converges much worse at small r, and costs O(d n r) per round).
    redraw : True (default) redraws S every iteration.  False keeps one S, which cannot converge for
        r < n — only useful to demonstrate that (status ``fixed_sketch``).  Must be a bool.
    rescale : keep ‖A_ℓ‖_F and ‖B_ℓ‖_F in [2⁻¹⁶, 2¹⁶] by exact power-of-two rescaling (module doc);
        it does not change the iterates in exact arithmetic, only prevents under/overflow.  Must be a bool.
    reference : optional (…, d', n') target, e.g. ``tasks.nystrom(A, B, C)``; enables ``error`` and
        ``rel_error`` in the result.
    rcond : the cut-off: singular values of A below ``rcond``·σ_max count as zero, as in
        ``numpy.linalg.lstsq(rcond=...)`` (default max(d, n)·eps of the compute dtype; 0 keeps every
        direction, which a finite run cannot certify).  EAGLE's cut is a *soft* spectral filter: after ℓ
        UPDATEs a direction is weighted by a smooth function of s/σ_max that is ≈ 1/s above the cut and
        ≈ 0 far below it; a direction within a factor 4 of the cut may be kept or dropped.  The solver
        stops when the directions above the cut are conditioned; when directions near or below the cut
        would still change D by more than ``tol`` (a continuous spectrum around ``rcond``, or
        rank-deficient inconsistent data), the status is ``rank_deficient`` and ``level`` estimates by
        how much (see :class:`Result`), instead of a D that silently differs from ``lstsq(rcond)``'s.
        Centralized with ``certify="gemm"``: when the spectrum is well separated at the cut (no direction
        between the grown cut-off and half the top at the check, none in the window below the cut) and the
        check ends the solve ``rank_deficient`` only because rounding in A's null directions met data outside
        A's row and column spaces, B and C are projected onto A's kept singular subspaces with products of
        the conditioned A_ℓ and solved again (:mod:`eaglebook.solver.purify`): the answer is then B A_rcond^† C
        (the minimum-norm one, as LAPACK's), ``converged`` when that solve's own check certifies it.
    certify : how the status is certified.  ``"gemm"`` (default): with matrix products only (a few block
        power iterations on A_ℓ(I − A_ℓᵀA_ℓ/σ²) when the change of D has become small; sketched: a test
        column; see :mod:`eaglebook.solver.certify`): no SVD, QR or eigen-decomposition of an n-sized
        matrix anywhere in the solve.  ``"svd"``: one SVD of A_ℓ per check (and one of A for the sketched
        regime's consistency test), exact.  ``"none"``: the change rule alone (``converged`` then is not
        certified against rank deficiency).
    conditioning : the conditioning step of A and B.  ``"cubic"`` (default): Algorithm 1's
        A ← A − ηρAAᵀA with the paper's C/D step.  ``"polar-express"`` or ``"quintic"`` (beyond the paper,
        :mod:`eaglebook.solver.accelerated`): an odd-polynomial step A ← A q(AᵀA), B ← B q(AᵀA) (the cushioned
        Polar-Express minimax quintic, or the fixed quintic Newton–Schulz step) with the D accumulation
        re-derived for it (a Chebyshev prediction step C ← C − AAᵀX, D ← D + BAᵀX), so that the invariant
        D_ℓ + B_ℓA_ℓ^†C_ℓ = B A^† C holds as for the cubic step.  Centralized only (``sketch=None``), with
        the default eta, gamma, rho, rho_scale, power_iters, rho_pool, sketch_kind, redraw and rescale (those
        belong to the cubic step; another value is refused); ``certify="svd"`` is not offered.  With
        ``certify="gemm"`` (default) ``converged`` needs, besides the change rule, a product-only band check
        (Chebyshev probes on the Gram matrix) that found *every* direction of A_ℓ conditioned before the growth
        of small singular values reached min(1/rcond, 1e-2/(64·u)), the level up to which rounding noise in a
        null direction stays clearly apart from the conditioned ones.  A polynomial step cannot tell a
        direction below that from rounding, so a rank-deficient A (or one with singular values below
        ~1e-12·σ_max in float64, ~4e-6·σ_max in float32) ends ``rank_deficient`` (``level`` nan: not
        certified, D not the minimum-norm answer): use the default cubic step there.  ``"none"`` is the
        change rule alone.  The result's ``level`` is nan and ``checks`` 0.
    rank : also count the singular values of A above the cut-off, with products at the check that ends the
        solve (``Result.rank``; centralized, cubic, ``certify="gemm"``; about 8 Gram-sized products more).

    Returns
    -------
    :class:`Result`.  A = 0 returns D = 0 (ρ is set to 0 for a zero Ã).  For least squares (the
    minimum-norm solution of min ‖A x − b‖) use :func:`eaglebook.lstsq`, which runs this with B = I.

    Raises
    ------
    ValueError (naming the argument) for non-finite entries, mismatched shapes, sketch outside
    [1, n], tol <= 0, max_iter < 1, eta or gamma <= 0, an unknown rho / rho_pool / sketch_kind / certify,
    non-bool redraw or rescale, a tensor that requires grad, or an unsupported array type.
    """
    conditioning = _choice("conditioning", conditioning, CONDITIONINGS)
    _flag("rank", rank)
    if conditioning != "cubic":
        return _solve_accelerated(A, B, C, conditioning=conditioning, sketch=sketch, tol=tol, atol=atol,
                                  max_iter=max_iter, seed=seed, reference=reference, rcond=rcond, certify=certify,
                                  cubic_only=dict(eta=(eta, 1 / 3), gamma=(gamma, 1.0), rho=(rho, "power"),
                                                  rho_scale=(rho_scale, 1.0), power_iters=(power_iters, 5),
                                                  rho_pool=(rho_pool, "instance"),
                                                  sketch_kind=(sketch_kind, "columns"), redraw=(redraw, True),
                                                  rescale=(rescale, True)))
    P = setup([A], [B], C, None, ("A", "B"), sketch=sketch, sketch_kind=sketch_kind, redraw=redraw, eta=eta,
              gamma=gamma, rho=rho, rho_scale=rho_scale, power_iters=power_iters, rho_pool=rho_pool,
              max_iter=max_iter, tol=tol, atol=atol, rescale=rescale, seed=seed, reference=reference, rcond=rcond,
              certify=certify)
    return _solve(P, tol=tol, atol=atol, max_iter=max_iter, rcond=rcond, certify=certify, seed=seed, rank=rank)


#: The conditioning steps of :func:`solve` (``"cubic"``: Algorithm 1; the others: :mod:`.accelerated`).
CONDITIONINGS = ("cubic", "polar-express", "quintic")


def _solve_accelerated(A, B, C, *, conditioning, sketch, tol, atol, max_iter, seed, reference, rcond, certify,
                       cubic_only) -> Result:
    """:func:`solve` with an accelerated conditioning step: :func:`eaglebook.solver.accelerated.solve`, its
    result as a :class:`Result`."""
    from . import accelerated
    if sketch is not None:
        raise ValueError(f"argument sketch={sketch!r}: conditioning={conditioning!r} is centralized only "
                         "(use the cubic step for the sketched regime)")
    for name, (v, default) in cubic_only.items():
        if not (v is default or (type(v) is type(default) and v == default)):
            raise ValueError(f"argument {name}={v!r} belongs to the cubic step; conditioning={conditioning!r} "
                             f"takes only its default {default!r}")
    certify = _choice("certify", certify, CERTIFY)
    int_in("max_iter", max_iter, 1)
    if certify == "svd":
        raise ValueError(f"argument certify='svd' is not offered with conditioning={conditioning!r}; use 'gemm' "
                         "(the step's tracked spectral floor) or 'none'")
    r = accelerated.solve(A, B, C, step=conditioning, tol=tol, atol=atol, max_iter=max_iter, seed=seed,
                          reference=reference, rcond=rcond, certify=certify == "gemm")
    err = None
    if r.rel_error is not None:
        ref = np.asarray(reference.detach().cpu() if isinstance(reference, torch.Tensor) else reference, dtype=np.float64)
        err = r.rel_error ** 2 * float((ref ** 2).sum()) / max(ref.size // max(ref.shape[-1] * ref.shape[-2], 1), 1)
    return Result(D=r.D, iterations=r.iterations, converged=r.converged, status=r.status, delta=r.delta, error=err,
                  rel_error=r.rel_error, statuses=r.statuses, certify=certify)


def solve_distributed(A_blocks: Sequence, B_blocks: Sequence, C, *, tol: float | None = None,
                      atol: float = 0.0, max_iter: int = 1000, seed=0, eta: float = 1 / 3,
                      gamma: float = 1.0, rho: str | Callable = "power", rho_scale: float = 1.0,
                      power_iters: int = 5, rho_pool: str = "instance", rescale: bool = True,
                      reference=None, rcond: float | None = None, certify: str = "gemm") -> Result:
    """Distributed EAGLE: machine μ holds the column blocks A^μ (…, d, n_μ), B^μ (…, d', n_μ).

    Each round every machine runs UPDATE on (A^μ, B^μ, C_ℓ, D_ℓ) with its own ρ^μ = ‖A^μ_ℓ‖₂⁻², sends
    its C'^μ, D'^μ ((d + d')·n' floats) to a centre, and the centre broadcasts the averages
    C_{ℓ+1} = mean_μ C'^μ, D_{ℓ+1} = mean_μ D'^μ (summing instead diverges).  The limit is
    B A^† C for A = [A^1 … A^M] when the data are consistent (B in the row space of A; Theorem 2's
    assumption); the rate is governed by the diversity index α of the machines' ranges (the paper's
    Theorem 2, :func:`eaglebook.diversity_index`).  With ``certify="gemm"`` (default) C carries one more
    *test column* c = A g whose known completion B g certifies consistency at the end ((d + d') more floats
    per round; the result's ``test_floats_per_round``), and each check reduces 3 numbers per machine.

    ``A_blocks`` and ``B_blocks`` are sequences of the same length M >= 1 (see
    :func:`eaglebook.split_columns`); all A^μ have d rows, all B^μ have d' rows.  The other arguments are as
    in :func:`solve`; the result's ``floats_per_round`` and ``communication`` count what each machine sends
    for the paper's algorithm.  This simulates the machines in one process; :mod:`eaglebook.solver.distributed`
    runs the same engine as M processes.
    """
    A_blocks, B_blocks = as_blocks("A_blocks", A_blocks), as_blocks("B_blocks", B_blocks)
    if len(B_blocks) != len(A_blocks):
        raise ValueError(f"argument B_blocks has {len(B_blocks)} blocks but A_blocks has {len(A_blocks)}")
    P = setup(A_blocks, B_blocks, C, None, ("A_blocks[{}]", "B_blocks[{}]"), sketch=None, sketch_kind="columns",
              redraw=True, eta=eta, gamma=gamma, rho=rho, rho_scale=rho_scale, power_iters=power_iters,
              rho_pool=rho_pool, max_iter=max_iter, tol=tol, atol=atol, rescale=rescale, seed=seed,
              reference=reference, rcond=rcond, certify=certify)
    return _solve(P, tol=tol, atol=atol, max_iter=max_iter, rcond=rcond, certify=certify, seed=seed)


def iterate(A, B, C, D=None, *, sketch: int | None = None, max_iter: int | None = None, seed=0,
            eta: float = 1 / 3, gamma: float = 1.0, rho: str | Callable = "exact", rho_scale: float = 1.0,
            power_iters: int = 5, rho_pool: str = "instance", sketch_kind: str = "columns",
            redraw: bool = True, rescale: bool = True) -> Iterator[Iterate]:
    """Yield every iterate of Algorithm 1 as an :class:`Iterate`, starting with ℓ = 0.

    No stopping rule: it runs until ``max_iter`` rounds (forever when None) or until the caller stops.
    ``A`` and ``B`` may be single matrices (M = 1) or equally long lists of per-machine column blocks
    (distributed; then the yielded A, B are tuples).  ``D`` defaults to 0.  The options are those of
    :func:`solve` (the same engine, :func:`eaglebook.solver.engine.rounds`), except that ``rho`` defaults
    to ``"exact"`` (the spectral norm, one SVD per iterate: the literal Algorithm 1, for analysis).
    Iterates have the input's array type (copies).  A and B are yielded as stored, i.e. rescaled by
    powers of two (``rescale=True``, see :class:`Iterate`); ``it.invariant()`` gives
    D_ℓ + B_ℓ A_ℓ^† C_ℓ, which stays equal to B A^† C.  Pass ``rescale=False`` to get Algorithm 1's
    literal iterates (fine for the few dozen iterations of a centralized float64 run).
    """
    multi = isinstance(A, (list, tuple))
    if multi:
        A_l, B_l = as_blocks("A", A), as_blocks("B", B)
        if len(B_l) != len(A_l):
            raise ValueError(f"argument B has {len(B_l)} blocks but A has {len(A_l)}")
        names = ("A[{}]", "B[{}]")
    else:
        A_l, B_l, names = [A], [B], ("A", "B")
    P = setup(A_l, B_l, C, D, names, sketch=sketch, sketch_kind=sketch_kind, redraw=redraw, eta=eta, gamma=gamma,
              rho=rho, rho_scale=rho_scale, power_iters=power_iters, rho_pool=rho_pool, max_iter=max_iter, tol=None,
              atol=0.0, rescale=rescale, seed=seed, max_iter_none=True)
    return _iterate_gen(P, multi=multi, max_iter=max_iter)


def _iterate_gen(P: Problem, *, multi, max_iter):
    def scal(s):
        s = s[..., 0, 0]
        return int(s) if s.ndim == 0 else s.cpu().numpy()

    io = P.io
    batch = tuple(P.C.shape[:-2])
    dp, n_prime = P.Bs[0].shape[-2], P.C.shape[-1]
    D0 = P.D if P.D is not None else torch.zeros(batch + (dp, n_prime), dtype=io.compute, device=io.device)
    machines = [Machine(a, b, P.opts, u) for a, b, u in zip(P.As, P.Bs, P.us)]
    copy = lambda t: to_output(io, t.clone())    # noqa: E731  (a column sketch updates A, B in place)
    for rnd in rounds(machines, P.C, D0, local_transport(), world=len(machines), rng=P.rng):
        A_o = tuple(copy(m.A) for m in machines)
        B_o = tuple(copy(m.B) for m in machines)
        kA_o = tuple(scal(m.kA) for m in machines)
        kB_o = tuple(scal(m.kB) for m in machines)
        if not multi:
            A_o, B_o, kA_o, kB_o = A_o[0], B_o[0], kA_o[0], kB_o[0]
        yield Iterate(rnd.ell, A_o, B_o, copy(rnd.C), copy(rnd.D), kA_o, kB_o)
        if max_iter is not None and rnd.ell >= max_iter:
            return


def update(A, B, C, D, *, eta: float = 1 / 3, gamma: float = 1.0, S=None, rho=None) -> Blocks:
    """One UPDATE of the paper's Algorithm 1; returns ``Blocks(A', B', C', D')``.

    ``S``: None (S = I_n), an n×r matrix, or a 1-D integer array of r distinct column indices (column
    selection).  ``rho``: None for ρ = ‖A S‖₂⁻² (0 when A S = 0; an SVD), or a number / array
    broadcastable to the batch shape.  Batched and NumPy/torch like :func:`solve`.
    """
    positive("eta", eta)
    positive("gamma", gamma)
    ts, io = prepare({"A": A, "B": B, "C": C, "D": D}, allow_grad=True)
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
        r = inv_square(torch.linalg.matrix_norm(At, ord=2, keepdim=True))
    else:
        r = torch.as_tensor(rho if isinstance(rho, torch.Tensor) else np.asarray(rho, dtype=np.float64),
                            dtype=io.compute, device=io.device)
        check_finite("rho", r)
        r = r.reshape(r.shape + (1, 1)) if r.ndim else r
    new = update_step(ts["A"], ts["B"], ts["C"], ts["D"], eta * r, gamma * r, cols=cols, S=Smat)
    return Blocks(*(to_output(io, x) for x in new))

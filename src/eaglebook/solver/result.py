"""The one result type of every EAGLE solve: in-process (:func:`eaglebook.solve`,
:func:`eaglebook.solve_distributed`), multi-process (:func:`eaglebook.solver.distributed.run_local`, the
torchrun CLI) and distributed GD (:func:`eaglebook.solver.solve_dgd`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Result"]


@dataclass
class Result:
    """What the solvers return.

    Attributes
    ----------
    D : the completion D_L ≈ B A_rcond^† C, with the input's array type, device and floating dtype.
    iterations : number L of UPDATE rounds that were run.
    converged : True exactly when ``status == "converged"``.
    status : how the solve ended (for a batch: the worst member's, in the order of
        :data:`eaglebook.solver.STATUSES`):

        * ``"converged"``: ‖D_ℓ − D_{ℓ−1}‖_F <= atol + tol·‖D_ℓ‖_F held and the check (``certify``) found no
          direction of A_ℓ still being conditioned, and the directions below the cut-off have put at most
          max(tol, p·u)·‖D‖ (p = max(d, n); the estimate is ``level``) into D.  Use D; its error against
          B A_rcond^† C is then limited by rounding, about κ(A)·u times ‖B‖‖A^†‖‖C‖ (u the compute dtype's
          unit roundoff).  EAGLE's cut-off is a *soft* spectral filter: a direction with s/σ_max within a
          factor 4 above ``rcond`` may be treated as dropped, one within 4 below as kept.  Sketched: the
          rule must hold for W = ⌈(n/r)(ln n + 0.58)⌉ UPDATEs in a row (every column drawn once in
          expectation) and, for column selection, until every column has been drawn during that run; and
          the geometric tail W·δ/(1 − q^W) of the changes still to come (δ the largest change of the last W,
          q^W its ratio to the W before) must be <= the rule's bound; there is no check of A_ℓ.
          Distributed: the same tail bound with W = 4 replaces the exact finish of the kept directions.
          Sketched and distributed: the regime's completion of a test column c = A g (g Gaussian) agreed
          with its known value B g, which certifies consistent data (or full column rank), where these
          regimes reach B A^† C.
        * ``"max_iter"``: ``max_iter`` rounds without meeting the rule.  Raise ``max_iter`` (or ``tol``);
          sketched and distributed solves of rank-deficient, inconsistent data never meet it (they do not
          reach B A^† C): solve those centrally.
        * ``"stalled"``: nothing is left to condition and the dropped directions do not matter, but the D
          change stopped shrinking above ``tol``: the precision floor of the compute dtype (``level`` is the
          relative size of the change there, typically κ(A)·u).  Use D at that accuracy, or compute in
          float64.  Also (``level`` nan) when a step had ηρσ_max² >= 0.99, which can send the top singular
          value of A_ℓ to 0 and lose that direction's part of D for good (η = 1 with each instance's own ρ):
          use η < 1 or ``rho_scale``.  Also (``level`` nan) when ``rescale=False`` let ‖A_ℓ‖ fall so low that
          the UPDATE's products underflow (float32 after a few hundred rounds): the iterate froze.  Use the
          default ``rescale=True``.
        * ``"fixed_sketch"``: ``redraw=False`` with r < n: D stopped changing, but only r columns of A
          were ever used, so D is not B A^† C.  Use ``redraw=True``.
        * ``"rank_deficient"``: A has directions below or near the cut-off ``rcond``·σ_max, and the data
          make them matter: either (centralized, distributed) they were partly conditioned and contaminate
          D by up to about ``level``·‖D‖ (an estimate from products, an upper bound in the typical case), or
          directions just below the cut-off would change D by about ``level``·‖D‖ if kept (a continuous
          spectrum around ``rcond``: EAGLE's soft filter then differs from ``lstsq(rcond)``'s hard cut); or
          (sketched, distributed) the data are inconsistent (B has a component in A's right kernel), so
          those regimes converged to a re-weighted completion instead of B A^† C, whose error can be
          arbitrarily large (``level`` nan: unknown).  With an accelerated ``conditioning``: a direction of A
          stayed below the step's band up to its growth cap (``level`` nan; :func:`eaglebook.solve`).  D is the
          best available; use the centralized cubic solver, another ``rcond``, or ``certify="svd"`` /
          ``numpy.linalg.lstsq`` when ``level`` is too large or unknown.
        * ``"out_of_range"``: D was found in the solver's rescaled frame but is not representable in the
          output dtype (it overflows, or its largest entry is below the smallest normal number); pass
          wider input (float64).
        * ``"diverged"``: ‖C_ℓ‖ or ‖A_ℓ‖ grew by 4× (with a valid ρ both never grow): ρ is too large
          (``rho_scale`` < 1, a wrong ``rho`` callable, η or γ too large).  D is the last iterate before.
        * ``"non_finite"``: D became NaN or inf in the rescaled frame; stopped.

        Distributed GD (:func:`eaglebook.solver.solve_dgd`) also returns ``"target"`` (the reference was
        reached).
    level : a relative accuracy attached to the status (``nan`` when none applies or it is unknown): for
        ``converged`` and a centralized ``rank_deficient``, the bound of what directions below the cut-off
        have put into D, relative to ‖D‖ (an upper bound of that part of D's error); the stalled D change for
        ``stalled``, the last D change for ``max_iter`` and ``fixed_sketch`` (not bounds of the error); nan for
        a ``rank_deficient`` found by the sketched/distributed consistency test or an accelerated
        conditioning (max over a batch).
    statuses : per batch member (an object array of the batch shape), or None for a single problem.
    delta : float64 array, ``delta[i]`` = ‖D_ℓ − D_{ℓ−1}‖_F for ℓ = i+1 (max over a batch).
    error : float64 array, ``error[i]`` = ‖D_ℓ − reference‖_F² for ℓ = i+1 (mean over a batch,
        computed in float64), or None when no reference was given; the last entry is for the returned D.
    rel_error : float64 array, ‖D_ℓ − reference‖_F / ‖reference‖_F (over the whole batch), or None.
    machines : M (1 for :func:`eaglebook.solve`).
    floats_per_round : floats each machine sends to the centre per round for the paper's algorithm,
        (d + d')·n' (its C'^μ and D'^μ; the broadcast back has the same size); 0 for a single machine.
    communication : ``iterations * floats_per_round``.
    test_floats_per_round : the test column's share of a round, (d + d')·(test columns), 0 when none
        (single machine, or ``certify`` other than ``"gemm"``).
    checks : how many checks of A_ℓ were run (``certify``).
    certify : how the status was certified: ``"gemm"`` (products only), ``"svd"`` or ``"none"``.
    rank : the number of singular values of A above the cut-off, found with products at the check that ended
        the solve (an int, or an int array of the batch shape; -1 where the spectrum was not separated there,
        so the count is not sharp); None unless asked for (:func:`eaglebook.lstsq` asks; centralized,
        ``certify="gemm"`` only).
    log2_scale : E (int, or an int array of the batch shape): the solver worked on exactly rescaled
        2^-a A, 2^-b B, 2^-c C and returned D = 2^E·D_frame, E = b + c − a.

    The multi-process engine (:mod:`eaglebook.solver.distributed`) fills in, per process (lists indexed by
    rank; one entry for ``solve_serial``): ``time_per_round`` (median wall seconds of a round),
    ``compute_per_round`` (the local UPDATE), ``comm_per_round`` (the all_reduce, waiting for the slowest
    machine included), ``wire_bytes_per_round`` (TCP payload bytes the process sent per round's all_reduce;
    None where not measurable, e.g. NCCL or in-process), ``gather_bytes`` (bytes the process contributed
    to the gathers); and ``backend``, ``header_floats`` (the stopping rule's floats per round: each
    machine's ηρσ̂² and log2 ‖A^μ_ℓ‖_F, and the freezing vote), ``payload_bytes_per_round`` (what each
    process hands to each round's all_reduce: (d + d')·(n' + test columns) + header floats, times bytes
    per float), ``collectives`` (every collective call: one all_reduce per round, one per check, the
    set-up's), ``gathers``, ``frozen_at`` (the round the §E.2 variant froze A, B), ``wall``.
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
    certify: str = "gemm"
    test_floats_per_round: int = 0
    backend: str | None = None
    header_floats: int = 0
    payload_bytes_per_round: int = 0
    collectives: int = 0
    gathers: int = 0
    gather_bytes: list = field(default_factory=list)
    time_per_round: list = field(default_factory=list)
    compute_per_round: list = field(default_factory=list)
    comm_per_round: list = field(default_factory=list)
    wire_bytes_per_round: list = field(default_factory=list)
    frozen_at: int | None = None
    wall: float = 0.0
    rank: object = None

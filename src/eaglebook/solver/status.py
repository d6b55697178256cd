"""One vocabulary for how a solve ends, shared by EAGLE (:class:`eaglebook.solver.Result`), the
baselines' traces (:class:`eaglebook.solver.baselines.Trace`) and distributed GD.

:data:`STATUSES` lists every status from best to worst; a batch reports its worst member's
(:func:`worst`).  :data:`MEANINGS` says in one line what each one means; the solvers' docstrings say
what to do about it.
"""

from __future__ import annotations

__all__ = ["STATUSES", "MEANINGS", "EAGLE_STATUSES", "worst", "check_status"]

#: Every way a solve can end, from best to worst.
STATUSES = ("converged", "direct", "target", "max_iter", "time_limit", "stalled", "fixed_sketch", "breakdown",
            "rank_deficient", "out_of_range", "diverged", "non_finite")

#: What each status means (one line each; :class:`eaglebook.solver.Result` has the details for EAGLE).
MEANINGS = {
    "converged": "the method's own stopping rule fired and its answer is certified to its tolerance",
    "direct": "a direct (factorisation-based) method: one step, no stopping rule",
    "target": "the monitored error or residual reached the requested target",
    "max_iter": "the iteration limit was reached before the stopping rule fired",
    "time_limit": "the time limit was reached before the stopping rule fired",
    "stalled": "the change stopped shrinking above the tolerance: the precision floor of the compute dtype",
    "fixed_sketch": "a sketch that is never redrawn: the iteration stopped, but on r of the n columns only",
    "breakdown": "the iteration cannot continue (a Krylov method's search direction vanished)",
    "rank_deficient": "A has directions below or near the cut-off, or the data are inconsistent, and they "
                      "contaminate the answer by about `level` (relative)",
    "out_of_range": "the answer was found but is not representable in the output dtype",
    "diverged": "the iterates grew: the step size is too large",
    "non_finite": "the iterates became NaN or infinite",
}

#: The statuses :func:`eaglebook.solve` and :func:`eaglebook.solve_distributed` can return.
EAGLE_STATUSES = ("converged", "max_iter", "stalled", "fixed_sketch", "rank_deficient", "out_of_range", "diverged",
                  "non_finite")


def worst(statuses) -> str:
    """The worst of ``statuses`` in the order of :data:`STATUSES` (``"converged"`` for none)."""
    present = set(statuses)
    return next((s for s in STATUSES[::-1] if s in present), "converged")


def check_status(status: str) -> str:
    """``status`` itself, or ``ValueError`` when it is not in the vocabulary."""
    if status not in STATUSES:
        raise ValueError(f"status {status!r} is not one of {STATUSES}")
    return status

"""EAGLE's stopping rule, written once for every transport.

:func:`eaglebook.solver.solve` (centralized, sketched), :func:`eaglebook.solver.solve_distributed` (M
machines simulated in one process) and the multi-process engine (:mod:`eaglebook.solver.distributed`)
all decide when to stop with :class:`StopRule`, driven by the one round loop of
:mod:`eaglebook.solver.engine`.  It sees, per round and per instance of a batch, only numbers that every
process of a distributed run has (the replicated C_ℓ and D_ℓ, and the per-machine norms and step sizes that
travel in the round's header), plus, when it asks for one, the result of a *check*
(:mod:`eaglebook.solver.certify`: matrix products on each machine's own blocks, reduced like the header).
Given the same numbers it takes the same decisions, so the engines stop after the same round with the same
status.

The rule (see :class:`eaglebook.solver.Result` for what each status means to a user):

* non-finite D → ``non_finite``; ‖C_ℓ‖ or ‖A_ℓ‖ grown 4× → ``diverged`` (the previous D is returned);
* ‖D_ℓ − D_{ℓ−1}‖_F <= atol + tol·‖D_ℓ‖_F (*cheap*); distributed: and the geometric tail of the changes
  still to come (windows of :data:`DIST_WINDOW` rounds) is below the same bound;
* sketched: cheap for a window of W UPDATEs in a row that has drawn every column, with the geometric tail
  of width W below the bound → ``converged``; no check;
* centralized: once the accumulated growth of small singular values reaches 1/rcond (a direction at the
  cut-off is conditioned, the ones below it come next), a running instance gets a last check and stops
  there: ``rank_deficient`` when D was still changing (``level`` estimates what it would still take in,
  4·‖ΔD‖/(γ‖D‖)), else as below;
* otherwise a cheap round, a D change that regrew 4× above its minimum, or no 10% smaller change for
  :data:`STALL_WINDOW` rounds (×6 distributed; a steady decrease counts as progress there) triggers the
  check: directions still being conditioned → hold on for as many rounds as their growth needs; else
  ``rank_deficient`` (dropped directions above max(tol, p·u)), ``stalled`` or ``converged``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .norms import MONOTONE_GROWTH

__all__ = ["StopRule", "unrepresentable", "ANNIHILATES", "DIST_WINDOW", "STALL_WINDOW", "geometric_tail"]

#: ηρσ̂² at or above this can send the top singular value of A_ℓ to 0, s(1 − ηρs²) = 0, losing that
#: direction's part of D for good (η = 1 with the instance's own exact ρ): such a solve is never "converged".
ANNIHILATES = 0.99
#: Distributed: UPDATEs per window of the geometric tail bound of the D changes.
DIST_WINDOW = 4
#: UPDATEs (×6 distributed) without a 10% smaller D change before the check looks for a stall.
STALL_WINDOW = 8


def geometric_tail(h, W):
    """Bound of what an iteration still has to change D: with the largest change of the last W UPDATEs δ
    and its ratio q^W to the W before, Σ of the future changes <= W·δ/(1 − q^W) (inf if none)."""
    if len(h) < 2 * W:
        return math.inf
    h = list(h)
    new, old = max(h[W:]), max(h[:W])
    if new == 0:
        return 0.0
    ratio = new / old if old > 0 else math.inf
    return W * new / (1 - ratio) if ratio < 1 else math.inf


def unrepresentable(maxabs, finfo, log2_scale=0) -> np.ndarray:
    """Per instance: does a D whose largest |entry| is ``maxabs`` (times 2**``log2_scale``, the caller's
    rescaled frame) overflow or underflow the output dtype (``finfo``)?  D = 0 never does."""
    with np.errstate(divide="ignore"):
        L = np.log2(np.asarray(maxabs, dtype=np.float64)) + log2_scale
    return (L > -np.inf) & ((L >= math.log2(finfo.max)) | (L < math.log2(finfo.tiny)))


class StopRule:
    """The per-instance state of the stopping rule for a batch of ``nb`` instances.

    Per round call :meth:`observe`; when it returns triggers, run a check (:mod:`eaglebook.solver.certify`) and hand its result
    to :meth:`resolve`; at the end :meth:`close`.  ``finish`` maps an instance that just ended to the D it
    returns: ``"cur"`` (D_ℓ), ``"prev"`` (D_{ℓ−1}) or ``"fin"`` (the check's finished D).
    """

    def __init__(self, nb: int, *, tol: float, atol_f, machines: int, n: int, rcond: float, floor: float,
                 sketched: bool = False, window: int = 1, redraw: bool = True, gamma: float = 1.0):
        self.nb, self.tol, self.atol_f = nb, float(tol), np.asarray(atol_f, dtype=np.float64)
        self.machines, self.n, self.rcond, self.floor = machines, n, rcond, floor
        self.sketched, self.window, self.redraw = sketched, window, redraw
        self.done = np.zeros(nb, bool)
        self.status = np.array(["max_iter"] * nb, dtype=object)
        self.level = np.full(nb, math.nan)
        self.hold = np.zeros(nb, np.int64)
        self.dmin = np.full(nb, math.inf)
        self.dmin_at = np.zeros(nb, np.int64)
        self.streak = np.zeros(nb, np.int64)
        self.falling = np.zeros(nb, np.int64)   # distributed: consecutive UPDATEs with a smaller D change than the last
        self.fd_last = np.full(nb, math.inf)
        self.stall_window = STALL_WINDOW * (1 if machines == 1 else 6)
        # the last 2W D changes per instance (newest last; ``hist_len`` of them are real), for the geometric tail
        width = 2 * (window if sketched else DIST_WINDOW) if (sketched or machines > 1) else 0
        self.hist = np.zeros((nb, width))
        self.hist_len = np.zeros(nb, np.int64)
        self.covered = np.zeros((nb, n if sketched else 0), bool)
        self.lost = np.zeros(nb, bool)
        self.log_growth = np.zeros(nb)          # Σ over the UPDATEs of the log growth of s/σ_max
        self.C0log = self.A0log = None
        self.rel_d = np.full(nb, math.nan)
        self.checks = 0
        self.gamma = float(gamma)
        # centralized: once the growth of small singular values reaches 1/rcond, a direction at the cut-off is
        # conditioned and the ones below it come next; a run still going then stops with a check ("cut")
        self.cut_log = math.log(1.0 / rcond) if (machines == 1 and not sketched and rcond > 0) else None
        self.reordered = np.zeros(nb, dtype=bool)   # instances that took a non-monotone step (x > 1/3)

    def start(self, lC0) -> None:
        """log2 ‖C_0‖_F per instance (the reference of the divergence test)."""
        self.C0log = np.asarray(lC0, dtype=np.float64)

    def observe(self, ell: int, *, fd, nD, finite, lC, lA, growth, annihilates, cols=None):
        """Round ``ell`` (>= 1): ``fd`` = ‖D_ℓ − D_{ℓ−1}‖_F, ``nD`` = ‖D_ℓ‖_F (in one frame, with the
        rule's ``atol_f``), ``finite`` (D_ℓ finite), ``lC`` = log2 ‖C_ℓ‖_F, ``lA`` = log2 ‖A_{ℓ−1}‖_F (max
        over machines), ``growth`` = this UPDATE's log growth of s/σ_max (max over machines),
        ``annihilates`` (ηρσ̂² >= :data:`ANNIHILATES` on some machine), ``cols`` the sketch's columns.
        Returns ``(finish, trig)``: the instances that ended, and the (instance, why) that ask for a check."""
        if self.A0log is None:
            self.A0log = np.asarray(lA, dtype=np.float64)
        g_now = np.asarray(growth, dtype=np.float64)
        self.log_growth = self.log_growth + g_now
        # a step that may have reordered the directions (x > 1/3): the cut rule's "the ones below come next"
        # no longer holds for this instance
        self.reordered |= g_now > MONOTONE_GROWTH + 1e-9
        self.lost |= np.asarray(annihilates, bool)
        tol, atol_f = self.tol, self.atol_f
        fd, nD = np.asarray(fd, dtype=np.float64), np.asarray(nD, dtype=np.float64)
        lC, lA = np.asarray(lC, dtype=np.float64), np.asarray(lA, dtype=np.float64)
        finite = np.asarray(finite, bool)
        with np.errstate(invalid="ignore", divide="ignore"):
            rel_d = np.where(nD > 0, fd / np.where(nD > 0, nD, 1.0), np.where(fd > 0, math.inf, 0.0))
        self.rel_d = rel_d
        # one pass over the running instances at once (the same decisions, instance by instance, as a loop)
        running = ~self.done
        bad = running & ~finite
        self.status[bad], self.done[bad] = "non_finite", True
        with np.errstate(invalid="ignore"):   # ‖C_ℓ‖, ‖A_ℓ‖ grew 4×: ρ is too large
            grown = running & finite & ((lC > self.C0log + 2) | (lA > self.A0log + 2))
        self.status[grown], self.done[grown], self.level[grown] = "diverged", True, rel_d[grown]
        act = running & finite & ~grown
        bound = atol_f + tol * nD
        cheap = fd <= bound
        if self.machines > 1:       # no exact finish here: the changes still to come must be small too
            self._push(act, fd)
            cheap = cheap & (self._tail(DIST_WINDOW) <= bound)
        self.streak[act] = np.where(cheap[act], self.streak[act] + 1, 0)
        if self.sketched:          # which columns the current run of small changes has drawn
            self.covered[act & ~cheap] = False
            on = act & cheap
            if cols is not None:
                rows = np.flatnonzero(on)
                self.covered[np.ix_(rows, np.asarray(cols).reshape(-1))] = True
            else:                  # Haar sketches touch every column
                self.covered[on] = (self.streak[on] >= self.window)[:, None]
        if self.machines > 1:   # a slow but steady decrease (rate 1 − O(α) per round) is progress, not a stall
            self.falling[act] = np.where(fd[act] < self.fd_last[act], self.falling[act] + 1, 0)
            self.fd_last[act] = fd[act]
        go = act & (ell >= self.hold)
        with np.errstate(invalid="ignore"):
            new_min = go & ((rel_d < 0.9 * self.dmin) | (self.falling >= self.stall_window // 2))
        self.dmin[new_min], self.dmin_at[new_min] = rel_d[new_min], ell
        self.falling[new_min] = 0
        finish, trig = {}, []
        if self.sketched:
            self._push(go, fd)
            with np.errstate(invalid="ignore"):
                conv = (go & (self.streak >= self.window) & (self.covered.all(-1) | (not self.redraw))
                        & (self._tail(self.window) <= bound))
            self.done[conv], self.level[conv] = True, rel_d[conv]
            self.status[conv] = "converged" if self.redraw else "fixed_sketch"
            ends = [(bad, "cur"), (grown, "prev"), (conv, "cur")]
        else:
            ends = [(bad, "cur"), (grown, "prev")]
            rest = go.copy()
            why = np.full(self.nb, "", dtype=object)
            if self.cut_log is not None:   # directions at the cut-off are conditioned: those below come next
                cut = rest & (self.log_growth >= self.cut_log) & ~self.reordered
                why[cut], rest = "cut", rest & ~cut
            rule = rest & cheap
            why[rule], rest = "rule", rest & ~cheap
            with np.errstate(invalid="ignore"):
                regrow = rest & (rel_d > 4 * self.dmin) & (self.dmin_at >= 1)
            why[regrow], rest = "regrow", rest & ~regrow
            why[rest & (ell - self.dmin_at >= self.stall_window)] = "stall"
            trig = [(i, why[i]) for i in np.flatnonzero(why != "")]
        for mask, src in ends:
            for i in np.flatnonzero(mask):
                finish[i] = src
        finish = dict(sorted(finish.items()))
        if trig:
            self.checks += 1
        return finish, trig

    def _push(self, rows, fd) -> None:
        """Append this round's D change to the history of the instances ``rows`` (a mask)."""
        if self.hist.shape[1] == 0 or not rows.any():
            return
        h = self.hist[rows]
        h[:, :-1] = h[:, 1:]
        h[:, -1] = fd[rows]
        self.hist[rows] = h
        self.hist_len[rows] = np.minimum(self.hist_len[rows] + 1, self.hist.shape[1])

    def _tail(self, W: int):
        """:func:`geometric_tail` of every instance's history (inf where it holds fewer than 2W changes)."""
        L = self.hist.shape[1]
        first = L - self.hist_len                       # the oldest real entry
        j = np.arange(L)
        old = (j >= first[:, None]) & (j < first[:, None] + W)
        new = j >= first[:, None] + W
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            h_new = np.where(new, self.hist, -math.inf).max(-1, initial=-math.inf)
            h_old = np.where(old, self.hist, -math.inf).max(-1, initial=-math.inf)
            ratio = np.where(h_old > 0, h_new / np.where(h_old > 0, h_old, 1.0), math.inf)
            out = np.where(ratio < 1, W * h_new / np.where(ratio < 1, 1 - ratio, 1.0), math.inf)
        out = np.where(h_new == 0, 0.0, out)
        return np.where(self.hist_len < 2 * W, math.inf, out)

    def resolve(self, ell: int, trig, wait, rel) -> dict:
        """Act on the check of round ``ell``: ``wait`` (per instance) is the growth factor the directions still
        being conditioned need (1: none; :class:`eaglebook.solver.certify.Certificate`), ``rel`` the dropped
        directions' share of D (relative to ‖D‖; for directions just below the cut-off, their estimated full
        contribution)."""
        g = max(1.05, math.exp(float(self.log_growth.max()) / ell))
        tol, floor = self.tol, self.floor
        finish = {}
        for i, why in trig:
            if why == "cut":                          # the soft filter has reached the cut-off: stop here
                self.done[i], finish[i] = True, "fin"
                # rel holds the dropped directions' bound and the estimated full contribution of directions in the
                # 4× window below the cut (the check's `near`): with neither, the conditioned directions are
                # finished exactly and a D change still above tol is the compute dtype's precision floor
                if rel[i] > max(tol, floor):
                    self.status[i], self.level[i] = "rank_deficient", max(rel[i], 4.0 * float(self.rel_d[i]) / self.gamma)
                elif self.rel_d[i] > tol:
                    self.status[i], self.level[i] = "stalled", max(float(self.rel_d[i]), rel[i])
                else:
                    self.status[i], self.level[i] = "converged", rel[i]
                continue
            if wait[i] > 1:                           # directions still being conditioned: keep going
                self.hold[i] = ell + max(1, math.ceil(math.log(wait[i]) / math.log(g)))
                self.dmin[i], self.dmin_at[i] = math.inf, self.hold[i]
            elif why == "regrow" and rel[i] <= max(tol, floor):
                self.hold[i] = ell + 3
                self.dmin[i], self.dmin_at[i] = math.inf, self.hold[i]
            else:
                self.done[i], finish[i] = True, "fin"
                if rel[i] > max(tol, floor):
                    self.status[i], self.level[i] = "rank_deficient", rel[i]
                elif why == "stall":
                    self.status[i], self.level[i] = "stalled", max(float(self.rel_d[i]), rel[i])
                else:
                    self.status[i], self.level[i] = "converged", rel[i]
        return finish

    def close(self, ell: int) -> None:
        """After the last round: unfinished instances end ``max_iter``; a run that may have lost a
        direction for good is never ``converged``."""
        for i in np.flatnonzero(~self.done):
            self.status[i] = "max_iter"
            self.level[i] = self.rel_d[i] if ell > 0 else math.nan
        bad = self.lost & np.isin(self.status, ["converged", "rank_deficient"])
        self.status[bad], self.level[bad] = "stalled", math.nan

    def underflowed(self, mask) -> None:
        """``rescale=False`` runs whose A_ℓ fell to where the UPDATE's products underflow (``mask`` per
        instance): the change stopped because the iterate froze, so they are never ``converged``."""
        bad = np.asarray(mask, bool) & np.isin(self.status, ["converged", "rank_deficient"])
        self.status[bad], self.level[bad] = "stalled", math.nan

    def write(self, out, finish: dict, source: dict) -> list:
        """Write each finished instance's D into ``out`` (a flat batch view): ``finish`` maps an instance to
        the key of ``source`` (flat views of the candidate D's) its D comes from.  Returns the finished
        instances, which the caller freezes."""
        by = {}
        for i, src in finish.items():
            by.setdefault(src, []).append(i)
        for src, rows in by.items():     # one indexed copy per source
            idx = torch.as_tensor(np.asarray(rows, dtype=np.int64), device=out.device)
            out[idx] = source[src][idx]
        return list(finish)

    def fill(self, out, D) -> None:
        """After the last round: every instance still running returns the last D (flat batch views)."""
        rows = np.flatnonzero(~self.done)
        if rows.size:
            idx = torch.as_tensor(rows, device=out.device)
            out[idx] = D[idx]

    def out_of_range(self, maxabs, finfo, log2_scale=0) -> None:
        """A ``converged`` instance whose largest |D| entry (``maxabs`` per instance, times 2**``log2_scale``
        when the caller iterates in a rescaled frame) overflows or underflows the output dtype (``finfo``)
        is ``out_of_range``; D = 0 never is."""
        self.status[unrepresentable(maxabs, finfo, log2_scale) & (self.status == "converged")] = "out_of_range"

    def consistency(self, level, *, threshold) -> None:
        """Sketched and distributed: these regimes reach B A^† C only on consistent data or full column rank; a
        ``converged`` instance whose test (``level`` per instance: the test column's relative error, or ε_B·κ
        for ``certify="svd"``) exceeds ``threshold`` (per instance) is ``rank_deficient`` with ``level`` nan
        (the test bounds nothing about D's error)."""
        level = np.asarray(level, dtype=np.float64)
        bad = (self.status == "converged") & (level > threshold)
        # the test column's error says the data are inconsistent; it bounds nothing about D (whose error can be
        # many orders larger), so the level is unknown
        self.status[bad], self.level[bad] = "rank_deficient", math.nan
        # a rank_deficient instance of these regimes on inconsistent data: its dropped-direction bound does not
        # cover the re-weighting, so its level is unknown too
        self.level[(self.status == "rank_deficient") & (level > threshold)] = math.nan

    def growth_tensor(self, like):
        """The accumulated log growth as a float64 tensor of shape batch + (1, 1) (for the checks)."""
        batch = tuple(like.shape[:-2])
        return torch.as_tensor(self.log_growth, dtype=torch.float64, device=like.device).reshape(batch + (1, 1))

"""The batched fast paths of the stopping rule and the checks take the same decisions as the plain ones:
:meth:`StopRule.observe` (one vectorized pass over the instances) against the instance-by-instance loop it
replaced, on random traces of every regime; a mixed batch against its instances solved one by one; and
the batch benchmark on tiny sizes (no timing assertion)."""

import collections
import math

import numpy as np
import pytest
import torch

from eaglebook import solver as E
from eaglebook.solver.stopping import DIST_WINDOW, StopRule, geometric_tail


class LoopRule(StopRule):
    """The instance-by-instance ``observe`` of StopRule as it was before it was vectorized (the reference)."""

    def __init__(self, nb, **kw):
        super().__init__(nb, **kw)
        self.hist = [collections.deque(maxlen=2 * (self.window if self.sketched else DIST_WINDOW)) for _ in range(nb)]
        self.covered = [np.zeros(self.n, bool) for _ in range(nb)]

    def observe(self, ell, *, fd, nD, finite, lC, lA, growth, annihilates, cols=None):
        if self.A0log is None:
            self.A0log = np.asarray(lA, dtype=np.float64)
        g_now = np.asarray(growth, dtype=np.float64)
        self.log_growth = self.log_growth + g_now
        self.reordered |= g_now > E.norms.MONOTONE_GROWTH + 1e-9
        self.lost |= np.asarray(annihilates, bool)
        tol, atol_f = self.tol, self.atol_f
        with np.errstate(invalid="ignore", divide="ignore"):
            rel_d = np.where(nD > 0, fd / np.where(nD > 0, nD, 1.0), np.where(fd > 0, math.inf, 0.0))
        self.rel_d = rel_d
        finish, trig = {}, []
        for i in np.flatnonzero(~self.done):
            if not finite[i]:
                self.status[i], self.done[i] = "non_finite", True
                finish[i] = "cur"
                continue
            if lC[i] > self.C0log[i] + 2 or lA[i] > self.A0log[i] + 2:
                self.status[i], self.done[i], self.level[i] = "diverged", True, rel_d[i]
                finish[i] = "prev"
                continue
            cheap = fd[i] <= atol_f[i] + tol * nD[i]
            if self.machines > 1:
                self.hist[i].append(fd[i])
                cheap = cheap and geometric_tail(self.hist[i], DIST_WINDOW) <= atol_f[i] + tol * nD[i]
            self.streak[i] = self.streak[i] + 1 if cheap else 0
            if self.sketched:
                if not cheap:
                    self.covered[i][:] = False
                elif cols is not None:
                    self.covered[i][cols] = True
                else:
                    self.covered[i][:] = self.streak[i] >= self.window
            if self.machines > 1:
                self.falling[i] = self.falling[i] + 1 if fd[i] < self.fd_last[i] else 0
                self.fd_last[i] = fd[i]
            if ell < self.hold[i]:
                continue
            if rel_d[i] < 0.9 * self.dmin[i] or self.falling[i] >= self.stall_window // 2:
                self.dmin[i], self.dmin_at[i] = rel_d[i], ell
                self.falling[i] = 0
            if self.sketched:
                self.hist[i].append(fd[i])
                if (self.streak[i] >= self.window and (self.covered[i].all() or not self.redraw)
                        and geometric_tail(self.hist[i], self.window) <= tol * nD[i] + atol_f[i]):
                    self.done[i], self.level[i] = True, rel_d[i]
                    self.status[i] = "converged" if self.redraw else "fixed_sketch"
                    finish[i] = "cur"
            elif self.cut_log is not None and self.log_growth[i] >= self.cut_log and not self.reordered[i]:
                trig.append((i, "cut"))
            elif cheap:
                trig.append((i, "rule"))
            elif rel_d[i] > 4 * self.dmin[i] and self.dmin_at[i] >= 1:
                trig.append((i, "regrow"))
            elif ell - self.dmin_at[i] >= self.stall_window:
                trig.append((i, "stall"))
        if trig:
            self.checks += 1
        return finish, trig


STATE = ("done", "status", "level", "hold", "dmin", "dmin_at", "streak", "falling", "fd_last", "lost", "log_growth",
         "reordered", "rel_d", "checks")


@pytest.mark.parametrize("mode", ["central", "central_cut", "distributed", "sketched_cols", "sketched_haar",
                                  "fixed_sketch"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_observe_matches_the_loop(mode, seed):
    g = np.random.default_rng(seed)
    nb, n = 64, 12
    kw = dict(tol=1e-6, atol_f=np.where(g.random(nb) < 0.2, 1e-7, 0.0), machines=3 if mode == "distributed" else 1,
              n=n, rcond=1e-3 if mode == "central_cut" else 0.0, floor=1e-15,
              sketched=mode.startswith("sketched") or mode == "fixed_sketch", window=3,
              redraw=mode != "fixed_sketch")
    old, new = LoopRule(nb, **kw), StopRule(nb, **kw)
    for r in (old, new):
        r.start(np.zeros(nb))
    rate = g.uniform(0.05, 1.5, nb)     # per instance: slow ones stall, fast ones reach the tolerance
    plateau = g.random(nb) < 0.2
    for ell in range(1, 60):
        nD = np.exp(g.normal(0, 1, nb)) * (g.random(nb) > 0.05)
        # changes that shrink geometrically with noise, regrow now and then, or hit the tolerance exactly
        fd = nD * np.exp(-ell * rate + g.normal(0, 1.5, nb))
        flat = plateau & (ell > 5)          # a change that stops shrinking: the stall rule
        fd[flat] = nD[flat] * 1e-3 * (1 + 0.01 * g.random(flat.sum()))
        fd[g.random(nb) < 0.05] = 0.0
        tie = g.random(nb) < 0.05
        fd[tie] = kw["atol_f"][tie] + 1e-6 * nD[tie]
        args = dict(fd=fd, nD=nD, finite=g.random(nb) > 0.01, lC=g.normal(0, 0.7, nb), lA=g.normal(0, 0.7, nb),
                    growth=g.uniform(0.0, 0.406, nb), annihilates=g.random(nb) < 0.01,
                    cols=np.sort(g.choice(n, 4, replace=False)) if mode == "sketched_cols" else None)
        fo, to = old.observe(ell, **{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()})
        fn, tn = new.observe(ell, **args)
        assert fo == fn and [(int(i), w) for i, w in to] == [(int(i), w) for i, w in tn], ell
        for i, why in to:      # act on the checks the same way on both (holds, resets, ends)
            u = g.random()
            for r in (old, new):
                if u < 0.3:
                    r.hold[i] = ell + 1 + int(u * 10)
                    r.dmin[i], r.dmin_at[i] = math.inf, r.hold[i]
                elif u < 0.6:
                    r.done[i], r.status[i] = True, "converged"
        for name in STATE:
            a, b = getattr(old, name), getattr(new, name)
            assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=a.dtype.kind == "f"
                                  if isinstance(a, np.ndarray) else False), (ell, name)
        if new.sketched:
            assert np.array_equal(np.array(old.covered), new.covered), ell
        if new.hist.shape[1]:
            for i in range(nb):
                h = list(old.hist[i])
                assert new.hist_len[i] == len(h)
                assert np.array_equal(new.hist[i, new.hist.shape[1] - len(h):], np.array(h, dtype=float)), (ell, i)

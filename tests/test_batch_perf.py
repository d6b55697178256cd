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


def mixed_batch(nb=24, d=10, n=14, seed=3):
    """Well- and ill-conditioned, rank-deficient, inconsistent and zero instances in one batch."""
    g = np.random.default_rng(seed)
    A = np.zeros((nb, d, n))
    for i in range(nb):
        k = i % 6
        U, _ = np.linalg.qr(g.standard_normal((d, d)))
        V, _ = np.linalg.qr(g.standard_normal((n, d)))
        s = np.geomspace(1, 10.0 ** -(1 + 2 * k), d)
        if k == 4:
            s[d // 2:] = 0
        if k != 5:
            A[i] = (U * s) @ V.T
    B = g.standard_normal((nb, 2, d)) @ A
    B[3::6] += 1e-3 * g.standard_normal(B[3::6].shape)
    C = A @ g.standard_normal((nb, n, 2))
    return A, B, C


def _decisions(r):
    return r.status, r.iterations, r.checks, list(r.statuses.reshape(-1)), r.level


@pytest.mark.parametrize("regime", ["central", "distributed"])
def test_checks_on_the_asking_instances_only(regime, monkeypatch):
    """A check runs on the instances that asked for one; the answers, and so every decision and D, are those
    of a check of the whole batch."""
    from eaglebook.solver.machine import Machine
    A, B, C = mixed_batch()
    run = ((lambda: E.solve(A, B, C)) if regime == "central" else
           (lambda: E.solve_distributed(*[list(x) for x in E.split_columns(A, B, 2)], C, max_iter=150)))
    fast = run()
    f = Machine.certificate
    seen = []

    def whole(self, C, rcond, *, key=(0, 0), finish=True, rows=None):   # check everything, keep the rows asked
        seen.append(rows is not None)
        cert, fin = f(self, C, rcond, key=key, finish=finish)
        if rows is None:
            return cert, fin
        nb = cert.wait.size
        return (type(cert)(*(x[rows] for x in cert)),
                None if fin is None else fin.reshape((nb,) + tuple(fin.shape[-2:]))[torch.as_tensor(rows)])
    monkeypatch.setattr(Machine, "certificate", whole)
    slow = run()
    assert any(seen)        # some checks did run on part of the batch
    assert _decisions(fast)[:4] == _decisions(slow)[:4]
    assert fast.level == pytest.approx(slow.level, rel=1e-6, nan_ok=True)
    assert np.allclose(fast.D, slow.D, rtol=1e-12, atol=0)


def test_subset_certificate_equals_the_whole_batch():
    from eaglebook.solver.machine import Machine
    A, B, C = (torch.as_tensor(x) for x in mixed_batch())
    g = np.random.default_rng(0)
    m = Machine(A, B, E.eagle.Options(1 / 3, 1.0, "power", 1.0, 5, "instance", True),
                torch.as_tensor(g.standard_normal((A.shape[0], A.shape[1], 1))))
    m.u = m.u / torch.linalg.vector_norm(m.u, dim=-2, keepdim=True)
    rows = np.array([1, 4, 5, 17, 23])
    full, fin = m.certificate(C, 1e-13, key=(7, 0))
    part, fin_p = m.certificate(C, 1e-13, key=(7, 0), rows=rows)
    for a, b in zip(full, part):
        np.testing.assert_allclose(a[rows], b, rtol=1e-12)
    torch.testing.assert_close(fin[torch.as_tensor(rows)], fin_p, rtol=1e-12, atol=0)


def test_small_check_sees_what_the_products_see(monkeypatch):
    """Small blocks form M = A(I − G)²/σ once: the same answers as the ten products per step, down to x ~ 1e-13,
    and the same decisions on a mixed batch."""
    from eaglebook.solver import certify
    g = np.random.default_rng(1)
    for d, n in ((16, 16), (8, 20), (20, 8)):
        nb, k = 24, min(d, n)
        A = np.empty((nb, d, n))
        for i in range(nb):
            U, _ = np.linalg.qr(g.standard_normal((d, k)))
            V, _ = np.linalg.qr(g.standard_normal((n, k)))
            s = 1 - 10 ** g.uniform(-8, -1, k)
            s[-2:] = [1e-13, 1e-10, 1e-7, 1e-4, 0.1, 0.3, 1.0, 0.7][i % 8] * np.array([3.0, 1.0])
            A[i] = (U * s) @ V.T
        A = torch.as_tensor(A)
        B, C = torch.as_tensor(g.standard_normal((nb, 2, n))), torch.as_tensor(g.standard_normal((nb, d, 2)))
        k0 = torch.zeros(nb, 1, 1, dtype=torch.int64)
        sig = torch.linalg.matrix_norm(A, ord=2, keepdim=True)
        for lg in (0.0, 10.0):
            LG = torch.full((nb, 1, 1), lg, dtype=torch.float64)
            answers = []
            for small in (certify.SMALL_CHECK, 0):
                monkeypatch.setattr(certify, "SMALL_CHECK", small)
                rc = 1e-14 * max(d, n)
                answers.append(certify.gemm_certificate(A, B, C, k0, k0, sig, LG, rc, 1.0, key=(3, 0))[0])
            a, b = answers
            assert np.array_equal(a.wait == 1, b.wait == 1) and np.array_equal(a.wait == 1.5, b.wait == 1.5)
            np.testing.assert_allclose(a.wait, b.wait, rtol=1e-4)
            np.testing.assert_allclose(a.err, b.err, rtol=1e-8)
            np.testing.assert_allclose(a.near, b.near, rtol=1e-8)
    A, B, C = mixed_batch()
    monkeypatch.setattr(certify, "SMALL_CHECK", 64)
    small = E.solve(A, B, C)
    monkeypatch.setattr(certify, "SMALL_CHECK", 0)
    products = E.solve(A, B, C)
    assert _decisions(small)[:4] == _decisions(products)[:4]


def test_bench_batches_on_tiny_sizes():
    """The batch benchmark's result and summary (tiny sizes; no timing is asserted)."""
    from eaglebook.solver import bench
    res = bench.bench_batches(("one", "tiny"), repeats=2, sizes={"one": (None, 12, 1e2), "tiny": (30, 6, 1e2)})
    assert list(res) == ["one", "tiny"]
    for r in res.values():
        assert r["iterations"] >= 1 and len(r["ratio"]["values"]) == 2
        assert r["ratio"]["min"] <= r["ratio"]["median"] <= r["ratio"]["max"]
        assert all(0 <= s <= 1 for s in r["certification_share"]["values"])
    assert sum(res["tiny"]["statuses"].values()) == 30 and res["tiny"]["numpy"] == "solve"
    text = bench.batch_summary(res)
    assert "30 problems 6×6" in text and "1 problem 12×12" in text and "certification" in text
    from eaglebook.bench.__main__ import parser
    a = parser().parse_args(["floor", "--setting", "batch20"])
    assert a.setting == "batch20" and a.repeats is None


def test_start_vectors_by_chunk():
    """A check's start vectors: a batch of at most START_CHUNK instances draws what one generator draws; a
    check of some rows of a larger batch gets exactly the rows of the whole batch's draw."""
    from eaglebook.solver import certify
    seed = [certify.TEST_SEED, 5, 1]
    for shape in ((6, 4), (3, 6, 4), (2, 100, 6, 4)):
        assert np.array_equal(certify._start(seed, shape, None), np.random.default_rng(seed).standard_normal(shape))
    nb = 3 * certify.START_CHUNK + 7
    whole = certify._start(seed, (nb, 6, 4), None)
    rows = np.array([0, 5, certify.START_CHUNK, certify.START_CHUNK + 3, nb - 1])
    assert np.array_equal(certify._start(seed, (rows.size, 6, 4), rows), whole[rows])
    assert not np.array_equal(whole[:6], whole[certify.START_CHUNK:certify.START_CHUNK + 6])

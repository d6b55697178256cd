"""Property tests of the public solver API with hypothesis.

Every drawn case must end in exactly one of three honest ways:

* a ``ValueError`` naming the offending argument (bad input);
* ``status == "converged"`` with D close to the truncated completion D* = B A_rcond^† C (computed
  in float64 by ``lstsq``-style SVD with the solver's cut-off rcond = max(d, n)·u);
* any other documented status (``Result.status`` in ``STATUSES``).

The bound for "converged".  Let u be the unit roundoff of the compute dtype, p = max(d, n), σ_1 and σ_k
the largest and smallest singular value of A kept by the cut-off, κ = σ_1/σ_k, and
N = ‖B‖_F·‖C‖_F/σ_k (the size ‖B‖‖A_rcond^†‖‖C‖ of the completion without cancellation).  Each UPDATE
is a few matrix products, so it perturbs A_ℓ, B_ℓ, C_ℓ by relative p·u; by the invariant
D_ℓ + B_ℓ A_ℓ^† C_ℓ = B A^† C such a perturbation moves the limit by at most p·u·κ·N (Wedin's bound on
the pseudo-inverse: ‖δA^†‖ <= ‖A^†‖²‖δA‖ up to a constant 2), and L updates add up linearly:
L·2p·u·κ·N.  The stopping rule leaves at most tol·‖D‖ of the remaining term (the finished directions)
plus the dropped directions' estimate ``level`` <= tol·‖D‖, and a problem with a singular value within
the check's gap (4×, times the growth estimate's own error) of the cut-off is truncated differently
from lstsq — a difference of N·(σ_k/σ_cut) that the first term already covers when κ is taken from the
cut-off itself, which is what we do when A has singular values in [rcond, 16·rcond]·σ_1.  So::

    ‖D − D*‖_F <= L·2p·u·κ·N + 2·tol·max(‖D*‖_F, ‖D‖_F) + (reference's own error, p·u64·κ·N)

Every conditioning option is fuzzed on its own (``test_solver_is_honest[cubic|polar-express|quintic]``): the
cubic step in every regime, the accelerated steps centrally (the only regime they offer).  The families
cover rank-deficient and exactly singular A (``rank`` < min(d, n)), inconsistent data (B and C outside A's
row and column spaces), least squares (B = I, ``lstsq``'s completion), and float32 beyond its precision
(κ up to 1e12).  An accelerated step rounds with its polynomial's coefficients (Σ|c_i| <= 29 at the default
degree 5), so its per-round rounding term is taken 32 times the cubic step's.

Cases are few by default; set ``EAGLEBOOK_FUZZ_EXAMPLES=5000`` for thousands per option (the outcome
counts are printed with ``-s``).
"""

import collections
import os
import re

import numpy as np
import pytest
import torch

hyp = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from eaglebook import solver as E  # noqa: E402
from eaglebook.solver.distributed import solve_serial  # noqa: E402

torch.set_num_threads(1)
EXAMPLES = int(os.environ.get("EAGLEBOOK_FUZZ_EXAMPLES", "300"))
OPTIONS = ("cubic", "polar-express", "quintic")
#: per-round rounding of a step, in units of the cubic step's (module doc)
ROUNDING = {"cubic": 1.0, "polar-express": 32.0, "quintic": 32.0}
OUTCOMES = {o: collections.Counter() for o in OPTIONS}
FIRST = {}     # the first case of each outcome, printed with -s


def _matrix(rng, d, n, rank, kappa):
    U, _ = np.linalg.qr(rng.standard_normal((d, rank)))
    V, _ = np.linalg.qr(rng.standard_normal((n, rank)))
    s = np.exp(np.concatenate([[0.0, -np.log(kappa)], rng.uniform(-np.log(kappa), 0, max(rank - 2, 0))]))[:rank]
    return (U * np.sort(s)[::-1]) @ V.T


def reference(A, B, C, rcond):
    """D* = B A_rcond^† C in float64 (inputs exactly rescaled by powers of two first, so no overflow)."""
    ea, eb, ec = (np.frexp(np.abs(x).max())[1] if np.abs(x).max() > 0 else 0 for x in (A, B, C))
    A1, B1, C1 = np.ldexp(A, -ea), np.ldexp(B, -eb), np.ldexp(C, -ec)
    U, s, Vt = np.linalg.svd(A1, full_matrices=False)
    keep = s > rcond * s[0] if s[0] > 0 else np.zeros_like(s, bool)
    D1 = (B1 @ Vt[keep].T / s[keep]) @ (U[:, keep].T @ C1)
    N = np.linalg.norm(B1) * np.linalg.norm(C1) / s[keep][-1] if keep.any() else 0.0
    kappa = s[0] / s[keep][-1] if keep.any() else 1.0
    near = bool(np.any((s > rcond * s[0]) & (s < 16 * rcond * s[0]))) if s[0] > 0 else False
    return D1, eb + ec - ea, N, kappa, near


@st.composite
def cases(draw):
    shape = draw(st.sampled_from(["square", "wide", "tall"]))
    d = draw(st.integers(1, 24))
    n = {"square": d, "wide": d + draw(st.integers(1, 20)), "tall": max(1, d - draw(st.integers(0, d - 1)))}[shape]
    rank = draw(st.integers(1, min(d, n)))
    kappa = 10.0 ** draw(st.floats(0, 12))
    dtype = draw(st.sampled_from(["float64", "float64", "float32", "float16", "int"]))
    span = {"float64": 150, "int": 0, "float32": 15, "float16": 1}[dtype]   # within the dtype's range
    scales = [10.0 ** draw(st.floats(-span, span)) for _ in range(3)]
    consistent = draw(st.booleans())
    regime = draw(st.sampled_from(["central", "central", "central", "sketch", "distributed"]))
    identity = draw(st.sampled_from([False, False, False, True]))      # B = I_n: least squares
    batch = draw(st.sampled_from([(), (), (2,)]))
    bad = draw(st.sampled_from([None] * 8 + ["nan", "shape", "tol", "max_iter", "rho", "rcond", "list"]))
    seed = draw(st.integers(0, 2 ** 31))
    return dict(d=d, n=n, rank=rank, kappa=kappa, scales=scales, consistent=consistent, dtype=dtype,
                regime=regime, batch=batch, bad=bad, seed=seed, dp=draw(st.integers(1, 3)), np_=draw(st.integers(1, 3)),
                identity=identity)


def build(c):
    rng = np.random.default_rng(c["seed"])
    out = []
    for _ in range(int(np.prod(c["batch"])) if c["batch"] else 1):
        A = _matrix(rng, c["d"], c["n"], c["rank"], c["kappa"])
        if c["consistent"]:
            B = rng.standard_normal((c["dp"], c["d"])) @ A
            C = A @ rng.standard_normal((c["n"], c["np_"]))
        else:
            B, C = rng.standard_normal((c["dp"], c["n"])), rng.standard_normal((c["d"], c["np_"]))
        if c.get("identity"):
            B = np.eye(c["n"])
        out.append([x * s for x, s in zip((A, B, C), c["scales"])])
    A, B, C = (np.stack(x).reshape(c["batch"] + x[0].shape) if c["batch"] else x[0] for x in zip(*out))
    if c["dtype"] == "int":
        A, B, C = (np.round(x / np.abs(x).max() * 100).astype(np.int64) for x in (A, B, C))
    elif c["dtype"] != "float64":
        with np.errstate(over="ignore", under="ignore"):
            A, B, C = (x.astype(c["dtype"]) for x in (A, B, C))
    return A, B, C


def run(c, A, B, C, conditioning="cubic"):
    kw = {} if conditioning == "cubic" else {"conditioning": conditioning}
    bad = c["bad"]
    if bad == "nan":
        A = A.astype(np.float64)
        A.flat[0] = np.nan
    elif bad == "shape":
        B = B[..., :-1] if B.shape[-1] > 1 else np.concatenate([B, B], -1)
    elif bad == "tol":
        kw["tol"] = -1.0
    elif bad == "max_iter":
        kw["max_iter"] = None
    elif bad == "rho":
        kw["rho"] = lambda At: 0.0
    elif bad == "rcond":
        kw["rcond"] = 2.0
    elif bad == "list":
        return "A", E.solve_distributed(A, B, C)       # a plain array is not a list of blocks
    name = {"nan": "A", "shape": "B", "tol": "tol", "max_iter": "max_iter", "rho": "rho", "rcond": "rcond"}.get(bad)
    if conditioning != "cubic":          # centralized only
        return name, E.solve(A, B, C, **kw)
    if c["regime"] == "sketch":
        r = max(1, c["n"] // 2)
        kw.setdefault("max_iter", 4000)
        return name, E.solve(A, B, C, sketch=r, seed=1, **kw)
    if c["regime"] == "distributed" and c["n"] >= 2 and bad != "shape":
        Ab, Bb = E.split_columns(A, B, 2)
        return name, E.solve_distributed(Ab, Bb, C, **kw)
    return name, E.solve(A, B, C, **kw)


def check(c, conditioning="cubic"):
    outcomes = OUTCOMES[conditioning]
    A, B, C = build(c)
    if not (np.isfinite(A).all() and np.isfinite(B).all() and np.isfinite(C).all()):
        outcomes["skipped: input overflows its dtype"] += 1
        return
    if conditioning != "cubic" and c["bad"] == "list":
        c = dict(c, bad=None)
    try:
        name, r = run(c, A, B, C, conditioning)
    except ValueError as e:
        assert c["bad"] is not None, f"unexpected ValueError {e}"
        want = {"nan": "A", "shape": "B", "list": "A_blocks"}.get(c["bad"], c["bad"])
        alias = {"A": r"(A|A_blocks\[0\])"}.get(want, re.escape(want))   # distributed: the block's name
        assert re.search(r"argument " + alias + r"(?![\w\[])", str(e)), str(e)
        outcomes["ValueError"] += 1
        return
    assert c["bad"] is None, f"bad input {c['bad']} was accepted"
    assert r.status in E.STATUSES and r.converged == (r.status == "converged")
    if r.machines > 1:   # the multi-process engine's round loop stops by the same rule, in the same round
        Ab, Bb = E.split_columns(A, B, 2)
        s = solve_serial(Ab, Bb, C)
        assert (s.iterations, s.status) == (r.iterations, r.status), (s.iterations, s.status, r.iterations, r.status)
        with np.errstate(invalid="ignore"):
            dd_ = np.abs(np.asarray(s.D, np.float64) - np.asarray(r.D, np.float64))
        assert np.array_equal(np.isfinite(dd_), np.isfinite(np.asarray(r.D, np.float64)))
        assert np.nanmax(dd_, initial=0.0) <= 1e-12 * np.nanmax(np.abs(np.asarray(r.D, np.float64)), initial=0.0)
    if r.status != "converged":
        outcomes[r.status] += 1
        FIRST.setdefault((conditioning, r.status), c)
        return
    D = np.asarray(r.D, dtype=np.float64)
    assert np.isfinite(D).all(), "converged with a non-finite D"
    compute = np.float64 if A.dtype in (np.float64, np.int64) else np.float32
    u = np.finfo(compute).eps / 2
    p = max(c["d"], c["n"])
    rcond = p * np.finfo(compute).eps
    tol = E.DEFAULT_TOL[torch.float64 if compute is np.float64 else torch.float32]
    Ab = np.asarray(A, dtype=np.float64).reshape((-1,) + A.shape[-2:])
    Bb = np.asarray(B, dtype=np.float64).reshape((-1,) + B.shape[-2:])
    Cb = np.asarray(C, dtype=np.float64).reshape((-1,) + C.shape[-2:])
    Db = D.reshape((-1,) + D.shape[-2:])
    for a, b, cc, dd in zip(Ab, Bb, Cb, Db):
        D1, e, N, kappa, near = reference(a, b, cc, rcond)
        if near:    # a singular value at the cut-off: truncated differently from lstsq (docstring)
            kappa = max(kappa, 1 / rcond)
        dd1 = np.ldexp(dd, -e)
        fo = np.finfo(r.D.dtype) if r.D.dtype.kind == "f" else np.finfo(np.float64)
        bound = ROUNDING[conditioning] * r.iterations * 2 * p * u * kappa * N \
            + 2 * tol * max(np.linalg.norm(D1), np.linalg.norm(dd1)) \
            + p * 1.1e-16 * kappa * N \
            + fo.eps * np.linalg.norm(D1) + np.ldexp(np.sqrt(D1.size) * fo.tiny * fo.eps, -e)   # output rounding
        err = np.linalg.norm(dd1 - D1)
        assert err <= bound, (f"converged but ‖D − D*‖ = {err:.3g} > bound {bound:.3g} (κ={kappa:.2g}, "
                              f"status {r.status}, {r.iterations} it, level {r.level:.2g})")
    outcomes["converged (within bound)"] += 1


@pytest.mark.parametrize("conditioning", OPTIONS)
def test_solver_is_honest(conditioning):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(cases())
    def honest(c):
        check(c, conditioning)
    honest()


def teardown_module(module):
    if any(OUTCOMES.values()):
        for o, counts in OUTCOMES.items():
            print(f"\nfuzz outcomes [{o}]:", dict(counts))
        for k, c in FIRST.items():
            print(f"  first {k}: {c}")

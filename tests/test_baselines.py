"""The baselines of chapter 7 (eaglebook.solver.baselines): each converges to the least-squares completion,
returns a consistent trace, and rejects bad input with a ValueError naming the argument."""

import numpy as np
import pytest
import torch

from eaglebook import tasks
from eaglebook.solver import baselines as bl


@pytest.fixture(scope="module")
def problem():
    A, B, C, _ = tasks.make_problem(30, 24, rank=24, kappa=10.0, rng=np.random.default_rng(0))
    ref = bl.lstsq(A, B, C).D
    return A, B, C, ref


ITERATIVE = {
    "EAGLE": lambda A, B, C, **k: bl.eagle(A, B, C, **k),
    "EAGLE sketched": lambda A, B, C, **k: bl.eagle(A, B, C, sketch=15, **k),
    "GD": lambda A, B, C, **k: bl.gd(A, B, C, **k),
    "CG": lambda A, B, C, **k: bl.cgls(A, B, C, **k),
    "LSQR": lambda A, B, C, **k: bl.lsqr(A, B, C, **k),
    "LSMR": lambda A, B, C, **k: bl.lsmr(A, B, C, **k),
    "SGD": lambda A, B, C, **k: bl.sgd(A, B, C, sketch=15, **k),
    "RandSketch+CG": lambda A, B, C, **k: bl.randsketch_cg(A, B, C, **k),
}


@pytest.mark.parametrize("name", list(ITERATIVE))
def test_iterative_methods_converge_to_the_lstsq_completion(problem, name):
    A, B, C, ref = problem
    tr = ITERATIVE[name](A, B, C, reference=ref, target=1e-10, max_iter=50_000, time_limit=30)
    assert tr.status == "target", (name, tr.status, tr.final)
    assert np.linalg.norm(tr.D - ref) / np.linalg.norm(ref) <= 1e-10 * 1.0001
    # the trace is consistent: one value and one timestamp per iteration, time never goes back
    assert tr.values.shape == tr.times.shape == (tr.iterations,)
    assert np.all(np.diff(tr.times) >= 0) and tr.times[0] >= tr.setup >= 0
    k = tr.iterations_to(1e-10)       # column-by-column methods stop each column at its own target: k <= L
    assert k == tr.iterations or (name in ("LSQR", "LSMR", "RandSketch+CG") and k <= tr.iterations)
    assert tr.time_to(1e-10) == pytest.approx(tr.times[k - 1])
    assert tr.bookkeeping >= 0 and tr.per_iteration > 0


@pytest.mark.parametrize("kw", [dict(backend="numpy"), dict(backend="scipy"), dict(backend="torch"), None])
def test_direct_methods_agree(problem, kw):
    A, B, C, ref = problem
    tr = bl.svd(A, B, C, reference=ref) if kw is None else bl.lstsq(A, B, C, reference=ref, **kw)
    assert tr.status == "direct" and tr.iterations == 1 and tr.final < 1e-12


def test_rank_deficient_krylov_methods_give_the_minimum_norm_completion():
    A, B, C, _ = tasks.make_problem(30, 30, rank=12, kappa=10.0, rng=np.random.default_rng(1))
    ref = tasks.nystrom(A, B, C)
    for f in (bl.cgls, bl.lsqr, bl.lsmr, bl.randsketch_cg, bl.eagle, bl.svd):
        kw = {} if f is bl.svd else dict(target=1e-9, max_iter=20_000)
        tr = f(A, B, C, reference=ref, **kw)
        assert tr.final <= 1e-9, (f.__name__, tr.final, tr.status)
    assert bl.randsketch_cg(A, B, C, reference=ref, target=1e-9).info["preconditioner"] == "SVD"


def test_gd_ridge_floors_the_error_on_rank_deficient_data():
    A, B, C, _ = tasks.make_problem(20, 20, rank=8, kappa=1e3, rng=np.random.default_rng(2))
    ref = tasks.nystrom(A, B, C)
    tr = bl.gd(A, B, C, reference=ref, ridge=1e-3, max_iter=20_000)
    assert 1e-8 < tr.final < 1 and tr.info["ridge"] == 1e-3


def test_residual_monitor_and_table2_stopping_rule():
    A, B, C, _ = tasks.make_problem(20, 20, rank=20, kappa=1e2, rng=np.random.default_rng(3))
    B1, I = B[:1], np.eye(20)
    for f in (bl.eagle, bl.cgls, bl.lsmr):
        tr = f(A, B1, I, monitor="residual", target=1e-3)
        X = tr.D
        assert tr.status == "target"
        assert np.linalg.norm(X @ A - B1) ** 2 <= 1e-3 * np.linalg.norm(B1) ** 2 * 1.0001
    with pytest.raises(ValueError, match="argument C"):
        bl.eagle(A, B1, C, monitor="residual", target=1e-3)


def test_lsmr_trace_matches_scipy_untouched(problem):
    A, B, C, ref = problem
    traced = bl.lsmr(A, B, C, reference=ref, max_iter=12)
    bare = bl.lsmr(A, B, C, max_iter=12, record=False)
    assert traced.iterations == bare.iterations == 12
    np.testing.assert_allclose(traced.D, bare.D, rtol=1e-12, atol=1e-14)
    # the traced error after the last iteration is the error of the returned iterate
    assert traced.final == pytest.approx(np.linalg.norm(traced.D - ref) / np.linalg.norm(ref), rel=1e-9)


def test_torch_input_is_accepted(problem):
    A, B, C, ref = problem
    tr = bl.cgls(torch.as_tensor(A), torch.as_tensor(B), torch.as_tensor(C), reference=ref, target=1e-8)
    assert tr.status == "target" and isinstance(tr.D, np.ndarray)


BAD = [
    ("A", lambda A, B, C, ref, f: f(np.where(np.eye(*A.shape, dtype=bool), np.nan, A), B, C)),
    ("B", lambda A, B, C, ref, f: f(A, B[:, :-1], C)),
    ("C", lambda A, B, C, ref, f: f(A, B, C[:-1])),
    ("A", lambda A, B, C, ref, f: f(A.astype(str), B, C)),
    ("A", lambda A, B, C, ref, f: f(A[None], B[None], C[None])),
    ("reference", lambda A, B, C, ref, f: f(A, B, C, reference=ref[:, :1])),
    ("reference", lambda A, B, C, ref, f: f(A, B, C, monitor="error")),
    ("monitor", lambda A, B, C, ref, f: f(A, B, C, reference=ref, monitor="mse")),
]
FUNCS = {"eagle": bl.eagle, "lstsq": bl.lstsq, "svd": bl.svd, "gd": bl.gd, "cgls": bl.cgls, "lsqr": bl.lsqr,
         "lsmr": bl.lsmr, "randsketch_cg": bl.randsketch_cg,
         "sgd": lambda A, B, C, **k: bl.sgd(A, B, C, sketch=5, **k)}


@pytest.mark.parametrize("fname", list(FUNCS))
@pytest.mark.parametrize("arg, call", BAD, ids=[f"{a}-{i}" for i, (a, _) in enumerate(BAD)])
def test_bad_input_names_the_argument(problem, fname, arg, call):
    A, B, C, ref = problem
    with pytest.raises(ValueError, match=f"argument {arg}"):
        call(A, B, C, ref, FUNCS[fname])


@pytest.mark.parametrize("f, kw, arg", [
    (bl.gd, dict(max_iter=0), "max_iter"), (bl.cgls, dict(target=-1.0), "target"), (bl.lsmr, dict(tol=0.0), "tol"),
    (bl.lsqr, dict(time_limit=float("nan")), "time_limit"), (bl.gd, dict(ridge=-1e-3), "ridge"),
    (bl.gd, dict(power_iters=0), "power_iters"), (bl.sgd, dict(sketch=0), "sketch"), (bl.sgd, dict(sketch=31), "sketch"),
    (bl.randsketch_cg, dict(oversample=0.5), "oversample"), (bl.lstsq, dict(backend="mkl"), "backend"),
    (bl.lstsq, dict(driver="gels"), "driver"), (bl.eagle, dict(sketch=31), "sketch"), (bl.svd, dict(rcond=-1), "rcond"),
])
def test_bad_options_name_the_argument(problem, f, kw, arg):
    A, B, C, _ = problem
    if f is bl.sgd and "sketch" not in kw:
        kw = dict(kw, sketch=5)
    with pytest.raises(ValueError, match=f"argument {arg}"):
        f(A, B, C, **kw)


def test_gdpp_trace(problem):
    A, B, C, ref = problem
    tr = bl.gdpp(A, B, C, reference=ref, layers=60, target=1e-8)
    assert tr.status == "target" and tr.final <= 1e-8 and tr.values.shape == tr.times.shape == (tr.iterations,)
    with pytest.raises(ValueError, match="argument layers"):
        bl.gdpp(A, B, C, layers=0)

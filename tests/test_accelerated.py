"""Tests for eaglebook.solver.accelerated (odd-polynomial conditioning with a Chebyshev prediction step)."""

import math

import numpy as np
import pytest
import torch

from eaglebook.solver import accelerated as acc
from eaglebook.tasks import make_problem, nystrom

torch.set_num_threads(1)
EPS = np.finfo(np.float64).eps


def rel(x, ref):
    return float(np.linalg.norm(np.asarray(x, dtype=np.float64) - ref) / np.linalg.norm(ref))


def problem(n=40, d=40, kappa=1e3, seed=0, **kw):
    return make_problem(n, d, 2, 2, kappa=kappa, rng=np.random.default_rng(seed), **kw)


# --------------------------------------------------------------------------- the polynomials

@pytest.mark.parametrize("degree", acc.DEGREES)
@pytest.mark.parametrize("a", [1e-6, 1e-3, 0.1, 0.5, 0.9])
def test_minimax_equioscillates_and_is_positive(degree, a):
    c, E = acc.odd_minimax(a, degree)
    k = (degree - 1) // 2
    x = np.linspace(a, 1, 20001)
    err = 1 - acc.poly_eval(c, x)
    assert np.max(np.abs(err)) <= E * (1 + 1e-9) + 1e-15
    # Chebyshev's criterion: k + 2 alternation points with |1 - p| = E, starting with p(a) = 1 - E
    assert acc.poly_eval(c, a) == pytest.approx(1 - E, rel=1e-9, abs=1e-15)
    crit = np.concatenate([[a], acc._critical_points(c, a, 1.0), [1.0]])
    assert crit.size == k + 2
    np.testing.assert_allclose(1 - acc.poly_eval(c, crit), E * (-1.0) ** np.arange(k + 2),
                               rtol=1e-8, atol=1e-14)
    # positive on (0, 1] (the step never annihilates a direction) and increasing on [0, a]
    xs = np.linspace(1e-9, 1, 20001)
    assert np.all(acc.poly_eval(c, xs) > 0)
    assert np.all(np.diff(acc.poly_eval(c, np.linspace(0, a, 2001))) > 0)


def test_minimax_matches_known_limits():
    # a → 0, degree 3: the optimal scaled cubic has slope 3√3 at 0 (and p(1) → 0)
    c, E = acc.odd_minimax(1e-9, 3)
    assert c[0] == pytest.approx(3 * math.sqrt(3), rel=1e-6)
    # a → 1: the Newton–Schulz polynomials
    np.testing.assert_allclose(acc.odd_minimax(1 - 1e-7, 3)[0], [1.5, -0.5], atol=1e-6)
    np.testing.assert_allclose(acc.odd_minimax(1 - 1e-7, 5)[0], [15 / 8, -10 / 8, 3 / 8], atol=1e-6)
    # a better interval never gives a worse error
    Es = [acc.odd_minimax(a, 5)[1] for a in (1e-4, 1e-2, 0.1, 0.5)]
    assert all(e1 > e2 for e1, e2 in zip(Es, Es[1:]))


@pytest.mark.parametrize("degree", [3, 5, 7, 9])
def test_newton_schulz_coefficients(degree):
    c = acc.newton_schulz_coefficients(degree)
    assert acc.poly_eval(c, 1.0) == pytest.approx(1.0, abs=1e-15)
    # order of contact with 1 at x = 1: 1 - p(1 - e) = O(e^((degree+1)/2))
    k = (degree + 1) // 2
    e1, e2 = 1e-2, 5e-3
    r = (1 - acc.poly_eval(c, 1 - e1)) / (1 - acc.poly_eval(c, 1 - e2))
    assert r == pytest.approx(2 ** k, rel=0.1)
    if degree == 5:
        np.testing.assert_allclose(c, [15 / 8, -10 / 8, 3 / 8])


def test_poly_range_against_a_grid():
    c, _ = acc.odd_minimax(0.05, 5)
    for lo, hi in [(0.0, 1.0), (0.05, 0.99), (0.3, 0.6), (0.5, 0.5)]:
        x = np.linspace(lo, hi, 200001)
        v = acc.poly_eval(c, x)
        mn, mx = acc.poly_range(c, lo, hi)
        assert mn <= v.min() + 1e-12 and mn >= v.min() - 1e-9
        assert mx >= v.max() - 1e-12 and mx <= v.max() + 1e-9


@pytest.mark.parametrize("m", [1, 2, 5, 8])
def test_chebyshev_residual_bounds(m):
    lo, hi = 0.3, 1.7
    lam = np.linspace(lo, hi, 5001)
    p = acc.chebyshev_residual(lam, lo, hi, m)
    rate = (math.sqrt(hi) - math.sqrt(lo)) / (math.sqrt(hi) + math.sqrt(lo))
    assert acc.chebyshev_residual(0.0, lo, hi, m) == pytest.approx(1.0)
    assert np.max(np.abs(p)) <= 2 * rate ** m * (1 + 1e-9)
    below = acc.chebyshev_residual(np.linspace(0, lo, 1001), lo, hi, m)
    assert np.all(below > 0) and np.all(below <= 1 + 1e-15)


@pytest.mark.parametrize("m", [1, 3, 8])
def test_chebyshev_iteration_has_the_chebyshev_residual(m):
    """C − E X from the Chebyshev iteration equals p_m(E) C (checked on a diagonal E)."""
    lam = np.linspace(0.01, 2.0, 30)
    E = torch.diag(torch.as_tensor(lam))
    C = torch.as_tensor(np.random.default_rng(0).standard_normal((30, 2)))
    lo2, hi2 = torch.tensor(0.4, dtype=torch.float64), torch.tensor(2.0, dtype=torch.float64)
    X = acc._chebyshev(lambda Y: E @ Y, C, lo2, hi2, m)
    want = acc.chebyshev_residual(lam, 0.4, 2.0, m)[:, None] * C.numpy()
    np.testing.assert_allclose((C - E @ X).numpy(), want, atol=1e-13)


def test_schedule_grows_small_values_and_keeps_the_band():
    sch = acc.schedule("polar-express", rounds=40, degree=5, cushion=0.1, lower=1e-14)
    g = np.array([r["growth"] for r in sch])
    assert np.all(g[:10] > 3.8)                         # c₀/(1 + E) for the cushioned quintic
    assert np.all(np.array([r["band_ratio"] for r in sch]) > 0.1 * (1 + acc.SLACK))
    # the certified floor rises by the growth factor until it reaches the band, then the step converges
    reach = next(i for i, r in enumerate(sch) if r["bounds"].l >= r["bounds"].b * (1 - 1e-12))
    assert abs(reach - math.log(0.1 / 1e-14) / math.log(g[0])) <= 3
    assert sch[-1]["bounds"].b / sch[-1]["bounds"].u > 1 - 1e-10
    ns = acc.schedule("cubic", rounds=5, lower=1e-3)             # EAGLE's map: growth 3/2 per round
    assert all(r["growth"] == pytest.approx(1.5 / (r["bounds"].u * (1 + acc.SLACK)), rel=1e-12) for r in ns)
    assert all(1.45 < r["growth"] < 1.5 for r in ns)


def test_gemm_and_flop_model():
    assert acc.gemms_per_round("cubic") == 2 and acc.gemms_per_round("quintic") == 3
    assert [acc.gemms_per_round("polar-express", k) for k in (3, 5, 7)] == [2, 3, 4]
    f = acc.flops_per_round(240, 240, 2, 2, degree=5)
    assert f["gram"] == f["apply"] == 2 * 240 ** 3 and f["powers"] == 2 * 240 ** 3
    assert f["total"] == f["condition"] + f["harvest"] + f["power"]
    assert f["condition"] == f["gram"] + f["powers"] + f["apply"] + f["B"]


# --------------------------------------------------------------------------- invariant and bounds

@pytest.mark.parametrize("step,rounds", [("polar-express", 20), ("quintic", 35), ("cubic", 50)])
@pytest.mark.parametrize("shape", [(40, 40), (60, 40), (40, 60)])
def test_invariant_float64_kappa_1e6(step, rounds, shape):
    """D_ℓ + B_ℓ A_ℓ^† C_ℓ = B A^† C along the iteration.  The data are consistent (D = W C exactly), so the
    exact target is known.  The float64 pseudo-inverse of A_0 itself is only good to about κ·n·u (which is
    also nystrom's error); once A_ℓ is conditioned (ℓ >= 2) it gives the invariant to rounding level, so
    any drift of the invariant along the iteration would show."""
    n, d = shape
    A, B, C, D = problem(n, d, kappa=1e6, seed=1)
    its = list(acc.iterate(A, B, C, step=step, max_iter=rounds))
    assert rel(its[0].invariant(), D) < 1e6 * max(n, d) * EPS
    worst = max(rel(it.invariant(), D) for it in its[2:])
    assert worst < 1e-12
    assert rel(its[-1].D, D) < 1e-12


@pytest.mark.parametrize("shape", [(30, 50), (50, 30)])
def test_invariant_noisy_data(shape):
    """Inconsistent data (noise on A, B, C; B has a component in A's right kernel for d < n): the invariant
    holds against the pseudo-inverse completion (A is well conditioned after the noise)."""
    n, d = shape
    A, B, C, _ = problem(n, d, kappa=1e6, seed=2, noise_std=0.01)
    ref = nystrom(A, B, C)
    worst = max(rel(it.invariant(), ref) for it in acc.iterate(A, B, C, max_iter=15))
    assert worst < 1e-13


def test_invariant_rank_deficient():
    """Rank 15 of 40.  Consistent data: the invariant holds to rounding with a pseudo-inverse cut-off above
    the rounding-level singular values, which the iteration grows too (by ~3.9 per round).  Inconsistent
    data (B, C off A's spaces): those grown directions start to be harvested (the soft cut-off of every
    polynomial method, EAGLE's included), by about (u·3.9^ℓ)²·m² of terms of size ‖B‖‖C‖/(u‖A‖); we check
    the early rounds only."""
    A, B, C, D = problem(40, 40, kappa=1e6, seed=2, rank=15)
    for it in acc.iterate(A, B, C, max_iter=15):
        assert rel(it.invariant(rcond=1e-10 * 4 ** it.ell), D) < (1e-9 if it.ell < 2 else 1e-12)
    rng = np.random.default_rng(3)
    B2, C2 = B + 1e-3 * rng.standard_normal(B.shape), C + 1e-3 * rng.standard_normal(C.shape)
    ref = nystrom(A, B2, C2, rcond=1e-10)
    # the floor of a completion from inconsistent data is of order u·κ(A) (the first-order perturbation of
    # B A⁺ C), above the consistent case's rounding level: 1.2e-10 here from the first round on (κ = 1e6)
    for it in acc.iterate(A, B2, C2, max_iter=6):
        assert rel(it.invariant(rcond=1e-10 * 4 ** it.ell), ref) < EPS * 1e6


def test_tracked_bounds_hold_for_the_matrices():
    """‖A_ℓ‖₂ <= u_ℓ; every direction that started in the band [b_0, u_0] stays in [b_ℓ, u_ℓ]; every direction
    above the certified floor l_0 stays above l_ℓ.  Directions are followed through the right singular
    vectors of A_0, which the iteration keeps (exactly, in exact arithmetic)."""
    A, B, C, _ = problem(60, 60, kappa=1e5, seed=4)
    _, s0, Vt = np.linalg.svd(A)
    its = list(acc.iterate(A, B, C, max_iter=12, lower=1e-4))
    b0, l0 = its[0].bounds.b, its[0].bounds.l
    in_band, above_floor = s0 >= b0, s0 >= l0
    assert 0 < in_band.sum() < 60 and above_floor.sum() > in_band.sum()
    for it in its:
        bd = it.bounds
        sig = np.linalg.norm(it.A @ Vt.T, axis=0)          # σ_ℓ of each original direction
        assert np.linalg.norm(it.A, 2) <= bd.u * (1 + 1e-12)
        assert np.all(sig[in_band] >= bd.b * (1 - 1e-9))
        assert np.all(sig[above_floor] >= bd.l * (1 - 1e-9))


# --------------------------------------------------------------------------- convergence

@pytest.mark.parametrize("step,degree", [("polar-express", 3), ("polar-express", 5), ("polar-express", 7),
                                         ("quintic", 5), ("cubic", 3)])
@pytest.mark.parametrize("shape,rank", [((40, 40), None), ((60, 30), None), ((30, 60), None), ((40, 40), 12)])
def test_converges_to_nystrom(step, degree, shape, rank):
    n, d = shape
    A, B, C, _ = problem(n, d, kappa=1e3, rank=rank, seed=5)
    ref = nystrom(A, B, C)
    r = acc.solve(A, B, C, step=step, degree=degree, reference=ref)
    assert r.converged and r.status == "converged"
    assert rel(r.D, ref) < 1e-10 and r.rel_error[-1] == pytest.approx(rel(r.D, ref), rel=1e-6, abs=1e-16)
    assert r.gemms == 1 + (r.iterations - 1) * acc.gemms_per_round(step, degree)
    assert r.delta.shape == (r.iterations,)


def test_faster_than_the_cubic_map():
    """The point of the module: fewer rounds than the fixed cubic step to the same accuracy."""
    A, B, C, D = problem(60, 60, kappa=1e8, seed=6)
    first = lambda e: int(np.flatnonzero(e <= 1e-10)[0]) + 1
    r5 = acc.solve(A, B, C, reference=D, tol=1e-300, max_iter=40)
    r3 = acc.solve(A, B, C, step="cubic", reference=D, tol=1e-300, max_iter=80)
    assert 2 * first(r5.rel_error) <= first(r3.rel_error)


def test_cubic_step_with_eagles_prediction_is_algorithm_1():
    """step="cubic", harvest="eagle" is Algorithm 1 (η = 1/3 up to normalisation, γ = 1) with the tracked ρ:
    the same iteration counts as eaglebook.solve to within a round or two; the invariant holds for it too."""
    import eaglebook
    A, B, C, D = problem(60, 60, kappa=1e4, seed=15)
    first = lambda e, t: int(np.flatnonzero(np.asarray(e) <= t)[0]) + 1
    mine = acc.solve(A, B, C, step="cubic", harvest="eagle", reference=D, tol=1e-300, max_iter=80)
    theirs = eaglebook.solve(A, B, C, reference=D, tol=1e-300, max_iter=80, rho="exact")
    for t in (1e-3, 1e-6, 1e-10):
        assert abs(first(mine.rel_error, t) - first(theirs.rel_error, t)) <= 2
    for it in acc.iterate(A, B, C, step="polar-express", harvest="eagle", max_iter=12):
        if it.ell >= 2:
            assert rel(it.invariant(), D) < 1e-12


def test_float32_and_torch():
    A, B, C, _ = problem(50, 40, kappa=1e2, seed=7)
    ref = nystrom(A, B, C)
    r = acc.solve(A.astype(np.float32), B.astype(np.float32), C.astype(np.float32))
    assert r.converged and r.D.dtype == np.float32 and rel(r.D, ref) < 1e-5
    At, Bt, Ct = (torch.as_tensor(x, dtype=torch.float32) for x in (A, B, C))
    rt = acc.solve(At, Bt, Ct)
    assert isinstance(rt.D, torch.Tensor) and rt.D.dtype == torch.float32
    np.testing.assert_allclose(rt.D.numpy(), r.D, rtol=1e-5, atol=1e-6)


def test_batched_matches_single_solves():
    probs = [problem(30, 30, kappa=k, seed=8) for k in (1e1, 1e3, 1e5)]
    A, B, C = (np.stack([p[i] for p in probs]) for i in range(3))
    r = acc.solve(A, B, C)
    assert r.statuses.shape == (3,) and r.certified.shape == (3,) and r.D.shape == (3, 2, 2)
    for i, p in enumerate(probs):
        assert rel(r.D[i], p.D) < 1e-10
    r2 = acc.solve(A[:, None], B[:, None], C[:, None])       # two batch dimensions
    np.testing.assert_allclose(r2.D[:, 0], r.D, rtol=1e-12, atol=1e-15)


def test_scale_invariance_and_determinism():
    A, B, C, _ = problem(30, 30, kappa=1e4, seed=9)
    r = acc.solve(A, B, C)
    r2 = acc.solve(A * 2.0 ** 300, B * 2.0 ** -200, C * 2.0 ** 50)
    np.testing.assert_allclose(r2.D, r.D * 2.0 ** (-200 + 50 - 300), rtol=1e-13)
    assert r2.iterations == r.iterations
    r3 = acc.solve(A, B, C)
    np.testing.assert_array_equal(r3.D, r.D)


def test_zero_matrix_gives_zero():
    A, B, C, _ = problem(20, 20, seed=10)
    r = acc.solve(np.zeros_like(A), B, C)
    assert r.converged and np.all(r.D == 0)
    batch = acc.solve(np.stack([np.zeros_like(A), A]), np.stack([B, B]), np.stack([C, C]))
    assert np.all(batch.D[0] == 0) and rel(batch.D[1], nystrom(A, B, C)) < 1e-10


def test_certify_waits_for_the_tracked_floor():
    """On a spectral gap (half the directions at 1, half at 1e-11, C spread over all of them) the cheap rule
    stops before the small directions have grown (their D changes are still below tol); certify=True
    cannot, and ``certified`` says which happened."""
    rng = np.random.default_rng(11)
    n = 40
    U, _ = np.linalg.qr(rng.standard_normal((n, n)))
    V, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = np.where(np.arange(n) < n // 2, 1.0, 1e-11)
    A = (U * s) @ V.T
    W, C = rng.standard_normal((2, n)), rng.standard_normal((n, 2))
    B, D = W @ A, W @ C
    cheap = acc.solve(A, B, C, reference=D)
    sure = acc.solve(A, B, C, reference=D, certify=True)
    assert sure.converged and sure.certified and rel(sure.D, D) < 1e-3       # κ = 1e11: floor ~κu
    assert not cheap.certified and cheap.iterations < sure.iterations
    assert rel(cheap.D, D) > 0.1                                               # the documented hazard
    assert sure.certify == "gemm" and cheap.certify == "none"                 # the Result field, from the flag


def test_poly_result_is_the_one_result_type():
    """PolyResult extends eaglebook.solver.Result with only its own fields; the shared ones keep their names."""
    import dataclasses

    from eaglebook.solver import Result
    assert issubclass(acc.PolyResult, Result)
    base = [f.name for f in dataclasses.fields(Result)]
    own = [f.name for f in dataclasses.fields(acc.PolyResult)][len(base):]
    assert [f.name for f in dataclasses.fields(acc.PolyResult)][:len(base)] == base
    assert own == ["gemms", "flops", "certified", "bounds", "step", "degree", "coefficients"]
    A, B, C, D = problem(20, 20, seed=13)
    r = acc.solve(A, B, C, reference=D)
    assert isinstance(r, Result) and r.converged == (r.status == "converged") and r.statuses is None
    assert r.delta.shape == r.rel_error.shape == (r.iterations,) and r.error is None and r.machines == 1
    assert r.step == "polar-express" and r.degree == 5 and isinstance(r.bounds, acc.Bounds) and r.gemms > 0


def test_lower_bound_known_lets_the_step_converge():
    A, B, C, D = problem(40, 40, kappa=1e2, seed=12)
    known = acc.solve(A, B, C, lower=1e-2 / acc.POWER_MARGIN, certify=True)
    assert known.certified and rel(known.D, D) < 1e-12
    default = acc.solve(A, B, C, certify=True)
    assert known.iterations < default.iterations


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("kw, name", [
    (dict(step="septic"), "step"), (dict(degree=4), "degree"), (dict(degree=9), "degree"),
    (dict(cushion=0.0), "cushion"), (dict(cushion=0.95), "cushion"), (dict(lower=0.0), "lower"),
    (dict(lower=1.0), "lower"), (dict(harvest_degree=0), "harvest_degree"), (dict(power_iters=0), "power_iters"),
    (dict(max_iter=0), "max_iter"), (dict(tol=0.0), "tol"), (dict(atol=-1.0), "atol"), (dict(patience=0), "patience"),
    (dict(certify="yes"), "certify"), (dict(rcond=1.5), "rcond"), (dict(seed=-1), "seed"),
    (dict(harvest="cg"), "harvest"),
    (dict(reference=np.zeros((3, 3))), "reference")])
def test_bad_arguments_are_named(kw, name):
    A, B, C, _ = problem(10, 10, seed=13)
    with pytest.raises(ValueError, match=name):
        acc.solve(A, B, C, **kw)


def test_bad_arrays_are_named():
    A, B, C, _ = problem(10, 10, seed=14)
    with pytest.raises(ValueError, match="argument B"):
        acc.solve(A, B[:, :5], C)
    with pytest.raises(ValueError, match="argument C"):
        acc.solve(A, B, C[:5])
    bad = A.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="argument A"):
        acc.solve(bad, B, C)
    with pytest.raises(ValueError, match="batch"):
        list(acc.iterate(np.stack([A, A]), np.stack([B, B]), np.stack([C, C])))
    with pytest.raises(ValueError, match="degree"):
        acc.odd_minimax(0.1, 6)
    with pytest.raises(ValueError, match="argument a"):
        acc.odd_minimax(1.0, 5)


# --------------------------------------------------------------------------- the option of eaglebook.solve

@pytest.mark.parametrize("conditioning", ["polar-express", "quintic"])
@pytest.mark.parametrize("shape", [(40, 40), (20, 60), (60, 20)])
def test_solve_conditioning_option_matches_the_accelerated_solver(conditioning, shape):
    import eaglebook
    n, d = shape
    A, B, C, _ = problem(n=n, d=d, kappa=1e6, seed=3)
    ref = nystrom(A, B, C)
    r = eaglebook.solve(A, B, C, conditioning=conditioning, reference=ref)
    a = acc.solve(A, B, C, step=conditioning, reference=ref, certify=True)
    assert isinstance(r, eaglebook.Result) and r.status == "converged" and r.converged
    np.testing.assert_array_equal(np.asarray(r.D), np.asarray(a.D))
    assert r.iterations == a.iterations and rel(r.D, ref) < 1e-9
    np.testing.assert_allclose(r.error, r.rel_error ** 2 * float((ref ** 2).sum()), rtol=1e-12)
    # the invariant of chapter 6 along the same iteration, in float64 (D_ℓ + B_ℓ A_ℓ^† C_ℓ = B A^† C)
    worst = max(rel(it.invariant(), ref) for it in acc.iterate(A, B, C, step=conditioning, max_iter=r.iterations)
                if it.ell >= 2)
    assert worst < 1e6 * max(n, d) * EPS


def test_solve_conditioning_default_is_the_cubic_step_and_fewer_rounds_accelerated():
    import eaglebook
    A, B, C, _ = problem(n=60, d=60, kappa=1e8, seed=4)
    ref = nystrom(A, B, C)
    e = eaglebook.solve(A, B, C, reference=ref)
    c = eaglebook.solve(A, B, C, conditioning="cubic", reference=ref)
    np.testing.assert_array_equal(np.asarray(e.D), np.asarray(c.D))
    p = eaglebook.solve(A, B, C, conditioning="polar-express", reference=ref)
    assert p.iterations * 2 <= e.iterations, (p.iterations, e.iterations)


@pytest.mark.parametrize("kw, name", [(dict(conditioning="septic"), "conditioning"), (dict(conditioning=5), "conditioning"),
                                      (dict(sketch=10), "sketch"), (dict(eta=0.5), "eta"), (dict(rho="exact"), "rho"),
                                      (dict(certify="svd"), "certify"), (dict(redraw=False), "redraw")])
def test_solve_conditioning_bad_combinations_are_named(kw, name):
    import eaglebook
    A, B, C, _ = problem(n=20, d=20)
    kw = dict(kw)
    kw.setdefault("conditioning", "polar-express")
    with pytest.raises(ValueError, match=name):
        eaglebook.solve(A, B, C, **kw)

"""Tests for eaglebook.eagle (Algorithm 1 in its three regimes)."""

import re

import numpy as np
import pytest
import torch

from eaglebook import solver as E
from eaglebook.tasks import make_problem, nystrom

torch.set_num_threads(1)


def problem(n=20, d=20, kappa=1e3, seed=0, **kw):
    A, B, C, _ = make_problem(n, d, 2, 2, kappa=kappa, rng=np.random.default_rng(seed), **kw)
    return A, B, C, nystrom(A, B, C)


def rel(x, ref):
    return float(np.linalg.norm(np.asarray(x, dtype=np.float64) - ref) / np.linalg.norm(ref))


# --------------------------------------------------------------------------- invariant and convergence

@pytest.mark.parametrize("shape,rank,noise", [((20, 20), None, 0.0), ((30, 20), 8, 0.0), ((20, 30), None, 0.01)])
def test_invariant_centralized(shape, rank, noise):
    """D_ℓ + B_ℓ A_ℓ^† C_ℓ = B A^† C along the centralized iteration, for any data (noise included)."""
    n, d = shape
    A, B, C, ref = problem(n, d, kappa=1e3, rank=rank, noise_std=noise, seed=1)
    # rank-deficient: A_ℓ's rounding-level singular values get conditioned up too (by ~(3/2)^ℓ), so
    # the pseudo-inverse needs a cut-off above them
    rcond = 1e-8 if rank else None
    worst = 0.0
    for it in E.iterate(A, B, C, max_iter=40):
        worst = max(worst, rel(it.invariant(rcond=rcond), ref))
        if it.ell <= 25:   # before any rescaling: check against the literal formula too
            assert it.log2_scale_A == 0 and it.log2_scale_B == 0
            worst = max(worst, rel(it.D + it.B @ np.linalg.pinv(it.A, rtol=rcond or 1e-14) @ it.C, ref))
    assert worst < 1e-10
    assert rel(it.D, ref) < 1e-10


def test_rescaling_does_not_change_the_iteration():
    A, B, C, ref = problem(20, 20, kappa=1e3, seed=1)
    on = list(E.iterate(A, B, C, max_iter=60))
    off = list(E.iterate(A, B, C, max_iter=60, rescale=False))
    assert on[-1].log2_scale_A > 0
    for a, b in zip(on, off):
        Au, Bu = a.unscaled()
        np.testing.assert_allclose(Au, b.A, rtol=1e-9, atol=1e-300)
        np.testing.assert_allclose(a.D, b.D, rtol=1e-12, atol=1e-15)


def test_converges_to_nystrom_float64():
    A, B, C, ref = problem(30, 30, kappa=1e3)
    r = E.solve(A, B, C, reference=ref, max_iter=60)
    assert r.converged and r.status == "converged" and r.iterations <= 60
    assert r.rel_error[-1] < 1e-10 and rel(r.D, ref) < 1e-10
    assert r.error[-1] == pytest.approx(np.sum((r.D - ref) ** 2))
    assert len(r.delta) == len(r.error) == r.iterations
    assert r.machines == 1 and r.communication == 0


@pytest.mark.parametrize("rho", ["exact", "power"])
def test_iterations_grow_like_log_kappa(rho):
    its = []
    for kappa in [1e1, 1e2, 1e3, 1e4, 1e5]:
        A, B, C, ref = problem(24, 24, kappa=kappa)
        r = E.solve(A, B, C, reference=ref, rho=rho)
        assert r.converged and r.rel_error[-1] < 1e-11 * kappa
        its.append(r.iterations)
    # measured (exact and power): [12, 17, 23, 28, 34] — about 5.5 iterations per decade of κ
    assert all(b >= a for a, b in zip(its, its[1:]))
    assert max(np.diff(its)) <= 10
    assert its[-1] <= 45 and its[-1] / its[0] < 5   # κ grew 10⁴×


def test_rank_deficient():
    for n, d in [(30, 20), (20, 30)]:
        A, B, C, ref = problem(n, d, kappa=1e2, rank=5, seed=2)
        r = E.solve(A, B, C, reference=ref, rho="power")
        assert r.converged and r.rel_error[-1] < 1e-10


def test_power_matches_exact():
    A, B, C, ref = problem(20, 30, kappa=1e4, seed=3)
    r1 = E.solve(A, B, C, reference=ref, rho="exact")
    r2 = E.solve(A, B, C, reference=ref, rho="power", power_iters=2)
    # the margin m = POWER_MARGIN makes the small singular values grow by 1/(1 − η/m²) instead of 1.5
    # per UPDATE: log(1.5)/log(1/(1 − η/m²)) = 1.05 times as many iterations (+2 for the check)
    m = E.POWER_MARGIN
    assert r1.iterations <= r2.iterations <= 1.05 * r1.iterations * np.log(1.5) / -np.log(1 - 1 / (3 * m * m)) + 2
    assert r2.rel_error[-1] < 1e-10


# --------------------------------------------------------------------------- sketched

def test_sketched_converges():
    A, B, C, ref = problem(16, 16, kappa=1e2, seed=4)
    full = E.solve(A, B, C, reference=ref)
    r = E.solve(A, B, C, reference=ref, sketch=4, seed=0, max_iter=3000)
    assert r.converged and r.rel_error[-1] < 1e-8
    assert r.iterations > 2 * full.iterations           # about n/r times more (measured 4 -> ~10x)
    r2 = E.solve(A, B, C, reference=ref, sketch=4, seed=0, max_iter=3000)
    np.testing.assert_array_equal(r.D, r2.D)             # seeded
    assert E.solve(A, B, C, sketch=16, reference=ref).rel_error[-1] < 1e-10   # r = n is S = I up to a permutation


def test_fixed_sketch_does_not_converge():
    A, B, C, ref = problem(16, 16, kappa=1e2, seed=4)
    r = E.solve(A, B, C, reference=ref, sketch=4, redraw=False, max_iter=300)
    assert r.rel_error[-1] > 1e-3


def test_update_column_selection_equals_matrix_sketch():
    A, B, C, ref = problem(12, 10, seed=5)
    D = np.zeros((2, 2))
    cols = np.array([1, 4, 7])
    S = np.eye(12)[:, cols]
    u1, u2 = E.update(A, B, C, D, S=cols), E.update(A, B, C, D, S=S)
    for x, y in zip(u1, u2):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)
    untouched = np.setdiff1d(np.arange(12), cols)
    np.testing.assert_array_equal(u1.A[:, untouched], A[:, untouched])   # only selected columns change


# --------------------------------------------------------------------------- distributed

def test_distributed_converges_to_same_D():
    A, B, C, ref = problem(60, 40, kappa=1e3, rank=8, seed=6)
    Ds = {}
    for M in (1, 3, 5):
        Ab, Bb = E.split_columns(A, B, M)
        r = E.solve_distributed(Ab, Bb, C, reference=ref)
        assert r.converged and r.rel_error[-1] < 1e-10, M
        assert r.machines == M
        assert r.floats_per_round == ((40 + 2) * 2 if M > 1 else 0)
        assert r.communication == r.iterations * r.floats_per_round
        Ds[M] = r.D
    np.testing.assert_allclose(Ds[3], Ds[1], rtol=1e-9, atol=1e-12)
    single = E.solve(A, B, C)
    np.testing.assert_array_equal(E.solve_distributed([A], [B], C).D, single.D)


def test_diversity_index():
    A, B, C, ref = problem(60, 40, kappa=1e3, rank=8, seed=6)
    assert E.diversity_index(E.split_columns(A, B, 3)[0]) == pytest.approx(1.0)
    A2, *_ = problem(36, 16, kappa=1e2)
    assert 0 < E.diversity_index(E.split_columns(A2, A2[:2], 3)[0]) < 0.5


# --------------------------------------------------------------------------- float32 and rescaling

def test_float32_300_iterations_no_nan():
    A, B, C, ref = problem(30, 30, kappa=1e3, seed=7)
    f = lambda x: x.astype(np.float32)
    errs = []
    for it in E.iterate(f(A), f(B), f(C), max_iter=300, rho="power"):
        assert it.A.dtype == np.float32 and np.isfinite(it.A).all() and np.isfinite(it.D).all()
        assert 2.0 ** -17 < np.linalg.norm(it.A) < 2.0 ** 17
        errs.append(rel(it.D, ref))
    assert it.log2_scale_A > 100          # ‖A_ℓ‖ shrank by more than 2^-100 and was rescaled
    assert max(errs[50:]) < 1e-5          # float32-level accuracy, held to ℓ = 300
    r = E.solve(f(A), f(B), f(C), reference=ref)
    assert r.D.dtype == np.float32 and r.converged and r.rel_error[-1] < 1e-5


def test_float32_long_rank_deficient_run_stays_finite():
    """B's component in ker(A) is never shrunk: B has its own rescaling exponent, else it overflows."""
    A, B, C, ref = problem(30, 20, kappa=1e2, rank=8, seed=1)
    f = lambda x: x.astype(np.float32)
    for it in E.iterate(f(A), f(B), f(C), max_iter=400):
        pass
    assert np.isfinite(it.B).all() and np.isfinite(it.D).all() and rel(it.D, ref) < 1e-5


def test_float32_rescaling_matters_on_a_slow_run():
    """Distributed with small diversity α needs hundreds of rounds; unrescaled float32 never gets there (its
    products leave float32's range: the run ends "non_finite", its best error far above the rescaled one's)."""
    A, B, C, ref = problem(36, 16, kappa=1e2)
    f = lambda x: x.astype(np.float32)
    Ab, Bb = E.split_columns(f(A), f(B), 3)
    on = E.solve_distributed(Ab, Bb, f(C), reference=ref, tol=1e-7, max_iter=600)
    off = E.solve_distributed(Ab, Bb, f(C), reference=ref, tol=1e-7, max_iter=600, rescale=False)
    assert on.rel_error[-1] < 1e-4
    assert on.status == "converged" and off.status != "converged"
    assert np.nanmin(off.rel_error) > 10 * on.rel_error[-1]


# --------------------------------------------------------------------------- types

def test_numpy_and_torch_round_trip():
    A, B, C, ref = problem(12, 10, kappa=10.0, seed=8)
    r = E.solve(A, B, C)
    assert isinstance(r.D, np.ndarray) and r.D.dtype == np.float64
    r = E.solve(A.astype(np.float32), B.astype(np.float32), C.astype(np.float32), reference=ref)
    assert isinstance(r.D, np.ndarray) and r.D.dtype == np.float32   # a float64 reference does not promote
    for dt in (torch.float32, torch.float64):
        At, Bt, Ct = (torch.from_numpy(x).to(dt) for x in (A, B, C))
        r = E.solve(At, Bt, Ct, reference=torch.from_numpy(ref))
        assert isinstance(r.D, torch.Tensor) and r.D.dtype == dt and r.D.device == At.device
        assert r.rel_error[-1] < (1e-5 if dt == torch.float32 else 1e-12)
        assert isinstance(r.delta, np.ndarray) and r.delta.dtype == np.float64
    it = next(E.iterate(At, Bt, Ct, max_iter=1))
    assert isinstance(it.A, torch.Tensor) and it.ell == 0

def _int_problem():
    g = np.random.default_rng(3)
    A = g.integers(-5, 6, size=(8, 6))
    while np.linalg.matrix_rank(A) < 6:
        A = g.integers(-5, 6, size=(8, 6))
    return A, g.integers(-5, 6, size=(2, 6)), g.integers(-5, 6, size=(8, 3))


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("int_dtype", ["int64", "int32", "bool"])
def test_integer_input_is_computed_in_float64(kind, int_dtype):
    """A torch int64 tensor came back float32 (torch's default dtype) where NumPy int64 gave float64."""
    A, B, C = _int_problem()
    if int_dtype == "bool":
        A, B, C = A > 0, B > 0, C > 0
    ref = nystrom(A.astype(np.float64), B.astype(np.float64), C.astype(np.float64))
    A, B, C = (x.astype(int_dtype) for x in (A, B, C))
    if kind == "torch":
        A, B, C = (torch.from_numpy(x) for x in (A, B, C))
    assert torch.get_default_dtype() == torch.float32      # the case that used to leak into the result
    for r in (E.solve(A, B, C), E.solve(A, B, C, sketch=3, max_iter=3),
              E.solve_distributed(list(A[:, i::2] for i in range(2)), list(B[:, i::2] for i in range(2)), C,
                                  max_iter=3)):
        assert isinstance(r.D, torch.Tensor if kind == "torch" else np.ndarray)
        assert r.D.dtype == (torch.float64 if kind == "torch" else np.float64), r.D.dtype
    r = E.solve(A, B, C)
    if int_dtype != "bool":      # the bool A is rank-deficient; its D is not compared
        assert r.converged and rel(np.asarray(r.D), ref) < 1e-12
    D = nystrom(A, B, C)
    assert D.dtype == (torch.float64 if kind == "torch" else np.float64)


def test_integer_with_float32_input_stays_float32():
    A, B, C = (torch.from_numpy(x) for x in _int_problem())
    assert E.solve(A, B.float(), C).D.dtype == torch.float32
    assert E.solve(A.numpy(), B.numpy().astype(np.float32), C.numpy()).D.dtype == np.float32


def test_lstsq_integer_torch_input_is_float64():
    A, _, C = _int_problem()
    r = E.lstsq(torch.from_numpy(A), torch.from_numpy(C[:, 0]))
    assert r.x.dtype == torch.float64 and r.status == "converged"
    assert np.allclose(r.x.numpy(), np.linalg.lstsq(A.astype(float), C[:, 0].astype(float), rcond=None)[0])



def test_batched_torch():
    probs = [problem(10, 12, kappa=1e2, seed=s) for s in range(3)]
    A, B, C, ref = (np.stack(x) for x in zip(*probs))
    r = E.solve(torch.from_numpy(A), torch.from_numpy(B), torch.from_numpy(C), reference=ref)
    assert r.D.shape == (3, 2, 2) and r.converged
    for i in range(3):
        assert rel(r.D[i].numpy(), ref[i]) < 1e-10


def test_zero_matrix_gives_zero():
    r = E.solve(np.zeros((5, 6)), np.ones((2, 6)), np.ones((5, 3)))
    assert r.converged and np.array_equal(r.D, np.zeros((2, 3)))
    A = np.zeros((5, 6))
    A[:, 0] = 1.0       # most sketches select only zero columns: ρ = 0 for those steps
    r = E.solve(A, np.ones((2, 6)), np.ones((5, 3)), sketch=2, rho="power", max_iter=200)
    assert np.isfinite(r.D).all()


# --------------------------------------------------------------------------- transformer constants

def test_transformer_constants_stall_with_per_instance_rho():
    """η = 1 zeroes the top singular direction: the error freezes (and later wanders once every
    direction is annihilated).  With ρ from a 1.5× larger norm (a stand-in for the batch maximum)
    the same constants converge."""
    A, B, C, ref = problem(20, 20, kappa=1e2)
    r = E.solve(A, B, C, reference=ref, eta=1.0, gamma=1.9, max_iter=200, rho="exact")
    assert r.rel_error[4:].min() > 0.1          # measured floor 0.76 on ℓ = 5..20, never below 0.34
    assert r.status == "stalled" and np.isnan(r.level)    # never "converged": the direction is lost
    ok = E.solve(A, B, C, reference=ref, eta=1.0, gamma=1.9, rho_scale=1.5, max_iter=200)
    assert ok.converged and ok.rel_error[-1] < 1e-10


# --------------------------------------------------------------------------- layerwise

def test_layerwise_matches_iterate():
    A, B, C, ref = problem(14, 12, kappa=1e2, seed=9)
    its = list(E.iterate(A, B, C, max_iter=8, rescale=False))
    coeffs = []
    for it in its[:-1]:
        rho = np.linalg.norm(it.A, 2) ** -2
        coeffs.append((-rho / 3, -rho))
    L = E.layerwise(A, B, C, coeffs)
    assert len(L) == 9
    for blk, it in zip(L, its):
        for x, y in zip(blk, (it.A, it.B, it.C, it.D)):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-13)
    T = E.layerwise(torch.from_numpy(A), torch.from_numpy(B), torch.from_numpy(C), coeffs, readout="transformer")
    np.testing.assert_allclose(T[-1].D.numpy(), -L[-1].D, rtol=1e-12)


def test_layerwise_batched_per_instance_coefficients():
    probs = [problem(8, 8, kappa=10.0, seed=s) for s in range(2)]
    A, B, C, ref = (torch.from_numpy(np.stack(x)) for x in zip(*probs))
    c = torch.tensor([-1 / 3, -0.1], dtype=torch.float64)
    L = E.layerwise(A, B, C, [(c, 3 * c)] * 2)
    one = E.layerwise(A[1], B[1], C[1], [(-0.1, -0.3)] * 2)
    torch.testing.assert_close(L[-1].D[1], one[-1].D)


# --------------------------------------------------------------------------- bad input

def _bad_cases():
    A, B, C, ref = problem(6, 5, kappa=10.0)
    nanA = A.copy()
    nanA[0, 0] = np.nan
    return [
        (lambda: E.solve(nanA, B, C), "A"),
        (lambda: E.solve(A, B[:, :4], C), "B"),
        (lambda: E.solve(A, B, C[:4]), "C"),
        (lambda: E.solve(A, B, C, sketch=0), "sketch"),
        (lambda: E.solve(A, B, C, sketch=7), "sketch"),
        (lambda: E.solve(A, B, C, tol=0.0), "tol"),
        (lambda: E.solve(A, B, C, tol=-1e-3), "tol"),
        (lambda: E.solve(A, B, C, max_iter=0), "max_iter"),
        (lambda: E.solve(A, B, C, eta=0.0), "eta"),
        (lambda: E.solve(A, B, C, gamma=-1.0), "gamma"),
        (lambda: E.solve(A, B, C, rho="newton"), "rho"),
        (lambda: E.solve(A, B, C, reference=np.ones((3, 3))), "reference"),
        (lambda: E.solve(A, B, C, reference=np.full((2, 2), np.inf)), "reference"),
        (lambda: E.solve_distributed([], [], C), "A_blocks"),
        (lambda: E.solve_distributed([A[:, :3], A[:, 3:]], [B[:, :3]], C), "B_blocks"),
        (lambda: E.solve_distributed([A[:, :3], A[:4, 3:]], [B[:, :3], B[:, 3:]], C), "A_blocks[1]"),
        (lambda: E.solve_distributed([A[:, :3], A[:, 3:]], [B[:, :3], B[:1, 3:]], C), "B_blocks[1]"),
        (lambda: E.solve_distributed([A[:, :3], A[:, 3:]], [B[:, :3], B[:, 2:]], C), "B_blocks[1]"),
        (lambda: E.layerwise(A, B, C, [(-0.1,)]), "coeffs[0]"),
        (lambda: E.layerwise(A, B, C, [(-0.1, -0.2), (-0.1, np.nan)]), "coeffs[1]"),
        (lambda: E.layerwise(A, B, C, [(-0.1, -0.2)], readout="x"), "readout"),
        (lambda: E.solve(A, B, C, rho_scale=0), "rho_scale"),
        (lambda: E.solve(A, B, C, rho_pool="mean"), "rho_pool"),
        (lambda: E.solve(A, B, C, sketch=2, sketch_kind="gauss"), "sketch_kind"),
        (lambda: E.solve(A, B, C, power_iters=0), "power_iters"),
        (lambda: E.solve(A, B, C, sketch=2.5), "sketch"),
        (lambda: E.solve(A[None], B, C), "B"),
        (lambda: E.solve(A, B, C, seed=-1), "seed"),
        (lambda: E.split_columns(A, B, 7), "machines"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_cases())))
def test_bad_input_raises_value_error_naming_argument(case):
    call, name = _bad_cases()[case]
    with pytest.raises(ValueError, match=r"argument " + re.escape(name) + r"(?![\w\[])"):
        call()


# --------------------------------------------------------------------------- no wrong answer called converged

def _generic_rank_deficient(kappa=1e3, seed=0):
    g = np.random.default_rng(seed)
    A, *_ = make_problem(24, 24, 3, 3, rank=14, kappa=kappa, rng=g)
    return A, g.standard_normal((3, 24)), g.standard_normal((24, 3))


@pytest.mark.parametrize("sA,sB,sC", [(1e160, 1, 1), (1e-100, 1e-150, 1e-150), (1e-200, 1e-200, 1e-200),
                                      (1e150, 1e150, 1e150)])
def test_extreme_scales_are_solved_in_a_rescaled_frame(sA, sB, sC):
    """‖A‖_F overflowed (or underflowed) in the stopping rule: the solve stopped after 1 iteration."""
    A, B, C, ref = problem(20, 20, kappa=1e2)
    r = E.solve(A * sA, B * sB, C * sC)
    assert r.status == "converged" and r.iterations > 5
    assert rel(r.D / sB * sA / sC, ref) < 1e-12


def test_too_large_step_is_reported_as_diverged():
    A, B, C, ref = problem(20, 20, kappa=1e2)
    r = E.solve(A, B, C, rho_scale=0.1)       # ηρσ² = 33: the iteration blows up
    assert r.status == "diverged" and not r.converged and np.isfinite(r.D).all()


def test_unrepresentable_completion_is_out_of_range():
    A, B, C, ref = problem(8, 8, kappa=1e3)
    h = lambda x, s: (x * s).astype(np.float16)
    r = E.solve(h(A, 1), h(B, 1e4), h(C, 1e4))          # |D| ≈ 4e6 > float16's 65504
    assert r.status == "out_of_range" and not r.converged
    r = E.solve(h(A, 1), h(B, 1), h(C, 1))
    assert r.status == "converged" and r.D.dtype == np.float16 and rel(r.D, ref) < 1e-2


def test_rank_deficient_generic_data_is_truncated_or_reported():
    """24×24 A of rank 14 with Gaussian B, C: the round-off directions of A were conditioned too and
    gave |D| ≈ 1e18 as "converged".  Now D is the truncated completion (like lstsq) up to ``level``."""
    for kappa in (1e2, 1e3, 1e4):
        A, B, C = _generic_rank_deficient(kappa)
        ref = nystrom(A, B, C)
        r = E.solve(A, B, C)
        assert r.status in ("converged", "rank_deficient")
        assert rel(r.D, ref) <= max(10 * r.level, 1e-12), (kappa, r.status, r.level)
        assert r.level < 1e-6


def test_rcond_truncates_like_nystrom():
    g = np.random.default_rng(3)
    U, _ = np.linalg.qr(g.standard_normal((12, 12)))
    V, _ = np.linalg.qr(g.standard_normal((12, 12)))
    s = np.array([1, .5, .2, .1, .05, .02, .01, 1e-12, 1e-12, 1e-13, 1e-13, 1e-14])
    A = (U * s) @ V.T
    B, C = g.standard_normal((2, 12)), g.standard_normal((12, 2))
    ref = nystrom(A, B, C, rcond=1e-6)
    r = E.solve(A, B, C, rcond=1e-6)
    assert r.status in ("converged", "rank_deficient")
    assert rel(r.D, ref) <= max(10 * r.level, 1e-12) and r.level < 1e-4   # measured 5.8e-7, level 2.1e-6
    with pytest.raises(ValueError, match="argument rcond"):
        E.solve(A, B, C, rcond=-1.0)


def test_no_premature_stop_while_directions_are_unconditioned():
    """d = 57, n = 15, rank 3, κ = 1.4e5: ‖D_ℓ − D_{ℓ−1}‖ <= tol‖D_ℓ‖ fired at ℓ = 2 (error 3e-5)."""
    A, B, C, _ = make_problem(15, 57, 2, 2, rank=3, kappa=1.4e5, rng=np.random.default_rng(0))
    ref = nystrom(A, B, C)
    r = E.solve(A, B, C)
    assert r.status == "converged" and r.iterations > 20 and rel(r.D, ref) < 1e-10


def test_sketch_that_repeats_a_column_does_not_stop():
    """sketch = 1 drawing the same column twice changes nothing (C ⊥ that column): it stopped at 93%."""
    A, B, C, ref = problem(6, 6, kappa=10.0)
    for s in range(2):
        r = E.solve(A, B, C, sketch=1, seed=s, tol=1e-9, max_iter=20000)   # ~4000 UPDATEs (Kaczmarz-like)
        assert r.status == "converged" and rel(r.D, ref) < 1e-6, s


def test_fixed_sketch_is_never_converged():
    A, B, C, ref = problem(16, 16, kappa=1e2, seed=4)
    r = E.solve(A, B, C, sketch=4, redraw=False, max_iter=3000)
    assert r.status == "fixed_sketch" and not r.converged and r.rel_error is None


def test_sketched_inconsistent_wide_data_is_not_converged():
    """The sketched limit is a re-weighted completion when B has a component in ker A (noisy wide)."""
    A, B, C, _ = make_problem(50, 30, 2, 2, kappa=1e2, rank=10, noise_std=0.0, rng=np.random.default_rng(1))
    B = B + 0.01 * np.random.default_rng(2).standard_normal(B.shape)
    r = E.solve(A, B, C, sketch=10, max_iter=20000)
    assert r.status != "converged" or rel(r.D, nystrom(A, B, C)) < 1e-6


def test_float32_floor_is_reported():
    """float32 error grows like κ·u: at κ = 1e7 (beyond 1/rcond) a generic problem is not "converged"."""
    A, *_ = make_problem(40, 40, 2, 2, kappa=1e7, rng=np.random.default_rng(2))
    g = np.random.default_rng(3)
    B, C = g.standard_normal((2, 40)), g.standard_normal((40, 2))
    f = lambda x: x.astype(np.float32)
    r = E.solve(f(A), f(B), f(C))
    assert r.status in ("stalled", "rank_deficient") and np.isfinite(r.level) and r.level > 1e-6


@pytest.mark.parametrize("bad", [lambda At: 0.0, lambda At: -1.0, lambda At: "x", lambda At: 1 / 0,
                                 lambda At: float("nan")])
def test_rho_callable_is_validated(bad):
    A, B, C, _ = problem(6, 5, kappa=10.0)
    with pytest.raises(ValueError, match=r"argument rho\b"):
        E.solve(A, B, C, rho=bad)


def test_bad_scalar_and_dtype_inputs():
    A, B, C, _ = problem(6, 5, kappa=10.0)
    with pytest.raises(ValueError, match=r"argument max_iter\b"):
        E.solve(A, B, C, max_iter=None)
    with pytest.raises(ValueError, match=r"argument A\b"):
        E.solve(A.astype(np.longdouble), B, C)
    Ab, Bb = E.split_columns(A.tolist(), B.tolist(), 2)      # lists are arrays too
    assert Ab[0].shape == (5, 3)


# --------------------------------------------------------------------------- ρ from the power iteration

def test_power_margin_survives_adversarial_starts():
    """The power estimate σ̂ <= ‖Ã‖₂ is a lower bound; ρ = (m σ̂)⁻².  A direction with ρs² > 2/γ grows its C
    component (factor |1 − γρs²|), one with ηρs² > 2 grows in A; both shrink the offending singular value
    of A (s → s|1 − ηρs²| < s for ηρs² < 2), so an overshoot is transient.  Adversarial cases: the seeded
    start vector exactly orthogonal to the top left singular vector (the power iteration cannot see it
    until rounding brings it in), and two top singular values 1e-6 apart."""
    d = n = 20
    u0 = np.random.default_rng(0).standard_normal((d, 1))   # the solver's first draw for seed=0
    g = np.random.default_rng(5)
    Q, _ = np.linalg.qr(np.hstack([u0, g.standard_normal((d, d - 1))]))
    U = Q[:, 1:]                                             # every left singular vector ⊥ u0 but the last
    U = np.hstack([U, Q[:, :1]])
    V, _ = np.linalg.qr(g.standard_normal((n, n)))
    for s in (np.r_[4.0, np.geomspace(1, 1e-4, n - 1)], np.r_[1.0, 1 - 1e-6, np.geomspace(0.5, 1e-4, n - 2)]):
        A = (U * s) @ V.T
        B, C = g.standard_normal((2, n)) @ A.T.T, A @ g.standard_normal((n, 2))
        ref = nystrom(A, B, C)
        r = E.solve(A, B, C, rho="power", seed=0)
        assert r.status == "converged" and rel(r.D, ref) < 1e-10
        assert r.iterations <= E.solve(A, B, C, rho="exact").iterations * 1.2 + 3


def test_distributed_slow_consensus_is_not_called_a_stall():
    """A chapter-8 problem (d = 240, M = 3, α = 0.004, paper profile) whose D change first dips, then falls by
    only ~0.3% a round: the old stall rule gave up after 69 rounds at relative error 6e-3."""
    import pathlib
    z = np.load(pathlib.Path(__file__).parent / "data" / "slow_consensus.npz")
    res = E.solve_distributed(list(z["A"]), list(z["B"]), z["C"], reference=z["D"], max_iter=200)
    assert res.status == "max_iter" and res.iterations == 200
    assert np.all(np.diff(res.rel_error[68:]) < 0) and res.rel_error[-1] < 0.7 * res.rel_error[68]   # still falling


def test_steps_above_a_third_are_certified_without_counting_growth_that_is_not_certain():
    """η ρσ² > 1/3 makes the A-update's singular-value map non-monotone: the stopping rule must not stop at the
    rcond cut-off as if the order of the directions were kept (it did: full-rank κ = 1e2 problems at η = 0.745
    ended rank_deficient at 4e-5 relative error), and the growth it counts is a lower bound."""
    import math
    import numpy as np
    import torch
    import eaglebook
    from eaglebook import tasks
    from eaglebook.solver.norms import MONOTONE_GROWTH, growth_log
    x = torch.tensor([0.0, 0.2, 1 / 3, 0.5, 0.745], dtype=torch.float64)
    g = growth_log(x).numpy()
    assert g[0] == 0 and abs(g[2] - MONOTONE_GROWTH) < 1e-12 and np.all(np.diff(g) > 0)
    for xv, gv in zip(x.tolist()[3:], g[3:]):   # the map's peak bounds the new largest singular value
        t = np.linspace(0, 1, 100001)
        peak = np.max(t * (1 - xv * t ** 2))
        assert gv <= math.log(1 / peak) + 1e-9
    rng = np.random.default_rng(0)
    best = []
    for _ in range(8):
        A, B, C, D = tasks.make_problem(15, 15, rank=15, kappa=1e2, rng=rng)
        r = eaglebook.solve(A, B, C, eta=0.745, gamma=0.447, rho="exact", max_iter=200, tol=1e-300, reference=D)
        best.append(r.rel_error.min())
        assert r.status != "converged" or r.rel_error[-1] < 1e-12        # never a wrong D called converged
        r = eaglebook.solve(A, B, C, eta=0.517, gamma=1.55, reference=D)
        assert r.status == "converged" and r.rel_error[-1] < 1e-12
    assert np.median(best) < 1e-12      # (stopping at the cut-off left a median of 4e-5)

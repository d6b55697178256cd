"""Tests for eaglebook.solver.newton_schulz (the polar iteration) and eaglebook.solver.gdpp (GD++)."""

import numpy as np
import pytest
import torch

import eaglebook
from eaglebook.solver import gdpp, newton_schulz as ns
from eaglebook.tasks import make_problem

torch.set_num_threads(1)
EPS = np.finfo(np.float64).eps


def matrix(d=30, n=20, kappa=1e3, seed=0, rank=None):
    return make_problem(n, d, rank=rank, kappa=kappa, rng=np.random.default_rng(seed)).A


# --------------------------------------------------------------------------- the polar iteration

@pytest.mark.parametrize("shape", [(20, 20), (30, 20), (20, 30)])
@pytest.mark.parametrize("scale", ns.SCALINGS)
def test_polar_converges_to_u_vt(shape, scale):
    d, n = shape
    A = matrix(d, n, kappa=1e4)
    U, _, Vt = np.linalg.svd(A, full_matrices=False)
    r = ns.polar(A, scale=scale)
    assert r.converged and r.iterations < 60
    assert np.linalg.norm(r.U - U @ Vt, 2) < 1e4 * max(d, n) * EPS     # forward error ~ κ·u
    k = min(d, n)
    gram = r.U @ r.U.T if d <= n else r.U.T @ r.U
    assert np.linalg.norm(gram - np.eye(k), 2) < 1e-12


def test_polar_rank_deficient_gives_the_partial_isometry():
    A = matrix(20, 20, kappa=1e2, rank=7)
    U, s, Vt = np.linalg.svd(A)
    r = ns.polar(A, max_iter=200)
    np.testing.assert_allclose(r.U, U[:, :7] @ Vt[:7], atol=1e-10)


def test_polar_iterations_grow_like_log_kappa():
    its = [ns.polar(matrix(20, 20, kappa=k)).iterations for k in (1e2, 1e4, 1e6)]
    assert its[0] < its[1] < its[2]
    steps = np.diff(its) / 2                               # per decade of κ
    assert np.all(np.abs(steps - 1 / np.log10(1.5)) < 1.5)


def test_polar_torch_in_torch_out_and_batched():
    A = torch.as_tensor(np.stack([matrix(seed=s) for s in range(3)]), dtype=torch.float32)
    r = ns.polar(A)
    assert isinstance(r.U, torch.Tensor) and r.U.dtype == torch.float32 and r.U.shape == A.shape
    assert r.scale.shape == (3,)
    G = r.U.mT @ r.U
    assert torch.allclose(G, torch.eye(20).expand(3, 20, 20), atol=1e-4)


@pytest.mark.parametrize("kw, name", [(dict(tol=0.0), "tol"), (dict(max_iter=0), "max_iter"),
                                      (dict(scale="nuclear"), "scale")])
def test_polar_bad_arguments_are_named(kw, name):
    with pytest.raises(ValueError, match=name):
        ns.polar(matrix(), **kw)


def test_polar_bad_matrices_are_named():
    with pytest.raises(ValueError, match="argument A"):
        ns.polar(np.zeros((4, 3)))
    bad = matrix()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="argument A"):
        ns.polar(bad)


# --------------------------------------------------------------------------- the identity with EAGLE

def test_eagle_a_step_is_a_scaled_newton_schulz_step():
    """A'/‖A'‖ = ½(3I − ĀĀᵀ)Ā with Ā = A/‖A‖, and ‖A'‖ = ⅔‖A‖ (the paper's App. C.5)."""
    A = matrix(25, 40, kappa=1e5)
    A2 = ns.eagle_a_step(A)
    Abar = A / np.linalg.norm(A, 2)
    assert np.linalg.norm(A2, 2) == pytest.approx(2 / 3 * np.linalg.norm(A, 2), rel=1e-13)
    gap = np.linalg.norm(A2 / np.linalg.norm(A2, 2) - ns.step(Abar)) / np.linalg.norm(ns.step(Abar))
    assert gap < 4 * 40 * EPS


def test_identity_along_the_solver_iterates():
    """The solver's own A-update (solver.update, via iterate) is the same Newton–Schulz step."""
    A, B, C, _ = make_problem(20, 20, kappa=1e4, rng=np.random.default_rng(3))
    its = list(eaglebook.iterate(A, B, C, max_iter=30, rho="exact", rescale=False))
    unit = lambda M: M / np.linalg.norm(M, 2)
    for a, b in zip(its, its[1:]):
        assert np.linalg.norm(unit(b.A) - ns.step(unit(a.A))) < 4 * 20 * EPS * np.sqrt(20)
        np.testing.assert_allclose(b.A, ns.eagle_a_step(a.A), rtol=0, atol=1e-14 * np.linalg.norm(a.A))


def test_singular_value_map():
    x = np.linspace(0, 1, 11)
    g = ns.singular_value_map(x) / ns.singular_value_map(1.0)
    np.testing.assert_allclose(g, 0.5 * x * (3 - x ** 2))
    assert ns.singular_value_map(1.0, eta=1.0) == 0.0          # η = 1 annihilates the top value
    with pytest.raises(ValueError, match="eta"):
        ns.singular_value_map(x, eta=0)


# --------------------------------------------------------------------------- GD++

def test_gdpp_reaches_the_completion_with_enough_layers():
    A, B, C, D = make_problem(30, 30, kappa=1e3, rng=np.random.default_rng(4))
    r = gdpp.gdpp(A, B, C, layers=40, reference=D)
    assert len(r.rel_error) == 41 and len(r.D_trace) == 41
    assert r.rel_error[-1] < 1e-12 and r.rel_error[0] > 1e-2
    np.testing.assert_allclose(r.D, r.D_trace[-1])


def test_gdpp_error_is_the_one_step_formula():
    """GD++'s read-out error is −W*(I − ρ_L E_L)C₀ on consistent data."""
    A, B, C, D = make_problem(12, 12, kappa=1e2, rng=np.random.default_rng(5))
    W = B @ np.linalg.pinv(A)
    r = gdpp.gdpp(A, B, C, layers=5, reference=D)
    AL = A.copy()
    for _ in range(5):
        AL = AL - AL @ AL.T @ AL / (3 * np.linalg.norm(AL, 2) ** 2)
    EL = AL @ AL.T / np.linalg.norm(AL, 2) ** 2
    np.testing.assert_allclose(r.D - D, -W @ (np.eye(12) - EL) @ C, atol=1e-10)


def test_gdpp_matches_eagle_depth_for_depth():
    A, B, C, D = make_problem(30, 30, kappa=1e4, rng=np.random.default_rng(6))
    e = eaglebook.solve(A, B, C, tol=1e-300, max_iter=40, rho="exact", reference=D).rel_error
    g = gdpp.gdpp(A, B, C, layers=40, reference=D).rel_error
    hit = lambda x: int(np.argmax(x <= 1e-6))
    assert abs((hit(g)) - (hit(e) + 1)) <= 2


def test_gdpp_power_and_torch():
    A, B, C, D = make_problem(20, 20, kappa=1e2, rng=np.random.default_rng(7))
    r = gdpp.gdpp(*(torch.as_tensor(x) for x in (A, B, C)), layers=30, rho="power", reference=D)
    assert isinstance(r.D, torch.Tensor) and r.rel_error[-1] < 1e-8


@pytest.mark.parametrize("kw, name", [(dict(layers=-1), "layers"), (dict(layers=3, eta=0), "eta"),
                                      (dict(layers=3, rho="svd"), "rho")])
def test_gdpp_bad_arguments_are_named(kw, name):
    A, B, C, _ = make_problem(8, 8, kappa=10, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match=name):
        gdpp.gdpp(A, B, C, **kw)
    with pytest.raises(ValueError, match="argument C"):
        gdpp.gdpp(A, B, C[:-1], layers=2)

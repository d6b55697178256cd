"""Tests of eaglebook.models: the definition, the §5.5 update, the read-out sign, masks, regimes."""

import numpy as np
import pytest
import torch

from eaglebook import config, models, tasks
from eaglebook.config import ModelConfig, TaskConfig
from eaglebook.models import LinearTransformer, diagonal_update

torch.set_num_threads(1)
F64 = torch.float64
TASK = TaskConfig()                                          # n = d = 18, n' = d' = 2
SMALL = TaskConfig(n=6, d=5, n_prime=2, d_prime=3, s=3)      # n != d, n' != d' catches orientation bugs


def make(regime, task=TASK, seed=1, dtype=F64, **kw):
    return LinearTransformer(ModelConfig(regime=regime, **kw), task, generator=torch.Generator().manual_seed(seed),
                             dtype=dtype)


def prompt(task, batch=4, seed=0, dtype=F64):
    X, _ = tasks.sample_X(task, batch, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    return X, tasks.prompt(X, task)


def literal(m, Z0):
    """Z_L by the literal definition Z + Σ_h ((Z W_Q^h)(Z W_K^h)ᵀ ⊙ M) Z W_V^h W_P^hᵀ, looping over heads."""
    M = tasks.token_mask(m.task, dtype=Z0.dtype)
    Z = m.embed(Z0)
    for l in range(m.L):
        if m.regime != "distributed":
            upd = sum(((Z @ m.W_Q[l, h]) @ (Z @ m.W_K[l, h]).transpose(1, 2) * M) @ Z @ m.W_V[l, h] @ m.W_P[l, h].T
                      for h in range(m.W_Q.shape[1]))
        else:
            Fm = m.F_mu
            wqk = m.W_Q[l, 0] @ m.W_K[l, 0].T
            ws, wo = m.W_V[l, 0] @ m.W_P[l, 0].T, m.W_V[l, 0] @ m.W_P[l, 1].T
            upd = 0
            for mu in range(m.machines):
                Zmu = Z[..., mu * Fm:(mu + 1) * Fm]
                O = ((Zmu @ wqk @ Zmu.transpose(1, 2)) * M) @ Zmu          # head μ: attention from block μ only
                upd = upd + torch.cat([O @ (ws if nu == mu else wo) for nu in range(m.machines)], -1)
        Z = Z + upd
    return Z


REGIMES = [("unconstrained", {}), ("unconstrained", {"heads": 3}), ("sketched", {"r": 2}),
           ("distributed", {"machines": 2}), ("distributed", {"machines": 3})]


@pytest.mark.parametrize("regime,kw", REGIMES)
def test_matches_literal_definition_and_gradients(regime, kw):
    task = SMALL if not (regime == "distributed" and kw["machines"] == 3) else TaskConfig(n=6, d=5, d_prime=3, s=3)
    m = make(regime, task, init_std=0.4, **kw)
    _, Z0 = prompt(task, 3)
    ZL = literal(m, Z0)
    ref = m.readout(ZL)
    out = m(Z0)
    assert out.shape == (3, task.d_prime, task.n_prime)
    assert torch.allclose(out, ref, rtol=1e-12, atol=1e-12 * ref.abs().max().item())
    acts = m.activations(Z0, raw=True)
    assert len(acts) == m.L + 1 and torch.allclose(acts[-1], ZL, rtol=1e-12, atol=1e-12 * ZL.abs().max().item())
    g_ref = torch.autograd.grad(ref.square().sum(), list(m.parameters()))
    g_out = torch.autograd.grad(out.square().sum(), list(m.parameters()))
    for a, b in zip(g_ref, g_out):
        assert torch.allclose(a, b, rtol=1e-11, atol=1e-11 * a.abs().max().item())


def test_attention_kernel_gradcheck():
    from eaglebook.models import _Attention
    Z = torch.randn(2, 8, 7, dtype=F64, requires_grad=True)
    wq = torch.randn(7, 14, dtype=F64, requires_grad=True)
    for q0 in (0, 5):
        assert torch.autograd.gradcheck(lambda z, w: _Attention.apply(z, w, 5, q0), (Z, wq))


@pytest.mark.parametrize("heads", [1, 8])
def test_unconstrained_diagonal_layer_is_the_update(heads):
    a1, a2, a3 = 0.7, -0.3, -0.9
    m = make("unconstrained", layers=1, heads=heads).set_diagonal([(a1, a2, a3)])
    X, Z0 = prompt(TASK, 5)
    A, B, C, D = tasks.split(Z0, TASK)
    Z1 = m.activations(Z0)[1]
    for got, want in zip(tasks.split(Z1, TASK), diagonal_update(A, B, C, D, a1, a2, a3)):
        assert torch.allclose(got, want, rtol=0, atol=1e-12)
    n, np_ = TASK.n, TASK.n_prime
    assert torch.allclose(m.qk(0), torch.diag(torch.tensor([a1] * n + [0.0] * np_, dtype=F64)))
    assert torch.allclose(m.vp(0), torch.diag(torch.tensor([a2] * n + [a3] * np_, dtype=F64)))


@pytest.mark.parametrize("sketch", ["indices", "matrix"])
def test_sketched_diagonal_layer_is_the_sketched_update(sketch):
    # W_QK = a1 S Sᵀ ⊕ 0, W_VP = a2 S Sᵀ ⊕ a3 I  ⇒  with P = S Sᵀ:
    # A' = A + a1a2 A P Aᵀ A P, B' = B + a1a2 B P Aᵀ A P, C' = C + a1a3 A P Aᵀ C, D' = D + a1a3 B P Aᵀ C.
    # For a column selection S this is Alg. 1 with Ã = A S: A P Aᵀ A P = Ã Ãᵀ Ã Sᵀ.
    a1, a2, a3 = -0.8, 0.4, 1.1
    rng = np.random.default_rng(3)
    n, r = TASK.n, 5
    if sketch == "indices":
        idx = rng.choice(n, r, replace=False)
        S = torch.zeros(n, r, dtype=F64)
        S[idx, torch.arange(r)] = 1
        arg = idx
    else:
        S = torch.as_tensor(rng.standard_normal((n, r)))
        arg = S.numpy()
    m = make("sketched", layers=1, r=r).set_diagonal([(a1, a2, a3)], sketches=[arg])
    _, Z0 = prompt(TASK, 5)
    A, B, C, D = tasks.split(Z0, TASK)
    Z1 = m.activations(Z0)[1]
    for got, want in zip(tasks.split(Z1, TASK), diagonal_update(A, B, C, D, a1, a2, a3, S=S)):
        assert torch.allclose(got, want, rtol=0, atol=1e-12 * max(1.0, want.abs().max().item()))
    if sketch == "indices":   # Algorithm 1's form
        At = A @ S
        assert torch.allclose(Z1[:, :TASK.d, :n], A + a1 * a2 * At @ At.transpose(1, 2) @ At @ S.T, atol=1e-12)


def test_distributed_diagonal_layer_per_machine():
    # Per machine ν (blocks A^ν, B^ν; shared C, D), self W_VP = diag(a2 I, a3 I), other = diag(0, b I):
    # A^ν' = A^ν + a1a2 A^ν A^νᵀ A^ν, B^ν' = B^ν + a1a2 B^ν A^νᵀ A^ν,
    # C^ν' = C + a1a3 A^ν A^νᵀ C + a1 b Σ_{μ≠ν} A^μ A^μᵀ C, D^ν' likewise with B^μ.
    a1, a2, a3, b = 0.9, -0.2, -0.6, -0.35
    Mm = 3
    m = make("distributed", layers=1, machines=Mm).set_diagonal([(a1, a2, a3)], other=[b])
    _, Z0 = prompt(TASK, 4)
    A, B, C, D = tasks.split(Z0, TASK)
    owner = tasks.feature_owner(TASK, Mm)
    blocks = [np.flatnonzero(owner == mu) for mu in range(Mm)]
    raw1 = m.activations(Z0, raw=True)[1]
    Fm, nm, d = m.F_mu, m.n_mu, TASK.d
    assert raw1.shape == (4, TASK.d + TASK.d_prime, TASK.n + Mm * TASK.n_prime)
    AAC = [A[..., c] @ A[..., c].transpose(1, 2) @ C for c in blocks]
    BAC = [B[..., c] @ A[..., c].transpose(1, 2) @ C for c in blocks]
    for nu, c in enumerate(blocks):
        blk = raw1[..., nu * Fm:(nu + 1) * Fm]
        Anu, Bnu = A[..., c], B[..., c]
        assert torch.allclose(blk[:, :d, :nm], Anu + a1 * a2 * Anu @ Anu.transpose(1, 2) @ Anu, atol=1e-12)
        assert torch.allclose(blk[:, d:, :nm], Bnu + a1 * a2 * Bnu @ Anu.transpose(1, 2) @ Anu, atol=1e-12)
        Cw = C + a1 * a3 * AAC[nu] + a1 * b * sum(AAC[mu] for mu in range(Mm) if mu != nu)
        Dw = D + a1 * a3 * BAC[nu] + a1 * b * sum(BAC[mu] for mu in range(Mm) if mu != nu)
        assert torch.allclose(blk[:, :d, nm:], Cw, atol=1e-12)
        assert torch.allclose(blk[:, d:, nm:], Dw, atol=1e-12)
    # With b = a3 = γ/M every copy is Algorithm 1's average; the common layout shows it.
    g = -0.9
    m2 = make("distributed", layers=1, machines=Mm).set_diagonal([(a1, a2, g / Mm)], other=[g / Mm])
    A1, B1, C1, D1 = tasks.split(m2.activations(Z0)[1], TASK)
    assert torch.allclose(C1, C + a1 * g * sum(AAC) / Mm, atol=1e-12)
    assert torch.allclose(D1, D + a1 * g * sum(BAC) / Mm, atol=1e-12)
    assert torch.allclose(m2(Z0), -D1, atol=0)


@pytest.mark.parametrize("regime", ["unconstrained", "sketched", "distributed"])
def test_readout_sign_minus_D_converges_to_nystrom(regime):
    # §2.4: with a1a3 < 0 the D block accumulates a1a3 Σ B_ℓ A_ℓᵀ C_ℓ → −B A^† C, so the prediction is −D_L.
    # The distributed iteration converges linearly at a rate set by the diversity index α < 1 of the
    # machines' column blocks (Theorem 2), the others quadratically: it gets more layers, same tolerance.
    L, eta, gamma = (150 if regime == "distributed" else 30), 1 / 3, 1.0
    Ab = tasks.make_problem(18, 18, rank=18, kappa=2.0, rng=np.random.default_rng(0))
    X = torch.as_tensor(tasks.assemble(*Ab))[None]
    Z0 = tasks.prompt(X, TASK)
    A, B, C, D = tasks.split(Z0, TASK)
    kw, M = {}, 1
    if regime == "sketched":
        kw = {"r": 18}            # the full sketch: r = n, S = I (a fixed sketch with r < n cannot converge)
    if regime == "distributed":
        M = 3
        kw = {"machines": M}
    alphas, blocks = [], [np.arange(18)] if regime != "distributed" else \
        [np.flatnonzero(tasks.feature_owner(TASK, M) == mu) for mu in range(M)]
    As, Cc = [A[..., c] for c in blocks], C
    for _ in range(L):              # per-layer ρ_ℓ = 1/max_μ ‖A^μ_ℓ‖² from the float64 simulation
        rho = 1 / max(torch.linalg.matrix_norm(a, 2).max().item() ** 2 for a in As)
        a2, a3 = -eta * rho, -gamma * rho / M
        alphas.append((1.0, a2, a3))
        Cc = Cc + a3 * sum(a @ a.transpose(1, 2) @ Cc for a in As)
        As = [a + a2 * a @ a.transpose(1, 2) @ a for a in As]
    m = make(regime, layers=L, **kw).set_diagonal(alphas, **({"sketches": [np.arange(18)] * L} if regime == "sketched" else {}))
    target = tasks.nystrom(A, B, C)
    pred = m(Z0)
    assert all(a[0] * a[2] < 0 for a in alphas)
    rel = ((pred - target).norm() / target.norm()).item()
    assert rel < 1e-6                                                   # −D_L → +B A^† C
    assert ((-pred - target).norm() / target.norm()).item() > 1.5      # +D_L is the wrong sign


@pytest.mark.parametrize("regime,kw", REGIMES)
def test_mask_bottom_rows_never_reach_top_rows(regime, kw):
    task = SMALL if kw.get("machines", 2) == 2 else TaskConfig(n=6, d=5, d_prime=3, s=3)
    m = make(regime, task, init_std=0.5, **kw)
    _, Z0 = prompt(task, 3)
    Z0b = Z0.clone()
    Z0b[:, task.d:] += torch.randn(Z0b[:, task.d:].shape, dtype=F64)
    for raw in (False, True):
        for a, b in zip(m.activations(Z0, raw=raw), m.activations(Z0b, raw=raw)):
            assert torch.equal(a[:, :task.d], b[:, :task.d])
    assert not torch.equal(m(Z0), m(Z0b))


def test_regime_names():
    with pytest.raises(ValueError, match="allowed values"):
        ModelConfig(regime="bogus")
    assert make("centralized").regime == "unconstrained"
    assert make("compute-limited").regime == "sketched"


def test_parameter_counts_and_shapes():
    F = TASK.n + TASK.n_prime
    assert make("unconstrained").n_parameters() == 4 * 4 * F * F
    m8 = make("unconstrained", heads=8)
    assert m8.n_parameters() == 8 * 4 * 4 * F * F and m8.W_Q.shape == (4, 8, F, F)
    assert make("sketched").n_parameters() == 4 * (2 * F * 5 + 2 * F * 7)
    md = make("distributed")                                    # F_μ = 6 + 2 = 8
    assert md.n_parameters() == 4 * 5 * 8 * 8
    assert md.features == 18 + 3 * 2
    assert md.heads_qk(0).shape == (3, 24, 24) and md.heads_vp(1).shape == (3, 24, 24)
    assert md.vp(0).shape == (2, 8, 8)


def test_distributed_needs_equal_blocks():
    with pytest.raises(ValueError, match="machines must divide n"):
        make("distributed", machines=4)


def test_init_is_reproducible_and_scaled():
    a, b = make("unconstrained", seed=7, dtype=torch.float32), make("unconstrained", seed=7, dtype=torch.float32)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert abs(a.W_Q.std().item() - 0.02) < 0.002
    _, Z0 = prompt(TASK, 2, dtype=torch.float32)
    assert a(Z0).dtype == torch.float32


def test_embed_unembed_roundtrip():
    m = make("distributed")
    X, _ = prompt(TASK, 2)
    assert torch.allclose(m.unembed(m.embed(X)), X, rtol=1e-15, atol=0)
    assert torch.allclose(m.readout(m.embed(X)), -tasks.split(X, TASK).D, rtol=1e-15, atol=0)
    with pytest.raises(ValueError, match="expected"):
        m(X[:, :, :-1])
def test_vp_width_sets_sketched_value_projection_columns():
    cfg = config.ModelConfig(regime="sketched", r=5, vp_width=20)
    m = models.LinearTransformer(cfg, config.TaskConfig(), generator=torch.Generator().manual_seed(0))
    assert m.W_V.shape[-1] == 20 and m.W_P.shape[-1] == 20 and m.W_Q.shape[-1] == 5
    default = models.LinearTransformer(config.ModelConfig(regime="sketched", r=5), config.TaskConfig(),
                                       generator=torch.Generator().manual_seed(0))
    assert default.W_V.shape[-1] == 5 + 2
@pytest.mark.parametrize("bad", [dict(vp_width=0), dict(init_std=0.0), dict(init_std=-1.0), dict(init_std="0.02")])
def test_model_config_rejects_bad_ablation_values(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        config.ModelConfig(regime="sketched", **bad)

"""Chapter 10's package (eaglebook.icl): the task, the three models, the ridge baselines, the readings and
the cached training."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from eaglebook import cache, config
from eaglebook import training as shared
from eaglebook.icl import baselines as rr, models, readings, training
from eaglebook.icl import task as icl

F64 = torch.float64
torch.set_num_threads(1)   # tiny matrices: one thread (two spin on a shared core)


def gen(s=0):
    return torch.Generator().manual_seed(s)


def batch(n=64, s=0, **kw):
    return icl.sample(icl.ICLTask(**({"sigma_max": 1.0} | kw)), n, gen(s), dtype=F64)


def model(kind, L, s=1, std=0.05):
    return models.LinearTransformer(icl.ICLModel(kind, L, init_std=std), 10, generator=gen(s), dtype=F64)


# ---- the task -------------------------------------------------------------------------------------------

def test_prompt_is_the_block_completion_of_least_squares():
    b = batch()
    Z = icl.prompt(b)
    assert Z.shape == (64, 11, 21)
    A, B, C, D = icl.blocks(Z)
    assert torch.equal(A, b.x.mT) and torch.equal(B[:, 0], b.y) and torch.equal(C[..., 0], b.xq) and not D.any()
    w = torch.linalg.lstsq(b.x, b.y[..., None]).solution[..., 0]
    ny = (B @ torch.linalg.pinv(A) @ C)[:, 0, 0]
    assert torch.allclose(ny, (b.xq * w).sum(-1), rtol=1e-9, atol=1e-9)
    assert torch.allclose(b.yq, (b.xq * b.w).sum(-1))        # the query label is noiseless


def test_noise_laws():
    s = icl.sample(icl.ICLTask(noise="categorical", levels=(1, 3)), 4000, gen(), dtype=F64).sigma
    assert set(s.tolist()) == {1.0, 3.0}
    u = icl.sample(icl.ICLTask(sigma_max=5.0), 4000, gen(), dtype=F64).sigma
    assert 0 <= float(u.min()) and float(u.max()) <= 5 and abs(float(u.mean()) - 2.5) < 0.15
    b = icl.sample(icl.ICLTask(sigma_max=0.0), 8, gen(), dtype=F64)
    assert torch.allclose(b.y, torch.einsum("bnd,bd->bn", b.x, b.w))
    fixed = icl.sample(icl.ICLTask(sigma_max=5.0), 8, gen(), dtype=F64, sigma=2.0)
    assert torch.equal(fixed.sigma, torch.full((8,), 2.0, dtype=F64))


def test_bad_configs_are_refused_by_name():
    with pytest.raises(ValueError, match="levels"):
        icl.ICLTask(noise="categorical")
    with pytest.raises(ValueError, match="levels"):
        icl.ICLTask(levels=(1.0,))
    with pytest.raises(ValueError, match="kind"):
        icl.ICLModel("attention", 2)
    with pytest.raises(ValueError, match="sigma_max"):
        icl.ICLTask(sigma_max=-1.0)
    with pytest.raises(ValueError, match="batch"):
        icl.sample(icl.ICLTask(), 0, gen())


# ---- the models ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", icl.KINDS)
def test_the_gram_recursion_is_the_token_update(kind):
    m, Z = model(kind, 3, std=0.03), icl.prompt(batch(16))
    with torch.no_grad():
        fast = m(Z)
        slow, its = m(Z, iterates=True)
    assert len(its) == 4
    assert torch.allclose(fast, slow, rtol=1e-9, atol=1e-9 * float(slow.abs().max()))
    assert torch.equal(slow, -its[-1][:, 10, 20])


def test_diag_layer_is_the_omega_update_and_gdpp_drops_two_terms():
    m, b = model("diag", 1), batch(8)
    Z = icl.prompt(b)
    wxx, wxy, wyx, wyy = models.omegas(m)[0]
    with torch.no_grad():
        Z1 = m.layer(Z, 0)
    X, y = Z[:, :10, :20], Z[:, 10, :20]
    Sig, alpha, lam = X @ X.mT, (X @ y[..., None])[..., 0], (y ** 2).sum(-1)
    x_all, y_all = Z[:, :10], Z[:, 10]
    x1 = x_all + wxx * Sig @ x_all + wxy * alpha[..., None] * y_all[:, None]
    y1 = y_all + wyx * (alpha[:, None, :] @ x_all)[:, 0] + wyy * lam[:, None] * y_all
    assert torch.allclose(Z1[:, :10], x1) and torch.allclose(Z1[:, 10], y1)
    om = models.omegas(model("gdpp", 2))
    assert not om[:, 1].any() and not om[:, 3].any() and om[:, 0].all()
    assert float(models.offdiag_share(m).max()) < 1e-12 and float(models.offdiag_share(model("full", 1)).min()) > 0.5


def test_one_layer_gd_has_the_textbook_loss():
    """½ E(ŷ − y)² of the best single gradient step, ½ D (1 − N/(N + D + 1)) (Wishart moments): the loss
    convention under which their one-layer GD++ scores 1.768."""
    m = models.LinearTransformer(icl.ICLModel("gdpp", 1), 10, dtype=F64)
    eta = 1.0 / (20 + 10 + 1)                       # argmin of 1 − 2ηN + η² N (N + D + 1)
    with torch.no_grad():
        m.theta.copy_(torch.tensor([[1.0, -eta, 1.0, 0.0]], dtype=F64))   # ω_yx = −η, ω_xx = 0
    b = icl.sample(icl.ICLTask(), 50_000, gen(3), dtype=F64)
    with torch.no_grad():
        got = rr.loss(m(icl.prompt(b)), b.yq)
    want = 0.5 * 10 * (1 - 20 / 31)
    assert got == pytest.approx(want, rel=0.02)


# ---- ridge baselines -------------------------------------------------------------------------------------

def test_ridge_forms_agree_and_adarr_estimates_the_noise():
    b = batch(256, sigma_max=3.0)
    r = rr.Ridge(b)
    lam = b.sigma ** 2
    w = torch.linalg.solve(b.x.mT @ b.x + lam[:, None, None] * torch.eye(10, dtype=F64), b.x.mT @ b.y[..., None])[..., 0]
    assert torch.allclose(r.predict(lam), (b.xq * w).sum(-1), rtol=1e-9, atol=1e-9)
    wo = torch.linalg.lstsq(b.x, b.y[..., None]).solution[..., 0]
    rss = ((b.y - (b.x @ wo[..., None])[..., 0]) ** 2).sum(-1)
    assert torch.allclose(r.sigma2_hat, rss / 10)
    big = rr.Ridge(batch(20_000, s=4, noise="categorical", levels=(2.0,), sigma_max=0.0))
    assert float(big.sigma2_hat.mean()) == pytest.approx(4.0, rel=0.03)          # unbiased
    with pytest.raises(ValueError, match="N > D"):
        rr.Ridge(icl.sample(icl.ICLTask(N=8, D=10), 4, gen(), dtype=F64))


def test_const_rr_finds_the_true_variance_for_one_noise_level_and_the_oracle_wins():
    r = rr.Ridge(batch(20_000, s=5, noise="categorical", levels=(2.0,), sigma_max=0.0))
    assert rr.tune_const(r) == pytest.approx(4.0, rel=0.25)      # Bayes: λ = σ²
    mixed = rr.Ridge(batch(5000, s=6, sigma_max=5.0))
    tuned = rr.tune_tuned(mixed)
    p = rr.predictions(mixed, rr.tune_const(mixed), tuned)
    losses = {k: rr.loss(v, mixed.yq) for k, v in p.items()}
    assert losses["oracle"] == min(losses.values()) and losses["TunedRR"] <= losses["AdaRR"]
    assert tuned.multiplier > 0 and tuned.cap > 0


# ---- readings --------------------------------------------------------------------------------------------

def test_the_two_readings_are_one_update_with_one_rho_per_layer():
    m, Z = model("gdpp", 3), icl.prompt(batch(32))
    with torch.no_grad():
        _, its = m(Z, iterates=True)
    rd = readings.read_eagle(m, Z)
    g = readings.gdpp(rd.omegas, Z)
    assert readings.fidelity(its, g).max() < 1e-25                       # GD++'s own reading is exact
    eb = readings.eagle_transposed(Z, rd.eta, rd.gamma, rho=1 / rd.R)
    assert max(float((a - b).abs().max()) for a, b in zip(g, eb)) < 1e-10 * float(Z.abs().max())
    ei = readings.eagle_transposed(Z, rd.eta, rd.gamma)                  # per-prompt ρ: another algorithm
    assert readings.fidelity(its, ei)[-1] > 1e-8
    with pytest.raises(ValueError, match="differ in length"):
        readings.fidelity(its, ei[:-1])
    with pytest.raises(ValueError, match="one value per layer"):
        readings.eagle_transposed(Z, rd.eta, rd.gamma, rho=[1.0])
    with pytest.raises(ValueError, match="float64"):
        readings.read_eagle(models.LinearTransformer(icl.ICLModel("gdpp", 1), 10), Z)


def test_eagle_reading_converges_like_the_solver():
    """With Theorem 1's constants (η = 1/3, γ = 1) the transposed EAGLE iteration drives −D to the least-squares
    prediction, as Algorithm 1 does."""
    b = batch(16, sigma_max=0.0)
    Z = icl.prompt(b)
    its = readings.eagle_transposed(Z, [1 / 3] * 40, [1.0] * 40)
    assert torch.allclose(-its[-1][:, 10, 20], b.yq, rtol=1e-6, atol=1e-6)


# ---- training and cache ----------------------------------------------------------------------------------

TINY = icl.ICLTrain(task=icl.ICLTask(sigma_max=1.0), model=icl.ICLModel("gdpp", 1), steps=40, batch=64, lr=3e-2,
                    warmup=5, eval_size=256, eval_every=10)


def test_training_is_deterministic_and_learns():
    a, b = training.train(TINY, progress=False), training.train(TINY, progress=False)
    assert torch.equal(a.theta, b.theta) and np.array_equal(a.eval_loss, b.eval_loss)
    assert a.eval_loss[-1] < 0.7 * a.eval_loss[0] and a.steps[-1] == TINY.steps == a.best_step
    assert a.steps.tolist() == [0, 10, 20, 30, 40]        # at the start, every eval_every steps, at the end
    assert len(set(training.seeds(0) + training.seeds(1))) == 6


def test_the_config_extends_the_shared_one_and_keeps_its_cache_keys():
    """ICLTrain is a TrainConfig (the shared recipe's fields, checked there) with fields of its own; the keys of
    the models trained before it extended TrainConfig (the shipped ones among them) stay as they were."""
    assert isinstance(TINY, config.TrainConfig) and TINY.skip_nonfinite and TINY.optimizer == "adam"
    assert cache.config_hash(TINY) == "fc6d7786442618af"
    assert cache.config_hash(replace(TINY, keep_best=True)) == "8cb0325c98f943dc"
    assert "skip_nonfinite" not in cache.canonical_json(TINY) and "lr_final" in cache.canonical_json(TINY)
    for bad, name in ((dict(lr=0.0), "lr"), (dict(clip=-1.0), "clip"), (dict(lr_final=2.0), "lr_final"),
                      (dict(warmup=-1), "warmup"), (dict(eval_every=0), "eval_every"), (dict(optimizer="sgd"), "optimizer"),
                      (dict(task=config.TaskConfig()), "task"), (dict(model=config.ModelConfig()), "model")):
        with pytest.raises(ValueError, match=name):
            replace(TINY, **bad)
    with pytest.raises(TypeError, match="matrix task"):
        shared.train(TINY, progress=False)


def test_a_nonfinite_step_is_skipped_by_the_shared_step():
    """A learning rate that overflows: the steps whose loss is not finite leave the weights as they were
    (:func:`eaglebook.training.clipped_step`), and their loss is recorded as it was."""
    r = training.train(replace(TINY, model=icl.ICLModel("full", 2), lr=50.0, steps=20, eval_every=5), progress=False)
    assert not np.isfinite(r.train_loss).all() and np.isfinite(r.train_loss[0])
    assert torch.isfinite(r.theta).all()


def test_keep_best_returns_the_best_evaluated_weights_and_keeps_other_hashes():
    cfg = replace(TINY, lr=3.0, keep_best=True)          # a learning rate that spikes
    r = training.train(cfg, progress=False)
    i = int(np.argmin(r.eval_loss))
    assert r.best_step == r.steps[i]
    with torch.no_grad():
        ev = icl.sample(cfg.task, cfg.eval_size, gen(training.seeds(cfg.seed)[2]), dtype=F64)
        assert rr.loss(r.model()(icl.prompt(ev)), ev.yq) == pytest.approx(r.eval_loss[i], rel=1e-9)
    assert cache.config_hash(replace(TINY, keep_best=False)) == cache.config_hash(TINY) != cache.config_hash(cfg)


def test_trained_models_are_cached_by_the_whole_config(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "c"))
    monkeypatch.setenv(cache.SHIPPED_ENV, "0")
    r1 = training.trained(TINY, progress=False)
    d = cache.entry_dir(training.KIND, TINY)
    assert cache.is_valid(d, TINY)
    r2 = training.trained(TINY, progress=False)
    assert torch.equal(r1.theta, r2.theta) and r2.seconds == r1.seconds
    other = replace(TINY, task=icl.ICLTask(sigma_max=3.0))
    assert cache.config_hash(other) != cache.config_hash(TINY)


def test_the_plan_covers_the_chapter():
    for prof in ("ci", "paper"):
        p = training.plan(prof)
        dep = training.DEPTHS[prof]
        assert all(("0", "gdpp", L) in p for L in dep["noiseless"])
        assert all(("5", k, L) in p for k in ("gdpp", "diag") for L in dep["noisy"])
        assert all(("5", "full", L) in p for L in dep["full_noisy"])
        assert all(cfg.keep_best == (k[1] != "gdpp") for k, cfg in p.items())
        assert all(cfg.task == training.noise_tasks()[k[0]] and cfg.model.layers == k[2] for k, cfg in p.items())
    assert training.plan("ci", seed=3)[("0", "gdpp", 1)].seed == 3
    with pytest.raises(ValueError, match="profile"):
        training.recipe("fast")

"""Tests of eaglebook.ablations: the ablation configs, the readings of Fig. 4's relative difference, the
heavy-tail analysis and its remedy, and the noise ablation's config."""

import numpy as np
import pytest
import torch

from eaglebook import ablations, config, training
from eaglebook.config import ModelConfig, TaskConfig, TrainConfig
from eaglebook.models import LinearTransformer

torch.set_num_threads(1)
TINY = TaskConfig(n=6, d=6, s=3)


def sketched_cfg(**kw):
    return TrainConfig(task=TINY, model=ModelConfig(regime="sketched", r=2), steps=30, batch=32, eval_every=15,
                       eval_size=64, **kw)


def test_ablation_configs_change_one_thing():
    base = config.get("paper").training("sketched", seed=3)
    cfgs = {a.key: a.config(base) for a in ablations.SKETCHED}
    assert cfgs["base"] == base
    assert cfgs["r4"].model.r == 4 and cfgs["r4"].steps == base.steps
    assert cfgs["vp_full"].model.vp_width == base.task.n + base.task.n_prime
    assert cfgs["long"].steps == 2 * base.steps and cfgs["long"].model == base.model
    assert cfgs["init_small"].model.init_std == 0.002 and cfgs["init_small"].seed == 3
    assert len({c for c in cfgs.values()}) == len(cfgs)          # every ablation is its own cache entry
    with pytest.raises(ValueError, match="base"):
        ablations.SKETCHED[1].config(config.get("paper").training("unconstrained"))
    with pytest.raises(ValueError, match="key"):
        ablations.ablation("r5")
    assert ablations.ablation("r8").knobs == {"r": 8} and ablations.ablation("noise").knobs == {"noise_var": 0.01}
    assert {a.regime for a in ablations.SKETCHED} == {"sketched"} and ablations.NOISE.regime is None   # noise: any regime


def test_an_ablation_is_a_reading_of_the_paper_exactly_when_it_keeps_every_stated_value():
    # the paper states r, the W_V/W_P width and the number of steps; it gives no initialisation
    base = config.get("paper").training("sketched", seed=0)
    for a in ablations.SKETCHED:
        c = a.config(base)
        stated_changed = (c.model.r, c.model.vp_width, c.steps) != (base.model.r, base.model.vp_width, base.steps)
        assert bool(a.departs) == stated_changed, a.key


def test_with_noise_sets_the_task_noise_and_validates():
    c = ablations.with_noise(config.get("ci").training("unconstrained"), 0.01)
    assert c.task.noise_var == 0.01 and c.model.regime == "unconstrained"
    with pytest.raises(ValueError, match="noise_var"):
        ablations.with_noise(c, -1.0)


def _sketched_model(seed=0, **kw):
    return LinearTransformer(ModelConfig(regime="sketched", r=2, **kw), TINY, generator=torch.Generator().manual_seed(seed),
                             dtype=torch.float64)


def test_rel_diff_is_zero_when_w_vp_is_a_multiple_of_w_qk():
    m = _sketched_model()
    with torch.no_grad():
        m.set_diagonal(np.tile([0.7, -0.3, -0.5], (m.L, 1)))
    defs = ablations.rel_diff_definitions(m)
    assert set(defs) == set(ablations.REL_DIFF_DEFINITIONS)
    for k, v in defs.items():
        assert v.shape == (m.L,)
        if k != "whole":   # the whole products differ in the n' block (W_QK 0, W_VP a₃ I)
            assert np.all(v < 1e-12), (k, v)
    assert np.all(defs["whole"] > 0.1)


def test_rel_diff_readings_on_random_weights():
    m = _sketched_model(seed=1, vp_width=8)
    defs = ablations.rel_diff_definitions(m)
    from eaglebook import extraction
    prod, n = extraction.products(m), TINY.n
    for l in range(m.L):
        Q, V = prod.wqk[l, 0, :n, :n], prod.wvp[l, 0, :n, :n]
        cos = abs(np.sum(Q * V)) / (np.linalg.norm(Q) * np.linalg.norm(V))
        assert defs["scale"][l] == pytest.approx(np.sqrt(1 - cos ** 2), rel=1e-12)
        fro = min(np.linalg.norm(Q / np.linalg.norm(Q) - s * V / np.linalg.norm(V)) for s in (1, -1))
        assert defs["fro"][l] == pytest.approx(fro, rel=1e-12)
    assert np.all((defs["projector"] >= 0) & (defs["projector"] <= np.sqrt(2) + 1e-12))
    assert np.all(defs["scale"] <= defs["fro"] + 1e-12)    # the best scale is never worse than the unit-norm one


def test_heavy_tail_and_its_remedy():
    run = training.train(sketched_cfg(), progress=False)
    Xc, Xo = ablations.tail_prompts(run.cfg, 300)
    Xc2, _ = ablations.tail_prompts(run.cfg, 300)
    assert torch.equal(Xc, Xc2)                               # its own deterministic stream
    assert not torch.equal(Xc[:64].float(), training.test_set(run.cfg)[0])
    Xo = Xo.clone()
    Xo[:5] *= 30.0                                            # five prompts far outside the training range
    t = ablations.heavy_tail(run, Xc, Xo)
    assert t.mse.shape == t.norm_ratio.shape == t.kappa.shape == (300,)
    assert np.all(t.norm_ratio[:5] > 1)
    np.testing.assert_allclose(t.step, max(t.eta0, t.gamma0) * t.norm_ratio)
    inside = t.norm_ratio <= 1
    assert np.array_equal(t.mse_rescaled[inside], t.mse[inside])     # untouched prompts stay bit for bit
    assert np.array_equal(t.worse, ~(t.mse <= t.zero))
    # the remedy on a prompt outside the range is the model's prediction on the scaled-down prompt, scaled back
    model = run.model(dtype=torch.float64)
    from eaglebook import tasks
    i = 0
    s = 1 / np.sqrt(t.norm_ratio[i])
    with torch.no_grad():
        pred = model(tasks.prompt(Xo[i:i + 1] * s, TINY)) / s
    D = tasks.split(Xc[i:i + 1], TINY).D
    assert t.mse_rescaled[i] == pytest.approx(float((pred - D).square().mean()), rel=1e-10)
    summ = t.summary()
    assert 0 <= summ["worse"] <= 1 and summ["over"] == pytest.approx(np.mean(t.step > 2))
    assert t.peak_step.shape == (300,) and np.all(t.peak_step >= 0)
    assert np.array_equal(t.diverged, ~(t.mse <= ablations.DIVERGED * t.zero))
    assert 0 <= summ["diverged"] <= summ["worse"]


def test_tail_summary_precision_and_recall():
    n = 10
    worse = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0], bool)
    step = np.array([3, 3, 1, 3, 1, 1, 1, 1, 1, 1], float)
    z = np.ones(n)
    t = ablations.Tail(mse=np.where(worse, 2.0, 0.5), zero=z, norm_ratio=step, kappa=z, step=step,
                       eta0=1.0, gamma0=1.0, mse_rescaled=np.full(n, 0.5))
    assert np.array_equal(t.worse, worse)
    s = t.summary()
    assert s["precision"] == pytest.approx(2 / 3) and s["recall"] == pytest.approx(2 / 3)
    assert s["over"] == pytest.approx(0.3) and s["worse"] == pytest.approx(0.3) and s["worse_rescaled"] == 0
    assert s["mean"] == pytest.approx(np.mean(np.where(worse, 2.0, 0.5)))


def test_sketch_and_structure_stats_on_tiny_runs():
    run = training.train(sketched_cfg(), progress=False)
    st = ablations.sketch_stats(run)
    assert st.rel_diff == pytest.approx(st.rel_diff_by_definition["ours"])
    assert 0 <= st.overlap <= 1 and st.reduction > 0 and 0 <= st.worse <= 1
    u = training.train(TrainConfig(task=TINY, model=ModelConfig(), steps=30, batch=32, eval_every=15, eval_size=64),
                       progress=False)
    s = ablations.structure_stats(u)
    assert set(s) >= {"offdiag_qk", "offdiag_vp", "eta", "gamma", "fidelity", "reduction"}
    assert s["ab"].shape == (u.cfg.model.layers,)


def test_diverged_summary_counts_and_error_share():
    n = 5
    mse = np.array([100.0, 0.5, 0.5, 0.5, 2.0])
    z = np.ones(n)
    t = ablations.Tail(mse=mse, zero=z, norm_ratio=z, kappa=z, step=z, eta0=1.0, gamma0=1.0,
                       mse_rescaled=mse, peak_step=np.array([3.0, 3.0, 1, 1, 1]))
    s = t.summary()
    assert s["diverged"] == pytest.approx(0.2) and s["diverged_error_share"] == pytest.approx(100 / 103.5)
    assert s["peak_over_diverged"] == 1.0 and s["peak_over_rest"] == pytest.approx(0.25)

"""Tests of eaglebook.training: determinism, spike handling, evaluation, baselines, caching."""

import contextlib
import sys
import types

import numpy as np
import pytest
import torch

import eaglebook
from eaglebook import tasks, training
from eaglebook.config import ModelConfig, TaskConfig, TrainConfig
from eaglebook.training import Run, evaluate, train, trained

torch.set_num_threads(1)
TINY = TaskConfig(n=6, d=6, s=3)


def cfg(**kw):
    base = dict(task=TINY, model=ModelConfig(regime="unconstrained"), steps=20, batch=16, eval_every=10, eval_size=64)
    base.update(kw)
    return TrainConfig(**base)


@pytest.mark.parametrize("regime", ["unconstrained", "sketched", "distributed"])
def test_deterministic_and_shapes(regime):
    c = cfg(model=ModelConfig(regime=regime, machines=2, r=2))
    a, b = train(c, progress=False), train(c, progress=False)
    for k in a.history:
        assert np.array_equal(a.history[k], b.history[k], equal_nan=True), k
    assert all(torch.equal(a.state_dict[k], b.state_dict[k]) for k in a.state_dict)
    h = a.history
    assert h["train_loss"].dtype == np.float32 and h["train_loss"].shape == (20,)
    assert list(h["eval_step"]) == [10, 20] and h["test_mse_median"].shape == (2,)
    assert all(v.device.type == "cpu" for v in a.state_dict.values())
    c2 = cfg(model=ModelConfig(regime=regime, machines=2, r=2), seed=1)
    assert not np.array_equal(train(c2, progress=False).history["train_loss"], h["train_loss"])


def test_nonfinite_steps_are_skipped_and_recorded(monkeypatch):
    real = tasks.sample_X
    calls = {"n": 0}

    def poisoned(task, batch, **kw):
        X, Xo = real(task, batch, **kw)
        if batch != 16:                             # the test set (eval_size 64)
            return X, Xo
        calls["n"] += 1
        if calls["n"] in (4, 7):                    # training steps 3 and 6
            Xo = Xo.clone()
            Xo[0, 0, 0] = float("inf")
        return X, Xo

    c = cfg(steps=10, eval_every=0)
    monkeypatch.setattr(training.tasks, "sample_X", poisoned)
    r = train(c, progress=False)
    assert r.n_skipped == 2 and list(r.history["skipped"]) == [3, 6]
    assert np.isnan(r.history["train_loss"][[3, 6]]).all()
    assert np.isfinite(np.delete(r.history["train_loss"], [3, 6])).all()
    assert all(torch.isfinite(v).all() for v in r.state_dict.values())


def test_evaluate_and_baselines():
    c = cfg(dtype="float64", eval_size=256)
    X, Xo = training.test_set(c)
    m = eaglebook.models.LinearTransformer(c.model, TINY, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
    r = evaluate(m, X, Xo, TINY)                   # the zero model predicts 0
    b = training.baselines(X, Xo, TINY)
    assert r["per_sample"].shape == (256,)
    assert r["mean"] == pytest.approx(b["zero_mse"], rel=1e-12)
    assert r["frac_worse_than_zero"] == 0.0
    assert b["nystrom_mse_median"] < 1e-20 and b["nystrom_mse"] < 1e-12      # exact on noiseless float64 data
    Xn, Xon = training.test_set(cfg(dtype="float64", eval_size=256, task=TaskConfig(n=6, d=6, s=3, noise_var=1e-2)))
    assert training.baselines(Xn, Xon, TINY)["nystrom_mse"] > 1e-4             # nonzero with noise


def test_learns_something():
    c = TrainConfig(task=TINY, steps=300, batch=64, eval_every=0, eval_size=512, model=ModelConfig(init_std=0.1))
    r = train(c, progress=False)
    assert r.history["test_mse_median"][-1] < 0.3 * r.baselines["zero_mse"]


def test_run_payload_roundtrip_and_model(tmp_path):
    r = train(cfg(), progress=False)
    path = tmp_path / "run.pt"
    torch.save(r.to_payload(), path)
    r2 = Run.from_payload(torch.load(path, weights_only=True))
    assert r2.cfg == r.cfg and r2.n_skipped == r.n_skipped
    X, Xo = training.test_set(r.cfg)
    Z0 = tasks.prompt(Xo, TINY)
    assert torch.equal(r.model()(Z0), r2.model()(Z0))
    assert r2.model(dtype=torch.float64)(Z0.double()).dtype == torch.float64
    assert evaluate(r2.model(), X, Xo, TINY)["median"] == pytest.approx(r.final["test_mse_median"], rel=1e-6)


def test_trained_goes_through_cache(monkeypatch, tmp_path):
    store = {}

    def cached(kind, key, compute, *, force=False, seconds_of=None):
        if force or (kind, key) not in store:
            store[(kind, key)] = compute()
        return store[(kind, key)]

    fake = types.ModuleType("eaglebook.cache")
    fake.cached = cached
    fake.checkpoint_path = lambda kind, key: tmp_path / kind / ".ckpt.pt"
    fake.adopt_checkpoint = fake.checkpoint_path
    monkeypatch.setitem(sys.modules, "eaglebook.cache", fake)
    monkeypatch.setattr(eaglebook, "cache", fake, raising=False)
    c = cfg(steps=5)
    a = trained(c, progress=False)
    b = trained(c, progress=False)
    assert isinstance(a, Run) and len(store) == 1
    assert np.array_equal(a.history["train_loss"], b.history["train_loss"])


def test_device_fallback_and_threads():
    if not torch.cuda.is_available():
        with pytest.warns(RuntimeWarning, match="CUDA"):
            assert training.resolve_device("cuda").type == "cpu"
    with pytest.raises(ValueError):
        training.resolve_device("mps")
    before = torch.get_num_threads()
    train(cfg(steps=2), progress=False, threads=1)
    assert torch.get_num_threads() == before


def test_bench_smoke():
    from eaglebook import bench
    before = torch.get_num_threads()
    res = bench.bench_train(steps=1, batch=8, repeats=1, threads=before + 1, verbose=False)
    assert set(res) == {c for c, _ in bench.CASES}
    assert all(r["step_ms"] > 0 and r["floor_ms"] > 0 and r["n_products"] > 0 for r in res.values())
    assert torch.get_num_threads() == before                      # the benchmark restores the thread count


def test_trained_all_trains_missing_configs_in_parallel_and_loads_them(tmp_path, monkeypatch):
    from dataclasses import replace
    from eaglebook import cache, config, training
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    base = replace(config.get("ci").training("unconstrained", seed=0), steps=5, batch=16, eval_every=5, eval_size=32)
    cfgs = [replace(base, seed=s) for s in (0, 1)]
    runs = training.trained_all(cfgs + cfgs[:1], workers=2, progress=False)
    assert [r.cfg.seed for r in runs] == [0, 1, 0]
    assert all(cache.is_valid(cache.entry_dir("train", c)) for c in cfgs)
    assert np.array_equal(runs[0].history["train_loss"], training.train(cfgs[0], progress=False).history["train_loss"])


# ---- resumable checkpoints ------------------------------------------------------------------------

def _compare_runs(a: Run, b: Run) -> None:
    assert a.state_dict.keys() == b.state_dict.keys()
    assert all(torch.equal(a.state_dict[k], b.state_dict[k]) for k in a.state_dict)
    assert a.history.keys() == b.history.keys()
    for k in a.history:
        assert a.history[k].dtype == b.history[k].dtype, k
        assert np.array_equal(a.history[k], b.history[k], equal_nan=True), k
    assert a.n_skipped == b.n_skipped and a.baselines == b.baselines


def test_checkpoint_interval_argument_and_environment(monkeypatch):
    monkeypatch.delenv(training.CHECKPOINT_ENV, raising=False)
    assert training.checkpoint_interval() == training.DEFAULT_CHECKPOINT_SECONDS
    monkeypatch.setenv(training.CHECKPOINT_ENV, "0.5")
    assert training.checkpoint_interval() == 0.5
    assert training.checkpoint_interval(3) == 3.0                     # the argument wins
    for bad in (-1, float("nan"), "2", True):
        with pytest.raises(ValueError, match="argument checkpoint_seconds"):
            training.checkpoint_interval(bad)
    monkeypatch.setenv(training.CHECKPOINT_ENV, "soon")
    with pytest.raises(ValueError, match=training.CHECKPOINT_ENV):
        training.checkpoint_interval()
    with pytest.raises(ValueError, match="checkpoint and init_state"):
        train(cfg(steps=2), progress=False, checkpoint="x.pt", init_state={})


@contextlib.contextmanager
def interrupted_after(monkeypatch, steps: int):
    """Training inside the block dies (KeyboardInterrupt) after ``steps`` steps; afterwards it runs normally."""
    real, calls = training.train_step, {"n": 0}

    def interrupted(*a, **kw):
        calls["n"] += 1
        if calls["n"] == steps + 1:
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(training, "train_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        yield
    monkeypatch.setattr(training, "train_step", real)


def test_resuming_from_a_checkpoint_is_bit_identical(tmp_path, monkeypatch, capsys):
    c = cfg(steps=30, eval_every=7, seed=3)
    ref = train(c, progress=False)
    path = tmp_path / "ck.pt"
    with interrupted_after(monkeypatch, 17):                           # the process dies after 17 steps
        train(c, progress=False, checkpoint=path, checkpoint_seconds=0)
    assert torch.load(path, weights_only=True)["step"] == 17
    resumed = train(c, progress=True, checkpoint=path, checkpoint_seconds=0)
    _compare_runs(resumed, ref)
    assert "resumed from step 17 of 30" in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["garbage", "other-config"])
def test_a_corrupt_or_foreign_checkpoint_is_ignored(tmp_path, damage):
    c = cfg(steps=12, eval_every=5)
    path = tmp_path / "ck.pt"
    if damage == "garbage":
        path.write_bytes(b"not a checkpoint")
    else:
        train(cfg(steps=12, eval_every=5, seed=1), progress=False, checkpoint=path, checkpoint_seconds=0)
    with pytest.warns(RuntimeWarning, match="ignoring training checkpoint"):
        r = train(c, progress=False, checkpoint=path, checkpoint_seconds=0)
    _compare_runs(r, train(c, progress=False))


_KILLED_RUN = """
import sys, torch
from eaglebook import training
torch.set_num_threads(1)
training.trained(training._cfg_from_dict(__import__("json").loads(sys.argv[1])), progress=False)
"""


def test_a_killed_training_resumes_bit_identically(tmp_path, monkeypatch, capsys):
    """Train in a subprocess with a checkpoint every 0.1 s, SIGKILL it once a checkpoint exists, finish
    with ``trained`` here, and compare with an uninterrupted ``trained`` in another cache."""
    import dataclasses
    import json
    import os
    import signal
    import subprocess
    import time

    from eaglebook import cache

    c = cfg(steps=200, eval_every=40, seed=5)
    env = dict(os.environ, EAGLEBOOK_CACHE=str(tmp_path / "a"), EAGLEBOOK_CHECKPOINT_SECONDS="0.1")
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "a"))
    ck = cache.checkpoint_path("train", c)
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_RUN, json.dumps(dataclasses.asdict(c))], env=env,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not ck.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    err = proc.communicate()[1]
    assert proc.returncode == -signal.SIGKILL, err                  # killed, not finished
    step = torch.load(ck, weights_only=True)["step"]
    assert 0 < step < c.steps
    assert not cache.is_valid(cache.entry_dir("train", c))
    resumed = trained(c, progress=True)
    assert f"resumed from step {step} of {c.steps}" in capsys.readouterr().out
    assert not ck.exists() and cache.is_valid(cache.entry_dir("train", c), c)
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "b"))
    monkeypatch.setenv(training.CHECKPOINT_ENV, "inf")
    _compare_runs(resumed, trained(c, progress=False))


def test_progress_bars_never_warn_for_a_missing_ipywidgets(monkeypatch):
    import sys
    import tqdm.std
    monkeypatch.setitem(sys.modules, "ipywidgets", None)      # import ipywidgets -> ImportError
    assert training.tqdm_class() is tqdm.std.tqdm

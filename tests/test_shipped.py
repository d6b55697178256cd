"""The shipped store (``models/``): trained models carried by the repository are used, not retrained;
a damaged one is not; unfinished runs resume from their shipped checkpoints."""

from __future__ import annotations

import time

import pytest
import torch

from eaglebook import cache, training
from eaglebook.config import ModelConfig, TaskConfig, TrainConfig

from test_training import _compare_runs, interrupted_after


def cfg(**kw):
    task = TaskConfig(n=6, d=6, n_prime=1, d_prime=1, s=3)
    return TrainConfig(task=task, model=ModelConfig(layers=2), steps=12, batch=16, eval_every=4, eval_size=32, **kw)


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A cache root the models are trained into, a shipped store, and an empty cache for the 'new user'."""
    roots = {k: tmp_path / k for k in ("trained", "shipped", "fresh")}
    monkeypatch.setenv(cache.SHIPPED_ENV, str(roots["shipped"]))
    monkeypatch.setenv(cache.CACHE_ENV, str(roots["trained"]))
    return roots


def no_training(monkeypatch):
    def refuse(*a, **kw):
        raise AssertionError("trained although a shipped model was available")
    monkeypatch.setattr(training, "train", refuse)


def test_a_shipped_model_is_used_and_copied_into_the_cache(store, monkeypatch):
    c = cfg(seed=1)
    ref = training.trained(c, progress=False)
    counts = cache.ship(store["trained"], log=lambda *a: None)
    assert counts == dict(entries=1, checkpoints=0, dropped=0, invalid=0)
    monkeypatch.setenv(cache.CACHE_ENV, str(store["fresh"]))
    assert not cache.is_valid(cache.entry_dir("train", c), c) and cache.available("train", c)
    no_training(monkeypatch)
    _compare_runs(training.trained(c, progress=False), ref)
    _compare_runs(training.trained_all([c], progress=False)[0], ref)
    assert cache.is_valid(cache.entry_dir("train", c), c)            # now in the user's own cache
    rows = cache.listing()
    assert [(r["seed"], r["steps"], r["valid"]) for r in rows] == [(1, 12, True)]
    assert cache.ship(store["trained"], log=lambda *a: None)["entries"] == 0   # nothing new to ship


@pytest.mark.parametrize("how", ["damaged", "switched off", "forced"])
def test_a_damaged_or_refused_shipped_model_is_retrained(store, monkeypatch, how):
    c = cfg(seed=2)
    training.trained(c, progress=False)
    cache.ship(store["trained"], log=lambda *a: None)
    monkeypatch.setenv(cache.CACHE_ENV, str(store["fresh"]))
    if how == "damaged":
        payload = store["shipped"] / "train" / cache.config_hash(c) / cache.PAYLOAD
        payload.write_bytes(payload.read_bytes()[:-10] + b"0123456789")
    elif how == "switched off":
        monkeypatch.setenv(cache.SHIPPED_ENV, "0")
    calls = {"n": 0}
    real = training.train

    def counting(*a, **kw):
        calls["n"] += 1
        return real(*a, **kw)

    monkeypatch.setattr(training, "train", counting)
    assert cache.available("train", c) == (how == "forced")
    training.trained(c, progress=False, force=how == "forced")
    assert calls["n"] == 1


def test_an_unfinished_shipped_run_resumes_from_its_checkpoint(store, monkeypatch, capsys):
    c = cfg(seed=3)
    ref = training.train(c, progress=False)
    with interrupted_after(monkeypatch, 7):                            # the sitting ends after 7 steps
        training.trained(c, progress=False, checkpoint_seconds=0)
    counts = cache.ship(store["trained"], log=lambda *a: None)
    assert counts["entries"] == 0 and counts["checkpoints"] == 1
    (ck,) = (store["shipped"] / "train").glob(".ckpt-*")
    before = float(torch.load(ck, weights_only=False)["seconds"])       # the first sitting's training time
    monkeypatch.setenv(cache.CACHE_ENV, str(store["fresh"]))           # the next sitting, on a fresh clone
    capsys.readouterr()
    t0 = time.perf_counter()
    resumed = training.trained(c, progress=True, checkpoint_seconds=0)
    after = time.perf_counter() - t0
    assert "resumed from step 7 of 12" in capsys.readouterr().out
    _compare_runs(resumed, ref)
    monkeypatch.setenv(cache.CACHE_ENV, str(store["fresh"]))
    assert cache.ship(store["fresh"], log=lambda *a: None) == dict(entries=1, checkpoints=0, dropped=1, invalid=0)
    # the entry records the whole training time, both sittings, not only the resumed part
    (row,) = cache.listing("train", store["shipped"])
    assert row["seconds"] == resumed.seconds and before < resumed.seconds <= before + after
    assert not list((store["shipped"] / "train").glob(".ckpt-*"))

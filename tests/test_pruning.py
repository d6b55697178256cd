import pytest
import torch
from dataclasses import replace

from eaglebook import cache, config, pruning, tasks, training
from eaglebook.models import LinearTransformer, prune_to

TASK = config.TaskConfig()


def model8(seed=0):
    cfg = replace(config.ModelConfig(), heads=8)
    return LinearTransformer(cfg, TASK, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_greedy_prune_keeps_the_useful_head():
    # head 3 carries an EAGLE-like layer stack, the other heads are noise: pruning must keep head 3.
    m = model8()
    good = LinearTransformer(config.ModelConfig(), TASK, generator=torch.Generator(), dtype=torch.float64)
    good.set_diagonal([(1.0, -0.02, -0.06)] * 4)
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.mul_(0.3)
            p[:, 3] = getattr(good, name)[:, 0]
    X, Xo = tasks.sample_X(TASK, 512, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    keep, trace = pruning.greedy_prune(m, X, Xo, target=1)
    assert keep == [3] and len(trace) == 8


def test_pruned_finetunes_from_the_pruned_weights(tmp_path, monkeypatch):
    parent_cfg = replace(config.get("ci").training("unconstrained", seed=0, heads=2), steps=30, batch=64,
                         eval_every=10, eval_size=256)
    parent = training.train(parent_cfg, progress=False)
    pcfg = pruning.PruneConfig(parent=parent_cfg, finetune_steps=20, validation_size=256)
    out = pruning.pruned(parent, pcfg, progress=False)
    run = training.Run.from_payload(out["run"])
    assert len(out["keep"]) == 1 and run.cfg.model.heads == 1 and run.cfg.steps == 20
    # "before" is the kept head of the parent, on the parent's test set; fine-tuning starts there and improves it
    X, Xo = training.test_set(parent_cfg)
    before = training.evaluate(prune_to(parent.model(), out["keep"]), X, Xo, TASK)
    assert out["before_finetune"]["median"] == pytest.approx(before["median"], rel=1e-12)
    assert run.final["test_mse_median"] < out["before_finetune"]["median"]
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))           # the result is plain data for the safe loader
    cache.cached("prune", pcfg, lambda: out)
    back = cache.load(cache.entry_dir("prune", pcfg), pcfg)
    assert (back["keep"], back["trace"], back["before_finetune"]) == (out["keep"], out["trace"], out["before_finetune"])
    with pytest.raises(ValueError, match="pcfg.parent"):
        pruning.pruned(parent, replace(pcfg, parent=replace(parent_cfg, seed=1)), progress=False)

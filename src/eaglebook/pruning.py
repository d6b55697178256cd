"""Head pruning of the unconstrained model, 8 heads → 1 (the paper's App. B.5: "little change in test MSE").

The paper prunes heads "while validation loss is monitored" and reports no number.  A probe of ours found
that dropping heads *without* fine-tuning destroys the model (the heads share the work, and the sum of
per-head products is not a 1-head model), so we prune greedily on a validation set (never the test set)
and then fine-tune the surviving head with the paper's recipe for a short while.  Selecting heads and
per-head ablations are ``eaglebook.extraction.head_ablation``; ``models.prune_to`` keeps a subset of heads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from . import tasks
from .config import TrainConfig
from .models import prune_to
from .models import LinearTransformer
from .training import Run, evaluate, test_set, train

__all__ = ["PruneConfig", "validation_set", "greedy_prune", "pruned"]


@dataclass(frozen=True)
class PruneConfig:
    """Everything that determines a pruned, fine-tuned model (its hash is the cache key)."""

    parent: TrainConfig
    target_heads: int = 1
    finetune_steps: int = 2000
    validation_size: int = 4096


def validation_set(cfg: TrainConfig, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A validation set drawn from its own stream (seeded from ``cfg.seed``), disjoint from train and test."""
    s = int(np.random.SeedSequence([cfg.seed, 7]).generate_state(1)[0])
    return tasks.sample_X(cfg.task, size, generator=torch.Generator().manual_seed(s), dtype=torch.float32)


def greedy_prune(model: LinearTransformer, X_clean, X_obs, *, target: int = 1) -> tuple[list[int], list[float]]:
    """Drop, one at a time, the head whose removal raises the median validation MSE least.

    Returns the kept heads and the median MSE after each removal (starting with all heads).
    """
    if not (1 <= target <= model.heads):
        raise ValueError(f"argument target={target} must be in 1..{model.heads}")
    keep = list(range(model.heads))
    trace = [evaluate(model, X_clean, X_obs, model.task)["median"]]
    while len(keep) > target:
        scores = [evaluate(prune_to(model, [h for h in keep if h != drop]), X_clean, X_obs, model.task)["median"]
                  for drop in keep]
        keep.remove(keep[int(np.nanargmin(scores))])
        trace.append(float(np.nanmin(scores)))
    return keep, trace


def pruned(parent: Run, pcfg: PruneConfig, *, progress: bool = True) -> dict:
    """Prune ``parent`` greedily to ``pcfg.target_heads`` heads, then fine-tune (paper recipe, ``finetune_steps``).

    Returns a dict: ``keep``, ``trace`` (median validation MSE along the pruning), ``before_finetune``
    (test metrics of the pruned model) and ``run`` (the fine-tuned :class:`Run`, same test set as the parent).
    Pure; wrap it in ``cache.cached('prune', pcfg, ...)``.
    """
    if pcfg.parent != parent.cfg:
        raise ValueError("argument pcfg.parent does not describe the given parent run")
    model = parent.model()
    Xv, Xvo = validation_set(parent.cfg, pcfg.validation_size)
    keep, trace = greedy_prune(model, Xv, Xvo, target=pcfg.target_heads)
    small = prune_to(model, keep)
    Xt, Xto = test_set(parent.cfg)
    before = {k: v for k, v in evaluate(small, Xt, Xto, parent.cfg.task).items() if k != "per_sample"}
    ft_cfg = replace(parent.cfg, model=small.cfg, steps=pcfg.finetune_steps)
    run = train(ft_cfg, progress=progress, init_state=small.state_dict())
    return {"keep": keep, "trace": trace, "before_finetune": before, "run": run.to_payload()}

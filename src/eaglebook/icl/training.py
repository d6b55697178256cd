"""Training the chapter-10 transformers, cached on disk by the hash of the whole config.

Adam, a fresh batch every step, loss ½(ŷ − y_q)², global gradient-norm clipping, a linear warm-up and a
cosine decay (see :class:`~eaglebook.icl.task.ICLTrain`, which extends the shared recipe's
:class:`~eaglebook.config.TrainConfig`).  The loop is the shared one of :mod:`eaglebook.training`
(:func:`~eaglebook.training.run_steps`: the progress bar, the evaluations every ``eval_every`` steps and at
the end; :func:`~eaglebook.training.clipped_step`: backward, clipping, and skipping a step whose loss or
gradient is not finite); what is this task's own is the batch and its loss, the learning-rate schedule, the
held-out loss and the best weights (``keep_best``).  Randomness: independent ``torch.Generator``\\ s
(initialisation, batches, held-out set) from ``numpy.random.SeedSequence(cfg.seed)``
(:func:`eaglebook.training.seeds`); nothing touches the global RNG, so the same config gives the same model
on the same machine.  The optimiser is ``torch.optim.Adam`` with its default (single-tensor) kernel: the
shipped models were trained with it, and the shared recipe's fused kernel rounds differently.

:func:`trained` goes through :func:`eaglebook.cache.cached` (kind ``icl``): atomic entries, checksums,
``weights_only`` loading, shipped entries in ``models/icl``.  :func:`plan` is the chapter's list of models
per profile; ``python -m eaglebook.icl.training --profile paper`` trains the missing ones (one process, one
thread; run it under ``nice``) and ``python -m eaglebook.cache ship --kind icl --from <cache root>`` ships
them.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from ..config import choice
from ..training import clipped_step, num_threads, progress_bar, run_steps, seeds
from .baselines import loss
from .models import LinearTransformer
from .task import ICLModel, ICLTask, ICLTrain, DTYPES, prompt, sample

__all__ = ["Run", "train", "trained", "recipe", "plan", "noise_tasks", "seeds", "KIND", "DEPTHS", "EVAL"]

KIND = "icl"     # the cache folder


@dataclass
class Run:
    """A trained model: its config, parameters, loss history and training time."""

    cfg: ICLTrain
    theta: torch.Tensor
    steps: np.ndarray            # the steps at which ``eval_loss`` was measured
    eval_loss: np.ndarray        # held-out loss ½(ŷ − y_q)² (float64 forward of the float32 model)
    train_loss: np.ndarray       # per-step training loss
    seconds: float
    best_step: int = -1          # the step whose weights these are (cfg.steps unless cfg.keep_best)

    def model(self, dtype=torch.float64) -> LinearTransformer:
        m = LinearTransformer(self.cfg.model, self.cfg.task.D, dtype=dtype)
        with torch.no_grad():
            m.theta.copy_(self.theta.to(dtype))
        return m

    def to_payload(self) -> dict[str, Any]:
        return dict(theta=self.theta, steps=self.steps, eval_loss=self.eval_loss, train_loss=self.train_loss,
                    seconds=self.seconds, best_step=self.best_step)

    @classmethod
    def from_payload(cls, cfg: ICLTrain, p: dict) -> "Run":
        return cls(cfg, p["theta"], np.asarray(p["steps"]), np.asarray(p["eval_loss"]), np.asarray(p["train_loss"]),
                   float(p["seconds"]), int(p.get("best_step", cfg.steps)))


def _lr_factor(cfg: ICLTrain, step: int) -> float:
    if step < cfg.warmup:
        return (step + 1) / cfg.warmup
    t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr_final + (1 - cfg.lr_final) * 0.5 * (1 + math.cos(math.pi * t))


def train(cfg: ICLTrain, *, progress: bool = True, threads: int | None = 1) -> Run:
    """Train one model (pure: no file I/O).  ``threads``: as :func:`eaglebook.training.train`."""
    if not isinstance(cfg, ICLTrain):
        raise ValueError(f"argument cfg must be an ICLTrain, got {type(cfg).__name__}")
    with num_threads(threads):
        return _train(cfg, progress)


def _train(cfg: ICLTrain, progress: bool) -> Run:
    dtype = DTYPES[cfg.dtype]
    s_init, s_batch, s_eval = seeds(cfg.seed)
    g_init, g_batch = torch.Generator().manual_seed(s_init), torch.Generator().manual_seed(s_batch)
    ev = sample(cfg.task, cfg.eval_size, torch.Generator().manual_seed(s_eval), dtype=torch.float64)
    Zev = prompt(ev)
    model = LinearTransformer(cfg.model, cfg.task.D, generator=g_init, dtype=dtype)
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=cfg.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(cfg, s))
    steps, ev_loss, tr_loss = [], [], np.full(cfg.steps, np.nan)
    best = [math.inf, model.theta.detach().clone(), 0]

    def evaluate(step):
        with torch.no_grad():
            m64 = LinearTransformer(cfg.model, cfg.task.D, dtype=torch.float64)
            m64.theta.copy_(model.theta.double())
            steps.append(step)
            ev_loss.append(loss(m64(Zev), ev.yq))
            if cfg.keep_best and ev_loss[-1] < best[0]:
                best[:] = [ev_loss[-1], model.theta.detach().clone(), step]

    def step(_):
        b = sample(cfg.task, cfg.batch, g_batch, dtype=dtype)
        out = clipped_step(0.5 * ((model(prompt(b)) - b.yq) ** 2).mean(), params, opt, cfg.clip,
                           skip_nonfinite=cfg.skip_nonfinite)
        sched.step()
        return out

    def record(i, lv, gv, stepped):
        tr_loss[i] = lv          # the loss of every step, a skipped one's too

    bar = progress_bar(cfg.steps, f"{cfg.model.kind} L={cfg.model.layers} {cfg.task.label}") if progress else None
    t0 = time.perf_counter()
    evaluate(0)
    run_steps(cfg, step, record=record, evaluate=evaluate, bar=bar,
              postfix=lambda lv: dict(loss=f"{lv:.2e}", eval=f"{ev_loss[-1]:.2e}"))
    theta = best[1] if cfg.keep_best else model.theta.detach().clone()
    return Run(cfg, theta, np.array(steps), np.array(ev_loss), tr_loss, time.perf_counter() - t0,
               best_step=best[2] if cfg.keep_best else cfg.steps)


def trained(cfg: ICLTrain, *, force: bool = False, progress: bool = True) -> Run:
    """The trained run for ``cfg`` from the cache (``cache.cached('icl', cfg, …)``), training it if needed."""
    from .. import cache

    p = cache.cached(KIND, cfg, lambda: train(cfg, progress=progress).to_payload(), force=force,
                     seconds_of=lambda p: p["seconds"])
    return Run.from_payload(cfg, p)


# ------------------------------------------------------------------------------------------- the plan
#: The recipe per profile (Vladymyrov et al.: Adam, batch 2048, lr 1e-4, 200,000 steps, best of 5 seeds).
_RECIPES = {
    "paper": dict(steps=1500, batch=512, lr=3e-3, eval_size=10_000, eval_every=250),
    "ci": dict(steps=100, batch=128, lr=1e-2, warmup=10, eval_size=500, eval_every=50),
}
#: Depths per profile: the noiseless GD++ sweep, the depths compared under noise (σ_max = 5), the depth
#: of the readings (noiseless DIAG and FULL) and that of the other noise settings (σ_max = 1, 3, {1, 3}).
#: ``full_noisy``: FULL under noise.  The paper profile has no 7-layer FULL: with this recipe it overflowed
#: within its first 250 steps, both at the initial scale 0.02 and at 0.002 (with labels of a few tens,
#: G = Z_ctx Z_ctxᵀ has entries of several hundred, and seven layers compound P G Q).
DEPTHS = {"paper": dict(noiseless=(1, 2, 3, 4, 5, 6, 7), noisy=(3, 7), full_noisy=(3,), read=4, other=3),
          "ci": dict(noiseless=(1, 2), noisy=(1, 2), full_noisy=(1, 2), read=2, other=2)}
#: Evaluation per profile: sequences per noise setting (theirs: 100,000), per point of the σ_τ grid of the
#: shrinkage figure, and prompts whose activations the readings follow; ``learn``: the share of the gap
#: between predicting zero and the oracle that every trained model must close (a check; the ci recipe's
#: 100 steps leave FULL, with 2(D+1)² weights per layer, far from trained, so there it only has to beat zero).
EVAL = {"paper": dict(sequences=100_000, per_sigma=10_000, sigmas=11, reading=2000, learn=0.5),
        "ci": dict(sequences=2000, per_sigma=500, sigmas=6, reading=200, learn=0.02)}


def recipe(profile: str) -> ICLTrain:
    """The base training config of ``profile`` (``paper`` or ``ci``)."""
    return ICLTrain(**_RECIPES[choice("profile", profile, tuple(_RECIPES))])


def noise_tasks() -> dict[str, ICLTask]:
    """The noise settings: σ_max ∈ {0, 1, 3, 5} and the categorical {1, 3}."""
    return {"0": ICLTask(sigma_max=0.0), "1": ICLTask(sigma_max=1.0), "3": ICLTask(sigma_max=3.0),
            "5": ICLTask(sigma_max=5.0), "{1,3}": ICLTask(noise="categorical", levels=(1.0, 3.0))}


def plan(profile: str, seed: int = 0) -> dict[tuple[str, str, int], ICLTrain]:
    """The chapter's models: (noise setting, kind, layers) → config.

    Noiseless: GD++ at every depth of the sweep, DIAG and FULL at the reading depth.  σ_max = 5: the three
    kinds at the noisy depths.  σ_max = 1, 3 and {1, 3}: DIAG at the "other" depth.  DIAG and FULL keep
    their best held-out weights (``keep_best``): their loss spikes late in a short run."""
    base, dep, tasks = replace(recipe(profile), seed=seed), DEPTHS[profile], noise_tasks()
    out = {}

    def add(noise, kind, L):
        out[(noise, kind, L)] = replace(base, task=tasks[noise], model=ICLModel(kind=kind, layers=L),
                                        keep_best=kind != "gdpp")

    for L in dep["noiseless"]:
        add("0", "gdpp", L)
    for kind in ("diag", "full"):
        add("0", kind, dep["read"])
    for kind in ("gdpp", "diag", "full"):
        for L in dep["full_noisy" if kind == "full" else "noisy"]:
            add("5", kind, L)
    for noise in ("1", "3", "{1,3}"):
        add(noise, "diag", dep["other"])
    return out


def _main(argv=None) -> None:
    from .._cli import Parser

    def shard(s):
        try:
            i, k = (int(v) for v in s.split("/"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be i/k with integers 0 <= i < k, got {s!r}") from None
        if not 0 <= i < k:
            raise argparse.ArgumentTypeError(f"must be i/k with integers 0 <= i < k, got {s!r}")
        return i, k

    ap = Parser(prog="python -m eaglebook.icl.training",
                description="train the chapter-10 models of a profile into the cache")
    ap.add_argument("--profile", default="paper", choices=tuple(_RECIPES))
    ap.add_argument("--shard", default=(0, 1), type=shard,
                    help="i/k: train every k-th model from the i-th, 0 <= i < k (parallel processes)")
    args = ap.parse_args(argv)
    i, k = args.shard
    torch.set_num_threads(1)
    from .. import cache
    items = sorted(plan(args.profile).items(), key=lambda kc: (kc[1].model.layers, kc[0]))[i::k]
    for (noise, kind, L), cfg in items:
        if cache.available(KIND, cfg):
            continue
        t0 = time.perf_counter()
        r = trained(cfg, progress=False)
        print(f"{noise:>6} {kind:>5} L={L}: eval loss {r.eval_loss[-1]:.3e} in {time.perf_counter() - t0:.0f} s",
              flush=True)


if __name__ == "__main__":
    _main()

"""Training the linear transformer with the paper's recipe (paper-facts §4, §11).

Adam at a constant learning rate ``cfg.lr``, batch ``cfg.batch``, ``cfg.steps`` steps, global grad-norm
clipping at ``cfg.clip``, a fresh batch from the task distribution every step, MSE between the
prediction −D_L (see :mod:`eaglebook.models`) and the clean D, with the prompt built from the observed
(possibly noisy) X.

Randomness: three independent ``torch.Generator``\\ s, seeded from ``cfg.seed`` through
``numpy.random.SeedSequence(cfg.seed).spawn(3)``: model initialisation, training batches, held-out test
set.  Same config → bit-identical history on CPU.

Loss spikes are recorded, not hidden (paper-facts §4, probes "Outliers"): every step's loss is kept
(NaN where the step was skipped) together with the pre-clip gradient norm; with ``cfg.skip_nonfinite``
a step whose loss or gradient is non-finite is skipped (no parameter update) and its index recorded.
The test metrics report the median per-sample MSE next to the mean, because the mean is dominated by
rare large-‖A‖ matrices.

:func:`train` is pure (no file I/O); :func:`trained` goes through :func:`eaglebook.cache.cached`.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from . import tasks
from .config import ModelConfig, TaskConfig, TrainConfig
from .models import LinearTransformer

__all__ = ["Run", "train", "trained", "train_step", "evaluate", "test_set", "baselines", "seeds", "resolve_device"]

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


def seeds(seed: int) -> tuple[int, int, int]:
    """Independent 63-bit seeds (init, train batches, test set) derived from ``seed``."""
    ss = np.random.SeedSequence(seed).spawn(3)
    return tuple(int(s.generate_state(2, dtype=np.uint64)[0] >> np.uint64(1)) for s in ss)


def resolve_device(device: str | torch.device = "cpu") -> torch.device:
    """``cuda`` if asked for and available; otherwise CPU (with a warning when CUDA was asked for)."""
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        warnings.warn("CUDA was requested but is not available; training on the CPU", RuntimeWarning, stacklevel=3)
        return torch.device("cpu")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"argument device={device!r} is not valid; allowed values: 'cpu', 'cuda'")
    return dev


@dataclass
class Run:
    """A finished training run.

    ``history``: ``train_loss`` and ``grad_norm`` (float32, one per step; NaN where skipped),
    ``skipped`` (int64 step indices), ``eval_step`` (int64) and at each of them ``test_mse_mean``,
    ``test_mse_median``, ``test_frac_worse_than_zero`` (float64).  ``baselines``: ``zero_mse``,
    ``nystrom_mse``, ``nystrom_mse_median`` on the same test set.
    """

    cfg: TrainConfig
    state_dict: dict[str, torch.Tensor]
    history: dict[str, np.ndarray]
    baselines: dict[str, float]
    seconds: float
    n_skipped: int
    device: str = "cpu"

    def model(self, device: str | torch.device = "cpu", dtype: torch.dtype | None = None) -> LinearTransformer:
        """Rebuild the trained :class:`LinearTransformer` (``dtype`` defaults to the training dtype)."""
        dtype = _DTYPES[self.cfg.dtype] if dtype is None else dtype
        m = LinearTransformer(self.cfg.model, self.cfg.task, generator=torch.Generator().manual_seed(0), dtype=dtype)
        m.load_state_dict({k: v.to(dtype) for k, v in self.state_dict.items()})
        return m.to(device)

    @property
    def final(self) -> dict[str, float]:
        """The last evaluation: mean, median, fraction worse than zero."""
        h = self.history
        return {k: float(h[k][-1]) for k in ("test_mse_mean", "test_mse_median", "test_frac_worse_than_zero")}

    # Plain-data form (tensors, numbers, strings, dicts) so the cache can use torch.load(weights_only=True).
    def to_payload(self) -> dict[str, Any]:
        return {"format": "eaglebook.Run/1", "cfg": _cfg_to_dict(self.cfg), "state_dict": self.state_dict,
                "history": {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in self.history.items()},
                "baselines": dict(self.baselines), "seconds": float(self.seconds),
                "n_skipped": int(self.n_skipped), "device": str(self.device)}

    @classmethod
    def from_payload(cls, p: dict[str, Any]) -> "Run":
        if p.get("format") != "eaglebook.Run/1":
            raise ValueError("not a stored eaglebook Run")
        return cls(cfg=_cfg_from_dict(p["cfg"]), state_dict=p["state_dict"],
                   history={k: v.numpy() for k, v in p["history"].items()}, baselines=dict(p["baselines"]),
                   seconds=p["seconds"], n_skipped=p["n_skipped"], device=p.get("device", "cpu"))


def _cfg_to_dict(cfg: TrainConfig) -> dict:
    import dataclasses
    return dataclasses.asdict(cfg)


def _cfg_from_dict(d: dict) -> TrainConfig:
    d = dict(d)
    return TrainConfig(task=TaskConfig(**d.pop("task")), model=ModelConfig(**d.pop("model")), **d)


# ---------------------------------------------------------------------------------------------- data
def test_set(cfg: TrainConfig, *, device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """The fixed held-out test set (X_clean, X_observed) of ``cfg.eval_size`` samples, in ``cfg.dtype``."""
    g = torch.Generator().manual_seed(seeds(cfg.seed)[2])
    return tasks.sample_X(cfg.task, cfg.eval_size, generator=g, dtype=_DTYPES[cfg.dtype], device=device)


def baselines(X_clean: torch.Tensor, X_obs: torch.Tensor, task: TaskConfig) -> dict[str, float]:
    """MSE on D of predicting zero and of the exact Nyström completion B A^† C of the observed X (float64)."""
    D = tasks.split(X_clean, task).D.to(torch.float64)
    A, B, C, _ = tasks.split(X_obs, task)
    ny = tasks.nystrom(A.double(), B.double(), C.double())
    per = (ny - D).square().mean((-1, -2))
    return {"zero_mse": float(D.square().mean()), "nystrom_mse": float(per.mean()),
            "nystrom_mse_median": float(per.median())}


@torch.no_grad()
def evaluate(model: LinearTransformer, X_clean: torch.Tensor, X_obs: torch.Tensor, task: TaskConfig,
             *, chunk: int = 8192) -> dict[str, Any]:
    """Per-sample MSE of ``model`` on D: ``{'per_sample', 'mean', 'median', 'frac_worse_than_zero'}``.

    The prompt is built from ``X_obs``, the target is the clean D.  ``per_sample`` is a float64 numpy
    array; non-finite predictions give inf/NaN there, are counted as worse than zero, and make the mean
    non-finite (reported as is).  The median ignores nothing: NaN is sorted as +inf.
    """
    was_training = model.training
    model.eval()
    p = next(model.parameters())
    outs = []
    for i in range(0, X_clean.shape[0], chunk):
        Z0 = tasks.prompt(X_obs[i:i + chunk], task).to(device=p.device, dtype=p.dtype)
        outs.append(model(Z0).to("cpu", torch.float64))
    model.train(was_training)
    pred = torch.cat(outs)
    D = tasks.split(X_clean, task).D.to("cpu", torch.float64)
    per = (pred - D).square().mean((-1, -2)).numpy()
    zero = D.square().mean((-1, -2)).numpy()
    worse = ~(per <= zero)                                          # NaN counts as worse
    per_sorted = np.where(np.isnan(per), np.inf, per)
    return {"per_sample": per, "mean": float(per.mean()), "median": float(np.median(per_sorted)),
            "frac_worse_than_zero": float(worse.mean())}


# ---------------------------------------------------------------------------------------------- train
def train(cfg: TrainConfig, *, device: str | torch.device = "cpu", progress: bool = True, threads: int | None = 1,
          init_state: dict[str, torch.Tensor] | None = None) -> Run:
    """Train one model with the paper's recipe; pure (no file I/O).  See the module docstring.

    ``init_state``: start from these weights (a state dict matching ``cfg.model``) instead of the random
    initialisation, e.g. to fine-tune a pruned model.

    ``threads``: ``torch.set_num_threads`` for the duration of the call (restored afterwards); 1 is the
    robust choice on a shared CPU (probes.md); ``None`` leaves the setting alone.
    """
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"argument cfg must be a TrainConfig, got {type(cfg).__name__}")
    dev = resolve_device(device)
    dtype = _DTYPES[cfg.dtype]
    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(int(threads))
    try:
        return _train(cfg, dev, dtype, progress, init_state)
    finally:
        if threads is not None:
            torch.set_num_threads(old_threads)


def _train(cfg: TrainConfig, dev: torch.device, dtype: torch.dtype, progress: bool,
           init_state: dict[str, torch.Tensor] | None = None) -> Run:
    t0 = time.perf_counter()
    task = cfg.task
    s_init, s_train, _ = seeds(cfg.seed)
    model = LinearTransformer(cfg.model, task, generator=torch.Generator().manual_seed(s_init), dtype=dtype, device=dev)
    if init_state is not None:
        model.load_state_dict({k: v.to(dtype) for k, v in init_state.items()})
    g_train = torch.Generator(device=dev).manual_seed(s_train)
    X_test, Xo_test = test_set(cfg)
    base = baselines(X_test, Xo_test, task)
    params = list(model.parameters())
    opt = _adam(params, cfg.lr, dev)

    losses = torch.full((cfg.steps,), float("nan"), dtype=torch.float32)
    gnorms = torch.full((cfg.steps,), float("nan"), dtype=torch.float32)
    skipped: list[int] = []
    ev_step, ev_mean, ev_med, ev_frac = [], [], [], []

    def do_eval(step: int) -> None:
        r = evaluate(model, X_test, Xo_test, task)
        ev_step.append(step)
        ev_mean.append(r["mean"])
        ev_med.append(r["median"])
        ev_frac.append(r["frac_worse_than_zero"])

    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=cfg.steps, desc=f"{cfg.model.regime} seed {cfg.seed}", leave=False, mininterval=1.0)
    for step in range(cfg.steps):
        lv, gv, stepped = train_step(model, opt, params, cfg, g_train)
        if stepped:
            losses[step] = lv
            gnorms[step] = gv
        else:
            skipped.append(step)
        if bar is not None:
            bar.update(1)
            if step % 50 == 0:
                bar.set_postfix(loss=f"{lv:.2e}", test_med=f"{ev_med[-1]:.2e}" if ev_med else "-",
                                skipped=len(skipped), refresh=False)
        if cfg.eval_every and (step + 1) % cfg.eval_every == 0 and step + 1 < cfg.steps:
            do_eval(step + 1)
    do_eval(cfg.steps)
    if bar is not None:
        bar.close()

    history = {
        "train_loss": losses.numpy(), "grad_norm": gnorms.numpy(),
        "skipped": np.asarray(skipped, dtype=np.int64),
        "eval_step": np.asarray(ev_step, dtype=np.int64),
        "test_mse_mean": np.asarray(ev_mean, dtype=np.float64),
        "test_mse_median": np.asarray(ev_med, dtype=np.float64),
        "test_frac_worse_than_zero": np.asarray(ev_frac, dtype=np.float64),
    }
    state = {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()}
    return Run(cfg=cfg, state_dict=state, history=history, baselines=base,
               seconds=time.perf_counter() - t0, n_skipped=len(skipped), device=str(dev))


def train_step(model: LinearTransformer, opt: torch.optim.Optimizer, params: list, cfg: TrainConfig,
               generator: torch.Generator) -> tuple[float, float, bool]:
    """One step of the recipe: fresh batch, MSE(−D_L, D_clean), backward, clip, Adam (unless non-finite).

    Returns (loss, pre-clip grad norm, whether the parameters were updated).
    """
    task = cfg.task
    p0 = params[0]
    X, Xo = tasks.sample_X(task, cfg.batch, generator=generator, dtype=p0.dtype, device=p0.device)
    pred = model(tasks.prompt(Xo, task))
    loss = torch.nn.functional.mse_loss(pred, X[:, task.d:, task.n:])
    for p in params:
        p.grad = None
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(params, cfg.clip, foreach=True)  # returns the pre-clip total norm
    lv, gv = float(loss.detach()), float(gn)
    if cfg.skip_nonfinite and not (math.isfinite(lv) and math.isfinite(gv)):
        return lv, gv, False
    opt.step()
    return lv, gv, True


def _adam(params, lr: float, dev: torch.device) -> torch.optim.Optimizer:
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, TypeError, ValueError):  # fused not supported for this device/dtype/version
        return torch.optim.Adam(params, lr=lr, foreach=True)


def trained(cfg: TrainConfig, *, device: str | torch.device = "cpu", force: bool = False, progress: bool = True) -> Run:
    """The trained run for ``cfg``, from the cache if present (``cache.cached('train', cfg, …)``).

    The cache stores :meth:`Run.to_payload` (plain tensors and numbers), so it loads with
    ``torch.load(weights_only=True)``.
    """
    from . import cache

    obj = cache.cached("train", cfg, lambda: train(cfg, device=device, progress=progress).to_payload(), force=force)
    return obj if isinstance(obj, Run) else Run.from_payload(obj)


def _train_in_worker(cfg: TrainConfig) -> float:
    """Worker entry point for :func:`trained_all`: train (or load) one config into the cache."""
    return trained(cfg, progress=False).seconds


def trained_all(cfgs: Sequence[TrainConfig], *, workers: int | None = None, progress: bool = True) -> list[Run]:
    """:func:`trained` for many configs; the ones missing from the cache train in parallel processes.

    One process per core (``workers`` defaults to ``os.cpu_count()``), each with one thread (the matrices
    are tiny, so processes scale where threads do not; probes.md).  Results go through the cache, so an
    interrupted call loses at most the runs in flight.  Returns the runs in the order of ``cfgs``.
    """
    import concurrent.futures as cf
    import multiprocessing as mp
    import os

    from . import cache

    cfgs = list(cfgs)
    missing = [c for c in dict.fromkeys(cfgs) if not cache.is_valid(cache.entry_dir("train", c), c)]
    missing.sort(key=lambda c: -c.steps * c.batch * c.model.heads)   # longest first: better packing
    workers = min(workers or os.cpu_count() or 1, len(missing))
    if workers > 1:
        bar = None
        if progress:
            from tqdm.auto import tqdm
            bar = tqdm(total=len(missing), desc=f"training {len(missing)} models on {workers} processes")
        with cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
            for fut in cf.as_completed([pool.submit(_train_in_worker, c) for c in missing]):
                fut.result()
                if bar is not None:
                    bar.update(1)
        if bar is not None:
            bar.close()
    return [trained(c, progress=progress) for c in cfgs]

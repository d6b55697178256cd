"""Training the linear transformer with the paper's recipe (the paper's App. B.2).

Adam at a constant learning rate ``cfg.lr``, batch ``cfg.batch``, ``cfg.steps`` steps, global grad-norm
clipping at ``cfg.clip``, a fresh batch from the task distribution every step, MSE between the
prediction −D_L (see :mod:`eaglebook.models`) and the clean D, with the prompt built from the observed
(possibly noisy) X.

Randomness: three independent ``torch.Generator``\\ s, seeded from ``cfg.seed`` through
``numpy.random.SeedSequence(cfg.seed).spawn(3)``: model initialisation, training batches, held-out test
set.  Same config → bit-identical history on CPU.  Nothing draws from the global torch or numpy RNG.

Loss spikes are recorded, not hidden (the paper's Fig. 9 shows the same spikes): every step's loss is kept
(NaN where the step was skipped) together with the pre-clip gradient norm; with ``cfg.skip_nonfinite``
a step whose loss or gradient is non-finite is skipped (no parameter update) and its index recorded.
The test metrics report the median per-sample MSE next to the mean, because the mean is dominated by
rare large-‖A‖ matrices.

:func:`train` is pure (no file I/O) unless given a checkpoint file; :func:`trained` goes through
:func:`eaglebook.cache.cached`.

The loop (:func:`run_steps`), the step's clipping and skipping (:func:`clipped_step`), the progress bar
(:func:`progress_bar`) and the thread setting (:func:`num_threads`) are shared with chapter 10's training
(:mod:`eaglebook.icl.training`), whose config extends :class:`~eaglebook.config.TrainConfig`.

Checkpoints: :func:`trained` writes a resumable checkpoint every few minutes (:func:`checkpoint_interval`,
``$EAGLEBOOK_CHECKPOINT_SECONDS``) next to the cache entry; it holds the weights, the optimiser state, the
batch generator's state, the step counter and everything recorded so far, so a run interrupted at any
point resumes from its last checkpoint and ends bit-identical to an uninterrupted run on the same machine
(with the same thread count).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from . import tasks
from .config import ModelConfig, TaskConfig, TrainConfig
from .models import LinearTransformer

__all__ = ["Run", "train", "trained", "trained_all", "train_missing", "FROM_CACHE", "THIS_MACHINE", "train_step", "adam", "evaluate", "test_set", "baselines", "seeds", "resolve_device",
           "clipped_step", "run_steps", "progress_bar", "num_threads", "tqdm_class"]

_DTYPES = {"float32": torch.float32, "float64": torch.float64}
_log = logging.getLogger(__name__)


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
          init_state: dict[str, torch.Tensor] | None = None, checkpoint: str | Path | None = None,
          checkpoint_seconds: float | None = None) -> Run:
    """Train one model with the paper's recipe.  See the module docstring.

    ``init_state``: start from these weights (a state dict matching ``cfg.model``) instead of the random
    initialisation, e.g. to fine-tune a pruned model.

    ``checkpoint``: a file to resume from (when it holds a usable checkpoint of ``cfg``) and to write a
    resumable checkpoint to every ``checkpoint_seconds`` (see :func:`checkpoint_interval`); the only file
    I/O of this function, which is pure without it.  Cannot be combined with ``init_state``, which the
    config does not describe.

    ``threads``: ``torch.set_num_threads`` for the duration of the call (restored afterwards); 1 is the
    robust choice on a shared CPU (the matrices are tiny); ``None`` leaves the setting alone.
    """
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"argument cfg must be a TrainConfig, got {type(cfg).__name__}")
    if not (isinstance(cfg.task, TaskConfig) and isinstance(cfg.model, ModelConfig)):
        raise TypeError(f"argument cfg must be a TrainConfig of the matrix task, got a {type(cfg).__name__} "
                        "(a config of another task trains with its own module's train)")
    if checkpoint is not None and init_state is not None:
        raise ValueError("arguments checkpoint and init_state cannot be combined: a checkpoint is matched to "
                         "its run by the config alone, which does not describe init_state")
    dev = resolve_device(device)
    dtype = _DTYPES[cfg.dtype]
    ckpt = None if checkpoint is None else _Checkpoint(Path(checkpoint), cfg, dev, checkpoint_seconds)
    with num_threads(threads):
        return _train(cfg, dev, dtype, progress, init_state, ckpt)


@contextlib.contextmanager
def num_threads(threads: int | None):
    """``torch.set_num_threads(threads)`` for the duration of the block (restored afterwards); ``None``
    leaves the setting alone."""
    old = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(int(threads))
    try:
        yield
    finally:
        if threads is not None:
            torch.set_num_threads(old)


_EVALS = ("eval_step", "test_mse_mean", "test_mse_median", "test_frac_worse_than_zero")


@dataclass
class _Live:
    """The objects a training run mutates: model, optimiser, batch generator."""

    model: LinearTransformer
    opt: torch.optim.Optimizer
    params: list
    generator: torch.Generator

    @classmethod
    def fresh(cls, cfg: TrainConfig, dev: torch.device, dtype: torch.dtype,
              init_state: dict[str, torch.Tensor] | None) -> "_Live":
        s_init, s_train, _ = seeds(cfg.seed)
        g_init = torch.Generator().manual_seed(s_init)
        model = LinearTransformer(cfg.model, cfg.task, generator=g_init, dtype=dtype, device=dev)
        if init_state is not None:
            model.load_state_dict({k: v.to(dtype) for k, v in init_state.items()})
        params = list(model.parameters())
        return cls(model, optimizer(cfg, params, dev), params, torch.Generator(device=dev).manual_seed(s_train))


@dataclass
class _Record:
    """What a run has recorded so far: per-step loss and gradient norm, skipped steps, evaluations."""

    losses: torch.Tensor
    gnorms: torch.Tensor
    skipped: list[int] = field(default_factory=list)
    evals: dict[str, list] = field(default_factory=lambda: {k: [] for k in _EVALS})
    step: int = 0          # steps completed
    seconds: float = 0.0   # training time spent by earlier (interrupted) processes

    @classmethod
    def fresh(cls, cfg: TrainConfig) -> "_Record":
        return cls(torch.full((cfg.steps,), float("nan"), dtype=torch.float32),
                   torch.full((cfg.steps,), float("nan"), dtype=torch.float32))

    def add_step(self, step: int, loss: float, gnorm: float, stepped: bool) -> None:
        if stepped:
            self.losses[step] = loss
            self.gnorms[step] = gnorm
        else:
            self.skipped.append(step)
        self.step = step + 1

    def add_eval(self, step: int, r: dict[str, Any]) -> None:
        for k, v in zip(_EVALS, (step, r["mean"], r["median"], r["frac_worse_than_zero"])):
            self.evals[k].append(v)

    def history(self) -> dict[str, np.ndarray]:
        e = self.evals
        return {"train_loss": self.losses.numpy(), "grad_norm": self.gnorms.numpy(),
                "skipped": np.asarray(self.skipped, dtype=np.int64),
                "eval_step": np.asarray(e["eval_step"], dtype=np.int64),
                **{k: np.asarray(e[k], dtype=np.float64) for k in _EVALS[1:]}}


def _train(cfg: TrainConfig, dev: torch.device, dtype: torch.dtype, progress: bool,
           init_state: dict[str, torch.Tensor] | None = None, ckpt: "_Checkpoint | None" = None) -> Run:
    t0 = time.perf_counter()
    live, rec = _Live.fresh(cfg, dev, dtype, init_state), _Record.fresh(cfg)
    if ckpt is not None:
        live, rec = ckpt.resume(live, rec, lambda: (_Live.fresh(cfg, dev, dtype, None), _Record.fresh(cfg)))
    X_test, Xo_test = test_set(cfg)
    base = baselines(X_test, Xo_test, cfg.task)
    bar = progress_bar(cfg.steps, f"{cfg.model.regime} seed {cfg.seed}", start=rec.step) if progress else None
    if rec.step and ckpt is not None:
        _say(ckpt.resumed_message(rec.step), bar)

    def save_if_due(step: int) -> None:
        if ckpt.due():
            ckpt.save(live, rec, rec.seconds + time.perf_counter() - t0)

    run_steps(cfg, lambda step: train_step(live.model, live.opt, live.params, cfg, live.generator),
              record=rec.add_step, evaluate=lambda step: rec.add_eval(step, evaluate(live.model, X_test, Xo_test, cfg.task)),
              start=rec.step, bar=bar, postfix=lambda loss: _postfix(loss, rec),
              after_step=None if ckpt is None else save_if_due)
    state = {k: v.detach().to("cpu").clone() for k, v in live.model.state_dict().items()}
    return Run(cfg=cfg, state_dict=state, history=rec.history(), baselines=base,
               seconds=rec.seconds + time.perf_counter() - t0, n_skipped=len(rec.skipped), device=str(dev))


def tqdm_class():
    """tqdm's notebook bar where it can draw one (ipywidgets installed), else its text bar.  ``tqdm.auto``
    alone would print a TqdmWarning into the chapter whenever a model trains in a kernel without ipywidgets."""
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        from tqdm.std import tqdm
    else:
        from tqdm.auto import tqdm
    return tqdm


def progress_bar(total: int, desc: str, *, start: int = 0):
    """A tqdm progress bar over ``total`` steps, starting at step ``start`` (:func:`tqdm_class`)."""
    return tqdm_class()(total=total, initial=start, desc=desc, leave=False, mininterval=1.0)


def _postfix(loss: float, rec: _Record) -> dict[str, Any]:
    med = rec.evals["test_mse_median"]
    return dict(loss=f"{loss:.2e}", test_med=f"{med[-1]:.2e}" if med else "-", skipped=len(rec.skipped))


def run_steps(cfg: TrainConfig, step, *, record, evaluate, start: int = 0, bar=None, postfix=None,
              after_step=None) -> None:
    """The training loop every recipe shares: steps ``start`` … ``cfg.steps − 1``.

    After each, ``step(i)`` having returned (loss, pre-clip gradient norm, whether the parameters were updated)
    (see :func:`clipped_step`): ``record(i, loss, gnorm, stepped)``; the progress ``bar`` (may be None) moves on,
    with ``postfix(loss)`` (a dict) every 50 steps; ``evaluate(i + 1)`` after every ``cfg.eval_every`` steps
    (0: none) but the last; ``after_step(i)`` (e.g. a checkpoint).  Then ``evaluate(cfg.steps)``, and the bar
    closes."""
    for i in range(start, cfg.steps):
        lv, gv, stepped = step(i)
        record(i, lv, gv, stepped)
        if bar is not None:
            bar.update(1)
            if postfix is not None and i % 50 == 0:
                bar.set_postfix(**postfix(lv), refresh=False)
        if cfg.eval_every and (i + 1) % cfg.eval_every == 0 and i + 1 < cfg.steps:
            evaluate(i + 1)
        if after_step is not None:
            after_step(i)
    evaluate(cfg.steps)
    if bar is not None:
        bar.close()


def _say(msg: str, bar) -> None:
    """A message next to the progress bar (printed), or to the log when there is no bar."""
    if bar is not None:
        bar.write(msg)
    else:
        _log.info(msg)


def train_step(model: LinearTransformer, opt: torch.optim.Optimizer, params: list, cfg: TrainConfig,
               generator: torch.Generator) -> tuple[float, float, bool]:
    """One step of the recipe: fresh batch, MSE(−D_L, D_clean), backward, clip, the optimiser's step (Adam,
    the paper's; unless non-finite).

    Returns (loss, pre-clip grad norm, whether the parameters were updated).
    """
    task = cfg.task
    p0 = params[0]
    X, Xo = tasks.sample_X(task, cfg.batch, generator=generator, dtype=p0.dtype, device=p0.device)
    pred = model(tasks.prompt(Xo, task))
    loss = torch.nn.functional.mse_loss(pred, X[:, task.d:, task.n:])
    return clipped_step(loss, params, opt, cfg.clip, skip_nonfinite=cfg.skip_nonfinite)


def clipped_step(loss: torch.Tensor, params: list, opt: torch.optim.Optimizer, clip: float, *,
                 skip_nonfinite: bool = True) -> tuple[float, float, bool]:
    """The end of a training step, shared by every recipe: backward from ``loss``, clip the global gradient
    norm at ``clip``, and the optimiser's step, unless ``skip_nonfinite`` and the loss or the pre-clip gradient
    norm is not finite (then the parameters and the optimiser's state stay as they were).

    Returns (loss, pre-clip grad norm, whether the parameters were updated)."""
    for p in params:
        p.grad = None
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(params, clip, foreach=True)  # returns the pre-clip total norm
    lv, gv = float(loss.detach()), float(gn)
    if skip_nonfinite and not (math.isfinite(lv) and math.isfinite(gv)):
        return lv, gv, False
    opt.step()
    return lv, gv, True


def optimizer(cfg: TrainConfig, params, dev: torch.device) -> torch.optim.Optimizer:
    """The recipe's optimiser: the paper's Adam (:func:`adam`), or SGD with heavy-ball momentum
    ``cfg.momentum`` (``cfg.optimizer == "sgd"``, chapter 11), both at the constant rate ``cfg.lr``."""
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, foreach=True)
    return adam(params, cfg.lr, dev)


def adam(params, lr: float, dev: torch.device) -> torch.optim.Optimizer:
    """The paper's optimiser: Adam with a constant learning rate (fused kernels where supported)."""
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, TypeError, ValueError):  # fused not supported for this device/dtype/version
        return torch.optim.Adam(params, lr=lr, foreach=True)

# ---------------------------------------------------------------------------------------- checkpoints
CHECKPOINT_ENV = "EAGLEBOOK_CHECKPOINT_SECONDS"
#: Seconds between two checkpoints of a training run, unless the argument or the environment says otherwise.
DEFAULT_CHECKPOINT_SECONDS = 120.0
_CKPT_FORMAT = "eaglebook.TrainCheckpoint/1"


def checkpoint_interval(seconds: float | None = None) -> float:
    """Seconds between checkpoints: ``seconds`` if given, else ``$EAGLEBOOK_CHECKPOINT_SECONDS``, else
    :data:`DEFAULT_CHECKPOINT_SECONDS`.  0 writes one after every step; ``inf`` never writes one."""
    if seconds is not None:
        return _seconds("argument checkpoint_seconds", seconds)
    env = os.environ.get(CHECKPOINT_ENV, "").strip()
    if not env:
        return DEFAULT_CHECKPOINT_SECONDS
    try:
        value: Any = float(env)
    except ValueError:
        value = env
    return _seconds(f"environment variable {CHECKPOINT_ENV}", value)


def _seconds(what: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{what}={value!r} is not valid; allowed values: numbers >= 0 (0: after every step)")
    return float(value)


class _Checkpoint:
    """A resumable checkpoint of one training run in the file ``path``.

    It holds everything the rest of the run depends on: the weights, the optimiser state, the state of the
    batch generator (the only random stream drawn from while training: the initialisation and the test set
    are drawn up front from their own seeds), the steps completed and all that was recorded so far, plus
    the canonical JSON of the config and the device, which must match for a resume.  It is written
    atomically (temporary file, then ``os.replace``) and read with ``torch.load(weights_only=True)``.
    """

    def __init__(self, path: Path, cfg: TrainConfig, dev: torch.device, seconds: float | None = None):
        self.path, self.cfg, self.dev = path, cfg, dev
        self.every = checkpoint_interval(seconds)
        self._last = time.monotonic()

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.every

    def save(self, live: _Live, rec: _Record, seconds: float) -> None:
        from . import cache

        ck = {"format": _CKPT_FORMAT, "config": cache.canonical_json(self.cfg), "device": str(self.dev),
              "step": rec.step, "seconds": float(seconds), "model": live.model.state_dict(),
              "optimizer": live.opt.state_dict(), "generator": live.generator.get_state(),
              "losses": rec.losses, "gnorms": rec.gnorms, "skipped": list(rec.skipped),
              "evals": {k: list(v) for k, v in rec.evals.items()}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".tmp-{self.path.stem.lstrip('.')}-", suffix=".pt", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                torch.save(ck, f)
            os.replace(tmp, self.path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        self._last = time.monotonic()

    def resume(self, live: _Live, rec: _Record, fresh) -> tuple[_Live, _Record]:
        """Load the checkpoint into ``live`` and ``rec`` when there is a usable one; otherwise (none, or
        one that is corrupt or for another run: warned about) return them unchanged.  ``fresh()`` makes a
        clean pair in case a checkpoint fails half-way through loading."""
        ck = self._read()
        if ck is None:
            return live, rec
        try:
            live.model.load_state_dict(ck["model"])
            live.opt.load_state_dict(ck["optimizer"])
            live.generator.set_state(ck["generator"])
            rec.losses.copy_(ck["losses"])
            rec.gnorms.copy_(ck["gnorms"])
            rec.skipped, rec.step, rec.seconds = list(ck["skipped"]), int(ck["step"]), float(ck["seconds"])
            rec.evals = {k: list(ck["evals"][k]) for k in _EVALS}
        except (KeyError, RuntimeError, TypeError, ValueError) as e:
            self._ignore(f"it does not fit this run ({type(e).__name__}: {e})")
            return fresh()
        return live, rec

    def _read(self) -> dict | None:
        from . import cache

        if not self.path.exists():
            return None
        try:
            ck = cache.load_plain(self.path)
        except Exception as e:  # truncated, garbage, or refused by the safe loader
            return self._ignore(f"it cannot be loaded ({type(e).__name__})")
        if not isinstance(ck, dict) or ck.get("format") != _CKPT_FORMAT:
            return self._ignore("it is not a training checkpoint")
        if ck.get("config") != cache.canonical_json(self.cfg):
            return self._ignore("it was written for another config")
        if ck.get("device") != str(self.dev):
            return self._ignore(f"it was written on device {ck.get('device')!r}, not {str(self.dev)!r}")
        if not (isinstance(ck.get("step"), int) and 0 <= ck["step"] <= self.cfg.steps):
            return self._ignore(f"its step {ck.get('step')!r} is out of range")
        return ck

    def _ignore(self, why: str) -> None:
        warnings.warn(f"ignoring training checkpoint {self.path}: {why}; training from step 0",
                      RuntimeWarning, stacklevel=4)
        return None

    def resumed_message(self, step: int) -> str:
        c = self.cfg
        return f"{c.model.regime} seed {c.seed}: resumed from step {step} of {c.steps} ({self.path})"



def trained(cfg: TrainConfig, *, device: str | torch.device = "cpu", force: bool = False, progress: bool = True,
            checkpoint_seconds: float | None = None) -> Run:
    """The trained run for ``cfg``, from the cache if present (``cache.cached('train', cfg, …)``).

    The cache stores :meth:`Run.to_payload` (plain tensors and numbers), so it loads with
    ``torch.load(weights_only=True)``.  While training, a resumable checkpoint is written every
    ``checkpoint_seconds`` (see :func:`checkpoint_interval`; default two minutes) to
    ``<cache root>/train/.ckpt-<config hash>.pt``; an interrupted call resumes from it the next time,
    bit-identically to an uninterrupted run on the same machine.  It is deleted once the entry is written;
    ``force=True`` discards it and trains from scratch.
    """
    from . import cache

    ckpt = cache.checkpoint_path("train", cfg)

    def compute() -> dict[str, Any]:
        if force:
            ckpt.unlink(missing_ok=True)
        else:
            cache.adopt_checkpoint("train", cfg)   # a run shipped unfinished resumes where it stopped
        return train(cfg, device=device, progress=progress, checkpoint=ckpt,
                     checkpoint_seconds=checkpoint_seconds).to_payload()

    obj = cache.cached("train", cfg, compute, force=force, seconds_of=lambda p: p["seconds"])   # resumes included
    ckpt.unlink(missing_ok=True)
    return obj if isinstance(obj, Run) else Run.from_payload(obj)


def _train_in_worker(cfg: TrainConfig) -> float:
    """Worker entry point of the local process pool of :func:`trained_all`: train (or load) one config into
    the cache (the pool's processes share this machine's file system)."""
    return trained(cfg, progress=False).seconds


#: Where a run of :func:`train_missing` came from: a valid entry of the cache (or of the shipped store), or
#: trained on this machine; a Dask worker is named by its address (``tcp://…``).
FROM_CACHE, THIS_MACHINE = "cache", "this machine"


def _dask_worker():
    """The Dask worker running this call, or ``None`` (no Dask, or not inside a task)."""
    try:
        from distributed import get_worker
        return get_worker()
    except (ImportError, ValueError):
        return None


def _train_payload(cfg: TrainConfig) -> dict[str, Any]:
    """Task of :func:`train_missing` on an executor's worker (a Dask worker, or any other): train ``cfg``
    and return ``{"payload": Run.to_payload(), "where": …, "host": …, "torch": …}``; the caller writes the
    cache entry, so the worker needs no shared file system.

    One torch thread, as in the local pool, so that the weights are bit-identical to the pool's.  A
    resumable checkpoint is written under the worker's own cache root (:func:`cache.checkpoint_path`): a
    task that Dask retries on the same machine (or on one sharing the cache) resumes from it, bit-identically;
    it is removed once the run is complete."""
    import socket

    from . import cache

    worker = _dask_worker()
    where = worker.address if worker is not None else None
    threads: int | None = 1
    if worker is not None:
        # A Dask worker process is dedicated to these tasks: one thread for good (a per-call set-and-restore
        # would race between the tasks of a worker started with --nthreads > 1)
        torch.set_num_threads(1)
        threads = None
        logging.getLogger("distributed.worker").info(
            "eaglebook: training %s seed %d (%d steps, config %s)", cfg.model.regime, cfg.seed, cfg.steps,
            cache.config_hash(cfg))
    ckpt = cache.adopt_checkpoint("train", cfg)
    run = train(cfg, progress=False, threads=threads, checkpoint=ckpt)
    ckpt.unlink(missing_ok=True)
    if worker is not None:
        logging.getLogger("distributed.worker").info(
            "eaglebook: trained %s seed %d in %.1f s (config %s)", cfg.model.regime, cfg.seed, run.seconds,
            cache.config_hash(cfg))
    return {"payload": run.to_payload(), "where": where, "host": socket.gethostname(), "torch": torch.__version__}


def _store(cfg: TrainConfig, result: dict[str, Any]) -> str:
    """Write a worker's result for ``cfg`` to the cache (atomically, checksummed: :func:`cache.cached`) and
    return where it was trained.  A result for another config, or from another torch, is refused."""
    import socket

    from . import cache

    payload = result["payload"]
    got = _cfg_from_dict(payload["cfg"])
    if cache.canonical_json(got) != cache.canonical_json(cfg):
        raise RuntimeError(f"a worker returned the run of config {cache.config_hash(got)} for config "
                           f"{cache.config_hash(cfg)}: is the worker's eaglebook the same as this one?")
    if result.get("torch") != torch.__version__:
        raise RuntimeError(f"a worker ({result.get('where') or result.get('host')}) runs torch {result.get('torch')}, "
                           f"this process {torch.__version__}: the weights would not be those of this machine; "
                           "install the same torch on the workers")
    cache.cached("train", cfg, lambda: payload, seconds_of=lambda p: p["seconds"])
    cache.checkpoint_path("train", cfg).unlink(missing_ok=True)
    if result.get("where"):
        return str(result["where"])
    return THIS_MACHINE if result.get("host") == socket.gethostname() else f"host {result.get('host')}"


def train_missing(cfgs: Sequence[TrainConfig], *, executor=None, scheduler: str | None = None,
                  workers: int | None = None, progress: bool = True) -> dict[TrainConfig, str]:
    """Train the configs of ``cfgs`` that the cache lacks, into the cache; return, for every distinct config,
    where its run came from: :data:`FROM_CACHE`, :data:`THIS_MACHINE`, or a Dask worker's address.

    Where they train, in this order:

    - ``executor``: any ``concurrent.futures.Executor`` (a Dask ``Client.get_executor()``, a process pool,
      …): its workers train and return the payloads (:func:`_train_payload`), and this process writes
      the cache entries as the results arrive, so nothing half-written reaches the cache and the workers
      need no shared file system.  A task that fails fails this call (Dask itself retries a task whose worker
      died).
    - ``scheduler`` (else ``$EAGLEBOOK_SCHEDULER``): a Dask cluster (:func:`eaglebook.cluster.executor`:
      ``local`` starts a LocalCluster of ``workers`` processes, ``tcp://host:port`` connects to a scheduler),
      as an ``executor``.  An unreachable scheduler is a :class:`eaglebook.cluster.SchedulerError`.
    - otherwise, as always: one process per core of this machine (``workers`` defaults to
      ``os.cpu_count()``), each with one thread, each writing its own entry through the cache; a single
      missing model (or a single core) trains in this process.

    Longest first (better packing).  A progress bar counts the models.
    """
    import concurrent.futures as cf
    import multiprocessing as mp

    from . import cache, cluster

    cfgs = list(dict.fromkeys(cfgs))
    if executor is None:
        cluster.scheduler_address(scheduler)          # a malformed address fails even when nothing is missing
    where = {c: FROM_CACHE for c in cfgs if cache.available("train", c)}
    missing = [c for c in cfgs if c not in where]
    missing.sort(key=lambda c: -c.steps * c.batch * c.model.heads)   # longest first: better packing
    if not missing:
        return where
    if executor is None:
        with cluster.executor(scheduler, workers=workers) as ex:
            if ex is not None:
                pool, desc = ex
                return {**where, **_train_on(pool, missing, desc, progress)}
    if executor is not None:
        return {**where, **_train_on(executor, missing, type(executor).__name__, progress)}
    n = min(workers or os.cpu_count() or 1, len(missing))
    if n <= 1:
        for c in missing:
            trained(c, progress=progress)
            where[c] = THIS_MACHINE
        return where
    bar = tqdm_class()(total=len(missing), desc=f"training {len(missing)} models on {n} processes") if progress else None
    with cf.ProcessPoolExecutor(n, mp_context=mp.get_context("spawn")) as pool:
        futs = {pool.submit(_train_in_worker, c): c for c in missing}
        for fut in cf.as_completed(futs):
            fut.result()
            where[futs[fut]] = THIS_MACHINE
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return where


def _train_on(executor, missing: list[TrainConfig], desc: str, progress: bool) -> dict[TrainConfig, str]:
    import concurrent.futures as cf

    bar = tqdm_class()(total=len(missing), desc=f"training {len(missing)} models on {desc}") if progress else None
    where = {}
    futs = {executor.submit(_train_payload, c): c for c in missing}
    try:
        for fut in cf.as_completed(futs):
            c = futs[fut]
            where[c] = _store(c, fut.result())
            if bar is not None:
                bar.update(1)
    finally:
        for f in futs:
            f.cancel()
        if bar is not None:
            bar.close()
    return where


def trained_all(cfgs: Sequence[TrainConfig], *, workers: int | None = None, progress: bool = True,
                executor=None, scheduler: str | None = None) -> list[Run]:
    """:func:`trained` for many configs; the ones missing from the cache train in parallel
    (:func:`train_missing`: on ``executor``, any ``concurrent.futures.Executor``; else on the Dask cluster
    that ``scheduler`` or ``$EAGLEBOOK_SCHEDULER`` names; else one process per core of this machine, each
    with one thread: the matrices are tiny, so processes scale where threads do not).  Results go through
    the cache, and the runs in flight write checkpoints, so an interrupted call resumes where it stopped.
    Returns the runs in the order of ``cfgs``.
    """
    cfgs = list(cfgs)
    train_missing(cfgs, executor=executor, scheduler=scheduler, workers=workers, progress=progress)
    return [trained(c, progress=progress) for c in cfgs]

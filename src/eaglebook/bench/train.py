"""Speed benchmark of a training step:  ``python -m eaglebook.bench train [--steps N] [--batch 1024]``.

For each regime (unconstrained with 1 and 8 heads, sketched, distributed) it prints

* ``step``: ms per training step (fresh batch sampling, forward, backward, clip, Adam), the same code
  path as :func:`eaglebook.training.train` (:func:`~eaglebook.training.train_step`);
* ``floor``: ms for the same step's matrix products alone: every ``mm/bmm/addmm/baddbmm`` that the
  model's forward and backward issue is recorded once (shapes and strides, via a dispatch mode) and
  then replayed on preallocated tensors with preallocated outputs, without autograd or optimizer;
* their ratio, and the 8-head / 1-head step-time ratio.

Timings are the median of ``--repeats`` blocks of ``--steps`` steps, on ``--threads`` threads.
"""

from __future__ import annotations

import statistics
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .. import tasks
from .._arrays import int_in
from ..config import ModelConfig, TaskConfig, TrainConfig
from ..models import LinearTransformer
from ..training import adam, train_step

_MATMULS = {"mm", "bmm", "addmm", "baddbmm"}

CASES = [("unconstrained 1 head", dict(regime="unconstrained", heads=1)),
         ("unconstrained 8 heads", dict(regime="unconstrained", heads=8)),
         ("sketched (r=5)", dict(regime="sketched")),
         ("distributed (M=3)", dict(regime="distributed"))]


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name in _MATMULS:
            self.calls.append((name, [(tuple(a.shape), a.stride()) if isinstance(a, torch.Tensor) else a for a in args]))
        return func(*args, **kwargs)


def _replayer(calls, dtype):
    """Preallocated operands/outputs for the recorded products; returns a function running them once."""
    ops = []
    for name, args in calls:
        tens = []
        for a in args:
            if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], tuple):
                s, st = a
                size = 1 + sum((k - 1) * abs(j) for k, j in zip(s, st)) if all(s) else 0
                tens.append(torch.randn(max(size, 1), dtype=dtype).as_strided(s, st))
            else:
                tens.append(a)
        f = getattr(torch, name)
        out = f(*tens).contiguous() if name in ("mm", "bmm") else f(*tens)
        ops.append((f, tens, torch.empty_like(out)))

    def run():
        for f, tens, out in ops:
            f(*tens, out=out)
    return run


def _time(fn, steps: int, repeats: int) -> float:
    """Median over ``repeats`` of the mean ms per call of ``fn`` over ``steps`` calls."""
    fn()
    res = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(steps):
            fn()
        res.append((time.perf_counter() - t) / steps * 1e3)
    return statistics.median(res)


def bench_train(steps: int = 20, batch: int = 1024, repeats: int = 5, threads: int = 1, dtype: str = "float32",
                cases=CASES, verbose: bool = True) -> dict[str, dict[str, float]]:
    """Time a training step per regime against its matrix-product floor; return {case: {step, floor, ratio}}."""
    for name, v in (("steps", steps), ("batch", batch), ("repeats", repeats), ("threads", threads)):
        int_in(name, v, 1)
    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _bench_train(steps, batch, repeats, dtype, cases, verbose)
    finally:
        torch.set_num_threads(old_threads)


def _bench_train(steps, batch, repeats, dtype, cases, verbose):
    task = TaskConfig()
    results = {}
    for label, mkw in cases:
        cfg = TrainConfig(task=task, model=ModelConfig(**mkw), batch=batch, dtype=dtype)
        model = LinearTransformer(cfg.model, task, generator=torch.Generator().manual_seed(0),
                                  dtype=getattr(torch, dtype))
        params = list(model.parameters())
        opt = adam(params, cfg.lr, torch.device("cpu"))
        g = torch.Generator().manual_seed(1)
        for _ in range(3):
            train_step(model, opt, params, cfg, g)
        step_ms = _time(lambda: train_step(model, opt, params, cfg, g), steps, repeats)
        # Record the products of one forward+backward (the model only; not the batch sampling).
        X, Xo = tasks.sample_X(task, batch, generator=g, dtype=getattr(torch, dtype))
        Z0 = tasks.prompt(Xo, task)
        rec = _Recorder()
        with rec:
            loss = torch.nn.functional.mse_loss(model(Z0), X[:, task.d:, task.n:])
            loss.backward()
        for p in params:
            p.grad = None
        # The per-layer weight products W_Q W_Kᵀ etc. are tiny but are products of the step too; keep all.
        floor_ms = _time(_replayer(rec.calls, getattr(torch, dtype)), steps, repeats)
        results[label] = {"step_ms": step_ms, "floor_ms": floor_ms, "ratio": step_ms / floor_ms,
                          "n_products": len(rec.calls), "paper_minutes": step_ms * 20_000 / 60e3}
        if verbose:
            print(f"{label:24s} step {step_ms:7.2f} ms   floor {floor_ms:7.2f} ms   ratio {step_ms / floor_ms:4.2f}   "
                  f"({len(rec.calls)} products; 20k steps ≈ {step_ms * 20_000 / 60e3:5.1f} min)", flush=True)
    one, eight = results.get("unconstrained 1 head"), results.get("unconstrained 8 heads")
    if verbose and one and eight:
        print(f"8 heads / 1 head: step {eight['step_ms'] / one['step_ms']:.2f}×, floor {eight['floor_ms'] / one['floor_ms']:.2f}×")
    return results


def run_cli(a) -> dict:
    threads = a.threads or 1
    print(f"torch {torch.__version__}, {threads} thread(s), batch {a.batch}, {a.dtype}")
    return bench_train(steps=a.steps, batch=a.batch, repeats=a.repeats, threads=threads, dtype=a.dtype)

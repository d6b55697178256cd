"""Small helpers shared by the extraction steps: argument checks, float64 copies, MSE statistics."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from .. import regimes, tasks
from ..config import TaskConfig
from ..models import LinearTransformer

F64 = torch.float64


def np64(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", F64).numpy()
    return np.asarray(x, dtype=np.float64)


def like(out: np.ndarray, ref):
    """Return ``out`` in the type of ``ref`` (torch tensor on its device/dtype, else float64 NumPy)."""
    if isinstance(ref, torch.Tensor):
        return torch.as_tensor(out, dtype=ref.dtype if ref.is_floating_point() else F64, device=ref.device)
    return out


def check_factor(factor, name="factor") -> float:
    if isinstance(factor, bool) or not isinstance(factor, (int, float, np.integer, np.floating)) \
            or not np.isfinite(factor) or factor <= 0:
        raise ValueError(f"argument {name}={factor!r} must be a finite number > 0")
    return float(factor)


def check_levels(levels, name="levels") -> int:
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or levels < 1:
        raise ValueError(f"argument {name}={levels!r} must be an integer >= 1 (the zero level included)")
    return int(levels)


#: What a function may need of a model's regime (:meth:`eaglebook.regimes.Regime.can`), in words.
NEEDS = {"refactorable": "products that can be written back as weights",
         "sketched": "a sketched model (rank-r sketch blocks)",
         "prunable": "a model with independent heads"}


def check_model(model, need: str | None = None) -> LinearTransformer:
    """``model`` if it is a LinearTransformer whose regime has the capability ``need`` (a key of :data:`NEEDS`)."""
    if not isinstance(model, LinearTransformer):
        raise TypeError(f"argument model must be a LinearTransformer, got {type(model).__name__}")
    if need is not None and not model.rg.can(need):
        ok = [r for r in regimes.names() if regimes.get(r).can(need)]
        raise ValueError(f"argument model has regime {model.regime!r}; this function needs {NEEDS[need]} "
                         f"(regime {' or '.join(repr(r) for r in ok)})")
    return model


def check_task(task: TaskConfig, model: LinearTransformer) -> TaskConfig:
    if not isinstance(task, TaskConfig):
        raise TypeError(f"argument task must be a TaskConfig, got {type(task).__name__}")
    keys = ("n", "d", "n_prime", "d_prime")
    if any(getattr(task, k) != getattr(model.task, k) for k in keys):
        raise ValueError(f"argument task has shapes {[getattr(task, k) for k in keys]} but the model was built "
                         f"for {[getattr(model.task, k) for k in keys]} (n, d, n', d')")
    return task


def as_batch(name: str, X, task: TaskConfig) -> torch.Tensor:
    t = X.detach() if isinstance(X, torch.Tensor) else torch.as_tensor(np.asarray(X))
    t = t.to("cpu", F64)
    want = (task.d + task.d_prime, task.n + task.n_prime)
    if t.dim() != 3 or tuple(t.shape[-2:]) != want:
        raise ValueError(f"argument {name} has shape {tuple(t.shape)}, expected (batch, d+d', n+n') = (batch, {want[0]}, {want[1]})")
    return t


def model64(model: LinearTransformer) -> LinearTransformer:
    m = copy.deepcopy(model).to("cpu", F64)
    m.eval()
    return m


def mse_stats(pred: torch.Tensor, X_clean: torch.Tensor, task: TaskConfig) -> dict[str, Any]:
    D = tasks.split(X_clean, task).D.to(F64)
    per = (pred.to(F64) - D).square().mean((-1, -2)).numpy()
    zero = D.square().mean((-1, -2)).numpy()
    srt = np.where(np.isnan(per), np.inf, per)
    return {"per_sample": per, "mean": float(per.mean()), "median": float(np.median(srt)),
            "frac_worse_than_zero": float((~(per <= zero)).mean())}

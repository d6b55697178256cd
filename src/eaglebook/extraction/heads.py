"""Step 6 (the paper's App. B.5): what each head of a multi-head model contributes."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import tasks
from ..config import TaskConfig
from ..models import LinearTransformer, prune_to
from ._common import check_model, check_task, as_batch, model64


def head_ablation(model: LinearTransformer, X_clean, X_obs, task: TaskConfig) -> dict[str, Any]:
    """Test MSE keeping only head h, for every head (a regime with independent heads: unconstrained).  Float64.

    Returns ``{'head': (H,), 'mse_mean': (H,), 'mse_median': (H,), 'frac_worse_than_zero': (H,),
    'full_mean', 'full_median', 'zero_mse'}``.
    """
    from ..training import evaluate
    check_model(model, "prunable")
    check_task(task, model)
    Xc, Xo = as_batch("X_clean", X_clean, task), as_batch("X_obs", X_obs, task)
    m64 = model64(model)
    full = evaluate(m64, Xc, Xo, task)
    res = [evaluate(prune_to(m64, [h]), Xc, Xo, task) for h in range(model.heads)]
    return {"head": np.arange(model.heads), "mse_mean": np.array([r["mean"] for r in res]),
            "mse_median": np.array([r["median"] for r in res]),
            "frac_worse_than_zero": np.array([r["frac_worse_than_zero"] for r in res]),
            "full_mean": full["mean"], "full_median": full["median"],
            "zero_mse": float(tasks.split(Xc, task).D.square().mean())}

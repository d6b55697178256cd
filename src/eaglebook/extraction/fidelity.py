"""Step 5 (the paper's Table 1): the extracted per-layer iteration and its fidelity to the transformer."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .. import tasks
from ..config import TaskConfig
from ..models import LinearTransformer
from ._common import check_model, check_task, as_batch, model64, mse_stats
from .scalars import Alphas, alphas


def extracted_iterates(model: LinearTransformer, Z0, task: TaskConfig, *, al: Alphas | None = None) -> list[torch.Tensor]:
    """The extracted algorithm's iterates Ẑ_0..Ẑ_L (float64, common layout, raw-transformer D sign).

    Every regime runs the one UPDATE of :mod:`eaglebook.solver.update` with the layer's coefficients
    (:meth:`eaglebook.regimes.reading.Diagonal.iterate`).
    unconstrained: the UPDATE with (c_AB, c_CD) = (ab, cd) and the transformer's D sign (as
    :func:`eaglebook.solver.layerwise` with ``readout="transformer"``).
    sketched: the same with the layer's projector P_ℓ as the sketch.
    distributed: every machine ν updates its own A^ν, B^ν with c_AB and its copies of C, D with
    c_CD·A^ν A^νᵀ C^ν + a1·b·Σ_{μ≠ν} A^μ A^μᵀ C^μ (D likewise with B^μ); the common layout averages
    the copies.  ``al`` defaults to :func:`alphas` of the model.
    """
    check_model(model)
    check_task(task, model)
    al = alphas(model) if al is None else al
    Z = as_batch("Z0", Z0, task)
    A, B, C, D = tasks.split(Z, task)
    return [tasks.assemble(*it) for it in model.rg.reading.iterate(model, A, B, C, D, al)]   # see eaglebook.regimes


@dataclass(frozen=True, eq=False)
class Fidelity:
    """Table 1: per layer ℓ = 0..L (arrays of length L+1), batch statistics of
    e_ℓ = ‖Z_ℓ − Ẑ_ℓ‖_F² / #entries(Z) between the transformer and the extracted algorithm.

    ``mean`` (the paper's number), ``median``; ``block_mean``: dict 'A', 'B', 'C', 'D' → the batch mean
    of that block's squared error divided by #entries(Z) (so the four add up to ``mean``);
    ``gauge_relative``: dict 'A', 'AAt', 'BAt' → batch medians of the
    relative errors ‖A_ℓ − Â_ℓ‖_F²/‖A_ℓ‖_F², ‖A_ℓA_ℓᵀ − Â_ℓÂ_ℓᵀ‖_F²/‖A_ℓA_ℓᵀ‖_F² and the same for
    B_ℓA_ℓᵀ: the products are invariant to the gauge A → AQ, B → BQ (Q orthogonal), which leaves
    every C/D update unchanged, so 'AAt' ≪ 'A' means the A-block mismatch is mostly gauge.  ``mse_model`` / ``mse_extracted``: not filled
    here (None) unless ``X_clean`` is given: test MSE (mean, median) of both read-outs at layer L.
    """
    mean: np.ndarray
    median: np.ndarray
    block_mean: dict[str, np.ndarray]
    gauge_relative: dict[str, np.ndarray]
    mse_model: dict[str, float] | None = None
    mse_extracted: dict[str, float] | None = None


def fidelity(model: LinearTransformer, X_obs, task: TaskConfig, *, al: Alphas | None = None,
             X_clean=None) -> Fidelity:
    """Per-layer fidelity of the extracted algorithm to the transformer (Table 1), float64.

    The transformer's activations (:meth:`LinearTransformer.activations`, common layout) are compared
    with :func:`extracted_iterates` run on the same prompt (built from ``X_obs``) with the
    coefficients read from the weights (``al``, default :func:`alphas`; pass the α's of a
    :func:`quantized_model` to use quantised weights).  D blocks are compared raw (transformer sign).
    """
    check_model(model)
    check_task(task, model)
    Z0 = tasks.prompt(as_batch("X_obs", X_obs, task), task)
    with torch.no_grad():
        acts = model64(model).activations(Z0)
    ext = extracted_iterates(model, Z0, task, al=al)
    N = Z0.shape[-1] * Z0.shape[-2]
    mean, med = [], []
    blocks = {k: [] for k in "ABCD"}
    gauge = {"A": [], "AAt": [], "BAt": []}

    def relmed(x, ref):
        den = ref.square().sum((-1, -2))
        r = ((x - ref).square().sum((-1, -2)) / torch.where(den > 0, den, torch.ones_like(den))).numpy()
        return float(np.median(np.where(np.isnan(r), np.inf, r)))

    for Zt, Ze in zip(acts, ext):
        At, Bt = tasks.split(Zt, task)[:2]
        Ae, Be = tasks.split(Ze, task)[:2]
        gauge["A"].append(relmed(Ae, At))
        gauge["AAt"].append(relmed(Ae @ Ae.mT, At @ At.mT))
        gauge["BAt"].append(relmed(Be @ Ae.mT, Bt @ At.mT))
        E = (Zt - Ze).square()
        per = E.sum((-1, -2)) / N
        mean.append(float(per.mean()))
        med.append(float(np.median(np.where(np.isnan(per.numpy()), np.inf, per.numpy()))))
        for k, blk in zip("ABCD", tasks.split(E, task)):
            blocks[k].append(float((blk.sum((-1, -2)) / N).mean()))
    extra = {}
    if X_clean is not None:
        Xc = as_batch("X_clean", X_clean, task)
        d, n = task.d, task.n
        extra["mse_model"] = {k: v for k, v in mse_stats(-acts[-1][:, d:, n:], Xc, task).items() if k != "per_sample"}
        extra["mse_extracted"] = {k: v for k, v in mse_stats(-ext[-1][:, d:, n:], Xc, task).items() if k != "per_sample"}
    return Fidelity(np.asarray(mean), np.asarray(med), {k: np.asarray(v) for k, v in blocks.items()},
                    {k: np.asarray(v) for k, v in gauge.items()}, **extra)

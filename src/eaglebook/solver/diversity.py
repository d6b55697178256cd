"""The paper's Definition 1: the diversity index α of the machines' ranges in the distributed regime.

α is an *analysis* quantity (it uses an SVD of each block and an eigen-decomposition of the mean
projector); the solvers never compute it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from .._arrays import check_finite, to_tensor
from .eagle import as_blocks

__all__ = ["diversity_index"]


def diversity_index(A_blocks: Sequence, *, rtol: float | None = None) -> float:
    """The paper's Definition 1: α = smallest positive eigenvalue of (1/M) Σ_μ P_μ.

    P_μ is the orthogonal projector onto range(A^μ) (numerical rank with relative cut-off ``rtol``,
    default max(d, n_μ)·eps, computed in float64).  α = 1 when every machine sees the whole joint
    range; small α (heavily overlapping ranges that only together span it) slows distributed EAGLE
    (Theorem 2: about α⁻¹·log(1/ε) iterations after the burn-in).  Single matrices only (no batch).
    """
    blocks = as_blocks("A_blocks", A_blocks)
    Ps = []
    for mu, Am in enumerate(blocks):
        a = to_tensor(f"A_blocks[{mu}]", Am)
        if a.ndim != 2:
            raise ValueError(f"argument A_blocks[{mu}] must be a d×n_μ matrix, got shape {tuple(a.shape)}")
        check_finite(f"A_blocks[{mu}]", a)
        a = a.detach().cpu().to(torch.float64).numpy()
        if a.shape[0] != Ps[0].shape[0] if Ps else False:
            raise ValueError(f"argument A_blocks[{mu}] has {a.shape[0]} rows but A_blocks[0] has {Ps[0].shape[0]}")
        U, sv, _ = np.linalg.svd(a, full_matrices=False)
        cut = (rtol if rtol is not None else max(a.shape) * np.finfo(np.float64).eps) * (sv[0] if sv.size else 0)
        U = U[:, sv > cut] if sv.size and sv[0] > 0 else U[:, :0]
        Ps.append(U @ U.T)
    ev = np.linalg.eigvalsh(sum(Ps) / len(Ps))
    pos = ev[ev > 1e-10]
    return float(pos.min()) if pos.size else 0.0

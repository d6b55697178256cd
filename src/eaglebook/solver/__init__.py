"""The solvers: EAGLE (Algorithm 1) in its three regimes, built on one UPDATE (:mod:`.update`).

This package depends only on the array layer (``eaglebook._arrays``), NumPy, SciPy and torch: never on
the task generator, the model or the training code (an import contract in ``pyproject.toml``,
checked by the test suite).
"""

from .bench import bench_floor  # noqa: E402  (after .eagle, which it uses)
from .eagle import (DEFAULT_TOL, POWER_MARGIN, RESCALE_BOUNDS, STATUSES, Iterate, Result, diversity_index, iterate, layerwise, solve,
                    solve_distributed, split_columns, update)

__all__ = ["Result", "Iterate", "update", "iterate", "solve", "solve_distributed", "layerwise",
           "split_columns", "diversity_index", "DEFAULT_TOL", "RESCALE_BOUNDS", "POWER_MARGIN",
           "STATUSES", "bench_floor"]

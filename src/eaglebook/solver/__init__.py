"""The solvers: EAGLE (Algorithm 1) in its three regimes, built on one UPDATE (:mod:`.update`), one
per-machine step (:mod:`.machine`), one stopping rule (:mod:`.stopping`) and one round loop
(:mod:`.engine`) for every transport; the baselines it is compared with (:mod:`.baselines`).

This package depends only on the array layer (``eaglebook._arrays``; its command lines also on
``eaglebook._cli``, which imports nothing of the package), NumPy, SciPy and torch: never on
the task generator, the model or the training code (an import contract in ``pyproject.toml``,
checked by the test suite).
"""

from .certify import CERTIFY
from .dgd import solve_dcg, solve_dgd
from .diversity import diversity_index
from .eagle import (DEFAULT_TOL, POWER_MARGIN, RESCALE_BOUNDS, Iterate, Result, iterate, solve, solve_distributed,
                    update)
from .layerwise import layerwise
from .lstsq import LstsqResult, lstsq
from .status import EAGLE_STATUSES, MEANINGS, STATUSES
from .._arrays import split_columns

__all__ = ["Result", "Iterate", "update", "iterate", "solve", "solve_distributed", "lstsq", "LstsqResult",
           "layerwise", "split_columns", "diversity_index", "DEFAULT_TOL", "RESCALE_BOUNDS", "POWER_MARGIN",
           "STATUSES", "EAGLE_STATUSES", "MEANINGS", "CERTIFY", "bench_floor", "solve_dgd", "solve_dcg"]


def __getattr__(name):
    # imported on first use, so that `python -m eaglebook.solver.bench` does not find the module imported already
    if name == "bench_floor":
        from .bench import bench_floor
        return bench_floor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

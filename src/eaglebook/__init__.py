"""eaglebook: an executable reproduction of *Linear Transformers Implicitly Discover Unified
Numerical Algorithms* (Lutz, Gangrade, Daneshmand, Saligrama; NeurIPS 2025).

The user-facing solver API is re-exported here::

    import eaglebook
    res = eaglebook.solve(A, B, C)                     # D ≈ B A^† C, with per-iteration diagnostics
    res = eaglebook.solve(A, B, C, sketch=r)           # sketched: r random columns per iteration
    res = eaglebook.solve_distributed([A1, A2], [B1, B2], C)   # column blocks on M machines
    eaglebook.baselines.lsmr(A, B, C, reference=D)     # the baselines of chapter 7, with one common trace

The names are imported lazily, so that tools which only need a submodule (papermill's reader, the nbval
plugin) do not pay for importing torch.
"""

__version__ = "0.2.0"

_SOLVER = ("solve", "solve_distributed", "iterate", "layerwise", "update", "Result", "Iterate",
          "split_columns", "diversity_index")

__all__ = ["__version__", *_SOLVER]


def __getattr__(name):
    if name == "baselines":   # the solvers EAGLE is compared with (chapter 7)
        from .solver import baselines
        return baselines
    if name in _SOLVER:
        from . import solver
        return getattr(solver, name)
    raise AttributeError(f"module 'eaglebook' has no attribute {name!r}")

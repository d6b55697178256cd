"""eaglebook: an executable reproduction of *Linear Transformers Implicitly Discover Unified
Numerical Algorithms* (Lutz, Gangrade, Daneshmand, Saligrama; NeurIPS 2025).

The user-facing solver API is re-exported here::

    import eaglebook
    res = eaglebook.solve(A, B, C)                     # D ≈ B A^† C, with per-iteration diagnostics
    res = eaglebook.solve(A, B, C, sketch=r)           # sketched: r random columns per iteration
    res = eaglebook.solve_distributed(*eaglebook.split_columns(A, B, 3), C)   # column blocks on M machines
    sol = eaglebook.lstsq(A, b)                        # least squares: the minimum-norm x = A^† b
    eaglebook.baselines.lsmr(A, B, C, reference=D)     # the baselines of chapter 7, with one common trace

Modules: :mod:`eaglebook.solver` (EAGLE, its engine and certificates), :mod:`eaglebook.baselines`
(the solvers EAGLE is compared with), :mod:`eaglebook.distributed` (one process per machine, torchrun).
The package needs only NumPy, SciPy, torch and tqdm; the book's toolchain is the ``eaglebook[book]``
extra.  The names are imported lazily, so that tools which only need a submodule (papermill's reader,
the nbval plugin) do not pay for importing torch.
"""

__version__ = "0.3.0"

_SOLVER = ("solve", "solve_distributed", "lstsq", "iterate", "layerwise", "update", "Result", "LstsqResult",
           "Iterate", "split_columns", "diversity_index", "STATUSES")

__all__ = ["__version__", "baselines", *_SOLVER]


def __getattr__(name):
    if name in ("baselines", "solver", "distributed"):   # modules: import them by path (no recursion)
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name in _SOLVER:
        from . import solver
        return getattr(solver, name)
    raise AttributeError(f"module 'eaglebook' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))

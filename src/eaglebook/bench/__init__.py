"""Benchmarks: ``python -m eaglebook.bench train|centralized|sketched|real|ablations|grid``.

* ``train`` (:mod:`.train`): ms per training step against its matrix-product floor.
* ``centralized``, ``sketched``, ``real``, ``ablations`` (:mod:`.harness`): EAGLE against the solvers
  people use (``eaglebook.solver.baselines``), the paper's §5.1, §5.3, §5.4 and App. E.3; ``--json out.json``
  writes machine-readable results.  :mod:`.realdata` loads Matrix Market files and SciPy's HB/illc1850.
"""

__all__ = ["CASES", "bench_train", "main"]


def __getattr__(name):
    # imported on first use: `python -m eaglebook.bench PART --help` and its input errors need no torch
    if name in ("CASES", "bench_train"):
        from . import train
        return getattr(train, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv=None) -> None:
    from .__main__ import main as _main
    _main(argv)

"""The solvers EAGLE is compared with (the paper's §5 and App. E.1), with one common trace:
``from eaglebook.baselines import lsmr``.  The implementation is :mod:`eaglebook.solver.baselines`."""

from .solver.baselines import *  # noqa: F401,F403  (the public names, listed in its __all__)
from .solver.baselines import __all__  # noqa: F401

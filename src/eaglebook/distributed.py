"""Distributed EAGLE for real, one process per machine: ``python -m eaglebook.distributed`` / torchrun.

The solver lives in :mod:`eaglebook.solver.distributed` (it reads a problem from a ``.npz`` file); this
module adds a generated test problem (``eaglebook.tasks.make_problem``) to its command line::

    torchrun --nproc-per-node 3 -m eaglebook.distributed --cols 240 --rows 240 --rank 40 --seed 0 --out out.npz
    torchrun --nproc-per-node 3 -m eaglebook.distributed --input problem.npz --out out.npz

Every process generates the same problem from the seed and keeps only its own column block (for real
data, give per-machine blocks A_μ, B_μ in the ``.npz``: each process reads only its own).  On a cluster
only the launcher changes: ``torchrun --nnodes N --nproc-per-node K --rdzv-backend c10d
--rdzv-endpoint HOST:PORT -m eaglebook.distributed …`` on every node, ``--backend nccl`` on GPUs.
"""

from __future__ import annotations

import sys

import numpy as np

from . import tasks
from ._arrays import machine_edges
from .solver.distributed import (DistributedError, DistributedResult, main as _main, run_local, solve_serial,
                                 tcp_bytes_sent)

__all__ = ["run_local", "solve_serial", "DistributedResult", "DistributedError", "tcp_bytes_sent", "main"]


def _args(p):
    g = p.add_argument_group("generated problem (instead of --input)")
    # not --n / --d: torchrun reads any abbreviation of its own options (--nnodes, ...) before the module's
    g.add_argument("--cols", type=int, default=240, help="n, the columns of A (split over the processes)")
    g.add_argument("--rows", type=int, default=240, help="d, the rows of A")
    g.add_argument("--rank", type=int, default=None, help="rank of A (default min(n, d))")
    g.add_argument("--kappa", type=float, default=1e3)
    g.add_argument("--seed", type=int, default=0)


def _problem(args, rank, world):
    A, B, C, _ = tasks.make_problem(args.cols, args.rows, rank=args.rank, kappa=args.kappa,
                                    rng=np.random.default_rng(args.seed))
    lo, hi = machine_edges(args.cols, world)[rank:rank + 2]
    ref = tasks.nystrom(A, B, C) if rank == 0 else None
    return A[:, lo:hi].copy(), B[:, lo:hi].copy(), C, ref


def main(argv=None) -> int:
    return _main(argv, make_problem=_problem, extra_args=_args)


if __name__ == "__main__":
    sys.exit(main())

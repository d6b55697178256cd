"""Distributed EAGLE for real, one process per machine: ``torchrun … -m eaglebook.distributed``.

The solver lives in :mod:`eaglebook.solver.distributed` (it reads a problem from a ``.npz`` file); this
module adds a generated test problem (``eaglebook.tasks.make_problem``) to its command line::

    torchrun --nproc-per-node 3 -m eaglebook.distributed --cols 240 --rows 240 --rank 40 --seed 0 --out out.npz
    torchrun --nproc-per-node 3 -m eaglebook.distributed --input problem.npz --out out.npz

Every process generates the same problem from the seed and keeps only its own column block (for real
data, give per-machine blocks A_μ, B_μ in the ``.npz``: each process reads only its own).  On a cluster
only the launcher changes: ``torchrun --nnodes N --nproc-per-node K --rdzv-backend c10d
--rdzv-endpoint HOST:PORT -m eaglebook.distributed …`` on every node, ``--backend nccl`` on GPUs.  From
Python, :func:`run_local` starts the processes itself.  Bad input (no torchrun, a bad ``.npz``, options out
of range, an ``--out`` folder that does not exist) prints one line and exits with status 2, before any process
joins; under torchrun every process prints it and torchrun adds its own failure summary (exit status 1).
``python -m eaglebook.distributed --check 3 --cols 240 ... --out out.npz`` checks all of it for 3 processes
without torchrun.
"""

from __future__ import annotations

import sys

import numpy as np

from . import tasks
from ._cli import integer, number
from ._arrays import machine_edges
from .solver.distributed import (CLIError, DistributedError, DistributedResult, run_local, solve_serial,
                                 tcp_bytes_sent)
from .solver.distributed import main as solver_main

__all__ = ["run_local", "solve_serial", "DistributedResult", "DistributedError", "tcp_bytes_sent", "main"]


def _args(p):
    g = p.add_argument_group("generated problem (instead of --input)")
    # not --n / --d: torchrun reads any abbreviation of its own options (--nnodes, ...) before the module's
    g.add_argument("--cols", type=integer(1), default=240, help="n, the columns of A (split over the processes; "
                                                                "at least one each)")
    g.add_argument("--rows", type=integer(1), default=240, help="d, the rows of A")
    g.add_argument("--rank", type=integer(1), default=None, help="rank of A (default min(n, d))")
    g.add_argument("--kappa", type=number(1), default=1e3, help="condition number of A (>= 1)")
    g.add_argument("--seed", type=integer(0), default=0, help="seed of the generated problem (default 0)")


def _problem(args, rank, world):
    if args.cols < world:
        raise CLIError(f"--cols {args.cols}: need at least one column per process ({world} processes)")
    if args.rows < 1:
        raise CLIError(f"--rows {args.rows} must be >= 1")
    if args.rank is not None and not 1 <= args.rank <= min(args.cols, args.rows):
        raise CLIError(f"--rank {args.rank} must be between 1 and min(--cols, --rows) = {min(args.cols, args.rows)}")
    if not args.kappa >= 1:
        raise CLIError(f"--kappa {args.kappa} must be >= 1")
    if args.seed < 0:
        raise CLIError(f"--seed {args.seed} must be >= 0")
    A, B, C, _ = tasks.make_problem(args.cols, args.rows, rank=args.rank, kappa=args.kappa,
                                    rng=np.random.default_rng(args.seed))
    lo, hi = machine_edges(args.cols, world)[rank:rank + 2]
    ref = tasks.nystrom(A, B, C) if rank == 0 else None
    return A[:, lo:hi].copy(), B[:, lo:hi].copy(), C, ref


def main(argv=None) -> int:
    return solver_main(argv, make_problem=_problem, extra_args=_args, module="eaglebook.distributed")


if __name__ == "__main__":
    sys.exit(main())

"""Bad command lines (issue 34): each is one line on standard error and exit status 2, before any work.

Every command here crashed (a traceback: IndexError, ZeroDivisionError, ValueError, AttributeError,
FileNotFoundError after the whole run), was accepted (κ < 1, a target >= 1, a shard 3/2, a missing cache to
ship from), printed a usage block or a runpy warning beside its error, or ran a 40 s benchmark on ``--help``
before the issue was resolved.  Each runs as its own subprocess (``sys.executable -m ...``, this checkout's
``src`` first on PYTHONPATH); they run four at a time, and each must fail before any expensive work (the
subprocess time-out is 60 s, far below the runs they used to start).
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
TORCHRUN_ENV = dict(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="1")
NO_DIR = "/nonexistent_dir_eaglebook_test"


def _env(extra=None):
    e = {k: v for k, v in os.environ.items()
         if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "EAGLEBOOK_PROFILE")}
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src")] + ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    e["CUDA_VISIBLE_DEVICES"] = ""          # `--backend nccl` must meet a machine without CUDA, even on a GPU host
    e.update(extra or {})
    return e


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "zero.mtx").write_text("%%MatrixMarket matrix coordinate real general\n3 3 0\n")
    (d / "eye.mtx").write_text("%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1.0\n2 2 1.0\n3 3 1.0\n")
    g = np.random.default_rng(0)
    A = g.standard_normal((6, 8))
    np.savez(d / "p.npz", A=A, B=g.standard_normal((2, 8)), C=g.standard_normal((6, 2)))
    (d / "folder").mkdir()
    return d


# (id, module and arguments, extra environment, words the one line must contain); {d} is the files' folder
BAD = [
    ("real-zero-matrix", ["eaglebook.bench", "real", "--matrix", "{d}/zero.mtx"], None,
     ["zero.mtx", "is zero (numerical rank 0)"]),
    ("real-no-row-for-B", ["eaglebook.bench", "real", "--matrix", "{d}/eye.mtx"], None,
     ["eye.mtx", "no row is left for B"]),
    ("real-missing-matrix", ["eaglebook.bench", "real", "--matrix", "{d}/missing.mtx"], None, ["no such file"]),
    ("real-max-cols-with-matrix", ["eaglebook.bench", "real", "--matrix", "{d}/eye.mtx", "--max-cols", "2"], None,
     ["--max-cols", "--matrix"]),
    ("json-no-folder-centralized", ["eaglebook.bench", "centralized", "--json", NO_DIR + "/x.json"], None,
     ["--json", "does not exist"]),
    ("json-no-folder-floor", ["eaglebook.bench", "floor", "--json", NO_DIR + "/x.json"], None,
     ["--json", "does not exist"]),
    ("json-is-a-folder-train", ["eaglebook.bench", "train", "--json", "{d}/folder"], None, ["is a folder"]),
    ("floor-sketch-n-1", ["eaglebook.bench", "floor", "--sketch-n", "1"], None,
     ["argument --sketch-n: must be an integer >= 8, got '1'"]),
    ("floor-machines-above-n", ["eaglebook.bench", "floor", "--n", "8", "--machines", "9"], None,
     ["machines=9", "n = 8"]),
    ("floor-kappa-below-1", ["eaglebook.bench", "floor", "--kappa", "0.5"], None,
     ["argument --kappa: must be a number >= 1, got '0.5'"]),
    ("floor-n-not-an-integer", ["eaglebook.bench", "floor", "--n", "abc"], None,
     ["argument --n: must be an integer >= 8, got 'abc'"]),
    ("train-steps-0", ["eaglebook.bench", "train", "--steps", "0"], None,
     ["argument --steps: must be an integer >= 1, got '0'"]),
    ("grid-target-2", ["eaglebook.bench", "grid", "--target", "2"], None,
     ["argument --target: must be a number > 0 and < 1, got '2'"]),
    ("sketched-kappa-below-1", ["eaglebook.bench", "sketched", "--kappa", "0.9"], None, ["--kappa", ">= 1"]),
    ("seed-negative", ["eaglebook.bench", "ablations", "--seed", "-1"], None, ["--seed", ">= 0"]),
    ("no-part", ["eaglebook.bench"], None, ["required: PART"]),
    ("profile-env-bogus", ["eaglebook.bench", "centralized"], {"EAGLEBOOK_PROFILE": "bogus"},
     ["EAGLEBOOK_PROFILE='bogus'", "paper, ci"]),
    ("solver-bench-kappa", ["eaglebook.solver.bench", "--kappa", "0.5"], None, ["--kappa", ">= 1"]),
    ("distributed-out-no-folder", ["eaglebook.solver.distributed", "--input", "{d}/p.npz", "--out",
                                   NO_DIR + "/o.npz"], TORCHRUN_ENV, ["--out", "does not exist"]),
    ("distributed-out-not-npz", ["eaglebook.solver.distributed", "--input", "{d}/p.npz", "--out", "{d}/folder"],
     TORCHRUN_ENV, ["must name a .npz file"]),
    ("distributed-nccl-without-cuda", ["eaglebook.solver.distributed", "--input", "{d}/p.npz", "--out", "{d}/o.npz",
                                       "--backend", "nccl"], TORCHRUN_ENV, ["nccl needs CUDA", "gloo"]),
    ("distributed-max-iter-abc", ["eaglebook.distributed", "--out", "{d}/o.npz", "--max-iter", "abc"], TORCHRUN_ENV,
     ["eaglebook.distributed: error: argument --max-iter: must be an integer >= 1, got 'abc'"]),
    ("distributed-kappa-below-1", ["eaglebook.distributed", "--out", "{d}/o.npz", "--kappa", "0.5"], TORCHRUN_ENV,
     ["--kappa", ">= 1"]),
    ("distributed-rank-1-of-2-tags-its-line", ["eaglebook.distributed", "--out", NO_DIR + "/o.npz", "--cols", "1"],
     dict(TORCHRUN_ENV, RANK="1", WORLD_SIZE="2"), ["[rank 1 of 2]", "--cols 1"]),
    ("icl-training-shard-out-of-range", ["eaglebook.icl.training", "--shard", "3/2"], None,
     ["argument --shard: must be i/k with integers 0 <= i < k, got '3/2'"]),
    ("icl-training-shard-not-a-fraction", ["eaglebook.icl.training", "--shard", "x"], None, ["--shard", "got 'x'"]),
    ("cache-ship-from-missing", ["eaglebook.cache", "ship", "--from", NO_DIR], None, ["--from", "no folder"]),
    ("variants-profile-env-bogus", ["eaglebook.variants"], {"EAGLEBOOK_PROFILE": "bogus"},
     ["EAGLEBOOK_PROFILE='bogus'", "paper, ci"]),
    ("distributed-check-too-few-columns", ["eaglebook.distributed", "--check", "3", "--cols", "2", "--out",
                                           "{d}/o.npz"], None, ["--cols 2", "3 processes"]),
]
# commands that must succeed (the checks refuse no good input); (id, arguments, environment, words on stdout)
GOOD = [
    ("solver-bench-help", ["eaglebook.solver.bench", "--help"], None, ["usage: python -m eaglebook.solver.bench"]),
    ("distributed-check", ["eaglebook.solver.distributed", "--check", "2", "--input", "{d}/p.npz", "--out",
                           "{d}/o.npz"], None, ["fine for 2 process(es)"]),
    ("floor-tiny-with-json", ["eaglebook.bench", "floor", "--n", "8", "--repeats", "1", "--json", "{d}/f.json"], None,
     ["default solve at n = 8"]),
]


def _run(args, files, extra):
    """(the completed process, its wall time); a command still running after 60 s (it started the work it should
    have refused) is killed and reported as exit status None."""
    cmd = [sys.executable, "-m", *(a.format(d=files) for a in args)]
    t = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=_env(extra), cwd=files)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        r = subprocess.CompletedProcess(cmd, None, out, f"still running after {e.timeout} s")
    return r, time.perf_counter() - t


@pytest.fixture(scope="module")
def results(files):
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futs = {name: pool.submit(_run, args, files, extra) for name, args, extra, _ in BAD + GOOD}
        return {name: f.result() for name, f in futs.items()}


@pytest.mark.parametrize("name,args,extra,words", BAD, ids=[b[0] for b in BAD])
def test_bad_command_is_one_line_and_exit_2(results, name, args, extra, words):
    r, wall = results[name]
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert ": error: " in lines[0] and all(w in lines[0] for w in words), lines[0]
    assert r.stdout == "", r.stdout[-500:]              # nothing ran


@pytest.mark.parametrize("name,args,extra,words", GOOD, ids=[g[0] for g in GOOD])
def test_good_command_still_runs(results, files, name, args, extra, words):
    r, wall = results[name]
    assert r.returncode == 0, r.stderr[-2000:]
    assert all(w in r.stdout for w in words), r.stdout[-2000:]
    if name == "floor-tiny-with-json":
        assert (files / "f.json").stat().st_size > 0
    if name == "solver-bench-help":
        assert "--sketch-n" in r.stdout and "default solve at n =" not in r.stdout   # --help runs no benchmark


def test_under_torchrun_every_rank_prints_its_line_and_torchrun_exits_1(files):
    """What the README and --help describe: torchrun's ChildFailedError summary follows the ranks' lines."""
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("no torchrun next to the interpreter")
    r = subprocess.run([str(torchrun), "--standalone", "--nproc-per-node", "2", "-m", "eaglebook.distributed",
                        "--kappa", "0.5", "--out", str(files / "o.npz")], capture_output=True, text=True, timeout=60,
                       env=_env({"OMP_NUM_THREADS": "1"}), cwd=files)
    ours = [line for line in r.stderr.splitlines() if line.startswith("eaglebook.distributed: error:")]
    assert r.returncode == 1, r.stderr[-3000:]
    assert sorted(line.split("]")[0] for line in ours) == ["eaglebook.distributed: error: [rank 0 of 2",
                                                           "eaglebook.distributed: error: [rank 1 of 2"], r.stderr
    assert all("--kappa" in line and ">= 1" in line for line in ours)
    assert "ChildFailedError" in r.stderr and "exitcode  : 2" in r.stderr

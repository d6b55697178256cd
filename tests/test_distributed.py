"""Distributed EAGLE on torch.distributed: equal to the simulation, bytes counted, faults end cleanly."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import eaglebook
from eaglebook import tasks
from eaglebook.solver import distributed as dd
from eaglebook.solver import solve_dgd

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def problem():
    A, B, C, _ = tasks.make_problem(36, 30, rank=6, kappa=1e3, rng=np.random.default_rng(0))
    Ab, Bb = eaglebook.split_columns(A, B, 3)
    return Ab, Bb, C, tasks.nystrom(A, B, C)


def _port_closed(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A private temporary folder for the run: it must be empty afterwards."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return d


def simulated_D(Ab, Bb, C, rounds, **kw):
    """D after ``rounds`` rounds of the single-process simulation (Algorithm 1's iterates, no stopping rule)."""
    it = None
    for it in eaglebook.iterate(list(Ab), list(Bb), C, max_iter=rounds, **kw):
        pass
    return it.D


def assert_same_run(res, sim, rtol):
    """The multi-process engine and solve_distributed: same rounds, same status, D to round-off."""
    assert (res.iterations, res.status) == (sim.iterations, sim.status)
    assert np.abs(res.D - sim.D).max() <= rtol * np.abs(sim.D).max()


def test_serial_transport_equals_the_simulation(problem):
    Ab, Bb, C, ref = problem
    ser = dd.solve_serial(Ab, Bb, C, reference=ref)
    sim = eaglebook.solve_distributed(Ab, Bb, C, reference=ref)
    assert ser.status == "converged" and ser.rel_error[-1] < 1e-10 and ser.checks >= 1
    assert_same_run(ser, sim, 1e-13)
    assert np.abs(ser.D - simulated_D(Ab, Bb, C, ser.iterations)).max() <= 1e-13 * np.abs(ser.D).max()
    # one all_reduce per round; one gather at the start (column counts, frame exponents), one reduction for the
    # test column, one small reduction per check; no block is gathered
    assert ser.gathers == 1 and ser.collectives == ser.iterations + 1 + 1 + ser.checks
    d, dp, n_prime = C.shape[0], Bb[0].shape[0], C.shape[1]
    assert ser.floats_per_round == (d + dp) * n_prime == sim.floats_per_round
    assert ser.test_floats_per_round == d + dp == sim.test_floats_per_round
    assert ser.header_floats == dd.header_floats(3) == 2 * 3 + 1
    assert ser.payload_bytes_per_round == 8 * ((d + dp) * (n_prime + 1) + ser.header_floats)


@pytest.mark.parametrize("kw", [dict(max_iter=5), dict(rho="power", max_iter=40), dict(rho="exact"),
                                dict(rho="exact", eta=1.0), dict(rho="power", tol=1e-6)])
def test_serial_stops_like_the_simulation(problem, kw):
    """Every stopping path (max_iter, converged, the stall of η = 1) is taken in the same round."""
    Ab, Bb, C, ref = problem
    assert_same_run(dd.solve_serial(Ab, Bb, C, **kw), eaglebook.solve_distributed(Ab, Bb, C, **kw), 1e-13)


def test_serial_reports_an_unrepresentable_completion_like_the_simulation():
    """float16 data whose completion exceeds float16's range: out_of_range in both engines (exact integer
    data, so that float16 rounding leaves B in A's row space)."""
    rng = np.random.default_rng(0)
    A, W, C = (rng.integers(-k, k + 1, shape).astype(np.float64) for k, shape in ((3, (8, 12)), (2, (2, 8)), (3, (8, 2))))
    B = W @ A                                             # consistent; D = B A^† C = W C exactly
    split = lambda M, s: [(M[:, 4 * i:4 * i + 4] * s).astype(np.float16) for i in range(3)]
    for s, status in ((256, "out_of_range"), (1, "converged")):     # |D| up to 2^16 |W C| > 65504, or |W C|
        ser = dd.solve_serial(split(A, 1), split(B, s), (C * s).astype(np.float16))
        sim = eaglebook.solve_distributed(split(A, 1), split(B, s), (C * s).astype(np.float16))
        assert (ser.status, ser.D.dtype) == (status, np.float16)
        assert (ser.iterations, ser.status) == (sim.iterations, sim.status)
    assert np.array_equal(ser.D.astype(np.float64), W @ C)


def test_serial_stops_like_the_simulation_on_hard_data():
    """Rank-deficient noisy data (rank_deficient), ill-conditioning (stalled), a batch with mixed statuses."""
    rng = np.random.default_rng(4)
    A, B, C, _ = tasks.make_problem(36, 30, rank=6, kappa=1e2, rng=rng)
    B = B + 1e-3 * rng.standard_normal(B.shape)          # B leaves A's row space: inconsistent data
    Ab, Bb = eaglebook.split_columns(A, B, 3)
    sim = eaglebook.solve_distributed(Ab, Bb, C)
    assert sim.status == "rank_deficient"
    assert_same_run(dd.solve_serial(Ab, Bb, C), sim, 1e-13)
    A, B, C, _ = tasks.make_problem(36, 30, rank=30, kappa=1e3, rng=np.random.default_rng(5))
    Ab, Bb = eaglebook.split_columns(A, B, 3)
    sim = eaglebook.solve_distributed(Ab, Bb, C, rho="exact")
    assert sim.status == "stalled"
    assert_same_run(dd.solve_serial(Ab, Bb, C, rho="exact"), sim, 1e-13)
    probs = [tasks.make_problem(30, 24, rank=r, kappa=k, rng=rng) for r, k in ((6, 1e2), (24, 1e3), (12, 1e5))]
    A, B, C = (np.stack([p[j] for p in probs]) for j in range(3))
    Ab, Bb = eaglebook.split_columns(A, B, 3)
    sim = eaglebook.solve_distributed(Ab, Bb, C, max_iter=300)
    ser = dd.solve_serial(Ab, Bb, C, max_iter=300)
    assert_same_run(ser, sim, 1e-13)
    assert list(ser.statuses) == list(sim.statuses) and len(set(sim.statuses)) > 1


def test_freezing_keeps_the_iterations(problem):
    Ab, Bb, C, ref = tasks.diverse_problem(24, 3, 0.35, r=6, kappa=1e2, rng=np.random.default_rng(1))
    plain = dd.solve_serial(Ab, Bb, C, reference=ref)
    frozen = dd.solve_serial(Ab, Bb, C, reference=ref, freeze_tol=1e-10)
    assert frozen.frozen_at is not None and frozen.frozen_at < plain.iterations
    assert abs(frozen.iterations - plain.iterations) <= 1 and frozen.rel_error[-1] < 1e-9


def test_diverse_problem_has_the_requested_alpha():
    for a in (1.0, 0.6, 0.35, 0.01):
        Ab, Bb, C, D = tasks.diverse_problem(30, 3, a, r=7, kappa=1e3, rng=np.random.default_rng(2))
        assert eaglebook.diversity_index(Ab) == pytest.approx(a, rel=1e-6)
        assert np.linalg.cond(Ab[0]) == pytest.approx(1e3, rel=1e-6)
        assert np.allclose(tasks.nystrom(np.hstack(Ab), np.hstack(Bb), C), D, atol=1e-10)
    with pytest.raises(ValueError, match="alpha"):
        tasks.diverse_problem(30, 3, 0.8, r=7, rng=np.random.default_rng(0))
    assert np.mean(tasks.alpha_schedule(0.83, 10)) == pytest.approx(0.833, abs=0.01)


def test_dgd_reaches_the_completion(problem):
    Ab, Bb, C, ref = problem
    Ab, Bb, C, ref = tasks.diverse_problem(24, 3, 1.0, r=6, kappa=10, rng=np.random.default_rng(3))
    g = solve_dgd(Ab, Bb, C, reference=ref, target=1e-8, max_iter=50_000)
    assert g.status == "target" and g.floats_per_round == Bb[0].shape[0] * C.shape[0]


def test_run_local_equals_the_simulation(problem, private_tmp):
    Ab, Bb, C, ref = problem
    res = dd.run_local(Ab, Bb, C, reference=ref, timeout=60)
    assert res.status == "converged"
    assert_same_run(res, eaglebook.solve_distributed(Ab, Bb, C, reference=ref), 1e-12)
    assert res.rel_error[-1] < 1e-10
    d, dp, n_prime = C.shape[0], Bb[0].shape[0], C.shape[1]
    assert res.payload_bytes_per_round == 8 * ((d + dp) * (n_prime + 1) + dd.header_floats(3))
    # no block travels: the gather at the start carries a column count and two exponents per process
    assert res.gathers == 1 and res.collectives == res.iterations + 2 + res.checks
    assert all(g <= 8 * 3 for g in res.gather_bytes)
    assert len(res.wire_bytes_per_round) == 3 and all(w > 0 for w in res.wire_bytes_per_round)
    # a ring all-reduce sends about 2(M−1)/M payloads per process; a few hundred bytes of framing on top
    assert all(w < 4 * res.payload_bytes_per_round for w in res.wire_bytes_per_round)
    assert all(0 <= c <= t for c, t in zip(res.comm_per_round, res.time_per_round))
    assert list(private_tmp.iterdir()) == []


def test_certify_none_sends_the_rounds_only_and_svd_gathers_the_blocks(problem, private_tmp):
    Ab, Bb, C, ref = problem
    res = dd.run_local(Ab, Bb, C, reference=ref, timeout=60, certify="none")
    ser = dd.solve_serial(Ab, Bb, C, reference=ref, certify="none")
    assert res.gathers == ser.gathers == 1                   # the column counts at the start, nothing else
    assert (res.iterations, res.status) == (ser.iterations, ser.status) == (ser.iterations, "converged")
    assert res.rel_error[-1] < 1e-10 and res.collectives == res.iterations + 1 and res.test_floats_per_round == 0
    d, dp, n_prime = C.shape[0], Bb[0].shape[0], C.shape[1]
    assert res.payload_bytes_per_round == 8 * ((d + dp) * n_prime + dd.header_floats(3))   # the paper's budget
    assert all(g <= 8 * 3 for g in res.gather_bytes)
    # certify="svd": each check and the consistency test at the end gather every process's blocks
    svd = dd.run_local(Ab, Bb, C, reference=ref, timeout=60, certify="svd")
    sim = eaglebook.solve_distributed(Ab, Bb, C, reference=ref, certify="svd")
    assert_same_run(svd, sim, 1e-12)
    assert svd.gathers == 1 + svd.checks + 1 and svd.collectives == svd.iterations + svd.gathers
    assert all(g >= 8 * (Ab[mu].size + Bb[mu].size) for mu, g in enumerate(svd.gather_bytes))


def _fault_run(problem, fault, **kw):
    Ab, Bb, C, _ = problem
    t0 = time.monotonic()
    with pytest.raises(dd.DistributedError) as ei:
        dd.run_local(Ab, Bb, C, fault=fault, **kw)
    return ei.value, time.monotonic() - t0


def _no_children_left():
    import multiprocessing as mp
    return mp.active_children() == []


def test_a_worker_killed_mid_run_gives_a_clean_error(problem, private_tmp):
    err, dt = _fault_run(problem, (1, "die", 3), timeout=20)
    assert err.rank == 1 and err.cause == "died"
    assert "rank 1 died" in str(err) and "SIGKILL" in str(err) and "round 3" in str(err)
    assert dt < 25 and _no_children_left() and _port_closed(err.port)
    assert list(private_tmp.iterdir()) == []


def test_a_hung_worker_is_named(problem, private_tmp):
    err, dt = _fault_run(problem, (2, "hang", 2), timeout=20, hang_timeout=3)
    assert err.rank == 2 and err.cause == "hung" and "round 2" in str(err)
    assert dt < 25 and _no_children_left() and _port_closed(err.port)


def test_a_worker_that_never_joins_is_named(problem, private_tmp):
    err, dt = _fault_run(problem, (0, "absent", 0), timeout=20, join_timeout=12)
    assert err.rank == 0 and err.cause == "never joined" and "never joined" in str(err)
    assert dt < 25 and _no_children_left() and _port_closed(err.port)


def test_a_worker_exception_is_reported_with_its_rank(problem):
    err, dt = _fault_run(problem, (1, "raise", 1), timeout=20, join_timeout=90)   # joining is not under test here
    assert err.rank == 1 and err.cause == "error" and "injected failure" in str(err)
    assert _no_children_left()


def test_bad_arguments_fail_before_any_process_starts(problem):
    Ab, Bb, C, _ = problem
    with pytest.raises(ValueError, match="backend"):
        dd.run_local(Ab, Bb, C, backend="mpi")
    with pytest.raises(ValueError, match=r"A_blocks\[1\]"):
        dd.run_local([Ab[0], Ab[1][:-1]], Bb[:2], C)
    assert _no_children_left()


def test_nccl_without_cuda_is_refused_before_any_process_starts(problem, monkeypatch):
    """The workers died with an AttributeError from torch.cuda.set_device on a machine without CUDA."""
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    Ab, Bb, C, _ = problem
    with pytest.raises(ValueError, match=r"^argument backend='nccl' needs CUDA GPUs.*use gloo"):
        dd.run_local(Ab, Bb, C, backend="nccl")
    assert _no_children_left()


def test_torchrun_cli(problem, tmp_path):
    Ab, Bb, C, ref = problem
    inp, out = tmp_path / "p.npz", tmp_path / "out.npz"
    np.savez(inp, A_0=Ab[0], B_0=Bb[0], A_1=np.hstack(Ab[1:]), B_1=np.hstack(Bb[1:]), C=C)
    torchrun = Path(sys.executable).with_name("torchrun")
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    r = subprocess.run([str(torchrun), "--standalone", "--nproc-per-node", "2", "-m", "eaglebook.solver.distributed",
                        "--input", str(inp), "--out", str(out), "--backend", "gloo", "--timeout", "60"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    z = np.load(out)
    sim = eaglebook.solve_distributed([Ab[0], np.hstack(Ab[1:])], [Bb[0], np.hstack(Bb[1:])], C)
    assert (int(z["iterations"]), str(z["status"])) == (sim.iterations, sim.status) == (sim.iterations, "converged")
    assert np.abs(z["D"] - sim.D).max() <= 1e-12 * np.abs(sim.D).max()
    # the module docstring's command: a generated problem (torchrun must not take its options for its own)
    r = subprocess.run([str(torchrun), "--standalone", "--nproc-per-node", "3", "-m", "eaglebook.distributed",
                        "--cols", "36", "--rows", "30", "--rank", "6", "--seed", "0", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    z = np.load(out)
    A, B, C, _ = tasks.make_problem(36, 30, rank=6, kappa=1e3, rng=np.random.default_rng(0))
    sim = eaglebook.solve_distributed(*eaglebook.split_columns(A, B, 3), C)
    assert (int(z["iterations"]), str(z["status"])) == (sim.iterations, sim.status)
    assert np.abs(z["D"] - sim.D).max() <= 1e-12 * np.abs(sim.D).max() and z["rel_error"][-1] < 1e-10

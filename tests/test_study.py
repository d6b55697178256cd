"""python -m eaglebook.study and training on an executor / a Dask cluster (eaglebook.cluster).

The end-to-end test trains two tiny ci configs through the study command twice: on this machine's process
pool, and on a two-worker Dask LocalCluster (loopback only) one of whose workers the test kills while it
trains; the weights must be bit-identical and the verdicts equal.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from eaglebook import beyond, cache, cluster, config, knobsets, study, training

distributed = pytest.importorskip("distributed")   # requirements.txt installs it (the 'cluster' extra)

REPO = Path(__file__).resolve().parents[1]
# Two tiny settings of chapter 11's ci base config (unconstrained, batch 256): a few seconds of training each.
GRID = ["--profile", "ci", "--vary", "layers=1,2", "--set", "steps=600", "--seeds", "1", "--no-progress"]


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLEBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("EAGLEBOOK_SHIPPED", "0")
    monkeypatch.delenv(cluster.SCHEDULER_ENV, raising=False)
    return tmp_path / "cache"


def _entries(root: Path) -> dict[str, Path]:
    d = root / "train"
    return {p.name: p for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")} if d.is_dir() else {}


def _weights(entry: Path) -> dict[str, torch.Tensor]:
    return cache.load_plain(entry / cache.PAYLOAD)["data"]["state_dict"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("args, names", [
    (["--vary", "lyers=2,4"], "lyers"),                       # unknown knob (with a suggestion)
    (["--vary", "layers=0,2"], "layers"),                     # impossible value
    (["--vary", "s=30"], "s=30"),                             # rank above min(n+n', d+d')
    (["--vary", "r=3,x"], "r"),                               # not an integer
    (["--vary", "lr=1e-3,-1"], "lr"),
    (["--regime", "unconstrained", "--vary", "r=3,5"], "r"),  # a knob the regime does not read
    (["--vary", "r=3", "--vary", "machines=2"], "machines"),  # knobs of two regimes
    (["--set", "seeds=2"], "seeds"),
    (["--seeds", "0,0"], "seeds"),
    (["--scheduler", "tcp://nowhere"], "scheduler"),
    (["--vary", "layers=2", "--plot", "out.txt"], "plot"),
])
def test_bad_input_fails_in_one_line_before_training(tmp_cache, capsys, args, names):
    rc = study.main(["--profile", "ci", *args])
    err = capsys.readouterr().err
    assert rc == 2
    assert len(err.strip().splitlines()) == 1, err
    assert names in err and "error" in err
    assert not tmp_cache.exists()                 # nothing trained, nothing written


def test_the_command_line_exits_2_on_an_unknown_knob(tmp_cache):
    r = subprocess.run([sys.executable, "-m", "eaglebook.study", "--profile", "ci", "--vary", "rr=3"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "'rr' is not a knob" in r.stderr


def test_an_unreachable_scheduler_fails_in_one_line(tmp_cache, capsys, monkeypatch):
    monkeypatch.setenv(cluster.TIMEOUT_ENV, "1")
    addr = f"tcp://127.0.0.1:{_free_port()}"
    t0 = time.perf_counter()
    rc = study.main([*GRID, "--scheduler", addr])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert f"cannot reach the Dask scheduler at {addr}" in err
    assert time.perf_counter() - t0 < 60
    assert not _entries(tmp_cache)
    # every chapter's path: trained_all under EAGLEBOOK_SCHEDULER
    monkeypatch.setenv(cluster.SCHEDULER_ENV, addr)
    cfg = study.plan(config.get("ci"), "unconstrained", {}, {"steps": 5}, (0,))[0].cfgs[0]
    with pytest.raises(cluster.SchedulerError, match="cannot reach"):
        training.trained_all([cfg], progress=False)
    monkeypatch.setenv(cluster.SCHEDULER_ENV, "tcp:/127.0.0.1")
    with pytest.raises(ValueError, match="EAGLEBOOK_SCHEDULER"):
        training.trained_all([cfg], progress=False)


# ------------------------------------------------------------------------------------------ plan and test
def test_a_setting_that_is_a_chapter_11_change_is_its_config():
    P = config.get("ci")
    s, = study.plan(P, study.choose_regime(["layers"]), {"layers": [2]}, {}, (0, 1))
    assert list(s.cfgs) == beyond.configs(P, beyond.change("depth2"), [0, 1])   # same cache keys
    assert isinstance(s.change, knobsets.KnobSet) and s.knobs == {"layers": 2} and s.label == "layers=2"
    fixed, = study.plan(P, "unconstrained", {}, {"steps": 7}, (0,))        # --set only: the base setting
    assert fixed.label == "base" and fixed.knobs == {} and fixed.cfgs[0].steps == 7
    assert study.choose_regime(["r", "layers"]) == "sketched"
    assert study.choose_regime(["machines"]) == "distributed"
    assert study.choose_regime([]) == "unconstrained"


def test_the_answer_is_the_declared_test():
    good = {"offdiag_qk": 0.1, "offdiag_vp": 0.2, "eta": 1.1, "gamma": 1.8, "fidelity": 1e-5, "reduction": 40.0}
    assert beyond.answer([good])["answer"] == "yes" and beyond.answer([good])["score"] == 4
    partly = {**good, "fidelity": 1.0}
    assert beyond.answer([partly])["answer"] == "partly"
    no = {**good, "offdiag_qk": 0.9}                        # no structure: no algorithm, whatever else holds
    assert beyond.answer([no]) | {"median": None} == {
        "median": None, "held": {**beyond.tests_held(no)}, "score": 0.0, "verdict": "not reproduced", "answer": "no"}
    # medians over seeds: two good seeds out of three decide
    assert beyond.answer([good, good, no])["answer"] == "yes"
    # the study applies the structure test at the reference's size: the same at n = 18, kinder at n = 36
    big = {**good, "offdiag_qk": 0.5}
    assert beyond.answer([big | {"n": 18.0, "n_prime": 2.0}], sized=True)["answer"] == "no"
    assert beyond.answer([big | {"n": 36.0, "n_prime": 2.0}], sized=True)["answer"] == "yes"
    assert "converted to n = 18, n' = 2" in study.declaration()


# ------------------------------------------------------------------------------------------ executors
def _tiny(seed: int = 0) -> training.TrainConfig:
    cfg = study.plan(config.get("ci"), "unconstrained", {}, {"steps": 30, "batch": 32}, (seed,))[0].cfgs[0]
    return dataclasses.replace(cfg, eval_size=64, eval_every=0)


def test_any_executor_trains_and_this_process_writes_the_cache(tmp_cache):
    cfg = _tiny()
    with cf.ThreadPoolExecutor(1) as ex:
        where = training.train_missing([cfg], executor=ex, progress=False)
    assert where == {cfg: training.THIS_MACHINE}
    entry = cache.entry_dir("train", cfg)
    assert cache.is_valid(entry, cfg)
    ref = training.train(cfg, progress=False)                    # what the local pool's worker computes
    got = _weights(entry)
    assert all(torch.equal(got[k], ref.state_dict[k]) for k in ref.state_dict)
    assert training.train_missing([cfg], progress=False) == {cfg: training.FROM_CACHE}


class _WrongExecutor(cf.Executor):
    """Answers every task with the run of another config (a worker with another eaglebook)."""

    def __init__(self, other):
        self.other = other

    def submit(self, fn, *args, **kwargs):
        f = cf.Future()
        f.set_result(training._train_payload(self.other))
        return f


def test_a_result_for_another_config_is_refused(tmp_cache):
    cfg, other = _tiny(0), _tiny(1)
    with pytest.raises(RuntimeError, match="returned the run of config"):
        training.train_missing([cfg], executor=_WrongExecutor(other), progress=False)
    assert not _entries(tmp_cache)


# ------------------------------------------------------------------------------------------ end to end
def _read(path: Path) -> dict:
    doc = json.loads(path.read_text())
    return {s["label"]: s for s in doc["settings"]}


def _same_numbers(a: dict, b: dict) -> bool:
    keys = [k for k in a if k != "seconds"]
    return all(a[k] == b[k] for k in keys)


def test_study_on_a_local_cluster_matches_the_pool_and_survives_a_killed_worker(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLEBOOK_SHIPPED", "0")
    monkeypatch.delenv(cluster.SCHEDULER_ENV, raising=False)

    # 1. this machine's process pool (two processes), through the study command
    pool_cache = tmp_path / "pool"
    monkeypatch.setenv("EAGLEBOOK_CACHE", str(pool_cache))
    assert study.main([*GRID, "--workers", "2", "--json", str(tmp_path / "pool.json"),
                       "--plot", str(tmp_path / "pool.png")]) == 0
    pool = _read(tmp_path / "pool.json")
    assert sorted(pool) == ["layers=1", "layers=2"]
    assert all(r["trained"] == training.THIS_MACHINE for s in pool.values() for r in s["runs"])
    assert (tmp_path / "pool.png").read_bytes()[:4] == b"\x89PNG"

    # 2. a two-worker LocalCluster (its workers inherit this environment: their own cache root, where they keep
    #    checkpoints; frequent ones, so that the killed task has one to resume from)
    dask_cache = tmp_path / "dask"
    monkeypatch.setenv("EAGLEBOOK_CACHE", str(dask_cache))
    monkeypatch.setenv("EAGLEBOOK_CHECKPOINT_SECONDS", "0.2")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as lc, distributed.Client(lc) as client:
        proc = subprocess.Popen([sys.executable, "-m", "eaglebook.study", *GRID, "--scheduler", lc.scheduler_address,
                                 "--json", str(tmp_path / "dask.json")], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            # kill a worker while it trains: once a checkpoint exists, a worker processing a task is mid-run
            deadline, killed = time.monotonic() + 120, None
            while killed is None and time.monotonic() < deadline and proc.poll() is None:
                busy = [w for w, keys in client.processing().items() if keys]
                if busy and any((dask_cache / "train").glob(".ckpt-*.pt")):
                    addr = busy[0]
                    pid = client.run(os.getpid, workers=[addr])[addr]
                    os.kill(pid, signal.SIGKILL)
                    killed = (addr, pid)
                time.sleep(0.05)
            out, _ = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert killed is not None, "no worker was seen training: " + out
    assert proc.returncode == 0, out
    with pytest.raises(ProcessLookupError):
        os.kill(killed[1], 0)                                    # it did die
    got = _read(tmp_path / "dask.json")
    wheres = [r["trained"] for s in got.values() for r in s["runs"]]
    assert all(w.startswith("tcp://127.0.0.1:") for w in wheres), wheres
    assert killed[0] not in wheres                               # its task was trained again elsewhere

    # 3. the same models (bit-identical weights, same cache keys) and the same answers
    pe, de = _entries(pool_cache), _entries(dask_cache)
    assert sorted(pe) == sorted(de) and len(pe) == 2
    for h in pe:
        assert cache.is_valid(de[h]), h                            # nothing half-written in the cache
        a, b = _weights(pe[h]), _weights(de[h])
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), h
    for label in pool:
        assert got[label]["answer"] == pool[label]["answer"]
        assert _same_numbers(pool[label]["median"], got[label]["median"])
    assert not list((dask_cache / "train").glob(".ckpt-*.pt"))   # checkpoints removed once the entries exist


def test_the_readme_study_command_is_valid(tmp_cache):
    """The README's example parses and plans (every config built), without training."""
    import shlex
    text = (REPO / "README.md").read_text()
    sec = text[text.index("### A study: many settings, one table"):]
    cmd = re.search(r"```bash\n(.*?)```", sec, re.S).group(1).replace("\\\n", " ")
    args = shlex.split(cmd)
    assert args[:3] == [".venv/bin/python", "-m", "eaglebook.study"]
    a, profile, regime, settings = study.prepare(args[3:])
    assert regime == "unconstrained" and len(settings) == 4 and all(len(s.cfgs) == 2 for s in settings)
    assert len({c for s in settings for c in s.cfgs}) == 8


def test_dask_is_the_cluster_extra_and_the_chapter_declares_with_the_shared_test():
    import tomllib
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("dask") for d in project["dependencies"])          # not a core dependency
    assert any(d.startswith("dask[distributed]") for d in project["optional-dependencies"]["cluster"])
    assert re.search(r"^dask\[distributed\]", (REPO / "requirements.txt").read_text(), re.M)
    # one implementation, two callers: chapter 11 declares its questions with the criterion the study applies
    from eaglebook import comparisons
    questions = [r for r in comparisons.rows("11_beyond") if r.key.endswith("_same")]
    assert len(questions) == len([c for c in beyond.CHANGES if c.claim])
    assert all(r.criterion == beyond.CRITERION for r in questions)
    chapter = (REPO / "book" / "11_beyond.md").read_text()
    assert "beyond.tests_held(" in chapter and "beyond.same_algorithm(" in chapter and "beyond.assess(" in chapter

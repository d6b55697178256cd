"""The solver benchmarks of chapter 7: ``python -m eaglebook.bench centralized|sketched|real|ablations|grid``.

Each part returns plain data (dicts, lists, floats; JSON as written by ``--json``):

* ``environment``: versions, thread counts, the BLAS in use (threadpoolctl), CPU count, load average;
* per run: iterations and solver time to each tolerance, per-iteration time, final error, status, and a
  thinned error curve (≤ 300 points, against iteration and against solver time);
* every timing also as a ratio against a baseline measured in the same run on the same problem
  (``numpy.linalg.lstsq`` for the centralized and real parts, s = n for the per-iteration times, SGD
  for the time to 1e-2), because absolute times on a shared CPU are noise;
* ``overhead``: how much the trace itself inflates the solver time (a traced run against a bare run
  of the same iterations) and the share of the trace's bookkeeping (which runs on a paused clock).

Threads: NumPy's BLAS (via threadpoolctl) and torch both run on ``threads`` threads (default 1: the
matrices are small, and a shared 2-core machine makes two threads spin).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from .. import config, tasks
from ..solver import baselines as bl

PARTS = ("centralized", "sketched", "real", "ablations", "grid")
LEVELS = (1e-2, 1e-6, 1e-12)
CURVE_POINTS = 300
#: The package modules whose source decides what the harness measures (their hash is part of the cache key).
SOURCES = ("solver", "bench", "tasks.py", "config.py", "_arrays.py", "data")


def source_hash(sources=SOURCES) -> str:
    """SHA-256 (first 16 hex digits) of the package's source files (and data files) under ``sources``
    (paths relative to the package): any change to what the harness runs gives a new cache key."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for s in sources:
        p = root / s
        files = sorted(q for q in p.rglob("*") if q.is_file() and q.suffix in (".py", ".mtx", ".txt")
                       and "__pycache__" not in q.parts) if p.is_dir() else ([p] if p.is_file() else [])
        for f in files:
            h.update(f.relative_to(root).as_posix().encode())
            h.update(b"\0")
            h.update(f.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class BenchConfig:
    """Everything that determines one part's results (the cache key of the chapter): the part, its sizes,
    seed, threads, matrix, and :func:`source_hash` of the code that runs it."""

    part: str
    sizes: config.BenchSizes = field(default_factory=config.BenchSizes)
    seed: int = 0
    threads: int = 1
    matrix: str | None = None       # real: a Matrix Market file instead of illc1850
    source: str = field(default_factory=source_hash)   # the harness's and the solvers' source

    def __post_init__(self):
        config.choice("part", self.part, PARTS)
        config.check_int("seed", self.seed)
        config.check_int("threads", self.threads, minimum=1)
        S = self.sizes     # the values no part can run with (the CLI's types say the same, before parsing ends)
        config.check_float("sizes.grid_target", S.grid_target, upper=1.0, upper_closed=False)
        for name in ("time_limit", "grid_time_limit"):
            config.check_float(f"sizes.{name}", getattr(S, name), upper=math.inf, upper_closed=False)
        for name, ks in (("kappas", S.kappas), ("grid_kappas", S.grid_kappas), ("sketch_kappa", (S.sketch_kappa,))):
            for k in ks:
                config.check_float(f"sizes.{name}", k, lower=1.0, lower_open=False, upper=math.inf,
                                   upper_closed=False)


# ---------------------------------------------------------------------------------------------- environment
def environment(threads: int) -> dict:
    """Versions, threads and BLAS of this run."""
    import scipy
    from .. import __version__
    env = dict(python=sys.version.split()[0], platform=platform.platform(), machine=platform.machine(),
               cpu_count=os.cpu_count(), numpy=str(np.__version__), scipy=str(scipy.__version__), torch=str(torch.__version__),
               eaglebook=__version__, threads=threads, torch_threads=torch.get_num_threads(),
               load_average=list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
               env={k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    try:
        from threadpoolctl import threadpool_info
        env["blas"] = [{k: (v if isinstance(v, (str, int, float, type(None))) else str(v)) for k, v in d.items() if k in ("user_api", "internal_api", "version", "num_threads",
                                                           "threading_layer", "architecture")}
                       for d in threadpool_info()]
    except ImportError:
        cfg = np.show_config(mode="dicts") if "mode" in np.show_config.__code__.co_varnames else {}
        env["blas"] = [cfg.get("Build Dependencies", {}).get("blas", {})]
    env["torch_blas"] = torch.__config__.show().splitlines()[:3]
    return env


class _Threads:
    """Pin NumPy's BLAS and torch to ``n`` threads inside the block (restored afterwards)."""

    def __init__(self, n: int):
        self.n = n

    def __enter__(self):
        self.old = torch.get_num_threads()
        torch.set_num_threads(self.n)
        try:
            from threadpoolctl import threadpool_limits
            self.ctl = threadpool_limits(self.n)
        except ImportError:
            self.ctl = None
        return self

    def __exit__(self, *exc):
        if self.ctl is not None:
            self.ctl.restore_original_limits()
        torch.set_num_threads(self.old)


#: Public names for the benchmark modules of this package (``grid``): the thread pin and the progress bar.
Threads = _Threads


def gemm_rate(n: int, repeats: int = 5) -> float:
    """Measured float64 GEMM rate (flop/s) of torch for n×n @ n×n on this run's threads (median)."""
    a = torch.randn(n, n, dtype=torch.float64)
    b = torch.randn(n, n, dtype=torch.float64)
    a @ b
    k = max(1, min(int(2e8 / (2 * n ** 3)), 100_000))   # about 0.1 s per repeat; capped for tiny n (n = 2: 12.5 M)
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(k):
            a @ b
        ts.append((time.perf_counter() - t) / k)
    return 2 * n ** 3 / statistics.median(ts)


def eagle_flops(d: int, n: int, dp: int, np_: int, r: int | None = None) -> float:
    """Flops of one centralized (or sketched, r columns) EAGLE UPDATE as :func:`eaglebook.solver.update.directions`
    computes it (the Gram matrix on the cheaper side), power iterations excluded."""
    r = n if r is None else r
    if d < r:
        return 2 * d * d * r * 2 + 2 * dp * r * d + 2 * dp * d * r + 2 * d * d * np_ + 2 * dp * d * np_
    return 2 * r * r * d * 2 + 2 * dp * r * r + 2 * r * d * np_ + 2 * d * r * np_ + 2 * dp * r * np_


# ---------------------------------------------------------------------------------------------- running
def _thin(n: int, k: int = CURVE_POINTS) -> np.ndarray:
    if n <= k:
        return np.arange(n)
    idx = np.unique(np.round(np.geomspace(1, n, k)).astype(int) - 1)
    return np.union1d(idx, np.arange(min(n, 20)))


def run_record(tr: bl.Trace, *, baseline_time: float | None = None, levels=LEVELS, wall: float | None = None) -> dict:
    """A trace as plain data, with its timings as ratios against ``baseline_time``."""
    rec = tr.summary(levels)
    if tr.values is not None and tr.values.size:
        idx = _thin(tr.values.size)
        rec["curve"] = dict(iteration=(idx + 1).tolist(), time=tr.times[idx].tolist(), value=tr.values[idx].tolist())
        rec["best"] = float(np.nanmin(tr.values))
    rec["wall"] = wall
    if baseline_time:
        rec["baseline_time"] = baseline_time
        rec["ratio"] = {"elapsed": tr.elapsed / baseline_time, "per_iteration": tr.per_iteration / baseline_time}
        for lv, v in rec["to"].items():
            v["ratio"] = None if v["time"] is None else v["time"] / baseline_time
    return rec


def _call(fn, *args, **kw):
    t = time.perf_counter()
    tr = fn(*args, **kw)
    return tr, time.perf_counter() - t


def _median_time(fn, repeats: int, *args, **kw) -> tuple[bl.Trace, float, list[float]]:
    """Run ``repeats`` times; return the first trace, its wall time and every run's solver time."""
    tr, wall = _call(fn, *args, **kw)
    times = [tr.elapsed]
    for _ in range(repeats - 1):
        times.append(fn(*args, **kw).elapsed)
    return tr, wall, times


def _paired_vs_svd(A, B, C, ref, *, S, seed: int, repeats: int) -> dict:
    """EAGLE's solver time to 1e-6 and SVD's time, interleaved (EAGLE, SVD, then SVD, EAGLE, ...) after one
    untimed round: the paired repeats of chapter 7's "matches SVD" rows (``None`` where EAGLE misses 1e-6)."""
    runs = {"EAGLE": lambda: _iterative("EAGLE", A, B, C, ref, S=S, target=1e-6, seed=seed).time_to(1e-6),
            "SVD": lambda: _direct("SVD", A, B, C, ref).elapsed}
    for f in runs.values():
        f()
    times = {k: [] for k in runs}
    before = _machine()
    for rep in range(repeats):
        for k in (("EAGLE", "SVD") if rep % 2 == 0 else ("SVD", "EAGLE")):
            times[k].append(runs[k]())
    return dict(target=1e-6, eagle_times=times["EAGLE"], svd_times=times["SVD"],
                machine=dict(before=before, after=_machine()))


def _machine() -> dict:
    """The machine and its load now (:func:`eaglebook.provenance.machine`), for a timed block's record: a timing
    verdict needs the load below the core count (:attr:`eaglebook.timing.Ratio.loaded`)."""
    from ..provenance import machine
    return machine(torch.get_num_threads())


def _lstsq_time(A, B, C, ref, repeats=3) -> float:
    bl.lstsq(A, B, C, reference=ref)    # warm-up
    return statistics.median(bl.lstsq(A, B, C, reference=ref).elapsed for _ in range(repeats))


def bar(it, progress: bool, desc: str):
    """``it`` with a tqdm progress bar on standard error when ``progress``."""
    return _bar(it, progress, desc)


def _iterative(name, A, B, C, ref, *, S: config.BenchSizes, target, rank_deficient=False, seed=0, **extra):
    """Run the registry's method ``name`` (:data:`eaglebook.solver.baselines.REGISTRY`) with the part's limits."""
    return bl.REGISTRY[name].run(A, B, C, reference=ref, target=target, max_iter=S.max_iter, time_limit=S.time_limit,
                                 seed=seed, rank_deficient=rank_deficient, **extra)


#: The methods of the κ sweep: every direct and every (unsketched) iterative method of the registry.
ITERATIVE = tuple(k for k, m in bl.REGISTRY.items() if m.kind == "iterative" and "sweep" in m.parts)
DIRECT = tuple(k for k, m in bl.REGISTRY.items() if m.kind == "direct" and "sweep" in m.parts)
TODO: dict = {}


def _direct(name, A, B, C, ref):
    return bl.REGISTRY[name].run(A, B, C, reference=ref)


def _bar(it, progress: bool, desc: str):
    if not progress:
        return it
    from tqdm import tqdm
    return tqdm(it, desc=desc, leave=False, file=sys.stderr)


# ---------------------------------------------------------------------------------------------- overhead
def overhead(A, B, C, ref, *, iters: dict[str, int], repeats: int = 3) -> dict:
    """How much the trace inflates the measured solver time: for each method, a traced run (monitor on)
    and a bare run (timestamps only, no monitor; LSMR: SciPy untouched) of the same number of
    iterations, alternated ``repeats`` times; the medians and (traced − bare)/bare.  Also the trace's
    bookkeeping (on a paused clock) relative to the solver time."""
    out = {}
    for name, k in iters.items():
        k = max(int(k), 1)
        if name == "EAGLE":
            traced = lambda: bl.eagle(A, B, C, reference=ref, max_iter=k)         # noqa: E731
            bare = lambda: bl.eagle(A, B, C, max_iter=k)                          # noqa: E731
        elif name == "CG":
            traced = lambda: bl.cgls(A, B, C, reference=ref, max_iter=k)          # noqa: E731
            bare = lambda: bl.cgls(A, B, C, max_iter=k)                           # noqa: E731
        elif name == "LSMR":
            traced = lambda: bl.lsmr(A, B, C, reference=ref, max_iter=k)          # noqa: E731
            bare = lambda: bl.lsmr(A, B, C, max_iter=k, record=False)             # noqa: E731
        elif name == "GD":
            traced = lambda: bl.gd(A, B, C, reference=ref, max_iter=k)            # noqa: E731
            bare = lambda: bl.gd(A, B, C, max_iter=k)                             # noqa: E731
        else:
            continue
        tt, tb, book = [], [], []
        for _ in range(repeats):
            t = traced()
            tt.append(t.elapsed)
            book.append(t.bookkeeping)
            tb.append(bare().elapsed)
        mt, mb = statistics.median(tt), statistics.median(tb)
        out[name] = dict(iterations=k, traced=mt, bare=mb, inflation=(mt - mb) / mb,
                         bookkeeping_share=statistics.median(book) / mt)
    tot_t = sum(v["traced"] for v in out.values())
    tot_b = sum(v["bare"] for v in out.values())
    out["total"] = dict(traced=tot_t, bare=tot_b, inflation=(tot_t - tot_b) / tot_b)
    return out


def headline_bare(A, B, C, runs: dict, *, repeats: int, seed: int = 0) -> dict:
    """The headline's methods timed without the trace: each iterative method for the iterations its traced run
    needed to 1e-6 (``runs[name]["to"]["1e-06"]["iterations"]``; not timed where it missed), the direct ones for
    one solve, interleaved (:func:`eaglebook.timing.interleaved`, ``repeats``), with the machine before and after.
    Returns ``iterations`` and ``seconds`` per method and ``machine``: the tracing's own overhead is out of these
    times (it inflates CG's most, the harness's ``overhead`` shows by how much)."""
    from .. import timing
    its = {k: runs[k]["to"]["1e-06"]["iterations"] for k in ("EAGLE", "CG", "LSMR", "RandSketch+CG")}
    make = {"EAGLE": lambda k: (lambda: bl.eagle(A, B, C, max_iter=k, seed=seed)),
            "CG": lambda k: (lambda: bl.cgls(A, B, C, max_iter=k)),
            "LSMR": lambda k: (lambda: bl.lsmr(A, B, C, max_iter=k, record=False)),
            "RandSketch+CG": lambda k: (lambda: bl.randsketch_cg(A, B, C, max_iter=k, seed=seed, record=False))}
    fns = {name: make[name](k) for name, k in its.items() if k is not None}
    fns.update({"lstsq (numpy)": lambda: bl.lstsq(A, B, C), "SVD": lambda: bl.svd(A, B, C)})
    tm = timing.interleaved(fns, repeats, warmup=1, threads=torch.get_num_threads())
    return dict(iterations={**its, "lstsq (numpy)": 1, "SVD": 1}, seconds=tm.seconds,
                machine=dict(before=tm.before, after=tm.after))


# ---------------------------------------------------------------------------------------------- (a) centralized
def centralized(S: config.BenchSizes, seed: int = 0, progress: bool = True) -> dict:
    """(a) The κ sweep at n = d = S.central_n (full rank and rank n/2), every method to 1e-12 (or its
    time limit); the headline run at S.headline_n, κ = 1e4 to 1e-6 with repeats; EAGLE vs lstsq as n grows
    with the flop count and the measured GEMM rate; the harness overhead."""
    rng = np.random.default_rng(seed)
    out = dict(sweep=[], sizes=[], headline={}, n=S.central_n)
    jobs = [(kappa, rd) for kappa in S.kappas for rd in (False, True)]
    for kappa, rd in _bar(jobs, progress, "centralized κ sweep"):
        n = S.central_n
        A, B, C, _ = tasks.make_problem(n, n, rank=n // 2 if rd else n, kappa=kappa, rng=rng)
        ref = tasks.nystrom(A, B, C)
        base = _lstsq_time(A, B, C, ref)
        row = dict(kappa=kappa, rank_deficient=rd, rank=n // 2 if rd else n, baseline="lstsq (numpy)",
                   baseline_time=base, runs={})
        for name in DIRECT:
            tr, wall = _call(_direct, name, A, B, C, ref)
            row["runs"][name] = run_record(tr, baseline_time=base, wall=wall)
        for name in ITERATIVE:
            tr, wall = _call(_iterative, name, A, B, C, ref, S=S, target=1e-12, rank_deficient=rd, seed=seed)
            row["runs"][name] = run_record(tr, baseline_time=base, wall=wall)
        if not rd:
            row["vs_svd"] = _paired_vs_svd(A, B, C, ref, S=S, seed=seed, repeats=max(S.repeats, 3))
        out["sweep"].append(row)

    # headline: n = 240, κ = 1e4, full rank, to 1e-6, repeated
    n = S.headline_n
    A, B, C, _ = tasks.make_problem(n, n, rank=n, kappa=1e4, rng=rng)
    ref = tasks.nystrom(A, B, C)
    base = _lstsq_time(A, B, C, ref)
    hl = dict(n=n, kappa=1e4, target=1e-6, baseline="lstsq (numpy)", baseline_time=base, runs={})
    S_h = replace(S, time_limit=max(S.time_limit, 30.0))
    for name in _bar(("EAGLE", "CG", "LSMR", "RandSketch+CG"), progress, "headline n=240 κ=1e4"):
        tr, wall, times = _median_time(_iterative, S.repeats, name, A, B, C, ref, S=S_h, target=1e-6, seed=seed)
        rec = run_record(tr, baseline_time=base, wall=wall)
        rec["repeat_times"] = times
        rec["median_time"] = statistics.median(times) if tr.status == "target" else None
        hl["runs"][name] = rec
    for name in ("lstsq (numpy)", "SVD"):
        tr, wall = _call(_direct, name, A, B, C, ref)
        hl["runs"][name] = run_record(tr, baseline_time=base, wall=wall)
    e = hl["runs"]["EAGLE"]["median_time"]
    hl["speedup"] = {k: (hl["runs"][k]["median_time"] / e if e and hl["runs"][k].get("median_time") else None)
                     for k in ("CG", "LSMR", "RandSketch+CG")}
    hl["bare"] = headline_bare(A, B, C, hl["runs"], repeats=max(S.repeats, 3), seed=seed)
    its = {k: min(hl["runs"][k]["iterations"], S.overhead_iters) for k in ("EAGLE", "CG", "LSMR")}
    its["GD"] = S.overhead_iters
    hl["overhead"] = overhead(A, B, C, ref, iters=its, repeats=max(S.repeats, 3))
    out["headline"] = hl

    # EAGLE vs lstsq as n grows (κ = 1e4), with the flop count and the measured GEMM rate
    for n in _bar(S.size_ns, progress, "EAGLE vs lstsq, n"):
        A, B, C, _ = tasks.make_problem(n, n, rank=n, kappa=1e4, rng=rng)
        ref = tasks.nystrom(A, B, C)
        base = _lstsq_time(A, B, C, ref, repeats=3 if n <= 960 else 1)
        before = _machine()
        tr = bl.eagle(A, B, C, reference=ref, target=1e-6, max_iter=200)
        rate = gemm_rate(n)
        fl = eagle_flops(n, n, 2, 2)
        out["sizes"].append(dict(n=n, lstsq_time=base, eagle=run_record(tr, baseline_time=base), gemm_rate=rate,
                                 flops_per_iteration=fl, floor_per_iteration=fl / rate,
                                 per_iteration_over_floor=tr.per_iteration / (fl / rate),
                                 machine=dict(before=before, after=_machine())))
    return out


# ---------------------------------------------------------------------------------------------- (b) sketched
def _sketch_per_iteration(n: int, iters: int, seed: int, kappa: float) -> dict:
    """Per-iteration time of sketched EAGLE (power ρ) at s = n, n/2, n/4, n/8, interleaved, median of 3."""
    rng = np.random.default_rng(seed + 7)
    A, B, C, _ = tasks.make_problem(n, n, rank=n, kappa=kappa, rng=rng)
    ss = [n, n // 2, n // 4, n // 8]
    per = {s: [] for s in ss}
    for s in ss:
        bl.eagle(A, B, C, sketch=s, max_iter=3)   # warm-up
    before = _machine()
    for _ in range(3):
        for s in ss:
            tr = bl.eagle(A, B, C, sketch=s, max_iter=iters)
            per[s].append(tr.per_iteration)
    med = {s: statistics.median(v) for s, v in per.items()}
    paper_ms = dict(zip(ss, (21.0, 16.0, 7.0, 5.0))) if n == 240 else {}
    return dict(n=n, s=ss, per_iteration={str(s): med[s] for s in ss}, repeats={str(s): per[s] for s in ss},
                ratio_to_full={str(s): med[s] / med[n] for s in ss},
                full_over={str(s): med[n] / med[s] for s in ss},
                paper_ms={str(s): v for s, v in paper_ms.items()},
                paper_full_over={str(s): paper_ms[n] / v for s, v in paper_ms.items()} if paper_ms else {},
                flops={str(s): eagle_flops(n, n, 2, 2, s) for s in ss}, machine=dict(before=before, after=_machine()))


def sketched(S: config.BenchSizes, seed: int = 0, progress: bool = True) -> dict:
    """(b) Iterations vs n/r, per-iteration time at s = 240…30, time to 1e-2 vs SGD at r = n/4, time to
    1e-6 vs RandSketch+CG at κ = 1e4."""
    rng = np.random.default_rng(seed + 1)
    n = S.sketch_n
    A, B, C, _ = tasks.make_problem(n, n, rank=n, kappa=S.sketch_kappa, rng=rng)
    ref = tasks.nystrom(A, B, C)
    out = dict(n=n, kappa=S.sketch_kappa, r_sweep=[])
    S = replace(S, time_limit=max(6 * S.time_limit, 10.0))     # the sketched runs must converge to be counted
    for r in _bar([n // 8, n // 4, n // 2, n], progress, "sketched r sweep"):
        tr = bl.eagle(A, B, C, reference=ref, sketch=r, target=1e-6, max_iter=S.max_iter, time_limit=S.time_limit,
                      seed=seed)
        sg = bl.sgd(A, B, C, reference=ref, sketch=r, target=1e-2, max_iter=S.max_iter, time_limit=S.time_limit,
                    seed=seed)
        out["r_sweep"].append(dict(r=r, n_over_r=n / r, eagle=run_record(tr), sgd=run_record(sg)))
    # time to 1e-2: EAGLE vs SGD at r = n/4, repeated over seeds (median)
    r = n // 4
    te, ts = [], []
    before = _machine()
    for k in range(max(S.repeats, 3)):
        te.append(bl.eagle(A, B, C, reference=ref, sketch=r, target=1e-2, max_iter=S.max_iter,
                           time_limit=S.time_limit, seed=seed + k).time_to(1e-2))
        ts.append(bl.sgd(A, B, C, reference=ref, sketch=r, target=1e-2, max_iter=S.max_iter,
                         time_limit=S.time_limit, seed=seed + k).time_to(1e-2))
    ok = [(a, b) for a, b in zip(te, ts) if a is not None and b is not None]
    out["vs_sgd"] = dict(r=r, target=1e-2, eagle_times=te, sgd_times=ts, baseline="SGD",
                         ratio=statistics.median(b / a for a, b in ok) if ok else None,
                         machine=dict(before=before, after=_machine()))
    out["per_iteration"] = _sketch_per_iteration(S.sketch_timing_n, S.sketch_timing_iters, seed, S.sketch_kappa)
    # time to 1e-6 vs RandSketch+CG at κ = 1e4 (n = headline n), EAGLE centralized and sketched r = n/4
    n2 = S.headline_n
    A, B, C, _ = tasks.make_problem(n2, n2, rank=n2, kappa=1e4, rng=rng)
    ref = tasks.nystrom(A, B, C)
    rs = {}
    S_l = replace(S, time_limit=max(S.time_limit, 30.0))
    for name, fn in _bar([("RandSketch+CG", lambda: _iterative("RandSketch+CG", A, B, C, ref, S=S_l, target=1e-6, seed=seed)),
                          ("EAGLE", lambda: _iterative("EAGLE", A, B, C, ref, S=S_l, target=1e-6, seed=seed)),
                          (f"EAGLE (r = {n2 // 4})", lambda: _iterative("EAGLE", A, B, C, ref, S=S_l, target=1e-6,
                                                                        seed=seed, sketch=n2 // 4)),
                          ("lstsq (numpy)", lambda: bl.lstsq(A, B, C, reference=ref))], progress, "vs RandSketch+CG"):
        times = []
        first = None
        for _ in range(S.repeats):
            tr = fn()
            first = first or tr
            times.append(tr.time_to(1e-6))
        rec = run_record(first)
        rec["repeat_times"] = times
        rec["median_time"] = statistics.median(times) if all(t is not None for t in times) else None
        rs[name] = rec
    base = rs["RandSketch+CG"]["median_time"]
    out["vs_randsketch"] = dict(n=n2, kappa=1e4, target=1e-6, baseline="RandSketch+CG", runs=rs,
                                ratio={k: (v["median_time"] / base if base and v["median_time"] else None)
                                       for k, v in rs.items()})
    return out


# ---------------------------------------------------------------------------------------------- (c) real
def real(S: config.BenchSizes, seed: int = 0, progress: bool = True, matrix: str | None = None) -> dict:
    """(c) The paper's Table 2 set-up (§5.4) on HB/illc1850 (shipped with the package), or on ``matrix``
    (a Matrix Market file): EAGLE, SVD, lstsq, CG and LSMR to ‖wA − B‖² ≤ 1e-3‖B‖²; then EAGLE and SVD in
    interleaved pairs (``vs_svd``: the two lists of solver times, for :func:`eaglebook.timing.ratio`)."""
    from . import realdata
    if matrix is not None:
        M, name, max_cols = realdata.load_matrix_market(matrix), os.path.basename(matrix), None
    else:
        M, name, max_cols = realdata.illc1850(), "HB/illc1850", S.real_max_cols
    P = realdata.table2_problem(M, max_cols=max_cols, seed=seed)
    A, B, C = P["A"], P["B"], P["C"]
    target = 1e-3
    runs = {}
    base = statistics.median(bl.lstsq(A, B, C, monitor="residual").elapsed for _ in range(3))
    S_r = replace(S, time_limit=max(S.time_limit, 30.0))
    common = dict(monitor="residual", target=target, max_iter=S.max_iter, time_limit=S_r.time_limit)
    for label, fn in _bar([("EAGLE", lambda: bl.eagle(A, B, C, seed=seed, **common)),
                           ("SVD", lambda: bl.svd(A, B, C, monitor="residual")),
                           ("lstsq (numpy)", lambda: bl.lstsq(A, B, C, monitor="residual")),
                           ("CG", lambda: bl.cgls(A, B, C, **common)),
                           ("LSMR", lambda: bl.lsmr(A, B, C, **common))], progress, f"real: {name}"):
        tr, wall, times = _median_time(fn, S.repeats)
        rec = run_record(tr, baseline_time=base, wall=wall, levels=(target,))
        rec["repeat_times"] = times
        rec["median_time"] = statistics.median(times)
        rec["reached"] = tr.final is not None and tr.final <= target
        rec["rel_error_w"] = float(np.linalg.norm(tr.D - P["w"]) / np.linalg.norm(P["w"]))
        runs[label] = rec
    order = sorted((k for k in ("EAGLE", "SVD", "CG", "LSMR") if runs[k]["reached"]),
                   key=lambda k: runs[k]["median_time"])
    # EAGLE against SVD in interleaved pairs (EAGLE, SVD, then SVD, EAGLE, ...), after one untimed round: the
    # time ratio of the Table 2 row is the median of the paired ratios, with their spread
    pair = {"EAGLE": lambda: bl.eagle(A, B, C, seed=seed, **common).elapsed,
            "SVD": lambda: bl.svd(A, B, C, monitor="residual").elapsed}
    for f in pair.values():
        f()
    vs = {k: [] for k in pair}
    before = _machine()
    for rep in range(max(S.repeats, 3)):
        for k in (("EAGLE", "SVD") if rep % 2 == 0 else ("SVD", "EAGLE")):
            vs[k].append(pair[k]())
    return dict(available=True, matrix=name, shape=P["shape"], nnz_fraction=P["nnz_fraction"], rank=P["rank"],
                kappa=P["kappa"], max_cols=max_cols, target=target, baseline="lstsq (numpy)", baseline_time=base,
                runs=runs, ranking=order, eagle_rank=(order.index("EAGLE") + 1) if "EAGLE" in order else None,
                vs_svd=dict(eagle_times=vs["EAGLE"], svd_times=vs["SVD"], machine=dict(before=before, after=_machine())))


# ---------------------------------------------------------------------------------------------- (d) ablations
DISTRIBUTIONS = ("SVD construction", "Student-t", "Gaussian", "correlated Gaussian", "sparse Rademacher", "clusters")


def ablation_problem(kind: str, n: int, rng: np.random.Generator, *, kappa: float = 1e2):
    """A, B, C, D for the §E.3 data distributions, n = d, n' = d' = 2, rank n.

    ``SVD construction`` is :func:`eaglebook.tasks.make_problem` (κ = ``kappa``); the others build
    X = F₁ F₂ᵀ/√k (k = n) from factors F₁ ((d+2)×k), F₂ ((n+2)×k) with i.i.d. rows: Student-t with ν = 4
    scaled to unit variance; Gaussian; correlated Gaussian with Σ_ij = 0.8^|i−j|; sparse Rademacher with
    p = 0.1 scaled by 1/√p; clusters: each row is one of 5 Gaussian centres plus N(0, 0.1²) noise."""
    if kind == "SVD construction":
        return tasks.make_problem(n, n, rank=n, kappa=kappa, rng=rng)
    k = n
    m1, m2 = n + 2, n + 2

    def factor(m):
        if kind == "Student-t":
            return rng.standard_t(4, (m, k)) / math.sqrt(4 / 2)
        if kind == "Gaussian":
            return rng.standard_normal((m, k))
        if kind == "correlated Gaussian":
            idx = np.arange(k)
            L = np.linalg.cholesky(0.8 ** np.abs(idx[:, None] - idx[None, :]))
            return rng.standard_normal((m, k)) @ L.T
        if kind == "sparse Rademacher":
            return rng.choice([-1.0, 1.0], (m, k)) * (rng.random((m, k)) < 0.1) / math.sqrt(0.1)
        if kind == "clusters":
            centres = rng.standard_normal((5, k))
            return centres[rng.integers(0, 5, m)] + 0.1 * rng.standard_normal((m, k))
        raise ValueError(f"argument kind={kind!r} must be one of {DISTRIBUTIONS}")

    X = factor(m1) @ factor(m2).T / math.sqrt(k)
    return tasks.Blocks(X[:n, :n], X[n:, :n], X[:n, n:], X[n:, n:])


def ablations(S: config.BenchSizes, seed: int = 0, progress: bool = True) -> dict:
    """(d) §E.3: six data distributions; observation noise (std 0.01) with early stopping; the step-size
    grid at n = d = 15 (best error within 200 iterations)."""
    import eaglebook
    rng = np.random.default_rng(seed + 2)
    n = S.ablation_n
    dist = []
    for kind in _bar(DISTRIBUTIONS, progress, "ablations: distributions"):
        A, B, C, D = ablation_problem(kind, n, rng)
        ref = tasks.nystrom(A, B, C)
        s = np.linalg.svd(A, compute_uv=False)
        base = _lstsq_time(A, B, C, ref)
        runs = {"EAGLE": run_record(bl.eagle(A, B, C, reference=ref, target=1e-12, max_iter=2000,
                                             time_limit=S.time_limit, seed=seed), baseline_time=base),
                "CG": run_record(bl.cgls(A, B, C, reference=ref, target=1e-12, max_iter=S.max_iter,
                                         time_limit=S.time_limit), baseline_time=base),
                "lstsq (numpy)": run_record(bl.lstsq(A, B, C, reference=ref), baseline_time=base)}
        dist.append(dict(kind=kind, kappa=float(s[0] / s[-1]) if s[-1] > 0 else float("inf"), runs=runs))
    # noise: std 0.01 on A, B, C; error against the clean completion; early stopping = best along the path
    noise = []
    for rd in _bar((False, True), progress, "ablations: noise"):
        A, B, C, D = tasks.make_problem(n, n, rank=n // 2 if rd else n, kappa=1e2, rng=rng, noise_std=0.01)
        runs = {"EAGLE": run_record(bl.eagle(A, B, C, reference=D, max_iter=300, seed=seed)),
                "GD": run_record(bl.gd(A, B, C, reference=D, max_iter=20_000, time_limit=S.time_limit,
                                       ridge=1e-3 if rd else 0.0)),
                "lstsq (numpy)": run_record(bl.lstsq(A, B, C, reference=D))}
        for r in runs.values():
            if "curve" in r:
                v = r["curve"]["value"]
                r["best_iteration"] = r["curve"]["iteration"][int(np.argmin(v))]
        noise.append(dict(rank_deficient=rd, rank=n // 2 if rd else n, noise_std=0.01, runs=runs))
    # step sizes at n = d = 15: η and γ scaled together, and γ/η changed (γ·√q, η/√q)
    factors = np.linspace(0.2, 2.0, S.grid_points).tolist()
    probs = [tasks.make_problem(15, 15, rank=15, kappa=1e2, rng=rng) for _ in range(S.ablation_instances)]
    refs = [tasks.nystrom(A, B, C) for A, B, C, _ in probs]
    grid = dict(factors=factors, together=[], ratio=[], n=15, instances=len(probs), max_iter=200)
    for f in _bar(factors, progress, "ablations: step sizes"):
        for key, (eta, gamma) in (("together", (f / 3, f)), ("ratio", (1 / 3 / math.sqrt(f), math.sqrt(f)))):
            best, its = [], []
            for (A, B, C, _), ref in zip(probs, refs):
                r = eaglebook.solve(A, B, C, eta=eta, gamma=gamma, rho="exact", max_iter=200, tol=1e-300, reference=ref)
                best.append(float(np.min(r.rel_error)))
                hit = np.flatnonzero(r.rel_error <= 1e-10)
                its.append(int(hit[0]) + 1 if hit.size else None)
            grid[key].append(dict(factor=f, eta=eta, gamma=gamma, best_median=statistics.median(best),
                                  best_max=max(best), best=best, iterations_to_1e10=its))
    return dict(n=n, distributions=dist, noise=noise, step_sizes=grid)


# ---------------------------------------------------------------------------------------------- entry point
def run(cfg: BenchConfig, progress: bool = True) -> dict:
    """Run one part under ``cfg`` (threads pinned); results with the environment and the wall time."""
    from ..provenance import machine
    t0 = time.perf_counter()
    with _Threads(cfg.threads):
        env = environment(cfg.threads)
        env["machine_before"] = machine(cfg.threads)      # the machine and its load before and after the part
        from .grid import grid
        fn = {"centralized": centralized, "sketched": sketched, "ablations": ablations, "grid": grid}.get(cfg.part)
        if cfg.part == "real":
            res = real(cfg.sizes, cfg.seed, progress, matrix=cfg.matrix)
        else:
            res = fn(cfg.sizes, cfg.seed, progress)
        env["machine_after"] = machine(cfg.threads)
    return dict(part=cfg.part, config=dataclasses.asdict(cfg), environment=env, results=res,
                todo=dict(TODO), wall_seconds=time.perf_counter() - t0)

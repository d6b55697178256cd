"""The solver-choice grid of chapter 7 (``python -m eaglebook.bench grid``): which method to use, by shape,
condition number, precision and thread count, from timings that survive a shared CPU.

Jobs (each a set of problems; every problem is ``tasks.make_problem``'s, with the exact completion D = W C
as the reference):

* ``square``: n = d over ``grid_ns`` at κ = 1e4, float64, one thread; the cost exponent of each method
  (log–log slope of its time against n, over the whole range and between the two largest sizes) and EAGLE's
  time against its flop model (iterations × the UPDATE's flops ÷ the GEMM rate measured in the same run);
* ``tall`` (d = 8k rows, n = k columns) and ``wide`` (d = k, n = 8k) over ``grid_tall_ns`` (k) at κ = 1e4:
  sketch-and-precondition LSQR joins there (it needs a sketch smaller than the matrix);
* ``kappa``: n = d = ``grid_kappa_n`` at κ in ``grid_kappas`` (default 1e2, 1e4, 1e8, 1e12): iterations of
  EAGLE and of its accelerated variant (``conditioning="polar-express"``) to 1e-6 and 1e-12, and every
  method's time to the target;
* ``precision``: float64 against float32 at n = ``grid_precision_n``, κ = 1e2, both to the same target 1e-4;
* ``threads``: one thread against all cores (``os.cpu_count()``) at n = ``grid_precision_n``, κ = 1e4;
* ``batch_floor``: the whole default solve against the GEMM floor of its own iterations for ``grid_floor``
  (one large problem, batches of small ones), with the certification share (the time in its checks);
* ``batched``: batches of small square problems (``grid_batches``: count × n, κ = 1e2), the paper's own
  setting of many small prompts at once: EAGLE's batched solve beside batched LU (``numpy.linalg.solve``) and
  batched least squares (``torch.linalg.lstsq``, driver gelsd), each one call for the whole batch, timed
  interleaved; a method counts only if every problem of the batch reaches the target;
* ``floors``: the accuracy each method reaches in float64 and in float32 at n = ``grid_precision_n`` over
  ``grid_kappas``, every method with its own default stopping rule (at most ``FLOOR_MAX_ITER`` iterations),
  traced, not timed: the error where it stopped and the smallest error along the way, beside κ·u and κ²·u
  (u the unit roundoff of the precision): a backward-stable solve of D = B A^† C is accurate to about κ·u,
  the normal equations to about κ²·u.

**Timing.**  For each problem every method first runs once *traced* (its error after every iteration, against
the exact completion): that gives its iterations k to the target and whether it gets there.  Then the methods
that got there are timed *bare* (k iterations, no monitor; direct methods: one solve) with
:func:`eaglebook.timing.interleaved` (``grid_repeats`` interleaved repeats): median, min–max, and the paired
ratio to EAGLE and to the fastest method with its range; :class:`eaglebook.timing.Ratio` gives the verdict
("within noise" unless every paired ratio lies beyond 1 ± 5 %).
"""

from __future__ import annotations

import math
import os
import statistics
import time

import numpy as np

from .. import config, tasks, timing
from ..solver import baselines as bl

#: The methods of the grid: the registry's entries for the part "grid" (EAGLE first), by the shapes they apply to.
_GRID = tuple(sorted((k for k, m in bl.REGISTRY.items() if "grid" in m.parts),
                     key=lambda k: (not k.startswith("EAGLE"), bl.REGISTRY[k].kind != "iterative")))
SQUARE = tuple(k for k in _GRID if "square" in bl.REGISTRY[k].shapes)
#: On tall and wide problems sketch-and-precondition joins.
RECTANGULAR = tuple(k for k in _GRID if "tall" in bl.REGISTRY[k].shapes)
ITERATIVE = ("EAGLE", "EAGLE (polar-express)", "Newton–Schulz", "Sketch+LSQR")
TALL_FACTOR = 8
LEVELS = (1e-6, 1e-12)
#: The common target of the float64-against-float32 job (float32 cannot reach 1e-6 reliably).
PRECISION_TARGET = 1e-4
#: Unit roundoff u of each precision (the floor job's references κ·u and κ²·u).
UNIT_ROUNDOFF = {dt: float(np.finfo(dt).eps) / 2 for dt in ("float64", "float32")}
#: The most iterations of one run of the floor job (its methods otherwise stop by their own rule).
FLOOR_MAX_ITER = 300


def _first_below(values, level):
    if values is None:
        return None
    hit = np.flatnonzero(np.asarray(values) <= level)
    return int(hit[0]) + 1 if hit.size else None


def _cast(x, dtype):
    return np.ascontiguousarray(x, dtype=np.float32 if dtype == "float32" else np.float64)


def _solve_fns(conditioning: str, A, B, C, ref, dtype, seed, max_iter=None):
    """Traced and bare runs of ``eaglebook.solve`` (EAGLE or its accelerated variant); ``max_iter``: the
    traced run's cap (None: the solver's default)."""
    import eaglebook
    A_, B_, C_ = (_cast(x, dtype) for x in (A, B, C))
    cap = {} if max_iter is None else dict(max_iter=max_iter)

    def traced(target):
        r = eaglebook.solve(A_, B_, C_, conditioning=conditioning, reference=ref, seed=seed, **cap)
        return dict(values=np.asarray(r.rel_error, dtype=np.float64), iterations=r.iterations, status=r.status,
                    final=float(r.rel_error[-1]))

    def bare(k):
        return lambda: eaglebook.solve(A_, B_, C_, conditioning=conditioning, max_iter=k, tol=1e-300, certify="none",
                                       seed=seed)
    return traced, bare


def _trace_fns(name: str, A, B, C, ref, dtype, seed, max_iter, time_limit, *, cap_eagle: bool = False):
    """(traced(target) -> dict, bare(k) -> callable) for method ``name`` of the grid; ``cap_eagle``: EAGLE's
    traced runs stop at ``max_iter`` too (otherwise at the solver's default cap)."""
    if name in ("EAGLE", "EAGLE (polar-express)"):
        return _solve_fns("cubic" if name == "EAGLE" else "polar-express", A, B, C, ref, dtype, seed,
                          max_iter if cap_eagle else None)
    m = bl.REGISTRY[name]
    kw = dict(dtype=dtype) if m.dtyped else {}
    if dtype != "float64" and not m.dtyped:
        return None
    if m.kind == "direct":
        def traced(target):
            tr = m.run(A, B, C, reference=ref, **kw)
            return dict(values=tr.values, iterations=1, status=tr.status, final=tr.final)
        return traced, (lambda k: (lambda: m.run(A, B, C, **kw)))

    def traced(target):
        tr = m.run(A, B, C, reference=ref, target=target, max_iter=max_iter, time_limit=time_limit, seed=seed, **kw)
        return dict(values=tr.values, iterations=tr.iterations, status=tr.status, final=tr.final)

    def bare(k):
        if name == "Newton–Schulz":
            return lambda: bl.newton_schulz(A, B, C, max_iter=k, seed=seed, **kw)
        return lambda: m.fn(A, B, C, max_iter=k, seed=seed, **{**m.options, **kw})
    return traced, bare


def measure(A, B, C, D, methods, *, target: float, repeats: int, dtype: str = "float64", seed: int = 0,
            max_iter: int = 2000, time_limit: float = 60.0, levels=LEVELS, threads=None, variants=None) -> dict:
    """One problem: every method traced once, then the ones that reach ``target`` timed bare, interleaved
    (``wall_seconds``: the whole call's wall time, traced runs included).

    ``variants`` (optional) replaces ``methods``/``dtype``: a list of (label, method, dtype, threads), all timed
    in one interleaved block, so that e.g. float64 and float32 (or 1 and all threads) of a method are paired."""
    from .harness import Threads
    t0 = time.perf_counter()
    ref = np.asarray(D, dtype=np.float64)
    if variants is None:
        variants = [(name, name, dtype, threads) for name in methods]
    runs, fns = {}, {}
    for label, name, dt, th in variants:
        f = _trace_fns(name, A, B, C, ref, dt, seed, max_iter, time_limit)
        if f is None:
            continue
        traced, bare = f
        with Threads(th or 1):
            t = traced(min(tuple(levels) + (target,)))
        k = _first_below(t["values"], target)
        rec = dict(method=name, dtype=dt, threads=th or 1, status=t["status"], final=t["final"],
                   iterations_run=t["iterations"], iterations=k,
                   to={f"{lv:g}": _first_below(t["values"], lv) for lv in levels})
        if bl.REGISTRY.get(name) is not None and bl.REGISTRY[name].kind == "direct":
            rec["iterations"] = 1 if k is not None else None
        runs[label] = rec
        if rec["iterations"] is not None:
            fns[label] = _pinned(bare(rec["iterations"]), th or 1)
    # the traced run just before warmed every method up
    tm = timing.interleaved(fns, repeats, warmup=0, threads=threads) if fns else None
    for label, rec in runs.items():
        if tm is None or label not in fns:
            rec.update(median=None, spread=None, seconds=None)
            continue
        rec.update(median=tm.median(label), spread=list(tm.spread(label)), seconds=list(tm.seconds[label]))
    out = dict(target=target, dtype=dtype, repeats=repeats, runs=runs,
               machine=None if tm is None else dict(before=tm.before, after=tm.after),
               wall_seconds=time.perf_counter() - t0)
    out.update(compare(runs))
    return out


def floor_of(name: str, A, B, C, D, dtype: str, *, seed: int = 0, max_iter: int = FLOOR_MAX_ITER,
             time_limit: float = 60.0) -> dict | None:
    """The accuracy method ``name`` reaches in ``dtype`` on one problem: one traced run with the method's own
    stopping rule (target None; at most ``max_iter`` iterations), not timed.  ``final``: the relative error
    of D where it stopped; ``floor``: the smallest finite error along the run and ``at``, its iteration (None
    when no error was finite); ``status``: the run's.  None for a method that has no ``dtype`` version.
    One thread, as the grid's other single-machine jobs."""
    from .harness import Threads
    f = _trace_fns(name, A, B, C, np.asarray(D, dtype=np.float64), dtype, seed, max_iter, time_limit, cap_eagle=True)
    if f is None:
        return None
    with Threads(1):
        t = f[0](None)
    v = np.asarray(t["values"], dtype=np.float64).ravel() if t["values"] is not None else np.array([t["final"]], dtype=np.float64)
    ok = np.isfinite(v)
    at = int(np.flatnonzero(ok)[np.argmin(v[ok])]) + 1 if ok.any() else None
    return dict(method=name, dtype=dtype, status=t["status"], iterations_run=t["iterations"],
                final=float(t["final"]) if t["final"] is not None and math.isfinite(t["final"]) else None,
                floor=float(v[at - 1]) if at is not None else None, at=at)


def floors(S: config.BenchSizes, rng, seed: int = 0, methods=None, progress: bool = False) -> dict:
    """The floor job (module docstring): one square problem per κ of ``S.grid_kappas`` at n = ``S.grid_precision_n``,
    every method of ``methods`` (default :data:`SQUARE`) in float64 and float32."""
    from .harness import bar
    methods = SQUARE if methods is None else tuple(methods)
    n, rows = S.grid_precision_n, []
    for kappa in bar(S.grid_kappas, progress, "grid: floors"):
        A, B, C, D = _problem("square", n, kappa, rng)
        runs = {dt: {m: floor_of(m, A, B, C, D, dt, seed=seed, time_limit=S.grid_time_limit) for m in methods}
                for dt in UNIT_ROUNDOFF}
        rows.append(dict(kappa=kappa, n=n, runs={dt: {m: r for m, r in rs.items() if r is not None} for dt, rs in runs.items()},
                         reference={dt: dict(kappa_u=kappa * u, kappa2_u=kappa ** 2 * u) for dt, u in UNIT_ROUNDOFF.items()}))
    return dict(n=n, max_iter=FLOOR_MAX_ITER, unit_roundoff=dict(UNIT_ROUNDOFF), methods=list(methods), rows=rows)


def _pinned(fn, threads: int):
    from .harness import Threads

    def run():
        with Threads(threads):
            return fn()
    return run


def subset(rec: dict, keep) -> dict:
    """The runs of ``rec`` whose label passes ``keep``, relabelled by method, with :func:`compare` redone."""
    runs = {v["method"]: v for k, v in rec["runs"].items() if keep(k, v)}
    out = {k: v for k, v in rec.items() if k not in ("runs",)}
    out["runs"] = runs
    out.update(compare(runs))
    return out


def _ratio(runs, a, b) -> dict | None:
    if runs.get(a, {}).get("seconds") is None or runs.get(b, {}).get("seconds") is None:
        return None
    r = timing.ratio(runs[a]["seconds"], runs[b]["seconds"], a, b)
    return dict(median=r.median, lo=r.lo, hi=r.hi, repeats=r.repeats, verdict=r.verdict, decided=r.decided)


def compare(runs: dict) -> dict:
    """The fastest method by median, the runner-up, the paired ratio runner-up ÷ fastest (its verdict), and
    each method's paired ratio to EAGLE."""
    timed = sorted((k for k, v in runs.items() if v.get("median") is not None), key=lambda k: runs[k]["median"])
    out = dict(order=timed, fastest=timed[0] if timed else None, runner_up=timed[1] if len(timed) > 1 else None)
    out["margin"] = _ratio(runs, out["runner_up"], out["fastest"]) if out["runner_up"] else None
    out["vs_eagle"] = {k: _ratio(runs, k, "EAGLE") for k in timed if k != "EAGLE"} if "EAGLE" in timed else {}
    return out


def slope(ns, ts) -> float | None:
    """Least-squares slope of log t against log n (None with fewer than two finite points)."""
    pts = [(math.log(n), math.log(t)) for n, t in zip(ns, ts) if t is not None and t > 0]
    if len(pts) < 2:
        return None
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def last_doubling(ns, ts) -> float | None:
    """The slope of log t against log n between the two largest sizes (the local exponent at the top of the
    range, where a fixed cost per call matters least); None unless both have a time."""
    top = sorted(zip(ns, ts), key=lambda p: p[0])[-2:]
    return slope(*zip(*top)) if top else None


def _problem(shape: str, k: int, kappa: float, rng):
    n, d = {"square": (k, k), "tall": (k, TALL_FACTOR * k), "wide": (TALL_FACTOR * k, k)}[shape]
    return tasks.make_problem(n, d, rank=min(n, d), kappa=kappa, rng=rng)


def _series(shape, ks, S, rng, seed, progress, bar) -> dict:
    methods = SQUARE if shape == "square" else RECTANGULAR
    rows = []
    for k in bar(ks, progress, f"grid: {shape}"):
        A, B, C, D = _problem(shape, k, 1e4, rng)
        row = measure(A, B, C, D, methods, target=S.grid_target, repeats=S.grid_repeats, seed=seed,
                      time_limit=S.grid_time_limit, threads=1)
        row.update(k=k, d=A.shape[0], n=A.shape[1], kappa=1e4, shape=shape)
        rows.append(row)
    ts = {m: [r["runs"].get(m, {}).get("median") for r in rows] for m in methods}
    ns = [r["k"] for r in rows]
    return dict(rows=rows, exponents={m: slope(ns, ts[m]) for m in methods},
                last_doubling={m: last_doubling(ns, ts[m]) for m in methods}, methods=list(methods))


def flop_model(rows, gemm_rates) -> list:
    """EAGLE's and the accelerated variant's measured time against their flop models (square rows)."""
    from ..solver import accelerated as acc
    from .harness import eagle_flops
    out = []
    for r, rate in zip(rows, gemm_rates):
        d, n = r["d"], r["n"]
        e, p = r["runs"]["EAGLE"], r["runs"]["EAGLE (polar-express)"]
        fe = eagle_flops(d, n, 2, 2)
        fp = acc.flops_per_round(d, n, 2, 2)["total"]
        row = dict(n=n, gemm_rate=rate, eagle_flops_per_iteration=fe, pe_flops_per_round=fp)
        for key, rec, f in (("eagle", e, fe), ("pe", p, fp)):
            if rec.get("median") is not None:
                model = rec["iterations"] * f / rate
                row[key] = dict(iterations=rec["iterations"], measured=rec["median"], model=model,
                                measured_over_model=rec["median"] / model)
            else:
                row[key] = None
        out.append(row)
    return out


def grid(S: config.BenchSizes, seed: int = 0, progress: bool = True) -> dict:
    """All jobs of the module docstring; plain data."""
    from .harness import bar, gemm_rate
    rng = np.random.default_rng(seed + 23)
    out = dict(target=S.grid_target, repeats=S.grid_repeats, tall_factor=TALL_FACTOR)
    # square, tall, wide series
    out["square"] = _series("square", S.grid_ns, S, rng, seed, progress, bar)
    out["square"]["gemm_rate"] = [gemm_rate(n) for n in S.grid_ns]
    out["square"]["flop_model"] = flop_model(out["square"]["rows"], out["square"]["gemm_rate"])
    out["tall"] = _series("tall", S.grid_tall_ns, S, rng, seed, progress, bar)
    out["wide"] = _series("wide", S.grid_tall_ns, S, rng, seed, progress, bar)
    # the κ sweep: iterations of EAGLE and the accelerated variant to 1e-6 and 1e-12, every method's time
    rows = []
    for kappa in bar(S.grid_kappas, progress, "grid: κ sweep"):
        A, B, C, D = _problem("square", S.grid_kappa_n, kappa, rng)
        row = measure(A, B, C, D, SQUARE, target=S.grid_target, repeats=S.grid_repeats, seed=seed,
                      time_limit=S.grid_time_limit, threads=1)
        row.update(k=S.grid_kappa_n, d=A.shape[0], n=A.shape[1], kappa=kappa, shape="square")
        rows.append(row)
    out["kappa"] = dict(rows=rows, n=S.grid_kappa_n)
    # precision: float64 and float32 to the same target (κ = 1e2), in one interleaved block (paired ratios)
    n = S.grid_precision_n
    A, B, C, D = _problem("square", n, 1e2, rng)
    both = measure(A, B, C, D, SQUARE, target=PRECISION_TARGET, repeats=S.grid_repeats, seed=seed,
                   time_limit=S.grid_time_limit, threads=1, levels=(),
                   variants=[(f"{m} [{dt}]", m, dt, 1) for m in SQUARE for dt in ("float64", "float32")])
    prec = {dt: subset(both, lambda k, v, dt=dt: v["dtype"] == dt) for dt in ("float64", "float32")}
    for dt in prec:
        prec[dt].update(k=n, d=n, n=n, kappa=1e2, shape="square", dtype=dt)
    prec["f32_over_f64"] = {m: _ratio(both["runs"], f"{m} [float32]", f"{m} [float64]") for m in SQUARE}
    prec["machine"] = both["machine"]
    out["precision"] = prec
    # threads: one against all cores, in one interleaved block
    cores = os.cpu_count() or 1
    A, B, C, D = _problem("square", n, 1e4, rng)
    ts = sorted({1, cores})
    both = measure(A, B, C, D, SQUARE, target=S.grid_target, repeats=S.grid_repeats, seed=seed,
                   time_limit=S.grid_time_limit, threads=cores,
                   variants=[(f"{m} [{t} thr]", m, "float64", t) for m in SQUARE for t in ts])
    thr = {str(t): subset(both, lambda k, v, t=t: v["threads"] == t) for t in ts}
    for t in ts:
        thr[str(t)].update(k=n, d=n, n=n, kappa=1e4, shape="square", threads=t)
    thr["cores"] = cores
    thr["all_over_one"] = {m: _ratio(both["runs"], f"{m} [{cores} thr]", f"{m} [1 thr]") for m in SQUARE} if cores > 1 else {}
    thr["machine"] = both["machine"]
    out["threads"] = thr
    out["floors"] = floors(S, rng, seed, progress=progress)
    out["batched"] = batched(S, rng, seed, progress=progress)
    out["batch_floor"] = batch_floor(S, seed)
    out["decision"] = decision_rows(out)
    return out


#: The methods of the batched job: one call for the whole batch each (the two LAPACK ones are direct).
BATCHED = ("EAGLE", "LU (numpy.linalg.solve)", "lstsq (torch, gelsd)")
_BATCHED_KIND = {"LU (numpy.linalg.solve)": "direct", "lstsq (torch, gelsd)": "direct"}


def kind(method: str) -> str:
    """``"direct"`` or ``"iterative"``: the registry's kind of a grid method, or a batched job's method's."""
    return _BATCHED_KIND[method] if method in _BATCHED_KIND else bl.REGISTRY[method].kind


def _batched_fns(A, B, C):
    import torch
    import eaglebook
    At, Bt, Ct = (torch.as_tensor(x) for x in (A, B, C))
    return {"EAGLE": lambda: eaglebook.solve(A, B, C).D,
            "LU (numpy.linalg.solve)": lambda: B @ np.linalg.solve(A, C),
            "lstsq (torch, gelsd)": lambda: (Bt @ torch.linalg.lstsq(At, Ct, driver="gelsd").solution).numpy()}


def batched(S: config.BenchSizes, rng, seed: int = 0, progress: bool = False) -> dict:
    """The ``batched`` job: per (count, n) of ``grid_batches`` one batch of count square n×n problems at κ = 1e2
    (d' = n' = 2), every method of :data:`BATCHED` solving the whole batch in one call; the worst relative
    error over the batch decides whether a method reached ``grid_target``; the ones that did are timed
    interleaved (``grid_repeats``), one thread."""
    from .harness import Threads, bar
    rows = []
    for count, n in bar(S.grid_batches, progress, "grid: batches"):
        probs = [tasks.make_problem(n, n, rank=n, kappa=1e2, rng=rng) for _ in range(count)]
        A, B, C, D = (np.stack([p[i] for p in probs]) for i in range(4))
        ref_norm = np.linalg.norm(D, axis=(-2, -1))
        fns = _batched_fns(A, B, C)
        runs, timed = {}, {}
        with Threads(1):
            for name, fn in fns.items():
                out = np.asarray(fn(), dtype=np.float64)
                worst = float(np.max(np.linalg.norm(out - D, axis=(-2, -1)) / ref_norm))
                runs[name] = dict(method=name, final=worst, reached=worst <= S.grid_target)
                if runs[name]["reached"]:
                    timed[name] = fn
            tm = timing.interleaved(timed, S.grid_repeats, warmup=0, threads=1) if timed else None
        for name, rec in runs.items():
            ok = tm is not None and name in timed
            rec.update(median=tm.median(name) if ok else None, spread=list(tm.spread(name)) if ok else None,
                       seconds=list(tm.seconds[name]) if ok else None)
        row = dict(count=count, n=n, d=n, kappa=1e2, target=S.grid_target, runs=runs,
                   machine=None if tm is None else dict(before=tm.before, after=tm.after))
        row.update(compare(runs))
        rows.append(row)
    return dict(rows=rows, methods=list(BATCHED))


def batch_floor(S: config.BenchSizes, seed: int = 0) -> dict:
    """The ``batch_floor`` job: for each of ``grid_floor`` (one large problem, batches of small ones) the whole
    default solve against the GEMM floor of its own iterations, interleaved (``grid_repeats``), with the share
    of the solve spent in its checks (:func:`eaglebook.solver.bench.bench_batches`): name → result."""
    from ..solver import bench as sb
    sizes = {name: (nb, n, kappa) for name, nb, n, kappa in S.grid_floor}
    return sb.bench_batches(tuple(sizes), threads=1, repeats=S.grid_repeats, seed=seed, sizes=sizes)


def unpaired(a: dict | None, b: dict | None, la: str, lb: str) -> dict | None:
    """Ratio of two *separately* interleaved timings a ÷ b (not paired by repeat): the ratio of medians and
    the range min(a)/max(b) … max(a)/min(b); decided only when that whole range lies beyond 1 ± MARGIN."""
    if not a or not b or a.get("seconds") is None or b.get("seconds") is None:
        return None
    if min(len(a["seconds"]), len(b["seconds"])) < 2:
        med = statistics.median(a["seconds"]) / statistics.median(b["seconds"])
        return dict(median=med, lo=med, hi=med, verdict=timing.WITHIN_NOISE + " (one repeat: no spread measured)",
                    decided=False)
    med = statistics.median(a["seconds"]) / statistics.median(b["seconds"])
    lo, hi = min(a["seconds"]) / max(b["seconds"]), max(a["seconds"]) / min(b["seconds"])
    verdict = (f"{la} faster" if hi < 1 - timing.MARGIN else f"{lb} faster" if lo > 1 + timing.MARGIN
               else timing.WITHIN_NOISE)
    return dict(median=med, lo=lo, hi=hi, verdict=verdict, decided=verdict != timing.WITHIN_NOISE)


def decision_rows(g: dict) -> list:
    """One row per measured setting: which method is fastest, by how much over the runner-up (paired ratio and
    its range, or "within noise"), EAGLE's place, and the machine (with its load) the setting was timed on."""
    rows = []

    def add(setting, shape, size, kappa, precision, threads, rec, job=""):
        m = rec.get("margin")
        ve = rec.get("vs_eagle", {}).get(rec["fastest"]) if rec.get("fastest") not in (None, "EAGLE") else None
        rows.append(dict(setting=setting, job=job, shape=shape, size=size, kappa=kappa, precision=precision, threads=threads,
                         fastest=rec.get("fastest"), runner_up=rec.get("runner_up"), margin=m,
                         eagle_rank=(rec["order"].index("EAGLE") + 1) if "EAGLE" in rec.get("order", []) else None,
                         fastest_over_eagle=ve, methods=len(rec.get("order", [])), machine=rec.get("machine")))
    for shape in ("square", "tall", "wide"):
        for r in g[shape]["rows"]:
            add("single machine", shape, f"{r['d']}×{r['n']}", r["kappa"], "float64", 1, r, "sizes")
    for r in g["kappa"]["rows"]:
        add("single machine", "square", f"{r['d']}×{r['n']}", r["kappa"], "float64", 1, r, "κ sweep")
    for dt in ("float64", "float32"):
        r = g["precision"][dt]
        add("single machine", "square", f"{r['d']}×{r['n']}", r["kappa"], dt, 1, r, "precision")
    cores = g["threads"]["cores"]
    if cores > 1:
        r = g["threads"][str(cores)]
        add("single machine", "square", f"{r['d']}×{r['n']}", r["kappa"], "float64", cores, r, "threads")
    for r in g.get("batched", {}).get("rows", []):
        add("batch of small problems", "square", f"{r['count']:,} × {r['d']}×{r['n']}", r["kappa"], "float64", 1, r,
            "batched")
    return rows


def describe(row: dict) -> str:
    """A decision row's verdict in words: "gelsy, by 1.4× (1.3–1.5)" or "gelsy ≈ gelsd (within noise)"."""
    if row["fastest"] is None:
        return "no method reached the target"
    m = row["margin"]
    if m is None:
        return f"{row['fastest']} (the only one timed)"
    if not m["decided"]:
        return f"{row['fastest']} ≈ {row['runner_up']} ({timing.WITHIN_NOISE})"
    return f"{row['fastest']}, by {m['median']:.2g}× ({m['lo']:.2g}–{m['hi']:.2g}) over {row['runner_up']}"


__all__ = ["grid", "measure", "floors", "floor_of", "batched", "batch_floor", "BATCHED", "kind", "unpaired", "compare", "slope", "flop_model", "decision_rows", "describe", "SQUARE", "RECTANGULAR"]

#!/usr/bin/env python3
"""Measure the accelerated EAGLE (eaglebook.solver.accelerated) against EAGLE (eaglebook.solve, defaults).

    nice -n 10 .venv/bin/python tools/accelerated_bench.py [--n 240] [--repeats 5] [--quick]

For n = d = 240, n' = d' = 2, κ = 1e2, 1e4, 1e8, 1e12 and two query blocks (``make_problem``'s C = A G, and the
worst case of chapter 6: a Gaussian C spread over all directions, B = W A, target W C), it prints

1. iterations to relative error 1e-6 and 1e-12 against the exact target D (the construction's W C; the float64
   pseudo-inverse is itself ~κu off it), from runs that go on to the rounding floor; the floor reached;
2. wall time of each method with its own default stopping rule (one thread, interleaved repeats: median, min–max,
   and the paired ratio to EAGLE with its range), the iterations it stopped at and the error there;
3. GEMMs and the flop model per iteration of each method.

A development measurement (its output goes into the report of issue 23); not a test, nothing is asserted.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

import eaglebook
from eaglebook import tasks, timing
from eaglebook.solver import accelerated as acc

KAPPAS = (1e2, 1e4, 1e8, 1e12)
TARGETS = (1e-6, 1e-12)


def worst_case(n, kappa, rng):
    """Chapter 6's worst case: make_problem's A, Gaussian query columns C, B = W A; the target is W C."""
    A = tasks.make_problem(n, n, rank=n, kappa=kappa, rng=rng).A
    W, C = rng.standard_normal((2, n)) / np.sqrt(n), rng.standard_normal((n, 2))
    return A, W @ A, C, W @ C


def first_below(err, eps):
    hit = np.flatnonzero(np.asarray(err) <= eps)
    return int(hit[0] + 1) if hit.size else None


def eagle_flops(d, n, dp, np_, power_iters=5):
    """EAGLE's UPDATE (solver/update.py, S = I, the cheaper Gram side) plus its power iteration."""
    g, h = min(d, n), max(d, n)
    big = 2 * g * g * h * 2                          # Gram (AᵀA or AAᵀ) and its product with A
    small = (2 * dp * n * n if d >= n else 2 * dp * d * d + 2 * dp * d * n) + 2 * d * n * np_ * 2 + 2 * dp * n * np_
    power = power_iters * 4 * d * n
    return dict(gemms=2, condition=big, other=small + power, total=big + small + power)


METHODS = {   # name: (label, callable(A, B, C, **kw))
    "eagle": ("EAGLE (solve defaults)", lambda A, B, C, **kw: eaglebook.solve(A, B, C, **kw)),
    "pe5": ("polar-express deg 5", lambda A, B, C, **kw: acc.solve(A, B, C, **kw)),
    "pe3": ("polar-express deg 3", lambda A, B, C, **kw: acc.solve(A, B, C, degree=3, **kw)),
    "pe7": ("polar-express deg 7", lambda A, B, C, **kw: acc.solve(A, B, C, degree=7, **kw)),
    "ns5": ("quintic NS + Chebyshev", lambda A, B, C, **kw: acc.solve(A, B, C, step="quintic", **kw)),
    "ns3": ("cubic NS + Chebyshev", lambda A, B, C, **kw: acc.solve(A, B, C, step="cubic", **kw)),
    "pe5e": ("polar-express deg 5 + EAGLE's C/D step", lambda A, B, C, **kw: acc.solve(A, B, C, harvest="eagle", **kw)),
    "ns3e": ("cubic NS + EAGLE's C/D step (≈ Algorithm 1)",
             lambda A, B, C, **kw: acc.solve(A, B, C, step="cubic", harvest="eagle", **kw)),
}
TIMED = ("eagle", "pe5", "pe3", "pe7")


def fmt_it(v):
    return "—" if v is None else str(v)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=240)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="κ = 1e2 and 1e8 only, 3 repeats")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    n = args.n
    kappas = (1e2, 1e8) if args.quick else KAPPAS
    repeats = 3 if args.quick else args.repeats
    t_start = time.perf_counter()

    # ---- 3. per-iteration cost model
    print(f"# Cost per iteration at n = d = {n}, n' = d' = 2 (flop model, multiply–add = 2)")
    e = eagle_flops(n, n, 2, 2)
    print(f"| method | GEMMs/iter | conditioning flops | other flops | total | vs EAGLE |")
    print(f"|---|---|---|---|---|---|")
    print(f"| EAGLE | 2 | {e['condition']:.3g} | {e['other']:.3g} | {e['total']:.3g} | 1 |")
    for key, (step, deg) in {"pe3": ("polar-express", 3), "pe5": ("polar-express", 5), "pe7": ("polar-express", 7),
                             "ns5": ("quintic", 5), "ns3": ("cubic", 3)}.items():
        f = acc.flops_per_round(n, n, 2, 2, step=step, degree=deg)
        print(f"| {METHODS[key][0]} | {acc.gemms_per_round(step, deg)} | {f['condition']:.3g} | "
              f"{f['harvest'] + f['power']:.3g} | {f['total']:.3g} | {f['total'] / e['total']:.2f} |")
    print()

    rows, times = [], []
    for i, kappa in enumerate(kappas):
        for kind in ("make_problem", "worst case"):
            rng = np.random.default_rng(args.seed + 10 + i)
            if kind == "make_problem":
                A, B, C, D = tasks.make_problem(n, n, kappa=kappa, rng=rng)
            else:
                A, B, C, D = worst_case(n, kappa, rng)
            # ---- 1. iterations to accuracy (runs to the floor)
            acc_row = dict(kappa=kappa, kind=kind)
            for key, (label, fn) in METHODS.items():
                kw = dict(reference=D, tol=1e-300, max_iter=150 if key in ("eagle", "ns3", "ns3e") else 80)
                r = fn(A, B, C, **kw)
                acc_row[key] = (first_below(r.rel_error, 1e-6), first_below(r.rel_error, 1e-12),
                                float(np.min(r.rel_error)))
            rows.append(acc_row)
            # ---- 2. wall time with each method's own stopping rule
            fns = {key: (lambda fn=METHODS[key][1]: fn(A, B, C)) for key in TIMED}
            At = torch.as_tensor(A)
            fns["svd"] = lambda: torch.linalg.svd(At, full_matrices=False)   # what one spectral check costs
            tm = timing.interleaved(fns, repeats, warmup=1, threads=1)
            stop = {}
            for key in TIMED:
                r = tm.results[key]
                err = float(np.linalg.norm(np.asarray(r.D) - D) / np.linalg.norm(D))
                stop[key] = (r.iterations, r.status, err)
            cert = acc.solve(A, B, C, certify=True)
            stop["checks"] = tm.results["eagle"].checks
            stop["pe5-cert"] = (cert.iterations, cert.status,
                                float(np.linalg.norm(cert.D - D) / np.linalg.norm(D)))
            times.append(dict(kappa=kappa, kind=kind, tm=tm, stop=stop))
            print(f"[done κ={kappa:.0e} {kind}: {time.perf_counter() - t_start:.0f} s]", flush=True)

    print()
    print("# 1. Iterations to relative error 1e-6 / 1e-12 (against the exact target), and the floor reached")
    keys = list(METHODS)
    print("| κ | C | " + " | ".join(METHODS[k][0] for k in keys) + " |")
    print("|---|---|" + "---|" * len(keys))
    for r in rows:
        cells = [f"{fmt_it(r[k][0])} / {fmt_it(r[k][1])} ({r[k][2]:.0e})" for k in keys]
        print(f"| {r['kappa']:.0e} | {r['kind']} | " + " | ".join(cells) + " |")
    print()
    print("# Ratio EAGLE / polar-express deg 5 in iterations to 1e-6 and to 1e-12 (— where one never gets there)")
    for r in rows:
        q = [f"{r['eagle'][j] / r['pe5'][j]:.2f}" if r['eagle'][j] and r['pe5'][j] else "—" for j in (0, 1)]
        print(f"  κ = {r['kappa']:.0e}, {r['kind']}: {q[0]} / {q[1]}")
    print()
    print(f"# 2. Wall time, each with its own default stopping rule ({repeats} interleaved repeats, one thread)")
    print("| κ | C | method | stopped at | status | error there | median ms | min–max ms | ms/iter | ratio to EAGLE (range) | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for t in times:
        tm = t["tm"]
        for key in TIMED:
            it, st, err = t["stop"][key]
            med, (lo, hi) = tm.median(key) * 1e3, tm.spread(key)
            if key == "eagle":
                rt, verdict = "1", ""
            else:
                ra = tm.ratio(key, "eagle")
                rt, verdict = f"{ra.median:.2f} ({ra.lo:.2f}–{ra.hi:.2f})", ra.verdict
            print(f"| {t['kappa']:.0e} | {t['kind']} | {METHODS[key][0]} | {it} | {st} | {err:.1e} | {med:.1f} | "
                  f"{lo * 1e3:.1f}–{hi * 1e3:.1f} | {med / it:.2f} | {rt} | {verdict} |")
        it, st, err = t["stop"]["pe5-cert"]
        print(f"| {t['kappa']:.0e} | {t['kind']} | polar-express deg 5, certify=True | {it} | {st} | {err:.1e} | | | | | |")
        r75 = tm.ratio("pe7", "pe5")
        print(f"| {t['kappa']:.0e} | {t['kind']} | (deg 7 / deg 5: {r75.text('.2f')}, {r75.verdict}; EAGLE ran "
              f"{t['stop']['checks']} spectral check(s); one SVD of A: {tm.median('svd') * 1e3:.1f} ms) | | | | | | | | |")
    print()
    print("# float32 (make_problem; iterations to 1e-5 against the exact target, time with the default rules)")
    print("| κ | EAGLE it to 1e-5 / stop / err | deg 5 it to 1e-5 / stop / err | EAGLE median ms | deg 5 median ms | ratio (range) | verdict |")
    print("|---|---|---|---|---|---|---|")
    for i, kappa in enumerate((1e2, 1e4)):
        A, B, C, D = tasks.make_problem(n, n, kappa=kappa, rng=np.random.default_rng(args.seed + 10 + i))
        A32, B32, C32 = (x.astype(np.float32) for x in (A, B, C))
        e = eaglebook.solve(A32, B32, C32, reference=D)
        p = acc.solve(A32, B32, C32, reference=D)
        tm = timing.interleaved({"eagle": lambda: eaglebook.solve(A32, B32, C32),
                                 "pe5": lambda: acc.solve(A32, B32, C32)}, repeats, threads=1)
        ra = tm.ratio("pe5", "eagle")
        print(f"| {kappa:.0e} | {fmt_it(first_below(e.rel_error, 1e-5))} / {e.iterations} / {e.rel_error[-1]:.1e} | "
              f"{fmt_it(first_below(p.rel_error, 1e-5))} / {p.iterations} / {p.rel_error[-1]:.1e} | "
              f"{tm.median('eagle') * 1e3:.1f} | {tm.median('pe5') * 1e3:.1f} | {ra.median:.2f} ({ra.lo:.2f}–{ra.hi:.2f}) | "
              f"{ra.verdict} |")
    print()
    print("machine:", timing.machine_line(times[0]["tm"].before, times[-1]["tm"].after))
    print(f"total {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()

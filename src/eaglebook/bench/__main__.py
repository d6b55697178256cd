"""Command line: ``python -m eaglebook.bench PART [options]``, PART one of train, centralized, sketched,
real, ablations, floor; ``python -m eaglebook.bench PART --help`` lists that part's options.

Every part prints a summary table (method, iterations, time, error, status) on standard output;
``--json FILE`` writes the full results as JSON to FILE (the only JSON output); progress bars go to
standard error (``--quiet`` turns them off).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys

from .._cli import Parser, check_output, fail, floor_arguments, integer, number

PART_HELP = {
    "train": "ms per training step against its matrix-product floor, per regime",
    "centralized": "(a) the κ sweep, the headline n = 240 run, EAGLE vs lstsq as n grows (the paper's §5.1)",
    "sketched": "(b) iterations vs n/r, per-iteration time at s = n…n/8, EAGLE vs SGD and RandSketch+CG (§5.3)",
    "real": "(c) the paper's Table 2 set-up on HB/illc1850 or a Matrix Market file (§5.4)",
    "ablations": "(d) six data distributions, noise with early stopping, the step-size grid (App. E.3)",
    "floor": "the whole default solve against the GEMM floor of its iterations, factorisations per regime",
    "grid": "(e) which solver to use: square/tall/wide sizes, a κ sweep, float32/float64, 1 thread/all cores, "
            "cost exponents, EAGLE against its flop model, the decision table",
}


def _jsonable(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        try:
            return _jsonable(x.item())
        except (ValueError, AttributeError):
            return x.tolist()
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    return str(x)


_positive_int = integer(1)
_positive_float = number(0, lo_open=True)
_kappa = number(1)                                   # a condition number: >= 1
_sketchable = integer(8)                             # an n whose sketches go down to s = n/8
_target = number(0, 1, lo_open=True, hi_open=True)   # a relative error target


def _tuple_of(cast, minimum, what: str):
    """An argparse type: comma-separated values of ``cast``, each >= ``minimum``."""
    def parse(s):
        try:
            vs = tuple(cast(x) for x in s.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be comma-separated {what}, got {s!r}") from None
        if not vs or min(vs) < minimum or not all(math.isfinite(v) for v in vs):
            raise argparse.ArgumentTypeError(f"must be comma-separated {what} >= {minimum}, got {s!r}")
        return vs
    parse.__name__ = f"comma-separated {what} >= {minimum}"
    return parse


_ints = _tuple_of(int, 2, "integers")
_floats = _tuple_of(float, 1, "numbers")


# the size options of each part: (flag, BenchSizes field, type, help)
SIZES = {
    "centralized": [("--n", "central_n", integer(2), "n = d of the κ sweep"),
                    ("--kappas", "kappas", _floats, "condition numbers of the sweep, comma-separated"),
                    ("--sizes", "size_ns", _ints, "n of the EAGLE-vs-lstsq size series, comma-separated"),
                    ("--headline-n", "headline_n", _sketchable, "n of the headline run (κ = 1e4, to 1e-6)"),
                    ("--overhead-iters", "overhead_iters", _positive_int, "iterations per method for the overhead")],
    "sketched": [("--n", "sketch_n", _sketchable, "n = d of the r sweep (r = n/8 … n)"),
                 ("--kappa", "sketch_kappa", _kappa, "condition number of the r sweep"),
                 ("--timing-n", "sketch_timing_n", _sketchable, "n of the per-iteration timings at s = n … n/8"),
                 ("--timing-iters", "sketch_timing_iters", _positive_int, "iterations per timing"),
                 ("--headline-n", "headline_n", _sketchable, "n of the comparison with RandSketch+CG")],
    "real": [("--max-cols", "real_max_cols", _positive_int, "use only the first columns of HB/illc1850 (not with "
                                                            "--matrix)")],
    "grid": [("--ns", "grid_ns", _ints, "n = d of the square series (κ = 1e4), comma-separated"),
             ("--tall-ns", "grid_tall_ns", _ints, "short side k of the tall (8k×k) and wide (k×8k) series"),
             ("--kappas", "grid_kappas", _floats, "condition numbers of the κ sweep, comma-separated"),
             ("--kappa-n", "grid_kappa_n", integer(2), "n = d of the κ sweep"),
             ("--precision-n", "grid_precision_n", integer(2), "n = d of the float32/float64 and thread jobs"),
             ("--target", "grid_target", _target, "relative error every method is timed to, in (0, 1)"),
             ("--grid-repeats", "grid_repeats", _positive_int, "interleaved timing repeats"),
             ("--grid-time-limit", "grid_time_limit", _positive_float, "seconds per traced run")],
    "ablations": [("--n", "ablation_n", integer(2), "n = d of the distributions and the noise runs"),
                  ("--instances", "ablation_instances", _positive_int, "instances of the step-size grid"),
                  ("--grid-points", "grid_points", _positive_int, "factors in [0.2, 2] of the step-size grid")],
}
COMMON_SIZES = [("--time-limit", "time_limit", _positive_float, "seconds per iterative run"),
                ("--max-iter", "max_iter", _positive_int, "iterations per iterative run"),
                ("--repeats", "repeats", _positive_int, "timing repeats (median)")]


def _train_arguments(ap) -> None:
    """The options of ``train`` (:mod:`.train`; defined here, so that parsing needs no torch)."""
    ap.add_argument("--steps", type=integer(1), default=20, help="train: steps per timing block")
    ap.add_argument("--batch", type=integer(1), default=1024, help="train: batch size")
    ap.add_argument("--repeats", type=integer(1), default=5, help="train: timing blocks")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"], help="train: dtype")


def parser() -> argparse.ArgumentParser:
    ap = Parser(prog="python -m eaglebook.bench",
                                 description="Benchmarks of eaglebook (training step; EAGLE against baselines; the "
                                             "solver's GEMM floor).  `python -m eaglebook.bench PART --help` lists a "
                                             "part's options.")
    sub = ap.add_subparsers(dest="what", metavar="PART", required=True)
    for part, text in PART_HELP.items():
        p = sub.add_parser(part, help=text, description=f"{part}: {text}.  Prints a summary table; --json FILE "
                                                         f"writes the full results.")
        p.add_argument("--json", metavar="FILE", help="write the full results as JSON to FILE")
        p.add_argument("--threads", type=_positive_int, default=None, help="BLAS and torch threads (default 1)")
        p.add_argument("--quiet", action="store_true", help="no progress bars")
        if part == "train":
            _train_arguments(p)
            continue
        if part == "floor":
            floor_arguments(p)
            continue
        p.add_argument("--seed", type=integer(0), default=0, help="random seed (default 0)")
        p.add_argument("--profile", default=None, choices=("paper", "ci"),
                       help="sizes: paper (the paper's) or ci (small); default $EAGLEBOOK_PROFILE or paper; the "
                            "size options below override single sizes")
        if part == "real":
            p.add_argument("--matrix", metavar="FILE.mtx", help="a Matrix Market file instead of HB/illc1850")
        g = p.add_argument_group("sizes")
        for flag, fieldname, typ, text in SIZES[part] + COMMON_SIZES:
            meta = {_ints: "N,N,...", _floats: "X,X,..."}.get(typ) or ("N" if typ.what == "integer" else "X")
            g.add_argument(flag, dest=f"size_{fieldname}", type=typ, default=None, metavar=meta, help=text)
    return ap


# ---------------------------------------------------------------------------------------------- the summary table
def _fmt(v, spec):
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    return format(v, spec)


def _rows_of(runs: dict, prefix: str = "") -> list:
    out = []
    for name, r in runs.items():
        if not isinstance(r, dict) or "iterations" not in r:
            continue
        t = r.get("median_time") or r.get("elapsed")
        out.append((prefix + name, r.get("iterations"), t, r.get("final"), r.get("status")))
    return out


def _centralized_rows(R: dict) -> list:
    rows = []
    for row in R.get("sweep", []):
        lab = f"κ={row['kappa']:.0e} {'rank n/2' if row['rank_deficient'] else 'full'}: "
        rows += _rows_of(row["runs"], lab)
    if R.get("headline"):
        rows += _rows_of(R["headline"]["runs"], f"headline n={R['headline']['n']}: ")
    for s in R.get("sizes", []):
        rows += _rows_of({"EAGLE": s["eagle"]}, f"size n={s['n']}: ")
    return rows


def _sketched_rows(R: dict) -> list:
    rows = []
    for r in R.get("r_sweep", []):
        rows += _rows_of({"EAGLE": r["eagle"], "SGD": r["sgd"]}, f"r={r['r']}: ")
    if R.get("vs_randsketch"):
        rows += _rows_of(R["vs_randsketch"]["runs"], "vs RandSketch+CG: ")
    return rows


def _grid_rows(R: dict) -> list:
    rows = []
    for key in ("square", "tall", "wide", "kappa"):
        for row in R.get(key, {}).get("rows", []):
            for name, r in row["runs"].items():
                rows.append((f"{key} {row['d']}×{row['n']} κ={row['kappa']:.0e}: {name}", r.get("iterations"),
                             r.get("median"), r.get("final"), r.get("status")))
    return rows


def _ablation_rows(R: dict) -> list:
    rows = []
    for dst in R.get("distributions", []):
        rows += _rows_of(dst["runs"], f"{dst['kind']}: ")
    for nz in R.get("noise", []):
        rows += _rows_of(nz["runs"], f"noise {'rank n/2' if nz['rank_deficient'] else 'full'}: ")
    return rows


#: each benchmark part's table (the parts are the CLI's, not compute regimes)
_TABLES = {"centralized": _centralized_rows, "sketched": _sketched_rows, "grid": _grid_rows, "ablations": _ablation_rows,
           "real": lambda R: _rows_of(R.get("runs", {}), f"{R.get('matrix', '')}: ")}


def table_rows(part: str, res: dict) -> list:
    """(method, iterations, time [s], error, status) rows of one part's results (none for a part without a table)."""
    R = res["results"] if "results" in res else res
    return _TABLES[part](R) if part in _TABLES else []


def print_table(rows: list, file=sys.stdout) -> None:
    head = ("method", "iterations", "time [s]", "error", "status")
    cells = [(str(m), _fmt(i, "d") if isinstance(i, int) else _fmt(i, ".0f"), _fmt(t, ".4g"), _fmt(e, ".2e"),
              _fmt(s, "s")) for m, i, t, e, s in rows]
    widths = [max(len(h), *(len(c[k]) for c in cells)) if cells else len(h) for k, h in enumerate(head)]
    line = "  ".join(h.ljust(w) if k in (0, 4) else h.rjust(w) for k, (h, w) in enumerate(zip(head, widths)))
    print(line, file=file)
    print("  ".join("-" * w for w in widths), file=file)
    for c in cells:
        print("  ".join(x.ljust(w) if k in (0, 4) else x.rjust(w) for k, (x, w) in enumerate(zip(c, widths))),
              file=file)


def main(argv=None) -> None:
    ap = parser()
    a = ap.parse_args(argv)
    prog = f"{ap.prog} {a.what}"
    # every input is checked here, before any work: an error is one line on standard error and exit status 2
    try:
        if a.json:
            check_output("--json", a.json)
        if a.what == "floor":
            from ..solver import bench as sb
            sb.check_arguments(a)
        elif a.what != "train":
            run = _prepare(a)
    except ValueError as e:
        fail(prog, str(e))
    out = None
    if a.what == "train":
        from . import train
        out = train.run_cli(a)
    elif a.what == "floor":
        if a.setting == "single":
            out = sb.bench_floor(a.n, kappa=a.kappa, threads=a.threads or 1, repeats=a.repeats or 5, seed=a.seed,
                                 sketch_ns=a.sketch_n, machines=a.machines)
            print(sb.summary(out))
        else:
            names = tuple(sb.SETTINGS) if a.setting == "all" else (a.setting,)
            out = sb.bench_batches(names, threads=a.threads or 1, repeats=a.repeats or 3, seed=a.seed)
            print(sb.batch_summary(out))
    else:
        out = run()
        print(f"{a.what}: {out['wall_seconds']:.1f} s on {out['environment']['threads']} thread(s), load average "
              f"{out['environment']['load_average']}")
        print_table(table_rows(a.what, out))
    if a.json:
        with open(a.json, "w") as f:
            f.write(json.dumps(_jsonable(out), indent=1))
        print(f"wrote {a.json}", file=sys.stderr)


def _prepare(a):
    """The harness parts' checks (profile, sizes, the matrix and its Table 2 set-up); ``ValueError`` with one
    line, else the function that runs the part."""
    matrix = getattr(a, "matrix", None)
    if matrix is not None and getattr(a, "size_real_max_cols", None) is not None:
        raise ValueError("--max-cols applies to HB/illc1850 only; it cannot be combined with --matrix")
    if matrix is not None:
        from .realdata import load_matrix_market, table2_problem
        M = load_matrix_market(matrix)             # a missing, malformed or complex file: the loader's message
        try:
            table2_problem(M, seed=a.seed)         # a matrix without a usable Table 2 set-up (all zero, rank = rows)
        except ValueError as e:
            raise ValueError(f"argument matrix={matrix!r}: {e}") from None
    from .. import config
    from . import harness
    sizes = config.get(a.profile).bench            # a bad $EAGLEBOOK_PROFILE is a ValueError naming it
    over = {k[5:]: v for k, v in vars(a).items() if k.startswith("size_") and v is not None}
    if over:
        sizes = dataclasses.replace(sizes, **over)
    cfg = harness.BenchConfig(part=a.what, sizes=sizes, seed=a.seed, threads=a.threads or 1, matrix=matrix)
    return lambda: harness.run(cfg, progress=not a.quiet)


if __name__ == "__main__":
    main()

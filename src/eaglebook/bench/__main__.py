"""Command line: ``python -m eaglebook.bench {train,centralized,sketched,real,ablations} [--json out.json]``."""

from __future__ import annotations

import argparse
import json
import math
import sys


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


def main(argv=None) -> None:
    from . import harness, train
    ap = argparse.ArgumentParser(prog="python -m eaglebook.bench",
                                 description="Benchmarks of eaglebook (training step; EAGLE against baselines).")
    ap.add_argument("what", choices=("train",) + harness.PARTS)
    ap.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    ap.add_argument("--profile", default=None, choices=("paper", "ci"),
                    help="sizes: paper (the paper's) or ci (small); default $EAGLEBOOK_PROFILE or paper")
    ap.add_argument("--matrix", metavar="FILE.mtx", help="real: a Matrix Market file instead of HB/illc1850")
    ap.add_argument("--threads", type=int, default=None, help="BLAS and torch threads (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    train.add_arguments(ap)
    a = ap.parse_args(argv)
    if a.what == "train":
        train.run_cli(a)
        return
    from .. import config
    if a.matrix is not None and a.what != "real":
        ap.error("--matrix is only for `real`")
    if a.matrix is not None:
        from .realdata import load_matrix_market
        try:
            load_matrix_market(a.matrix)          # fail early, with the loader's message
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(2) from None
    prof = config.get(a.profile)
    try:
        cfg = harness.BenchConfig(part=a.what, sizes=prof.bench, seed=a.seed, threads=a.threads or 1, matrix=a.matrix)
    except ValueError as e:
        ap.error(str(e))
    out = harness.run(cfg, progress=not a.quiet)
    out = _jsonable(out)
    text = json.dumps(out, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text)
        print(f"wrote {a.json} ({out['wall_seconds']:.1f} s)", file=sys.stderr)
    else:
        print(text)


if __name__ == "__main__":
    main()

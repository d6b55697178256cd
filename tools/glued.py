"""The glued values and the scorecard of a built book, as one JSON snapshot, and the comparison of two.

    .venv/bin/python tools/glued.py snapshot _build out.json [--claims _build/claims/ci]
    .venv/bin/python tools/glued.py volatile a.json b.json       # keys that differ between two builds of one commit
    .venv/bin/python tools/glued.py compare before.json after.json

A snapshot maps each executed notebook (``_build/jupyter_execute/**.ipynb``, by its path below that folder) to
its glued values (``key -> text/plain``, as myst-nb stores them), and each claims ledger of the profile to its
rows (``key -> [ours, verdict]``) and checks.  Used by ``tests/test_same_book.py``: the restructure of the
chapters ("Chapters that read like a book") must leave the ci build's values unchanged, apart from the keys
that differ between two builds of the same commit (timings: recorded in the baseline as ``volatile``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path


def glued(nb_path: Path) -> dict[str, str]:
    """``key -> text/plain`` of what a notebook glued: from its outputs (a papermill run), or from the
    ``<name>.glue.json`` beside it (the book build moves the glue outputs there: eaglebook._toolchain.glue_eval)."""
    nb = json.loads(nb_path.read_text())
    out = {}
    side = nb_path.with_name(nb_path.stem + ".glue.json")
    if side.is_file():
        for name, o in json.loads(side.read_text()).items():
            text = (o.get("data") or {}).get("text/plain", "")
            out[name] = "".join(text) if isinstance(text, list) else text
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []) or []:
            name = (o.get("metadata") or {}).get("scrapbook", {}).get("name")
            if name is not None:
                data = o.get("data") or {}     # papermill keeps a glued value under its record mime type
                text = data.get("text/plain", data.get("application/papermill.record/text/plain", ""))
                out[name] = "".join(text) if isinstance(text, list) else text
    return out


def snapshot(build: Path, claims: Path | None = None) -> dict:
    ex = build / "jupyter_execute"
    notebooks = {str(p.relative_to(ex)): glued(p) for p in sorted(ex.rglob("*.ipynb"))}
    ledgers = {}
    for p in sorted((claims or build / "claims" / "ci").glob("*.json")):
        led = json.loads(p.read_text())
        comps = led.get("comparisons", {})
        timed = lambda k, v: bool(v.get("spread") or v.get("load") or TIMING.search(k) or re.search(r"\btime\b", v.get("what", "")))
        ledgers[p.stem] = {"comparisons": {k: [v["ours"], v["verdict"]] for k, v in comps.items() if not timed(k, v)},
                           # timing rows: their values and verdicts change from run to run (compared by key only)
                           "timed": {k: [] for k, v in comps.items() if timed(k, v)},
                           "checks": {k: [v["value"], v["ok"] in (True, "True")] for k, v in led.get("checks", {}).items()}}
    return {"glued": notebooks, "ledgers": ledgers}


def flat(snap: dict) -> dict[str, str]:
    out = {}
    for nb, kv in snap.get("glued", {}).items():
        for k, v in kv.items():
            out[f"glued:{nb}:{k}"] = v
    for led, parts in snap.get("ledgers", {}).items():
        for part, kv in parts.items():
            for k, v in kv.items():   # a timing row is a comparison whose value is not compared
                out[f"ledger:{led}:{'comparisons' if part == 'timed' else part}:{k}"] = TIMED_ROW if part == "timed" else json.dumps(v)
    return out


#: Chapters that time things: their glued values are compared by key only (their timings change from run to run,
#: and a timing on another machine or under another load changes the words built from it).
TIMED = ("book/07_benchmarks.ipynb", "book/08_distributed.ipynb")
#: A glued key that holds a time, a load or a machine (in any chapter): compared by key only.
TIMING = re.compile(r"minute|second|hour|time|load|machine|speed|faster|wall|cost|_t_", re.I)


TIMED_ROW = "(a timing: compared by key only)"


def by_key_only(key: str) -> bool:
    """A flat key (``glued:<notebook>:<key>``) whose value is a timing or built from one."""
    parts = key.split(":")
    return parts[0] == "glued" and (parts[1] in TIMED or bool(TIMING.search(parts[-1])))


def differences(before: dict, after: dict, volatile=(), key_only=by_key_only) -> list[str]:
    """Every key missing, added or changed between two snapshots, apart from ``volatile`` keys; the values of keys
    for which ``key_only`` holds are not compared."""
    a, b = flat(before), flat(after)
    vol = set(volatile)
    out = []
    for k in sorted(set(a) | set(b)):
        if k in vol or (k in a and k in b and (key_only(k) or TIMED_ROW in (a[k], b[k]))):
            continue
        if k not in b:
            out.append(f"missing after: {k} = {a[k]}")
        elif k not in a:
            out.append(f"new after: {k} = {b[k]}")
        elif a[k] != b[k]:
            out.append(f"changed: {k}: {a[k]} -> {b[k]}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot"); s.add_argument("build", type=Path); s.add_argument("out", type=Path)
    s.add_argument("--claims", type=Path)
    v = sub.add_parser("volatile"); v.add_argument("a", type=Path); v.add_argument("b", type=Path)
    c = sub.add_parser("compare"); c.add_argument("before", type=Path); c.add_argument("after", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "snapshot":
        a.out.write_text(json.dumps(snapshot(a.build, a.claims), indent=1, sort_keys=True))
        return 0
    if a.cmd == "volatile":
        x, y = flat(json.loads(a.a.read_text())), flat(json.loads(a.b.read_text()))
        print(json.dumps(sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k)), indent=1))
        return 0
    before = json.loads(a.before.read_text())
    diff = differences(before, json.loads(a.after.read_text()), before.get("volatile", ()))
    print("\n".join(diff) or "same book")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())

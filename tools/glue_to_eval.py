#!/usr/bin/env python3
"""Rewrite a chapter's glue roles into the ``{eval}`` form that both the book and JupyterLab show.

    .venv/bin/python tools/glue_to_eval.py book/02_model.md [more chapters...] [--check]

In the chapter's Markdown (never inside a ``{code-cell}``):

    {glue:text}`key:fmt`  ->  {eval}`G("key", "fmt")`
    {glue:text}`key`      ->  {eval}`G("key")`
    {glue}`key`           ->  {eval}`G("key")`   (as text: the book then shows it like {glue:text}`key`)

and adds ``G`` to the chapter's ``from eaglebook.report import ...`` line (a chapter without that line is
refused: add the import to its set-up cell first).  A cross-document key (``doc::key``) or a key or format
the ``{eval}`` form cannot hold is refused with its line number; nothing is written then.  Running it again
changes nothing (idempotent).  ``--check`` writes nothing and exits 1 when a file would change.

The form is the contract of ``eaglebook._toolchain.glue_eval`` (the book's role) and
``eaglebook.report.G`` (the kernel's helper); see README, "Open as notebooks".
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROLE = re.compile(r"\{glue(?P<kind>:text)?\}`(?P<body>[^`]*)`")
OTHER_GLUE = re.compile(r"\{glue:(?!text\})[\w-]*\}`")      # {glue:md}`…`, {glue:any}`…`: not rewritten
KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FMT = re.compile(r"[^\"'`\\:]*")
FENCE = re.compile(r"^(`{3,}|~{3,})\s*(\{code-cell\})?")
IMPORT = re.compile(r"^from eaglebook\.report import (?P<names>[^#\n(]+?)[ \t]*(?P<comment>#.*)?$", re.M)


class ConversionError(ValueError):
    pass


def eval_form(kind: str | None, body: str, where: str) -> str:
    if "::" in body:
        raise ConversionError(f"{where}: {body!r} glues from another document; the kernel cannot evaluate that")
    key, sep, fmt = body.rpartition(":") if kind else ("", "", "")
    if not kind or not sep:
        key, fmt = body, None
    if not KEY.fullmatch(key) or (fmt is not None and not FMT.fullmatch(fmt)):
        raise ConversionError(f"{where}: cannot write {body!r} as G(\"key\", \"fmt\")")
    return f'{{eval}}`G("{key}")`' if fmt is None else f'{{eval}}`G("{key}", "{fmt}")`'


def convert(text: str, name: str = "chapter") -> tuple[str, int]:
    """Return the rewritten chapter and the number of roles rewritten."""
    out, n, fence = [], 0, None          # fence: the code-cell fence we are inside, if any
    for i, line in enumerate(text.splitlines(keepends=True), 1):
        m = FENCE.match(line)
        if fence is None and m and m.group(2):
            fence = m.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None:
            if OTHER_GLUE.search(line):
                raise ConversionError(f"{name}:{i}: only {{glue:text}} and {{glue}} roles can become {{eval}}: "
                                      f"{line.strip()[:80]}")

            def sub(mm, i=i):
                return eval_form(mm["kind"], mm["body"], f"{name}:{i}")
            line, k = ROLE.subn(sub, line)
            n += k
        out.append(line)
    new = "".join(out)
    if "{eval}`G(" in new:
        new = add_import(new, name)
    return new, n


def add_import(text: str, name: str) -> str:
    m = IMPORT.search(text)
    if not m:
        raise ConversionError(f"{name}: its prose uses {{eval}}`G(...)` but no code cell has "
                              "`from eaglebook.report import ...`: add `from eaglebook.report import G` to its set-up cell")
    names = [x.strip() for x in m["names"].split(",") if x.strip()]
    if "G" in names:
        return text
    line = f"from eaglebook.report import {', '.join(['G', *names])}" + (f"  {m['comment']}" if m["comment"] else "")
    return text[:m.start()] + line + text[m.end():]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("chapters", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a chapter would change")
    a = ap.parse_args(argv)
    changed = 0
    for path in a.chapters:
        old = path.read_text(encoding="utf-8")
        try:
            new, n = convert(old, str(path))
        except ConversionError as exc:
            print(f"glue_to_eval: {exc}", file=sys.stderr)
            return 2
        if new != old:
            changed += 1
            if not a.check:
                path.write_text(new, encoding="utf-8")
        print(f"{path}: {n} glue role(s) {'to rewrite' if a.check else 'rewritten'}"
              f"{'' if new != old else ' (unchanged)'}")
    return 1 if a.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())

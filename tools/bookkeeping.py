"""How much of each chapter's code is bookkeeping, and how its cells read (the measure of the issue "Chapters
that read like a book").

    .venv/bin/python tools/bookkeeping.py            # a Markdown table over book/NN_*.md
    .venv/bin/python tools/bookkeeping.py --json     # the same as JSON

Per chapter (code cells only; blank lines and cell-option lines such as ``:tags:`` do not count):

* ``code``: code lines; ``prose``: non-blank Markdown lines outside code cells;
* ``bookkeeping``: lines of statements that glue, declare, record or check (``glue(``, ``.declare(``,
  ``.record(``, ``.check(``, ``.timed(``, ``.uses(``), a statement's continuation lines included, and the
  ``Markdown(…)`` paragraphs that compile prose in Python (a generated table, marked by a ``# table`` comment
  on its line, is not bookkeeping); its share of ``code``;
* ``declare``: ``declare(`` calls; ``glue``: ``glue(`` calls; ``eval``: ``{eval}`` references in the prose;
* ``markdown``: ``Markdown(`` calls (prose compiled in Python) not marked as a table by a ``# table`` comment
  on the line;
* ``long_cells``: code cells over 30 lines, the parameters cell excepted; ``longest``: the longest cell.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from eaglebook._toolchain.bookkeeping import is_bookkeeping, statements

ROOT = Path(__file__).resolve().parents[1]
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.M | re.S)
LONG = 30


def measure(path: Path) -> dict:
    text = path.read_text()
    body = text.split("\n---\n", 1)[1] if text.startswith("---") else text
    cells = [m.group(1) for m in CELL.finditer(body)]
    prose = CELL.sub("", body)
    code = booking = declare = glue = markdown_f = long_cells = longest = 0
    for cell in cells:
        lines = [ln for ln in cell.splitlines() if ln.strip() and not re.match(r"^:[\w-]+:", ln.strip())]
        if any("parameters" in ln for ln in cell.splitlines() if ln.startswith(":tags:")):
            continue
        code += len(lines)
        longest = max(longest, len(lines))
        long_cells += len(lines) > LONG
        for st in statements(lines):
            if is_bookkeeping("\n".join(st)):
                booking += len(st)
        declare += len(re.findall(r"\.declare\(", cell))
        glue += len(re.findall(r"(^|[^\w.])glue\(", cell, re.M))
        markdown_f += sum(1 for ln in lines if "Markdown(" in ln and "# table" not in ln)
    return dict(chapter=path.stem, code=code, prose=sum(1 for ln in prose.splitlines() if ln.strip()),
                bookkeeping=booking, share=round(booking / code, 3) if code else 0.0, declare=declare, glue=glue,
                eval=len(re.findall(r"\{eval\}", prose)), markdown=markdown_f, long_cells=long_cells, longest=longest)


def chapters(root: Path = ROOT) -> list[Path]:
    return sorted((root / "book").glob("[0-9][0-9]_*.md"))


def table(rows: list[dict]) -> str:
    cols = ["chapter", "prose", "code", "bookkeeping", "share", "declare", "glue", "eval", "markdown", "long_cells", "longest"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(f"{100 * r[c]:.0f}%" if c == "share" else str(r[c]) for c in cols) + " |")
    return "\n".join(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print JSON instead of a Markdown table")
    a = ap.parse_args(argv)
    rows = [measure(p) for p in chapters()]
    print(json.dumps(rows, indent=1) if a.json else table(rows))


if __name__ == "__main__":
    main()

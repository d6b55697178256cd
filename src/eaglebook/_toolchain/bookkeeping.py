"""What counts as bookkeeping in a chapter's code: the statements that glue, declare, record, check or note
provenance, and prose compiled in Python (``Markdown(...)`` not marked as a table).  Shared by
``tools/bookkeeping.py`` (the per-chapter share) and :mod:`eaglebook._toolchain.check_html` (a visible cell
that only does bookkeeping fails the page)."""

from __future__ import annotations

import re

BOOKKEEPING = re.compile(r"(^|[^\w.])(glue\(|\w+\.glue\(|\w+\.declare\(|\w+\.record\(|\w+\.check\(|\w+\.timed\(|\w+\.uses\(|Markdown\()")
#: statements that are neither science nor bookkeeping: imports, blank set-up
NEUTRAL = re.compile(r"^\s*(import |from \S+ import |#|pass\b)")


def statements(lines: list[str]):
    """Group code lines into statements by bracket depth (a rough tokenizer, enough for counting)."""
    stmt, depth = [], 0
    for line in lines:
        stmt.append(line)
        code = re.sub(r"#.*$", "", re.sub(r"(\"[^\"]*\"|'[^']*')", "", line))
        depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
        if depth <= 0 and not line.rstrip().endswith("\\"):
            yield stmt
            stmt, depth = [], 0
    if stmt:
        yield stmt


def is_bookkeeping(statement: str) -> bool:
    """A statement that glues, declares, records, checks or notes provenance, or compiles prose in Python (a
    generated table, marked ``# table`` on its line, is not bookkeeping)."""
    return bool(BOOKKEEPING.search(statement)) and not ("Markdown(" in statement and "# table" in statement)


#: the ledger and glue calls alone (a Markdown(...) call shows the reader something: not a ledger cell)
LEDGER = re.compile(r"(^|[^\w.])(glue\(|\w+\.glue\(|\w+\.declare\(|\w+\.record\(|\w+\.check\(|\w+\.timed\(|\w+\.uses\()")


def only_bookkeeping(source: str) -> bool:
    """A cell whose every statement glues, declares, records, checks or notes provenance (imports and comments
    aside), with at least one: a cell the reader has no reason to see."""
    lines = [ln for ln in source.splitlines() if ln.strip() and not re.match(r"^:[\w-]+:", ln.strip())]
    kinds = ["book" if LEDGER.search("\n".join(st)) else "neutral" if NEUTRAL.match(st[0]) else "science"
             for st in statements(lines)]
    return "book" in kinds and "science" not in kinds

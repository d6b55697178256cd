"""The scorecard: the chapters' saved ledgers, judged claim by claim.

The tally counts **claims of the paper** (:data:`eaglebook.claims.CLAIMS`), not rows: each claim takes the
verdict of its headline row, or, where the paper states it for several regimes, the weakest verdict of its
headline rows (one per regime).  Evidence rows (other readings, post-hoc statistics, ablations that depart
from a stated value, other regimes, superseded rows) are listed beneath, with their own verdicts, and never
counted.  Claims found only in secondary summaries are listed apart and never tallied; so are the claims of a
neighbouring paper that the book tests (chapter 10: :data:`eaglebook.claims.NEIGHBOUR`), which are judged
like the paper's, headline by headline, in a table of their own (:func:`neighbour_table`).

Only ledgers of the current code, chapter source and profile, run with the book's own parameters, are used
(:func:`load_ledgers`); the others are reported as ignored, with the reason.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from . import claims as _claims
from .cache import repo_root
from .ledger import ADVANCE, EVIDENCE, HEADLINE, NOT_JUDGED, VERDICTS, Ledger, claims_dir
from .provenance import chapter_hash, code_hash
from .stability import Stability

__all__ = ["BOOK_PARAMETERS", "stale_reason", "load_ledgers", "rows", "ClaimResult", "claim_results",
           "verdict_counts", "claims_table", "neighbour_table", "beyond_table", "beyond_label", "BEYOND_LABELS", "comparisons_table", "secondary_table", "checks_table",
           "scorecard_points", "toc_chapters", "NOT_RUN", "machines_table"]

#: The chapter parameters whose ledgers the scorecard accepts (the book's own build).
BOOK_PARAMETERS = {"seed": 0}
NOT_RUN = "not run"
_RANK = {v: i for i, v in enumerate(VERDICTS)}    # reproduced < partly < not reproduced (worse is larger)


def stale_reason(led: Ledger, profile: str) -> str | None:
    """Why ``led`` may not go on the current scorecard (None when it may)."""
    prov = led.provenance or {}
    if not prov:
        return "no provenance (written by older code)"
    if prov.get("profile") != profile or led.profile != profile:
        return f"profile {prov.get('profile')!r}, not {profile!r}"
    if prov.get("code") != code_hash():
        return f"package source {prov.get('code')} differs from the current {code_hash()}"
    if prov.get("chapter_source") != chapter_hash(led.chapter):
        return "the chapter's source changed since it ran"
    params = prov.get("parameters", {})
    odd = {k: params[k] for k in BOOK_PARAMETERS if k in params and params[k] != BOOK_PARAMETERS[k]}
    if odd:
        return f"run with non-default parameters {odd}"
    if prov.get("settings") or led.settings:
        return f"run with non-default settings {dict(sorted((prov.get('settings') or led.settings).items()))}"
    return None


def load_ledgers(profile: str, chapters: list[str] | None = None, *, ignored: list | None = None) -> list[Ledger]:
    """The saved ledgers of ``profile`` from the current code (in ``chapters`` order when given, else by
    file name; a chapter's variants ``<chapter>--<variant>.json`` follow its main file).  A stale or
    foreign ledger is left out; pass a list as ``ignored`` to receive ``(file name, reason)`` pairs."""
    d = claims_dir(profile)
    files = sorted(d.glob("*.json")) if d.is_dir() else []
    if chapters:
        files = [f for c in chapters for f in files if f.stem == c or f.stem.startswith((f"{c}--", f"{c}@"))]
    out = []
    for f in files:
        try:
            led = Ledger(**json.loads(f.read_text()))
        except (ValueError, TypeError) as e:
            reason = f"unreadable ({e.__class__.__name__})"
        else:
            reason = stale_reason(led, profile)
            if reason is None:
                out.append(led)
                continue
        if ignored is not None:
            ignored.append((f.name, reason))
    return out


def _cell(text: Any) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _fmt(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        if math.isfinite(x) and x == int(x) and abs(x) < 1e6:
            return str(int(x))                     # a count or an exact bound: every digit (2004, not 2e+03)
        if 1e3 <= abs(x) < 1e6:
            return f"{x:.0f}"
        return f"{x:.3g}" if 1e-3 <= abs(x) < 1e3 or x == 0 else f"{x:.2e}"
    return str(x)


def rows(ledgers: list[Ledger]) -> list[tuple[Ledger, str, dict]]:
    """Every recorded comparison as ``(ledger, key, row)``; a key recorded by two ledgers shows once (the last)."""
    latest = {key: id(led) for led in ledgers for key in led.comparisons}
    return [(led, key, c) for led in ledgers for key, c in led.comparisons.items() if latest[key] == id(led)]


def _superseded_by(all_rows) -> dict[str, str]:
    return {c["supersedes"]: key for _, key, c in all_rows if c.get("supersedes")}


@dataclass
class ClaimResult:
    """One paper claim on the scorecard: its headline rows (by part), its verdict, and its evidence."""

    claim: _claims.PaperClaim
    headline: dict = field(default_factory=dict)        # part (or None) → (key, row)
    evidence: list = field(default_factory=list)        # (key, row)
    verdict: str = NOT_RUN
    why: str = ""


def as_declared(row: dict, by_key: dict) -> tuple[str, dict] | None:
    """The row that was a post-hoc headline's place-holder before the run: following ``supersedes`` (a corrected
    criterion) and ``replaces`` (another statistic) back to the first row declared in advance; None if there is none."""
    seen = set()
    key = None
    while row.get("declared", ADVANCE) != ADVANCE:
        key = row.get("supersedes") or row.get("replaces")
        if not key or key in seen or key not in by_key:
            return None
        seen.add(key)
        row = by_key[key]
    return key, row


def claim_results(ledgers: list[Ledger], *, kind: str = _claims.PAPER, declared: bool = False) -> list[ClaimResult]:
    """The claims of ``kind`` in :data:`~eaglebook.claims.CLAIMS` order with their verdicts.  Two headline
    rows for one claim and part is an error in the chapters (a ``ValueError`` naming both).

    ``declared=True``: the tally *as declared before each run*: a headline declared after the run counts the row it
    supersedes or replaces (:func:`as_declared`), and a part with no row declared in advance is "not judged"."""
    out = {c.id: ClaimResult(c) for c in _claims.CLAIMS if c.kind == kind}
    all_rows = rows(ledgers)
    by_key = {key: row for _, key, row in all_rows}
    for led, key, row in all_rows:
        if declared and row.get("role") == HEADLINE and row.get("declared", ADVANCE) != ADVANCE:
            first = as_declared(row, by_key)
            part = row.get("part")
            key, row = first if first else (key, dict(row, verdict=NOT_JUDGED, why="no row declared before the run"))
            row = dict(row, role=HEADLINE, part=part)
        res = out.get(row.get("claim"))
        if res is None:
            continue
        if row.get("role") == HEADLINE:
            part = row.get("part")
            if part in res.headline:
                raise ValueError(f"claim {res.claim.id!r} has two headline rows for {part or 'its one part'}: "
                                 f"{res.headline[part][0]} and {key}")
            res.headline[part] = (key, row)
        else:
            res.evidence.append((key, row))
    for res in out.values():
        parts = res.claim.parts or (None,)
        have = [res.headline[p][1] for p in parts if p in res.headline]
        if not have:
            res.verdict, res.why = NOT_RUN, "no headline row recorded in this build"
            continue
        judged = [r["verdict"] for r in have if r["verdict"] in VERDICTS]
        if not judged:
            res.verdict = NOT_JUDGED
            res.why = "; ".join(dict.fromkeys(r.get("why") or "not judged" for r in have))
        else:
            res.verdict = max(judged, key=_RANK.__getitem__)
            missing = len(parts) - len(have)
            res.why = (f"the weakest of its {len(parts)} parts" if len(parts) > 1 else "")
            if missing:
                res.why += f" ({missing} part(s) not run in this build)"
            if len(judged) < len(have):
                res.why += " (some parts not judged)"
    return list(out.values())


def verdict_counts(ledgers: list[Ledger], *, kind: str = _claims.PAPER, declared: bool = False) -> dict[str, int]:
    """How many claims of ``kind`` (default: **claims of the paper**, the tally) have each verdict
    (``reproduced``, ``partly``, ``not reproduced``, ``not judged``, ``not run``); ``declared=True``: the tally
    with every headline as declared before its run (see :func:`claim_results`)."""
    counts = dict.fromkeys((*VERDICTS, NOT_JUDGED, NOT_RUN), 0)
    for res in claim_results(ledgers, kind=kind, declared=declared):
        counts[res.verdict] += 1
    return counts


#: The front page's findings, one line per step of the story: (what, chapter, ((claim id, short name), ...)).
FRONT = (
    ("Training", "ch-train", (("final-mse", "final MSE ≈ 1e-3"), ("mse-reduction", "10–50× below predicting zero"))),
    ("The algorithm in the weights", "ch-extract", (("eta", "one η in every layer"), ("gamma", "one γ in every layer"), ("fidelity", "EAGLE matches the model"))),
    ("Theory", "ch-newton-schulz", (("theorem1-kappa", "iterations grow like log κ"), ("theorem1-loglog", "then converge quadratically"),
                                    ("alpha-rounds", "distributed rounds grow like 1/α"))),
    ("Against classical solvers", "ch-benchmarks", (("cg-100x", "CG needs ~100× more iterations"), ("table2", "Table 2's ranking"))),
)


def findings_lines(ledgers: list[Ledger]) -> list[str]:
    """The front page's five lines of findings (plain text, glued into its findings box): the tally of the paper's
    claims, then one line per step of :data:`FRONT` (the page puts its title and link before it), each claim with
    its verdict on this build."""
    counts, first = verdict_counts(ledgers), verdict_counts(ledgers, declared=True)
    res = {r.claim.id: r for r in claim_results(ledgers)}
    tally = lambda c: (f"{c['reproduced']} reproduced, {c['partly']} partly, {c['not reproduced']} not reproduced and "
                       f"{c['not judged']} not judged")
    lines = [f"Of the paper's {sum(counts.values())} claims, {tally(counts)}"
             + (f" ({counts[NOT_RUN]} not run in this build)" if counts[NOT_RUN] else "")
             + f"; with every headline as declared before its run, {tally(first)}."]
    for what, ref, claims in FRONT:
        lines.append("; ".join(f"{name}: {res[cid].verdict}" for cid, name in claims if cid in res) + ".")
    return lines


def _ours(row: dict) -> str:
    """Our value as the scorecard shows it: a censored value (:class:`eaglebook.ledger.Censored`) with its bounds."""
    b = row.get("bounds")
    if not b or b[1] == b[0]:
        return _fmt(row["ours"])
    return f"≥ {_fmt(b[0])}" if b[1] is None else f"{_fmt(b[0])}–{_fmt(b[1])}"


def _verdict_text(row: dict, bold: bool = True) -> str:
    v = row["verdict"] + (f": {row['why']}" if row.get("why") else "")
    return f"**{v}**" if bold and row["verdict"] in VERDICTS else f"*{v}*"


def _declared(row: dict) -> str:
    return row.get("declared") or "in advance"


#: How chapter 11's questions (:data:`eaglebook.claims.BEYOND`) show their verdicts: the statement holds
#: (yes), partly, or not (no), by the chapter's declared test; there is no paper value to reproduce.
BEYOND_LABELS = {"reproduced": "yes", "partly": "partly", "not reproduced": "no"}


def _is_beyond(row: dict) -> bool:
    try:
        return _claims.claim(row.get("claim")).kind == _claims.BEYOND
    except ValueError:
        return False


def beyond_label(verdict: str) -> str:
    """A verdict as chapter 11's questions show it (:data:`BEYOND_LABELS`; "not judged"/"not run" unchanged)."""
    return BEYOND_LABELS.get(verdict, verdict)


def claims_table(ledgers: list[Ledger], *, link: bool = False, kind: str = _claims.PAPER) -> str:
    """One row per claim of ``kind`` (default: the paper's): the claim (with its source, headline statistic,
    criterion and when it was declared), the paper's value, ours (per part), and the claim's verdict.
    For chapter 11's questions (``kind="beyond"``) the value column is the declared test and the verdicts
    read yes / partly / no (:data:`BEYOND_LABELS`)."""
    if kind == _claims.BEYOND:
        return beyond_table(ledgers, link=link)
    head = "paper" if kind == _claims.PAPER else "their paper"
    out = [f"| # | claim | {head} | ours (headline) | verdict |", "|---|---|---|---|---|"]
    first = {r.claim.id: r for r in claim_results(ledgers, kind=kind, declared=True)}
    for i, res in enumerate(claim_results(ledgers, kind=kind), 1):
        c = res.claim
        name = f"[{c.statement}]({c.chapter}.md)" if link else c.statement
        parts = c.parts or (None,)
        ours, paper, detail = [], [], []
        for p in parts:
            if p not in res.headline:
                ours.append(f"{p + ': ' if p else ''}*{NOT_RUN}*")
                continue
            key, row = res.headline[p]
            paper.append(row.get("paper_text") or _fmt(row.get("paper")))
            ours.append(f"{p + ': ' if p else ''}{_ours(row)} ({row['verdict']})" if p else _ours(row))
            detail.append((key, row))
        if detail:
            key, row = detail[0]
            setting = row.get("setting") or "the paper's"
            per = {r_.get("part"): (_what_without_part(r_["what"], r_.get("part")) if len(parts) > 1 else r_["what"],
                                    r_["criterion"], _declared(r_)) for _, r_ in detail}
            if len(set(per.values())) == 1:         # one statistic, criterion and date for every part: say it once
                what, crit, when = next(iter(per.values()))
                body = f"statistic: {what} · criterion: {crit} · declared {when}"
            else:
                body = " · ".join(f"{p_}: statistic {w_}, criterion {c_}, declared {d_}" for p_, (w_, c_, d_) in per.items())
            because = "; ".join(dict.fromkeys(r_.get("because") for _, r_ in detail if r_.get("because")))
            meta = (f"<br><small>source: {c.source} · {body} · setting: {setting}"
                    + (f" · parts: {len(parts)}" if len(parts) > 1 else "")
                    + (f" · headline chosen after the run: {because}" if because else "") + "</small>")
        else:
            meta = f"<br><small>source: {c.source}</small>"
        verdict = (f"**{res.verdict}**" if res.verdict in VERDICTS else f"*{res.verdict}*") + (
            f"<br><small>{res.why}</small>" if res.why else "")
        stab = [r_.get("stability") for _, r_ in detail]
        if detail:
            verdict += "<br><small>resampling: " + ("; ".join(
                (f"{r_.get('part')}: " if r_.get("part") and len(detail) > 1 else "")
                + (Stability.from_dict(st).summary() if st else "not resampled")
                for (_, r_), st in zip(detail, stab))) + "</small>"
        was = first[c.id]
        if (was.verdict, was.why) != (res.verdict, res.why):
            verdict += f"<br><small>as declared before the run: {was.verdict}" + (f" ({was.why})" if was.why else "") + "</small>"
        out.append(f"| {i} | {_cell(name)}{_cell(meta)} | {_cell(' / '.join(dict.fromkeys(paper)) or '—')} | "
                   f"{_cell('<br>'.join(ours))} | {_cell(verdict)} |")
    return "\n".join(out)


def _what_without_part(what: str, part: str | None) -> str:
    """A headline row's statistic with its part's name taken out (the claim's row names the parts)."""
    if not part:
        return what
    for pat in (f" ({part}; ", f"({part}; "):
        what = what.replace(pat, " (" if pat.startswith(" ") else "(")
    for pat in (f", {part}", f"; {part}", f" ({part})", f"({part})"):
        what = what.replace(pat, "")
    return re.sub(r"\s+", " ", what).strip()


def beyond_table(ledgers: list[Ledger], *, link: bool = False) -> str:
    """Chapter 11's questions (:data:`eaglebook.claims.BEYOND`), one row each: the declared test, our value
    and the answer (yes / partly / no), apart from the paper's tally."""
    out = ["| # | question | test (when declared: in the cell) | ours | answer |", "|---|---|---|---|---|"]
    for i, res in enumerate(claim_results(ledgers, kind=_claims.BEYOND), 1):
        c = res.claim
        name = f"[{c.statement}]({c.chapter}.md)" if link else c.statement
        if None in res.headline:
            key, row = res.headline[None]
            test = f"{row['what']}: {row['criterion']}"
            ours = _fmt(row["ours"])
            meta = f"<br><small>source: {c.source} · declared {_declared(row)}</small>"
        else:
            test, ours, meta = "—", f"*{NOT_RUN}*", f"<br><small>source: {c.source}</small>"
        label = beyond_label(res.verdict)
        verdict = (f"**{label}**" if res.verdict in VERDICTS else f"*{label}*") + (
            f"<br><small>{res.why}</small>" if res.why else "")
        out.append(f"| {i} | {_cell(name)}{_cell(meta)} | {_cell(test)} | {_cell(ours)} | {_cell(verdict)} |")
    return "\n".join(out)


def neighbour_table(ledgers: list[Ledger], *, link: bool = False) -> str:
    """The claims of neighbouring papers that the book tests (:data:`eaglebook.claims.NEIGHBOUR`), one row
    each, judged like the paper's but apart from its tally (:func:`claims_table` of that kind)."""
    return claims_table(ledgers, link=link, kind=_claims.NEIGHBOUR)


def _provenance_line(led: Ledger) -> str:
    p = led.provenance or {}
    models = len(p.get("models", {}))
    return (f"profile `{p.get('profile')}` · eaglebook {p.get('version')} · commit `{p.get('commit')}` · "
            f"source `{p.get('code')}` · run {p.get('date')}" + (f" · {models} cached model(s)" if models else ""))


def comparisons_table(ledgers: list[Ledger], *, link: bool = False, provenance: bool = False) -> str:
    """Every comparison, grouped by chapter: the row (what, key, claim, role, source, setting), the paper's
    value, ours, the criterion and the verdict, and when it was declared.  Evidence rows say so, and a
    superseded row names the row that corrects it.

    ``provenance=True`` puts each chapter's provenance line (code, profile, date) above its table."""
    all_rows = rows(ledgers)
    later = _superseded_by(all_rows)
    parts = []
    for led in ledgers:
        body = []
        for l2, key, c in all_rows:
            if l2 is not led:
                continue
            paper = c.get("paper_text") or _fmt(c.get("paper"))
            role = c.get("role", EVIDENCE)
            tag = (f"headline of *{c.get('claim')}*" + (f" ({c['part']})" if c.get("part") else "")
                   if role == HEADLINE else f"evidence for *{c.get('claim')}*, not counted")
            if key in later:
                tag += f"; superseded by `{later[key]}` (after the run)"
            if c.get("supersedes"):
                tag += f"; corrects `{c['supersedes']}`"
            setting = c.get("setting") or "the paper's"
            meta = (f"<br><small>{tag} · source: {c.get('source', '')} · setting: {setting} · "
                    f"declared {_declared(c)}</small>")
            verdict = _verdict_text(c, bold=role == HEADLINE)
            if _is_beyond(c):     # chapter 11's questions: no paper value, the answer to the declared test
                verdict = verdict.replace(c["verdict"], beyond_label(c["verdict"]), 1)
            if c.get("why") and c.get("criterion_verdict") and c["verdict"] == NOT_JUDGED:
                verdict += f"<br><small>(criterion alone: {c['criterion_verdict']})</small>"
            if c.get("robust") is False and c["verdict"] != NOT_JUDGED:     # judged although not robust: the paper's own
                verdict += "<br><small>(an outlier-dominated statistic: the paper's own)</small>"
            ours = _fmt(c["ours"]) + (f"<br><small>({_fmt(c['spread'][0])}–{_fmt(c['spread'][1])}, "
                                      f"{c['spread'][2]} repeats)</small>" if c.get("spread") else "")
            body.append(f"| {_cell(c['what'])}<br>`{key}`{_cell(meta)} | {_cell(paper)} | {_cell(ours)} | "
                        f"{_cell(c['criterion'])} | {_cell(verdict)} |")
        if not body:
            continue
        rows_md = ["| comparison | paper | ours | criterion | verdict |", "|---|---|---|---|---|", *body]
        name = led.title or led.chapter
        head = f"[{name}]({led.chapter}.md)" if link and not led.variant else name
        if len(ledgers) > 1:
            rows_md.insert(0, f"**{head}**" + (f" ({led.variant})" if led.variant and led.variant not in name else "")
                           + (f"<br>{_provenance_line(led)}" if provenance else "") + "\n")
        parts.append("\n".join(rows_md))
    if not parts:
        return "*No paper comparison recorded yet for this profile and code.*"
    return "\n\n".join(parts)


def secondary_table(ledgers: list[Ledger]) -> str:
    """Claims about the paper found only in secondary summaries, with what we measure (never tallied)."""
    out = ["| claim (not in the paper) | said | we measure | verdict of that reading |", "|---|---|---|---|"]
    for res in claim_results(ledgers, kind=_claims.SECONDARY):
        if not res.evidence:
            out.append(f"| {_cell(res.claim.statement)}<br><small>{_cell(res.claim.source)}</small> | — | *{NOT_RUN}* | — |")
        for key, row in res.evidence:
            out.append(f"| {_cell(res.claim.statement)}<br><small>{_cell(res.claim.source)} · `{key}`</small> | "
                       f"{_cell(row.get('paper_text') or _fmt(row.get('paper')))} | {_cell(row['what'])}: {_fmt(row['ours'])} | "
                       f"{_verdict_with_reason(row)} |")
    return "\n".join(out)


def _verdict_with_reason(row: dict) -> str:
    """A row's verdict as the scorecard gives it (with its reason), and the criterion's own where they differ."""
    alone = row.get("criterion_verdict")
    return _cell(_verdict_text(row, bold=False)) + (f"<br><small>criterion alone: {_cell(alone)}</small>"
                                                   if alone and alone != row["verdict"] else "")


def checks_table(ledgers: list[Ledger]) -> str:
    """Every check: value, bound, pass/fail."""
    out = ["| check | value | bound | holds | chapter |", "|---|---|---|---|---|"]
    latest = {key: id(led) for led in ledgers for key in led.checks}
    for led in ledgers:
        for key, c in led.checks.items():
            if latest[key] != id(led):
                continue
            bound = (f"= {c['lower']:g}" if c["lower"] is not None and c["lower"] == c["upper"] else
                     " ".join(s for s in (f"≥ {c['lower']:g}" if c["lower"] is not None else "",
                                          f"≤ {c['upper']:g}" if c["upper"] is not None else "") if s))
            out.append(f"| {_cell(c['what'])} (`{key}`) | {_fmt(c['value'])} | {bound} | "
                       f"{'yes' if c['ok'] else '**no**'} | {led.title or led.chapter} |")
    if len(out) == 2:
        out.append("| *no check recorded yet for this profile* | | | | |")
    return "\n".join(out)


def machines_table(ledgers: list[Ledger]) -> str:
    """Every timing table's machine (CPU, cores, threads, BLAS, load average before → after), by chapter."""
    out = ["| chapter | timing | CPU | cores (usable) | threads | BLAS | load average before → after |",
           "|---|---|---|---|---|---|---|"]
    for led in ledgers:
        for name, m in (led.provenance or {}).get("machines", {}).items():
            b, a = m.get("before") or {}, m.get("after") or {}
            load = lambda x: "?" if x.get("load") is None else f"{x['load']:.2f}"
            out.append(f"| {_cell(led.title or led.chapter)} | {_cell(name)} | {_cell(b.get('cpu'))} | {b.get('cores')} "
                       f"({b.get('usable_cores')}) | {b.get('threads')} | {_cell(b.get('blas'))} | {load(b)} → {load(a)} |")
    if len(out) == 2:
        out.append("| *no timing recorded in this build* | | | | | | |")
    return "\n".join(out)


def scorecard_points(ledgers: list[Ledger]) -> list[tuple]:
    """``(label, paper value, ours, verdict)`` of every headline row with a numeric paper value (the figure)."""
    pts = []
    for res in claim_results(ledgers):
        for part, (key, row) in res.headline.items():
            pts.append((res.claim.id + (f" ({part})" if part else ""), row.get("paper"), row["ours"], row["verdict"]))
    return pts


def toc_chapters(*, generated: bool = False) -> list[str]:
    """The book's documents in ``_toc.yml`` order, as names relative to ``book/`` (e.g. ``01_task``);
    ``generated=True`` includes the generated chapter variants that exist (``_regimes/04_extract-sketched``: the
    toc lists them by a ``glob``, which this expands as Sphinx does, in sorted order)."""
    import yaml

    repo = repo_root()
    if repo is None:
        return []
    toc = yaml.safe_load((repo / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(node):
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key, []) or []:
                if "file" in child:
                    files.append(child["file"])
                elif "glob" in child and generated:
                    files.extend(sorted(str(p.relative_to(repo).with_suffix("")) for p in repo.glob(child["glob"] + ".*")))
                walk(child)

    walk(toc)
    docs = [f.split("/", 1)[1] if f.startswith("book/") else f for f in files]
    return docs if generated else [d for d in docs if (repo / "book" / f"{d}.md").is_file()]

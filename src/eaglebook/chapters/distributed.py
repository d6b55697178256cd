"""Chapter 8 (book/08_distributed.md): distributed EAGLE against the number of machines, the diversity index,
distributed GD and CG, freezing A and B, and as one process per machine; the summaries, tables, phrases and
figures only this chapter needs.

The science (the solvers, the process launcher) lives in :mod:`eaglebook.solver` and
:mod:`eaglebook.distributed`; this module only reads their results.
"""

from __future__ import annotations

import os
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np

from ..glue import and_list, glue
from ..ledger import NOT_JUDGED, Censored, Check, Criterion
from ..plotting import LINESTYLES, MARKERS, METHOD_STYLE, finish, legend_outside, subplots
from ..stability import FLIP_SHARE, Resampled

__all__ = ["EPS", "MACHINES", "ALPHAS", "rounds_to", "words", "num", "plural", "times", "kappa_max", "sweep_summary",
           "gd_summary", "sweep_table", "alpha_runs", "alpha_slope", "gd_alpha_note", "gd_cap_note", "median_bounds",
           "censored_why", "resampling_note", "gd_median_range", "gd_trend", "slope_story",
           "dcg_table", "cg_summary", "decide", "winners", "decision_table", "versus", "cg_vs_eagle", "cg_capped",
           "cg_gd_bound", "cg_story", "cg_rank_story", "checks_text", "wire_rest", "with_load", "timing_verdict",
           "load_phrase", "load_short", "parallel_story", "round_parts", "recorded", "censored", "checks", "glued",
           "plot_machine_sweep", "plot_alpha_sweep", "plot_round_time"]

#: The rounds of a run: the first round whose relative error is at most EPS (the paper's Fig. 7 threshold).
EPS = 1e-6
#: The numbers of machines of the M sweep (the paper's Fig. 7).
MACHINES = (1, 3, 5, 8)
#: The paper's mean diversity indices: the camera-ready version's and an earlier version's.
ALPHAS = {"camera-ready": (1.0, 0.83, 0.35, 0.01), "earlier version": (1.0, 0.9, 0.36, 0.004)}


# ------------------------------------------------------------------------------------------------ small words
def rounds_to(rel, eps: float = EPS) -> int | None:
    """The first round (1-based) whose relative error is at most ``eps``; None if none is."""
    hit = np.nonzero(np.asarray(rel) <= eps)[0]
    return int(hit[0]) + 1 if hit.size else None


def words(n: int) -> str:
    """'no', 'one', …, 'ten'; larger (or negative) numbers as digits."""
    return ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")[n] if 0 <= n <= 10 else str(n)


def num(x: float) -> str:
    """A ratio for prose: 3 significant digits, no exponent ('0.0112', '48.6', '1,330')."""
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def plural(n: int, noun: str, many: str | None = None) -> str:
    """'1 check', '2 checks' (``many``: an irregular plural)."""
    return f"{n} {noun if n == 1 else (many or noun + 's')}"


def times(k: int) -> str:
    """'once', 'twice', '3 times'."""
    return {1: "once", 2: "twice"}.get(k, f"{k} times")


def _fold(x) -> float:
    return float(np.max(x) / np.min(x))


# ------------------------------------------------------------------------------------------ the M sweep
def kappa_max(blocks) -> float:
    """The largest condition number of a block, over its positive singular values (blocks may be rank deficient)."""
    sv = [np.linalg.svd(a, compute_uv=False) for a in blocks]
    return max(s[0] / s[s > 1e-10 * s[0]][-1] for s in sv)


# ------------------------------------------------------------------------------------------ the α sweep
def sweep_summary(alphas: dict, rounds: dict) -> dict[str, tuple[list[float], list[float]]]:
    """label → (the mean computed α, EAGLE's mean rounds) per ᾱ value of :data:`ALPHAS`; ``alphas`` and ``rounds``
    map (label, ᾱ value) to the runs' computed α and rounds to :data:`EPS`."""
    return {label: ([float(np.mean(alphas[label, t])) for t in targets], [float(np.mean(rounds[label, t])) for t in targets])
            for label, targets in ALPHAS.items()}


def gd_summary(first: list[dict]) -> dict[str, tuple[list[float], list[float], list[bool]]]:
    """Distributed GD on the first problem of each camera-ready value (``first``: dicts with its computed
    ``alpha`` and GD's result ``gd``), as the α-sweep figure takes it: {"camera-ready": (α, rounds, reached)}."""
    return {"camera-ready": ([fp["alpha"] for fp in first], [float(fp["gd"].iterations) for fp in first],
                             [fp["gd"].status == "target" for fp in first])}


def sweep_table(sweep: dict, gd: dict | None = None) -> str:
    """The α sweep by ᾱ value: computed mean α, EAGLE's mean rounds and, given ``gd``, (camera-ready) distributed
    GD's rounds."""
    head = "| the paper's α values | ᾱ value | computed ᾱ (mean) | EAGLE rounds (mean) |"
    rows = [head + (" distributed GD rounds (first problem) |" if gd else ""), "|---" * (5 if gd else 4) + "|"]
    for label, targets in ALPHAS.items():
        means, rounds = sweep[label]
        g = (gd or {}).get(label)
        for i, t in enumerate(targets):
            gd_text = "" if g is None else f"{g[1][i]:,.0f}" + ("" if g[2][i] else " (cap: lower bound)")
            rows.append(f"| {label} | {t:g} | {means[i]:.4f} | {rounds[i]:.1f} |" + (f" {gd_text} |" if gd else ""))
    return "\n".join(rows)


def alpha_runs(alphas: dict, rounds: dict, label: str) -> np.ndarray:
    """The runs of one version's α sweep as an array (run, ᾱ value, [computed α, rounds]): the unit of its
    resampling is a run (the i-th problem of every ᾱ value)."""
    return np.stack([np.column_stack([alphas[label, t], rounds[label, t]]) for t in ALPHAS[label]], axis=1)


def alpha_slope(runs) -> float:
    """The slope of log(mean rounds) against log(1 / mean computed α) over the ᾱ values (``runs``: :func:`alpha_runs`
    or a resample of its rows)."""
    runs = np.asarray(runs, float)
    al = [float(np.mean(runs[:, j, 0])) for j in range(runs.shape[1])]
    it = [float(np.mean(runs[:, j, 1])) for j in range(runs.shape[1])]
    return float(np.polyfit(np.log(1 / np.asarray(al)), np.log(it), 1)[0])


def gd_alpha_note(targets, g_alpha) -> str:
    """Which camera-ready values (reached by mixing runs) have a first problem with another α: '' if every first
    problem's α is distinct; else '; the first problem of ᾱ = 0.83, a value reached by mixing runs, has α = 1, so
    the four problems have three distinct values of α'."""
    n_vals, n_distinct = len(g_alpha), len({round(a, 6) for a in g_alpha})
    if n_distinct >= n_vals:
        return ""
    mixed = [(t, a) for t, a in zip(targets, g_alpha) if abs(a - t) > 0.05]
    return (f"; the first problem of {and_list([f'ᾱ = {t:g}' for t, _ in mixed])}, a value reached by mixing runs, "
            f"has α = {and_list([f'{a:.2g}' for _, a in mixed])}, so the {words(n_vals)} problems have "
            f"{words(n_distinct)} distinct values of α")


def gd_cap_note(g_alpha, g_ok) -> str:
    """Which GD runs hit the round cap (their ratios are lower bounds)."""
    n_vals, n_cap = len(g_ok), int((~np.asarray(g_ok, bool)).sum())
    capped_at = and_list([f"{a:.2g}" for a, ok in zip(g_alpha, g_ok) if not ok])
    return ("no GD run hit the round cap" if n_cap == 0 else
            (f"the GD run at α = {capped_at} hit the round cap, so its ratio is a lower bound" if n_cap == 1 else
             f"{n_cap} of the {n_vals} GD runs (at α = {capped_at}) hit the round cap, so their ratios are lower bounds"))


def median_bounds(values, ok) -> tuple[float, float]:
    """The median of per-problem ratios of which those with ``ok`` False are lower bounds (the run hit the round cap):
    (the median as measured, a lower bound; the median with those ratios unbounded, an upper bound, inf if none)."""
    v, ok = np.asarray(values, float), np.asarray(ok, bool)
    return float(np.median(v)), float(np.median(np.where(ok, v, np.inf)))


def censored_why(values, ok, criterion: Criterion, paper=None) -> str:
    """Why a median over runs of which some hit the round cap is not judged: '' when the criterion gives the same
    verdict at both of its bounds (:func:`median_bounds`: the lower bound alone decides), else why not (the ledger
    prefixes "censored: ")."""
    lo, hi = median_bounds(values, ok)
    if criterion.verdict(lo, paper) == criterion.verdict(hi, paper):
        return ""
    n_cap = int((~np.asarray(ok, bool)).sum())
    return (f"{n_cap} of the {len(ok)} GD runs hit the round cap, so the median is known only to be at least "
            f"{num(lo)}" + (f" and at most {num(hi)}" if np.isfinite(hi) else " (no upper bound)")
            + ", a range that crosses a boundary of the criterion")


def resampling_note(st: dict | None) -> str:
    """After a verdict: "; the criterion's verdict on it is stable under resampling the 4 runs" for a row whose
    resampling leaves its verdict, '' otherwise (an unstable row's verdict says which units decide it)."""
    if not st or st["share"] > FLIP_SHARE:
        return ""
    return f"; the criterion's verdict on it is stable under resampling the {st['n']} {st['unit']}"


def gd_median_range(gd_same, g_ok, criterion: Criterion) -> str:
    """With a capped ratio the median lies between its value with that ratio as measured and with it unbounded:
    '' when no run is capped or when that range leaves the verdict open (the row's verdict then says so:
    :func:`censored_why`), else the range and that the verdict holds over it."""
    g_ok = np.asarray(g_ok, bool)
    if g_ok.all() or censored_why(gd_same, g_ok, criterion):
        return ""
    hi_med = median_bounds(gd_same, g_ok)[1]
    return (" (with the capped ratios' true values unknown the median "
            + (f"is at most {hi_med:,.0f}" if np.isfinite(hi_med) else "has no upper bound")
            + "; the criterion's verdict is the same over that whole range)")


def gd_trend(ge, g_r, g_ok, eps: float = EPS) -> str:
    """How much EAGLE's rounds (``ge``) and GD's (``g_r``; ``g_ok``: reached ``eps`` before the cap) vary over the
    problems GD ran on, and what sets each."""
    ge, g_r, g_ok = np.asarray(ge, float), np.asarray(g_r, float), np.asarray(g_ok, bool)
    n_cap = int((~g_ok).sum())
    trend = f"On these {words(len(g_r))} problems EAGLE's rounds vary {num(_fold(ge))}-fold ({ge.min():,.0f} to {ge.max():,.0f})"
    if n_cap == 0:
        verb = "less" if _fold(g_r) < _fold(ge) else ("more" if _fold(g_r) > _fold(ge) else "as much")
        trend += f" and GD's {num(_fold(g_r))}-fold ({g_r.min():,.0f} to {g_r.max():,.0f}), so GD's vary {verb}"
    elif np.any(g_ok & (g_r == g_r.min())):  # the fewest GD rounds are exact: the capped runs only raise the spread
        trend += (f" and GD's at least {num(_fold(g_r))}-fold ({g_r.min():,.0f} to at least {g_r.max():,.0f}: "
                  "a capped run counts with the cap)")
        if _fold(g_r) >= _fold(ge):
            trend += ", so GD's vary at least as much"
        else:
            trend += ", so these runs do not settle which varies more"
            if g_ok.sum() >= 2:
                trend += (f"; over the {words(int(g_ok.sum()))} runs that reached {eps:g}, GD's rounds vary "
                          f"{num(_fold(g_r[g_ok]))}-fold and EAGLE's on the same problems {num(_fold(ge[g_ok]))}-fold")
    else:
        trend += "; the GD run with the fewest rounds hit the cap, so GD's spread is not known"
    return trend + (". GD's rate is set by the condition number of the averaged Gram matrix, Theorem 2's bound "
                    "on EAGLE's rounds by log κ_max and 1/α.")


def slope_story(slopes: dict[str, float]) -> str:
    """Which log–log slopes lie below 1, and why a burn-in makes them do so."""
    below = [k for k, v in slopes.items() if v < 1]
    return (("Both slopes are below 1" if len(below) == len(slopes) else
             (f"The slope for the {below[0]} values is below 1" if below else "Neither slope is below 1"))
            + (", as fits the shape of Theorem 2's bound, O(log κ_max + log(1/ε)/α): rounds a + b/α with a burn-in a > 0 "
               "(the rounds that condition the blocks) have a log–log slope below 1" if below else "") + ".")


# -------------------------------------------------------------------------------- distributed GD and CG
def _cap(r: dict, k: str) -> str:
    return "≥ " if r["capped"][k] else ""


def dcg_table(rows: list[dict], *, d: int, kappa: float, cap: int) -> str:
    """Rounds to 1e-6, floats per round and kB to 1e-6 of EAGLE, GD and CG on the first problem of each value."""
    out = [f"M = 3, d = {d}, κ_max = {kappa:.0e} (≥: the run hit the cap of {cap:,} rounds):", "",
           "| ᾱ value | α of the problem | EAGLE rounds | GD rounds | CG rounds | floats/round EAGLE · GD · CG | kB to 1e-6 EAGLE · GD · CG |",
           "|---|---|---|---|---|---|---|"]
    out += [f"| {r['target']:g} | {r['alpha']:.3g} | {r['rounds']['EAGLE']} | {_cap(r, 'GD')}{r['rounds']['GD']:,} | "
            f"{_cap(r, 'CG')}{r['rounds']['CG']:,} | {r['per']['EAGLE']} · {r['per']['GD']} · {r['per']['CG']} | "
            + " · ".join(f"{_cap(r, k)}{r['bytes'][k] / 1e3:.3g}" for k in ("EAGLE", "GD", "CG")) + " |" for r in rows]
    return "\n".join(out)


def cg_summary(rows: list[dict]) -> dict[str, tuple[list[float], list[float], list[bool]]]:
    """Distributed CG on the first problem of each camera-ready value (``rows``: the CG table's), as the α-sweep
    figure takes a baseline: {"camera-ready": (α, rounds, reached)}."""
    return {"camera-ready": ([r["alpha"] for r in rows], [float(r["rounds"]["CG"]) for r in rows],
                             [not r["capped"]["CG"] for r in rows])}


def decide(vals: dict, capped: dict) -> tuple[str, str]:
    """(winner, text): the method with the fewest, and by how much it beats the runner-up."""
    order = sorted(vals, key=vals.get)
    a, b = order[0], order[1]
    if capped[a]:   # its count is a lower bound: the order is not known
        return f"undecided ({a} hit the cap)", f"undecided ({a} hit the cap)"
    if vals[a] == vals[b]:
        return f"{a} = {b} (tie)", f"{a} = {b} (tie)"
    bound = "≥ " if capped[b] else ""
    return a, f"{a}, by {bound}{num(vals[b] / vals[a])}× over {b}"


def winners(rows: list[dict], col: str) -> list[tuple[str, str]]:
    """Sentence parts naming, by the table's rows (its ᾱ column), which method has the fewest ``col``:
    [("EAGLE for every problem", " (by 3.2× over CG)"), ...]."""
    groups: dict[str, list] = {}
    for r in rows:
        w, text = decide(r[col], r["capped"])
        groups.setdefault(w, []).append((r, text.partition(", by ")[2]))
    parts = []
    for w, items in groups.items():
        where = "every problem" if len(items) == len(rows) else "ᾱ = " + and_list(f"{r['target']:g}" for r, _ in items)
        margins = [m for _, m in items if m]
        over = {m.rpartition(" over ")[2] for m in margins}
        by = ("" if not margins else
              f" (by {and_list(m.rpartition(' over ')[0] for m in margins)} over {over.pop()})" if len(over) == 1 else
              f" (by {and_list(margins)})")
        parts.append((f"{w} for {where}", by))
    return parts


def decision_table(rows: list[dict]) -> str:
    """The winner by rounds and by bytes on each problem, and EAGLE's bytes over the fewest."""
    out = ["| ᾱ value | α of the problem | fewest rounds | fewest bytes | EAGLE ÷ fewest bytes |", "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['target']:g} | {r['alpha']:.3g} | {decide(r['rounds'], r['capped'])[1]} | "
                   f"{decide(r['bytes'], r['capped'])[1]} | {r['bytes']['EAGLE'] / min(r['bytes'].values()):.3g} |")
    return "\n".join(out)


def versus(rows: list[dict], col: str, a: str = "CG", b: str = "EAGLE") -> list[tuple[str, list, list[float]]]:
    """How ``a``'s ``col`` ("rounds" or "bytes") compares with ``b``'s on each problem of the CG table:
    [(relation, the problems' ᾱ values, the factors), ...] with relation "fewer", "more", "as many" or "undecided"
    (a capped count is a lower bound: fewer than the other is then not known), the factor being the larger count
    over the smaller, in the order of the rows."""
    groups: dict[str, tuple[list, list[float]]] = {}
    for r in rows:
        x, y = r[col][a], r[col][b]
        if (x < y and r["capped"][a]) or (x > y and r["capped"][b]) or (x == y and (r["capped"][a] or r["capped"][b])):
            rel, f = "undecided", float("nan")
        else:
            rel, f = ("fewer", y / x) if x < y else ("more", x / y) if x > y else ("as many", 1.0)
        groups.setdefault(rel, ([], []))
        groups[rel][0].append(r["target"])
        groups[rel][1].append(f)
    return [(rel, ts, fs) for rel, (ts, fs) in groups.items()]


def _by(fs) -> str:
    fs = [f for f in fs if np.isfinite(f)]
    if not fs:
        return ""
    return f"by {num(fs[0])}×" if len(fs) == 1 else f"by {num(min(fs))}× to {num(max(fs))}×"


def cg_vs_eagle(rows: list[dict]) -> str:
    """Distributed CG against EAGLE by rounds and by bytes, problem by problem: e.g. "needs fewer rounds than EAGLE
    on every problem (by 2.33× to 102×), and sends fewer bytes than EAGLE on every problem (by 3.65× to 159×)"."""
    n = len(rows)

    def part(col, verb, noun):
        out = []
        for i, (rel, ts, fs) in enumerate(versus(rows, col)):
            by = _by(fs) if rel in ("fewer", "more") else ""
            if len(ts) == n:
                where = "every problem" + (f" ({by})" if by else "")
            else:
                where = (f"{words(len(ts))} of the {words(n)} problems (ᾱ = {and_list(f'{t:g}' for t in ts)}"
                         + (f"; {by})" if by else ")"))
            what = {"fewer": "fewer", "more": "more", "as many": "as many",
                    "undecided": "a count not ranked (a capped run)"}[rel]
            if i == 0:
                what = {"fewer": f"fewer {noun} than EAGLE", "more": f"more {noun} than EAGLE",
                        "as many": f"as many {noun} as EAGLE",
                        "undecided": f"{noun} not ranked against EAGLE's (a capped run)"}[rel]
            out.append(f"{what} on {where}")
        return f"{verb} " + and_list(out)
    return f"{part('rounds', 'needs', 'rounds')}, and {part('bytes', 'sends', 'bytes')}"


def cg_capped(rows: list[dict]) -> str:
    n_cg_cap = sum(r["capped"]["CG"] for r in rows)
    return ("no CG run hit the cap" if n_cg_cap == 0 else
            f"{n_cg_cap} of the {len(rows)} CG runs hit the cap, so " + ("its count is a lower bound" if n_cg_cap == 1 else
                                                                        "their counts are lower bounds"))


def cg_gd_bound(rows: list[dict]) -> str:
    n_gd_cap = sum(r["capped"]["GD"] for r in rows)
    return ("" if not n_gd_cap else
            (" (the GD run that hit the cap gives a lower bound)" if n_gd_cap == 1 else
             f" ({n_gd_cap} of the {len(rows)} GD runs hit the cap, so their ratios are lower bounds)"))


def cg_story(cg_gd, cg_e) -> str:
    """Whether CG needs fewer rounds than GD (``cg_gd``: GD's rounds / CG's) and more than EAGLE (``cg_e``: CG's / EAGLE's)."""
    return (("CG needs fewer rounds than GD on every problem" if all(x > 1 for x in cg_gd) else
             "CG does not need fewer rounds than GD on every problem")
            + (", and more than EAGLE on every problem" if all(x > 1 for x in cg_e) else
               ", and fewer than EAGLE on " + ("every problem" if all(x < 1 for x in cg_e) else
                                                f"{words(sum(x < 1 for x in cg_e))} of the {words(len(cg_e))}")))


def _rank_text(ranks) -> str:
    return f"{ranks[0]}" if len(set(ranks)) == 1 else f"{min(ranks)} to {max(ranks)}"


def cg_rank_story(cg_n, ranks) -> str:
    """CG's rounds (``cg_n``) against the joint rank of each problem: exact arithmetic needs at most rank(A)."""
    over = [n > k for n, k in zip(cg_n, ranks)]
    span = f"{min(cg_n)}" if min(cg_n) == max(cg_n) else f"{min(cg_n)} to {max(cg_n)}"
    return (f"CG needs {span} rounds; the joint rank of these problems (computed) is {_rank_text(ranks)}, and in exact "
            "arithmetic CG on the normal equations, started from X = 0, reaches the exact solution within rank(A) rounds. "
            + ("Every run here stays within that bound" if not any(over) else
               ("Every run here needs more" if all(over) else f"{words(sum(over)).capitalize()} of the {words(len(over))} runs need more")
               + ": in floating point, rounding errors cost CG its exact-arithmetic termination")
            + ". Theorem 2's bound on EAGLE's rounds, O(log κ_max + log(1/ε)/α), does not involve the rank.")


# ------------------------------------------------------------------------------- one process per machine
def checks_text(real) -> str:
    """How many checks the stopping rule ran and what the processes gathered."""
    return f"The rule ran {plural(real.checks, 'check')}; " + (
        f"the processes gathered {times(real.gathers)}, {np.mean(real.gather_bytes):.0f} bytes per process in all"
        if real.gathers else "the processes never gathered")


def wire_rest(wire: float, payload: float, M: int) -> str:
    """What the TCP counter shows beyond a ring all-reduce's 2(M − 1)/M payloads per round."""
    extra = wire - 2 * (M - 1) / M * payload
    return (f"the other {extra:.0f} bytes per round are gloo's own framing and messages on the same sockets"
            if extra >= 0 else f"the counter shows {-extra:.0f} bytes per round fewer than that")


def with_load(r, before: dict, after: dict | None = None):
    """The :class:`eaglebook.timing.Ratio` ``r`` with the machine's load while timing (the highest 1-minute load
    average of the machine records ``before`` and ``after``) and its usable cores, as ``Timings.ratio`` records them:
    for a ratio built from the repeats by hand (e.g. per round)."""
    loads = [m.get("load") for m in (before, after) if m and m.get("load") is not None]
    return replace(r, load=max(loads) if loads else None, cores=before.get("usable_cores") or before.get("cores"))


def timing_verdict(r) -> str:
    """A timing comparison's verdict for the prose: the Ratio's ("frozen faster", "within noise"), or "not judged:
    loaded machine" where the load average reached the core count while it was timed."""
    if getattr(r, "loaded", False):
        return f"not judged: loaded machine (load average {r.load:.2f} on {plural(r.cores, 'usable core')})"
    return r.verdict


def load_phrase(r) -> str:
    """The load while ``r`` was timed, against the cores, and what that means for its verdict."""
    if r.load is None or r.cores is None:
        return "the load average was not recorded, so the timing cannot be checked against the core count"
    if r.loaded:
        return (f"the load average reached {r.load:.2f} on {plural(r.cores, 'usable core')}, at or above the core "
                "count, so the timing is not judged")
    return f"the load average stayed below the {plural(r.cores, 'usable core')} (at most {r.load:.2f})"


def load_short(r) -> str:
    """The load while ``r`` was timed, in a parenthesis's words: "load average 4.51 on 2 usable cores: a loaded
    machine" or "load average at most 1.01 on 16 usable cores"."""
    if r.load is None or r.cores is None:
        return "load average not recorded"
    return (f"load average {r.load:.2f} on {plural(r.cores, 'usable core')}: a loaded machine" if r.loaded else
            f"load average at most {r.load:.2f} on {plural(r.cores, 'usable core')}")


def parallel_story(M: int, real, per_round: dict, cores: int, loaded: bool = False) -> str:
    """A round on M processes against one process doing all M machines' work (``per_round``: seconds per round
    of the single-process repeats, "simulation" and "serial loop"), and what this machine's cores allow; on a
    loaded machine (``loaded``) the two times are stated, not compared."""
    single = np.concatenate([per_round["simulation"], per_round["serial loop"]])
    t_round, t_upd = float(np.median(real.time_per_round)), float(np.median(real.compute_per_round))
    per_block = float(np.median(per_round["serial loop"])) / M
    cmp_text = ("slower than" if t_round > single.max() else "faster than" if t_round < single.min() else
                "within the spread of the repeats of")
    span = f"({1e3 * single.min():.2f} to {1e3 * single.max():.2f} ms over the single-process repeats, both loops)"
    first = (f"A round on the {M} processes took {1e3 * t_round:.2f} ms, and one process doing all {M} machines' work "
             f"took {1e3 * single.min():.2f} to {1e3 * single.max():.2f} ms (the single-process repeats, both loops); "
             "the machine was loaded, so the two are not compared" if loaded else
             f"A round on the {M} processes ({1e3 * t_round:.2f} ms) is {cmp_text} one process doing all {M} machines' "
             f"work {span}")
    return (f"{first}. In a process, the UPDATE of its one block takes {1e3 * t_upd:.2f} ms, {t_upd / per_block:.2g} times the serial "
            f"loop's round divided by {M} ({1e3 * per_block:.2f} ms). With a core per process a round costs about one block's "
            f"UPDATE plus the all_reduce, against about all {M} blocks' UPDATEs in one process, so real processes pay off "
            f"roughly where the all_reduce costs less than {M - 1} blocks' UPDATEs. "
            + (f"This machine has {plural(cores, 'usable core')} for the {M} processes, so they cannot all compute at once, "
               "and this run does not test that condition" if cores < M else
               f"This machine has {plural(cores, 'usable core')}, at least one per process"))


def round_parts(per_round: dict, real, M: int) -> dict[str, tuple[float, float]]:
    """label → (compute, all_reduce) seconds of a median round: the two single-process loops, then each process."""
    parts = {"simulation (1 process)": (float(np.median(per_round["simulation"])), 0.0),
             "serial loop (1 process)": (float(np.median(per_round["serial loop"])), 0.0)}
    return parts | {f"process {mu}": (real.compute_per_round[mu], real.comm_per_round[mu]) for mu in range(M)}


def collective_bytes(run) -> float:
    """Bytes a process handed to the collectives over the whole run: the rounds' payloads and the gathers."""
    return run.iterations * run.payload_bytes_per_round + float(np.mean(run.gather_bytes))


# ------------------------------------------------------------------------------------ the bookkeeping
def recorded(*, m_rounds, runs, sweep, gd, gd_same, frozen, plain, tf, r_freeze) -> dict:
    """The values of chapter 8's declared comparisons (:mod:`eaglebook.comparisons.c08_distributed`): the slopes
    resampled over the runs (``runs``: version → :func:`alpha_runs`), GD's paired median over the problems, the
    timings with their Ratio (its load)."""
    names = [f"ᾱ = {t:g}" for t in ALPHAS["camera-ready"]]
    slope = {label: Resampled(r, alpha_slope, unit="runs", names=[f"run {i + 1}" for i in range(len(r))])
             for label, r in runs.items()}
    return {
        "C8_M_spread": max(m_rounds) / min(m_rounds),
        "C8_alpha_slope": slope["camera-ready"], "C8_alpha_slope_v1": slope["earlier version"],
        "C8_gd_ratio": float(np.median(np.asarray(gd["camera-ready"][1]) / np.asarray(sweep["camera-ready"][1]))),
        "C8_gd_ratio_paired": Resampled(np.asarray(gd_same, float), np.median, unit="problems", names=names),
        "C8_freeze_rounds": frozen.iterations / plain.iterations,
        "C8_freeze_time": (min(tf.seconds["frozen"]) / min(tf.seconds["plain"]), r_freeze),
        "C8_freeze_time_paired": (r_freeze.median, r_freeze),
    }


def censored(recorded: dict, *, ledger, sweep, gd, gd_same) -> dict:
    """``recorded`` with the GD rows whose median is a lower bound (a GD run hit the round cap) wrapped as
    :class:`eaglebook.ledger.Censored`: the upper bound is the median with the capped ratios unbounded, and the ledger
    judges the row only where the criterion says the same at both bounds (rule declared v0.4.0, 2026-12-03)."""
    ok = np.asarray(gd["camera-ready"][2], bool)
    first = np.asarray(gd["camera-ready"][1]) / np.asarray(sweep["camera-ready"][1])
    out = dict(recorded)
    for key, values in (("C8_gd_ratio", first), ("C8_gd_ratio_paired", np.asarray(gd_same, float))):
        c = ledger.declared[key]
        out[key] = Censored(out[key], median_bounds(values, ok)[1], censored_why(values, ok, Criterion(**c["criterion"]), c["paper"]))
    return out


def checks(*, m_alpha, sweep, frozen, real, sim, lean, diff, n: int, first, dcg_rows) -> list[Check]:
    """Properties the chapter's code must have (and, asserted, what the prose takes for granted)."""
    assert real.status == sim.status, (real.status, sim.status)
    assert frozen.frozen_at is not None, "the frozen run never froze: no round had every block conditioned"
    # the prose's "same order": d' = n' = 2, and the per-round floats of EAGLE and of GD/CG within a factor 3
    assert all(fp["problem"][1][0].shape[0] == 2 and fp["problem"][2].shape[1] == 2 for fp in first)
    assert all(1 / 3 <= r["per"]["EAGLE"] / r["per"][k] <= 3 for r in dcg_rows for k in ("GD", "CG"))
    paper_floats = (n + 2) * 2          # (d + d')·n'
    return [
        Check("C8_M_alpha", min(m_alpha.values()), lower=1 - 1e-8, what="α of the M-sweep dataset for every M (computed)"),
        Check("C8_alpha_computed", max(abs(m - t) for label, t_ in ALPHAS.items() for m, t in zip(sweep[label][0], t_)),
              upper=0.05, what="largest |computed mean α − target| over both sweeps (runs mixed for 0.83 and 0.9)"),
        Check("C8_freeze_error", frozen.rel_error[-1], upper=1e-8, what="final relative error with A, B frozen"),
        Check("C8_real_equal", diff, upper=1e-12,
              what="multi-process D vs the single-process solver's, max relative difference (float64)"),
        Check("C8_real_rounds", real.iterations - sim.iterations, lower=0, upper=0,
              what="multi-process rounds minus the single-process solver's (same stopping rule)"),
        Check("C8_real_rel_err", real.rel_error[-1], upper=1e-10, what="multi-process D vs B A^† C, relative error"),
        Check("C8_comm_floats", lean.payload_bytes_per_round / 8 - lean.header_floats, lower=paper_floats,
              upper=paper_floats,
              what="floats each process hands to the all_reduce per round with certify='none', header aside: (d + d')·n'"),
        Check("C8_comm_floats_default", real.payload_bytes_per_round / 8 - real.header_floats - real.test_floats_per_round,
              lower=paper_floats, upper=paper_floats,
              what="the same with the default certification, header and test column aside: (d + d')·n'"),
    ]


def _glued_sweeps(profile, m_rounds, m_kmax, sweep, gd, gd_same, first, slopes, ledger) -> dict:
    g_ok, g_r = np.asarray(gd["camera-ready"][2]), np.asarray(gd["camera-ready"][1])
    g_alpha = [fp["alpha"] for fp in first]          # α of the problem GD ran on (the first of each value)
    ge = np.asarray([float(rounds_to(fp["eagle"].rel_error)) for fp in first])   # EAGLE's rounds on GD's problems
    crit = Criterion(**ledger.declared["C8_gd_ratio_paired"]["criterion"])
    cr, v1 = sweep["camera-ready"], sweep["earlier version"]
    return dict(
        C8_n=profile.dist_n, C8_kappa=profile.dist_kappa, C8_rank=profile.dist_rank,
        C8_M_min_rounds=min(m_rounds), C8_M_max_rounds=max(m_rounds),
        C8_kmax_ratio=max(m_kmax.values()) / m_kmax[1],   # M = 1: the whole A
        C8_gd_cap=profile.dist_gd_max_iter, C8_n_values=words(len(g_r)),
        **{f"C8_alpha_cr_{i}": cr[0][i] for i in range(len(cr[0]))},
        **{f"C8_rounds_cr_{i}": cr[1][i] for i in range(len(cr[1]))},
        C8_gd_ratios=and_list([("at least " if not ok else "") + num(r) for r, ok in zip(gd_same, g_ok)]),
        C8_runs=profile.dist_runs, C8_alpha_v1_1=v1[0][1], C8_alpha_v1_last=v1[0][-1], C8_rounds_v1_last=v1[1][-1],
        C8_gd_alphas=and_list([f"{a:.2g}" for a in g_alpha]),
        C8_gd_alpha_note=gd_alpha_note(ALPHAS["camera-ready"], g_alpha),
        C8_gd_cap_note=gd_cap_note(g_alpha, g_ok),
        C8_gd_median_bound="at least " if not g_ok.all() else "",   # a median is a lower bound when any of its values is one
        C8_gd_median_range=gd_median_range(gd_same, g_ok, crit),
        C8_gd_trend=gd_trend(ge, g_r, g_ok), C8_slope_story=slope_story(slopes),
        **{f"{k}_stability": resampling_note(ledger.comparisons[k].get("stability"))
           for k in ("C8_alpha_slope", "C8_alpha_slope_v1", "C8_gd_ratio_paired")},
    )


def _glued_cg(dcg_rows) -> dict:
    cg_gd = [r["rounds"]["GD"] / r["rounds"]["CG"] for r in dcg_rows]
    cg_e = [r["rounds"]["CG"] / r["rounds"]["EAGLE"] for r in dcg_rows]
    ranks = [r["rank"] for r in dcg_rows]
    w_rounds, w_bytes = winners(dcg_rows, "rounds"), winners(dcg_rows, "bytes")
    same = all(decide(r["bytes"], r["capped"])[0] == decide(r["rounds"], r["capped"])[0] for r in dcg_rows)
    return dict(
        C8_cg_capped=cg_capped(dcg_rows), C8_cg_vs_gd_min=num(min(cg_gd)), C8_cg_vs_gd_max=num(max(cg_gd)),
        C8_cg_gd_bound=cg_gd_bound(dcg_rows), C8_cg_vs_eagle_min=num(min(cg_e)), C8_cg_vs_eagle_max=num(max(cg_e)),
        C8_cg_story=cg_story(cg_gd, cg_e), C8_cg_rank=_rank_text(ranks),
        C8_cg_rank_story=cg_rank_story([r["rounds"]["CG"] for r in dcg_rows], ranks),
        C8_dec_sentence=f"By rounds the winner is {and_list(a + b for a, b in w_rounds)}; by bytes it is "
                        f"{and_list(a + b for a, b in w_bytes)}",
        C8_cg_vs_eagle=cg_vs_eagle(dcg_rows),    # for the findings and the summary
        C8_dec_same="so the winner by rounds is the winner by bytes on every problem here" if same else
                    "but the per-round sizes differ enough that the two columns disagree on some problems",
    )


def _glued_freeze(f_alpha, frozen, plain, tf, r_freeze, machine_line) -> dict:
    return dict(C8_freeze_spread=r_freeze.text(".2f"), C8_freeze_timing_verdict=timing_verdict(r_freeze),
                C8_freeze_load=load_phrase(r_freeze), C8_freeze_load_short=load_short(r_freeze),
                C8_freeze_machine=machine_line(tf.before, tf.after), C8_freeze_alpha=f_alpha,
                C8_freeze_at=frozen.frozen_at, C8_freeze_plain=plain.iterations, C8_freeze_frozen=frozen.iterations)


def _glued_procs(M, real, sim, lean, diff, per_round, r_sim, ts, t_launch, machine_line) -> dict:
    cores = ts.before.get("usable_cores") or os.cpu_count()
    wire = float(np.mean(real.wire_bytes_per_round))
    gathered = float(np.mean(real.gather_bytes))
    total = collective_bytes(real)
    t_real = float(np.median(real.time_per_round))
    return dict(
        C8_procs=M, C8_real_iters=real.iterations, C8_real_diff=diff, C8_sim_iters=sim.iterations,
        C8_checks=real.checks, C8_gathers=real.gathers, C8_gather_bytes=gathered, C8_header_floats=real.header_floats,
        C8_test_floats=real.test_floats_per_round, C8_total_kb=total / 1e3, C8_gather_share=100 * gathered / total,
        C8_lean_kb=collective_bytes(lean) / 1e3, C8_lean_iters=lean.iterations, C8_lean_err=lean.rel_error[-1],
        C8_lean_status=lean.status, C8_payload_bytes=real.payload_bytes_per_round,
        C8_floor_bytes=8 * real.floats_per_round, C8_wire_bytes=wire, C8_wire_ratio=wire / real.payload_bytes_per_round,
        C8_ring_ratio=2 * (M - 1) / M, C8_t_real=1e3 * t_real,
        C8_t_comm=1e3 * float(np.median(real.comm_per_round)),
        C8_t_sim=1e3 * float(np.median(per_round["simulation"])),
        C8_t_serial=1e3 * float(np.median(per_round["serial loop"])),
        C8_sim_vs_serial=r_sim.text(".2f"), C8_sim_vs_serial_verdict=timing_verdict(r_sim), C8_round_load=load_phrase(r_sim),
        C8_round_machine=machine_line(ts.before, ts.after),
        C8_comm_share=100 * float(np.median(real.comm_per_round)) / t_real,
        C8_upd_share=100 * float(np.median(real.compute_per_round)) / t_real,
        C8_checks_text=checks_text(real), C8_wire_rest=wire_rest(wire, real.payload_bytes_per_round, M),
        C8_parallel_story=parallel_story(M, real, per_round, cores, loaded=r_sim.loaded),
        C8_t_launch=t_launch, C8_t_wall=real.wall, C8_t_outside=max(t_launch - real.wall, 0.0),
    )


def glued(*, profile, ledger, m_rounds, m_kmax, sweep, gd, gd_same, first, slopes, dcg_rows, f_alpha, frozen, plain,
          tf, r_freeze, M, real, sim, lean, diff, per_round, r_sim, ts, t_launch) -> dict:
    """Everything chapter 8's prose quotes, by key (``ledger``: the chapter's, its comparisons recorded)."""
    from ..timing import machine_line
    findings = dict(C8_findings_m=ledger.verdict_phrase("m-independent"),
                    C8_findings_alpha=ledger.verdict_phrase("alpha-rounds"),
                    C8_findings_gd=ledger.verdict_phrase("gd-rounds"),
                    C8_findings_freeze_rounds=ledger.verdict_phrase("freeze-rounds"),
                    C8_findings_freeze_time=ledger.verdict_phrase("freeze-time"))
    return (_glued_sweeps(profile, m_rounds, m_kmax, sweep, gd, gd_same, first, slopes, ledger) | _glued_cg(dcg_rows)
            | _glued_freeze(f_alpha, frozen, plain, tf, r_freeze, machine_line)
            | _glued_procs(M, real, sim, lean, diff, per_round, r_sim, ts, t_launch, machine_line) | findings)


# ----------------------------------------------------------------------------------------------- figures
def plot_machine_sweep(curves: dict, *, eps: float):
    """Relative error per round of distributed EAGLE for each number of machines M (``curves``: M → array)."""
    fig, ax = subplots()
    for i, (M, rel) in enumerate(curves.items()):
        ax.semilogy(np.arange(1, len(rel) + 1), rel, label=f"M = {M}", color=plt.cm.viridis(i / max(1, len(curves) - 1)),
                    lw=1.2, ls=LINESTYLES[i % 4])
    ax.axhline(eps, color="k", ls=":", lw=0.7, label=f"target {eps:g}")
    ax.set_xlabel(r"round $\ell$"); ax.set_ylabel("relative error")
    legend_outside(ax)
    return finish(fig)


def plot_alpha_sweep(sweeps: dict, *, gd: dict | None = None, cg: dict | None = None, eps: float):
    """Rounds to ``eps`` against 1/ᾱ on log–log axes.  ``sweeps``: label → (mean α list, rounds list);
    ``gd``, ``cg``: label → (α list, rounds list, reached list) for distributed GD and distributed CG (open
    markers where the round cap was hit: a lower bound).  Each method in its colour; within EAGLE, one marker
    and line style per sweep."""
    fig, ax = subplots()
    allx = []
    for i, (label, (al, it)) in enumerate(sweeps.items()):
        x = 1 / np.asarray(al)
        allx += list(x)
        ax.loglog(x, it, marker=MARKERS[i % len(MARKERS)], ms=4, label=f"EAGLE, α {label}",
                  color=METHOD_STYLE["EAGLE"]["color"], ls=("-", "-.")[i % 2])
    for m, (method, base) in enumerate((("GD", gd), ("CG", cg))):
        for j, (label, (al, it, ok)) in enumerate((base or {}).items()):
            x, it, ok = 1 / np.asarray(al), np.asarray(it, float), np.asarray(ok, bool)
            colour = METHOD_STYLE[method]["color"]
            ax.loglog(x, it, marker=MARKERS[(2 * m + j + 2) % len(MARKERS)], ms=4, label=f"distributed {method}, α {label}",
                      color=colour, ls=(("--", ":"), ("-.", (0, (3, 1, 1, 1, 1, 1))))[m][j % 2])
            ax.scatter(x[~ok], it[~ok], facecolors="none", edgecolors=colour, s=36, zorder=3,
                       label=f"{method}: round cap hit" if j == 0 and (~ok).any() else None)
    x0 = np.array([min(allx), max(allx)])
    first = next(iter(sweeps.values()))
    ref = np.median(np.asarray(first[1]) * np.asarray(first[0]))
    ax.loglog(x0, ref * x0, color="k", lw=0.7, ls=":", label=r"$\propto 1/\alpha$")
    ax.set_xlabel(r"$1/\bar\alpha$"); ax.set_ylabel(f"rounds to relative error {eps:g}")
    legend_outside(ax)
    return finish(fig)


def plot_round_time(parts: dict):
    """Median wall time of a round, split into compute and communication (``parts``: label → (compute, comm) s)."""
    labels = list(parts)
    fig, ax = subplots(height=max(2.2, 0.45 * len(labels) + 1.2))
    comp = np.array([parts[k][0] for k in labels]) * 1e3
    comm = np.array([parts[k][1] for k in labels]) * 1e3
    y = np.arange(len(labels))
    ax.barh(y, comp, color=METHOD_STYLE["EAGLE"]["color"], label="compute (UPDATE)")
    ax.barh(y, comm, left=comp, color=METHOD_STYLE["GD"]["color"], hatch="//", label="all_reduce")
    ax.set_yticks(y, labels); ax.invert_yaxis()
    ax.set_xlabel("ms per round (median)")
    legend_outside(ax)
    return finish(fig)

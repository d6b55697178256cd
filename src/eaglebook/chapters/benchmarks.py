"""Chapter 7 (book/07_benchmarks.md): EAGLE against the solvers people use, from the results of the benchmark
harness (:mod:`eaglebook.bench`: parts (a)–(d) and the solver-choice grid (e)).

What the chapter shows is computed by the harness and cached; this module reads those results: the
statistics of the paper comparisons (:func:`recorded`), the chapter's tables (``*_table``), the phrases
whose words depend on the data, the values its prose quotes (:func:`glued`), its check (:func:`checks`) and
its figures (``plot_*``).  ``res`` is the chapter's ``{part: cached harness result}`` for every part of
:data:`eaglebook.bench.harness.PARTS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from .. import config, report, timing
from ..bench import grid as grid_mod
from ..comparisons.c07_benchmarks import PAPER_TABLE2
from ..ledger import ADVANCE, Check
from ..plotting import METHOD_STYLE, distinct_styles, finish, legend_outside, subplots
from ..stability import Resampled

__all__ = ["fmt_t", "fmt_i", "environment_line", "machines", "sweep_tables", "headline_iterations", "median_time",
           "headline_table", "faster", "sizes_table", "floor_story", "SvdRatios", "svd_ratios", "sketch_slopes",
           "periter_ratio", "sgd_ratio", "sgd_table", "randsketch_best", "randsketch_table", "real_table",
           "paper_table2", "distributions_reached", "distributions_table", "noise_ratio", "step_worst",
           "exponents_table", "exp_conclusion", "exp_story", "flop_model_tables", "model_trend",
           "batch_floor_table", "batch_floor_story", "accelerated", "accelerated_tables", "accelerated_stories",
           "sparse_row", "decision", "decision_table", "decision_stories", "precision_table", "precision_stories",
           "floors_table", "near_ref", "floor_stories", "overhead_table", "power_table", "recorded", "checks",
           "glued", "BENCH_STYLE", "plot_bench_curves", "plot_sketched", "plot_noise", "plot_step_grid",
           "plot_grid_times", "plot_floors"]

NAN = float("nan")
SLUG = {"EAGLE": "eagle", "EAGLE (polar-express)": "pe", "Newton–Schulz": "ns", "gelsd": "gelsd", "gelsy": "gelsy",
        "Cholesky": "chol", "SVD": "svd", "Sketch+LSQR": "sketch"}
PE = "EAGLE (polar-express)"


def fmt_t(t) -> str:
    """A time for a table: "—" (none), milliseconds below a second, else seconds."""
    return "—" if t is None else (f"{t * 1e3:.3g} ms" if t < 1 else f"{t:.3g} s")


def fmt_i(k) -> str:
    """A count for a table: "—" (none) or with thousands separators."""
    return "—" if k is None else f"{k:,}"


# ---------------------------------------------------------------------------------------------- the runs
def load_text(load) -> str:
    """A load-average record in words: "11.8, 7.9 and 4.6 (1, 5 and 15 minutes)" for the three averages, or
    "2.25" for one; "not recorded" for None."""
    if load is None:
        return "not recorded"
    if isinstance(load, (list, tuple)):
        return report.and_list([f"{x:.1f}" for x in load]) + (" (1, 5 and 15 minutes)" if len(load) == 3 else "")
    return f"{load:.2f}"


def environment_line(env: dict) -> str:
    """Versions, CPUs, load and BLAS of a harness run (its ``environment``), in two lines."""
    blas = ", ".join(f"{b.get('internal_api')}" + (f" {b['version']}" if b.get("version") else "")
                     + f" ({b.get('num_threads')} thread{'s' if b.get('num_threads') != 1 else ''})" for b in env["blas"])
    return (f"python {env['python']}, numpy {env['numpy']}, scipy {env['scipy']}, torch {env['torch']}; "
            f"{env['cpu_count']} CPUs, load average {load_text(env['load_average'])}\nBLAS: {blas}")


def part_times(res: dict) -> str:
    """The wall time of each part, in one line: "time per part: centralized 7.2 s, sketched 2.6 s, …"."""
    return "time per part: " + ", ".join(f"{p} {fmt_t(r['wall_seconds'])}" for p, r in res.items())


def machines(res: dict) -> dict[str, tuple[dict, dict]]:
    """The machine before and after each part, by the name the reproducibility page lists it under."""
    return {f"part ({'abcde'[i]}) {p}": (r["environment"]["machine_before"], r["environment"]["machine_after"])
            for i, (p, r) in enumerate(res.items())}


#: The benchmark's parts (a, ..., e), by their names in its results (bench names, not regimes).
PARTS = ("centralized", "sketched", "real", "ablations", "grid")


def part_machine(part: dict) -> dict:
    """A part's machine before and after (``{"before": …, "after": …}``), the fallback of a block without its own."""
    env = part["environment"]
    return dict(before=env.get("machine_before") or {}, after=env.get("machine_after") or {})


def load_of(mach: dict | None) -> tuple[float | None, int | None]:
    """(the highest 1-minute load average before/after, the cores this process may use) of a machine record
    ``{"before": …, "after": …}`` (``eaglebook.provenance.machine``); (None, None) when not recorded."""
    if not mach:
        return None, None
    recs = [m for m in (mach.get("before"), mach.get("after")) if m]
    loads = [m["load"] for m in recs if m.get("load") is not None]
    cores = next((m.get("usable_cores") or m.get("cores") for m in recs if m.get("usable_cores") or m.get("cores")), None)
    return (max(loads) if loads else None), cores


def loaded(mach: dict | None) -> bool:
    """Whether the load average reached the core count while the block of ``mach`` was timed."""
    load, cores = load_of(mach)
    return load is not None and cores is not None and load >= cores


def with_load(r: timing.Ratio | None, mach: dict | None) -> timing.Ratio | None:
    """``r`` carrying the load of the block it was timed in (so that the ledger's load rule applies to it)."""
    if r is None:
        return None
    load, cores = load_of(mach)
    return replace(r, load=load, cores=cores)


def ratio_load(r: timing.Ratio) -> str:
    """"load 4.3 on 2 cores" for a ratio carrying its load."""
    return "load not recorded" if r.load is None else f"load {r.load:.2f} on {r.cores} cores"


def load_phrase(mach: dict | None) -> str:
    """"load 4.3 on 2 cores" for a timed block."""
    load, cores = load_of(mach)
    return "load not recorded" if load is None else f"load {load:.2f} on {cores} cores"


def _parts(res: dict):
    return tuple(res[p]["results"] for p in PARTS)


# ---------------------------------------------------------------------------------------------- (a) centralized
SWEEP_METHODS = ["EAGLE", "CG", "LSQR", "LSMR", "GD", "RandSketch+CG", "GD++", "lstsq (numpy)", "SVD"]


def _sweep_table(sweep, ms) -> str:
    lines = ["| κ | rank | " + " | ".join(ms) + " |", "|---|---|" + "---|" * len(ms)]
    for row in sweep:
        for lv in ("1e-06", "1e-12"):
            cells = [f"{fmt_i(row['runs'][m]['to'][lv]['iterations'])} / {fmt_t(row['runs'][m]['to'][lv]['time'])}" for m in ms]
            lines.append(f"| {row['kappa']:.0e} ({lv}) | {'n/2' if row['rank_deficient'] else 'n'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sweep_tables(sweep) -> str:
    """Iterations and solver time to 1e-6 and 1e-12 over the κ sweep, in two tables of methods."""
    return ("Iterations / solver time to relative error 10⁻⁶ and 10⁻¹² (— : not reached within the limit; at κ = 10⁸ "
            "the reference itself is only accurate to about κ·ε), in two tables of methods:\n\n"
            + _sweep_table(sweep, SWEEP_METHODS[:5]) + "\n\n" + _sweep_table(sweep, SWEEP_METHODS[5:]))


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def pow10(x: float) -> str:
    """A power of ten as the prose writes it: 1e4 -> "10⁴" (other numbers: "%.2g")."""
    e = math.log10(x) if x > 0 else float("nan")
    return f"10{str(int(round(e))).translate(SUPERSCRIPT)}" if math.isfinite(e) and abs(e - round(e)) < 1e-9 else f"{x:.2g}"


def trend(xs) -> str:
    """"rises" or "falls" when every step of ``xs`` goes that way, else "is not monotone" (None and NaN break
    monotonicity: a missing value is no step)."""
    if any(x is None or not math.isfinite(x) for x in xs) or len(xs) < 2:
        return "is not monotone"
    d = np.diff(np.asarray(xs, dtype=float))
    return "rises" if (d > 0).all() else "falls" if (d < 0).all() else "is not monotone"


def sweep_story(sweep) -> dict:
    """What the κ sweep's iteration counts say (the sentence beside its figure; glued values): EAGLE's range
    to 1e-6, CG's counts and whether they grow with κ at every step, and which methods reach 1e-6 and 1e-12."""
    full = [r for r in sweep if not r["rank_deficient"]]
    kap = ", ".join(pow10(r["kappa"]) for r in full)
    its = lambda m, lv: [r["runs"][m]["to"][lv]["iterations"] for r in full]     # noqa: E731
    e6, cg6 = its("EAGLE", "1e-06"), its("CG", "1e-06")
    e_ok = [v for v in e6 if v is not None]
    cg_trend = trend(cg6)
    out = dict(
        C7_sweep_eagle=(f"EAGLE needs {min(e_ok)} to {max(e_ok)} iterations to 10⁻⁶ over κ = {kap} (full rank)"
                        + ("" if len(e_ok) == len(e6) else f" and misses it at {len(e6) - len(e_ok)} of them")) if e_ok else
        f"EAGLE reaches 10⁻⁶ at none of κ = {kap} (full rank)",
        C7_sweep_cg=f"CG needs {report.and_list(fmt_i(v) for v in cg6)}" + (" (— : not reached)" if None in cg6 else "") + ": its count "
                    + ("grows with κ at every step" if cg_trend == "rises" else "does not grow with κ at every step"))
    iterative = [m for m in SWEEP_METHODS if m not in ("lstsq (numpy)", "SVD")]
    for lv, name in (("1e-06", "6"), ("1e-12", "12")):
        all_ = [m for m in iterative if all(r["runs"][m]["to"][lv]["iterations"] is not None for r in sweep)]
        none = [m for m in iterative if all(r["runs"][m]["to"][lv]["iterations"] is None for r in sweep)]
        some = [f"{m} ({sum(r['runs'][m]['to'][lv]['iterations'] is not None for r in sweep)} of {len(sweep)})"
                for m in iterative if m not in all_ and m not in none]
        parts = [f"{report.and_list(all_)} in all {len(sweep)} runs" if all_ else f"no method in all {len(sweep)} runs"]
        if some:
            parts.append(report.and_list(some))
        if none:
            parts.append(f"{report.and_list(none)} in none")
        out[f"C7_sweep_reach_{name}"] = "; ".join(parts)
    return out


def headline_iterations(hl: dict) -> dict[str, int | None]:
    """Iterations to 1e-6 of EAGLE, CG, LSMR and RandSketch+CG in the headline run (the one count the table and
    the prose both quote)."""
    return {k: hl["runs"][k]["to"]["1e-06"]["iterations"] for k in ("EAGLE", "CG", "LSMR", "RandSketch+CG")}


def iterations_line(its: dict) -> str:
    """``its`` (method: iterations) in words: "EAGLE 27, CG 6,718, LSMR 6,848 and RandSketch+CG 12"."""
    return report.and_list(f"{k} {fmt_i(v)}" for k, v in its.items())


def median_time(run: dict) -> float:
    """A run's median time over its repeats (its elapsed time when it was run once)."""
    return run.get("median_time") or run["elapsed"]


def headline_ratios(hl: dict, mach: dict | None = None) -> dict[str, timing.Ratio]:
    """Each headline method's untraced time ÷ EAGLE's, paired over the interleaved repeats of the harness's bare
    block (``hl["bare"]``), carrying the block's load; ``mach`` (the part's machine) where a result has no bare
    block (then the traced repeats are paired)."""
    b = hl.get("bare")
    if b is not None:
        sec, m = b["seconds"], b["machine"]
    else:
        sec = {k: v["repeat_times"] for k, v in hl["runs"].items() if v.get("median_time") and v.get("repeat_times")}
        m = mach
    if "EAGLE" not in sec:
        return {}
    return {k: with_load(timing.ratio(v, sec["EAGLE"], k, "EAGLE"), m) for k, v in sec.items() if k != "EAGLE"}


def headline_table(hl: dict, mach: dict | None = None) -> str:
    """The headline run: iterations to 1e-6, the traced and the untraced median time, and each method's untraced
    time ÷ EAGLE's (paired over the interleaved repeats), per method."""
    hr, its = hl["runs"], headline_iterations(hl)
    q = headline_ratios(hl, mach)
    sec = (hl.get("bare") or {}).get("seconds", {})
    rows = ["| method | iterations to 10⁻⁶ | traced (median) | untraced (median) | ÷ EAGLE, untraced (paired) |",
            "|---|---|---|---|---|"]
    for k in ("EAGLE", "CG", "LSMR", "RandSketch+CG", "lstsq (numpy)", "SVD"):
        it = its.get(k, 1 if hr[k]["iterations"] == 1 else None)
        bare = fmt_t(float(np.median(sec[k]))) if k in sec else "—"
        rk = "1" if k == "EAGLE" else ("—" if k not in q else f"{q[k].median:.3g} ({q[k].lo:.3g}–{q[k].hi:.3g})")
        rows.append(f"| {k} | {fmt_i(it)} | {fmt_t(median_time(hr[k]))} | {bare} | {rk} |")
    b = hl.get("bare")
    how = (f"untraced: {len(next(iter(sec.values())))} interleaved repeats of the same iterations without the trace, "
           f"{load_phrase(b['machine'])}" if b else "untraced times not measured in this result")
    k = len(hr["EAGLE"]["repeat_times"])
    return (f"n = {hl['n']}, κ = 10⁴, full rank; traced: {'one run' if k == 1 else f'median of {k} runs'}; {how}:\n\n"
            + "\n".join(rows))


def faster(x: float, other: str) -> str:
    """``x`` = other's time ÷ EAGLE's, in words: "2.0× faster than CG" or "2.0× slower than CG"."""
    return f"{x:.1f}× faster than {other}" if x >= 1 else f"{1 / x:.1f}× slower than {other}"


def paired_phrase(r: timing.Ratio | None, other: str) -> str:
    """EAGLE against ``other`` from ``r`` = other's time ÷ EAGLE's (paired, with the load): "4.5× faster than CG
    (4.3–4.7 over 3 repeats)", "within noise of CG", or "not compared with CG: loaded machine (load 4.3 on 2
    cores)"."""
    if r is None:
        return f"not compared with {other} (not timed)"
    if r.loaded:
        return f"not compared with {other} (loaded machine: load {r.load:.2f} on {r.cores} cores)"
    if not r.decided:
        return f"within noise of {other} ({r.text('.2g')})"
    return f"{faster(r.median, other)} ({r.lo:.2g}–{r.hi:.2g} over {r.repeats} repeats)"


def sizes_table(sizes: list) -> str:
    """EAGLE against lstsq as n grows, and the flops behind it (GEMM rate, time per iteration ÷ GEMM floor)."""
    rows = ["| n | lstsq | EAGLE | EAGLE ÷ lstsq | iterations L | load |", "|---|---|---|---|---|---|"]
    rows2 = ["| n | GFLOP per iteration | GEMM rate | time per iteration ÷ GEMM floor | lstsq in GEMM-rate flops |",
             "|---|---|---|---|---|"]
    for s_ in sizes:
        e = s_["eagle"]
        eq = s_["lstsq_time"] * s_["gemm_rate"] / s_["n"] ** 3
        load, cores = load_of(s_.get("machine"))
        rows.append(f"| {s_['n']} | {fmt_t(s_['lstsq_time'])} | {fmt_t(e['elapsed'])} | {e['elapsed'] / s_['lstsq_time']:.3g} | "
                    f"{e['iterations']} | {'—' if load is None else f'{load:.2f} ({cores} cores)'} |")
        rows2.append(f"| {s_['n']} | {s_['flops_per_iteration'] / 1e9:.3g} | {s_['gemm_rate'] / 1e9:.3g} GFLOP/s | "
                     f"{s_['per_iteration_over_floor']:.2g} | {eq:.2g} n³ |")
    rows += ["", "and the flops behind it:", ""] + rows2
    return ("EAGLE (to 10⁻⁶) against `numpy.linalg.lstsq` as n grows (κ = 10⁴, one thread). The GEMM rate is torch's "
            "measured float64 n×n product rate in the same run; the last column expresses lstsq's time as the number of "
            "flops a GEMM would do in it:\n\n" + "\n".join(rows))


#: Within this factor of the GEMM floor, EAGLE "runs at its floor"; two timings of one size "agree" within it.
FLOOR_AT = 1.25


def floor_story(a: dict, g: dict | None = None) -> str:
    """How close EAGLE runs to its GEMM floor, from part (a)'s timing at its largest n (``a``: n, ratio = time per
    iteration ÷ the floor, time, mach) and, where the grid timed the same n, the grid's (``g``: ratio = measured ÷
    flop model, time, mach).  A verdict only when neither was timed on a loaded machine and the two agree within
    :data:`FLOOR_AT`; otherwise the sentence says why there is none."""
    here = f"{a['ratio']:.2g}× in part (a) ({fmt_t(a['time'])}, {load_phrase(a['mach'])})"
    if g is not None:
        here += f" and {g['ratio']:.2g}× in the grid's timing of the same size ({fmt_t(g['time'])}, {load_phrase(g['mach'])})"
    busy = loaded(a["mach"]) or (g is not None and loaded(g["mach"]))
    if busy:
        return f"{here}; not judged, since a timing was taken on a loaded machine"
    if g is not None and max(a["ratio"], g["ratio"]) > FLOOR_AT * min(a["ratio"], g["ratio"]):
        return f"{here}; the two timings of one size disagree by more than {FLOOR_AT:g}×, so how close EAGLE runs to its floor is not judged"
    worst = max(a["ratio"], g["ratio"]) if g is not None else a["ratio"]
    if worst <= FLOOR_AT:
        return f"{here}: EAGLE runs within {FLOOR_AT:g}× of its GEMM floor"
    return (f"{here}: EAGLE's iterations take more than {FLOOR_AT:g} times what the GEMM rate allows, so an "
            "implementation closer to the floor would gain up to that factor")


def floor_inputs(cen: dict, gr: dict | None, mach: dict | None = None) -> tuple[dict, dict | None]:
    """The arguments of :func:`floor_story`: part (a)'s largest size and the grid's square row of the same n."""
    big = cen["sizes"][-1]
    a = dict(n=big["n"], ratio=big["per_iteration_over_floor"], time=big["eagle"]["elapsed"], mach=big.get("machine") or mach)
    g = None
    if gr is not None:
        for f_, r in zip(gr["square"]["flop_model"], gr["square"]["rows"]):
            if f_["n"] == big["n"] and f_.get("eagle"):
                g = dict(n=f_["n"], ratio=f_["eagle"]["measured_over_model"], time=f_["eagle"]["measured"], mach=r.get("machine"))
    return a, g


@dataclass(frozen=True)
class SvdRatios:
    """EAGLE's time to 1e-6 ÷ SVD's per full-rank κ of the sweep: the paired ratio of interleaved repeats (None
    where EAGLE missed 1e-6 in a repeat; with the load of its block), its median (inf when missed) and that ÷
    (log₂κ + log₂log₂10⁶)."""

    kappas: list
    pairs: list          # timing.Ratio | None per κ
    raw: list            # the median ratio per κ
    per_log: list        # raw ÷ the log factor per κ

    @property
    def worst(self) -> int:
        """The index of the κ with the largest ratio (the one judged)."""
        return int(np.argmax(self.raw))

    @property
    def log_factors(self) -> list:
        """log₂κ + log₂log₂10⁶ per κ."""
        return [log_factor(k) for k in self.kappas]


def log_factor(kappa: float) -> float:
    """The allowance of "matches SVD up to a log factor": log₂κ + log₂log₂10⁶ (Theorem 1's iteration bound)."""
    return math.log2(kappa) + math.log2(math.log2(1e6))


def svd_ratios(sweep, mach: dict | None = None) -> SvdRatios:
    """EAGLE ÷ SVD, paired over interleaved repeats at each full-rank κ of the centralized sweep; each ratio
    carries the load of its block (``mach``, the part's machine, where the result has none)."""
    kappas, raw, per_log, pairs_all = [], [], [], []
    for row in sweep:
        if row["rank_deficient"]:
            continue
        vs_ = row["vs_svd"]
        pairs = [(a, b) for a, b in zip(vs_["eagle_times"], vs_["svd_times"]) if a is not None]
        r = timing.ratio(*zip(*pairs), "EAGLE", "SVD") if len(pairs) == len(vs_["eagle_times"]) else None
        kappas.append(row["kappa"])
        pairs_all.append(with_load(r, vs_.get("machine") or mach))
        raw.append(r.median if r else float("inf"))
        per_log.append(raw[-1] / log_factor(row["kappa"]))
    return SvdRatios(kappas, pairs_all, raw, per_log)


# ---------------------------------------------------------------------------------------------- (b) sketched
def _loglog_slope(x, y) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def sketch_slopes(r_sweep) -> dict[str, float]:
    """Log–log slopes of EAGLE's iterations against n/r: to 1e-6 over every r (``all``), over the sketched runs
    r < n only (``sketched``), and to 1e-2 (``to_1e2``; NaN unless every run reached it)."""
    nr = np.array([r["n_over_r"] for r in r_sweep])
    it6 = [r["eagle"]["to"]["1e-06"]["iterations"] for r in r_sweep]
    ok = [i for i, v in enumerate(it6) if v is not None]
    sk_ok = [i for i in ok if nr[i] > 1]               # r < n: the sketched runs only
    slope = lambda idx: _loglog_slope(nr[idx], np.array(it6, dtype=float)[idx]) if len(idx) >= 2 else NAN
    it2 = np.array([r["eagle"]["to"]["0.01"]["iterations"] or np.nan for r in r_sweep], dtype=float)
    return dict(all=slope(ok), sketched=slope(sk_ok), to_1e2=_loglog_slope(nr, it2) if np.isfinite(it2).all() else NAN)


def periter_ratio(pi: dict, mach: dict | None = None) -> timing.Ratio:
    """Per-iteration time at the largest sketch size r ÷ at the smallest, paired over interleaved repeats (the
    benchmark's records keep the sizes under ``"s"``), with the load of the block (``mach``, the part's machine,
    where the result has none)."""
    return with_load(timing.ratio(pi["repeats"][str(pi["s"][0])], pi["repeats"][str(pi["s"][-1])], f"r = {pi['s'][0]}",
                                  f"r = {pi['s'][-1]}"), pi.get("machine") or mach)


#: Our own goal for the sketched solver's per-iteration time: r = n at least this many times r = n/8's.
PERITER_GOAL = 4.0


def periter_goal(x: float, goal: float = PERITER_GOAL) -> str:
    """Whether the per-iteration ratio ``x`` meets our goal: "meets our performance goal of at least 4" or "falls
    short of our performance goal of at least 4"."""
    return f"{'meets' if x >= goal else 'falls short of'} our performance goal of at least {goal:g}"


def periter_list(pi: dict) -> str:
    """The per-iteration times in words: "5.1 ms at r = 240, 2.9 ms at 120, 2.1 ms at 60 and 1.7 ms at 30"."""
    ss = pi["s"]
    return report.and_list(f"{fmt_t(pi['per_iteration'][str(s_)])} at {'r = ' if i == 0 else ''}{s_}" for i, s_ in enumerate(ss))


def sgd_pairs(vs: dict) -> list[tuple[int, float, float]]:
    """(seed index, SGD's time, EAGLE's time) of the seeds where both reached 1e-2."""
    return [(i, b, a) for i, (a, b) in enumerate(zip(vs["eagle_times"], vs["sgd_times"])) if a is not None and b is not None]


def sgd_ratio(vs: dict, mach: dict | None = None) -> timing.Ratio | None:
    """SGD's time to 1e-2 ÷ sketched EAGLE's, paired over seeds (None when no pair of runs reached 1e-2), with
    the load of the block (``mach``, the part's machine, where the result has none)."""
    pairs = sgd_pairs(vs)
    return with_load(timing.ratio([b for _, b, _ in pairs], [a for *_, a in pairs], "SGD", "EAGLE"),
                     vs.get("machine") or mach) if pairs else None


def sgd_resampled(vs: dict) -> Resampled | float:
    """The SGD speed-up as a statistic over seeds: the median of the per-seed ratios, resampled over the seeds
    (NaN when no seed reached 1e-2)."""
    pairs = sgd_pairs(vs)
    if not pairs:
        return NAN
    return Resampled(np.array([b / a for _, b, a in pairs]), np.median, unit="seeds", names=[f"seed {i}" for i, *_ in pairs])


def sgd_table(vs: dict) -> str:
    rows = ["| seed | EAGLE to 1e-2 | SGD to 1e-2 |", "|---|---|---|"]
    rows += [f"| {i} | {fmt_t(a)} | {fmt_t(b)} |" for i, (a, b) in enumerate(zip(vs["eagle_times"], vs["sgd_times"]))]
    return f"Sketched EAGLE against SGD, r = {vs['r']} = n/4, to relative error 10⁻²:\n\n" + "\n".join(rows)


def randsketch_best(vr: dict) -> float:
    """The best EAGLE variant's time to 1e-6 ÷ RandSketch+CG's (NaN when none reached it)."""
    return min((v for k, v in vr["ratio"].items() if k.startswith("EAGLE") and v is not None), default=NAN)


def randsketch_table(vr: dict) -> str:
    rows = ["| method | iterations to 10⁻⁶ | median time to 10⁻⁶ | ÷ RandSketch+CG |", "|---|---|---|---|"]
    for k, v in vr["runs"].items():
        rows.append(f"| {k} | {fmt_i(v['to']['1e-06']['iterations'] if v['iterations'] > 1 else 1)} | {fmt_t(v['median_time'])} | "
                    f"{'—' if vr['ratio'][k] is None else format(vr['ratio'][k], '.3g')} |")
    return (f"Time to 10⁻⁶ at n = {vr['n']}, κ = 10⁴ (median of {len(vr['runs']['EAGLE']['repeat_times'])} runs each):\n\n"
            + "\n".join(rows))


# ---------------------------------------------------------------------------------------------- (c) real matrix
def real_table(rea: dict) -> str:
    """Part (c): every method on the real matrix's block (the run must be ``available``)."""
    order = {k: i + 1 for i, k in enumerate(rea["ranking"])}
    rows = ["| method | iterations | median time | ÷ lstsq time | ‖wA − B‖²/‖B‖² | rank |", "|---|---|---|---|---|---|"]
    for k, v in rea["runs"].items():
        rows.append(f"| {k} | {v['iterations']} | {fmt_t(v['median_time'])} | {v['median_time'] / rea['baseline_time']:.3g} | "
                    f"{v['final']:.1e} | {order.get(k, '')} |")
    cols = "all columns" if rea["max_cols"] is None else f"its first {rea['max_cols']} columns (ci profile)"
    return (f"{rea['matrix']} ({rea['shape'][0]} × {rea['shape'][1]}, {100 * rea['nnz_fraction']:.2g}% non-zeros), "
            f"{cols}: block rank r = {rea['rank']}, κ(A) = {rea['kappa']:.3g}; one thread:\n\n" + "\n".join(rows))


def paper_table2() -> str:
    """The paper's Table 2 (seconds, on a GPU), with EAGLE ÷ SVD per matrix."""
    rows = ["| matrix | EAGLE | SVD | CG | LSMR | EAGLE ÷ SVD |", "|---|---|---|---|---|---|"] + [
        f"| {m} | {e} | {s_} | {c} | {l} | {e / s_:.2f} |" for m, e, s_, c, l in PAPER_TABLE2]
    return "For reference, the paper's Table 2 (seconds, on a GPU):\n\n" + "\n".join(rows)


def _table2_ratio(rea: dict, mach: dict | None = None) -> timing.Ratio:
    vs = rea["vs_svd"]          # interleaved pairs, with the load of their block
    return with_load(timing.ratio(vs["eagle_times"], vs["svd_times"], "EAGLE", "SVD"), vs.get("machine") or mach)


# ---------------------------------------------------------------------------------------------- (d) ablations
def distributions_reached(abl: dict) -> int:
    """On how many of the six distributions EAGLE's best error reaches 1e-10."""
    return sum(dd["runs"]["EAGLE"]["best"] <= 1e-10 for dd in abl["distributions"])


def distributions_resampled(abl: dict) -> Resampled:
    """:func:`distributions_reached` as a statistic over the distributions (resampled over them)."""
    dd = abl["distributions"]
    return Resampled(np.array([float(d["runs"]["EAGLE"]["best"] <= 1e-10) for d in dd]), np.sum, unit="distributions",
                     names=[d["kind"] for d in dd])


def dist_story(abl: dict) -> str:
    """Whether EAGLE's iterations to 1e-6 follow κ(A) over the distributions (never fewer for a larger κ)."""
    pts = sorted((d["kappa"], d["runs"]["EAGLE"]["to"]["1e-06"]["iterations"], d["kind"]) for d in abl["distributions"])
    its = [i for _, i, _ in pts]
    listing = "; ".join(f"{k} (κ = {kap:.2g}): {fmt_i(i)}" for kap, i, k in pts)
    if any(i is None for i in its):
        return f"EAGLE's iterations to 10⁻⁶, by κ(A): {listing} (— : not reached)"
    ok = all(b >= a for a, b in zip(its, its[1:]))
    return (f"EAGLE's iterations to 10⁻⁶ {'never fall' if ok else 'do not always rise'} as κ(A) grows over the "
            f"distributions: {listing}")


def _first_at(run: dict, level: float):
    return next((i for i, v in zip(run["curve"]["iteration"], run["curve"]["value"]) if v <= level), None)


def distributions_table(abl: dict) -> str:
    rows = ["| distribution | κ(A) | EAGLE iterations to 1e-6 / 1e-10 | EAGLE final | CG iterations to 1e-6 / 1e-10 | lstsq error |",
            "|---|---|---|---|---|---|"]
    for dd in abl["distributions"]:
        e, c = dd["runs"]["EAGLE"], dd["runs"]["CG"]
        rows.append(f"| {dd['kind']} | {dd['kappa']:.2g} | {fmt_i(e['to']['1e-06']['iterations'])} / {fmt_i(_first_at(e, 1e-10))} | "
                    f"{e['final']:.1e} | {fmt_i(c['to']['1e-06']['iterations'])} / {fmt_i(_first_at(c, 1e-10))} | "
                    f"{dd['runs']['lstsq (numpy)']['final']:.1e} |")
    return f"Six data distributions (App. E.3), n = d = {abl['n']}, n' = d' = 2, rank n:\n\n" + "\n".join(rows)


def noise_ratio(abl: dict) -> float:
    """EAGLE's best error ÷ GD's on the noisy full-rank problem."""
    nz = abl["noise"][0]["runs"]
    return nz["EAGLE"]["best"] / nz["GD"]["best"]


def noise_story(noise_rows: list) -> str:
    """What the noisy full-rank run shows (the sentence beside its figure): where EAGLE's and GD's errors are
    lowest, when EAGLE comes within 1% of the exact least-squares completion of the noisy data, and where GD ends."""
    r = noise_rows[0]["runs"]
    e, g, ls = r["EAGLE"], r["GD"], r["lstsq (numpy)"]["final"]
    near = next((i for i, v in zip(e["curve"]["iteration"], e["curve"]["value"]) if abs(v - ls) <= 0.01 * ls), None)
    return (f"EAGLE's error against the clean completion is lowest after {e['best_iteration']} iterations and GD's after "
            f"{fmt_i(g['best_iteration'])}; then both grow, EAGLE's "
            + (f"to within 1% of the exact least-squares completion of the noisy data after {near} iterations"
               if near is not None else f"to {e['final'] / ls:.2g} times the error of the exact least-squares completion of the noisy data")
            + f", GD's to {g['final'] / ls:.2g} times that error after {fmt_i(g['iterations'])} iterations")


def step_worst(g: dict) -> float:
    """The largest median best error over both step-size grids."""
    return max(e["best_median"] for k in ("together", "ratio") for e in g[k])


def step_resampled(g: dict) -> Resampled | float:
    """:func:`step_worst` as a statistic over the instances (the largest, over the grid points, of the median over
    instances; resampled over the instances); the plain value for a result without the per-instance errors."""
    cols = [e.get("best") for k in ("together", "ratio") for e in g[k]]
    if any(c is None for c in cols):
        return step_worst(g)
    return Resampled(np.array(cols).T, lambda v: float(np.max(np.median(v, axis=0))), unit="problems")


def _step_iterations(g: dict) -> list[float]:
    return [np.median([v for v in e["iterations_to_1e10"] if v is not None] or [np.nan]) for k in ("together", "ratio") for e in g[k]]


def steps_speed(g: dict) -> str:
    """The slowest and the fastest grid point by median iterations to 1e-10."""
    pts = [(it, k, e["factor"]) for k in ("together", "ratio") for e, it in
           zip(g[k], [np.median([v for v in e["iterations_to_1e10"] if v is not None] or [np.nan]) for e in g[k]])
           if np.isfinite(it)]
    label = {"together": "η, γ × {f:.2g}", "ratio": "γ/η = {f:.2g}"}
    hi, lo = max(pts), min(pts)
    return (f"slowest at {label[hi[1]].format(f=hi[2])} ({hi[0]:.0f} iterations), fastest at "
            f"{label[lo[1]].format(f=lo[2])} ({lo[0]:.0f})")


# ---------------------------------------------------------------------------------------------- (e) the grid
def _exponents(gr: dict) -> dict[str, list]:
    """Per method of the grid: its cost exponent on square problems, over the last doubling, tall and wide."""
    return {m: [gr["square"]["exponents"].get(m), gr["square"]["last_doubling"].get(m)]
            + [gr[s_]["exponents"].get(m) for s_ in ("tall", "wide")] for m in gr["tall"]["methods"]}


def exponents_table(gr: dict) -> str:
    sq_ns = [r["n"] for r in gr["square"]["rows"]]
    rows = [f"| method | square (d = n) | square, n = {sq_ns[-2]} → {sq_ns[-1]} | tall (d = 8n) | wide (n = 8d) |",
            "|---|---|---|---|---|"]
    for m, e in _exponents(gr).items():
        rows.append(f"| {m} | " + " | ".join("—" if v is None else f"{v:.2f}" for v in e) + " |")
    return (f"Cost exponents (log–log slope of the median time to {gr['target']:.0e} against the size), κ = 10⁴, one thread; "
            f"square n = {', '.join(map(str, sq_ns))} (over the whole range, and between the two largest sizes); tall and wide short side "
            f"{', '.join(str(r['k']) for r in gr['tall']['rows'])}; — where a method was not timed at two of the sizes:\n\n" + "\n".join(rows))


def exp_conclusion(ex: dict, tail: dict) -> str:
    """What the slopes say: ``ex`` the exponents over the whole range, ``tail`` over the last doubling."""
    if max(tail.values()) < 1.5:
        return ("At these sizes the times hardly grow with n (every slope of the last doubling is below 1.5): a fixed "
                "cost per call or per iteration (Python, the BLAS's start-up) dominates, and the slopes say nothing "
                "about the cubic cost of large problems.")
    up = [m for m in tail if ex.get(m) is not None and tail[m] > ex[m]]
    both = [m for m in tail if ex.get(m) is not None]
    out = (("For every method" if len(up) == len(both) else f"For {len(up)} of the {len(both)} methods timed at both sizes")
           + " the slope of the last doubling is larger than over the whole range"
           + (": at the small sizes a fixed cost per call or per iteration (Python, the BLAS's start-up, the small "
              "products) is a large part of the time, so the slopes over the whole range understate how the cost grows. "
              if len(up) == len(both) else ". "))
    near = [m for m in tail if tail[m] >= 2.7]
    return out + (f"At the top of the range {report.and_list(near)} {'is' if len(near) == 1 else 'are'} at 2.7 or more, "
                  "close to the asymptotic 3 of dense linear algebra." if near else
                  "Even at the top of the range every slope is below 2.7, short of the asymptotic 3 of dense linear algebra.")


#: A cost exponent further than this from 3 (dense linear algebra's) is flagged, with what explains it.
EXP_TOL = 0.5


def exp_departures(gr: dict, tol: float = EXP_TOL) -> str:
    """The methods whose exponent over the last doubling of the square series departs from 3 by more than
    ``tol``, and what the same run says about why: the GEMM rate measured at the two sizes (a method running at a
    fixed fraction of it has the exponent 3 − log(rate₂/rate₁)/log(n₂/n₁)), and EAGLE's flop model (its
    iterations at both sizes times its flops ÷ that rate).  "" when none departs."""
    sq = gr["square"]
    ns = [r["n"] for r in sq["rows"]]
    tail = {m: v for m, v in sq["last_doubling"].items() if v is not None}
    off = {m: v for m, v in tail.items() if abs(v - 3) > tol}
    if not off:
        return ""
    step = math.log(ns[-1] / ns[-2])
    out = (f"Over the last doubling {report.and_list(f'{m} ({v:.2f})' for m, v in off.items())} "
           f"{'departs' if len(off) == 1 else 'depart'} from the exponent 3 of a dense cubic method by more than {tol:g}.")
    rates = sq.get("gemm_rate")
    if rates:
        eff = 3 - math.log(rates[-1] / rates[-2]) / step
        out += (f" The GEMM rate measured in the same run goes from {rates[-2] / 1e9:.3g} to {rates[-1] / 1e9:.3g} GFLOP/s "
                f"between n = {ns[-2]} and {ns[-1]}, which alone gives a method running at a fixed fraction of it the "
                f"exponent {eff:.2f}" + (": the matrix products' efficiency still changes with n at these sizes."
                                         if abs(eff - 3) > 0.2 else ", so the products' efficiency does not explain it."))
    fm = sq.get("flop_model", [])
    if "EAGLE" in off and len(fm) >= 2 and fm[-1].get("eagle") and fm[-2].get("eagle"):
        model = math.log(fm[-1]["eagle"]["model"] / fm[-2]["eagle"]["model"]) / step
        its = (fm[-2]["eagle"]["iterations"], fm[-1]["eagle"]["iterations"])
        close = abs(model - off["EAGLE"]) <= 0.3
        out += (f" EAGLE's flop model ({its[0]} and {its[1]} iterations at the two sizes, at that rate) predicts "
                f"{model:.2f}; " + ("its measured exponent follows the model, so the departure is the products' efficiency "
                                     "and the iteration count, not the cost of an iteration"
                                     if close else "its measured exponent does not follow the model, so fixed costs or "
                                     "the machine's load move it (the flop model table gives the times)") + ".")
    return out


def exp_story(gr: dict) -> str:
    """The range of the square exponents, over the whole range and the last doubling, and what follows."""
    sq_ns = [r["n"] for r in gr["square"]["rows"]]
    ex = {m: gr["square"]["exponents"].get(m) for m in gr["square"]["methods"]}
    lo_m, hi_m = min((m for m in ex if ex[m] is not None), key=ex.get), max((m for m in ex if ex[m] is not None), key=ex.get)
    tail = {m: v for m, v in gr["square"]["last_doubling"].items() if v is not None}
    tlo, thi = min(tail, key=tail.get), max(tail, key=tail.get)
    untimed = [m for m in gr["square"]["methods"] if m not in tail]
    return (f"On square problems the exponents over the whole range run from {ex[lo_m]:.2f} for {lo_m} to "
            f"{ex[hi_m]:.2f} for {hi_m}; between n = {sq_ns[-2]} and {sq_ns[-1]} they run from {tail[tlo]:.2f} for {tlo} to "
            f"{tail[thi]:.2f} for {thi}. "
            + (f"{report.and_list(untimed)} {'was' if len(untimed) == 1 else 'were'} not timed at both sizes. " if untimed else "")
            + exp_conclusion(ex, tail) + (" " + exp_departures(gr) if exp_departures(gr) else ""))


def flop_model_tables(gr: dict) -> str:
    """EAGLE and the accelerated variant against their flop models, per square size."""
    head = "| n | GEMM rate | iterations | measured | flop model | measured ÷ model |\n|---|---|---|---|---|---|"
    tables = {}
    for label, k in (("EAGLE", "eagle"), (PE, "pe")):
        rows = [head]
        for f_ in gr["square"]["flop_model"]:
            e = f_[k] or {}
            rows.append(f"| {f_['n']} | {f_['gemm_rate'] / 1e9:.3g} GFLOP/s | {fmt_i(e.get('iterations'))} | {fmt_t(e.get('measured'))} | "
                        f"{fmt_t(e.get('model'))} | {e.get('measured_over_model', float('nan')):.3g} |")
        tables[label] = "\n".join(rows)
    return ("The flop model is iterations × the UPDATE's flops (`harness.eagle_flops`; the accelerated round's "
            "`accelerated.flops_per_round`) ÷ the float64 GEMM rate measured in the same run.\n\n"
            + "\n\n".join(f"**{label}**\n\n{t}" for label, t in tables.items()))


def model_trend(values) -> str:
    """How EAGLE's measured ÷ modelled time moves over the sizes ``values`` (smallest n first): falling at every
    step, lower at the largest n but not at every step, or not lower."""
    v = [float(x) for x in values]
    listed = ", ".join(f"{x:.3g}" for x in v)
    if trend(v) == "falls":
        return (f"the ratio falls at every step as n grows ({listed}): the work that is not a large matrix product (the "
                "power iterations, the stopping rule, Python) is a fixed cost per iteration, which larger products amortise")
    if v[-1] < v[0]:
        return (f"the ratio is lower at the largest n than at the smallest but does not fall at every step ({listed}), so "
                "these timings do not show a fixed cost that larger products amortise")
    return (f"the ratio does not fall as n grows at these sizes ({listed}), so the time is not dominated by the large "
            "products the model counts")


def batch_floor_table(bf: dict) -> str:
    rows = ["| setting | iterations | checks | whole solve ÷ GEMM floor | certification share | whole solve |",
            "|---|---|---|---|---|---|"]
    for name, r in bf.items():
        q, c = r["ratio"], r["certification_share"]
        rows.append(f"| {name} (κ = {r['kappa']:.0e}) | {r['iterations']} | {r['checks']} | {q['median']:.2f} "
                    f"({q['min']:.2f}–{q['max']:.2f}) | {100 * c['median']:.1f}% ({100 * c['min']:.1f}–{100 * c['max']:.1f}%) "
                    f"| {fmt_t(r['whole_s']['median'])} |")
    return "\n".join(rows)


def batch_floor_story(batches: list) -> str:
    """Whether every batch runs within 1.5× of its GEMM floor."""
    return ("within the goal of 1.5× for every batch" if all(r["ratio"]["max"] <= 1.5 for r in batches) else
            "above the goal of 1.5×: per round a batch also pays for the power iterations' batched matrix–vector products "
            "and an elementwise pass over A, which cost little for one large matrix and a fixed time per small one")


def accelerated(kr: list) -> tuple[list, list]:
    """Per κ of the grid's κ sweep: (row, EAGLE's run, the accelerated run, their paired time ratio), and EAGLE's
    iterations ÷ the accelerated variant's to 1e-6 and to 1e-12 (NaN where either missed)."""
    acc_rows = [(r, r["runs"]["EAGLE"], r["runs"][PE], r["vs_eagle"].get(PE)) for r in kr]
    fewer = [[e["to"][lv] / p_["to"][lv] if e["to"][lv] and p_["to"][lv] else float("nan") for lv in ("1e-06", "1e-12")]
             for _, e, p_, _ in acc_rows]
    return acc_rows, fewer


def _span(rec: dict) -> str:
    """"median (min–max)" of a timed run."""
    return "—" if rec.get("median") is None else f"{fmt_t(rec['median'])} ({fmt_t(rec['spread'][0])}–{fmt_t(rec['spread'][1])})"


def _paired(q) -> str:
    """A paired ratio with its range."""
    return "—" if q is None else f"{q['median']:.2g}× ({q['lo']:.2g}–{q['hi']:.2g})"


def accelerated_tables(gr: dict) -> str:
    acc_rows, fewer = accelerated(gr["kappa"]["rows"])
    its = ["| κ | EAGLE: iterations to 1e-6 / 1e-12 | accelerated | fewer by |", "|---|---|---|---|"]
    tms = ["| κ | EAGLE: time to 1e-6 | accelerated | accelerated ÷ EAGLE (paired) | verdict |", "|---|---|---|---|---|"]
    for (r, e, p_, q), f_ in zip(acc_rows, fewer):
        its.append(f"| {r['kappa']:.0e} | {fmt_i(e['to']['1e-06'])} / {fmt_i(e['to']['1e-12'])} | {fmt_i(p_['to']['1e-06'])} / "
                   f"{fmt_i(p_['to']['1e-12'])} | {f_[0]:.2g}× / {f_[1]:.2g}× |")
        tms.append(f"| {r['kappa']:.0e} | {_span(e)} | {_span(p_)} | {_paired(q)} | {'—' if q is None else q['verdict']} |")
    return (f"n = d = {gr['kappa']['n']}, one thread, float64. Iterations:\n\n" + "\n".join(its)
            + f"\n\nTimes of {gr['repeats']} interleaved repeats, median (min–max):\n\n" + "\n".join(tms))


def _pe_settings(gr: dict) -> list:
    """Every timed setting of the grid with the accelerated variant's paired ratio to EAGLE."""
    kr = gr["kappa"]["rows"]
    return ([(r["shape"], r["d"], r["n"], r["kappa"], r.get("dtype", "float64"), r.get("threads", 1), r["vs_eagle"].get(PE))
             for key in ("square", "tall", "wide") for r in gr[key]["rows"]]
            + [(r["shape"], r["d"], r["n"], r["kappa"], "float64", 1, r["vs_eagle"].get(PE)) for r in kr]
            + [("square", r["d"], r["n"], r["kappa"], dt, 1, r["vs_eagle"].get(PE))
               for dt, r in ((dt, gr["precision"][dt]) for dt in ("float64", "float32"))]
            + [("square", r["d"], r["n"], r["kappa"], "float64", t, r["vs_eagle"].get(PE))
               for t, r in ((t, gr["threads"][t]) for t in gr["threads"] if t not in ("cores", "all_over_one", "machine"))])


def accelerated_stories(gr: dict) -> dict:
    """The accelerated variant against EAGLE: fewer iterations, time, and every timed setting (glued values)."""
    from ..solver import accelerated as acc_solver
    kr = gr["kappa"]["rows"]
    acc_rows, fewer = accelerated(kr)
    won = [q is not None and q["verdict"] == f"{PE} faster" for _, _, _, q in acc_rows]
    fl = [x for f_ in fewer for x in f_ if np.isfinite(x)]
    qs = [q for *_, q in acc_rows if q is not None]
    gain = [q["median"] * f_[0] for (_, _, _, q), f_ in zip(acc_rows, fewer) if q is not None and np.isfinite(f_[0])]
    time_story = (f"In time it is faster at {sum(won)} of the {len(kr)} condition numbers (paired ratios "
                  f"{min(q['median'] for q in qs):.2g}–{max(q['median'] for q in qs):.2g} of EAGLE's time)"
                  + ("" if all(won) else ", within noise at the others") + ".")
    pe_all = _pe_settings(gr)
    not_won = [f"{s_} {d_}×{n_}, κ = {k_:.0e}, {dt}, {t} thread(s) ({'not timed' if q is None else q['verdict']})"
               for s_, d_, n_, k_, dt, t, q in pe_all if q is None or q["verdict"] != f"{PE} faster"]
    return dict(
        C7_acc_fewer_min=min(fl), C7_acc_fewer_max=max(fl),
        C7_acc_gemms=acc_solver.gemms_per_round(), C7_eagle_gemms=2,
        C7_acc_gain_story="the time gains less than the iteration count at every κ" if all(g_ > 1 for g_ in gain) else
        "at some κ the time gains as much as the iteration count or more (the fixed costs per round dominate there)",
        C7_acc_time_story=time_story, C7_acc_time_story_lc=time_story[0].lower() + time_story[1:],
        C7_acc_settings=len(pe_all), C7_acc_won=len(pe_all) - len(not_won),
        C7_acc_default_story=("It is not faster everywhere it was measured: " + "; ".join(not_won) + ". ") if not_won else
        "It was faster than EAGLE in every time comparison measured here. ")


def sparse_row(rea: dict, mach: dict | None = None) -> dict:
    """Part (c)'s real matrix as a row of the decision table (its repeats were not interleaved: the margin is
    the ratio of medians with the range of all repeats); ``mach``: part (c)'s machine."""
    real_runs = {k: dict(seconds=v["repeat_times"], median=v["median_time"]) for k, v in rea.get("runs", {}).items() if v.get("reached")}
    order_r = sorted(real_runs, key=lambda k: real_runs[k]["median"])
    return dict(setting="sparse (real)", job="part (c)", shape=f"{rea['matrix']} block", size=f"{rea['rank']}×{rea['rank']}",
                kappa=rea["kappa"], precision="float64", threads=1, fastest=order_r[0], runner_up=order_r[1],
                margin=grid_mod.unpaired(real_runs[order_r[1]], real_runs[order_r[0]], order_r[1], order_r[0]),
                eagle_rank=order_r.index("EAGLE") + 1 if "EAGLE" in order_r else None, methods=len(order_r),
                fastest_over_eagle=None if order_r[0] == "EAGLE" or "EAGLE" not in real_runs else
                dict(median=real_runs[order_r[0]]["median"] / real_runs["EAGLE"]["median"]), machine=mach)


def decision(gr: dict, rea: dict, mach: dict | None = None) -> list:
    """The decision rows: the grid's, then part (c)'s sparse row (``mach``: part (c)'s machine)."""
    return gr["decision"] + [sparse_row(rea, mach)]


def row_loaded(r: dict) -> bool:
    """Whether a decision row was timed while the load average reached the core count."""
    return loaded(r.get("machine"))


def describe(r: dict) -> str:
    """A decision row's verdict in words (:func:`eaglebook.bench.grid.describe`), "not judged" when it was timed
    on a loaded machine."""
    d = grid_mod.describe(r)
    return f"{r['fastest']}: not judged, loaded machine ({load_phrase(r['machine'])})" if row_loaded(r) else d


def decision_table(dec: list) -> str:
    rows = ["| setting (job): A (d×n), κ, precision, threads | fastest (margin over the runner-up) | EAGLE's place | fastest ÷ EAGLE |",
            "|---|---|---|---|"]
    for r in dec:
        fe = r["fastest_over_eagle"]
        rows.append(f"| {r['setting']} ({r['job']}): {r['shape']} {r['size']}, κ = {r['kappa']:.0e}, {r['precision']}, "
                    f"{r['threads']} thr. | {describe(r)} | {fmt_i(r['eagle_rank'])} of {r['methods']} | "
                    f"{'—' if fe is None else format(fe['median'], '.2g')} |")
    return "\n".join(rows)


def _win_kind(r: dict) -> str:
    return "EAGLE" if r["fastest"].startswith("EAGLE") else "direct" if grid_mod.kind(r["fastest"]) == "direct" else "iterative"


def _setting(r: dict) -> str:
    return f'{r["shape"]} {r["size"]}, κ = {r["kappa"]:.0e}, {r["precision"]}, {r["threads"]} thr.'


def eagle_place(rows: list) -> str:
    """The cubic EAGLE's place in the decision rows ``rows``: "last of the methods timed in 18 of the 19 settings
    where it was timed (in the other: 5 of 8)"."""
    timed = [r for r in rows if r["eagle_rank"] is not None]
    missed = len(rows) - len(timed)
    tail = f"; it was not timed (it missed the target) in {missed} more" if missed else ""
    if not timed:
        return "not timed in any setting (it missed the target)"
    others = [f"{r['eagle_rank']} of {r['methods']}" for r in timed if r["eagle_rank"] != r["methods"]]
    if not others:
        return f"last of the methods timed in every one of the {len(timed)} settings where it was timed{tail}"
    counts = {o: others.count(o) for o in others}
    shown = report.and_list(o if c == 1 else f"{o} in {c} settings" for o, c in counts.items())
    return (f"last of the methods timed in {len(timed) - len(others)} of the {len(timed)} settings where it was timed "
            f"(in the other{'s' if len(others) > 1 else ''}: {shown}){tail}")


def decision_stories(dec: list, rea: dict) -> dict:
    """Who wins the decision rows, in counts and words (glued values); the rows timed on a loaded machine are not
    judged and are counted apart."""
    judged = [r for r in dec if not row_loaded(r)]
    sparse = dec[-1]
    win_kind = [_win_kind(r) for r in judged]
    others = sorted({f'{describe(r)} ({r["shape"]} {r["size"]}, κ = {r["kappa"]:.0e})' for r, k in zip(judged, win_kind)
                     if k != 'direct'})
    bat = [r for r in dec if r["job"] == "batched"]
    n_direct = win_kind.count("direct")
    n_load = len(dec) - len(judged)
    loaded_note = (f" ({n_load} more {'was' if n_load == 1 else 'were'} timed on a loaded machine and {'is' if n_load == 1 else 'are'} not judged)"
                   if n_load else "")
    if not judged:
        story = f"Every one of the {len(dec)} settings was timed on a loaded machine, so no fastest method is judged here."
    elif n_direct == len(judged):
        story = (f"A direct method (a LAPACK driver or Cholesky) is the fastest in every one of the {len(judged)} settings "
                 f"judged on this CPU{loaded_note}.")
    else:
        story = (f"A direct method is the fastest in {n_direct} of the {len(judged)} settings judged{loaded_note}; in the "
                 + ("other one: " if len(judged) - n_direct == 1 else f"other {len(judged) - n_direct}: ") + "; ".join(others) + ".")
    return dict(
        C7_dec_rows=len(dec), C7_dec_judged=len(judged), C7_dec_loaded=n_load, C7_dec_direct=n_direct,
        C7_dec_findings=(f"in the decision table a direct method is the fastest in {n_direct} of the {len(judged)} settings "
                         "judged" + loaded_note if judged else
                         f"the decision table's {len(dec)} settings were all timed on a loaded machine, so none is judged"),
        C7_dec_noise=sum(1 for r in judged if r["margin"] is not None and not r["margin"]["decided"]),
        C7_dec_detail=(f"In {sum(1 for r in judged if r['margin'] is not None and not r['margin']['decided'])} of the "
                       f"{len(judged)} rows judged the winner's margin over the runner-up is within the noise of the repeats, "
                       "so there the table names two methods that are equally good on this machine. EAGLE (with either "
                       f"conditioning step) is the fastest in {sum(1 for k in win_kind if k == 'EAGLE')} of them; the cubic "
                       f"EAGLE is {eagle_place(judged)}." if judged else
                       "The table still shows each setting's fastest method by median time, and EAGLE's place."),
        C7_dec_eagle_wins=sum(1 for k in win_kind if k == "EAGLE"),
        C7_dec_eagle_place=eagle_place(judged) if judged else "not judged (every setting was timed on a loaded machine)",
        C7_dec_pe_best=float(min((r["fastest_over_eagle"]["median"] for r in judged if r["fastest_over_eagle"]), default=NAN)),
        C7_sparse_story=f"On the sparse real matrix ({rea['matrix']}, part (c)) EAGLE's dense products rank it "
        f"{sparse['eagle_rank']} of {sparse['methods']}; the fastest: {describe(sparse)}" if sparse["eagle_rank"] else
        f"On the sparse real matrix ({rea['matrix']}, part (c)) EAGLE did not reach the tolerance; the fastest: "
        f"{describe(sparse)}",
        C7_batch_story="; ".join(
            f"for a batch of {r['size'].split(' × ')[0]} problems of {r['size'].split(' × ')[1]} (κ = {r['kappa']:.0e}), "
            f"each method solving it in one call, the fastest is {describe(r)}, EAGLE's batched solve is "
            f"{fmt_i(r['eagle_rank'])} of {r['methods']}"
            + ("" if r["fastest_over_eagle"] is None else f" and the fastest needs {r['fastest_over_eagle']['median']:.2g} of its time")
            for r in bat) + "." if bat else "no batch was timed.",
        C7_dec_story=story) | when_to_use(dec)


def when_to_use(dec: list) -> dict:
    """The "When to use EAGLE" box from the decision rows (glued phrases): where EAGLE (either conditioning step)
    is the fastest and by how much, where it loses and by how much, and which settings are not judged."""
    judged = [r for r in dec if not row_loaded(r)]
    n_load = len(dec) - len(judged)
    unknown = sum(1 for r in dec if load_of(r.get("machine"))[0] is None)
    load = (f"{n_load} of the {len(dec)} settings {'was' if n_load == 1 else 'were'} timed while the load average reached "
            f"the core count; {'it is' if n_load == 1 else 'they are'} not judged and left out above." if n_load else
            f"{unknown} of the {len(dec)} settings have no record of the machine's load." if unknown else
            f"All {len(dec)} settings were timed with the load average below the core count.")
    if not judged:
        loads = [load_of(r.get("machine"))[0] for r in dec]
        loads = [x for x in loads if x is not None]
        return dict(C7_when_wins=f"All {len(dec)} settings of the decision table were timed on a loaded machine (load "
                                 f"{min(loads):.2f} to {max(loads):.2f}), so this build does not say when EAGLE is the fastest "
                                 "solver on this CPU.",
                    C7_when_loses="The table shows the times as measured, without verdicts.",
                    C7_when_load="A build on a machine whose load stays below its core count fills this box.")
    wins = [r for r in judged if _win_kind(r) == "EAGLE"]
    w = (f"On this CPU EAGLE, with either conditioning step, is the fastest in none of the {len(judged)} settings judged."
         if not wins else
         f"On this CPU EAGLE is the fastest in {len(wins)} of the {len(judged)} settings judged: "
         + "; ".join(f"{_setting(r)}, {grid_mod.describe(r)}" for r in wins) + ".")
    lost = [r["fastest_over_eagle"]["median"] for r in judged if _win_kind(r) != "EAGLE" and r["fastest_over_eagle"]]
    counts = {}
    for r in judged:
        counts[r["fastest"]] = counts.get(r["fastest"], 0) + 1
    top = max(counts, key=counts.get)
    lo_ = (f"Where it loses, the fastest method needs {min(lost):.2g} to {max(lost):.2g} of the cubic EAGLE's time "
           f"(median {float(np.median(lost)):.2g}); " if lost else "")
    return dict(C7_when_wins=w,
                C7_when_loses=lo_ + f"the fastest is most often {top} ({counts[top]} of {len(judged)}), and the cubic EAGLE is "
                + eagle_place(judged) + ".", C7_when_load=load)


def precision_table(gr: dict) -> str:
    pr, th = gr["precision"], gr["threads"]
    cores = th["cores"]
    rows = ["| method | float32 ÷ float64 (paired) | verdict | " + (f"{cores} threads ÷ 1 thread (paired) | verdict |" if cores > 1 else ""),
            "|---|---|---|" + ("---|---|" if cores > 1 else "")]
    for m in pr["f32_over_f64"]:
        q32, qt = pr["f32_over_f64"][m], th["all_over_one"].get(m)
        rows.append(f"| {m} | {_paired(q32)} | {'—' if q32 is None else q32['verdict']} | "
                    + (f"{_paired(qt)} | {'—' if qt is None else qt['verdict']} |" if cores > 1 else ""))
    return (f"n = d = {pr['float64']['n']}; precision at κ = 10², both to {grid_mod.PRECISION_TARGET:.0e} (SVD runs in "
            f"float64 only); threads at κ = 10⁴ to {gr['target']:.0e}:\n\n" + "\n".join(rows))


def precision_stories(gr: dict) -> dict:
    """Which methods float32 and more threads make faster (glued values)."""
    pr, th = gr["precision"], gr["threads"]
    cores = th["cores"]
    f32 = {m: q for m, q in pr["f32_over_f64"].items() if q is not None}
    f32_win = sorted(m for m, q in f32.items() if q["verdict"].endswith("[float32] faster"))
    thr_win = sorted(m for m, q in th["all_over_one"].items() if q is not None and q["verdict"].endswith(f"[{cores} thr] faster"))
    thr_lose = sorted(m for m, q in th["all_over_one"].items() if q is not None and q["verdict"].endswith("[1 thr] faster"))
    return dict(
        C7_prec_story=(f"float32 is faster beyond the noise for {', '.join(f32_win)}" if f32_win else
                       "float32 is faster beyond the noise for none of the methods") + f" (of {len(f32)} timed in both precisions)",
        C7_thr_story=(f"{cores} threads are faster for {', '.join(thr_win) or 'none of the methods'} and slower for "
                      f"{', '.join(thr_lose) or 'none'}") if cores > 1 else "this machine has one core, so no thread comparison was made",
        C7_thr_why="Where more threads are slower, the likely cause is the machine, not the method: a second thread competes "
        "with other processes for a core, and BLAS and torch threads that wait for a busy core spin; " if thr_lose else "")


# ---------------------------------------------------------------------------------------------- accuracy floors
NOTE = {"converged": "", "direct": "", "target": "", "max_iter": " (iteration cap)", "time_limit": " (time limit)",
        "breakdown": " (breakdown)", "rank_deficient": " (reported rank-deficient)"}
REF, FACTOR = "gelsy", 10.0      # the floors' reference (QR with column pivoting) and "close to it"


def _floor_cell(v) -> str:
    if v is None:
        return "—"
    if v["final"] is None:
        return "non-finite" + ("" if v["floor"] is None else f" (best {v['floor']:.1e})")
    return f"{v['final']:.1e}" + NOTE.get(v["status"], f" ({v['status']})")


def floors_table(fl: dict) -> str:
    """The relative error of D where each run of the floor job stopped, per method, precision and κ."""
    U, KF = fl["unit_roundoff"], [r["kappa"] for r in fl["rows"]]
    rows = ["| method | precision | " + " | ".join(f"κ = {k:.0e}" for k in KF) + " |", "|---|---|" + "---|" * len(KF)]
    for m in fl["methods"]:
        for dt in U:
            if any(m in r["runs"][dt] for r in fl["rows"]):
                rows.append(f"| {m} | {dt} | " + " | ".join(_floor_cell(r["runs"][dt].get(m)) for r in fl["rows"]) + " |")
    for dt in U:
        rows.append(f"| κ·u | {dt} | " + " | ".join(f"{r['reference'][dt]['kappa_u']:.1e}" for r in fl["rows"]) + " |")
    return f"Relative error of D where each run stopped (n = d = {fl['n']}, one thread):\n\n" + "\n".join(rows)


def _fin(r: dict, dt: str, m: str):
    v = r["runs"][dt].get(m)
    return None if v is None else v["final"]


def near_ref(fl: dict, dt: str) -> tuple[list, list]:
    """The methods within FACTOR× of REF's error at every κ in precision ``dt``, and the others, each with the
    first κ where it is not and why."""
    close, far = [], []
    for m in fl["methods"]:
        here = [r for r in fl["rows"] if m in r["runs"][dt]]
        if m == REF or not here:
            continue
        bad = [r for r in here if _fin(r, dt, m) is None or _fin(r, dt, REF) is None or _fin(r, dt, m) > FACTOR * _fin(r, dt, REF)]
        if not bad:
            close.append(m)
        else:
            v = bad[0]["runs"][dt][m]
            why = "non-finite" if v["final"] is None else NOTE[v["status"]].strip(" ()") if v["status"] in ("breakdown", "max_iter", "time_limit") \
                else f"{v['final'] / _fin(bad[0], dt, REF):.2g}× {REF}'s error"
            far.append(f"{m} (first at κ = {bad[0]['kappa']:.0e}: {why})")
    return close, far


def floor_stories(fl: dict) -> dict:
    """What the floor job found, in words (glued values)."""
    U, KF = fl["unit_roundoff"], [r["kappa"] for r in fl["rows"]]
    out = {}
    for dt in U:
        close, far = near_ref(fl, dt)
        ref_max = max(_fin(r, dt, REF) for r in fl["rows"]) / U[dt]
        out[f"C7_af_story_{dt}"] = (f"In {dt}, {REF} stays within {ref_max:.2g}·u at every κ; within {FACTOR:g}× of its "
                                    f"error at every κ: {', '.join(close) or 'no other method'}; not: {', '.join(far) or 'none'}.")
    r_hi = fl["rows"][-1]
    ku_share = _fin(r_hi, "float64", REF) / r_hi["reference"]["float64"]["kappa_u"]
    out["C7_af_why"] = (f"At κ = {r_hi['kappa']:.0e} {REF}'s float64 error is {ku_share:.1g} of κ·u. The worst case does not "
                        "happen on these problems: B = W A and C = A G, so D = W A G, and a direction of A with a small singular "
                        "value σ enters D weighted by σ through B and again through C. " if ku_share < 1e-2 else
                        f"At κ = {r_hi['kappa']:.0e} {REF}'s float64 error is {ku_share:.2g} of κ·u. ")
    e64 = [_fin(r, "float64", "EAGLE") for r in fl["rows"]]
    e32 = [_fin(r, "float32", "EAGLE") for r in fl["rows"]]
    out["C7_af_eagle"] = ("EAGLE's error where it stops is " + (f"at most {max(e64):.1e} in float64 and at most "
                          f"{max(v for v in e32 if v is not None):.1e} in float32" if None not in e64 and any(v is not None for v in e32) else
                          "non-finite in some runs (table)") + f" over κ = {KF[0]:.0e} … {KF[-1]:.0e}")
    rd = [f"{r['kappa']:.0e}" for r in fl["rows"] if r["runs"]["float32"].get("EAGLE", {}).get("status") == "rank_deficient"]
    rcond32 = fl["n"] * float(np.finfo(np.float32).eps)     # the solver's default cut-off, max(d, n)·eps (d = n here)
    out["C7_af_rankdef"] = (f"In float32 EAGLE ends with the status rank-deficient at κ = {', '.join(rd)}: its default cut-off "
                            f"is max(d, n)·eps = {rcond32:.1e} of ‖A‖₂, so at 1/κ = {1 / float(rd[0]):.0e} A has directions "
                            "below it that change D, and the status says so instead of returning a D that silently differs from "
                            "lstsq's with the same cut-off. ") if rd else ""
    return out


def overhead_table(ov: dict) -> str:
    """The harness's own overhead: traced against bare runs of the same iterations."""
    rows = ["| method | iterations | traced | bare | inflation | bookkeeping (paused clock) |", "|---|---|---|---|---|---|"]
    for k, v in ov.items():
        if k != "total":
            rows.append(f"| {k} | {v['iterations']} | {fmt_t(v['traced'])} | {fmt_t(v['bare'])} | {100 * v['inflation']:+.1f}% | "
                        f"{100 * v['bookkeeping_share']:.1f}% |")
    return "\n".join(rows)


def power_table(best: dict) -> str:
    """The large-η step sizes with the default norm estimate and with more power iterations: ``best`` maps
    (η, γ, power iterations or None for the default) to the best error of each instance."""
    rows = ["| η | γ | power iterations | median best error (200 iterations) | worst |", "|---|---|---|---|---|"]
    for (eta, gamma, pi), b in best.items():
        rows.append(f"| {eta:.3f} | {gamma:.3f} | {'default' if pi is None else pi} | {np.median(b):.1e} | {max(b):.1e} |")
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------------- ledger and glue
def _machines(res: dict) -> dict:
    """Each part's machine before and after (the fallback load of a block that has no record of its own)."""
    return {p: part_machine(r) for p, r in res.items()}


def recorded(res: dict) -> dict:
    """The values of chapter 7's declared comparisons (:mod:`eaglebook.comparisons.c07_benchmarks`); a timing
    statistic as (value, the paired :class:`eaglebook.timing.Ratio` behind it, carrying the load of its block); a
    statistic over condition numbers, seeds, distributions or problems as :class:`eaglebook.stability.Resampled`."""
    cen, ske, rea, abl, _ = _parts(res)
    m = _machines(res)
    its = headline_iterations(cen["headline"])
    svd = svd_ratios(cen["sweep"], m["centralized"])
    kap = [f"κ = {pow10(k)}" for k in svd.kappas]
    slopes = sketch_slopes(ske["r_sweep"])
    r_pi = periter_ratio(ske["per_iteration"], m["sketched"])
    r_sgd = sgd_ratio(ske["vs_sgd"], m["sketched"])
    sgd = sgd_resampled(ske["vs_sgd"])
    worst = svd.pairs[svd.worst]
    out = dict(
        C7_cg_iteration_ratio=its["CG"] / its["EAGLE"], C7_eagle_iterations_1e4=its["EAGLE"],
        C7_svd_log_factor=(Resampled(np.array(svd.per_log), np.max, unit="condition numbers", names=kap), worst),
        C7_svd_time_ratio=(Resampled(np.array(svd.raw), np.max, unit="condition numbers", names=kap), worst),
        C7_sketch_iteration_slope=slopes["all"], C7_sketch_iteration_slope_sketched=slopes["sketched"],
        C7_sketch_periter_ratio=(r_pi.median, r_pi), C7_sgd_speedup=(sgd, r_sgd), C7_sgd_speedup_2sided=(sgd, r_sgd),
        C7_randsketch_ratio=randsketch_best(ske["vs_randsketch"]))
    if rea.get("available"):
        r_t2 = _table2_ratio(rea, m["real"])
        out.update(C7_table2_rank=rea["eagle_rank"] if rea["eagle_rank"] is not None else NAN,
                   C7_table2_vs_svd=(r_t2.median, r_t2))
    out.update(C7_distributions=distributions_resampled(abl), C7_noise_vs_gd=noise_ratio(abl),
               C7_step_sizes=step_resampled(abl["step_sizes"]), C7_step_sizes_power=step_resampled(abl["step_sizes"]))
    return out


def smallest(xs) -> float:
    """The smallest of ``xs``, NaN if any is NaN (Python's ``min`` skips a NaN after the first element: a missed
    target must not pass a check)."""
    xs = [float(x) for x in xs]
    return NAN if not xs or any(not math.isfinite(x) for x in xs) else min(xs)


#: The step-size statistic "saturates" when the worst grid point's median best error is at most this (rounding).
SATURATED = 1e-12


def checks(res: dict) -> list[Check]:
    """The accelerated variant's goal: at most half of EAGLE's iterations at κ = 1e8, to 1e-6 and to 1e-12 (a
    missed target fails it); and the reason the step-size headline is not judged: every grid point's median best
    error within 200 iterations is at rounding level (:data:`SATURATED`)."""
    kr = res["grid"]["results"]["kappa"]["rows"]
    _, fewer = accelerated(kr)
    i8 = [r["kappa"] for r in kr].index(1e8)
    out = [Check("C7_acc_fewer_1e8", smallest(fewer[i8]), lower=2.0,
                 what="EAGLE's iterations ÷ the accelerated variant's, to 1e-6 and to 1e-12 (the smaller; NaN where "
                      "either missed), κ = 1e8")]
    if "ablations" in res:
        out.append(Check("C7_steps_saturated", step_worst(res["ablations"]["results"]["step_sizes"]), upper=SATURATED,
                         what="the largest median best error within 200 iterations over both step-size grids: at rounding "
                              "level, so the step-size statistic cannot show an effect (why its row is not judged)"))
    return out


def vs_phrase(q: dict, names: dict) -> str:
    """EAGLE against several methods (``names``: key in ``q`` -> name in the prose) from the paired untraced
    ratios ``q``; one "not compared" clause when the block was timed on a loaded machine."""
    rs = [q.get(k) for k in names]
    if any(r is not None and r.loaded for r in rs):
        r = next(r for r in rs if r is not None and r.loaded)
        return f"not compared (loaded machine: load {r.load:.2f} on {r.cores} cores)"
    return report.and_list(paired_phrase(q.get(k), v) for k, v in names.items())


def _glued_centralized(cen: dict, gr: dict | None, mach: dict | None) -> dict:
    hl = cen["headline"]
    hr = hl["runs"]
    its = headline_iterations(hl)
    q = headline_ratios(hl, mach)
    sec = (hl.get("bare") or {}).get("seconds", {})
    t_e = float(np.median(sec["EAGLE"])) if "EAGLE" in sec else median_time(hr["EAGLE"])
    t_ls = float(np.median(sec["lstsq (numpy)"])) if "lstsq (numpy)" in sec else median_time(hr["lstsq (numpy)"])
    r_ls = q.get("lstsq (numpy)")
    e_l = 1 / r_ls.median if r_ls else t_e / t_ls
    big = cen["sizes"][-1]
    lstsq_eq = big["lstsq_time"] * big["gemm_rate"] / big["n"] ** 3
    svd = svd_ratios(cen["sweep"], mach)
    worst = svd.pairs[svd.worst]
    ov = {k: v for k, v in hl["overhead"].items() if k != "total"}
    top = max(ov, key=lambda k: ov[k]["inflation"])
    hl_mach = (hl.get("bare") or {}).get("machine") or mach
    times = (f"EAGLE takes {e_l:.2g} times as long" + ("" if r_ls is None else f" ({1 / r_ls.hi:.2g}–{1 / r_ls.lo:.2g} over {r_ls.repeats} repeats)")
             if e_l >= 1 else f"EAGLE takes {e_l:.2g} of its time")
    return dict(
        C7_central_n=cen["n"], C7_headline_n=hl["n"],
        C7_speedup_CG=q["CG"].median if "CG" in q else NAN, C7_iters_CG=its["CG"],
        C7_speedup_LSMR=q["LSMR"].median if "LSMR" in q else NAN, C7_iters_LSMR=its["LSMR"],
        C7_iters_EAGLE=its["EAGLE"], C7_time_EAGLE=t_e, C7_time_lstsq=t_ls, C7_eagle_over_lstsq=e_l,
        C7_lstsq_over_eagle=1 / e_l,
        C7_rscg_over_eagle=q["RandSketch+CG"].median if "RandSketch+CG" in q else NAN, C7_cg_over_n=its["CG"] / hl["n"],
        C7_vs_cg_lsmr=vs_phrase(q, {"CG": "CGLS", "LSMR": "LSMR"}),
        C7_eagle_vs_lstsq=times + (f", timed on a loaded machine ({load_phrase(hl_mach)}) and so not judged" if loaded(hl_mach) else ""),
        C7_hl_load=("on a loaded machine, " if loaded(hl_mach) else "") + load_phrase(hl_mach),
        C7_big_n=big["n"], C7_big_ratio=big["eagle"]["elapsed"] / big["lstsq_time"], C7_big_L=big["eagle"]["iterations"],
        C7_big_rate=big["gemm_rate"] / 1e9, C7_big_floor=big["per_iteration_over_floor"], C7_big_lstsq_eq=lstsq_eq,
        C7_big_eagle_eq=4 * big["eagle"]["iterations"], C7_big_pred=4 * big["eagle"]["iterations"] / lstsq_eq,
        C7_floor_story=floor_story(*floor_inputs(cen, gr, mach)),
        C7_svd_spread=f"{worst.text('.2g')}, {ratio_load(worst)}" if worst else "EAGLE missed 10⁻⁶ in a repeat",
        C7_svd_worst_kappa=pow10(svd.kappas[svd.worst]), C7_log_factor_top=max(svd.log_factors),
        C7_log_factor_top_kappa=pow10(max(svd.kappas)),
        C7_overhead=100 * hl["overhead"]["total"]["inflation"], C7_overhead_top=top,
        C7_overhead_top_pct=100 * ov[top]["inflation"]) | sweep_story(cen["sweep"])


def _glued_sketched(ske: dict, mach: dict | None) -> dict:
    pi, vs, vr = ske["per_iteration"], ske["vs_sgd"], ske["vs_randsketch"]
    r_sgd = sgd_ratio(vs, mach)
    r_pi = periter_ratio(pi, mach)
    best = randsketch_best(vr)
    ss = pi["s"]
    return dict(
        C7_slope_1e2=sketch_slopes(ske["r_sweep"])["to_1e2"], C7_slope_words=slope_words(sketch_slopes(ske["r_sweep"])["all"]),
        C7_periter_spread=f"{r_pi.text('.2g')}, {load_phrase(pi.get('machine') or mach)}",
        C7_sgd_spread=f"{r_sgd.text('.2g')}, {load_phrase(vs.get('machine') or mach)}" if r_sgd else "no pair of runs reached 1e-2",
        C7_sketch_n=ske["n"], C7_sketch_kappa=ske["kappa"], C7_periter_list=periter_list(pi),
        C7_periter_s_hi=ss[0], C7_periter_s_lo=ss[-1], C7_periter_flops=pi["flops"][str(ss[0])] / pi["flops"][str(ss[-1])],
        C7_periter_goal=periter_goal(r_pi.median), C7_sgd_r=vs["r"],
        C7_rscg_winner="EAGLE" if best < 1 else "RandSketch+CG", C7_rscg_iters=vr["runs"]["RandSketch+CG"]["to"]["1e-06"]["iterations"],
        C7_rscg_eagle_iters=vr["runs"]["EAGLE"]["to"]["1e-06"]["iterations"])


def _glued_real(rea: dict, mach: dict | None) -> dict:
    if not rea.get("available"):
        return {}
    r_t2 = _table2_ratio(rea, mach)
    return dict(C7_table2_vs_svd_spread=f"{r_t2.lo:.2g}–{r_t2.hi:.2g}, {r_t2.repeats} interleaved pairs, "
                                        f"{load_phrase(rea['vs_svd'].get('machine') or mach)}",
                C7_real_rank=rea["rank"], C7_real_kappa=rea["kappa"], C7_real_eagle_its=rea["runs"]["EAGLE"]["iterations"])


def _glued_ablations(abl: dict) -> dict:
    out = dict(C7_abl_n=abl["n"], C7_dist_story=dist_story(abl), C7_noise_story=noise_story(abl["noise"]),
               C7_steps_speed=steps_speed(abl["step_sizes"]))
    for key, r_ in (("full", abl["noise"][0]["runs"]), ("low", abl["noise"][1]["runs"])):
        out.update({f"C7_noise_{key}_eagle_best": r_["EAGLE"]["best"], f"C7_noise_{key}_eagle_it": r_["EAGLE"]["best_iteration"],
                    f"C7_noise_{key}_gd_best": r_["GD"]["best"], f"C7_noise_{key}_gd_it": r_["GD"]["best_iteration"],
                    f"C7_noise_{key}_lstsq": r_["lstsq (numpy)"]["final"]})
    its_all = _step_iterations(abl["step_sizes"])
    return out | dict(C7_steps_it_min=float(np.nanmin(its_all)), C7_steps_it_max=float(np.nanmax(its_all)))


def _glued_grid(gr: dict, S) -> dict:
    sq = gr["square"]["rows"]
    top_s = sum(r["wall_seconds"] for r in sq[-2:])
    untimed = [f"{m} at n = {r['n']} (its traced run ended with status \"{r['runs'][m]['status']}\")"
               for r in sq for m in gr["square"]["methods"] if r["runs"].get(m, {}).get("median") is None]
    out = dict(
        C7_grid_target=gr["target"], C7_grid_repeats=gr["repeats"], C7_margin_pct=100 * timing.MARGIN,
        C7_grid_ns=report.and_list([str(r["n"]) for r in sq]), C7_grid_limit=S.grid_time_limit,
        C7_grid_top_time=f"{top_s / 60:.1f} min" if top_s >= 60 else f"{top_s:.1f} s",
        C7_grid_untimed="every method was timed at every square size" if not untimed else
        "on the square series, " + report.and_list(untimed) + " did not reach the target and was not timed")
    for m, e in _exponents(gr).items():
        for s_, v in zip(("square", "top", "tall", "wide"), e):
            out[f"C7_exp_{s_}_{SLUG[m]}"] = NAN if v is None else v
    out.update(C7_exp_top_sizes=f"{sq[-2]['n']} and {sq[-1]['n']}", C7_exp_story=exp_story(gr))
    fm = [f_ for f_ in gr["square"]["flop_model"] if f_["eagle"]]
    first, last = fm[0]["eagle"]["measured_over_model"], fm[-1]["eagle"]["measured_over_model"]
    out.update(C7_model_first_n=fm[0]["n"], C7_model_first=first, C7_model_last_n=fm[-1]["n"], C7_model_last=last,
               C7_model_trend=model_trend([f_["eagle"]["measured_over_model"] for f_ in fm]))
    bf = gr["batch_floor"]
    single = [(k, r) for k, r in bf.items() if r["instances"] is None]
    batches = [r for r in bf.values() if r["instances"] is not None]
    out.update(C7_bf_single_name=single[0][0].capitalize(), C7_bf_single=single[0][1]["ratio"]["median"],
               C7_bf_batch_lo=min(r["ratio"]["median"] for r in batches), C7_bf_batch_hi=max(r["ratio"]["median"] for r in batches),
               C7_bf_cert_hi=100 * max(r["certification_share"]["median"] for r in bf.values()),
               C7_bf_story=batch_floor_story(batches))
    pr, th, kr = gr["precision"], gr["threads"], gr["kappa"]["rows"]
    out.update(C7_grid_machine=timing.machine_line(th["machine"]["before"], th["machine"]["after"]),
               C7_prec_n=pr["float64"]["n"], C7_prec_target=grid_mod.PRECISION_TARGET,
               C7_chol_missed=", ".join(f"{r['kappa']:.0e}" for r in kr if r["runs"]["Cholesky"]["median"] is None) or "none")
    fl = gr["floors"]
    import torch
    from ..solver import engine
    out.update(C7_tol64=engine.DEFAULT_TOL[torch.float64], C7_tol32=engine.DEFAULT_TOL[torch.float32],
               C7_af_n=fl["n"], C7_af_max_iter=fl["max_iter"], C7_u64=fl["unit_roundoff"]["float64"],
               C7_u32=fl["unit_roundoff"]["float32"])
    return out | accelerated_stories(gr) | precision_stories(gr) | floor_stories(fl)


def declared_story(declared: dict) -> str:
    """When the chapter's comparisons were declared, from the ledger's declarations (``Ledger.declared``): "all 17
    before any benchmark ran" or "14 of the 17 before any benchmark ran; after the run (v0.3.0, 2026-12-01):
    C7_svd_time_ratio and …"."""
    late: dict[str, list] = {}
    for k, c in declared.items():
        if c["declared"] != ADVANCE:
            late.setdefault(c["declared"], []).append(k)
    n = len(declared)
    if not late:
        return f"all {n} before any benchmark ran"
    k = sum(len(v) for v in late.values())
    return (f"{n - k} of the {n} before any benchmark ran; " + "; ".join(f"{when}: {report.and_list(keys)}" for when, keys in late.items()))


#: The comparisons recorded as statistics over condition numbers, seeds, distributions or problems (resampled).
RESAMPLED = ("C7_svd_log_factor", "C7_svd_time_ratio", "C7_sgd_speedup", "C7_sgd_speedup_2sided", "C7_distributions",
             "C7_step_sizes", "C7_step_sizes_power")


def stability_phrases(ledger) -> dict:
    """The resampling of each resampled comparison in words (``eaglebook.stability.phrase``; "not resampled" where
    the run gave no units to resample)."""
    from ..stability import phrase
    return {f"{k}_stability": phrase(ledger.comparisons.get(k, {}).get("stability")) or "not resampled" for k in RESAMPLED}


def slope_words(x: float) -> str:
    """A log–log slope of iterations against n/r in words, by the declared criterion's range [0.7, 1.3]."""
    if not math.isfinite(x):
        return "not measured (a run missed the target)"
    return "faster than linear" if x > 1.3 else "slower than linear" if x < 0.7 else "about linear"


def _findings(ledger) -> dict:
    """The verdicts of the paper's claims for the findings box, one phrase per claim."""
    claims = ("cg-100x", "svd-log-factor", "sketch-n-over-r", "sketch-periter", "sgd-2.5x", "table2", "distributions",
              "noise-regularises", "step-sizes")
    return {f"C7_findings_{c.replace('-', '_').replace('.', '_')}": ledger.verdict_phrase(c) for c in claims}


def glued(res: dict, S, ledger) -> dict:
    """Everything chapter 7's prose quotes, by key (``S``: the profile's benchmark sizes; ``ledger``: the
    chapter's, its comparisons recorded)."""
    cen, ske, rea, abl, gr = _parts(res)
    m = _machines(res)
    dec = decision(gr, rea, m["real"])
    return (dict(C7_time_limit=S.time_limit, C7_declared_story=declared_story(ledger.declared))
            | _glued_centralized(cen, gr, m["centralized"]) | _glued_sketched(ske, m["sketched"]) | _glued_real(rea, m["real"])
            | _glued_ablations(abl) | _glued_grid(gr, S) | decision_stories(dec, rea)
            | dict(C7_ci_cols=config.get("ci").bench.real_max_cols) | _findings(ledger) | stability_phrases(ledger))


# ---------------------------------------------------------------------------------------------- figures
#: Styles of the benchmark methods (EAGLE, GD, CG and SVD as in METHOD_STYLE).
BENCH_STYLE = {
    "EAGLE": METHOD_STYLE["EAGLE"], "GD": METHOD_STYLE["GD"], "CG": METHOD_STYLE["CG"], "SVD": METHOD_STYLE["SVD"],
    "LSQR": dict(color="#56B4E9", linestyle=":"), "LSMR": dict(color="#009E73", linestyle="--"),
    "RandSketch+CG": dict(color="#D55E00", linestyle="-."), "SGD": dict(color="#E69F00", linestyle=":"),
    "lstsq (numpy)": dict(color="#000000", linestyle="-"), "lstsq (scipy)": dict(color="#555555", linestyle="-"),
    "lstsq (torch)": dict(color="#999999", linestyle="-"), "GD++": dict(color="#882255", linestyle="--"),
    # the solver-choice grid (each colour/line-style pair once)
    "EAGLE (polar-express)": dict(color="#56B4E9", linestyle="--"), "Newton–Schulz": dict(color="#009E73", linestyle="--"),
    "gelsd": dict(color="#000000", linestyle="-"), "gelsy": dict(color="#555555", linestyle="--"),
    "Cholesky": dict(color="#CC79A7", linestyle=":"), "Sketch+LSQR": dict(color="#D55E00", linestyle=":"),
}


def _bench_style(name: str) -> dict:
    base = name.split(" (r")[0]
    return BENCH_STYLE.get(name, BENCH_STYLE.get(base, dict(color="#444444", linestyle="-")))


def _legend_by_label(fig, where: str = "right"):
    """One legend for all axes of ``fig``; a label drawn in different styles in different panels keeps
    the first panel's style (panels are drawn with one style per label)."""
    for ax in fig.axes:
        distinct_styles(ax)
    return legend_outside(fig, where=where)


def plot_bench_curves(rows, *, x: str = "iteration", floor: float | None = None):
    """Error against iteration (``x="iteration"``) or solver seconds (``x="time"``) for every method of
    every row of the centralized sweep: one panel per (rank, κ), κ in the column titles and the rank in
    the row's y label; direct methods are single markers.  One legend, right of the panels."""
    kappas = sorted({r["kappa"] for r in rows})
    ranks = [False, True]
    fig, axes = subplots(2, len(kappas), height=5.0, sharey=True, squeeze=False)
    for i, rd in enumerate(ranks):
        for j, k in enumerate(kappas):
            ax = axes[i, j]
            row = next(r for r in rows if r["kappa"] == k and r["rank_deficient"] == rd)
            for name, run in row["runs"].items():
                c = run.get("curve")
                if not c:
                    continue
                st = _bench_style(name)
                xs = c["iteration"] if x == "iteration" else c["time"]
                if run["iterations"] == 1:
                    if name in ("lstsq (numpy)", "SVD"):
                        ax.plot(xs, c["value"], marker="o" if name == "SVD" else "s", ms=4, ls="none",
                                color=st["color"], label=name)
                    continue
                ax.loglog(xs, c["value"], lw=1.1, label=name, **st)
            if floor:
                ax.axhline(floor, color="k", lw=0.5, ls=":")
            ax.set_xscale("log")
            ax.set_yscale("log")
            if i == 0:
                ax.set_title(f"κ = {k:.0e}")
            if j == 0:
                ax.set_ylabel(f"{'rank n/2' if rd else 'full rank'}\nrelative error")
    fig.supxlabel("iteration" if x == "iteration" else "solver time (s)")   # once: per panel the labels collide
    _legend_by_label(fig)
    return finish(fig)


def plot_sketched(r_sweep, per_iteration):
    """Left: EAGLE's iterations to 1e-6 against n/r.  Right: per-iteration time at sketch size r = n, n/2, n/4,
    n/8 relative to r = n, ours against the paper's 21 : 16 : 7 : 5 ms.  Each panel's legend sits below it."""
    fig, (a1, a2) = subplots(1, 2, height=3.4)
    nr = [r["n_over_r"] for r in r_sweep]
    it = [r["eagle"]["to"]["1e-06"]["iterations"] for r in r_sweep]
    a1.loglog(nr, it, marker="o", **BENCH_STYLE["EAGLE"], label="EAGLE (to 1e-6)")
    if it[-1 if nr[-1] == 1 else 0]:
        ref = next(v for v, q in zip(it, nr) if q == min(nr))
        a1.loglog(nr, [ref * q / min(nr) for q in nr], color="k", lw=0.6, ls=":", label="∝ n/r")
    a1.set_xticks(nr, [f"{q:g}" for q in nr]); a1.xaxis.set_minor_formatter(NullFormatter())
    a1.xaxis.set_tick_params(which="minor", length=0)
    a1.set_xlabel("n / r"); a1.set_ylabel("iterations")
    ss = per_iteration["s"]
    xs = np.arange(len(ss))
    ours = [per_iteration["ratio_to_full"][str(s)] for s in ss]
    a2.bar(xs - 0.2, ours, width=0.4, color=BENCH_STYLE["EAGLE"]["color"], label="ours")
    if per_iteration.get("paper_ms"):
        pap = [per_iteration["paper_ms"][str(s)] / per_iteration["paper_ms"][str(ss[0])] for s in ss]
        a2.bar(xs + 0.2, pap, width=0.4, color="#999999", label="paper (21:16:7:5 ms)")
    a2.set_xticks(xs, [f"r = {s}" for s in ss]); a2.set_ylabel(f"time per iteration\n/ time at r = {ss[0]}")
    for ax in (a1, a2):
        legend_outside(ax, where="below")
    return finish(fig)


def plot_noise(noise_rows):
    """Error against the clean completion along EAGLE's and GD's iterations on noisy data (std 0.01),
    with the exact least-squares completion of the noisy data as a horizontal line.  One legend, below."""
    fig, axes = subplots(1, len(noise_rows), height=3.2, squeeze=False)
    for ax, row in zip(axes[0], noise_rows):
        for name in ("EAGLE", "GD"):
            c = row["runs"][name]["curve"]
            ax.loglog(c["iteration"], c["value"], label=name, **BENCH_STYLE[name])
        ax.axhline(row["runs"]["lstsq (numpy)"]["final"], color="k", lw=0.8, label="lstsq on noisy data")
        ax.set_title(f"rank {row['rank']}, noise std {row['noise_std']}")
        ax.set_xlabel("iteration")
    axes[0, 0].set_ylabel("error vs clean completion")
    _legend_by_label(fig, where="below")
    return finish(fig)


def plot_step_grid(grid):
    """Best error within the iteration budget (left) and iterations to 1e-10 (right) for η, γ scaled
    together and for γ/η changed, against the factor.  One legend, below."""
    fig, (a1, a2) = subplots(1, 2, height=3.2)
    for key, st in (("together", BENCH_STYLE["EAGLE"]), ("ratio", BENCH_STYLE["LSMR"])):
        f = [e["factor"] for e in grid[key]]
        lab = "η, γ × factor" if key == "together" else "γ/η = factor"
        a1.semilogy(f, [e["best_median"] for e in grid[key]], marker="o", label=lab, **st)
        its = [np.median([v for v in e["iterations_to_1e10"] if v is not None] or [np.nan]) for e in grid[key]]
        a2.plot(f, its, marker="o", label=lab, **st)
    a1.set_xlabel("factor"); a1.set_ylabel(f"median best error ({grid['max_iter']} it.)")
    a2.set_xlabel("factor"); a2.set_ylabel("median iterations to 1e-10")
    _legend_by_label(fig, where="below")
    return finish(fig)


def plot_grid_times(series: dict, *, shapes=("square", "tall", "wide")):
    """Median time to the target against the problem size (log–log), one panel per shape of the solver grid
    (``eaglebook.bench.grid``); the bars are the min–max over the interleaved repeats; the slope of each line
    is the method's cost exponent."""
    fig, axes = plt.subplots(1, len(shapes), sharey=True, squeeze=False)
    for ax, shape in zip(axes[0], shapes):
        g = series[shape]
        for name in g["methods"]:
            pts = [(r["k"], r["runs"][name]["median"], r["runs"][name]["spread"]) for r in g["rows"]
                   if r["runs"].get(name, {}).get("median") is not None]
            if not pts:
                continue
            k, t, sp = zip(*pts)
            lo = [a - b[0] for a, b in zip(t, sp)]
            hi = [b[1] - a for a, b in zip(t, sp)]
            ax.errorbar(k, t, yerr=[lo, hi], lw=1.1, ms=3, marker="o", capsize=2, label=name, **_bench_style(name))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ks = [r["k"] for r in g["rows"]]          # ticks at the sizes measured, labelled plainly (no overlapping minor labels)
        ax.xaxis.set_major_locator(FixedLocator(ks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())
        r0 = g["rows"][0]
        ax.set_title({"square": "square (d = n)", "tall": f"tall (d = {r0['d'] // r0['n']}n)",
                      "wide": f"wide (n = {r0['n'] // r0['d']}d)"}[shape])
        ax.set_xlabel("n" if shape == "square" else "short side k")
    axes[0, 0].set_ylabel("time to target (s)")
    legend_outside(fig)
    return finish(fig)


def plot_floors(fl: dict):
    """The floor job of the solver grid (``eaglebook.bench.grid.floors``): the relative error of D where each
    method stopped against κ (log–log), one panel per precision, beside the references κ·u and κ²·u (u the
    unit roundoff).  A run that ended non-finite is drawn at its smallest finite error with an open marker."""
    dts = list(fl["unit_roundoff"])
    fig, axes = plt.subplots(1, len(dts), sharey=True, squeeze=False)
    kap = [r["kappa"] for r in fl["rows"]]
    for ax, dt in zip(axes[0], dts):
        for name in fl["methods"]:
            pts = [(r["kappa"], r["runs"][dt][name]) for r in fl["rows"] if name in r["runs"][dt]]
            if not pts:
                continue
            st = _bench_style(name)
            ks = [k for k, v in pts if v["final"] is not None]
            ax.plot(ks, [v["final"] for k, v in pts if v["final"] is not None], lw=1.1, ms=4, marker="o", label=name, **st)
            bad = [(k, v["floor"]) for k, v in pts if v["final"] is None and v["floor"] is not None]
            if bad:
                ax.plot(*zip(*bad), ls="none", marker="o", ms=6, mfc="none", mec=st["color"])
        u = fl["unit_roundoff"][dt]
        ax.plot(kap, [k * u for k in kap], color="#999999", lw=1.0, ls=(0, (6, 3)), label="κ·u (reference)")
        ax.plot(kap, [k * k * u for k in kap], color="#999999", lw=1.0, ls="-.", label="κ²·u (reference)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(top=10.0)
        ax.set_title(f"{dt} (u = {u:.1e})")
        ax.set_xlabel("κ(A)")
    axes[0, 0].set_ylabel("relative error of D where the run stopped")
    legend_outside(fig)
    return finish(fig)

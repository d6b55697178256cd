"""Chapter 9 (book/09_ablations.md): what did not reproduce, and why.  The tables of the sketched ablations,
of the readings of Fig. 4's relative difference, of the heavy tail, of the noise ablation and of pruning
over seeds; the phrases its conclusions take from the data; its glue, records and checks; its figures.

The science (the ablations as knob sets, the statistics of a trained model, the heavy-tail measurement)
lives in :mod:`eaglebook.ablations`; the declared comparisons in :mod:`eaglebook.comparisons.c09_ablations`.
"""

from __future__ import annotations

from math import comb
from typing import Mapping, NamedTuple, Sequence

import numpy as np
from matplotlib.ticker import NullFormatter

from .. import stability
from ..ablations import DIVERGED, REL_DIFF_DEFINITIONS, SKETCHED, ablation
from ..comparisons.c09_ablations import PAPER_REL_DIFF
from ..ledger import Check
from ..stability import Resampled
from ..plotting import MARKERS, METHOD_STYLE, finish, legend_outside, needs_log, subplots

__all__ = ["STATS", "LABELS", "PANELS", "fmt_range", "pct", "ablation_table", "chance_outside", "chance_story",
           "sketched_table", "overlap_story", "definitions_table", "Candidate", "candidates", "closest",
           "outcome", "default_statement", "tail_table", "tail_glued", "precision_recall_text", "kappa_split",
           "kappa_table", "kappa_story", "divergence_table", "decided", "decides_story", "overshoot_story", "remedy_story",
           "noise_ratios", "noise_table", "prune_table", "prune_spread", "base_reduction_headline", "used", "recorded", "checks", "glued",
           "plot_ablations", "plot_definitions", "plot_failure_boundary"]

#: The per-seed statistics of a sketched ablation the chapter tabulates (:class:`eaglebook.ablations.SketchStats`).
STATS = {"rel_diff": "relative difference", "overlap": "subspace overlap", "gamma": "γ",
         "reduction": "MSE reduction (zero ÷ training loss)", "worse": "worse than zero"}
LABELS = {a.key: a.label for a in SKETCHED}
#: The panels of the ablations figure: statistic -> (the paper's value or band, axis label, log axis?).
PANELS = {"rel_diff": (PAPER_REL_DIFF, "relative difference", False), "overlap": (None, "subspace overlap tr(P_Q P_V)/r", False),
          "gamma": (1.9, "γ (batch-max norm)", False),
          "reduction": ((10.0, 50.0), "MSE reduction (zero ÷ training loss)", True)}

#: Where the default's overlap lies between chance (r/n ↦ 0) and the same sketch (1 ↦ 1): bands for the wording
#: (set after seeing the paper-profile numbers; they decide wording only).
OVERLAP_BANDS = ((0.15, "about as much as random subspaces do, or less"),
                 (0.5, "more than random subspaces do but less than halfway to the same sketch"),
                 (0.9, "more than halfway from chance to the same sketch, but short of it"),
                 (np.inf, "nearly as much as the same sketch"))
#: The heavy-tail rules (set after seeing the paper-profile numbers; wording only): the diverging prompts decide
#: the mean when they carry at least DECIDES of the summed error; overshoot accounts for most of the divergence
#: when the peak-step share among them is at least MOST and MOST_RATIO times the others', for part of it at
#: PART_RATIO times; the remedy removes the tail when the mean is at most TAIL_FACTOR times the median; a mean
#: "moves" by more than a factor MOVES; conditioning separates the failing prompts when the medians of κ differ
#: by a factor KAPPA_SEPARATES.
DECIDES, MOST, MOST_RATIO, PART_RATIO = 0.5, 0.5, 5.0, 2.0
TAIL_FACTOR, MOVES = 10.0, 1.1
KAPPA_SEPARATES = 1.25


def fmt_range(v: Sequence[float]) -> str:
    """The median and (for several seeds) the range: "0.52 (0.48–0.61)"."""
    return f"{np.median(v):.2f} ({np.min(v):.2f}–{np.max(v):.2f})" if len(v) > 1 else f"{v[0]:.2f}"


def pct(x: float, f: str = ".0f") -> str:
    """A share as a percentage; "—" where there is no prompt to take a share of (NaN)."""
    return "—" if not np.isfinite(x) else f"{100 * x:{f}}%"


# ----------------------------------------------------------------------------------------- the sketched ablations
def ablation_table(sets) -> str:
    """The ablations: label, what changes, the knobs, and the paper's statement each contradicts."""
    rows = ["| ablation | what changes | knobs | contradicts the paper's |", "|---|---|---|---|"]
    rows += [f"| {a.label} | {a.what} | {', '.join(f'`{k} = {v!r}`' for k, v in a.knobs.items()) or '—'} | "
             f"{a.departs or '— (the paper leaves it open)'} |" for a in sets]
    return "\n".join(rows)


def chance_outside(m: int, k: int) -> float:
    """The chance that k exchangeable ablation seeds all fall outside the range of m default seeds (all below or
    all above): (k + 1) / C(m + k, k)."""
    return (k + 1) / comb(m + k, k)


def chance_story(m: int, k: int) -> str:
    """What the seed-noise rule can separate with k ablation seeds against m default seeds."""
    p = chance_outside(m, k)
    return (f"with k = {k} against m = {m} that is {100 * p:.2g}%"
            + (", so a change that passes the rule is unlikely to have done nothing" if p <= 0.05 else
               ", too likely for the rule to separate anything in this profile (its seeds only test the code path)"))


def sketched_table(per: dict, chance: dict, moved: dict) -> str:
    """Per ablation: medians (ranges) over seeds of :data:`STATS`, the chance overlap r/n, and whether it moved
    the relative difference beyond the default's seeds."""
    rows = ["Median over seeds (range in brackets):", "",
            "| ablation | seeds | " + " | ".join(STATS.values()) + " | overlap of random subspaces (r/n) | "
            "moved by more than seed noise? |", "|---|---|" + "---|" * len(STATS) + "---|---|"]
    for k, v in per.items():
        cells = [fmt_range(v[c]) if c != "worse" else f"{100 * np.median(v[c]):.1f}%" for c in STATS]
        rows.append(f"| {LABELS[k]} | {len(v['rel_diff'])} | " + " | ".join(cells) + f" | {chance[k]:.2f} | "
                    f"{'—' if k == 'base' else ('yes' if moved[k] else 'no')} |")
    return "\n".join(rows)


def overlap_story(overlap: float, chance: float, r: int, n: int) -> str:
    """Where the default's median overlap lies between random subspaces (``chance`` = r/n) and the same sketch."""
    frac = (overlap - chance) / (1 - chance)
    sup = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
    return (f"two independent random {r}-dimensional subspaces of ℝ{str(n).translate(sup)} give {chance:.2f} on average "
            "(r/n), so the median "
            + (f"lies {100 * frac:.0f}% of the way from chance to the same sketch" if frac >= 0 else "lies below chance")
            + ": the two subspaces overlap " + next(text for bound, text in OVERLAP_BANDS if frac < bound))


def definitions_table(defs: dict) -> str:
    """The default's relative difference under each reading of the paper's definition."""
    return "| reading | relative difference, median (range) over seeds |\n|---|---|\n" + "\n".join(
        f"| {REL_DIFF_DEFINITIONS[k]}{' (chapter 4)' if k == 'ours' else ''} | {fmt_range(v)} |" for k, v in defs.items())


class Candidate(NamedTuple):
    """One (ablation, reading) pair: its name, its median relative difference, its verdict by the declared
    criterion alone, and the paper's statement it contradicts ("" for a reading of the paper)."""
    name: str
    value: float
    verdict: str
    departs: str


def candidates(per: dict, defs: dict, verdict) -> tuple[list[Candidate], list[Candidate]]:
    """Every (ablation, reading) pair, split into readings of the paper (nothing it states contradicted) and
    changes that contradict a stated value; ``verdict(key)``: a recorded row's verdict by its criterion."""
    cands = [Candidate(f"{LABELS[k]}, {REL_DIFF_DEFINITIONS['ours']}", float(np.median(v["rel_diff"])),
                       verdict(f"C9_sk_{k}_rel_diff"), ablation(k).departs) for k, v in per.items()]
    cands += [Candidate(f"as written, {REL_DIFF_DEFINITIONS[k]}", float(np.median(v)), verdict(f"C9_def_{k}_rel_diff"), "")
              for k, v in defs.items() if k != "ours"]
    return [c for c in cands if not c.departs], [c for c in cands if c.departs]


def closest(cands: Sequence[Candidate]) -> Candidate:
    """The candidate nearest the paper's 0.28 on a log scale."""
    return min(cands, key=lambda c: abs(np.log(c.value / PAPER_REL_DIFF)))


def outcome(n_repro: int) -> str:
    return ("reproduced under at least one reading of the paper" if n_repro
            else "not reproduced under any reading of the paper we tried")


def default_statement(n_repro: int) -> str:
    return ("the book keeps the paper's stated recipe as its default and reports Fig. 4 as not reproduced under it"
            if not n_repro else "a reading of the paper reproduces in this run (above), so that reading, not this "
            "change, is the candidate for the book's default")


# ----------------------------------------------------------------------------------------- the heavy tail
def tail_table(tails: dict, summ: dict) -> str:
    """Per regime: the untouched errors and shares, then the same with the remedy (prompts scaled down to the
    training range)."""
    rows = ["| regime | median MSE | mean MSE | worse than zero | step > 2 | of those, worse | of the worse, step > 2 | "
            "outside the training range |", "|---" * 8 + "|"]
    rows_r = ["| regime | median MSE, rescaled | mean MSE, rescaled | worse than zero, rescaled |", "|---" * 4 + "|"]
    for r, s in summ.items():
        rows.append(f"| {r} | {s['median']:.2e} | {s['mean']:.2e} | {pct(s['worse'], '.2f')} | {pct(s['over'], '.2f')} | "
                    f"{pct(s['precision'])} | {pct(s['recall'])} | {pct(np.mean(tails[r].norm_ratio > 1), '.2f')} |")
        rows_r.append(f"| {r} | {s['median_rescaled']:.2e} | {s['mean_rescaled']:.2e} | {pct(s['worse_rescaled'], '.2f')} |")
    return ("\n".join(rows) + "\n\nWith the prompts scaled down to the training range (the remedy discussed below):\n\n"
            + "\n".join(rows_r))


def precision_recall_text(x: float, k: str) -> str:
    """A precision or recall share for the prose; an undefined one says why."""
    return pct(x) if np.isfinite(x) else ("none (no prompt has a step above 2)" if k == "precision"
                                          else "none (no prompt is worse than zero)")


def tail_glued(tails: dict, summ: dict) -> dict:
    """The heavy tail's numbers for the prose, per regime (shares in percent)."""
    out = {}
    for r, s in summ.items():
        for k in ("mean", "mean_rescaled", "worse", "worse_rescaled", "precision", "recall", "over"):
            out[f"C9_{r}_tail_{k}"] = s[k] * (100 if k in ("worse", "worse_rescaled", "precision", "recall", "over") else 1)
        for k in ("precision", "recall"):
            out[f"C9_{r}_tail_{k}_txt"] = precision_recall_text(s[k], k)
        out_ = tails[r].norm_ratio > 1
        out[f"C9_{r}_outside"] = 100 * float(np.mean(out_))
        out[f"C9_{r}_worse_outside"] = pct(float(tails[r].worse[out_].mean()), ".1f") if out_.any() else "— (no prompt is outside)"
        out[f"C9_{r}_worse_inside"] = pct(float(tails[r].worse[~out_].mean()), ".1f")
        for k in ("diverged", "diverged_error_share"):
            out[f"C9_{r}_{k}"] = 100 * s[k]
    return out


def kappa_split(t) -> tuple[float, int, float, int]:
    """The median κ(A) of the prompts worse than zero (NaN if none) and their count; the same for the others."""
    w = t.worse
    kw = float(np.nanmedian(t.kappa[w])) if w.any() else float("nan")
    return kw, int(w.sum()), float(np.nanmedian(t.kappa[~w])), int((~w).sum())


def kappa_table(kappa: dict) -> str:
    rows = ["| regime | prompts worse than zero | their median κ(A) | the other prompts | their median κ(A) | ratio |",
            "|---" * 6 + "|"]
    for reg, (kw, nw, ko, no) in kappa.items():
        rows.append(f"| {reg} | {nw:,} | {kw:.4g} | {no:,} | {ko:.4g} | " + (f"{kw / ko:.3f} |" if np.isfinite(kw) else "— |"))
    return "\n".join(rows)


def kappa_story(kappa: dict, kq: Sequence[float]) -> str:
    """Whether conditioning separates the failing prompts: the largest factor between the two medians over
    regimes against :data:`KAPPA_SEPARATES`; ``kq``: the 5%, 50% and 95% quantiles of κ(A) over the prompts."""
    seps = [abs(np.log(kw / ko)) for kw, _, ko, _ in kappa.values() if np.isfinite(kw)]
    if not seps:
        return "cannot be tested: no prompt is worse than zero in any regime"
    sep = max(seps)
    if sep < np.log(KAPPA_SEPARATES):
        return ("does not separate them: in no regime do the two medians differ by more than "
                f"{100 * (np.exp(sep) - 1):.1f}%, while κ(A) itself ranges over a factor {kq[2] / kq[0]:.2f} between its "
                f"5% and 95% quantiles ({kq[0]:.3g} and {kq[2]:.3g}; median {kq[1]:.3g})")
    return f"separates them in part: in one regime the two medians differ by a factor {np.exp(sep):.3g}"


def divergence_table(tails: dict, summ: dict) -> str:
    rows = ["| regime | diverging prompts | their share of the summed error | mean / median MSE | "
            "peak step > 2: diverging | peak step > 2: the others |", "|---" * 6 + "|"]
    for reg, s in summ.items():
        share = s["diverged_error_share"]
        rows.append(f"| {reg} | {int(tails[reg].diverged.sum()):,} ({pct(s['diverged'], '.2f')}) | "
                    f"{pct(share) if np.isfinite(share) else 'not finite'} | {s['mean'] / s['median']:.3g} | "
                    f"{pct(s['peak_over_diverged'])} | {pct(s['peak_over_rest'])} |")
    return "\n".join(rows)


def decided(n_div: int, s: Mapping[str, float]) -> bool:
    """Whether the diverging prompts decide the mean (:data:`DECIDES` of the summed error, or a sum not finite)."""
    share = s["diverged_error_share"]
    return bool(n_div > 0 and (not np.isfinite(share) or share >= DECIDES))


def decides_story(reg: str, n_div: int, s: Mapping[str, float]) -> str:
    """One regime's sentence: do its diverging prompts decide the mean?"""
    share, ratio = s["diverged_error_share"], s["mean"] / s["median"]
    who = f"the {n_div:,} diverging prompt{'s' if n_div != 1 else ''} ({100 * s['diverged']:.2f}%)"
    carry, have = ("carry", "have") if n_div != 1 else ("carries", "has")
    if n_div == 0:
        return f"{reg.capitalize()}: no prompt diverges, and the mean is {ratio:.3g} times the median"
    if not np.isfinite(share):
        return f"{reg.capitalize()}: {who} {have} a summed error that is not finite, which decides the mean"
    verb = {(True, True): "they decide", (True, False): "it decides",
            (False, True): "they do not decide", (False, False): "it does not decide"}[decided(n_div, s), n_div != 1]
    return (f"{reg.capitalize()}: {who} {carry} {100 * share:.0f}% of the summed error and the mean is {ratio:.3g} times "
            f"the median, so {verb} the mean")


def overshoot_story(reg: str, n_div: int, s: Mapping[str, float]) -> str:
    """One regime's sentence: does a peak step above 2 explain its divergence?"""
    if n_div == 0:
        return f"{reg.capitalize()}: no prompt diverges, so there is nothing for overshoot to explain"
    a, b = s["peak_over_diverged"], s["peak_over_rest"]
    kind = "most" if a >= MOST and a >= MOST_RATIO * b else "part" if a > 0 and a >= PART_RATIO * b else "none"
    return (f"{reg.capitalize()}: a peak step above 2 on {100 * a:.0f}% of the diverging prompts against {100 * b:.0f}% "
            "of the others, so overshoot accounts for " + {"most": "most of the divergence",
            "part": "part of the divergence, not most", "none": "none of the divergence"}[kind])


def remedy_story(reg: str, s: Mapping[str, float]) -> str:
    """One regime's sentence: what the remedy does to the mean, to the tail, and to the share worse than zero."""
    m0, m1, med0, med1 = s["mean"], s["mean_rescaled"], s["median"], s["median_rescaled"]
    if not np.isfinite(m0) and not np.isfinite(m1):
        move = "the mean stays infinite"
    elif not np.isfinite(m0):
        move = f"the mean goes from infinite to {m1:.2e}"
    elif not np.isfinite(m1):
        move = f"the mean goes from {m0:.2e} to infinite"
    elif m1 < m0 / MOVES:
        move = f"the mean falls by a factor {m0 / m1:.2g}, from {m0:.2e} to {m1:.2e}"
    elif m1 > m0 * MOVES:
        move = f"the mean rises by a factor {m1 / m0:.2g}, from {m0:.2e} to {m1:.2e}"
    else:
        move = f"the mean barely moves, from {m0:.2e} to {m1:.2e}"
    if m0 <= TAIL_FACTOR * med0:
        tail_txt = f"the untouched mean was already {m0 / med0:.3g} times the median, so there was no tail to remove"
    elif m1 <= TAIL_FACTOR * med1:
        tail_txt = f"now {m1 / med1:.3g} times the median: the remedy removes the tail"
    else:
        tail_txt = f"still {m1 / med1:.2g} times the median {med1:.2e}: the remedy does not remove the tail"
    dw = 100 * (s["worse_rescaled"] - s["worse"])
    worse_txt = ("the share worse than zero is unchanged" if abs(dw) < 0.005 else     # (below the 2 decimals shown)
                 f"the share worse than zero changes by {dw:+.2f} points")
    return f"{reg.capitalize()}: {move}; {tail_txt}; {worse_txt}"


# ----------------------------------------------------------------------------------------- noise and pruning
def noise_ratios(nstat: dict) -> tuple[list[float], list[float]]:
    """Per seed, noisy over noiseless: the mass off the paper's structure (W_QK and W_VP) and γ."""
    off = [(b["offdiag_qk"] + b["offdiag_vp"]) / (a["offdiag_qk"] + a["offdiag_vp"]) for a, b in nstat.values()]
    gam = [b["gamma"] / a["gamma"] for a, b in nstat.values()]
    return off, gam


def noise_table(pairs: dict, nstat: dict) -> str:
    rows = ["| seed | σ² | off-structure mass W_QK | W_VP | η | γ | fidelity, last layer (median) | "
            "MSE reduction (zero ÷ training loss) |", "|---" * 8 + "|"]
    for s, (a, b) in nstat.items():
        for nv, x in ((pairs[s][0].task.noise_var, a), (pairs[s][1].task.noise_var, b)):
            rows.append(f"| {s} | {nv:g} | {x['offdiag_qk']:.3f} | {x['offdiag_vp']:.3f} | {x['eta']:.2f} | {x['gamma']:.2f} | "
                        f"{x['fidelity']:.1e} | {x['reduction']:.1f} |")
    return "\n".join(rows)


def prune_table(parent_runs: dict, pruned: dict, small: dict) -> str:
    rows = ["| seed | kept head (numbered from 0) | 8 heads, median MSE | 1 head, median MSE | ratio |", "|---|---|---|---|---|"]
    for s, parent in parent_runs.items():
        p, q = parent.final["test_mse_median"], small[s].final["test_mse_median"]
        rows.append(f"| {s} | {', '.join(str(int(h)) for h in pruned[s]['keep'])} | {p:.2e} | {q:.2e} | {q / p:.2f} |")
    return "\n".join(rows)


def base_reduction_headline(base_stats: Sequence) -> float:
    """Chapter 3's headline MSE reduction over the default's seeds: the median zero-predictor MSE over the median
    training loss (a ratio of medians, the value the scorecard judges; the figure shows the per-seed ratios)."""
    return float(np.median([x.zero_mse for x in base_stats]) / np.median([x.train_loss for x in base_stats]))


def prune_spread(ratios: Sequence[float]) -> str:
    return f"per seed {min(ratios):.2f}–{max(ratios):.2f}" if len(ratios) > 1 else "from one seed"


# ----------------------------------------------------------------------------------------- bookkeeping
def used(*, cfgs: dict, tail_cfgs: dict, pairs: dict, parents: dict, pcfgs: dict) -> dict:
    """Every cached result the chapter used, by name (its provenance)."""
    out = {f"train sketched {k} seed {s}": c for (k, s), c in cfgs.items()}
    out |= {f"train {r} seed {c.seed}": c for r, c in tail_cfgs.items()}
    for s, (c0, c1) in pairs.items():
        out |= {f"train unconstrained seed {s}": c0, f"train unconstrained noise 0.01 seed {s}": c1}
    for s, pc in parents.items():
        out |= {f"train unconstrained-8-heads seed {s}": pc, f"prune seed {s}": pcfgs[s]}
    return out


def recorded(*, per: dict, defs: dict, off: Sequence[float], gam: Sequence[float], ratios: Sequence[float],
             noise_seeds: Sequence[int]) -> dict:
    """The values of chapter 9's declared comparisons (:mod:`eaglebook.comparisons.c09_ablations`); the noise
    claim's headlines (``off``, ``gam``: per seed of ``noise_seeds``) resampled over the seeds
    (:class:`eaglebook.stability.Resampled`)."""
    out = {f"C9_sk_{k}_rel_diff": float(np.median(v["rel_diff"])) for k, v in per.items()}
    out |= {f"C9_def_{k}_rel_diff": float(np.median(v)) for k, v in defs.items() if k != "ours"}
    seeds = list(noise_seeds)
    return out | {"C9_noise_offdiag_ratio": Resampled(list(off), np.median, unit="seeds", names=seeds),
                  "C9_noise_gamma_ratio": Resampled(list(gam), np.median, unit="seeds", names=seeds),
                  "C9_prune_ratio_median_seeds": float(np.median(ratios))}


def checks(tails: dict) -> list[Check]:
    """The remedy leaves every prompt inside the training range untouched, bit for bit."""
    out = []
    for r, t in tails.items():
        inside = t.norm_ratio <= 1
        out.append(Check(f"C9_{r}_remedy_untouched", float(np.max(np.abs(t.mse_rescaled[inside] - t.mse[inside]), initial=0.0)),
                         upper=0.0, what=f"{r}: largest change of the MSE on prompts inside the training range under the remedy"))
    return out


def glued(*, profile, seed: int, per: dict, chance: dict, moved: dict, base_cfg, defs: dict, tails: dict, summ: dict,
          kappa: dict, ratios: Sequence[float], ledger, stats: dict) -> dict:
    """Everything chapter 9's prose quotes, by key (``ledger``: the chapter's, its comparisons recorded;
    ``stats``: ablation key → its seeds' :class:`eaglebook.ablations.SketchStats`)."""
    m, k = len(profile.seeds), len(profile.ablation_seeds)
    base = per["base"]
    verdict = lambda key: ledger.comparisons[key]["criterion_verdict"]   # by the criterion alone (these rows are evidence)
    readings, departing = candidates(per, defs, verdict)
    best, dep = closest(readings), closest(departing)
    n_repro = sum(c.verdict == "reproduced" for c in readings)
    n_div = {r: int(t.diverged.sum()) for r, t in tails.items()}
    kq = np.nanquantile(tails["unconstrained"].kappa, [0.05, 0.5, 0.95])     # the same prompts in every regime
    out = dict(
        C9_crit_rel_diff=ledger.declared["C9_sk_base_rel_diff"]["criterion"]["text"],
        C9_ablation_seeds=", ".join(map(str, profile.ablation_seeds)), C9_chance_outside_story=chance_story(m, k),
        C9_n_base_seeds=len(base["rel_diff"]), C9_base_rel_diff=float(np.median(base["rel_diff"])),
        C9_base_rel_lo=min(base["rel_diff"]), C9_base_rel_hi=max(base["rel_diff"]),
        C9_base_overlap=float(np.median(base["overlap"])),
        C9_base_overlap_story=overlap_story(float(np.median(base["overlap"])), chance["base"], base_cfg.model.r, base_cfg.task.n),
        C9_base_gamma=float(np.median(base["gamma"])), C9_base_reduction=float(np.median(base["reduction"])),
        # chapter 3's headline statistic over the same seeds: the ratio of the medians (the scorecard's value)
        C9_base_reduction_headline=base_reduction_headline(stats["base"]),
        C9_n_moved=sum(moved.values()), C9_n_ablations=len(moved),
        C9_moved_list=", ".join(LABELS[k] for k, mv in moved.items() if mv) or "none",
        C9_angle_deg=float(np.degrees(np.arcsin(min(1.0, np.median(defs["scale"]))))),
        C9_closest_name=best.name, C9_closest=best.value, C9_closest_verdict=best.verdict,
        C9_n_repro=n_repro, C9_n_tried=len(readings), C9_sketch_outcome=outcome(n_repro),
        C9_closest_dep_name=dep.name, C9_closest_dep=dep.value, C9_closest_dep_verdict=dep.verdict,
        C9_closest_dep_departs=dep.departs, C9_n_dep=len(departing),
        C9_n_dep_repro=sum(c.verdict == "reproduced" for c in departing), C9_default_statement=default_statement(n_repro),
        C9_diverged_factor=DIVERGED, C9_seed=seed, C9_tail_prompts=profile.tail_prompts,
        C9_kappa_story=kappa_story(kappa, kq),
        C9_rule_decides=100 * DECIDES, C9_rule_most=100 * MOST, C9_rule_most_ratio=MOST_RATIO, C9_rule_part_ratio=PART_RATIO,
        C9_decides_story=". ".join(decides_story(r, n_div[r], s) for r, s in summ.items()),
        C9_overshoot_story=". ".join(overshoot_story(r, n_div[r], s) for r, s in summ.items()),
        C9_n_decided=sum(decided(n_div[r], s) for r, s in summ.items()), C9_n_regimes=len(summ),
        C9_rule_tail=TAIL_FACTOR, C9_rule_moves=100 * (MOVES - 1),
        C9_remedy_story=". ".join(remedy_story(r, s) for r, s in summ.items()),
        C9_prune_seeds=", ".join(map(str, profile.prune_seeds)), C9_prune_lo=min(ratios), C9_prune_hi=max(ratios),
        C9_prune_spread=prune_spread(ratios),
        C9_findings_noise=ledger.verdict_phrase("noise-structure"),
        C9_noise_offdiag_ratio_stability=stability.phrase(ledger.comparisons["C9_noise_offdiag_ratio"].get("stability")),
        C9_noise_gamma_ratio_stability=stability.phrase(ledger.comparisons["C9_noise_gamma_ratio"].get("stability")),
    )
    return out | tail_glued(tails, summ)


# ----------------------------------------------------------------------------------------- figures
def plot_ablations(stats: dict, *, paper: dict, labels: dict | None = None):
    """One panel per statistic; ``stats``: ablation key → {statistic → list of per-seed values};
    ``paper``: statistic → (the paper's value or (low, high) band, axis label, log axis?).  Dots are
    seeds, the bar the median; the paper's value is a dotted line (a band is shaded).  A panel whose
    values spread over more than two decades is logarithmic whatever ``paper`` says (:func:`needs_log`)."""
    keys = list(stats)
    names = list(paper)
    fig, axes = subplots(1, len(names), height=max(2.9, 0.32 * len(keys) + 1.6), sharey=True, squeeze=False)
    axes = axes[0]
    y = np.arange(len(keys))
    for ax, name in zip(axes, names):
        ref, label, log = paper[name]
        vals = []
        for i, k in enumerate(keys):
            v = np.asarray(stats[k][name], dtype=float)
            vals.append(v)
            ax.scatter(v, np.full(v.shape, i), s=10, color=METHOD_STYLE["EAGLE"]["color"], alpha=0.6, zorder=3,
                       label="seeds" if i == 0 else None)
            if v.size:
                ax.plot([np.median(v)] * 2, [i - 0.3, i + 0.3], color="k", lw=1.5, zorder=4,
                        label="median" if i == 0 else "_median")
        if isinstance(ref, tuple):
            ax.axvspan(*ref, color="0.85", zorder=0, label="paper's range")
        elif ref is not None:
            ax.axvline(ref, color="k", ls=":", lw=0.9, label="paper")
        if log or needs_log(np.concatenate(vals) if vals else []):
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(label)
    ax0 = axes[0]
    ax0.set_yticks(y, [(labels or {}).get(k, k) for k in keys]); ax0.invert_yaxis()
    legend_outside(fig, where="below")
    return finish(fig)


def plot_definitions(values: dict, *, paper: float, labels: dict | None = None):
    """The relative difference under each definition (``values``: key → per-seed values); paper dotted."""
    keys = list(values)
    fig, ax = subplots(height=max(2.2, 0.35 * len(keys) + 1.2))
    allv = []
    for i, k in enumerate(keys):
        v = np.asarray(values[k], dtype=float)
        allv.append(v)
        ax.scatter(v, np.full(v.shape, i), s=10, color=METHOD_STYLE["EAGLE"]["color"], alpha=0.6, zorder=3,
                   label="seeds" if i == 0 else None)
        ax.plot([np.median(v)] * 2, [i - 0.3, i + 0.3], color="k", lw=1.5, zorder=4,
                label="median" if i == 0 else "_median")
    ax.axvline(paper, color="k", ls=":", lw=0.9, label=f"paper ({paper:g})")
    ax.set_yticks(np.arange(len(keys)), [(labels or {}).get(k, k) for k in keys]); ax.invert_yaxis()
    if needs_log(np.concatenate(allv) if allv else []):
        ax.set_xscale("log")
    else:
        ax.set_xlim(left=0)
    ax.set_xlabel("relative difference (median over layers)")
    legend_outside(ax)
    return finish(fig)


def plot_failure_boundary(tails: dict, *, bins: int = 12):
    """The heavy tail (``tails``: regime → :class:`eaglebook.ablations.Tail`).  Left: every held-out prompt
    at (‖A‖₂² over the training batch maximum, κ of A), prompts worse than predicting zero in red, and
    the first layer's overshoot boundary step = 2 (dashed, per regime).  Right: share of prompts worse
    than zero against the first layer's step, in bins of equal counts.  One legend, below."""
    fig, (ax, bx) = subplots(1, 2, height=3.6)
    for i, (reg, t) in enumerate(tails.items()):
        st = METHOD_STYLE.get(reg, METHOD_STYLE["EAGLE"])
        ok = ~t.worse
        ax.scatter(t.norm_ratio[ok], t.kappa[ok], s=2, color=st["color"], alpha=0.15, lw=0)
        ax.scatter(t.norm_ratio[t.worse], t.kappa[t.worse], s=6, color="#D55E00", alpha=0.7, lw=0,
                   label="worse than zero" if i == 0 else None)
        ax.axvline(2 / max(t.eta0, t.gamma0), color=st["color"], ls="--", lw=0.9, label=f"step = 2, {reg}")
        order = np.argsort(t.step)
        chunks = np.array_split(order, bins)
        x = [np.median(t.step[c]) for c in chunks if c.size]
        yv = [t.worse[c].mean() for c in chunks if c.size]
        bx.plot(x, yv, marker=MARKERS[i % len(MARKERS)], ms=3, label=f"share worse, {reg}", color=st["color"],
                ls=st.get("linestyle", "-"))
    ax.set_xscale("log"); ax.set_yscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter()); ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(r"$\|A\|_2^2$ / training batch max"); ax.set_ylabel(r"$\kappa(A)$ on its rank")
    bx.axvline(2, color="k", ls=":", lw=0.9)
    bx.set_xscale("log"); bx.xaxis.set_minor_formatter(NullFormatter()); bx.set_xlabel("first layer's step on the prompt")
    bx.set_ylabel("share worse than predicting zero")
    legend_outside(fig, where="below")
    return finish(fig)

"""Chapter 10 (book/10_noisy_regression.md): noisy in-context regression (Vladymyrov et al. 2024) in the
block-completion frame: the errors of the trained models, the chapter's tables, the phrases its prose takes
from the data, what it glues, records and checks, and its figures."""

from __future__ import annotations

import numpy as np
import torch

from ..comparisons.c10_noisy_regression import NOISELESS, depths, sigma5
from ..glue import and_list
from ..icl import baselines as rr
from ..icl import readings
from ..ledger import Check
from ..plotting import finish, legend_outside, subplots
from ..stability import FLIP_SHARE, Resampled, Stability
from ..timing import machine_line

__all__ = ["NAME", "ONE_LAYER", "CLOSE", "SAME", "SAME_PROFILE", "U32", "PLATEAU", "HEADROOM", "MODEL_CLAIMS",
           "one_step_error", "oracle_errors", "excess_over_oracle", "trimmed", "gap_closed", "early_share",
           "gamma_early_share", "float32_floor", "float32_rounding", "ratio_of_means", "max_ratio_of_means", "used",
           "ridge_table", "step_table", "table1", "tail_table", "readings_tables", "omega_table", "other_table",
           "depth_sentence", "floor_sentence", "tail_sentence", "negative_steps", "negative_meaning",
           "compare_readings", "against_const", "shrink_sentence", "gd_const_corr", "gd_const_story", "undecided",
           "resampled", "criterion_word", "verdict_long", "shown", "adarr_story", "by_criterion", "verdicts", "stability_sentence",
           "glued", "recorded", "checks", "ICL_STYLE", "plot_depth_losses", "plot_readings", "plot_shrinkage"]

NAME = {"gdpp": "GD++", "diag": "DIAG", "full": "FULL"}
ONE_LAYER = 1.768        # their Table 1: one-layer GD++, σ_max = 0
CLOSE = 0.10             # the readings are "about equally close" when their e_L differ by less than 10 %
SAME = 0.10              # "about as close as ConstRR": the two excesses differ by less than 10 % of ConstRR's
SAME_PROFILE = 0.9       # a correlation of at least 0.9: "the same shape"
U32 = 2.0 ** -24         # float32's unit roundoff: a number rounded to float32 errs by at most u times itself
PLATEAU = 2.0            # a layer that divides the noiseless loss by less than this adds little ("levels off")
HEADROOM = 100.0         # a loss this many times float32's floor and rounding is not limited by float32


# ---------------------------------------------------------------------------------------------- errors
def one_step_error(N: int, D: int) -> float:
    """The squared error of the best single gradient step, D (1 − N/(N + D + 1)) (Wishart moments)."""
    return D * (1 - N / (N + D + 1))


def oracle_errors(ev) -> torch.Tensor:
    """Per-sequence ½(ŷ − y_q)² of ridge with the true σ_τ on the sequences ``ev``."""
    return 0.5 * (rr.Ridge(ev).predict(ev.sigma ** 2) - ev.yq) ** 2


def excess_over_oracle(preds: dict, yq: torch.Tensor) -> dict[str, np.ndarray]:
    """Per sequence, each ridge baseline's ½(ŷ − y_q)² minus the oracle's (``preds``: :func:`baselines.predictions`);
    their means are the baselines' adjusted losses."""
    half_sq = lambda p: 0.5 * (p.double() - yq.double()) ** 2
    return {m: (half_sq(p) - half_sq(preds["oracle"])).numpy() for m, p in preds.items() if m != "oracle"}


def trimmed(err: torch.Tensor, oracle: torch.Tensor, q: float = 0.999) -> float:
    """The adjusted loss on all but the 0.1 % of sequences on which the model errs most."""
    keep = err <= torch.quantile(err, q)
    return float((err[keep] - oracle[keep]).mean())


def gap_closed(err: torch.Tensor, oracle: torch.Tensor, ev) -> float:
    """The share of the gap between predicting zero and the oracle that a model closes, in the median
    per-sequence error."""
    med = lambda e: float(e.median())
    zero = med(0.5 * ev.yq ** 2)
    return (zero - med(err)) / (zero - med(oracle))


def early_share(gamma) -> float:
    """The share of Σ|γ_ℓ| in the layers before the last (0 for "precondition, then one step")."""
    return float(np.abs(gamma[:-1]).sum() / np.abs(gamma).sum())


def gamma_early_share(model, Z: torch.Tensor) -> float:
    """:func:`early_share` of the γ_ℓ read from ``model`` on the prompts ``Z`` (:func:`readings.read_eagle`)."""
    return early_share(readings.read_eagle(model, Z).gamma)


def float32_floor(yq: torch.Tensor) -> float:
    """The loss of a prediction that errs only by float32's rounding of the label: ½(u · rms y_q)² with u = 2⁻²⁴
    and rms y_q the root mean square of the query labels ``yq`` (a number rounded to float32 errs by up to u
    times itself)."""
    return 0.5 * U32 ** 2 * float((yq.double() ** 2).mean())


def float32_rounding(run, Z: torch.Tensor) -> float:
    """What float32 costs a trained model's forward pass: ½ mean (ŷ_float32 − ŷ_float64)² on the prompts ``Z``."""
    with torch.no_grad():
        y64 = run.model(torch.float64)(Z.double())
        y32 = run.model(torch.float32)(Z.float()).double()
    return float(0.5 * ((y32 - y64) ** 2).mean())


def ratio_of_means(v: np.ndarray) -> float:
    """mean of column 0 / mean of column 1 (e.g. DIAG's adjusted loss over FULL's, per sequence in the rows)."""
    return float(np.mean(v[:, 0]) / np.mean(v[:, 1]))


def max_ratio_of_means(v: np.ndarray) -> float:
    """The largest ratio of a later column's mean to column 0's (e.g. models of several depths over AdaRR)."""
    return float(max(np.mean(v[:, j]) for j in range(1, v.shape[1])) / np.mean(v[:, 0]))


def used(plan: dict) -> dict:
    """The chapter's trained models by name, for its provenance (:meth:`eaglebook.chapter.Chapter.uses`)."""
    return {f"icl {kind} L={L} noise {noise}": cfg for (noise, kind, L), cfg in plan.items()}


# ---------------------------------------------------------------------------------------------- tables
def ridge_table(tasks: dict, oracle_loss: dict, adjusted: dict) -> str:
    rows = ["| | " + " | ".join(tasks[k].label for k in tasks) + " |", "|---|" + "---|" * len(tasks),
            "| oracle (plain loss) | " + " | ".join(f"{oracle_loss[k]:.3g}" for k in tasks) + " |"]
    rows += [f"| {m} | " + " | ".join(f"{adjusted[k][m]:.3g}" for k in tasks) + " |" for m in ("ConstRR", "AdaRR", "TunedRR")]
    return "Adjusted evaluation loss of the ridge baselines (the oracle's row is its plain loss):\n\n" + "\n".join(rows)


def step_table(tm) -> str:
    return "| step | median (ms) | range (ms) |\n|---|---|---|\n" + "\n".join(
        f"| {k} | {1e3 * tm.median(k):.3g} | {1e3 * tm.spread(k)[0]:.3g}–{1e3 * tm.spread(k)[1]:.3g} |" for k in tm.seconds)


def table1(ledger) -> str:
    """The recorded comparisons with the trained models (all but the ridge rows and the evidence row for the
    paper's own claim): theirs, ours, the verdict."""
    def row(c):
        v = c["verdict"] + (f" (criterion alone: {criterion_word(c)})" if c.get("why") else "")
        theirs = c.get("paper_text") or f"{c['paper']:.3g}"
        what = c["what"] + (" (evidence" + (", declared after the run" if c.get("declared", "").startswith("after")
                                            else "") + ")" if c.get("role") == "evidence" else "")
        return f"| {what} | {theirs} | {c['ours']:.3g} | {v} |"

    keys = [k for k, c in ledger.comparisons.items() if k.startswith("C10_") and c["claim"] not in ("v24-sigma5-ridge", "not-gdpp")]
    return "| comparison | theirs | ours | verdict |\n|---|---|---|---|\n" + "\n".join(row(ledger.comparisons[k]) for k in keys)


def tail_table(ours: dict, trim: dict, tasks: dict) -> str:
    return "| model | noise law | adjusted loss | without the worst 0.1 % |\n|---|---|---|---|\n" + "\n".join(
        f"| {NAME[k[1]]}, {k[2]} layer{'s' if k[2] > 1 else ''} | {tasks[k[0]].label} | {ours[k]:.3g} | {trim[k]:.3g} |"
        for k in ours)


def readings_tables(read_rows: list[dict]) -> str:
    """The ω's and the steps read per layer; the losses and the fidelities of the two readings at the last layer."""
    lines = ["| model | layer | ω_xx | ω_xy | ω_yx | ω_yy | η_ℓ | γ_ℓ |", "|---|---|---|---|---|---|---|---|"]
    for r_ in read_rows:
        for l, (o, e, g_) in enumerate(zip(r_["om"], r_["eta"], r_["gamma"]), 1):
            lines.append(f"| {r_['model'] if l == 1 else ''} | {l} | " + " | ".join(f"{v:.3g}" for v in o) + f" | {e:.3g} | {g_:.3g} |")
    fid_lines = ["| model | loss of the model | loss of the GD++ reading | loss of the EAGLE reading | e_L, GD++ reading | "
                 "e_L, EAGLE reading | off-diagonal share of P, Q |", "|---|---|---|---|---|---|---|"]
    fid_lines += [f"| {r_['model']} | {r_['loss']:.3g} | {r_['loss_g']:.3g} | {r_['loss_e']:.3g} | {r_['fg']:.3g} | "
                  f"{r_['fe']:.3g} | {r_['off']:.3g} |" for r_ in read_rows]
    return "\n".join(lines) + "\n\n" + "\n".join(fid_lines)


def omega_table(om) -> str:
    return "| layer | ω_xx | ω_xy | ω_yx | ω_yy |\n|---|---|---|---|---|\n" + "\n".join(
        f"| {l} | " + " | ".join(f"{v:.3g}" for v in o) + " |" for l, o in enumerate(om, 1))


def other_table(tasks: dict, ours: dict, adjusted: dict, layers: int) -> str:
    """DIAG at ``layers`` layers on the noise laws other than σ_max = 0 and 5, against the ridge baselines."""
    other = [k for k in ("1", "3", "{1,3}") if (k, "diag", layers) in ours]
    return "| noise law | DIAG | ConstRR | AdaRR | TunedRR |\n|---|---|---|---|---|\n" + "\n".join(
        f"| {tasks[k].label} | {ours[(k, 'diag', layers)]:.3g} | "
        + " | ".join(f"{adjusted[k][m]:.3g}" for m in ("ConstRR", "AdaRR", "TunedRR")) + " |"
        for k in other)


# ---------------------------------------------------------------------------------------------- phrases
def depth_sentence(layers, gd) -> str:
    """Whether the noiseless GD++ loss ``gd`` falls with every added layer of ``layers``, and by how much,
    against Table 1's factors."""
    falls = all(b < a for a, b in zip(gd, gd[1:]))
    ratios = [a / b for a, b in zip(gd, gd[1:])]
    return (("Our noiseless GD++ loss falls with every added layer" if falls else
             "Our noiseless GD++ loss does not fall with every added layer")
            + f", from {gd[0]:.3g} at {layers[0]} layer to {gd[-1]:.3g} at {layers[-1]} layers; "
            f"each layer divides it by {min(ratios):.3g}" + (f" to {max(ratios):.3g}" if len(ratios) > 1 else "") + " (theirs: "
            + ", ".join(f"{NOISELESS[L] / NOISELESS[L + 1]:.2g}" for L in layers[:-1]) + " from one depth to the next)")


def floor_sentence(layers, gd, floor: float, rounding: float) -> str:
    """Our deepest noiseless GD++ (its loss ``gd[-1]``) against float32: the floor ½(u · rms y_q)², what float32
    costs its own forward pass (``rounding``), and whether the loss levels off with depth (every layer from
    some depth on divides it by less than :data:`PLATEAU`), against Table 1's factors at those depths."""
    last, worst = gd[-1], max(floor, rounding)
    out = (f"the float32 floor, {floor:.2g}, lies a factor {last / floor:.2g} below the loss of our deepest noiseless "
           f"GD++, {last:.3g}, and evaluating that model in float32 instead of float64 moves its predictions by "
           f"{rounding:.2g} (½ mean square difference)")
    if last <= HEADROOM * worst:
        return out + f": its loss is within a factor {HEADROOM:g} of what float32 resolves, so float32 may limit it"
    out += ": float32 is not what limits our models"
    ratios = [a / b for a, b in zip(gd, gd[1:])]
    start = len(ratios)
    while start > 0 and ratios[start - 1] < PLATEAU:
        start -= 1
    if start == len(ratios):
        return out
    theirs = [NOISELESS[L] / NOISELESS[L + 1] for L in layers[start:-1]]
    return (out + f". From {layers[start]} layers on each added layer divides our loss by at most "
            f"{max(ratios[start:]):.2g} (Table 1's by {min(theirs):.2g} or more at those depths): the loss levels off "
            f"at about {last:.2g}, a plateau of the short recipe, not of float32")


def negative_steps(read_rows: list[dict]) -> str:
    """Per read model, the layers whose η_ℓ or γ_ℓ is negative, with their values."""
    def signs(sym, v):
        neg = [(l, x) for l, x in enumerate(v, 1) if x < 0]
        if not neg:
            return f"every {sym}_ℓ is positive"
        ls = and_list(str(l) for l, _ in neg)
        return (f"{sym}_ℓ < 0 in layer{'s' if len(neg) > 1 else ''} {ls} ("
                + ", ".join(f"{x:.3g}".replace("-", "−") for _, x in neg) + ")")
    return "; ".join(f"{r_['model']}: {signs('η', r_['eta'])}, {signs('γ', r_['gamma'])}" for r_ in read_rows)


def negative_meaning(gd_row: dict) -> str:
    """What the signs of the GD++ model's η_ℓ mean (``gd_row``: its row of the readings)."""
    neg = [l for l, x in enumerate(gd_row["eta"], 1) if x < 0]
    if not neg:
        return (f"Every conditioning step of {gd_row['model']} is positive: each layer shrinks the large singular values "
                "of A_ℓ more than the small ones, as a preconditioned gradient method does")
    return ("A layer with η_ℓ < 0 has ω_xx > 0: it maps each singular value s of A_ℓ to s(1 + ω_xx s²), stretching the "
            "large ones most, so it raises the condition number of every prompt's A_ℓ; it steps away from the "
            "gradient-descent direction, along which a positive η_ℓ moves (shrinking the large singular values most). "
            f"The trained {gd_row['model'].split(',')[0]} does this in {len(neg)} of its {len(gd_row['eta'])} layers: "
            "with negative steps it is not plain gradient descent (nor the construction behind their Theorem 5.1, "
            "whose every conditioning step is positive)")


def tail_sentence(ours: dict, trim: dict, tasks: dict) -> str:
    """The models whose mean the worst 0.1 % of sequences decide (leaving them out more than halves it)."""
    tail = [k for k in ours if ours[k] > 2 * max(trim[k], 1e-300)]
    return (("on " + and_list(f"{NAME[k[1]]} ({k[2]} layers, {tasks[k[0]].label})" for k in tail)
             + " the worst 0.1 % of sequences more than halve the mean when left out")
            if tail else "on no model do the worst 0.1 % of sequences decide the mean (leaving them out changes it by less than half)")


def compare_readings(r_: dict) -> str:
    """Which reading is closer to a model's activations at the last layer (``fg``: GD++'s e_L, ``fe``: EAGLE's)."""
    fg, fe = r_["fg"], r_["fe"]
    if max(fg, fe) <= (1 + CLOSE) * min(fg, fe):
        return (f"for {r_['model']} the two readings are about equally close, e_L = {fg:.3g} for their GD++ reading "
                f"and {fe:.3g} for EAGLE's, within {100 * CLOSE:.0f}% of each other")
    closer = "their GD++ reading" if fg < fe else "the EAGLE reading"
    return f"for {r_['model']} {closer} is the closer one, e_L = {fg:.2g} for their GD++ reading against {fe:.2g} for EAGLE's"


def against_const(x: float, c: float) -> str:
    return ("about as close to the oracle as ConstRR" if abs(x - c) < SAME * abs(c) else
            "closer to the oracle than ConstRR" if x < c else "farther from the oracle than ConstRR")


def shrink_sentence(sig_grid, curves: dict, labels: dict) -> str:
    """Each model against ConstRR, in its excess over the oracle: at the low and the high noise levels of the
    grid (its first and last third) and over the whole grid."""
    excess = {n: curves[n] - curves["oracle"] for n in curves if n != "oracle"}
    mean_ex = {n: float(e.mean()) for n, e in excess.items()}
    lo, hi = slice(0, max(1, len(sig_grid) // 3)), slice(2 * len(sig_grid) // 3, None)
    ends = {"lo": (lo, f"σ_τ ≤ {sig_grid[lo][-1]:.2g}"), "hi": (hi, f"σ_τ ≥ {sig_grid[hi][0]:.2g}")}
    parts = []
    for n in labels:
        per_end = [f"{against_const(excess[n][sl].mean(), excess['ConstRR'][sl].mean())} at {txt} "
                   f"(mean excess {excess[n][sl].mean():.3g} against {excess['ConstRR'][sl].mean():.3g})"
                   for sl, txt in ends.values()]
        parts.append(f"{labels[n]} is {per_end[0]}, {per_end[1]}, and {against_const(mean_ex[n], mean_ex['ConstRR'])} "
                     f"over the whole grid (mean excess {mean_ex[n]:.3g} against {mean_ex['ConstRR']:.3g})")
    return "; ".join(parts)


def gd_const_corr(curves: dict) -> float:
    """The correlation across the noise grid of GD++'s and ConstRR's excess over the oracle."""
    return float(np.corrcoef(curves["GD++"] - curves["oracle"], curves["ConstRR"] - curves["oracle"])[0, 1])


def gd_const_story(corr: float) -> str:
    return (f"at least {SAME_PROFILE:g}: the two excesses have the same shape across noise levels (up to scale and shift), "
            "as the claim that GD++ behaves as if it assumed one noise level predicts" if corr >= SAME_PROFILE
            else f"below {SAME_PROFILE:g}: the two excesses do not have the same shape across noise levels, so this view "
            "does not support the claim that GD++ behaves as if it assumed one noise level")


def undecided(st: dict | None) -> str:
    """"" for a row recorded without resampling or whose verdict resampling leaves alone; else how few
    sequences decide it ("decided by 3 of 100000 sequences"), the words of the ledger's reason."""
    if not st or st["share"] <= FLIP_SHARE:
        return ""
    return Stability.from_dict(st).why(names=False)


def resampled(c: dict) -> str:
    """A row's resampling in words: "the criterion's verdict is stable under resampling the 2000 sequences" or
    "the criterion's verdict is decided by 3 of 100000 sequences"."""
    st = c.get("stability")
    if not st:
        return "the row was not resampled"
    return "the criterion's verdict is " + (undecided(st) or f"stable under resampling the {st['n']} {st['unit']}")


def criterion_word(c: dict) -> str:
    """What a row's criterion alone says, and, where resampling the sequences changes it, how few decide it."""
    u = undecided(c.get("stability"))
    return c["criterion_verdict"] + (f" but {u}" if u else "")


def verdict_long(c: dict) -> str:
    """A recorded comparison's verdict, with why it is not judged and what its criterion alone says (and, where
    a few sequences decide that, how few)."""
    if not c.get("why"):
        return c["verdict"]
    crit = c["criterion_verdict"] if undecided(c.get("stability")) in c["why"] else criterion_word(c)
    return c["verdict"] + f" ({c['why']}; by the criterion alone, {crit})"


def shown(c: dict) -> str:
    """A recorded value as the table shows it: three significant digits, a round value with two decimals."""
    return f"{c['ours']:.3g}" if c["ours"] != int(c["ours"]) else f"{c['ours']:.2f}"


def adarr_story(ledger, deep4_of: dict) -> str:
    """Their claim that the transformers with 4 or more layers beat AdaRR: per kind, our largest ratio and its
    verdict, or why it is not tested in this profile."""
    kinds = [k for k in ("diag", "full") if f"C10_{k}_over_adarr" in ledger.comparisons]
    ada = [f"for {kind.upper()}, whose largest ratio to AdaRR's adjusted loss over "
           + (f"the depths {', '.join(map(str, deep4_of[kind]))}" if len(deep4_of[kind]) > 1 else f"depth {deep4_of[kind][0]}")
           + f" is {shown(ledger.comparisons[f'C10_{kind}_over_adarr'])}: {verdict_long(ledger.comparisons[f'C10_{kind}_over_adarr'])}"
           for kind in kinds]
    untested = [k.upper() for k in ("diag", "full") if k not in kinds]
    if untested:
        ada.append(f"not tested for {' and '.join(untested)}, since no {' or '.join(untested)} model with 4 or more "
                   "layers is trained under noise in this profile")
    return "; ".join(ada)


#: The claims whose rows are about our trained models (the ridge rows are not; the paper's own claim is evidence).
MODEL_CLAIMS = ("v24-gdpp-noiseless", "v24-sigma5-models", "v24-diag-full", "v24-gdpp-constrr", "v24-beat-adarr")


def by_criterion(ledger, *claims: str) -> str:
    """What the criteria alone say of the headline rows of ``claims`` recorded so far (:func:`criterion_word`:
    with how few sequences decide it, where resampling changes it), grouped by part:
    "reproduced" (one row, or all alike), else e.g. "reproduced (1 layer, 2 layers), not reproduced (3 layers)"
    ("; " between parts that hold a comma themselves);
    "not run" when none is recorded (the findings' counterpart of the ledger's verdict phrase, for rows that are
    not judged)."""
    heads = [c for c in ledger.comparisons.values() if c["claim"] in claims and c["role"] == "headline"]
    if not heads:
        return "not run"
    groups: dict[str, list[str]] = {}
    for c in heads:
        groups.setdefault(criterion_word(c), []).append(c.get("part") or "")
    if len(groups) == 1:
        return next(iter(groups))
    sep = "; " if any("," in p for parts in groups.values() for p in parts) else ", "   # parts such as "DIAG, 3 layers"
    return ", ".join(f"{v} ({sep.join(p for p in parts if p)})" if any(parts) else v for v, parts in groups.items())


def verdicts(ledger, *claims: str) -> str:
    """The verdicts of the headline rows of ``claims``, "; "-joined where they differ ("not run": none)."""
    heads = [c["verdict"] + (f": {c['why']}" if c.get("why") else "")
             for c in ledger.comparisons.values() if c["claim"] in claims and c["role"] == "headline"]
    return "; ".join(dict.fromkeys(heads)) or "not run"


def _short(c: dict) -> str:
    """A headline row's name in a sentence: "noiseless GD++, 3 layers", "DIAG, 3 layers at σ_max = 5", "AdaRR"."""
    part = c.get("part")
    return {"v24-gdpp-noiseless": f"noiseless GD++, {part}", "v24-sigma5-models": f"{part} at σ_max = 5",
            "v24-beat-adarr": f"{part} against AdaRR", "v24-diag-full": "DIAG / FULL",
            "v24-gdpp-constrr": "GD++ / ConstRR"}.get(c["claim"], part or c["what"])


def stability_sentence(ledger, claims=("v24-sigma5-ridge", *MODEL_CLAIMS)) -> str:
    """Which headline rows of ``claims`` have a verdict (by the criterion) that resampling the evaluation
    sequences changes, and how few sequences decide it; the others are stable."""
    heads = [c for c in ledger.comparisons.values()
             if c["claim"] in claims and c["role"] == "headline" and c.get("stability")]
    if not heads:
        return "no row was resampled"
    moved = [c for c in heads if undecided(c["stability"])]
    n, unit = heads[0]["stability"]["n"], heads[0]["stability"]["unit"]
    if not moved:
        return f"the verdict of every one of the {len(heads)} rows is stable under resampling the {n} {unit}"
    rest = len(heads) - len(moved)
    return ("the verdict by the criterion is " + and_list(f"{undecided(c['stability'])} for {_short(c)}" for c in moved)
            + (f"; that of the other {rest} row{'s' if rest > 1 else ''} is stable under resampling the {n} {unit}"
               if rest else ""))


# ---------------------------------------------------------------------------------------------- bookkeeping
def recorded(excess: dict, ridge_excess: dict, profile: str, *, trim: dict, gamma_share: float) -> dict:
    """The values of chapter 10's declared comparisons (:mod:`eaglebook.comparisons.c10_noisy_regression`).

    ``excess``: (noise, kind, layers) → per evaluation sequence, the model's ½(ŷ − y_q)² minus the oracle's;
    ``ridge_excess``: noise → baseline → the same (:func:`excess_over_oracle`); ``trim``: the adjusted losses
    without each model's worst 0.1 % of sequences (:func:`trimmed`).  Every headline is a statistic over the
    evaluation sequences, recorded with them (:class:`eaglebook.stability.Resampled`): a mean, or a ratio of
    means over the same sequences."""
    dep = depths(profile)
    seq = lambda v, stat=np.mean: Resampled(np.asarray(v), stat, unit="sequences")
    cols = lambda *vs: np.column_stack(vs)
    ridge = ridge_excess["5"]
    out = {f"C10_ridge_{m}": seq(ridge[m]) for m in ("ConstRR", "AdaRR", "TunedRR")}
    out |= {f"C10_gdpp0_L{L}": seq(excess[("0", "gdpp", L)]) for L in dep.noiseless}
    out |= {f"C10_s5_{kind}{L}": seq(excess[("5", kind, L)]) for kind, L in sigma5(profile)}
    diag, full = ("5", "diag", dep.full), ("5", "full", dep.full)
    out["C10_diag_over_full"] = seq(cols(excess[diag], excess[full]), ratio_of_means)
    out["C10_diag_over_full_trimmed"] = trim[diag] / trim[full]
    out["C10_gdpp_over_const"] = seq(cols(excess[("5", "gdpp", dep.gd5)], ridge["ConstRR"]), ratio_of_means)
    out |= {f"C10_{kind}_over_adarr": seq(cols(ridge["AdaRR"], *(excess[("5", kind, L)] for L in Ls)), max_ratio_of_means)
            for kind, Ls in dep.deep4_of.items() if Ls}
    out["C10_gamma_early_share"] = gamma_share
    return out


def checks(*, N: int, D: int, nystrom_is_ols: float, ridge_forms: float, closed: dict, learn: float,
           orientation: float, read_rows: list[dict], floor: float) -> list[Check]:
    """What the chapter's code must get right: the prompt's block completion is least squares, the three
    forms of ridge agree, every model learned, the two readings are one update with one ρ per layer, and
    EAGLE's per-prompt ρ departs from the GD++ model (whose own reading is the model, to rounding); and what the
    prose says of float32: its floor ``floor`` (:func:`float32_floor`) lies below every noiseless row of Table 1."""
    half = ONE_LAYER / one_step_error(N, D)
    assert abs(half - 0.5) < 0.05, half          # their one-layer loss is "about half" the squared error
    gd_row = read_rows[0]
    assert gd_row["fg"] < 1e-20, gd_row["fg"]     # GD++'s own reading is the model itself, to rounding
    return [
        Check("C10_nystrom_is_ols", nystrom_is_ols, upper=1e-10,
              what="B A^† C of the prompt is the least-squares prediction (max relative difference)"),
        Check("C10_ridge_forms", ridge_forms, upper=1e-10,
              what="ridge from the spectral form and from the blocks equals the direct solve"),
        Check("C10_models_learn", min(closed.values()), lower=learn,
              what="every trained model closes at least this share of the gap between predicting zero and the oracle "
                   "in the median per-sequence error (smallest share)"),
        Check("C10_orientation_identity", orientation, upper=1e-10,
              what="GD++ reading = EAGLE on the transposed task with one ρ per layer (max relative difference)"),
        Check("C10_eagle_departs", gd_row["fe"], lower=1e-20,
              what="EAGLE's per-prompt ρ departs from the GD++ model's constant steps (e_L of the EAGLE reading)"),
        Check("C10_float32_headroom", min(NOISELESS.values()) / floor, lower=10.0,
              what="Table 1's smallest noiseless loss over the float32 floor ½(u · rms y_q)² (u = 2⁻²⁴)"),
    ]


def glued(*, profile: str, N: int, D: int, Z0, ev: dict, tuned: dict, tm, rec, plan: dict, runs: dict, ours: dict,
          trim: dict, tasks: dict, read_rows: list[dict], om5, sig_grid, curves: dict, labels: dict, floor: float,
          rounding: float, ledger) -> dict:
    """Everything chapter 10's prose quotes, by key (``ledger``: the chapter's, its comparisons recorded;
    ``floor`` and ``rounding``: :func:`float32_floor` and :func:`float32_rounding` of the deepest noiseless GD++)."""
    dep = depths(profile)
    lam5, tun5 = tuned["5"]
    step = lambda L, batch: 1e3 * tm.median(f"L={L}, batch {batch}")
    gd = [ours[("0", "gdpp", L)] for L in dep.noiseless]
    corr = gd_const_corr(curves)
    comp = ledger.comparisons
    out = dict(
        C10_one_step=one_step_error(N, D), C10_half_ratio=ONE_LAYER / one_step_error(N, D), C10_N=N, C10_D=D,
        C10_rows=Z0.shape[-2], C10_cols=Z0.shape[-1], C10_eval_n=ev["sequences"],
        C10_const_lam5=lam5, C10_tuned_m5=tun5.multiplier, C10_tuned_c5=tun5.cap,
        C10_step_ours_hi=step(dep.hi, rec.batch), C10_step_theirs_hi=step(dep.hi, 2048), C10_step_ours_lo=step(dep.lo, rec.batch),
        C10_L_hi=dep.hi, C10_L_lo=dep.lo, C10_their_hours=200_000 * tm.median(f"L={dep.hi}, batch 2048") / 3600,
        C10_steps=rec.steps, C10_batch=rec.batch, C10_lr=rec.lr, C10_models=len(plan),
        C10_machine=machine_line(tm.before, tm.after),
        C10_data_factor=200_000 * 2048 / (rec.steps * rec.batch), C10_float32_floor=floor, C10_float32_rounding=rounding,
        C10_floor_sentence=floor_sentence(dep.noiseless, gd, floor, rounding),
        C10_floor_sentence_cap=(lambda t: t[0].upper() + t[1:])(floor_sentence(dep.noiseless, gd, floor, rounding)),
        C10_negative_steps=negative_steps(read_rows), C10_negative_meaning=negative_meaning(read_rows[0]),
        C10_stability_sentence=stability_sentence(ledger),
        C10_diag_over_full_resampled=resampled(comp["C10_diag_over_full"]),
        C10_full_depths=", ".join(map(str, dep.full_noisy)),
        C10_deep4=", ".join(map(str, dep.deep4)) or "none in this profile",
        C10_train_minutes=sum(r.seconds for r in runs.values()) / 60,
        C10_depth_sentence=depth_sentence(dep.noiseless, gd), C10_tail_sentence=tail_sentence(ours, trim, tasks),
        C10_read_n=ev["reading"], C10_readings_sentence="; ".join(compare_readings(r_) for r_ in read_rows),
        C10_gamma_early=early_share(read_rows[0]["gamma"]),
        C10_wyy_neg=int((om5[:, 3] < 0).sum()), C10_L_deep=dep.deep,
        C10_shrink_sentence=shrink_sentence(sig_grid, curves, labels), C10_same_pct=100 * SAME,
        C10_gd_const_corr=corr, C10_gd_const_story=gd_const_story(corr), C10_read_L=dep.other,
        # the summary and the findings
        C10_L_full=dep.full, C10_L_first=dep.noiseless[0], C10_gd_first=gd[0], C10_gd_last=gd[-1],
        C10_gd_first_theirs=NOISELESS[dep.noiseless[0]], C10_gd_last_theirs=NOISELESS[dep.hi],
        C10_adarr_story=adarr_story(ledger, dep.deep4_of),
        C10_findings_ridge=ledger.verdict_phrase("v24-sigma5-ridge"), C10_findings_models=verdicts(ledger, *MODEL_CLAIMS),
        C10_findings_noiseless=by_criterion(ledger, "v24-gdpp-noiseless"),
        C10_findings_sigma5=by_criterion(ledger, "v24-sigma5-models"),
        C10_findings_diag_full=by_criterion(ledger, "v24-diag-full"),
        C10_findings_gdpp_const=by_criterion(ledger, "v24-gdpp-constrr"),
        C10_findings_adarr=by_criterion(ledger, "v24-beat-adarr"),
        C10_findings_not_gdpp=verdict_long(comp["C10_gamma_early_share"]),
    )
    for k in ("C10_ridge_ConstRR", "C10_ridge_AdaRR", "C10_ridge_TunedRR", "C10_diag_over_full", "C10_gdpp_over_const"):
        out[f"{k}_verdict_long"] = verdict_long(comp[k])
    for k in ("C10_diag_over_full", "C10_gdpp_over_const", "C10_diag_over_full_trimmed"):
        out[f"{k}_shown"] = shown(comp[k])
    out["C10_diag_over_full_trimmed_verdict_long"] = verdict_long(comp["C10_diag_over_full_trimmed"])
    return out


# ---------------------------------------------------------------------------------------------- figures
ICL_STYLE = {
    "GD++": dict(color="#E69F00", linestyle="--", marker="o"),
    "DIAG": dict(color="#0072B2", linestyle="-", marker="s"),
    "FULL": dict(color="#D55E00", linestyle="-.", marker="^"),
    "oracle": dict(color="#000000", linestyle="-", marker=""),
    "ConstRR": dict(color="#CC79A7", linestyle=":", marker="v", linewidth=2.2, zorder=3),   # over GD++, which it shadows
    "AdaRR": dict(color="#009E73", linestyle="--", marker="D", markersize=4),
    "TunedRR": dict(color="#999999", linestyle="-.", marker=""),
    "theirs": dict(color="#999999", linestyle="", marker="x"),
}


def plot_depth_losses(layers, ours, theirs, *, floor: float | None = None):
    """Noiseless GD++: loss against depth, ours and the paper's, on a log axis; ``floor``: float32's floor of
    the loss (:func:`float32_floor`), a horizontal line."""
    fig, ax = subplots()
    ax.semilogy(layers, ours, label="ours", **ICL_STYLE["GD++"])
    ax.semilogy(list(theirs), list(theirs.values()), label="Vladymyrov et al.", markersize=7, **ICL_STYLE["theirs"])
    if floor is not None:
        ax.axhline(floor, color="k", lw=0.6, ls=":", label=r"float32 floor $\frac{1}{2}(u\,y_{\mathrm{rms}})^2$")
    ax.set_xlabel("layers"); ax.set_ylabel(r"loss $\frac{1}{2}(\hat y - y)^2$")
    legend_outside(ax)
    return finish(fig)


def plot_readings(fid: dict, steps: dict, *, floor: float = 1e-32):
    """Left: per layer, the fidelity of the two readings to each model (log axis; values below ``floor``
    drawn at it).  Right: the steps η_ℓ (filled) and γ_ℓ (open) read from each model."""
    fig, (a, b) = subplots(1, 2)
    for (model, reading), e in fid.items():
        st = ICL_STYLE[model]
        e = np.maximum(np.asarray(e[1:], float), floor)
        a.semilogy(np.arange(1, e.size + 1), e, color=st["color"], marker=st["marker"],
                   linestyle="-" if reading == "GD++" else ":", label=f"{model}: {reading} reading")
    a.set_xlabel(r"layer $\ell$"); a.set_ylabel(r"$\|Z_\ell - \hat Z_\ell\|_F^2$ / #entries")
    legend_outside(a)
    for model, (eta, gamma) in steps.items():
        st = ICL_STYLE[model]
        ls = np.arange(1, len(eta) + 1)
        b.plot(ls, eta, color=st["color"], marker=st["marker"], linestyle="-", label=f"{model}: $\\eta$")
        b.plot(ls, gamma, color=st["color"], marker=st["marker"], linestyle=":", markerfacecolor="none",
               label=f"{model}: $\\gamma$")
    b.axhline(0, color="#999999", lw=0.6, label="zero step")
    b.set_xlabel(r"layer $\ell$"); b.set_ylabel(r"step ($\rho = 1/\mathrm{median}\,\|A_\ell\|^2$)")
    legend_outside(b)
    return finish(fig)


def plot_shrinkage(sigmas, curves: dict):
    """Loss against the sequence's noise level σ_τ (left) and the same minus ridge with the true σ_τ
    (right), for the models and the ridge baselines; every series on both panels, one legend for both (the
    oracle's own curve on the right is its zero line).  The ridge baselines are drawn over the models, with
    markers of their own, so that a model that follows one (GD++ and ConstRR) does not hide it."""
    fig, (a, b) = subplots(1, 2)
    oracle = np.asarray(curves["oracle"], float)
    for name, c in curves.items():
        st = dict(ICL_STYLE[name.split(",")[0]])
        c = np.asarray(c, float)
        a.plot(sigmas, c, label=name, **st)
        b.plot(sigmas, c - oracle, label=name, **st)
    a.set_xlabel(r"$\sigma_\tau$"); a.set_ylabel(r"loss $\frac{1}{2}(\hat y - y)^2$")
    b.set_xlabel(r"$\sigma_\tau$"); b.set_ylabel("loss − oracle ridge")
    legend_outside(fig)
    return finish(fig)

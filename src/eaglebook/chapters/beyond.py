"""Chapter 11 (book/11_beyond.md): beyond the paper, one change at a time.  The tables of the probe, the
statistics, the readings, the noise protocols, the floor's targets and the outcomes; the phrases its sentences
take from the data; its glue and records; its two per-layer figures.

The science (the changes as knob sets, the declared "same algorithm" test, the assessment of a trained
model) lives in :mod:`eaglebook.beyond`; the declared comparisons in :mod:`eaglebook.comparisons.c11_beyond`.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from .. import beyond, stability
from ..plotting import finish, legend_outside, log_if_wide, subplots
from ..scorecard import beyond_label
from ..stability import Resampled

__all__ = ["CH", "QUESTIONS", "ANSWERED", "STAT_KEYS", "probe_table", "stats_table", "readings_table", "noise_table",
           "floor_table", "outcomes_table", "held_list", "ref_story", "nearest", "softmax_structure", "softmax_scalars",
           "softmax_linear", "median_order", "gamma_spread", "gamma_spread_story", "depth8_reading", "norm_spread_story",
           "rate", "burnin_story", "noise_summary", "noise_best", "noise_zero_story", "floor_summary", "floor_ceiling_story",
           "yes_no", "verdict_story", "headline", "answer_text", "eagle_story", "near_eagle", "no_near_story",
           "order_story", "unjudged_story", "stability_story", "sized_story", "sized_results", "used", "recorded", "glued", "plot_layer_constants",
           "plot_layer_errors", "NEAR", "CLIP_DECADES"]

CH = {c.key: c for c in beyond.CHANGES}
#: The changes that are questions of their own (the reference, the paper's set-up, is not).
QUESTIONS = [c for c in beyond.CHANGES if c.claim]
ANSWERED = [c.key for c in QUESTIONS]
#: The statistics of :func:`eaglebook.beyond.assess` (medians over seeds) the prose quotes, per change.
STAT_KEYS = ("offdiag_qk", "offdiag_vp", "offdiag_qk_random", "eta", "gamma", "fidelity", "reduction", "norm_spread")
#: A prediction within this factor of the reference's distance to EAGLE's "follows EAGLE about as closely as the
#: reference" (a wording rule, set after the paper-profile runs; it decides words only, no verdict).
NEAR = 1.5
#: The per-layer figures show this many decades around the paper's constant (or above the error of predicting
#: zero); a value beyond is drawn at the axis edge as an open triangle.
CLIP_DECADES = 3


def headline(k: str) -> str:
    """The key of change ``k``'s headline row: the sized test's where the change sets the products' size."""
    return f"C11_{k}_same_sized" if beyond.resized(CH[k]) else f"C11_{k}_same"


def answer_text(row: Mapping) -> str:
    """A recorded row's answer: yes / partly / no, or "not judged: why"."""
    return beyond_label(row["verdict"]) + (f": {row['why']}" if row.get("why") else "")


# ----------------------------------------------------------------------------------------- tables
def probe_table(probe_cfgs, probe) -> str:
    """The SGD probe: each rate's held-out median MSE."""
    return ("| SGD learning rate | " + " | ".join(f"{c.lr:g}" for c in probe_cfgs) + " |\n|---|" + "---|" * len(probe)
            + f"\n| held-out median MSE after {probe_cfgs[0].steps:,} steps | "
            + " | ".join(f"{r.final['test_mse_median']:.3g}" for r in probe) + " |")


def stats_table(med: dict, minutes: dict) -> str:
    """The statistics of every change (medians over seeds) and the minutes one model took to train."""
    rows = ["| change | $W_{QK}$ off-structure | $W_{VP}$ off-structure | η | γ | fidelity | zero ÷ model | minutes |",
            "|---|---|---|---|---|---|---|---|"]
    for k, m in med.items():
        rows.append(f"| {CH[k].label} | {m['offdiag_qk']:.2f} | {m['offdiag_vp']:.2f} | {m['eta']:.3g} | {m['gamma']:.3g} | "
                    f"{m['fidelity']:.1e} | {m['reduction']:.3g} | {minutes[k]:.1f} |")
    return "\n".join(rows)


def readings_table(read: dict) -> str:
    """Each change's relative distance to EAGLE's and to gradient descent's prediction."""
    return "| change | to EAGLE | to GD |\n|---|---|---|\n" + "\n".join(
        f"| {CH[k].label} | {r['eagle']:.2f} | {r['gd']:.2f} |" for k, r in read.items())


def noise_table(nmse: dict, keys: Sequence[str]) -> str:
    """The median MSE of each noise model, and of predicting zero, on noisy and on clean prompts."""
    return ("| model | noisy prompts | clean prompts |\n|---|---|---|\n"
            + "\n".join(f"| {CH[k].label} | {nmse[k, 'noisy']:.3g} | {nmse[k, 'clean']:.3g} |" for k in keys)
            + f"\n| predicting zero | {nmse['zero', 'noisy']:.3g} | {nmse['zero', 'clean']:.3g} |")


def floor_table(ftm: dict) -> str:
    """Each candidate target: the model's median MSE against it, and its own against the true D."""
    return "| target | model's MSE against it | its own MSE against the true D |\n|---|---|---|\n" + "\n".join(
        f"| {t} | {v['model']:.3g} | {v['vs_truth']:.3g} |" for t, v in ftm.items())


def outcomes_table(held: dict, score: dict, p_model: float, ledger, sized: dict | None = None) -> str:
    """Every change: the tests held, its score and answer; and the 8-layer model's rate (``ledger``: the
    chapter's, its comparisons recorded).  ``sized``: change → (tests held, score) with the structure test at the
    reference's size, for the changes of size (a second row each, the headline; the declared row is marked)."""
    rows_ = ledger.comparisons
    mark = lambda ok: "✓" if ok else "✗"
    rows = ["The score counts the tests held, or is 0 when the structure test fails.", "",
            "| change | " + " | ".join(beyond.TESTS) + " | score | answer |", "|---|" + "---|" * (len(beyond.TESTS) + 2)]
    for k in held:
        extra = (sized or {}).get(k)
        label = CH[k].label + (" (declared test; superseded)" if extra else "")
        rows.append(f"| {label} | " + " | ".join(mark(held[k][t]) for t in beyond.TESTS)
                    + f" | {score[k]:.0f} | {answer_text(rows_[f'C11_{k}_same']) if CH[k].claim else '(reference)'} |")
        if extra:
            rows.append(f"| {CH[k].label} (structure at the reference's size, added after the run) | "
                        + " | ".join(mark(extra[0][t]) for t in beyond.TESTS)
                        + f" | {extra[1]:.0f} | {answer_text(rows_[f'C11_{k}_same_sized'])} |")
    rows.append(f"| 8 layers: error falls doubly exponentially | | | | | p = {p_model:.2f} | "
                f"{answer_text(rows_['C11_depth8_order'])} |")
    return "\n".join(rows)


# ----------------------------------------------------------------------------------------- phrases
def held_list(held: Mapping[str, bool]) -> str:
    """The tests that hold, comma-separated ("none")."""
    return ", ".join(t for t, ok in held.items() if ok) or "none"


def ref_story(held: Mapping[str, bool]) -> str:
    """How many tests the reference passes and, when it fails some, what that means for the changes."""
    return (f"{sum(held.values())} of the 4 tests" + ("" if all(held.values()) else
            f" (it fails: {', '.join(t for t, ok in held.items() if not ok)}), so a change that fails the same test does "
            "not by that alone depart from the paper's set-up"))


def nearest(read: Mapping[str, float]) -> str:
    """Which algorithm a model's prediction is closest to (``read``: relative distance to "eagle" and "gd")."""
    a = min(read, key=read.get)
    return ("neither (both distances are at least 1)" if read[a] >= 1 else
            f"{'EAGLE' if a == 'eagle' else 'gradient descent'} ({read[a]:.2f}, against {read['gd' if a == 'eagle' else 'eagle']:.2f})")


def softmax_structure(held: Mapping[str, bool]) -> str:
    return "holds" if held["structure"] else "fails"


def softmax_scalars(sm: Mapping[str, float], held_softmax: Mapping[str, bool], held_paper: Mapping[str, bool]) -> str:
    """The end of the reduction sentence: "." or, where the linear reference passes the scaling-law and fidelity
    tests and the softmax model does not, why its scalars are not step sizes."""
    if (held_softmax["scaling law"] and held_softmax["fidelity"]) or not (held_paper["scaling law"] and held_paper["fidelity"]):
        return "."
    return (". A softmax layer divides each query's attention weights by their sum, so the scalars its weights carry are "
            f"not the step sizes of a linear layer: read as if they were, they give η = {sm['eta']:.3g} and "
            f"γ = {sm['gamma']:.3g}, and the iteration built from them has fidelity {sm['fidelity']:.1e}"
            + (", far from the model's activations." if sm["fidelity"] > 1 else "."))


def softmax_linear(read: dict) -> str:
    """Whether the linear model's prediction is closest to the same algorithm as the softmax model's."""
    if nearest(read["softmax"]).split()[0] == nearest(read["paper"]).split()[0] != "neither":
        return f"so is the linear model's ({read['paper']['eagle']:.2f} and {read['paper']['gd']:.2f} to EAGLE and GD)."
    return f"the linear model's is closest to {nearest(read['paper'])}."


def median_order(orders: Sequence[float]) -> float:
    """The median over seeds of an order of convergence, NaN seeds left out (NaN when every seed is)."""
    return float(np.nanmedian(orders)) if np.isfinite(orders).any() else float("nan")


def gamma_spread(gamma_layers: Sequence[Sequence[float]]) -> float:
    """The largest over the smallest per-layer γ_ℓ of the medians over seeds (NaN when γ_ℓ changes sign)."""
    med_g = np.median(gamma_layers, axis=0)
    return float(np.max(med_g) / np.min(med_g)) if np.min(med_g) > 0 else float("nan")


def gamma_spread_story(spreads: Sequence[float]) -> str:
    return ", ".join(f"{v:.2g} times the smallest" if np.isfinite(v) else "of the other sign than the smallest"
                     for v in spreads)


def depth8_reading(read: dict, held8: Mapping[str, bool]) -> str:
    """What the 8-layer model's prediction is closest to, and how that compares with the 4-layer model."""
    return (nearest(read["depth8"]) + (", though its structure test fails" if not held8["structure"] else "")
            + (f"; the 4-layer model's sits {read['paper']['eagle']:.2f} from 4 iterations of EAGLE"
               if read["depth8"]["eagle"] < read["paper"]["eagle"] else ""))


def norm_spread_story(spread8: float, spread4: float) -> str:
    """Whether a few prompts set η and γ in the deep layers (the 8-layer spread over 10× the 4-layer one)."""
    return ("a few prompts grow far beyond the others in the deep layers, and they set η and γ there."
            if spread8 > 10 * spread4 else "within a factor 10 of the 4-layer model's.")


def rate(p: float) -> str:
    """An order of convergence in words."""
    return ("quadratic or faster (doubly exponential)" if p >= 1.5 else "between linear and quadratic"
            if p >= 1.2 else "about linear (a constant factor per layer)" if p >= 0.8 else "slower than linear")


def burnin_story(p_first: float, p_tail: float, kappa: float, s: int, iterations: int) -> str:
    """The end of the Theorem-1 sentence: where EAGLE's order is below 1.5 over the first ``iterations`` and at
    least 1.5 in its tail, the burn-in explains it."""
    if not p_first < 1.5 <= p_tail:
        return "."
    return (": its doubly exponential phase begins only after a burn-in, which Theorem 1 bounds by a multiple of "
            f"log κ(A) (these prompts' A have a median κ of {kappa:.3g} over their {s} nonzero singular values), so "
            f"{iterations} iterations do not reach it.")


def noise_summary(nmse: dict, keys: Sequence[str]) -> dict:
    """The best model on noisy and on clean prompts, the half-noise over the all-noise model's error on noisy
    prompts, and how many times better than zero the best is on noisy prompts and the reference on clean ones."""
    best = {name: min(keys, key=lambda k: nmse[k, name]) for name in ("noisy", "clean")}
    return dict(best=best, half_over_all=nmse["noise_half", "noisy"] / nmse["noise_all", "noisy"],
                zero_best=nmse["zero", "noisy"] / nmse[best["noisy"], "noisy"],
                clean_ref=nmse["zero", "clean"] / nmse["paper", "clean"])


def noise_best(best: Mapping[str, str]) -> str:
    if best["noisy"] == best["clean"]:
        return f"On noisy prompts and on clean ones the best model is the one trained with {CH[best['noisy']].label}."
    return (f"On noisy prompts the best model is the one trained with {CH[best['noisy']].label}; on clean prompts, the "
            f"one trained with {CH[best['clean']].label}.")


def noise_zero_story(zero_best: float, clean_ref: float) -> str:
    """The end of the beats-zero sentence: where noise, not the model, keeps the best model under the test."""
    if zero_best < beyond.BEATS_ZERO_MIN <= clean_ref:
        return (f", below the beats-zero test's {beyond.BEATS_ZERO_MIN:g}, while on clean prompts the reference is "
                f"{clean_ref:.3g} times better: the noise in A, B, C, under either protocol, limits it.")
    return "."


def floor_summary(ftm: dict) -> dict:
    """The target closest to the model's prediction; the computable completion nearest the truth; the oracle's
    reduction (predicting zero over the low-rank part of D, both against the true D)."""
    closest = min(ftm, key=lambda t: ftm[t]["model"])
    best = min([t for t in ftm if "Nyström" in t], key=lambda t: ftm[t]["vs_truth"])   # what a solver can compute
    return dict(closest=closest, best=best, ceiling=ftm["zero matrix"]["vs_truth"] / ftm["low-rank part of D"]["vs_truth"])


def floor_ceiling_story(ceiling: float) -> str:
    if ceiling < beyond.BEATS_ZERO_MIN:
        return (f", below the beats-zero test's {beyond.BEATS_ZERO_MIN:g}: on these data the test asks for more than the "
                "oracle achieves.")
    return "."


def yes_no(verdicts: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """The changes whose headline answer is yes and those whose answer is no (``verdicts``: change → its headline
    row's verdict)."""
    return ([k for k in ANSWERED if verdicts[k] == "reproduced"], [k for k in ANSWERED if verdicts[k] == "not reproduced"])


def near_eagle(read_k: Mapping[str, float], read_ref: Mapping[str, float]) -> bool:
    """Whether a prediction is nearer EAGLE's than gradient descent's and about as near as the reference's, or nearer
    (within :data:`NEAR` times the reference's distance)."""
    d = read_k["eagle"]
    return bool(d < 1 and d <= read_k["gd"] and d <= NEAR * read_ref["eagle"])


def eagle_story(read_k: Mapping[str, float], read_ref: Mapping[str, float]) -> str:
    """Where a model's prediction sits, by the readings table: its distance to EAGLE's against the reference's, or
    that gradient descent's is nearer."""
    d, g, r = read_k["eagle"], read_k["gd"], read_ref["eagle"]
    if min(d, g) >= 1:
        return "its prediction is no nearer EAGLE's or gradient descent's than predicting zero is"
    if g < d:
        return f"its prediction sits nearer gradient descent's ({g:.2f}) than EAGLE's ({d:.2f}; the reference's: {r:.2f})"
    if d <= r:
        return f"its prediction sits {d:.2f} from EAGLE's, closer than the reference's {r:.2f}"
    if near_eagle(read_k, read_ref):
        return f"its prediction sits {d:.2f} from EAGLE's, about as close as the reference's {r:.2f}"
    return f"its prediction sits {d:.2f} from EAGLE's, further than the reference's {r:.2f}"


def verdict_story(verdicts: Mapping[str, str], read: Mapping[str, Mapping[str, float]],
                  held: Mapping[str, Mapping[str, bool]]) -> tuple[str, str, str]:
    """Under how many changes the headline answer is yes, under which it is no (each with what its failed tests
    and the readings table say), and a last sentence for the others: (yes, no, end).  ``held``: the tests held
    by each change's headline test."""
    yes, no = yes_no(verdicts)
    why_no = lambda k: ("the structure test fails" if not held[k]["structure"] else "no test holds")
    no_items = [f"{CH[k].label} ({why_no(k)}, {'yet' if near_eagle(read[k], read['paper']) else 'and'} "
                f"{eagle_story(read[k], read['paper'])})" for k in no]
    partly = [k for k in ANSWERED if verdicts[k] == "partly"]
    unjudged = [k for k in ANSWERED if verdicts[k] not in ("reproduced", "partly", "not reproduced")]
    end = []
    if partly:
        end.append(f"Under {len(partly)} the structure is there but not all four tests hold")
    if unjudged:
        end.append(f"under {len(unjudged)} ({'; '.join(CH[k].label for k in unjudged)}) the answer is not judged: "
                   "a resample of the seeds changes it")
    return (f"{len(yes)} of the {len(QUESTIONS)} changes" + (f" ({'; '.join(CH[k].label for k in yes)})" if yes else ""),
            f"{len(no)}" + (f": {'; '.join(no_items)}" if no else ""),
            (". " + "; ".join(end) + "." if end else ".").replace(". under", ". Under"))


def no_near_story(verdicts: Mapping[str, str], read: Mapping[str, Mapping[str, float]]) -> str:
    """For the findings: whether the changes answered no still predict as close to EAGLE as the reference (named
    where there are at most three)."""
    no = yes_no(verdicts)[1]
    near = [k for k in no if near_eagle(read[k], read["paper"])]
    if not near:
        return ""
    who = f" ({'; '.join(CH[k].label for k in near)})" if len(near) <= 3 else ""
    if len(no) == 1:
        return f", though its prediction{who} sits as close to EAGLE's as the reference's, or closer"
    return (f", though the prediction of {len(near)} of them{who} sits" if len(near) == 1 else
            f", though the predictions of {len(near)} of them{who} sit") + " as close to EAGLE's as the reference's, or closer"


def unjudged_story(verdicts: Mapping[str, str]) -> str:
    """For the findings: how many answers are not judged (a resample of the seeds changes them)."""
    m = sum(verdicts[k] not in ("reproduced", "partly", "not reproduced") for k in ANSWERED)
    return "" if not m else f" ({m} more not judged: resampling the seeds changes {'its' if m == 1 else 'their'} answer)"


def order_story(p_model: float, p_eagle: float, eagle_verdict: str) -> str:
    """What the 8-layer model's order says beside EAGLE's own on the same prompts and iterations."""
    faster = ("faster than EAGLE's" if p_model > p_eagle else "no faster than EAGLE's") if np.isfinite(p_model) and \
        np.isfinite(p_eagle) else "not comparable with EAGLE's"
    if eagle_verdict != "reproduced":
        return (f"the model's error falls {faster}, but EAGLE itself does not fall doubly exponentially over these "
                "iterations, so the question is not a test of Theorem 1's rate at this depth")
    return f"EAGLE itself falls doubly exponentially here, and the model's error falls {faster}"


def stability_story(rows: Mapping[str, Mapping]) -> str:
    """The headline rows' resampling over the seeds, in one clause (``rows``: label → recorded row)."""
    shaky = [f"{label} ({stability.phrase(r.get('stability')).removeprefix('its verdict is ')})"
             for label, r in rows.items() if r.get("stability") and not r["stability"]["share"] <= stability.FLIP_SHARE]
    n = next((r["stability"]["n"] for r in rows.values() if r.get("stability")), 0)
    if not shaky:
        return f"every answer is stable under resampling the {n} seed{'s' if n != 1 else ''}"
    return f"resampling the {n} seeds changes {len(shaky)} answer{'s' if len(shaky) > 1 else ''}, not judged: " + "; ".join(shaky)


def sized_story(m: Mapping[str, float]) -> tuple[float, float]:
    """A change's median off-structure masses (W_QK, W_VP) converted to the reference's size."""
    return (beyond.sized_mass(m["offdiag_qk"], "qk", m["n"], m["n_prime"]),
            beyond.sized_mass(m["offdiag_vp"], "vp", m["n"], m["n_prime"]))


# ----------------------------------------------------------------------------------------- bookkeeping
def used(probe_cfgs, cfgs: dict) -> dict:
    """Every cached model the chapter used, by name (its provenance)."""
    return {f"train SGD probe lr {c.lr:g}": c for c in probe_cfgs} | {f"train {k} seed {s}": c for (k, s), c in cfgs.items()}


def recorded(stats: dict, seeds: Sequence[int], orders: Mapping[str, Sequence[float]]) -> dict:
    """The values of chapter 11's declared comparisons (:mod:`eaglebook.comparisons.c11_beyond`), each resampled
    over the seeds (:class:`eaglebook.stability.Resampled`): ``stats``: (change, seed) → :func:`eaglebook.beyond.assess`;
    ``orders``: "model" and "eagle" → the 8-layer order per seed."""
    per = {k: [stats[k, s] for s in seeds] for k in ANSWERED}
    out = {f"C11_{k}_same": beyond.resampled_score(per[k], seeds) for k in ANSWERED}
    out |= {f"C11_{k}_same_sized": beyond.resampled_score(per[k], seeds, sized=True) for k in ANSWERED if beyond.resized(CH[k])}
    return out | {"C11_depth8_order": Resampled(list(orders["model"]), median_order, unit="seeds", names=list(seeds)),
                  "C11_depth8_order_eagle": Resampled(list(orders["eagle"]), median_order, unit="seeds", names=list(seeds))}


def sized_results(med: dict) -> dict:
    """For each change of the products' size: (the tests held, the score) with the structure test at the
    reference's size, on the medians over seeds."""
    return {k: (beyond.tests_held(m, sized=True), beyond.same_algorithm(m, sized=True))
            for k, m in med.items() if CH[k].claim and beyond.resized(CH[k])}


def glued(*, profile, seeds, lr_sgd: float, med: dict, held: dict, score: dict, minutes: dict, read: dict,
          spread: dict, p_model: float, p_eagle: float, p_t1_first: float, p_t1_tail: float, kappa8: float, s8: int,
          L8: int, nmse: dict, noise_keys: Sequence[str], ftm: dict, ledger) -> dict:
    """Everything chapter 11's prose quotes, by key (``ledger``: the chapter's, its comparisons recorded)."""
    rows = ledger.comparisons
    answer = lambda key: answer_text(rows[key])
    ns, fs = noise_summary(nmse, noise_keys), floor_summary(ftm)
    sized = sized_results(med)
    verdicts = {k: rows[headline(k)]["verdict"] for k in ANSWERED}
    held_head = {k: sized[k][0] if k in sized else held[k] for k in ANSWERED}
    yes, no, end = verdict_story(verdicts, read, held_head)
    out = dict(
        C11_n_seeds=len(seeds), C11_n_changes=len(QUESTIONS), C11_steps=beyond.base_config(profile).steps,
        C11_structure_max=beyond.STRUCTURE_MAX, C11_law_factor=beyond.LAW_FACTOR, C11_eta=beyond.ETA,
        C11_gamma=beyond.GAMMA, C11_fidelity_max=beyond.FIDELITY_MAX, C11_beats_zero_min=beyond.BEATS_ZERO_MIN,
        C11_structure_n=beyond.STRUCTURE_SIZE[0], C11_structure_n_prime=beyond.STRUCTURE_SIZE[1],
        C11_sized_declared=beyond.SIZED_WHEN, C11_near=NEAR, C11_resamples=stability.RESAMPLES,
        C11_flip_pct=100 * stability.FLIP_SHARE, C11_sized_changes="; ".join(CH[k].label for k in sized) or "none",
        C11_lr_sgd=lr_sgd, C11_ref_score=score["paper"], C11_ref_story=ref_story(held["paper"]),
        C11_softmax_closest=nearest(read["softmax"]), C11_softmax_structure=softmax_structure(held["softmax"]),
        C11_softmax_scalars=softmax_scalars(med["softmax"], held["softmax"], held["paper"]),
        C11_softmax_linear=softmax_linear(read),
        C11_p_model=p_model, C11_p_eagle=p_eagle, C11_p_t1_first=p_t1_first, C11_p_t1_tail=p_t1_tail,
        C11_rate_model=rate(p_model), C11_rate_eagle=rate(p_eagle), C11_depth8_order_answer=answer("C11_depth8_order"),
        C11_depth8_order_eagle_answer=answer("C11_depth8_order_eagle"),
        C11_order_story=order_story(p_model, p_eagle, rows["C11_depth8_order_eagle"]["criterion_verdict"]),
        C11_gamma_spread_story=gamma_spread_story([spread[k] for k in ("depth2", "paper", "depth8")]),
        C11_depth8_reading=depth8_reading(read, held["depth8"]),
        C11_norm_spread_story=norm_spread_story(med["depth8"]["norm_spread"], med["paper"]["norm_spread"]),
        C11_L8=L8, C11_L8_twice=2 * L8, C11_kappa8=kappa8, C11_burnin_story=burnin_story(p_t1_first, p_t1_tail, kappa8, s8, L8),
        C11_scale_cost=minutes["scale"] / minutes["paper"],
        C11_noise_best=noise_best(ns["best"]), C11_noise_half_over_all=ns["half_over_all"],
        C11_noise_zero_best=ns["zero_best"], C11_noise_zero_story=noise_zero_story(ns["zero_best"], ns["clean_ref"]),
        C11_floor_closest=fs["closest"], C11_floor_best_candidate=fs["best"],
        C11_floor_best_candidate_mse=ftm[fs["best"]]["vs_truth"], C11_floor_model_mse=ftm["true D"]["model"],
        C11_floor_model_vs="lower still" if ftm["true D"]["model"] < ftm[fs["best"]]["vs_truth"] else "higher",
        C11_floor_ceiling=fs["ceiling"], C11_floor_ceiling_story=floor_ceiling_story(fs["ceiling"]),
        # the model's reduction on the floor table's own prompts: its zero-matrix row over its true-D row
        C11_floor_model_reduction=ftm["zero matrix"]["vs_truth"] / ftm["true D"]["model"],
        C11_floor_structure="holds" if held["floor"]["structure"] else "fails",
        C11_yes_story=yes, C11_no_story=no, C11_others_story=end,
        C11_n_yes=len(yes_no(verdicts)[0]), C11_n_no=len(yes_no(verdicts)[1]),
        C11_n_partly=sum(verdicts[k] == "partly" for k in ANSWERED),
        C11_findings_no_near=no_near_story(verdicts, read), C11_findings_unjudged=unjudged_story(verdicts),
        C11_stability_story=stability_story({CH[k].label: rows[headline(k)] for k in ANSWERED}
                                            | {"8 layers, the order": rows["C11_depth8_order"]}),
    )
    for k, m in med.items():
        out |= {f"C11_{k}_{stat}": m[stat] for stat in STAT_KEYS}
        out[f"C11_{k}_held"] = held_list(held[k])
        out[f"C11_{k}_nearest"] = nearest(read[k])
        if CH[k].claim:
            out[f"C11_{k}_eagle_story"] = eagle_story(read[k], read["paper"])
            out[f"C11_{k}_answer"] = answer(f"C11_{k}_same")
    for k, (h, _) in sized.items():
        qk, vp = sized_story(med[k])
        out |= {f"C11_{k}_sized_offdiag_qk": qk, f"C11_{k}_sized_offdiag_vp": vp, f"C11_{k}_sized_held": held_list(h),
                f"C11_{k}_sized_structure": "holds" if h["structure"] else "fails",
                f"C11_{k}_sized_answer": answer(f"C11_{k}_same_sized")}
    return out


# ----------------------------------------------------------------------------------------- figures
def _depth_style(i: int, n: int) -> dict:
    """One style per depth (2, 4, 8 layers and any other), darker for deeper models; no triangles (an open
    triangle marks a value beyond the axis)."""
    markers = ("o", "s", "D", "P", "X", "*")
    styles = ("-", "--", "-.", ":")
    return dict(color=plt.cm.viridis(0.15 + 0.7 * i / max(1, n - 1)), marker=markers[i % len(markers)],
                linestyle=styles[i % len(styles)])


def _view(values: np.ndarray, lo: float, hi: float, ref: float) -> tuple[float, float] | None:
    """The view of a log axis that shows every value inside the window [``lo``, ``hi``] and ``ref``, with a margin
    of 2×; None when no finite value lies outside the window (then the axis is left to the standard)."""
    v = values[~np.isnan(values)]
    if v.size == 0 or np.all((v >= lo) & (v <= hi)):
        return None
    inside = v[(v >= lo) & (v <= hi)]
    a = min(float(inside.min()) if inside.size else ref, ref) / 2
    b = max(float(inside.max()) if inside.size else ref, ref) * 2
    return a, b


def _plot_clipped(ax, x, y, view, st: dict, label: str) -> bool:
    """Plot ``y`` against ``x`` on ``ax``; with a ``view`` (lo, hi), values beyond it are drawn at its edge as open
    triangles (up above, down below: a value ≤ 0 lies below any log axis).  Returns whether any was clipped."""
    y = np.asarray(y, float)
    if view is None:
        ax.plot(x, y, label=label, **st)
        return False
    lo, hi = view
    above, below = y > hi, y < lo
    ax.plot(x, np.clip(y, lo, hi), label=label, markevery=list(~(above | below)), **st)   # no filled marker at the edge
    for mask, mk in ((above, "^"), (below, "v")):
        if mask.any():
            ax.plot(np.asarray(x)[mask], np.where(above, hi, lo)[mask], ls="none", marker=mk, ms=8, mfc="none",
                    mec=st["color"], mew=1.2, label="_beyond", zorder=5)
    return bool(above.any() or below.any())


def _edge_legend(ax) -> None:
    """One legend entry for the open triangles of :func:`_plot_clipped`."""
    ax.plot([], [], ls="none", marker="^", mfc="none", mec="k", ms=8, label="beyond the axis (at its edge)")


def plot_layer_constants(series: dict, *, eta: float, gamma: float, decades: float = CLIP_DECADES):
    """Per-layer constants η_ℓ (left) and γ_ℓ (right) of several models (``series``: label → (η_ℓ, γ_ℓ)),
    layer index scaled to [0, 1] so that depths compare, with the paper's η and γ (dotted).  A value more than
    ``decades`` decades from the paper's constant (a deep model's batch-max norms reach 1e250) is drawn at the
    axis edge as an open triangle, so that the other curves keep their detail."""
    fig, (a, b) = subplots(1, 2)
    clipped = False
    for k, (ax, ref, name) in enumerate(((a, eta, r"$\eta_\ell$"), (b, gamma, r"$\gamma_\ell$"))):
        cut = lambda v, L: np.asarray(v, float)[:max(1, L - 1)] if k == 0 else np.asarray(v, float)   # last η left out
        ys = [cut(pair[k], len(pair[1])) for pair in series.values()]
        view = _view(np.concatenate(ys) if ys else np.array([]), ref / 10 ** decades, ref * 10 ** decades, ref)
        for i, (label, y) in enumerate(zip(series, ys)):
            L = len(series[label][1])
            x = (np.arange(L) / max(1, L - 1))[:y.size]
            clipped |= _plot_clipped(ax, x, y, view, _depth_style(i, len(series)), label)
        ax.axhline(ref, color="k", lw=0.7, ls=":", label="paper" if ax is b else None)
        if view is not None:
            ax.set_yscale("log")
            ax.set_ylim(view[0] / 1.3, view[1] * 1.3)
        ax.set_xlabel(r"layer $\ell / (L-1)$")
        ax.set_ylabel(f"{name} (batch-max norm)")
        log_if_wide(ax, "y")
    if clipped:
        _edge_legend(b)
    legend_outside(b)
    return finish(fig)


def plot_layer_errors(series: dict, *, floor: float | None = None, decades: float = CLIP_DECADES):
    """Median test MSE of the read-out −D_ℓ after each layer ℓ (log axis) for several models or readings
    (``series``: label → errors for ℓ = 0..L); ``floor``: a horizontal line (e.g. float32's resolution).  An
    error more than ``decades`` decades above the largest layer-0 error (predicting zero) is drawn at the axis
    edge as an open triangle."""
    fig, ax = subplots()
    errs = {label: np.maximum(np.asarray(e, float), 1e-300) for label, e in series.items()}
    zero = max((float(e[0]) for e in errs.values() if e.size and np.isfinite(e[0])), default=1.0)
    allv = np.concatenate(list(errs.values())) if errs else np.array([])
    top = zero * 10 ** decades
    view = None if not np.any(allv[~np.isnan(allv)] > top) else (
        max(float(np.nanmin(allv)), 1e-300) / 2, max(float(np.max(allv[allv <= top], initial=zero)), zero) * 2)
    clipped = False
    for i, (label, e) in enumerate(errs.items()):
        clipped |= _plot_clipped(ax, np.arange(e.size), e, view, _depth_style(i, len(errs)), label)
    ax.set_yscale("log")
    if view is not None:
        ax.set_ylim(view[0] / 1.3, view[1] * 1.3)
        if clipped:
            _edge_legend(ax)
    if floor is not None:
        ax.axhline(floor, color="k", lw=0.6, ls=":", label="float32 resolution")
    ax.set_xlabel(r"layer $\ell$")
    ax.set_ylabel(r"median MSE of $-D_\ell$")
    legend_outside(ax)
    return finish(fig)

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

from .. import beyond
from ..plotting import finish, legend_outside, log_if_wide, subplots
from ..scorecard import beyond_label

__all__ = ["CH", "QUESTIONS", "ANSWERED", "STAT_KEYS", "probe_table", "stats_table", "readings_table", "noise_table",
           "floor_table", "outcomes_table", "held_list", "ref_story", "nearest", "softmax_structure", "softmax_scalars",
           "softmax_linear", "median_order", "gamma_spread", "gamma_spread_story", "depth8_reading", "norm_spread_story",
           "rate", "burnin_story", "noise_summary", "noise_best", "noise_zero_story", "floor_summary", "floor_ceiling_story",
           "yes_no", "verdict_story", "used", "recorded", "glued", "plot_layer_constants", "plot_layer_errors"]

CH = {c.key: c for c in beyond.CHANGES}
#: The changes that are questions of their own (the reference, the paper's set-up, is not).
QUESTIONS = [c for c in beyond.CHANGES if c.claim]
ANSWERED = [c.key for c in QUESTIONS]
#: The statistics of :func:`eaglebook.beyond.assess` (medians over seeds) the prose quotes, per change.
STAT_KEYS = ("offdiag_qk", "offdiag_vp", "offdiag_qk_random", "eta", "gamma", "fidelity", "reduction", "norm_spread")


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


def outcomes_table(held: dict, score: dict, p_model: float, ledger) -> str:
    """Every change: the tests held, its score and answer; and the 8-layer model's rate (``ledger``: the
    chapter's, its comparisons recorded)."""
    verdicts = {k: c["verdict"] for k, c in ledger.comparisons.items()}
    mark = lambda ok: "✓" if ok else "✗"
    rows = ["The score counts the tests held, or is 0 when the structure test fails.", "",
            "| change | " + " | ".join(beyond.TESTS) + " | score | answer |", "|---|" + "---|" * (len(beyond.TESTS) + 2)]
    for k in held:
        rows.append(f"| {CH[k].label} | " + " | ".join(mark(held[k][t]) for t in beyond.TESTS)
                    + f" | {score[k]:.0f} | {beyond_label(verdicts[f'C11_{k}_same']) if CH[k].claim else '(reference)'} |")
    rows.append(f"| 8 layers: error falls doubly exponentially | | | | | p = {p_model:.2f} | "
                f"{beyond_label(verdicts['C11_depth8_order'])} |")
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


def yes_no(score: Mapping[str, float]) -> tuple[list[str], list[str]]:
    """The changes under which the same algorithm emerges (score 4) and those under which it is absent (0)."""
    return [CH[k].label for k in ANSWERED if score[k] == 4], [CH[k].label for k in ANSWERED if score[k] == 0]


def verdict_story(score: Mapping[str, float]) -> tuple[str, str, str]:
    """Under how many changes the same algorithm emerges (score 4), under how many it is absent (0), and a last
    sentence for the others: (yes, no, end)."""
    yes, no = yes_no(score)
    return (f"{len(yes)} of the {len(QUESTIONS)} changes" + (f" ({'; '.join(yes)})" if yes else ""),
            f"{len(no)}" + (f" ({'; '.join(no)})" if no else ""),
            ". Under the others the structure is there but not all four tests hold." if len(yes) + len(no) < len(QUESTIONS)
            else ".")


# ----------------------------------------------------------------------------------------- bookkeeping
def used(probe_cfgs, cfgs: dict) -> dict:
    """Every cached model the chapter used, by name (its provenance)."""
    return {f"train SGD probe lr {c.lr:g}": c for c in probe_cfgs} | {f"train {k} seed {s}": c for (k, s), c in cfgs.items()}


def recorded(score: dict, p_model: float, p_eagle: float) -> dict:
    """The values of chapter 11's declared comparisons (:mod:`eaglebook.comparisons.c11_beyond`)."""
    return {f"C11_{k}_same": score[k] for k in ANSWERED} | {"C11_depth8_order": p_model, "C11_depth8_order_eagle": p_eagle}


def glued(*, profile, seeds, lr_sgd: float, med: dict, held: dict, score: dict, minutes: dict, read: dict,
          spread: dict, p_model: float, p_eagle: float, p_t1_first: float, p_t1_tail: float, kappa8: float, s8: int,
          L8: int, nmse: dict, noise_keys: Sequence[str], ftm: dict, ledger) -> dict:
    """Everything chapter 11's prose quotes, by key (``ledger``: the chapter's, its comparisons recorded)."""
    answer = lambda key: beyond_label(ledger.comparisons[key]["verdict"])
    ns, fs = noise_summary(nmse, noise_keys), floor_summary(ftm)
    yes, no, end = verdict_story(score)
    out = dict(
        C11_n_seeds=len(seeds), C11_n_changes=len(QUESTIONS), C11_steps=beyond.base_config(profile).steps,
        C11_structure_max=beyond.STRUCTURE_MAX, C11_law_factor=beyond.LAW_FACTOR, C11_eta=beyond.ETA,
        C11_gamma=beyond.GAMMA, C11_fidelity_max=beyond.FIDELITY_MAX, C11_beats_zero_min=beyond.BEATS_ZERO_MIN,
        C11_lr_sgd=lr_sgd, C11_ref_score=score["paper"], C11_ref_story=ref_story(held["paper"]),
        C11_softmax_closest=nearest(read["softmax"]), C11_softmax_structure=softmax_structure(held["softmax"]),
        C11_softmax_scalars=softmax_scalars(med["softmax"], held["softmax"], held["paper"]),
        C11_softmax_linear=softmax_linear(read),
        C11_p_model=p_model, C11_p_eagle=p_eagle, C11_p_t1_first=p_t1_first, C11_p_t1_tail=p_t1_tail,
        C11_rate_model=rate(p_model), C11_rate_eagle=rate(p_eagle), C11_depth8_order_answer=answer("C11_depth8_order"),
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
        C11_floor_structure="holds" if held["floor"]["structure"] else "fails",
        C11_yes_story=yes, C11_no_story=no, C11_others_story=end,
        C11_n_yes=len(yes_no(score)[0]), C11_n_no=len(yes_no(score)[1]),
    )
    for k, m in med.items():
        out |= {f"C11_{k}_{stat}": m[stat] for stat in STAT_KEYS}
        out[f"C11_{k}_held"] = held_list(held[k])
        out[f"C11_{k}_nearest"] = nearest(read[k])
        if CH[k].claim:
            out[f"C11_{k}_answer"] = answer(f"C11_{k}_same")
    return out


# ----------------------------------------------------------------------------------------- figures
def _depth_style(i: int, n: int) -> dict:
    """One style per depth (2, 4, 8 layers and any other), darker for deeper models."""
    markers = ("o", "s", "^", "D", "v", "P")
    styles = ("-", "--", "-.", ":")
    return dict(color=plt.cm.viridis(0.15 + 0.7 * i / max(1, n - 1)), marker=markers[i % len(markers)],
                linestyle=styles[i % len(styles)])


def plot_layer_constants(series: dict, *, eta: float, gamma: float):
    """Per-layer constants η_ℓ (left) and γ_ℓ (right) of several models (``series``: label → (η_ℓ, γ_ℓ)),
    layer index scaled to [0, 1] so that depths compare, with the paper's η and γ (dotted)."""
    fig, (a, b) = subplots(1, 2)
    for i, (label, (eta_l, gam_l)) in enumerate(series.items()):
        st = _depth_style(i, len(series))
        L = len(gam_l)
        x = np.arange(L) / max(1, L - 1)
        a.plot(x[:max(1, L - 1)], np.asarray(eta_l)[:max(1, L - 1)], label=label, **st)
        b.plot(x, gam_l, label=label, **st)
    for ax, v, name in ((a, eta, r"$\eta_\ell$"), (b, gamma, r"$\gamma_\ell$")):
        ax.axhline(v, color="k", lw=0.7, ls=":", label="paper" if ax is b else None)
        ax.set_xlabel(r"layer $\ell / (L-1)$")
        ax.set_ylabel(f"{name} (batch-max norm)")
        log_if_wide(ax, "y")
    legend_outside(b)
    return finish(fig)


def plot_layer_errors(series: dict, *, floor: float | None = None):
    """Median test MSE of the read-out −D_ℓ after each layer ℓ (log axis) for several models or readings
    (``series``: label → errors for ℓ = 0..L); ``floor``: a horizontal line (e.g. float32's resolution)."""
    fig, ax = subplots()
    for i, (label, e) in enumerate(series.items()):
        e = np.asarray(e, float)
        ax.semilogy(np.arange(e.size), np.maximum(e, 1e-300), label=label, **_depth_style(i, len(series)))
    if floor is not None:
        ax.axhline(floor, color="k", lw=0.6, ls=":", label="float32 resolution")
    ax.set_xlabel(r"layer $\ell$")
    ax.set_ylabel(r"median MSE of $-D_\ell$")
    legend_outside(ax)
    return finish(fig)

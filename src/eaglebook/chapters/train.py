"""Chapter 3 (book/03_train.md): training each regime with the paper's recipe, its loss curves, the summary over
seeds, and the phrases its conclusions take from the data."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import config, regimes, tasks, training
from ..ledger import Check
from .. import stability
from ..stability import Resampled
from ..plotting import METHOD_STYLE, finish, legend_outside, subplots

__all__ = ["train_tail", "zero_median", "Summary", "summarise", "summary_table", "spikes", "mean_story",
           "spike_story", "glued", "recorded", "checks", "plot_training", "plot_regime_curves"]


def train_tail(run) -> float:
    """The median of the batch-mean training loss over the last 5% of the steps (skipped steps are NaN)."""
    loss = run.history["train_loss"]
    return float(np.nanmedian(loss[-max(1, len(loss) // 20):]))


def zero_median(cfg) -> float:
    """The zero predictor's median per-prompt MSE on the run's own held-out prompts."""
    Xc, _ = training.test_set(cfg)
    return float(tasks.split(Xc.double(), cfg.task).D.square().mean((-1, -2)).median())


@dataclass(frozen=True)
class Summary:
    """One regime's runs over the profile's seeds: medians over seeds (``skipped``: the sum; ``minutes``: the mean)."""

    seeds: int
    heldout: float          # held-out mean MSE
    heldoutmedian: float    # held-out median per-prompt MSE
    trainloss: float        # training-loss median over the last 5% of the steps (the paper's Fig. 9)
    frac: float             # fraction of held-out prompts worse than predicting zero
    zero: float             # the zero predictor's mean MSE
    reduction_like: float   # zero predictor's median per-prompt MSE / the model's
    skipped: int
    minutes: float


def summarise(runs: dict, profile, regime: str) -> Summary:
    """The summary of ``regime`` over the profile's seeds; ``runs`` maps (regime, seed) to a training run."""
    rs = [runs[regime, s] for s in profile.seeds]
    med = lambda f: float(np.median([f(x) for x in rs]))
    like = float(np.median([zero_median(profile.training(regime, seed=s)) / runs[regime, s].final["test_mse_median"]
                            for s in profile.seeds]))
    return Summary(len(rs), med(lambda x: x.final["test_mse_mean"]), med(lambda x: x.final["test_mse_median"]),
                   med(train_tail), med(lambda x: x.final["test_frac_worse_than_zero"]),
                   med(lambda x: x.baselines["zero_mse"]), like, sum(x.n_skipped for x in rs),
                   float(np.mean([x.seconds for x in rs])) / 60)


def summary_table(summary: dict[str, Summary]) -> str:
    rows = ["Medians over seeds, except the skipped steps (their sum over the seeds) and the minutes (their mean):", "",
            "| regime | seeds | held-out MSE, mean | held-out MSE, median per prompt | worse than zero | training-loss "
            "median (the paper's Fig. 9) | skipped steps (sum) | minutes per run (mean) |", "|---|---|---|---|---|---|---|---|"]
    for r, s in summary.items():
        rows.append(f"| {r} | {s.seeds} | {s.heldout:.3g} | {s.heldoutmedian:.3g} | {100 * s.frac:.2f}% | "
                    f"{s.trainloss:.3g} | {s.skipped} | {s.minutes:.1f} |")
    return "\n".join(rows)


def spikes(history: dict) -> tuple[float, float]:
    """Over the second half of training: the largest batch loss over the median batch loss, and the largest
    ratio of the mean test MSE to the median test MSE at an evaluation."""
    loss = history["train_loss"]
    tail = loss[len(loss) // 2:]
    half = len(history["eval_step"]) // 2
    return (float(np.nanmax(tail) / np.nanmedian(tail)),
            float(np.nanmax(history["test_mse_mean"][half:] / history["test_mse_median"][half:])))


def mean_story(summary: dict[str, Summary]) -> tuple[float, str, str]:
    """How far the held-out mean strays from the median (the largest mean/median over regimes, its regime) and
    the sentence ending that says what follows: within 2× it "stays close", otherwise a few prompts decide it."""
    ratio = {r: s.heldout / s.heldoutmedian for r, s in summary.items()}
    worst = max(ratio, key=ratio.get)
    m = ratio[worst]
    text = (f"stays close to the median in every regime (within a factor of {m:.2g}, {worst}): in these runs the "
            "diverging prompts are too rare to move it" if m < 2 else
            f"is up to {m:.3g} times the median ({worst}): a few diverging prompts decide it, which is why it gets no verdict")
    return m, worst, text


def spike_story(spike: float) -> str:
    """How the chosen run's loss spikes, by its largest second-half batch loss over the median: under 3× no marked
    spikes; under 100× spikes; beyond, it diverges on some batches (orders of magnitude, not a spike)."""
    if spike < 3:
        return f"the chosen run shows no marked spikes (its largest batch loss in the second half is only {spike:.3g} times the median)"
    if spike < 100:
        return f"the chosen run's loss spikes too (its largest batch loss in the second half of training is {spike:.3g} times the median)"
    return (f"the chosen run does more than spike: on some batches the loss diverges, its largest batch loss in the second "
            f"half of training being {spike:.3g} times the median")


def skipped(runs: dict) -> tuple[int, int, str]:
    """Non-finite steps skipped: the total over every run, the most in one run, and that run ("sketched, seed 3")."""
    worst = max(runs, key=lambda k: runs[k].n_skipped)
    return sum(r.n_skipped for r in runs.values()), runs[worst].n_skipped, f"{worst[0]}, seed {worst[1]}"


def per_prompt(run, cfg) -> np.ndarray:
    """The run's per-prompt test MSE on the held-out prompts of ``cfg``."""
    Xc, Xo = training.test_set(cfg)
    return training.evaluate(run.model(), Xc, Xo, cfg.task)["per_sample"]


def mean_ratio(pairs: np.ndarray) -> float:
    """mean of column 0 / mean of column 1 (the pruned model's mean test MSE over the 8-head model's)."""
    return float(np.mean(pairs[:, 0]) / np.mean(pairs[:, 1]))


def median_ratio(pairs: np.ndarray) -> float:
    """median of column 0 / median of column 1 (NaN sorted as +inf, as the training records do)."""
    med = lambda v: float(np.median(np.where(np.isnan(v), np.inf, v)))
    return med(pairs[:, 0]) / med(pairs[:, 1])


def versus_zero(mse: float, zero: float) -> str:
    """"5.6 times worse than" / "0.02 times (better than)" predicting zero, for the pruned model's mean MSE."""
    r = mse / zero
    return f"{r:.3g} times worse than predicting zero" if r > 1 else f"{r:.3g} times the error of predicting zero"


def recorded(summary: dict[str, Summary], *, runs, profile, parent, small, pairs) -> dict:
    """The values of chapter 3's declared comparisons (:mod:`eaglebook.comparisons.c03_train`): the headlines
    resampled over seeds, the pruning ratios over the held-out prompts (``pairs``: per prompt, pruned and 8-head
    MSE) (:class:`eaglebook.stability.Resampled`)."""
    out = {}
    for r, s in summary.items():
        for stat in ("heldout", "trainloss", "heldoutmedian"):
            out[f"C3_{r}_final_mse_{stat}"] = getattr(s, stat)
            out[f"C3_{r}_reduction_{stat}"] = s.zero / getattr(s, stat)
        out[f"C3_{r}_reduction_heldoutmedian_like"] = s.reduction_like
        seeds = list(profile.seeds)
        per_seed = np.array([[train_tail(runs[r, k]), runs[r, k].baselines["zero_mse"]] for k in seeds])
        out[f"C3_{r}_final_mse_trainloss"] = Resampled(per_seed[:, 0], np.median, unit="seeds", names=seeds)
        out[f"C3_{r}_reduction_trainloss"] = Resampled(
            per_seed, lambda v: float(np.median(v[:, 1]) / np.median(v[:, 0])), unit="seeds", names=seeds)
    out["C3_prune_ratio"] = Resampled(pairs, mean_ratio)
    out["C3_prune_ratio_median"] = Resampled(pairs, median_ratio)
    return out


def checks(run, profile, regime: str, seed: int) -> list[Check]:
    """The chosen run must beat predicting zero by the profile's factor (median per-prompt error: robust)."""
    gain = run.baselines["zero_mse"] / run.final["test_mse_median"]
    return [Check(f"C3_{regime}_beats_zero", gain, lower=profile.tol.beats_zero(regime),
                  what=f"zero-predictor MSE / median test MSE ({regime}, seed {seed})")]


def glued(*, run, runs, summary, parent, small, pr, pcfg, profile, regime: str, ledger) -> dict:
    """Everything chapter 3's prose quotes, by key (``ledger``: the chapter's, its comparisons recorded)."""
    spike, jumps = spikes(run.history)
    zero_all = float(np.median([s.zero for s in summary.values()]))
    m, worst, story = mean_story(summary)
    skipped_total, skipped_max, skipped_max_run = skipped(runs)
    return dict(
        C3_n_runs=len(config.REGIMES) * len(profile.seeds) + 1, C3_train_minutes=run.seconds / 60,
        C3_skipped=run.n_skipped, C3_beats_zero=run.baselines["zero_mse"] / run.final["test_mse_median"],
        C3_beats_zero_bound=profile.tol.beats_zero(regime), C3_spike_ratio=spike, C3_mean_over_median=jumps,
        C3_frac_worse=100 * run.final["test_frac_worse_than_zero"], C3_zero_mse=zero_all,
        C3_zero_over_paper=zero_all / 1e-3, C3_zero_over_paper_fits="inside" if 10 <= zero_all / 1e-3 <= 50 else "outside",
        C3_mean_over_median_max=m, C3_mean_over_median_regime=worst, C3_mean_story=story, C3_spike_story=spike_story(spike),
        C3_prune_before_ratio=pr["before_finetune"]["median"] / parent.final["test_mse_median"],
        C3_eval_size=run.cfg.eval_size,
        C3_finetune_steps=pcfg.finetune_steps,
        C3_minutes_by_regime=", ".join(f"{r} {np.median([runs[r, s].seconds for s in profile.seeds]) / 60:.1f}"
                                       for r in config.REGIMES),
        C3_minutes_8head=parent.seconds / 60,
        C3_total_hours=(sum(x.seconds for x in runs.values()) + parent.seconds) / 3600,
        C3_findings_final_mse=ledger.verdict_phrase("final-mse"), C3_findings_reduction=ledger.verdict_phrase("mse-reduction"),
        C3_findings_prune=ledger.comparisons["C3_prune_ratio_median"]["criterion_verdict"],
        C3_skipped_total=skipped_total, C3_n_regime_runs=len(runs), C3_skipped_max=skipped_max,
        C3_skipped_max_run=skipped_max_run,
        C3_spike_max=max(spikes(x.history)[0] for x in runs.values()),
        C3_prune_mean=small.final["test_mse_mean"], C3_parent_mean=parent.final["test_mse_mean"],
        C3_prune_versus_zero=versus_zero(small.final["test_mse_mean"], small.baselines["zero_mse"]),
        C3_prune_stability=stability.phrase(ledger.comparisons["C3_prune_ratio"]["stability"]))


def _rolling_median(x: np.ndarray, w: int) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if len(x) < w:
        return x
    from numpy.lib.stride_tricks import sliding_window_view
    out = np.nanmedian(sliding_window_view(x, w), axis=-1)
    return np.concatenate([np.full(w - 1, np.nan), out])


def plot_training(history: dict, baselines: dict, *, label: str = "transformer"):
    """Left: training loss per step (faint) and its rolling median; skipped steps marked.
    Right: held-out test MSE (mean and median per sample) with the zero and Nyström baselines.
    One legend for both panels, below them."""
    fig, (ax1, ax2) = subplots(1, 2, height=3.4, sharey=True)
    loss = np.asarray(history["train_loss"], dtype=float)
    steps = np.arange(1, len(loss) + 1)
    ax1.semilogy(steps, loss, color="#bbbbbb", lw=0.4, label="train loss (batch mean)")
    ax1.semilogy(steps, _rolling_median(loss, max(5, len(loss) // 200)), color=METHOD_STYLE["transformer"]["color"],
                 lw=1.2, label="rolling median")
    for i, s in enumerate(history["skipped"]):
        ax1.axvline(s + 1, color="#CC79A7", lw=0.6, alpha=0.6, label="skipped step" if i == 0 else None)
    ax1.set_xlabel("step")
    ax1.set_ylabel("MSE on $D$")
    es = history["eval_step"]
    ax2.semilogy(es, history["test_mse_mean"], marker=".", ms=3, label="test MSE, mean", **METHOD_STYLE["transformer"])
    ax2.semilogy(es, history["test_mse_median"], marker=".", ms=3, color=METHOD_STYLE["EAGLE"]["color"],
                 label="test MSE, median per sample")
    ax2.axhline(baselines["zero_mse"], label="predict zero", **METHOD_STYLE["zero"])
    if baselines["nystrom_mse"] > 0:
        ax2.axhline(max(baselines["nystrom_mse"], 1e-12), label="Nyström (exact)", **METHOD_STYLE["Nyström"])
    ax2.set_xlabel("step")
    legend_outside(fig, where="below")
    return finish(fig)


def plot_regime_curves(runs: dict, *, key: str = "test_mse_median", ylabel: str = "test MSE (median per sample)"):
    """One curve per (regime, seed) run of ``key`` against step; colour and line style by regime."""
    fig, ax = subplots()
    seen = set()
    for (regime, _seed), run in runs.items():
        h = run.history
        ax.semilogy(h["eval_step"], h[key], lw=0.9, alpha=0.8, label=None if regime in seen else regime,
                    **regimes.get(regime).style)
        seen.add(regime)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    legend_outside(ax)
    return finish(fig)



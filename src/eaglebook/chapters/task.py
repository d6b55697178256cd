"""Chapter 1 (book/01_task.md): the masked-block completion task, its checks, the tail of ‖A‖₂ and the
chapter's figures (a prompt's blocks, the mask and the regimes, the tail)."""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from ..ledger import Check
from ..plotting import METHOD_STYLE, finish, heatmap, legend_outside, subplots

__all__ = ["setting_phrase", "tail_shape", "checks", "glued", "plot_blocks", "plot_mask_and_regimes", "plot_tail"]


def setting_phrase(task) -> str:
    """The task's shapes and distribution, as the findings quote them."""
    return (f"n = {task.n}, d = {task.d}, n′ = {task.n_prime}, d′ = {task.d_prime}, rank s = {task.s}, "
            f"α = {task.alpha:g}")


def tail_shape(ratio: float, factor: float) -> str:
    """The tail's shape from the observed excess of the maximum over the median, as a multiple ``ratio`` of an
    exponential tail's: light below 1/``factor``, heavy above ``factor``, about exponential between."""
    if ratio < 1 / factor:
        return "light: lighter than an exponential tail"
    if ratio > factor:
        return "heavy: heavier than an exponential tail"
    return "about exponential: neither clearly lighter nor clearly heavier than an exponential tail"


def checks(task, *, ranks, nystrom_rel: float, tol, ols_gap: float, kappa_err: float, generator_rank: int) -> list[Check]:
    """The task's properties: every X has rank s, the completion is exact on noiseless X, scalar regression is
    its d' = n' = 1 case, and the test-problem generator hits the requested κ and rank 40."""
    return [Check("C1_rank_min", ranks.min().item(), lower=task.s, upper=task.s, what="min rank(X) over the batch"),
            Check("C1_rank_max", ranks.max().item(), lower=task.s, upper=task.s, what="max rank(X) over the batch"),
            Check("C1_nystrom_rel_err", nystrom_rel, upper=tol.nystrom_rel_err,
                  what="max relative error of B A^† C on noiseless X (float64)"),
            Check("C1_scalar_ols_gap", ols_gap, upper=1e-12, what="|Nyström − OLS prediction|, d' = n' = 1"),
            Check("C1_kappa_rel_err", kappa_err, upper=tol.kappa_rel_err, what="max |κ(A)/κ − 1| of the generator"),
            Check("C1_generator_rank", generator_rank, lower=40, upper=40, what="rank of generated A (asked 40)")]


def glued(task, *, mse_noisy: float, mse_zero: float, n_samples: int, quantiles, excess, factor: float,
          tail: str) -> dict:
    """Everything chapter 1's prose quotes beyond its checks: the noisy completion's error, and the tail of ‖A‖₂
    (``quantiles``: median, 99th percentile, maximum; ``excess``: the maximum's distance from the median,
    observed, by the exponential tail and by the Gaussian tail through the same two quantiles)."""
    assert mse_noisy > mse_zero, "prose: on noisy prompts the pseudo-inverse amplifies the noise past predicting zero"
    q50, q99, qmax = quantiles
    obs, expo, gauss = excess
    return dict(C1_noisy_nystrom_mse=mse_noisy, C1_zero_mse=mse_zero,
                C1_normA_median=q50, C1_normA_q99=q99, C1_normA_max=qmax, C1_normA_max_over_median=qmax / q50,
                C1_n_norm_samples=n_samples, C1_normA_gap=q99 - q50, C1_obs_excess=obs, C1_expo_excess=expo,
                C1_expo_max=q50 + expo, C1_gauss_excess=gauss, C1_tail_ratio=obs / expo, C1_tail_factor=factor,
                C1_tail=tail, C1_tail_word=tail.split(":")[0], C1_task_setting=setting_phrase(task))


def plot_blocks(X, task, *, title: str = "X"):
    """Heat map of one matrix X with its A | C / B | D blocks outlined and labelled."""
    fig, ax = subplots(height=3.4)
    heatmap(ax, X, label="entry", aspect="auto")
    ax.axhline(task.d - 0.5, color="k", lw=1.2)
    ax.axvline(task.n - 0.5, color="k", lw=1.2)
    for label, (r, c) in {"A": (task.d / 2, task.n / 2), "C": (task.d / 2, task.n + task.n_prime / 2),
                          "B": (task.d + task.d_prime / 2, task.n / 2),
                          "D": (task.d + task.d_prime / 2, task.n + task.n_prime / 2)}.items():
        ax.text(c - 0.5, r - 0.5, label, ha="center", va="center", fontsize=10, weight="bold",
                color="k", bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.7))
    ax.set_xlabel(f"features: n + n' = {task.n + task.n_prime} columns")
    ax.set_ylabel(f"tokens: d + d' = {task.d + task.d_prime} rows")
    return finish(fig)


def plot_mask_and_regimes(task, *, mask, r: int, owner):
    """Top left: the token mask ``mask``.  The other three: which entries of W_Q W_Kᵀ (features × features)
    each regime may use; a 2 × 2 grid so that the panel titles have room."""
    fig, axes = subplots(2, 2, height=4.8)
    axes = axes.ravel()
    M = np.asarray(mask)
    im = axes[0].imshow(M, cmap="Greys", vmin=0, vmax=1, interpolation="nearest", aspect="auto")
    cb = fig.colorbar(im, ax=axes[0], ticks=[0, 1], shrink=0.85)
    cb.ax.set_yticklabels(["masked", "attends"])
    axes[0].set_title("mask $M$ (query × key)")
    N = task.n + task.n_prime
    g = np.random.default_rng(0)  # schematic only: one random product Q Kᵀ, full rank and rank r
    full = np.abs(g.standard_normal((N, N)) @ g.standard_normal((N, N))) / N
    rank_r = np.abs(g.standard_normal((N, r)) @ g.standard_normal((r, N))) / r
    feats = np.concatenate([owner, -np.ones(task.n_prime, dtype=int)])
    M_ = int(np.max(owner)) + 1
    dist = np.zeros((N, N))
    for mu in np.unique(owner):
        sel = (feats == mu) | (feats < 0)
        dist[np.ix_(sel, sel)] = mu + 1
    vmax = max(full.max(), rank_r.max())
    for ax, W, t in ((axes[1], full, "unconstrained: any $W_Q W_K^\\top$"),
                     (axes[2], rank_r, f"sketched: rank $\\leq r = {r}$")):
        im = ax.imshow(W, cmap="Blues", vmin=0, vmax=vmax, interpolation="nearest", aspect="auto")
        fig.colorbar(im, ax=ax, shrink=0.85, label="|entry| (example)")
        ax.set_title(t)
    cmap = mpl.colors.ListedColormap(["#f2f2f2"] + [plt.cm.tab10(i % 10) for i in range(M_)])
    im = axes[3].imshow(dist, cmap=cmap, vmin=-0.5, vmax=M_ + 0.5, interpolation="nearest", aspect="auto")
    cb = fig.colorbar(im, ax=axes[3], ticks=range(M_ + 1), shrink=0.85)
    cb.ax.set_yticklabels(["unused"] + [f"machine {m + 1}" for m in range(M_)])
    axes[3].set_title(f"distributed: {M_} local blocks")
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
    return finish(fig)


def plot_tail(norms, *, xlabel: str):
    """Empirical complementary CDF P(‖A‖₂ > t) on log–log axes, with the median marked."""
    x = np.sort(np.asarray(norms))
    ccdf = 1.0 - np.arange(len(x)) / len(x)
    fig, ax = subplots()
    ax.loglog(x, ccdf, color=METHOD_STYLE["EAGLE"]["color"], label="empirical")
    ax.axvline(np.median(x), color="k", ls=":", lw=0.8, label="median")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("P(norm > t)")
    legend_outside(ax)
    return finish(fig)

"""Chapter 1 (book/01_task.md): the masked-block completion task, its checks, the tail of ‖A‖₂ and the
chapter's figures (a prompt's blocks, the mask and the regimes, the tail)."""

from __future__ import annotations

from statistics import NormalDist

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from scipy import special

from ..ledger import Check
from ..plotting import METHOD_STYLE, finish, heatmap, legend_outside, subplots

__all__ = ["setting_phrase", "tail_reading", "TAIL_SPREADS", "checks", "glued", "plot_blocks", "plot_mask_and_regimes",
           "tail_references", "plot_tail"]

#: The mask's two colours: a masked entry (a key the query may not read) and an entry it may read.
MASK_COLOURS = ("#F4A582", "#2166AC")


def setting_phrase(task) -> str:
    """The task's shapes and distribution, as the findings quote them."""
    return (f"n = {task.n}, d = {task.d}, n′ = {task.n_prime}, d′ = {task.d_prime}, rank s = {task.s}, "
            f"α = {task.alpha:g}")


#: A reference tail is excluded when the observed excess lies more than this many spreads from its prediction.
TAIL_SPREADS = 2.0
#: Distances from the two references that differ by less than this share of a spread count as "about equal".
TAIL_TIE = 0.25


def tail_reading(obs: float, *, gauss: float, expo: float, spread: float, spreads: float = TAIL_SPREADS) -> str:
    """What the largest of N samples says about the tail: the observed excess ``obs`` of the maximum over the
    median against a Gaussian (``gauss``) and an exponential (``expo``) tail's prediction, both through the
    median and the 99th percentile, given the scatter ``spread`` of the largest sample.  Returns
    ``"<conclusion>: <the evidence>"``: a reference is excluded when ``obs`` lies more than ``spreads``
    spreads from it; "not distinguishable" when neither is."""
    refs = {"Gaussian": gauss, "exponential": expo}
    dist = {k: abs(obs - v) for k, v in refs.items()}
    near, far = sorted(dist, key=dist.get)
    lo, hi = sorted(refs, key=refs.get)
    if obs < refs[lo]:
        where = "below both references"
    elif obs > refs[hi]:
        where = "above both references"
    else:
        where = "between the two references"
    closer = ("about equally far from both" if dist[far] - dist[near] < TAIL_TIE * spread
              else f"closer to the {near} one")
    inside = [k for k in refs if dist[k] <= spreads * spread]
    if len(inside) == 2:
        word, why = "not distinguishable between Gaussian and exponential", f"both lie within {spreads:g} spreads"
    elif inside:
        word, why = f"{near}-like", f"the {far} one lies more than {spreads:g} spreads away"
    else:
        word = {"below both references": f"lighter than {lo}", "above both references": f"heavier than {hi}"}.get(
            where, f"between {lo} and {hi}")
        why = f"both lie more than {spreads:g} spreads away"
    return (f"{word}: the observed excess lies {where}, {dist[near]:.2f} from the {near} one and {dist[far]:.2f} from "
            f"the {far} one ({closer}); against a spread of {spread:.2f}, {why}")


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


def glued(task, *, mse_noisy: float, mse_zero: float, n_samples: int, quantiles, excess, spread: float,
          spreads: float, tail: str) -> dict:
    """Everything chapter 1's prose quotes beyond its checks: the noisy completion's error, and the tail of ‖A‖₂
    (``quantiles``: median, 99th percentile, maximum; ``excess``: the maximum's distance from the median,
    observed, by the exponential tail and by the Gaussian tail through the same two quantiles; ``spread``: the
    scatter of the largest sample; ``spreads``: how many spreads exclude a reference; ``tail``: the reading of
    :func:`tail_reading`)."""
    assert mse_noisy > mse_zero, "prose: on noisy prompts the pseudo-inverse amplifies the noise past predicting zero"
    q50, q99, qmax = quantiles
    obs, expo, gauss = excess
    assert gauss < expo, "prose: a Gaussian tail through the two quantiles predicts a nearer maximum than an exponential one"
    z = NormalDist()
    z_max = z.inv_cdf(1 - 1 / n_samples)        # the Gaussian maximum's Gumbel scale σ/(N φ(z_N)), against β
    assert (q99 - q50) / z.inv_cdf(0.99) / (n_samples * z.pdf(z_max)) < (q99 - q50) / np.log(50), \
        "prose: the largest sample scatters less under the Gaussian tail than under the exponential one"
    return dict(C1_noisy_nystrom_mse=mse_noisy, C1_zero_mse=mse_zero,
                C1_normA_median=q50, C1_normA_q99=q99, C1_normA_max=qmax, C1_normA_max_over_median=qmax / q50,
                C1_n_norm_samples=n_samples, C1_normA_gap=q99 - q50, C1_obs_excess=obs, C1_expo_excess=expo,
                C1_expo_max=q50 + expo, C1_gauss_excess=gauss, C1_tail_ratio=obs / expo, C1_tail_spread=spread,
                C1_tail_spreads=spreads, C1_tail=tail, C1_tail_word=tail.split(":")[0],
                C1_task_setting=setting_phrase(task))


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
    M = np.asarray(mask, dtype=float)
    im = axes[0].imshow(M, cmap=mpl.colors.ListedColormap(MASK_COLOURS), vmin=-0.5, vmax=1.5,
                        interpolation="nearest", aspect="auto")
    cb = fig.colorbar(im, ax=axes[0], ticks=[0, 1], shrink=0.85)
    cb.ax.set_yticklabels(["masked", "attends"])
    axes[0].set_title("mask $M$ (query × key)")
    axes[0].set_xlabel("key token"); axes[0].set_ylabel("query token")
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
    cmap = mpl.colors.ListedColormap(["#d0d0d0"] + [plt.cm.tab10(i % 10) for i in range(M_)])
    im = axes[3].imshow(dist, cmap=cmap, vmin=-0.5, vmax=M_ + 0.5, interpolation="nearest", aspect="auto")
    cb = fig.colorbar(im, ax=axes[3], ticks=range(M_ + 1), shrink=0.85)
    cb.ax.set_yticklabels(["unused"] + [f"machine {m + 1}" for m in range(M_)])
    axes[3].set_title(f"distributed: {M_} local blocks")
    for ax in axes:            # every panel outlined, so that a light region is not lost against the page
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
        for side in ax.spines.values():
            side.set_visible(True); side.set_color("k"); side.set_linewidth(0.8)
    return finish(fig)


def tail_references(norms):
    """The two reference tails of chapter 1 through the sample's median t₅₀ and 99th percentile t₉₉, beyond the
    median: an exponential one, P(‖A‖₂ > t) = ½ exp(−(t − t₅₀)/β) with β = (t₉₉ − t₅₀)/ln 50, and a Gaussian one,
    P = 1 − Φ((t − t₅₀)/σ) with σ = (t₉₉ − t₅₀)/z₀.₉₉.  Returns ``{name: (t, P)}``, each drawn down to P = 1/(10 N)."""
    x = np.asarray(norms, dtype=float)
    N = len(x)
    q50, q99 = np.quantile(x, [0.5, 0.99])
    beta = (q99 - q50) / np.log(50)
    sigma = (q99 - q50) / NormalDist().inv_cdf(0.99)
    t_e = q50 + np.linspace(0, beta * np.log(5 * N), 200)
    t_g = q50 + np.linspace(0, sigma * NormalDist().inv_cdf(1 - 1 / (10 * N)), 200)
    return {"exponential": (t_e, 0.5 * np.exp(-(t_e - q50) / beta)),
            "Gaussian": (t_g, 0.5 * special.erfc((t_g - q50) / (sigma * np.sqrt(2))))}


def plot_tail(norms, *, xlabel: str):
    """Empirical complementary CDF P(‖A‖₂ > t) on a log scale (t linear: an exponential tail is a straight line), with the Gaussian and the exponential tail through
    the median and the 99th percentile (:func:`tail_references`), the level 1/N at which each puts the largest of
    the N samples, and the median."""
    x = np.sort(np.asarray(norms))
    ccdf = 1.0 - np.arange(len(x)) / len(x)
    fig, ax = subplots()
    ax.semilogy(x, ccdf, color=METHOD_STYLE["EAGLE"]["color"], label="empirical")
    refs = tail_references(x)
    ax.semilogy(*refs["Gaussian"], color="#009E73", ls="--", label="Gaussian tail")
    ax.semilogy(*refs["exponential"], color="#D55E00", ls="-.", label="exponential tail")
    ax.axhline(1 / len(x), color="0.45", ls=":", lw=0.8, label="$1/N$ (largest sample)")
    ax.axvline(np.median(x), color="k", ls=":", lw=0.8, label="median")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("P(norm > t)")
    legend_outside(ax)
    return finish(fig)

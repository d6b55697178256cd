"""Figures: one style for the whole book, one colour *and* line style per method (Okabe–Ito)."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib.ticker import NullFormatter
import numpy as np

from . import regimes

FULL = (6.4, 2.6)
HALF = (3.2, 2.4)

#: Okabe–Ito colours, each with its own line style so plots survive grayscale printing.
METHOD_STYLE = {
    "EAGLE": dict(color="#0072B2", linestyle="-"),
    "transformer": dict(color="#D55E00", linestyle="--"),
    "Nyström": dict(color="#009E73", linestyle=":"),
    "zero": dict(color="#999999", linestyle="-."),
    "GD": dict(color="#E69F00", linestyle="--"),
    "CG": dict(color="#CC79A7", linestyle="-."),
    "SVD": dict(color="#000000", linestyle=":"),
    **{name: dict(regimes.get(name).style) for name in regimes.PAPER},   # each regime owns its style
}

STYLE = {
    "font.family": "serif",
    "mathtext.fontset": "cm",
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "figure.constrained_layout.use": True,
    "figure.figsize": FULL,
    "figure.dpi": 110,
    "savefig.bbox": "tight",
    "image.cmap": "RdBu_r",
}


def use_style() -> None:
    """Apply the book's matplotlib style and SVG output for the HTML book."""
    mpl.rcParams.update(STYLE)
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
        set_matplotlib_formats("svg")
    except Exception:  # outside IPython there is nothing to configure
        pass


def save(fig, name: str) -> None:
    """Write ``fig`` as PDF and PNG under ``_build/figures/`` when ``$SAVE_FIGURES`` is set."""
    if os.environ.get("SAVE_FIGURES"):
        out = Path("_build") / "figures"
        out.mkdir(parents=True, exist_ok=True)
        for ext in ("pdf", "png"):
            fig.savefig(out / f"{name}.{ext}")


def heatmap(ax, W, *, title: str = "", vmax: float | None = None, blocks: tuple[int, ...] = ()):
    """A symmetric-colour heat map of a matrix, with optional block separators at the given indices."""
    W = np.asarray(W, dtype=float)
    vmax = vmax or float(np.abs(W).max()) or 1.0
    im = ax.imshow(W, cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
    for b in blocks:
        ax.axhline(b - 0.5, color="k", lw=0.6)
        ax.axvline(b - 0.5, color="k", lw=0.6)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    if title:
        ax.set_title(title)
    return im


def plot_blocks(X, task, *, title: str = "X"):
    """Heat map of one matrix X with its A | C / B | D blocks outlined and labelled."""
    fig, ax = plt.subplots(figsize=HALF)
    heatmap(ax, X)
    ax.axhline(task.d - 0.5, color="k", lw=1.2)
    ax.axvline(task.n - 0.5, color="k", lw=1.2)
    for label, (r, c) in {"A": (task.d / 2, task.n / 2), "C": (task.d / 2, task.n + task.n_prime / 2),
                          "B": (task.d + task.d_prime / 2, task.n / 2),
                          "D": (task.d + task.d_prime / 2, task.n + task.n_prime / 2)}.items():
        ax.text(c - 0.5, r - 0.5, label, ha="center", va="center", fontsize=10, weight="bold",
                color="k", bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.7))
    ax.set_xlabel(f"features: n + n' = {task.n + task.n_prime} columns")
    ax.set_ylabel(f"tokens: d + d' = {task.d + task.d_prime} rows")
    return fig


def plot_mask_and_regimes(task, *, mask, r: int, owner):
    """Left: the token mask ``mask``.  Right three: which weight entries each regime may use (W_Q W_Kᵀ)."""
    fig, axes = plt.subplots(1, 4, figsize=(FULL[0], 1.9))
    M = np.asarray(mask)
    axes[0].imshow(M, cmap="Greys", vmin=0, vmax=1.3, interpolation="nearest")
    axes[0].set_title("mask M (query × key)")
    N = task.n + task.n_prime
    full = np.ones((N, N))
    g = np.random.default_rng(0)  # schematic only: one random rank-r product Q Kᵀ
    rank_r = np.abs(g.standard_normal((N, r)) @ g.standard_normal((r, N)))
    feats = np.concatenate([owner, -np.ones(task.n_prime, dtype=int)])
    dist = np.zeros((N, N))
    for mu in np.unique(owner):
        sel = (feats == mu) | (feats < 0)
        dist[np.ix_(sel, sel)] = mu + 1
    panels = [(full, "unconstrained: any $W_Q W_K^\\top$"),
              (rank_r, f"sketched: rank $\\leq r = {r}$"),
              (dist, f"distributed: {owner.max() + 1} local blocks")]
    for ax, (W, t) in zip(axes[1:], panels):
        ax.imshow(W, cmap="Blues" if W is not dist else "tab10", vmin=0, vmax=W.max() * 1.2 if W is not dist else 10,
                  interpolation="nearest")
        ax.set_title(t)
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
    return fig


def plot_tail(norms, *, xlabel: str):
    """Empirical complementary CDF P(‖A‖₂ > t) on log–log axes, with the median marked."""
    x = np.sort(np.asarray(norms))
    ccdf = 1.0 - np.arange(len(x)) / len(x)
    fig, ax = plt.subplots(figsize=HALF)
    ax.loglog(x, ccdf, color=METHOD_STYLE["EAGLE"]["color"])
    ax.axvline(np.median(x), color="k", ls=":", lw=0.8, label="median")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("P(norm > t)")
    ax.legend()
    return fig


def _rolling_median(x: np.ndarray, w: int) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if len(x) < w:
        return x
    from numpy.lib.stride_tricks import sliding_window_view
    out = np.nanmedian(sliding_window_view(x, w), axis=-1)
    return np.concatenate([np.full(w - 1, np.nan), out])


def plot_training(history: dict, baselines: dict, *, label: str = "transformer"):
    """Left: training loss per step (faint) and its rolling median; skipped steps marked.
    Right: held-out test MSE (mean and median per sample) with the zero and Nyström baselines."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=FULL, sharey=True)
    loss = np.asarray(history["train_loss"], dtype=float)
    steps = np.arange(1, len(loss) + 1)
    ax1.semilogy(steps, loss, color="#bbbbbb", lw=0.4, label="train loss (batch mean)")
    ax1.semilogy(steps, _rolling_median(loss, max(5, len(loss) // 200)), color=METHOD_STYLE["transformer"]["color"],
                 lw=1.2, label="rolling median")
    for s in history["skipped"]:
        ax1.axvline(s + 1, color="#CC79A7", lw=0.6, alpha=0.6)
    ax1.set_xlabel("step")
    ax1.set_ylabel("MSE on $D$")
    ax1.legend(loc="upper right")
    es = history["eval_step"]
    ax2.semilogy(es, history["test_mse_mean"], marker=".", ms=3, label="test MSE, mean", **METHOD_STYLE["transformer"])
    ax2.semilogy(es, history["test_mse_median"], marker=".", ms=3, color=METHOD_STYLE["EAGLE"]["color"],
                 label="test MSE, median per sample")
    ax2.axhline(baselines["zero_mse"], label="predict zero", **METHOD_STYLE["zero"])
    if baselines["nystrom_mse"] > 0:
        ax2.axhline(max(baselines["nystrom_mse"], 1e-12), label="Nyström (exact)", **METHOD_STYLE["Nyström"])
    ax2.set_xlabel("step")
    ax2.legend(loc="upper right")
    return fig


def plot_regime_curves(runs: dict, *, key: str = "test_mse_median", ylabel: str = "test MSE (median per sample)"):
    """One curve per (regime, seed) run of ``key`` against step; colour and line style by regime."""
    fig, ax = plt.subplots(figsize=HALF)
    seen = set()
    for (regime, _seed), run in runs.items():
        h = run.history
        ax.semilogy(h["eval_step"], h[key], lw=0.9, alpha=0.8, label=None if regime in seen else regime,
                    **regimes.get(regime).style)
        seen.add(regime)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.legend()
    return fig


def plot_products(rows: dict, *, blocks: tuple[int, ...] = ()):
    """Heat maps of per-layer weight products: ``rows`` maps a row label to a list of matrices (one per layer).
    Each panel has its own symmetric colour scale; ``blocks`` draws separators (e.g. at n)."""
    labels = list(rows)
    L = len(rows[labels[0]])
    fig, axes = plt.subplots(len(labels), L, figsize=(FULL[0], 1.45 * len(labels) + 0.3), squeeze=False)
    for i, lab in enumerate(labels):
        for l, W in enumerate(rows[lab]):
            heatmap(axes[i, l], W, blocks=blocks)
            if i == 0:
                axes[i, l].set_title(f"layer {l}")
        axes[i, 0].set_ylabel(lab, fontsize=8)
    return fig


def plot_sparsification(curve):
    """Test MSE (median and mean per sample) after sparsifying at each threshold, with and without quantisation."""
    fig, ax = plt.subplots(figsize=(FULL[0], HALF[1]))
    f = curve.factors
    ax.semilogy(f, curve.mse_median, marker="o", ms=3, label="sparsified, median", **METHOD_STYLE["EAGLE"])
    ax.semilogy(f, curve.quantized_median, marker="s", ms=3, label="+ quantised, median", **METHOD_STYLE["transformer"])
    ax.semilogy(f, curve.mse_mean, marker=".", ms=3, lw=0.8, alpha=0.6, label="sparsified, mean", color="#56B4E9")
    ax.axhline(curve.original_median, color="k", ls=":", lw=0.8, label="trained, median")
    ax.axhline(curve.zero_mse, label="predict zero", **METHOD_STYLE["zero"])
    ax.axvline(1.5, color="#999999", lw=0.6)
    ax.set_xlabel("threshold (× mean |entry|)")
    ax.set_ylabel("test MSE on $D$")
    fig.legend(fontsize=7, loc="outside right center")
    return fig


def plot_scaling(law, *, eta_paper: float, gamma_paper: float):
    """Per-layer η_ℓ = −α¹α²·max‖A_ℓ‖² and γ_ℓ = −α¹α³·max‖A_ℓ‖² with the paper's constants."""
    fig, ax = plt.subplots(figsize=HALF)
    L = len(law.eta_layer)
    ax.plot(range(L), law.eta_layer, marker="o", label=r"$\eta_\ell$", **METHOD_STYLE["EAGLE"])
    ax.plot(range(L), law.gamma_layer, marker="s", label=r"$\gamma_\ell$", **METHOD_STYLE["transformer"])
    ax.axhline(eta_paper, color=METHOD_STYLE["EAGLE"]["color"], lw=0.7, ls=":")
    ax.axhline(gamma_paper, color=METHOD_STYLE["transformer"]["color"], lw=0.7, ls=":")
    ax.set_xticks(range(L))
    ax.set_xlabel(r"layer $\ell$")
    ax.set_ylabel("constant (batch-max norm)")
    ax.legend()
    return fig


def plot_sketch_spectrum(layers):
    """Fig. 4: normalised singular values of the W_QK and W_VP data blocks per layer vs S Sᵀ for a random
    orthonormal S; right, the distribution of their entries."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=FULL)
    shade = lambda l: 0.4 + 0.45 * l / max(1, len(layers) - 1)   # later layers darker, for any number of layers
    for l, s in enumerate(layers):
        ax1.plot(s.sv_qk, color=METHOD_STYLE["EAGLE"]["color"], alpha=shade(l), lw=0.9,
                 label=r"$W_{QK}$" if l == 0 else None)
        ax1.plot(s.sv_vp, color=METHOD_STYLE["transformer"]["color"], ls="--", alpha=shade(l), lw=0.9,
                 label=r"$W_{VP}$" if l == 0 else None)
    ax1.plot(layers[0].sv_reference, color="k", ls=":", label=r"$SS^\top$, random $S$")
    ax1.set_xlabel("index")
    ax1.set_ylabel("singular value / largest")
    ax1.legend()
    bins = np.linspace(-1, 1, 41)
    ax2.hist(np.concatenate([s.entries_qk for s in layers]), bins=bins, density=True, alpha=0.5,
             color=METHOD_STYLE["EAGLE"]["color"], label=r"$W_{QK}$")
    ax2.hist(np.concatenate([s.sign * s.entries_vp for s in layers]), bins=bins, density=True, alpha=0.5,
             color=METHOD_STYLE["transformer"]["color"], label=r"$\pm W_{VP}$")
    ax2.hist(layers[0].entries_reference, bins=bins, density=True, histtype="step", color="k",
             label=r"$SS^\top$")
    ax2.set_yscale("log")
    ax2.set_xlabel("entry (normalised)")
    ax2.legend()
    return fig


VERDICT_STYLE = {"reproduced": dict(color="#009E73", marker="o"), "partly": dict(color="#E69F00", marker="s"),
                 "not reproduced": dict(color="#D55E00", marker="X"), "not judged": dict(color="#999999", marker=".")}


def plot_scorecard(points):
    """Ours against the paper's value on log–log axes, one marker per claim, coloured by verdict.

    ``points``: iterable of ``(key, paper, ours, verdict)``; claims without a positive paper value or with
    a non-positive or non-finite value of ours are left out (they have no place on log axes)."""
    pts = [(k, p, o, v) for k, p, o, v in points
           if p is not None and p > 0 and o is not None and np.isfinite(o) and o > 0]
    fig, ax = plt.subplots(figsize=(HALF[0] * 1.2, HALF[1] * 1.2))
    if not pts:
        ax.text(0.5, 0.5, "no claim with a numeric paper value yet", ha="center", va="center", transform=ax.transAxes)
        ax.axis("off")
        return fig
    p, o = np.array([x[1] for x in pts]), np.array([x[2] for x in pts])
    lo, hi = min(p.min(), o.min()) / 3, max(p.max(), o.max()) * 3
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.7, ls=":", label="ours = paper")
    ax.fill_between([lo, hi], [lo / 3, hi / 3], [lo * 3, hi * 3], color="k", alpha=0.06, lw=0, label="within 3×")
    for verdict, style in VERDICT_STYLE.items():
        sel = [i for i, x in enumerate(pts) if x[3] == verdict]
        if sel:
            ax.scatter(p[sel], o[sel], s=18, label=verdict, zorder=3, **style)
    ax.set_xscale("log"); ax.set_yscale("log")
    ax.set_xlim(lo, hi); ax.set_ylim(lo, hi)
    ax.set_xlabel("paper"); ax.set_ylabel("ours")
    ax.legend(loc="upper left", fontsize=6, frameon=False)


# ---------------------------------------------------------------------------------------------- chapter 6
def _floor(ax, y: float | None = None) -> None:
    """A dotted horizontal line at the float64 unit roundoff (or at ``y``)."""
    ax.axhline(np.finfo(float).eps if y is None else y, color="k", ls=":", lw=0.7)


def plot_sv_map(x, raw, renormalised, *, fixed_points=(0.0, 1.0), orbits=None):
    """Left: one A-update's normalised singular-value map (``raw``) and its renormalised form (Newton–Schulz,
    ``renormalised``) against x, with the identity and the fixed points.  Right: ``orbits`` (label → values
    x_k of the renormalised map, k = 0, 1, …) on a log axis."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=FULL)
    ax1.plot(x, raw, label=r"$x(1 - x^2/3)$", **METHOD_STYLE["GD"])
    ax1.plot(x, renormalised, label=r"$\frac{1}{2} x(3 - x^2)$ (Newton–Schulz)", **METHOD_STYLE["EAGLE"])
    ax1.plot(x, x, color="#999999", lw=0.7, label="identity")
    ax1.plot(list(fixed_points), list(fixed_points), "o", color="k", ms=4, label="fixed points")
    ax1.set_xlabel(r"$x = s / \|A\|_2$")
    ax1.set_ylabel("image")
    ax1.legend(fontsize=7)
    for i, (label, xs) in enumerate((orbits or {}).items()):
        ax2.semilogy(np.arange(len(xs)), xs, marker=".", ms=3, label=label, color=f"C{i}")
    ax2.set_xlabel("step $k$")
    ax2.set_ylabel("$x_k$")
    if orbits:
        ax2.legend(fontsize=7)
    return fig


def plot_spectra(spectra: dict, *, cols: int = 4):
    """Small multiples: for each iteration ℓ (dict key) the singular values s_i(A_ℓ)/‖A_ℓ‖₂ against i."""
    keys = list(spectra)
    rows = int(np.ceil(len(keys) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(FULL[0], 1.35 * rows + 0.2), sharex=True, sharey=True,
                             squeeze=False)
    for ax, ell in zip(axes.flat, keys):
        s = np.asarray(spectra[ell], dtype=float)
        ax.semilogy(np.arange(1, len(s) + 1), s / s[0], color=METHOD_STYLE["EAGLE"]["color"], lw=1.2)
        ax.set_title(rf"$\ell = {ell}$", fontsize=8)
    for ax in axes.flat[len(keys):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel(r"$s_i / s_1$")
    for ax in axes[-1, :]:
        ax.set_xlabel("$i$")
    return fig


def plot_theta(theta, *, predicted=None, switch: int | None = None):
    """θ_ℓ = κ(E_ℓ) − 1 against ℓ (log axis), the line θ = 1, and optionally the proof's quadratic bound
    ¾θ_{ℓ−1}² (``predicted``, aligned with ``theta``; NaN where it does not apply)."""
    fig, ax = plt.subplots(figsize=HALF)
    t = np.asarray(theta, dtype=float)
    ax.semilogy(np.arange(len(t)), t, marker="o", ms=3, label=r"$\theta_\ell$", **METHOD_STYLE["EAGLE"])
    if predicted is not None:
        ax.semilogy(np.arange(len(t)), predicted, "x", ms=5, color=METHOD_STYLE["transformer"]["color"],
                    label=r"$\frac{3}{4}\theta_{\ell-1}^2$")
    ax.axhline(1.0, color="k", lw=0.7, ls="--")
    if switch is not None:
        ax.axvline(switch, color="#999999", lw=0.7)
    _floor(ax)
    ax.set_xlabel(r"iteration $\ell$")
    ax.set_ylabel(r"$\theta_\ell = \kappa(E_\ell) - 1$")
    ax.legend()
    return fig


def plot_kappa_sweep(kappas, iterations: dict, floors: dict, *, reference=None, eps_line=True):
    """Left: iterations against κ (log x), one line per entry of ``iterations`` (label → counts, NaN where
    the target was not reached), with an optional ``reference`` (label, values).  Right: the best relative
    error each method reached against κ (``floors``: label → errors), with κ·u as a dotted line."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=FULL)
    marks = "os^vD"
    for i, (label, its) in enumerate(iterations.items()):
        ax1.semilogx(kappas, its, marker=marks[i % 5], ms=3, label=label, color=f"C{i}")
    if reference is not None:
        ax1.semilogx(kappas, reference[1], color="k", lw=0.8, ls=":", label=reference[0])
    ax1.set_xlabel(r"$\kappa(A)$")
    ax1.set_ylabel("iterations")
    ax1.legend(fontsize=7)
    styles = [METHOD_STYLE["EAGLE"], METHOD_STYLE["SVD"], METHOD_STYLE["GD"], METHOD_STYLE["CG"]]
    for (label, err), st in zip(floors.items(), styles):
        ax2.loglog(kappas, err, marker=".", ms=4, label=label, **st)
    if eps_line:
        k = np.asarray(kappas, dtype=float)
        ax2.loglog(k, k * np.finfo(float).eps, color="#999999", lw=0.7, label=r"$\kappa\,u$")
    ax2.set_xlabel(r"$\kappa(A)$")
    ax2.set_ylabel("best relative error")
    ax2.legend(fontsize=7)
    return fig


def plot_eps_sweep(eps, series: dict):
    """Iterations to reach relative error ε against log₁₀(1/ε); ``series``: label → counts (NaN: never)."""
    fig, ax = plt.subplots(figsize=HALF)
    x = -np.log10(np.asarray(eps, dtype=float))
    for i, (label, its) in enumerate(series.items()):
        ax.plot(x, its, marker="os^vD"[i % 5], ms=3, label=label, color=f"C{i // 2}",
                ls="-" if i % 2 == 0 else "--")
    ax.set_xlabel(r"$\log_{10}(1/\varepsilon)$")
    ax.set_ylabel("iterations")
    ax.legend(fontsize=6)
    return fig


def plot_alpha(inv_alpha, iterations, *, fit=None):
    """Iterations against 1/α (distributed EAGLE), with an optional fitted line ``fit = (slope, intercept)``."""
    fig, ax = plt.subplots(figsize=HALF)
    x = np.asarray(inv_alpha, dtype=float)
    ax.plot(x, iterations, "o", ms=4, color=METHOD_STYLE["distributed"]["color"], label="distributed EAGLE")
    if fit is not None:
        xs = np.linspace(0, x.max() * 1.05, 50)
        ax.plot(xs, fit[0] * xs + fit[1], color="k", lw=0.8, ls=":", label="least-squares line")
    ax.set_xlabel(r"$1/\alpha$")
    ax.set_ylabel("iterations")
    ax.legend()
    return fig


def plot_error_curves(panels: dict, *, styles: dict | None = None,
                      xlabel: str = r"iteration $\ell$ / layers $L$", ylabel: str = "relative error"):
    """One panel per entry of ``panels`` (title → {label: errors, or (x, errors)}; errors alone are plotted
    at x = 1, 2, …), log y, with the float64 floor.  ``styles`` maps a label to a METHOD_STYLE key; a key
    used a second time in a panel is drawn dotted.  Unstyled labels get the colour cycle."""
    styles = styles or {}
    fig, axes = plt.subplots(1, len(panels), figsize=FULL if len(panels) > 1 else HALF, squeeze=False)
    for ax, (title, curves) in zip(axes[0], panels.items()):
        seen = set()
        for i, (label, y) in enumerate(curves.items()):
            x, y = (y if isinstance(y, tuple) else (np.arange(1, len(y) + 1), y))
            key = styles.get(label)
            st = dict(METHOD_STYLE[key]) if key else dict(color=f"C{i}")
            if key in seen:
                st["linestyle"] = ":"
            seen.add(key)
            ax.semilogy(x, y, label=label, lw=1.1, **st)
        _floor(ax)
        ax.set_xlabel(xlabel)
        if title:
            ax.set_title(title)
        ax.legend(fontsize=7)
    axes[0, 0].set_ylabel(ylabel)
    return fig


# ---------------------------------------------------------------------------------------------- chapter 8
def plot_machine_sweep(curves: dict, *, eps: float):
    """Relative error per round of distributed EAGLE for each number of machines M (``curves``: M → array)."""
    fig, ax = plt.subplots(figsize=HALF)
    for i, (M, rel) in enumerate(curves.items()):
        ax.semilogy(np.arange(1, len(rel) + 1), rel, label=f"M = {M}", color=plt.cm.viridis(i / max(1, len(curves) - 1)),
                    lw=1.2, ls=("-", "--", "-.", ":")[i % 4])
    ax.axhline(eps, color="k", ls=":", lw=0.7)
    ax.set_xlabel(r"round $\ell$"); ax.set_ylabel("relative error"); ax.legend(frameon=False)
    return fig


def plot_alpha_sweep(sweeps: dict, *, gd: dict | None = None, eps: float):
    """Rounds to ``eps`` against 1/ᾱ on log–log axes.  ``sweeps``: label → (mean α list, rounds list);
    ``gd``: label → (mean α list, rounds list, reached list) for distributed GD (open markers where the
    round cap was hit: a lower bound)."""
    fig, ax = plt.subplots(figsize=HALF)
    allx = []
    for i, (label, (al, it)) in enumerate(sweeps.items()):
        x = 1 / np.asarray(al)
        allx += list(x)
        ax.loglog(x, it, marker="os"[i % 2], ms=4, label=f"EAGLE, α {label}", **METHOD_STYLE["EAGLE" if i == 0 else "distributed"])
    if gd:
        for label, (al, it, ok) in gd.items():
            x, it, ok = 1 / np.asarray(al), np.asarray(it, float), np.asarray(ok, bool)
            ax.loglog(x, it, label=f"distributed GD, α {label}", **METHOD_STYLE["GD"])
            ax.scatter(x[~ok], it[~ok], facecolors="none", edgecolors=METHOD_STYLE["GD"]["color"], s=25, zorder=3)
    x0 = np.array([min(allx), max(allx)])
    first = next(iter(sweeps.values()))
    ref = np.median(np.asarray(first[1]) * np.asarray(first[0]))
    ax.loglog(x0, ref * x0, color="k", lw=0.7, ls=":", label=r"$\propto 1/\alpha$")
    ax.set_xlabel(r"$1/\bar\alpha$"); ax.set_ylabel(f"rounds to relative error {eps:g}")
    ax.legend(frameon=False, fontsize=6)
    return fig


def plot_round_time(parts: dict):
    """Median wall time of a round, split into compute and communication (``parts``: label → (compute, comm) s)."""
    fig, ax = plt.subplots(figsize=HALF)
    labels = list(parts)
    comp = np.array([parts[k][0] for k in labels]) * 1e3
    comm = np.array([parts[k][1] for k in labels]) * 1e3
    y = np.arange(len(labels))
    ax.barh(y, comp, color=METHOD_STYLE["EAGLE"]["color"], label="compute (UPDATE)")
    ax.barh(y, comm, left=comp, color=METHOD_STYLE["GD"]["color"], label="all_reduce")
    ax.set_yticks(y, labels, fontsize=7); ax.invert_yaxis()
    ax.set_xlabel("ms per round (median)"); ax.legend(frameon=False, fontsize=6)


# ---------------------------------------------------------------------------------------------- chapter 7
#: Styles of the benchmark methods (EAGLE, GD, CG and SVD as in METHOD_STYLE).
BENCH_STYLE = {
    "EAGLE": METHOD_STYLE["EAGLE"], "GD": METHOD_STYLE["GD"], "CG": METHOD_STYLE["CG"], "SVD": METHOD_STYLE["SVD"],
    "LSQR": dict(color="#56B4E9", linestyle=":"), "LSMR": dict(color="#009E73", linestyle="--"),
    "RandSketch+CG": dict(color="#D55E00", linestyle="-."), "SGD": dict(color="#E69F00", linestyle=":"),
    "lstsq (numpy)": dict(color="#000000", linestyle="-"), "lstsq (scipy)": dict(color="#555555", linestyle="-"),
    "lstsq (torch)": dict(color="#999999", linestyle="-"), "GD++": dict(color="#882255", linestyle="--"),
}


def _bench_style(name: str) -> dict:
    base = name.split(" (r")[0]
    return BENCH_STYLE.get(name, BENCH_STYLE.get(base, dict(color="#444444", linestyle="-")))


def plot_bench_curves(rows, *, x: str = "iteration", floor: float | None = None):
    """Error against iteration (``x="iteration"``) or solver seconds (``x="time"``) for every method of
    every row of the centralized sweep: one panel per (rank, κ); direct methods are single markers."""
    kappas = sorted({r["kappa"] for r in rows})
    ranks = [False, True]
    fig, axes = plt.subplots(2, len(kappas), figsize=(FULL[0], 4.4), sharey=True, squeeze=False)
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
            ax.set_title(f"κ = {k:.0e}, {'rank n/2' if rd else 'full rank'}")
            if i == 1:
                ax.set_xlabel("iteration" if x == "iteration" else "solver time (s)")
            if j == 0:
                ax.set_ylabel("relative error")
    h, lab = axes[0, 0].get_legend_handles_labels()
    fig.legend(h, lab, loc="outside right center", fontsize=7)
    return fig


def plot_sketched(r_sweep, per_iteration):
    """Left: EAGLE's iterations to 1e-6 against n/r.  Right: per-iteration time at s = n, n/2, n/4, n/8
    relative to s = n, ours against the paper's 21 : 16 : 7 : 5 ms."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=FULL)
    nr = [r["n_over_r"] for r in r_sweep]
    it = [r["eagle"]["to"]["1e-06"]["iterations"] for r in r_sweep]
    a1.loglog(nr, it, marker="o", **BENCH_STYLE["EAGLE"], label="EAGLE (to 1e-6)")
    if it[-1 if nr[-1] == 1 else 0]:
        ref = next(v for v, q in zip(it, nr) if q == min(nr))
        a1.loglog(nr, [ref * q / min(nr) for q in nr], color="k", lw=0.6, ls=":", label="∝ n/r")
    a1.set_xticks(nr, [f"{q:g}" for q in nr]); a1.minorticks_off()
    a1.set_xlabel("n / r"); a1.set_ylabel("iterations"); a1.legend()
    ss = per_iteration["s"]
    xs = np.arange(len(ss))
    ours = [per_iteration["ratio_to_full"][str(s)] for s in ss]
    a2.bar(xs - 0.2, ours, width=0.4, color=BENCH_STYLE["EAGLE"]["color"], label="ours")
    if per_iteration.get("paper_ms"):
        pap = [per_iteration["paper_ms"][str(s)] / per_iteration["paper_ms"][str(ss[0])] for s in ss]
        a2.bar(xs + 0.2, pap, width=0.4, color="#999999", label="paper (21:16:7:5 ms)")
    a2.set_xticks(xs, [f"s = {s}" for s in ss]); a2.set_ylabel(f"time per iteration / time at s = {ss[0]}")
    a2.legend()
    return fig


def plot_noise(noise_rows):
    """Error against the clean completion along EAGLE's and GD's iterations on noisy data (std 0.01),
    with the exact least-squares completion of the noisy data as a horizontal line."""
    fig, axes = plt.subplots(1, len(noise_rows), figsize=FULL, squeeze=False)
    for ax, row in zip(axes[0], noise_rows):
        for name in ("EAGLE", "GD"):
            c = row["runs"][name]["curve"]
            ax.loglog(c["iteration"], c["value"], label=name, **BENCH_STYLE[name])
        ax.axhline(row["runs"]["lstsq (numpy)"]["final"], color="k", lw=0.8, label="lstsq on noisy data")
        ax.set_title(f"rank {row['rank']}, noise std {row['noise_std']}")
        ax.set_xlabel("iteration"); ax.set_ylabel("error vs clean completion")
    axes[0, 0].legend()
    return fig


def plot_step_grid(grid):
    """Best error within the iteration budget (left) and iterations to 1e-10 (right) for η, γ scaled
    together and for γ/η changed, against the factor."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=FULL)
    for key, st in (("together", BENCH_STYLE["EAGLE"]), ("ratio", BENCH_STYLE["LSMR"])):
        f = [e["factor"] for e in grid[key]]
        lab = "η, γ × factor" if key == "together" else "γ/η = factor"
        a1.semilogy(f, [e["best_median"] for e in grid[key]], marker="o", label=lab, **st)
        its = [np.median([v for v in e["iterations_to_1e10"] if v is not None] or [np.nan]) for e in grid[key]]
        a2.plot(f, its, marker="o", label=lab, **st)
    a1.set_xlabel("factor"); a1.set_ylabel(f"median best error ({grid['max_iter']} it.)"); a1.legend()
    a2.set_xlabel("factor"); a2.set_ylabel("median iterations to 1e-10")
    return fig


# ---------------------------------------------------------------------------------------------- chapter 9
def plot_ablations(stats: dict, *, paper: dict, labels: dict | None = None):
    """One panel per statistic; ``stats``: ablation key → {statistic → list of per-seed values};
    ``paper``: statistic → (the paper's value or (low, high) band, axis label, log axis?).  Dots are
    seeds, the bar the median; the paper's value is a dotted line (a band is shaded)."""
    keys = list(stats)
    names = list(paper)
    fig, axes = plt.subplots(1, len(names), figsize=(FULL[0], 2.9), sharey=True)
    y = np.arange(len(keys))
    for ax, name in zip(np.atleast_1d(axes), names):
        ref, label, log = paper[name]
        for i, k in enumerate(keys):
            v = np.asarray(stats[k][name], dtype=float)
            ax.scatter(v, np.full(v.shape, i), s=10, color=METHOD_STYLE["EAGLE"]["color"], alpha=0.6, zorder=3)
            if v.size:
                ax.plot([np.median(v)] * 2, [i - 0.3, i + 0.3], color="k", lw=1.5, zorder=4)
        if isinstance(ref, tuple):
            ax.axvspan(*ref, color="0.85", zorder=0, label="paper")
        elif ref is not None:
            ax.axvline(ref, color="k", ls=":", lw=0.9, label="paper")
        if log:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(label, fontsize=7)
    ax0 = np.atleast_1d(axes)[0]
    ax0.set_yticks(y, [(labels or {}).get(k, k) for k in keys], fontsize=7); ax0.invert_yaxis()
    ax0.legend(frameon=False, fontsize=6, loc="lower right")
    return fig


def plot_definitions(values: dict, *, paper: float, labels: dict | None = None):
    """The relative difference under each definition (``values``: key → per-seed values); paper dotted."""
    fig, ax = plt.subplots(figsize=HALF)
    keys = list(values)
    for i, k in enumerate(keys):
        v = np.asarray(values[k], dtype=float)
        ax.scatter(v, np.full(v.shape, i), s=10, color=METHOD_STYLE["EAGLE"]["color"], alpha=0.6, zorder=3)
        ax.plot([np.median(v)] * 2, [i - 0.3, i + 0.3], color="k", lw=1.5, zorder=4)
    ax.axvline(paper, color="k", ls=":", lw=0.9, label=f"paper ({paper:g})")
    ax.set_yticks(np.arange(len(keys)), [(labels or {}).get(k, k) for k in keys], fontsize=7); ax.invert_yaxis()
    ax.set_xlim(left=0); ax.set_xlabel("relative difference (median over layers)", fontsize=7)
    ax.legend(frameon=False, fontsize=6)
    return fig


def plot_failure_boundary(tails: dict, *, bins: int = 12):
    """The heavy tail (``tails``: regime → :class:`eaglebook.ablations.Tail`).  Left: every held-out prompt
    at (‖A‖₂² over the training batch maximum, κ of A), prompts worse than predicting zero in red, and
    the first layer's overshoot boundary step = 2 (dashed, per regime).  Right: share of prompts worse
    than zero against the first layer's step, in bins of equal counts."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=FULL)
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
        bx.plot(x, yv, marker="o", ms=3, label=reg, color=st["color"])
    ax.set_xscale("log"); ax.set_yscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter()); ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(r"$\|A\|_2^2$ / training batch max", fontsize=7); ax.set_ylabel(r"$\kappa(A)$ on its rank", fontsize=7)
    ax.legend(frameon=False, fontsize=6)
    bx.axvline(2, color="k", ls=":", lw=0.9)
    bx.set_xscale("log"); bx.xaxis.set_minor_formatter(NullFormatter()); bx.set_xlabel("first layer's step on the prompt", fontsize=7)
    bx.set_ylabel("share worse than predicting zero", fontsize=7); bx.legend(frameon=False, fontsize=6)
    return fig


# ---------------------------------------------------------------------------------------------- chapter 10
ICL_STYLE = {
    "GD++": dict(color="#E69F00", linestyle="--", marker="o"),
    "DIAG": dict(color="#0072B2", linestyle="-", marker="s"),
    "FULL": dict(color="#D55E00", linestyle="-.", marker="^"),
    "oracle": dict(color="#000000", linestyle="-", marker=""),
    "ConstRR": dict(color="#CC79A7", linestyle=":", marker=""),
    "AdaRR": dict(color="#009E73", linestyle="--", marker=""),
    "TunedRR": dict(color="#999999", linestyle="-.", marker=""),
    "theirs": dict(color="#999999", linestyle="", marker="x"),
}


def _legend_outside(ax_or_fig, **kw):
    """A legend to the right of the axes, outside the data."""
    ax_or_fig.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kw)


def plot_depth_losses(layers, ours, theirs, *, floor: float | None = None):
    """Noiseless GD++: loss against depth, ours and the paper's, on a log axis; ``floor``: a horizontal
    line (e.g. float32's resolution of the loss)."""
    fig, ax = plt.subplots(figsize=HALF)
    ax.semilogy(layers, ours, label="ours", **ICL_STYLE["GD++"])
    ax.semilogy(list(theirs), list(theirs.values()), label="Vladymyrov et al.", markersize=7, **ICL_STYLE["theirs"])
    if floor is not None:
        ax.axhline(floor, color="k", lw=0.6, ls=":", label="float32 resolution")
    ax.set_xlabel("layers"); ax.set_ylabel(r"loss $\frac{1}{2}(\hat y - y)^2$")
    _legend_outside(ax)
    return fig


def plot_readings(fid: dict, steps: dict, *, floor: float = 1e-32):
    """Left: per layer, the fidelity of the two readings to each model (log axis; values below ``floor``
    drawn at it).  Right: the steps η_ℓ (filled) and γ_ℓ (open) read from each model."""
    fig, (a, b) = plt.subplots(1, 2, figsize=FULL)
    for (model, reading), e in fid.items():
        st = ICL_STYLE[model]
        e = np.maximum(np.asarray(e[1:], float), floor)
        a.semilogy(np.arange(1, e.size + 1), e, color=st["color"], marker=st["marker"],
                   linestyle="-" if reading == "GD++" else ":", label=f"{model}: {reading} reading")
    a.set_xlabel(r"layer $\ell$"); a.set_ylabel(r"$\|Z_\ell - \hat Z_\ell\|_F^2$ / #entries")
    _legend_outside(a, fontsize=7)
    for model, (eta, gamma) in steps.items():
        st = ICL_STYLE[model]
        ls = np.arange(1, len(eta) + 1)
        b.plot(ls, eta, color=st["color"], marker=st["marker"], linestyle="-", label=f"{model}: $\\eta$")
        b.plot(ls, gamma, color=st["color"], marker=st["marker"], linestyle=":", markerfacecolor="none",
               label=f"{model}: $\\gamma$")
    b.axhline(0, color="k", lw=0.5)
    b.set_xlabel(r"layer $\ell$"); b.set_ylabel(r"step ($\rho = 1/\mathrm{median}\,\|A_\ell\|^2$)")
    _legend_outside(b, fontsize=7)
    return fig


def plot_shrinkage(sigmas, curves: dict):
    """Loss against the sequence's noise level σ_τ (left) and the same minus ridge with the true σ_τ
    (right), for the models and the ridge baselines."""
    fig, (a, b) = plt.subplots(1, 2, figsize=FULL)
    oracle = np.asarray(curves["oracle"], float)
    for name, c in curves.items():
        st = dict(ICL_STYLE[name.split(",")[0]])
        c = np.asarray(c, float)
        a.plot(sigmas, c, label=name, **st)
        if name != "oracle":
            b.plot(sigmas, c - oracle, label=name, **st)
    a.set_xlabel(r"$\sigma_\tau$"); a.set_ylabel(r"loss $\frac{1}{2}(\hat y - y)^2$")
    b.axhline(0, color="k", lw=0.6)
    b.set_xlabel(r"$\sigma_\tau$"); b.set_ylabel("loss − oracle ridge")
    _legend_outside(b, fontsize=7)
    return fig

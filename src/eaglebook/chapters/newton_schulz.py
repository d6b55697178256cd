"""Chapter 6 (book/06_newton_schulz.md): the Newton–Schulz connection and the theorems checked; its figures."""

from __future__ import annotations

import numpy as np

from ..plotting import LINESTYLES, MARKERS, METHOD_STYLE, finish, legend_outside, subplots

__all__ = ["plot_sv_map", "plot_spectra", "plot_theta", "plot_kappa_sweep", "plot_eps_sweep", "plot_alpha",
           "plot_error_curves"]


# ---------------------------------------------------------------------------------------------- figures
def _floor(ax, y: float | None = None) -> None:
    """A dotted horizontal line at the float64 unit roundoff (or at ``y``)."""
    ax.axhline(np.finfo(float).eps if y is None else y, color="k", ls=":", lw=0.7)


def plot_sv_map(x, raw, renormalised, *, fixed_points=(0.0, 1.0), orbits=None):
    """Left: one A-update's normalised singular-value map (``raw``) and its renormalised form (Newton–Schulz,
    ``renormalised``) against x, with the identity and the fixed points.  Right: ``orbits`` (label → values
    x_k of the renormalised map, k = 0, 1, …) on a log axis.  Each panel's legend sits below it."""
    fig, (ax1, ax2) = subplots(1, 2, height=3.6)
    ax1.plot(x, raw, label=r"$x(1 - x^2/3)$", **METHOD_STYLE["GD"])
    ax1.plot(x, renormalised, label=r"$\frac{1}{2} x(3 - x^2)$ (Newton–Schulz)", **METHOD_STYLE["EAGLE"])
    ax1.plot(x, x, color="#999999", lw=0.7, label="identity")
    ax1.plot(list(fixed_points), list(fixed_points), "o", color="k", ms=4, label="fixed points")
    ax1.set_xlabel(r"$x = s / \|A\|_2$")
    ax1.set_ylabel("image")
    for i, (label, xs) in enumerate((orbits or {}).items()):
        ax2.semilogy(np.arange(len(xs)), xs, marker=MARKERS[i % len(MARKERS)], ms=3, label=label,
                     color=f"C{i % 10}", ls=LINESTYLES[(i // 10) % len(LINESTYLES)])
    ax2.set_xlabel("step $k$")
    ax2.set_ylabel("$x_k$")
    for ax in (ax1, ax2):
        legend_outside(ax, where="below")
    return finish(fig)


def plot_spectra(spectra: dict, *, cols: int = 4):
    """Small multiples: for each iteration ℓ (dict key) the singular values s_i(A_ℓ)/‖A_ℓ‖₂ against i."""
    keys = list(spectra)
    nrows = int(np.ceil(len(keys) / cols))
    fig, axes = subplots(nrows, cols, height=1.6 * nrows + 0.4, sharex=True, sharey=True, squeeze=False)
    for ax, ell in zip(axes.flat, keys):
        s = np.asarray(spectra[ell], dtype=float)
        ax.semilogy(np.arange(1, len(s) + 1), s / s[0], color=METHOD_STYLE["EAGLE"]["color"], lw=1.2)
        ax.set_title(rf"$\ell = {ell}$")
    for ax in axes.flat[len(keys):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel(r"$s_i / s_1$")
    for ax in axes[-1, :]:
        ax.set_xlabel("$i$")
    return finish(fig)


def plot_theta(theta, *, predicted=None, switch: int | None = None):
    """θ_ℓ = κ(E_ℓ) − 1 against ℓ (log axis), the line θ = 1, and optionally the proof's quadratic bound
    ¾θ_{ℓ−1}² (``predicted``, aligned with ``theta``; NaN where it does not apply)."""
    fig, ax = subplots()
    t = np.asarray(theta, dtype=float)
    ax.semilogy(np.arange(len(t)), t, marker="o", ms=3, label=r"$\theta_\ell$", **METHOD_STYLE["EAGLE"])
    if predicted is not None:
        ax.semilogy(np.arange(len(t)), predicted, "x", ms=5, color=METHOD_STYLE["transformer"]["color"],
                    label=r"$\frac{3}{4}\theta_{\ell-1}^2$")
    ax.axhline(1.0, color="k", lw=0.7, ls="--", label=r"$\theta = 1$")
    if switch is not None:
        ax.axvline(switch, color="#999999", lw=0.7, label="switch")
    _floor(ax)
    ax.set_xlabel(r"iteration $\ell$")
    ax.set_ylabel(r"$\theta_\ell = \kappa(E_\ell) - 1$")
    legend_outside(ax)
    return finish(fig)


def plot_kappa_sweep(kappas, iterations: dict, floors: dict, *, reference=None, eps_line=True):
    """Left: iterations against κ (log x), one line per entry of ``iterations`` (label → counts, NaN where
    the target was not reached), with an optional ``reference`` (label, values).  Right: the best relative
    error each method reached against κ (``floors``: label → errors), with κ·u as a dotted line.  Each
    panel's legend sits below it."""
    fig, (ax1, ax2) = subplots(1, 2, height=3.8)
    for i, (label, its) in enumerate(iterations.items()):
        ax1.semilogx(kappas, its, marker=MARKERS[i % len(MARKERS)], ms=3, label=label, color=f"C{i % 10}")
    if reference is not None:
        ax1.semilogx(kappas, reference[1], color="k", lw=0.8, ls=":", label=reference[0])
    ax1.set_xlabel(r"$\kappa(A)$")
    ax1.set_ylabel("iterations")
    styles = [METHOD_STYLE["EAGLE"], METHOD_STYLE["SVD"], METHOD_STYLE["GD"], METHOD_STYLE["CG"]]
    for i, (label, err) in enumerate(floors.items()):
        st = styles[i] if i < len(styles) else dict(color=f"C{i % 10}")
        ax2.loglog(kappas, err, marker=".", ms=4, label=label, **st)
    if eps_line:
        k = np.asarray(kappas, dtype=float)
        ax2.loglog(k, k * np.finfo(float).eps, color="#999999", lw=0.7, label=r"$\kappa\,u$")
    ax2.set_xlabel(r"$\kappa(A)$")
    ax2.set_ylabel("best relative error")
    for ax in (ax1, ax2):
        legend_outside(ax, where="below")
    return finish(fig)


def plot_eps_sweep(eps, series: dict):
    """Iterations to reach relative error ε against log₁₀(1/ε); ``series``: label → counts (NaN: never)."""
    fig, ax = subplots()
    x = -np.log10(np.asarray(eps, dtype=float))
    for i, (label, its) in enumerate(series.items()):
        ax.plot(x, its, marker=MARKERS[i % len(MARKERS)], ms=3, label=label, color=f"C{(i // 2) % 10}",
                ls="-" if i % 2 == 0 else "--")
    ax.set_xlabel(r"$\log_{10}(1/\varepsilon)$")
    ax.set_ylabel("iterations")
    legend_outside(ax)
    return finish(fig)


def plot_alpha(inv_alpha, iterations, *, fit=None):
    """Iterations against 1/α (distributed EAGLE), with an optional fitted line ``fit = (slope, intercept)``."""
    fig, ax = subplots()
    x = np.asarray(inv_alpha, dtype=float)
    ax.plot(x, iterations, "o", ms=4, color=METHOD_STYLE["distributed"]["color"], label="distributed EAGLE")
    if fit is not None:
        xs = np.linspace(0, x.max() * 1.05, 50)
        ax.plot(xs, fit[0] * xs + fit[1], color="k", lw=0.8, ls=":", label="least-squares line")
    ax.set_xlabel(r"$1/\alpha$")
    ax.set_ylabel("iterations")
    legend_outside(ax)
    return finish(fig)


def plot_error_curves(panels: dict, *, styles: dict | None = None,
                      xlabel: str = r"iteration $\ell$ / layers $L$", ylabel: str = "relative error"):
    """One panel per entry of ``panels`` (title → {label: errors, or (x, errors)}; errors alone are plotted
    at x = 1, 2, …), log y, with the float64 floor.  ``styles`` maps a label to a METHOD_STYLE key; a key
    used a second time in a panel is drawn dotted.  Unstyled labels get the colour cycle.  Panels share
    the y axis; one legend (entries by label; a label keeps the first panel's style) sits right of them."""
    styles = styles or {}
    fig, axes = subplots(1, len(panels), height=3.0, sharey=True, squeeze=False)
    for ax, (title, curves) in zip(axes[0], panels.items()):
        seen = set()
        for i, (label, y) in enumerate(curves.items()):
            x, y = (y if isinstance(y, tuple) else (np.arange(1, len(y) + 1), y))
            key = styles.get(label)
            st = dict(METHOD_STYLE[key]) if key else dict(color=f"C{i % 10}")
            if key in seen:
                st["linestyle"] = ":"
            seen.add(key)
            ax.semilogy(x, y, label=label, lw=1.1, **st)
        _floor(ax)
        ax.set_xlabel(xlabel)
        if title:
            ax.set_title(title)
    axes[0, 0].set_ylabel(ylabel)
    legend_outside(fig)   # tells alike series apart in every panel, then one legend by label
    return finish(fig)

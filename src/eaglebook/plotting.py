"""Figures: one style and one standard for the whole book.

The standard (house style §2.13), checked by :func:`audit`:

* legends sit outside the data (:func:`legend_outside`: right of or below the axes);
* an axis whose positive data spread over more than two decades is logarithmic (:func:`log_if_wide`);
* every heat map has a colour bar (:func:`heatmap` adds one);
* no two series in one axes share colour, line style *and* marker (:func:`distinct_styles`);
* panel titles do not collide;
* a figure is the width of the text column (:data:`TEXT_WIDTH_IN`) and its text renders at
  :data:`MIN_FONT_PX` or more.

``METHOD_STYLE`` gives each method one colour *and* one line style (Okabe–Ito), so a method looks the same
in every chapter and survives grayscale printing.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib.colors import to_rgba
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.collections import PathCollection
from matplotlib.ticker import FixedFormatter, FixedLocator, LogFormatterSciNotation, NullFormatter, NullLocator
import numpy as np

from . import regimes

#: Width of the book's text column at 1280 px (sphinx-book-theme): an SVG is shown at 96 px per inch, so
#: 7.2 in is 691 px, inside the ~700–750 px column and never scaled down.
TEXT_WIDTH_IN = 7.2
#: The widest a figure may be before the browser scales it (and its text) down to the column.
COLUMN_MAX_IN = 7.7
#: Smallest rendered text (tick labels, legends, axis labels) in CSS pixels; 1 pt = 96/72 px.
MIN_FONT_PX = 10.0
MIN_FONT_PT = MIN_FONT_PX * 72 / 96

FULL = (TEXT_WIDTH_IN, 2.8)
#: One panel of a side-by-side pair: use it to size subplots, never as a figure's size (the audit
#: refuses a figure narrower than the text column).
HALF = (TEXT_WIDTH_IN / 2, 2.8)

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
    "font.size": 9.5,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9.5,
    "legend.fontsize": 8.5,
    "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "figure.constrained_layout.use": True,
    "figure.figsize": FULL,
    "figure.dpi": 100,
    "savefig.bbox": "tight",
    "image.cmap": "RdBu_r",
}

#: Markers and line styles cycled where two series would otherwise look alike.
MARKERS = ("o", "s", "^", "v", "D", "x", "P", "*")
LINESTYLES = ("-", "--", "-.", ":")


def use_style() -> None:
    """Apply the book's matplotlib style and SVG output for the HTML book."""
    mpl.rcParams.update(STYLE)
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
        set_matplotlib_formats("svg")
    except Exception:  # outside IPython there is nothing to configure
        pass


def subplots(nrows: int = 1, ncols: int = 1, *, height: float = FULL[1], **kw):
    """``plt.subplots`` at the text width with constrained layout (so legends outside the axes fit)."""
    kw.setdefault("figsize", (TEXT_WIDTH_IN, height))
    kw.setdefault("layout", "constrained")
    return plt.subplots(nrows, ncols, **kw)


def save(fig, name: str) -> None:
    """Write ``fig`` as PDF and PNG under ``_build/figures/`` when ``$SAVE_FIGURES`` is set."""
    if os.environ.get("SAVE_FIGURES"):
        out = Path("_build") / "figures"
        out.mkdir(parents=True, exist_ok=True)
        for ext in ("pdf", "png"):
            fig.savefig(out / f"{name}.{ext}")


# ------------------------------------------------------------------------------------------- the standard
def _is_series(line: Line2D) -> bool:
    return not str(line.get_label()).startswith("_")


def _style_key(line: Line2D) -> tuple:
    ls = line.get_linestyle()
    ls = "None" if ls in ("None", "none", " ", "") else ls
    mk = line.get_marker()
    mk = "None" if mk in (None, "None", "none", " ", "") else str(mk)
    return (tuple(np.round(to_rgba(line.get_color(), line.get_alpha()), 3)), ls, mk)


def distinct_styles(ax) -> None:
    """Give every labelled line of ``ax`` its own (colour, line style, marker): a line that repeats an
    earlier one's gets the next marker (and, once markers run out, the next line style)."""
    seen = set()
    for line in ax.get_lines():
        if not _is_series(line):
            continue
        key = _style_key(line)
        if key in seen:
            n = len(line.get_xdata())
            for mk, ls in itertools.product(MARKERS, LINESTYLES):
                line.set_marker(mk)
                line.set_markersize(4)
                line.set_markevery(max(1, n // 8) if n > 12 else None)
                if key[1] != "None":
                    line.set_linestyle(ls)
                if _style_key(line) not in seen:
                    break
            key = _style_key(line)
        seen.add(key)


def legend_outside(target, *, where: str = "right", handles=None, labels=None, **kw):
    """A legend outside the data: right of (``where="right"``) or below (``"below"``) the axes.

    ``target`` is an Axes (its own legend, beside it or under its x label) or a Figure (one legend for all
    its axes, entries collected by label, right of or under all panels).  Series that look alike are told apart first
    (:func:`distinct_styles`).  Returns the legend, or None when there is nothing to label."""
    if where not in ("right", "below"):
        raise ValueError(f"where must be 'right' or 'below', not {where!r}")
    fig = target if isinstance(target, mpl.figure.Figure) else target.figure
    axes = fig.axes if target is fig else [target]
    for ax in axes:
        distinct_styles(ax)
    if handles is None:
        pairs = {}
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                pairs.setdefault(lab, h)
        labels, handles = list(pairs), list(pairs.values())
    elif labels is None:
        labels = [h.get_label() for h in handles]
    if not handles:
        return None
    kw.setdefault("frameon", False)
    if target is not fig and where == "right":
        return target.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, **kw)
    if target is not fig:      # below this axes' tick labels and x label, a fixed distance in inches
        fig.draw_without_rendering()
        tight = target.get_tightbbox(fig.canvas.get_renderer())
        dy = (target.bbox.y0 - tight.y0) / fig.dpi + 0.04
        kw.setdefault("ncols", min(len(handles), 2))
        tr = target.transAxes + mpl.transforms.ScaledTranslation(0, -dy, fig.dpi_scale_trans)
        return target.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=tr,
                             borderaxespad=0, **kw)
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    if where == "below":
        kw.setdefault("ncols", min(len(handles), 3))
        return fig.legend(handles, labels, loc="outside lower center", **kw)
    return fig.legend(handles, labels, loc="outside right upper", **kw)


def needs_log(values, *, decades: float = 2.0) -> bool:
    """Whether an axis showing ``values`` should be logarithmic: all finite values positive, spanning more
    than ``decades`` decades, with at least a tenth of them below 1/10**decades of the largest (so that a
    linear axis would squash them into its first hundredth).  An evenly spaced index such as training
    steps 1…5000 spans more than two decades but fills a linear axis evenly: it stays linear."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size < 2 or (v <= 0).any():
        return False
    hi, lo = v.max(), v.min()
    if np.log10(hi / lo) <= decades:
        return False
    return np.mean(v < hi / 10 ** decades) >= 0.1


def _axis_data(ax, axis: str) -> np.ndarray:
    """The data values ``ax`` shows along ``axis`` ("x" or "y"): lines and scatters in data coordinates and
    bar extents; reference lines (axhline, axvline) and images are not data."""
    i = 0 if axis == "x" else 1
    out = []
    for line in ax.get_lines():
        if line.get_transform() is ax.transData:
            out.append(np.asarray(line.get_xydata(), dtype=float)[:, i])
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and coll.get_offset_transform() is ax.transData:
            off = np.asarray(coll.get_offsets(), dtype=float)
            if off.size:
                out.append(off[:, i])
    for p in ax.patches:
        if isinstance(p, Rectangle) and mpl.artist.Artist.get_transform(p) is ax.transData:
            x0, y0 = p.get_xy()
            w, h = p.get_width(), p.get_height()
            if (w if axis == "x" else h) != 0:
                out.append(np.array([x0 + w if axis == "x" else y0 + h]))
    return np.concatenate(out) if out else np.array([])


def _is_categorical(ax, axis: str) -> bool:
    """An axis whose ticks the caller labelled with text (categories, or chosen values): left alone."""
    return isinstance((ax.xaxis if axis == "x" else ax.yaxis).get_major_formatter(), FixedFormatter)


def log_if_wide(ax, axis: str = "both") -> None:
    """Make ``ax``'s x and/or y axis logarithmic when its data call for it (:func:`needs_log`)."""
    if ax.images:
        return
    for a in ("x", "y") if axis == "both" else (axis,):
        scale = ax.get_xscale() if a == "x" else ax.get_yscale()
        if scale == "linear" and not _is_categorical(ax, a) and needs_log(_axis_data(ax, a)):
            (ax.set_xscale if a == "x" else ax.set_yscale)("log")
            (ax.set_xlim if a == "x" else ax.set_ylim)(auto=True)
            ax.autoscale_view()


#: A log axis whose view reaches beyond 10^±LOG_SAFE_DECADES gets fixed decade ticks (:func:`safe_log_ticks`):
#: matplotlib's LogLocator steps one stride past the view and overflows float64 there.
LOG_SAFE_DECADES = 200


def safe_log_ticks(ax, axis: str) -> None:
    """On a log ``axis`` ("x" or "y") of ``ax`` whose view reaches beyond 10^±:data:`LOG_SAFE_DECADES`, bound
    the view to the finite data (×/÷ 10) and place at most 7 decade ticks inside it, so that drawing does not
    overflow (a per-layer constant of 1e250 is a real value to show, not a reason to crash)."""
    scale = ax.get_xscale() if axis == "x" else ax.get_yscale()
    if scale != "log":
        return
    lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
    big = 10.0 ** LOG_SAFE_DECADES
    if np.isfinite(lo) and np.isfinite(hi) and 1 / big < min(lo, hi) and max(lo, hi) < big:
        return
    v = _axis_data(ax, axis)
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return
    e0, e1 = np.floor(np.log10(v.min())) - 1, np.ceil(np.log10(v.max())) + 1
    e0, e1 = max(e0, -307.0), min(e1, 307.0)
    (ax.set_xlim if axis == "x" else ax.set_ylim)(10.0 ** e0, 10.0 ** e1)
    step = next(k for k in (1, 2, 5, 10, 20, 25, 50, 100, 200) if (e1 - e0) / k <= 6)   # a round number of decades
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(FixedLocator(10.0 ** np.arange(np.ceil(e0 / step) * step, e1 + 1, step)))
    a.set_major_formatter(LogFormatterSciNotation())
    a.set_minor_locator(NullLocator())


def finish(fig):
    """Apply the standard to a finished figure (distinct styles, log axes where the data call for them)
    and return it.  Every ``plot_*`` function ends with it; a chapter drawing its own figure can too.

    With ``$EAGLEBOOK_FIGURE_AUDIT`` set to ``raise`` (or ``warn``) the figure is also audited
    (:func:`audit`) and a problem raises ``ValueError`` (or warns): a check of the real figures of a run."""
    for ax in fig.axes:
        if getattr(ax, "_colorbar", None) is not None or ax.get_label() == "<colorbar>":
            continue
        distinct_styles(ax)
        log_if_wide(ax)
        for a in ("x", "y"):
            safe_log_ticks(ax, a)
    mode = os.environ.get("EAGLEBOOK_FIGURE_AUDIT", "")
    if mode in ("raise", "warn"):
        problems = audit(fig)
        if problems:
            msg = "figure does not meet the standard: " + "; ".join(problems)
            if mode == "raise":
                raise ValueError(msg)
            import warnings
            warnings.warn(msg, stacklevel=2)
    elif mode:
        raise ValueError(f"$EAGLEBOOK_FIGURE_AUDIT must be 'raise' or 'warn', not {mode!r}")
    return fig


def heatmap(ax, W, *, title: str = "", vmax: float | None = None, blocks: tuple[int, ...] = (),
            colorbar: bool = True, cmap: str = "RdBu_r", symmetric: bool = True, label: str | None = None,
            aspect: str = "equal"):
    """A heat map of a matrix (colour map symmetric around zero for signed entries), with optional block
    separators at the given indices and a colour bar (``colorbar=False`` only when the caller adds one,
    e.g. one bar shared by several panels).  ``aspect="auto"`` stretches the cells to fill the panel (so
    that a figure of square matrices still spans the text width).  Returns the image."""
    W = np.asarray(W, dtype=float)
    if W.ndim != 2:
        raise ValueError(f"heatmap needs a 2-d matrix, got shape {W.shape}")
    vmax = vmax or float(np.nanmax(np.abs(W))) or 1.0
    im = ax.imshow(W, cmap=cmap, vmin=-vmax if symmetric else 0.0, vmax=vmax, interpolation="nearest", aspect=aspect)
    for b in blocks:
        ax.axhline(b - 0.5, color="k", lw=0.6)
        ax.axvline(b - 0.5, color="k", lw=0.6)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    if title:
        ax.set_title(title)
    if colorbar:
        cb = ax.figure.colorbar(im, ax=ax, shrink=0.85, pad=0.02)
        cb.ax.tick_params(labelsize=STYLE["xtick.labelsize"])
        cb.ax.yaxis.get_offset_text().set_fontsize(STYLE["xtick.labelsize"])
        if label:
            cb.set_label(label)
    return im


# ------------------------------------------------------------------------------------------------ the audit
def _texts(fig):
    """(what, Text) for every visible, non-empty text a reader must read: ticks, axis labels, titles, legends."""
    for ax in fig.axes:
        for a, name in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            for t in a.get_ticklabels():
                yield f"{name} tick label", t
            yield f"{name} label", a.label
        for t in (ax.title, ax._left_title, ax._right_title):
            yield "title", t
    for leg in _legends(fig):
        for t in leg.get_texts():
            yield "legend", t


def _legends(fig):
    out = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return out + list(fig.legends)


def _visible(t) -> bool:
    return t.get_visible() and bool(t.get_text().strip())


def _inside(pts: np.ndarray, bb) -> np.ndarray:
    return (pts[:, 0] > bb.x0) & (pts[:, 0] < bb.x1) & (pts[:, 1] > bb.y0) & (pts[:, 1] < bb.y1)


def _data_points(ax) -> np.ndarray:
    """Display coordinates of the data drawn in ``ax`` (line vertices and points between them, scatter
    points, bar corners), restricted to the axes box: where a legend must not be."""
    pts = []
    for line in ax.get_lines():
        if not line.get_visible():
            continue
        xy = np.asarray(line.get_xydata(), dtype=float)
        xy = xy[np.isfinite(xy).all(axis=1)]
        if not len(xy):
            continue
        with np.errstate(all="ignore"):
            d = line.get_transform().transform(xy)
        d = d[np.isfinite(d).all(axis=1)]
        if line.get_linestyle() not in ("None", "none", "", " ") and len(d) > 1:
            t = np.linspace(0, 1, 20)[:, None]
            seg = (d[:-1, None, :] * (1 - t) + d[1:, None, :] * t).reshape(-1, 2)
            d = np.vstack([d, seg])
        pts.append(d)
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and coll.get_visible():
            off = np.asarray(coll.get_offsets(), dtype=float)
            if off.size:
                with np.errstate(all="ignore"):
                    pts.append(coll.get_offset_transform().transform(off))
    for p in ax.patches:
        if isinstance(p, Rectangle) and p.get_visible() and p.get_width() * p.get_height() != 0:
            bb = p.get_window_extent()
            xs, ys = np.linspace(bb.x0, bb.x1, 8), np.linspace(bb.y0, bb.y1, 8)
            pts.append(np.array([(x, y) for x in xs for y in ys]))
    if not pts:
        return np.zeros((0, 2))
    P = np.vstack(pts)
    P = P[np.isfinite(P).all(axis=1)]
    return P[_inside(P, ax.get_window_extent().expanded(1.0001, 1.0001))]


def rendered_width(fig) -> float:
    """The width (inches) at which the notebook shows ``fig``: cropped to its content plus 0.1 in a side."""
    fig.canvas.draw()
    return float(fig.get_tightbbox(fig.canvas.get_renderer()).width) + 0.2


def audit(fig) -> list[str]:
    """Check ``fig`` against the book's figure standard; returns the problems found (empty: none).

    (a) no legend covers data (line vertices and segments, scatter points, bars) of any axes;
    (b) an axis whose positive data spread over more than two decades (:func:`needs_log`) is logarithmic;
    (c) every image (heat map) has a colour bar;
    (d) no two labelled lines of one axes share colour, line style and marker;
    (e) no two axes titles overlap;
    (f) the figure as the notebook shows it (cropped to its content) is at least the text width, and every tick label, axis label and legend text renders at
        :data:`MIN_FONT_PX` or more at the size the browser shows it."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    problems = []
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    # (a)
    for leg in _legends(fig):
        bb = leg.get_window_extent(r)
        for ax in axes:
            hit = _inside(_data_points(ax), bb).sum()
            if hit:
                problems.append(f"legend covers {hit} data points of axes '{ax.get_title() or ax.get_ylabel()}'")
    # (b)
    for ax in axes:
        if ax.images:
            continue
        for a in ("x", "y"):
            scale = ax.get_xscale() if a == "x" else ax.get_yscale()
            if scale == "linear" and not _is_categorical(ax, a) and needs_log(_axis_data(ax, a)):
                v = _axis_data(ax, a)
                problems.append(f"linear {a} axis of '{ax.get_title() or ax.get_ylabel()}' over "
                                f"{np.log10(np.nanmax(v) / np.nanmin(v)):.1f} decades: use a log axis")
    # (c)
    for ax in fig.axes:
        for im in ax.get_images():
            if isinstance(im, AxesImage) and im.colorbar is None:
                problems.append(f"image in axes '{ax.get_title()}' has no colour bar")
    # (d)
    for ax in axes:
        seen = {}
        for line in ax.get_lines():
            if _is_series(line):
                k = _style_key(line)
                if k in seen:
                    problems.append(f"lines '{seen[k]}' and '{line.get_label()}' share colour, style and marker")
                seen.setdefault(k, line.get_label())
    # (e)
    titles = [(t.get_text(), t.get_window_extent(r)) for ax in axes
              for t in (ax.title, ax._left_title, ax._right_title) if _visible(t)]
    for (ta, a), (tb, b) in itertools.combinations(titles, 2):
        if a.overlaps(b):
            problems.append(f"titles '{ta}' and '{tb}' overlap")
    # (f) the notebook shows the figure cropped to its content (bbox_inches="tight", 0.1 in of padding)
    w = rendered_width(fig)
    if w < TEXT_WIDTH_IN * 0.97:
        problems.append(f"figure renders {w:.2f} in wide, narrower than the text column ({TEXT_WIDTH_IN} in)")
    scale = min(1.0, COLUMN_MAX_IN / w) * 96 / 72
    small = {}
    for what, t in _texts(fig):
        if _visible(t) and t.get_fontsize() * scale < MIN_FONT_PX:
            small.setdefault(what, t.get_fontsize() * scale)
    for what, px in small.items():
        problems.append(f"{what} renders at {px:.1f} px (< {MIN_FONT_PX:g} px)")
    return problems


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


def plot_products(rows: dict, *, blocks: tuple[int, ...] = ()):
    """Heat maps of per-layer weight products: ``rows`` maps a row label to a list of matrices (one per layer).
    Each panel has its own symmetric colour scale and colour bar; ``blocks`` draws separators (e.g. at n)."""
    labels = list(rows)
    L = len(rows[labels[0]])
    fig, axes = subplots(len(labels), L, height=min(1.75, 6.0 / len(labels)) * len(labels) + 0.3, squeeze=False)
    for i, lab in enumerate(labels):
        for l, W in enumerate(rows[lab]):
            heatmap(axes[i, l], W, blocks=blocks, aspect="auto")
            if i == 0:
                axes[i, l].set_title(f"layer {l}")
        axes[i, 0].set_ylabel(lab)
    return finish(fig)


VERDICT_STYLE = {"reproduced": dict(color="#009E73", marker="o"), "partly": dict(color="#E69F00", marker="s"),
                 "not reproduced": dict(color="#D55E00", marker="X"), "not judged": dict(color="#999999", marker=".")}


def plot_scorecard(points):
    """Ours against the paper's value on log–log axes, one marker per claim, coloured by verdict.

    ``points``: iterable of ``(key, paper, ours, verdict)``; claims without a positive paper value or with
    a non-positive or non-finite value of ours are left out (they have no place on log axes)."""
    pts = [(k, p, o, v) for k, p, o, v in points
           if p is not None and p > 0 and o is not None and np.isfinite(o) and o > 0]
    fig, ax = subplots(height=3.6)
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
    legend_outside(ax)
    return finish(fig)


# ---------------------------------------------------------------------------------------------- chapter 6
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
    rows = int(np.ceil(len(keys) / cols))
    fig, axes = subplots(rows, cols, height=1.6 * rows + 0.4, sharex=True, sharey=True, squeeze=False)
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
    the y axis; one legend (entries by label) sits right of them."""
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
    _figure_legend_by_label(fig)
    return finish(fig)


def _figure_legend_by_label(fig, where: str = "right"):
    """One legend for all axes of ``fig``; a label drawn in different styles in different panels keeps
    the first panel's style (panels are drawn with one style per label)."""
    for ax in fig.axes:
        distinct_styles(ax)
    return legend_outside(fig, where=where)


# ---------------------------------------------------------------------------------------------- chapter 8
def plot_machine_sweep(curves: dict, *, eps: float):
    """Relative error per round of distributed EAGLE for each number of machines M (``curves``: M → array)."""
    fig, ax = subplots()
    for i, (M, rel) in enumerate(curves.items()):
        ax.semilogy(np.arange(1, len(rel) + 1), rel, label=f"M = {M}", color=plt.cm.viridis(i / max(1, len(curves) - 1)),
                    lw=1.2, ls=LINESTYLES[i % 4])
    ax.axhline(eps, color="k", ls=":", lw=0.7, label=f"target {eps:g}")
    ax.set_xlabel(r"round $\ell$"); ax.set_ylabel("relative error")
    legend_outside(ax)
    return finish(fig)


def plot_alpha_sweep(sweeps: dict, *, gd: dict | None = None, eps: float):
    """Rounds to ``eps`` against 1/ᾱ on log–log axes.  ``sweeps``: label → (mean α list, rounds list);
    ``gd``: label → (mean α list, rounds list, reached list) for distributed GD (open markers where the
    round cap was hit: a lower bound).  EAGLE in its colour, GD in its own; within each, one marker and
    line style per sweep."""
    fig, ax = subplots()
    allx = []
    for i, (label, (al, it)) in enumerate(sweeps.items()):
        x = 1 / np.asarray(al)
        allx += list(x)
        ax.loglog(x, it, marker=MARKERS[i % len(MARKERS)], ms=4, label=f"EAGLE, α {label}",
                  color=METHOD_STYLE["EAGLE"]["color"], ls=("-", "-.")[i % 2])
    if gd:
        for j, (label, (al, it, ok)) in enumerate(gd.items()):
            x, it, ok = 1 / np.asarray(al), np.asarray(it, float), np.asarray(ok, bool)
            ax.loglog(x, it, marker=MARKERS[(j + 2) % len(MARKERS)], ms=4, label=f"distributed GD, α {label}",
                      color=METHOD_STYLE["GD"]["color"], ls=("--", ":")[j % 2])
            ax.scatter(x[~ok], it[~ok], facecolors="none", edgecolors=METHOD_STYLE["GD"]["color"], s=36, zorder=3,
                       label="GD: round cap hit" if j == 0 and (~ok).any() else None)
    x0 = np.array([min(allx), max(allx)])
    first = next(iter(sweeps.values()))
    ref = np.median(np.asarray(first[1]) * np.asarray(first[0]))
    ax.loglog(x0, ref * x0, color="k", lw=0.7, ls=":", label=r"$\propto 1/\alpha$")
    ax.set_xlabel(r"$1/\bar\alpha$"); ax.set_ylabel(f"rounds to relative error {eps:g}")
    legend_outside(ax)
    return finish(fig)


def plot_round_time(parts: dict):
    """Median wall time of a round, split into compute and communication (``parts``: label → (compute, comm) s)."""
    labels = list(parts)
    fig, ax = subplots(height=max(2.2, 0.45 * len(labels) + 1.2))
    comp = np.array([parts[k][0] for k in labels]) * 1e3
    comm = np.array([parts[k][1] for k in labels]) * 1e3
    y = np.arange(len(labels))
    ax.barh(y, comp, color=METHOD_STYLE["EAGLE"]["color"], label="compute (UPDATE)")
    ax.barh(y, comm, left=comp, color=METHOD_STYLE["GD"]["color"], hatch="//", label="all_reduce")
    ax.set_yticks(y, labels); ax.invert_yaxis()
    ax.set_xlabel("ms per round (median)")
    legend_outside(ax)
    return finish(fig)


# ---------------------------------------------------------------------------------------------- chapter 7
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
            if i == 1:
                ax.set_xlabel("iteration" if x == "iteration" else "solver time (s)")
            if j == 0:
                ax.set_ylabel(f"{'rank n/2' if rd else 'full rank'}\nrelative error")
    _figure_legend_by_label(fig)
    return finish(fig)


def plot_sketched(r_sweep, per_iteration):
    """Left: EAGLE's iterations to 1e-6 against n/r.  Right: per-iteration time at s = n, n/2, n/4, n/8
    relative to s = n, ours against the paper's 21 : 16 : 7 : 5 ms.  Each panel's legend sits below it."""
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
    a2.set_xticks(xs, [f"s = {s}" for s in ss]); a2.set_ylabel(f"time per iteration\n/ time at s = {ss[0]}")
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
    _figure_legend_by_label(fig, where="below")
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
    _figure_legend_by_label(fig, where="below")
    return finish(fig)


# ---------------------------------------------------------------------------------------------- chapter 9
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


def plot_depth_losses(layers, ours, theirs, *, floor: float | None = None):
    """Noiseless GD++: loss against depth, ours and the paper's, on a log axis; ``floor``: a horizontal
    line (e.g. float32's resolution of the loss)."""
    fig, ax = subplots()
    ax.semilogy(layers, ours, label="ours", **ICL_STYLE["GD++"])
    ax.semilogy(list(theirs), list(theirs.values()), label="Vladymyrov et al.", markersize=7, **ICL_STYLE["theirs"])
    if floor is not None:
        ax.axhline(floor, color="k", lw=0.6, ls=":", label="float32 resolution")
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
    b.axhline(0, color="k", lw=0.5)
    b.set_xlabel(r"layer $\ell$"); b.set_ylabel(r"step ($\rho = 1/\mathrm{median}\,\|A_\ell\|^2$)")
    legend_outside(b)
    return finish(fig)


def plot_shrinkage(sigmas, curves: dict):
    """Loss against the sequence's noise level σ_τ (left) and the same minus ridge with the true σ_τ
    (right), for the models and the ridge baselines."""
    fig, (a, b) = subplots(1, 2)
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
    legend_outside(b)
    return finish(fig)


#: Chapter 11: one style per depth (2, 4, 8 layers and any other), darker for deeper models.
def _depth_style(i: int, n: int) -> dict:
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

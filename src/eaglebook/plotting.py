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


#: The scorecard's declared range (ours and the paper's values alike): a value outside it is drawn at the edge of
#: the axes with an arrow-like marker and its value written beside it, so that one outlier cannot flatten the rest.
SCORECARD_RANGE = (1e-5, 1e5)


def plot_scorecard(points, *, span: tuple[float, float] = SCORECARD_RANGE):
    """Ours against the paper's value on log–log axes, one marker per claim, coloured by verdict.

    ``points``: iterable of ``(key, paper, ours, verdict)``; claims without a positive paper value or with
    a non-positive or non-finite value of ours are left out (they have no place on log axes).  The axes span
    the values inside ``span`` (padded by 3×); a point with a value outside ``span`` sits on the edge of the
    axes (a triangle pointing off the scale) and is labelled with its key and value."""
    pts = [(k, p, o, v) for k, p, o, v in points
           if p is not None and p > 0 and o is not None and np.isfinite(o) and o > 0]
    fig, ax = subplots(height=3.6)
    if not pts:
        ax.text(0.5, 0.5, "no claim with a numeric paper value yet", ha="center", va="center", transform=ax.transAxes)
        ax.axis("off")
        return fig
    lo_s, hi_s = span
    p, o = np.array([x[1] for x in pts]), np.array([x[2] for x in pts])
    inside = np.concatenate([p, o])
    inside = inside[(inside >= lo_s) & (inside <= hi_s)]
    lo, hi = (inside.min() / 3, inside.max() * 3) if inside.size else (lo_s, hi_s)
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.7, ls=":", label="ours = paper")
    ax.fill_between([lo, hi], [lo / 3, hi / 3], [lo * 3, hi * 3], color="k", alpha=0.06, lw=0, label="within 3×")
    off = (p < lo_s) | (p > hi_s) | (o < lo_s) | (o > hi_s)
    for verdict, style in VERDICT_STYLE.items():
        sel = [i for i, x in enumerate(pts) if x[3] == verdict and not off[i]]
        if sel:
            ax.scatter(p[sel], o[sel], s=18, label=verdict, zorder=3, **style)
    notes = {}                                   # drawn position -> the labels of the points drawn there
    for i in np.flatnonzero(off):
        key, verdict = pts[i][0], pts[i][3]
        x, y = float(np.clip(p[i], lo, hi)), float(np.clip(o[i], lo, hi))
        marker = "^" if o[i] > hi_s else "v" if o[i] < lo_s else ">" if p[i] > hi_s else "<"
        ax.scatter([x], [y], s=40, marker=marker, color=VERDICT_STYLE.get(verdict, {}).get("color", "k"),
                   edgecolor="k", lw=0.5, zorder=4, clip_on=False)
        what = f"ours {o[i]:.2g}" if not lo_s <= o[i] <= hi_s else f"paper {p[i]:.2g}"
        notes.setdefault((x, y), []).append(f"{key}: {what}")
    for (x, y), lines in notes.items():
        right = x > np.sqrt(lo * hi)
        ax.annotate("\n".join(lines), (x, y), xytext=(-6 if right else 6, -6 if y >= hi else 6), textcoords="offset points",
                    ha="right" if right else "left", va="top" if y >= hi else "bottom", fontsize=STYLE["legend.fontsize"])
    if off.any():
        ax.scatter([], [], s=40, marker="^", color="white", edgecolor="k", lw=0.5,
                   label=f"beyond $10^{{{np.log10(lo_s):g}}}$ to $10^{{{np.log10(hi_s):g}}}$: on the edge, value written")
    ax.set_xscale("log"); ax.set_yscale("log")
    ax.set_xlim(lo, hi); ax.set_ylim(lo, hi)
    ax.set_xlabel("paper"); ax.set_ylabel("ours")
    legend_outside(ax)
    return finish(fig)


def _figure_legend_by_label(fig, where: str = "right"):
    """One legend for all axes of ``fig``; a label drawn in different styles in different panels keeps
    the first panel's style (panels are drawn with one style per label)."""
    for ax in fig.axes:
        distinct_styles(ax)
    return legend_outside(fig, where=where)


    return finish(fig)


    return finish(fig)



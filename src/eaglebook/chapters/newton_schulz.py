"""Chapter 6 (book/06_newton_schulz.md): the Newton–Schulz connection and the theorems checked.

The chapter computes; this module holds its bookkeeping: the tables of its sweeps, the phrases its
sentences take from the data, the values of its declared comparisons (:mod:`eaglebook.comparisons.
c06_newton_schulz`), its checks, everything its prose quotes (:func:`glued`), and its figures."""

from __future__ import annotations

import warnings

import numpy as np

from ..comparisons import c06_newton_schulz as c06
from ..ledger import Check
from ..plotting import LINESTYLES, MARKERS, METHOD_STYLE, finish, legend_outside, subplots
from ..stability import Resampled, phrase as stability_phrase

__all__ = ["EPS", "FLOOR_FACTOR", "rule", "grid", "median_fit", "order", "spread_word", "floor_phrase",
           "kappa_table", "alpha_table", "constants_table", "layers", "gd_span", "gd_median_word", "mp_late",
           "alpha_slope_side", "kappa_linear_word", "alpha_linear_word", "declared_phrase", "recorded", "checks",
           "glued", "plot_sv_map", "plot_spectra", "plot_theta", "plot_kappa_sweep", "plot_eps_sweep", "plot_alpha", "plot_error_curves"]

#: The float64 unit roundoff (the checks' tolerances are multiples of it; a numpy float, as the ledger has
#: always stored these bounds).
EPS = np.finfo(np.float64).eps
#: EAGLE "reaches the float64 floor" of a problem where its best error is within this factor of `lstsq`'s
#: (the median over the problems of each κ); the prose's words about the floor come from :func:`floor_phrase`.
FLOOR_FACTOR = 3.0


# ---------------------------------------------------------------------------------------------- statistics
def grid(runs: list[dict], key: str, *, by: str = "kappa", **match) -> np.ndarray:
    """``runs`` (dicts with ``problem`` and ``by`` entries) as a (problems × values of ``by``) array of ``key``,
    keeping the runs whose entries equal ``match`` (e.g. ``kind="worst case"``); columns in the order of first
    appearance."""
    sel = [r for r in runs if all(r[k] == v for k, v in match.items())]
    cols = list(dict.fromkeys(r[by] for r in sel))
    rows = sorted({r["problem"] for r in sel})
    out = np.full((len(rows), len(cols)), np.nan)
    for r in sel:
        out[rows.index(r["problem"]), cols.index(r[by])] = r[key]
    return out


def median_fit(x, counts) -> tuple[float, float, float, np.ndarray]:
    """The least-squares line through the median over the problems (rows of ``counts``) of each column, against
    ``x`` (one per column), over the columns where every problem has a value (not NaN).  Returns (slope,
    intercept, R², the mask of the columns used); NaNs where fewer than 3 columns are left."""
    c = np.atleast_2d(np.asarray(counts, dtype=float))
    x = np.asarray(x, dtype=float)
    ok = ~np.isnan(c).any(axis=0)
    if ok.sum() < 3:
        return float("nan"), float("nan"), float("nan"), ok
    y = np.median(c[:, ok], axis=0)
    slope, intercept = np.polyfit(x[ok], y, 1)
    resid = y - (slope * x[ok] + intercept)
    tot = np.sum((y - y.mean()) ** 2)
    r2 = 1 - np.sum(resid ** 2) / tot if tot > 0 else float("nan")
    return float(slope), float(intercept), float(r2), ok


def order(err, theta, *, above_floor: float = 100.0) -> float:
    """The order p of ``err[ℓ+1] ∝ err[ℓ]^p`` once conditioned: the least-squares slope of log err[ℓ+1] on
    log err[ℓ] over the steps with ``theta[ℓ] < 1`` (θ = κ(A_ℓA_ℓᵀ) − 1, the proof's quadratic phase) and
    err[ℓ+1] at least ``above_floor`` times the run's smallest error (above its float64 floor); NaN with fewer
    than 2 such steps."""
    e, t = np.asarray(err, dtype=float), np.asarray(theta, dtype=float)
    floor = np.min(e[e > 0]) if (e > 0).any() else 0.0
    sel = (t[:-1] < 1) & (e[:-1] > 0) & (e[1:] >= above_floor * floor)
    if sel.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(e[:-1][sel]), np.log(e[1:][sel]), 1)[0])


# ---------------------------------------------------------------------------------------------- phrases
def rule(crit, ref: str | None = None) -> str:
    """A criterion in words, for the prose (no nested parentheses): when it counts as reproduced, then partly;
    ``ref`` names the reference of a factor criterion."""
    if crit.kind == "factor":
        return (f"counts as reproduced if it is within a factor {crit.a:g} of {ref}"
                + (f", and as partly reproduced if within a factor {crit.partly:g}" if crit.partly else ""))
    if crit.kind == "at_least":
        return (f"counts as reproduced if it is at least {crit.a:g}"
                + (f", and as partly reproduced if at least {crit.partly:g}" if crit.partly else ""))
    raise ValueError(f"no wording for a criterion of kind {crit.kind!r}")


def spread_word(counts) -> str:
    """The largest spread (max − min over the problems, rows of ``counts``) of a count over the columns where
    every problem has a value, in words: "the same count on every problem" or "at most 2 iterations apart"."""
    c = np.atleast_2d(np.asarray(counts, dtype=float))
    ok = ~np.isnan(c).any(axis=0)
    if not ok.any():
        return "no column reached by every problem"
    w = float(np.max(c[:, ok].max(axis=0) - c[:, ok].min(axis=0)))
    return ("the same count on every problem" if w == 0 else
            f"at most {w:g} iteration{'s' if w != 1 else ''} apart")


def floor_phrase(kappas, ratios, statuses=None, *, factor: float = FLOOR_FACTOR) -> str:
    """Where EAGLE reaches the float64 floor of the problems and where not.  ``ratios``: per κ, the median over
    the problems of EAGLE's best error over `lstsq`'s; ``statuses``: per κ, the solver statuses seen (a set or
    a list).  EAGLE is on the floor at a κ where its ratio is at most ``factor``."""
    k = np.asarray(kappas, dtype=float)
    r = np.asarray(ratios, dtype=float)
    on = r <= factor
    fmt = lambda x: f"{x:.0e}".replace("e+0", "e").replace("e+", "e")
    head = f"EAGLE's best error is within a factor {factor:g} of `lstsq`'s (median over the problems)"
    if on.all():
        return f"{head} at every κ of the sweep, up to {fmt(k[-1])}"
    first_off = int(np.argmin(on))
    where_on = (f"at every κ up to {fmt(k[first_off - 1])}" if first_off > 0 else "at no κ")
    later_on = [fmt(x) for x in k[first_off:][on[first_off:]]]
    if later_on:
        where_on += " and at " + ", ".join(later_on)
    offs = []
    for i in np.flatnonzero(~on):
        st = sorted(set(statuses[i])) if statuses is not None else []
        extra = [s for s in st if s != "converged"]
        offs.append(f"{fmt(k[i])} ({r[i]:.2g} times" + (f", status {', '.join(extra)}" if extra else "") + ")")
    return f"{head} {where_on}, but not at " + ", ".join(offs)


def declared_phrase(ledger, key: str) -> str:
    """The verdict of the row ``key`` as recorded (with its reason where not judged), for the prose."""
    c = ledger.comparisons[key]
    return c["verdict"] + (f": {c['why']}" if c.get("why") else "")


def layers(k) -> str:
    """``k`` layers in words: "1 layer", "2 layers"."""
    return f"{k:g} layer{'s' if k != 1 else ''}"


def gd_span(diffs) -> str:
    """How GD++'s depth compares with EAGLE's iterations over the sweep; ``diffs``: GD++ layers − EAGLE
    iterations to the same accuracy, one integer per κ."""
    lo, hi = min(diffs), max(diffs)
    if lo == hi:
        return ("as many layers as EAGLE needs iterations" if lo == 0 else
                f"{layers(abs(lo))} {'more' if lo > 0 else 'fewer'} than EAGLE needs iterations") + " at every κ"
    if lo == 0 or hi == 0:
        return ("as many layers as EAGLE needs iterations or up to "
                + (f"{layers(hi)} more" if lo == 0 else f"{layers(-lo)} fewer"))
    if lo > 0:
        return f"between {lo:g} and {layers(hi)} more than EAGLE needs iterations"
    if hi < 0:
        return f"between {-hi:g} and {layers(-lo)} fewer than EAGLE needs iterations"
    return f"from {layers(-lo)} fewer to {layers(hi)} more than EAGLE needs iterations"


def gd_median_word(diffs) -> str:
    """The median of ``diffs`` (see :func:`gd_span`) in words."""
    med = float(np.median(diffs))
    return "the same depth" if med == 0 else f"{layers(abs(med))} {'more' if med > 0 else 'fewer'} for GD++"


def mp_late(kappas, counts) -> str:
    """What `make_problem`'s iteration count does from κ = 1e6 on (``counts``: iterations to 1e-6 per κ, NaN
    where never reached).  The prose says the count stops growing there: asserted (at most 25% above the
    count at 1e6)."""
    late = np.asarray(counts, dtype=float)[np.asarray(kappas) >= 1e6]
    if not late.size:
        return "the sweep stops before it"
    assert np.nanmax(late) <= 1.25 * late[0], "prose: make_problem's count stops growing near κ = 1e6"
    return f"between {np.nanmin(late):.0f} and {np.nanmax(late):.0f} iterations from there to the largest κ"


def alpha_slope_side(slope: float) -> str:
    """Which side of ln 10⁶ the α slope falls, and why that is expected (or not)."""
    return ("below ln 10⁶: C starts with only a share of about 1/√d of its norm in the weak direction, which lowers "
            "the count needed to reach a relative error of 10⁻⁶" if slope < np.log(1e6) else
            "at least ln 10⁶, although C starts with only a share of about 1/√d of its norm in the weak direction, "
            "which should lower the count needed to reach a relative error of 10⁻⁶")


def kappa_linear_word(r2: float) -> str:
    """"on a straight line in log κ" where R² meets the criterion for reproduced, else "only roughly on a straight
    line in log κ"."""
    return ("on a straight line in $\\log\\kappa$" if r2 >= c06.KAPPA_LINEAR.a else
            "only roughly on a straight line in $\\log\\kappa$")


def alpha_linear_word(r2: float) -> str:
    """"linear in 1/α" where R² meets the criterion for reproduced, else "only roughly linear in 1/α"."""
    return "linear in 1/α" if r2 >= c06.ALPHA_LINEAR.a else "only roughly linear in 1/α"


# ---------------------------------------------------------------------------------------------- tables
def _span(v, fmt: str = ".0f") -> str:
    """The median of ``v`` (NaNs ignored) and, where they differ, its range: "27" or "27 (26–28)"."""
    v = np.asarray(v, dtype=float)
    v = v[~np.isnan(v)]
    if not v.size:
        return "—"
    med, lo, hi = np.median(v), v.min(), v.max()
    return f"{med:{fmt}}" + ("" if lo == hi else f" ({lo:{fmt}}–{hi:{fmt}})")


def _statuses(runs) -> str:
    """The solver statuses of ``runs``, counted: "8 converged" or "5 converged, 3 rank_deficient"."""
    from collections import Counter
    return ", ".join(f"{n} {s}" for s, n in Counter(r["status"] for r in runs).items())


def kappa_table(sweep: list[dict]) -> str:
    """The κ sweep, one row per (κ, query block): over its problems, the median count (range), how many reached
    1e-6, the median best error (largest), `lstsq`'s median error, and the statuses."""
    out = ["| κ | C | iterations to 1e-6 | reached 1e-6 | to the floor | best error | lstsq | status |",
           "|---|---|---|---|---|---|---|---|"]
    for (kappa, kind) in dict.fromkeys((s["kappa"], s["kind"]) for s in sweep):
        runs = [s for s in sweep if s["kappa"] == kappa and s["kind"] == kind]
        col = lambda key: np.array([r[key] for r in runs], dtype=float)
        reached = int((~np.isnan(col("it6"))).sum())
        out.append(f"| {kappa:.0e} | {kind} | {_span(col('it6'))} | {reached} of {len(runs)} "
                   f"| {_span(col('it_best'))} | {np.median(col('best')):.1e} (≤ {col('best').max():.1e}) "
                   f"| {np.median(col('lstsq')):.1e} | {_statuses(runs)} |")
    return "\n".join(out)


def alpha_table(dist: list[dict]) -> str:
    """The α sweep, one row per diversity index: over its problems, the median count (range), statuses and the
    largest best error."""
    out = ["| α | 1/α | iterations to 1e-6 | status | best error (largest) |", "|---|---|---|---|---|"]
    for target in dict.fromkeys(s["target"] for s in dist):
        runs = [s for s in dist if s["target"] == target]
        a = float(np.median([r["alpha"] for r in runs]))
        out.append(f"| {a:.3g} | {1 / a:.3g} | {_span([r['it6'] for r in runs])} | {_statuses(runs)} "
                   f"| {max(r['best'] for r in runs):.1e} |")
    return "\n".join(out)


def constants_table(const: dict) -> str:
    """One row per set of constants (name → solver result)."""
    return "\n".join(["| constants | iterations | status | final relative error |", "|---|---|---|---|"]
                     + [f"| {k} | {r.iterations} | `{r.status}` | {r.rel_error[-1]:.1e} |" for k, r in const.items()])


# ---------------------------------------------------------------------------------------------- bookkeeping
def recorded(*, kappas, kappa_counts, loglog: float, orders: dict, alpha_x, alpha_counts, gd_kappas,
             gd_diffs) -> dict:
    """The values of chapter 6's declared comparisons (:mod:`eaglebook.comparisons.c06_newton_schulz`).

    ``kappa_counts``: iterations to 1e-6 on the worst-case problems, problems × κ (NaN: never reached); a unit of
    the resampling is a row, the j-th problem of every κ.  ``orders``: name → the order p of one problem (see
    :func:`order`).  ``alpha_x``: 1/α per column of ``alpha_counts`` (problems × α).  ``gd_diffs``: GD++ layers −
    EAGLE iterations, one per κ in ``gd_kappas``.  Every statistic over problems is :class:`Resampled`."""
    lk = np.log10(np.asarray(kappas, dtype=float))
    K = np.asarray(kappa_counts, dtype=float)
    X = np.asarray(alpha_counts, dtype=float)
    ax = np.asarray(alpha_x, dtype=float)
    by_row = lambda M: [f"#{j}" for j in range(len(M))]
    kappa = lambda i: Resampled(K, lambda V: median_fit(lk, V)[i], unit="problems", names=by_row(K))
    alpha = lambda i: Resampled(X, lambda V: median_fit(ax, V)[i], unit="problems", names=by_row(X))
    return dict(C6_kappa_slope=kappa(0), C6_kappa_slope_map=kappa(0), C6_kappa_linear=kappa(2),
                C6_loglog=loglog,
                C6_loglog_order=Resampled(np.array(list(orders.values()), dtype=float), np.nanmedian,
                                          unit="problems", names=list(orders)),
                C6_alpha_slope=alpha(0), C6_alpha_linear=alpha(2),
                C6_gdpp_layers=Resampled(np.asarray(gd_diffs, dtype=float), np.median, unit="problems",
                                         names=[f"κ = {k:.0e}" for k in gd_kappas]))


def checks(*, n: int, ns_gap: float, polar_err: float, quad_ratio: float, quad_exponent: float, error_gap: float,
           acc_invariant: float, eps_counts, alpha_dev: float) -> list[Check]:
    """The properties chapter 6 asserts: the Newton–Schulz identity, the polar factor, the proof's quadratic
    phase, the error formula, the accelerated step's invariant, the ε cost and the α construction.  Their
    ``what`` is Markdown: the reproducibility page's table renders the $…$ as mathematics."""
    return [
        Check("C6_ns_identity", ns_gap, upper=4 * n * EPS,
              what=r"$\max_\ell \lVert \bar A_{\ell+1} - \mathrm{NS}(\bar A_\ell)\rVert_F/\sqrt{n}$ with "
                   r"$\bar A_\ell = A_\ell/\lVert A_\ell\rVert_2$, along EAGLE (float64, κ = 1e4)"),
        Check("C6_polar", polar_err, upper=1e4 * n * EPS,
              what=r"$\lVert X_K - UV^\top\rVert_2$ of the Newton–Schulz polar factor (float64, κ = 1e4; bound κ·n·u)"),
        Check("C6_quad_ratio", quad_ratio, upper=1 + 1e-3,
              what=r"largest $\theta_{\ell+1} / (\tfrac34\theta_\ell^2)$ over the quadratic phase (Theorem 1's proof)"),
        Check("C6_quad_exponent", quad_exponent, lower=1.7, upper=2.3,
              what=r"fitted exponent $p$ in $\theta_{\ell+1} \propto \theta_\ell^{\,p}$ for $\theta_\ell < 1$"),
        Check("C6_error_formula", error_gap, upper=1e3 * n * EPS,
              what=r"$\max_\ell \lVert (D_\ell - \hat D^\ast) + W^\ast N_\ell C_0\rVert_F / \lVert \hat D^\ast\rVert_F$ "
                   "(float64, κ = 1e3)"),
        Check("C6_acc_invariant", acc_invariant, upper=1e-12,
              what=r"largest relative deviation of $D_\ell + B_\ell A_\ell^\dagger C_\ell$ from $BA^\dagger C$, "
                   "rounds 2–20, polar-express, float64"),
        Check("C6_eps_extra", eps_counts[-1] - eps_counts[1], upper=5,
              what="extra iterations from ε = 1e-4 to 1e-14 (κ = 1e2, make_problem)"),
        Check("C6_alpha_construction", alpha_dev, upper=1e-10,
              what="largest difference between diversity_index and the target α of the constructed machine blocks"),
    ]


def glued(*, fixed, dg, n: int, polar_iterations: int, lin_rate: float, switch: int, quad_pairs: int,
          kappas, sweep: list[dict], problems: int, kappa_slope: float, kappa_r2: float, eps_counts, orders: dict,
          alpha_d: int, alpha_problems: int, alpha_fit, alpha_r2: float, gd_diffs, const: dict, ledger) -> dict:
    """Everything chapter 6's prose quotes, by key (``ledger``: the chapter's, its comparisons recorded).
    ``sweep``: the κ sweep's runs (dicts with kappa, kind, problem, it6, best, lstsq, status).
    Asserts what the prose states in fixed words (each message starts with "prose:")."""
    assert abs(lin_rate / (4 / 9) - 1) < 0.05, "prose: in the linear phase θ shrinks by about 4/9 per step"
    assert kappa_slope > c06.PER_DECADE_THEOREM, "prose: the superseded constant (6/5)·ln 10 is too small"
    worst = grid(sweep, "it6", kind="worst case")
    best, lstsq = grid(sweep, "best", kind="worst case"), grid(sweep, "lstsq", kind="worst case")
    ratio = np.median(best / lstsq, axis=0)
    statuses = [[s["status"] for s in sweep if s["kind"] == "worst case" and s["kappa"] == k] for k in kappas]
    reached = ~np.isnan(worst).any(axis=0)
    assert max(abs(x) for x in gd_diffs) <= 2, "prose: GD++ and EAGLE reach 1e-6 with the same depth (within 2)"
    theorem, instance, scaled = const.values()
    assert theorem.rel_error[-1] < 1e-10 and scaled.rel_error[-1] < 1e-10, "prose: these two converge"
    assert instance.rel_error.min() > 1e-3, "prose: with the per-instance ρ the transformer's constants stall"
    mp = np.nanmedian(grid(sweep, "it6", kind="make_problem"), axis=0)
    p = np.array(list(orders.values()), dtype=float)
    stab = lambda key: stability_phrase(ledger.comparisons[key].get("stability"))
    return dict(
        C6_fp_lo=fixed[0], C6_fp_hi=fixed[-1], C6_dg_lo=dg[0], C6_dg_hi=dg[-1], C6_n=n, C6_polar_iters=polar_iterations,
        C6_lin_rate=lin_rate, C6_switch=switch, C6_quad_pairs=quad_pairs, C6_problems=problems,
        C6_kappa_map_rule=rule(c06.KAPPA_MAP, "the reference (our derivation)"),
        C6_kappa_first_rule=rule(c06.KAPPA_FIRST, "that first reference (also our own reading)"),
        C6_kappa_linear_rule=rule(c06.KAPPA_LINEAR), C6_per_decade_map=c06.PER_DECADE_MAP,
        C6_kappa_max=kappas[-1], C6_kappa_reached=kappas[reached][-1] if reached.any() else float("nan"),
        C6_kappa_spread=spread_word(worst), C6_kappa_line_word=kappa_linear_word(kappa_r2),
        C6_floor_last=float(np.median(best[:, -1])), C6_lstsq_last=float(np.median(lstsq[:, -1])),
        C6_floor_where=floor_phrase(kappas, ratio, statuses), C6_floor_factor=FLOOR_FACTOR,
        C6_mp_late=mp_late(kappas, mp),
        C6_mp_floor=float(max(np.max(np.median(grid(sweep, key, kind="make_problem"), axis=0))
                              for key in ("best", "lstsq"))),
        C6_loglog_rule=rule(c06.LOGLOG, "the predicted 1 iteration per doubling"),
        C6_order_rule=rule(c06.LOGLOG_ORDER, "2, the order of the proof's quadratic phase"),
        C6_order_count=int(np.sum(~np.isnan(p))), C6_order_lo=float(np.nanmin(p)), C6_order_hi=float(np.nanmax(p)),
        C6_it_e4=eps_counts[1], C6_it_e14=eps_counts[-1],
        C6_alpha_slope_rule=rule(c06.ALPHA_SLOPE, "ln 10⁶ (our reading of the theorem's constant)"),
        C6_alpha_linear_rule=rule(c06.ALPHA_LINEAR), C6_alpha_d=alpha_d, C6_alpha_problems=alpha_problems,
        C6_alpha_slope_side=alpha_slope_side(alpha_fit[0]), C6_alpha_linear_word=alpha_linear_word(alpha_r2),
        C6_gd_diff_min=min(gd_diffs), C6_gd_diff_max=max(gd_diffs), C6_gd_span=gd_span(gd_diffs),
        C6_gd_median_word=gd_median_word(gd_diffs),
        **{f"C6_const_{k}{s}": f(r.rel_error) for k, r in zip(("theorem", "instance", "scaled"), const.values())
           for s, f in (("", lambda e: e[-1]), ("_best", np.min))},
        C6_kappa_linear_stability=stab("C6_kappa_linear"), C6_order_stability=stab("C6_loglog_order"),
        C6_findings_kappa=ledger.verdict_phrase("theorem1-kappa"),
        C6_findings_kappa_declared=declared_phrase(ledger, "C6_kappa_slope"),
        C6_findings_loglog=ledger.verdict_phrase("theorem1-loglog"),
        C6_findings_loglog_declared=declared_phrase(ledger, "C6_loglog"),
        C6_findings_gdpp=ledger.verdict_phrase("not-gdpp"))


# ---------------------------------------------------------------------------------------------- figures
def _floor(ax, y: float | None = None, label: str | None = None) -> None:
    """A dotted horizontal line at the float64 unit roundoff (or at ``y``); ``label`` puts it in the legend."""
    ax.axhline(np.finfo(float).eps if y is None else y, color="k", ls=":", lw=0.7,
               **({"label": label} if label else {}))


def _median_and_range(values):
    """(median, low, high) per column of ``values`` (problems × points; a 1-D array is one problem), NaNs
    ignored; NaN where a column has no value."""
    v = np.atleast_2d(np.asarray(values, dtype=float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # an all-NaN column: NaN, as documented
        return np.nanmedian(v, axis=0), np.nanmin(v, axis=0), np.nanmax(v, axis=0)


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
    """θ_ℓ = κ(E_ℓ) − 1 against ℓ (log axis), the line θ = 1, the float64 unit roundoff, optionally the proof's
    quadratic bound ¾θ_{ℓ−1}² (``predicted``, aligned with ``theta``; NaN where it does not apply) and the first
    ℓ with θ_ℓ < 1 (``switch``); every line is in the legend."""
    fig, ax = subplots()
    t = np.asarray(theta, dtype=float)
    ax.semilogy(np.arange(len(t)), t, marker="o", ms=3, label=r"$\theta_\ell$", **METHOD_STYLE["EAGLE"])
    if predicted is not None:
        ax.semilogy(np.arange(len(t)), predicted, "x", ms=5, color=METHOD_STYLE["transformer"]["color"],
                    label=r"bound $\frac{3}{4}\theta_{\ell-1}^2$")
    ax.axhline(1.0, color="k", lw=0.7, ls="--", label=r"$\theta = 1$")
    if switch is not None:
        ax.axvline(switch, color="#999999", lw=0.7, label=r"first $\ell$ with $\theta_\ell < 1$")
    _floor(ax, label=r"float64 unit roundoff $u$")
    ax.set_xlabel(r"iteration $\ell$")
    ax.set_ylabel(r"$\theta_\ell = \kappa(E_\ell) - 1$")
    legend_outside(ax)
    return finish(fig)


def plot_kappa_sweep(kappas, iterations: dict, floors: dict, *, reference=None, eps_line=True):
    """Left: iterations against κ (log x), one line per entry of ``iterations`` (label → counts, NaN where the
    target was not reached), with an optional ``reference`` (label, values).  Right: the best relative error
    each method reached against κ (``floors``: label → errors), with κ·u as a line.  A value may be a
    (problems × κ) array: the line is the median over the problems and a band their range.  Each panel's
    legend sits below it."""
    fig, (ax1, ax2) = subplots(1, 2, height=3.8)
    k = np.asarray(kappas, dtype=float)
    for i, (label, its) in enumerate(iterations.items()):
        med, lo, hi = _median_and_range(its)
        line, = ax1.semilogx(k, med, marker=MARKERS[i % len(MARKERS)], ms=3, label=label, color=f"C{i % 10}")
        if np.ndim(its) == 2 and np.any(hi > lo):
            ax1.fill_between(k, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
    if reference is not None:
        ax1.semilogx(k, reference[1], color="k", lw=0.8, ls=":", label=reference[0])
    ax1.set_xlabel(r"$\kappa(A)$")
    ax1.set_ylabel("iterations")
    styles = [METHOD_STYLE["EAGLE"], METHOD_STYLE["SVD"], METHOD_STYLE["GD"], METHOD_STYLE["CG"]]
    for i, (label, err) in enumerate(floors.items()):
        st = styles[i] if i < len(styles) else dict(color=f"C{i % 10}")
        med, lo, hi = _median_and_range(err)
        ax2.loglog(k, med, marker=".", ms=4, label=label, **st)
        if np.ndim(err) == 2 and np.any(hi > lo):
            ax2.fill_between(k, lo, hi, color=st["color"], alpha=0.15, lw=0)
    if eps_line:
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
    """Iterations against 1/α (distributed EAGLE), with an optional fitted line ``fit = (slope, intercept)``.
    ``iterations`` may be a (problems × α) array: the median with the range over the problems as error bars."""
    fig, ax = subplots()
    x = np.asarray(inv_alpha, dtype=float)
    med, lo, hi = _median_and_range(iterations)
    colour = METHOD_STYLE["distributed"]["color"]
    if np.ndim(iterations) == 2:
        ax.errorbar(x, med, yerr=[med - lo, hi - med], fmt="o", ms=4, color=colour, capsize=3,
                    label="distributed EAGLE (median, range)")
    else:
        ax.plot(x, med, "o", ms=4, color=colour, label="distributed EAGLE")
    if fit is not None:
        xs = np.linspace(0, x.max() * 1.05, 50)
        ax.plot(xs, fit[0] * xs + fit[1], color="k", lw=0.8, ls=":", label="least-squares line")
    ax.set_xlabel(r"$1/\alpha$")
    ax.set_ylabel("iterations")
    legend_outside(ax)
    return finish(fig)


def plot_error_curves(panels: dict, *, styles: dict | None = None, markers: dict | None = None,
                      xlabel: str = r"iteration $\ell$ / layers $L$", ylabel: str = "relative error"):
    """One panel per entry of ``panels`` (title → {label: errors, or (x, errors)}; errors alone are plotted
    at x = 1, 2, …), log y, with the float64 floor.  ``styles`` maps a label to a METHOD_STYLE key; a key
    used a second time in a panel is drawn dotted.  ``markers`` maps a label to a marker, drawn on every few
    points; the markers of different symbols are staggered (the second symbol half a stride later), so two
    curves that coincide both stay visible.  Unstyled labels get the colour cycle.  Panels share the y axis;
    one legend (entries by label; a label keeps the first panel's style) sits right of them."""
    styles, markers = styles or {}, markers or {}
    symbols = list(dict.fromkeys(markers.values()))
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
            if label in markers:
                stride = max(2, len(x) // 10)
                phase = (symbols.index(markers[label]) * stride // 2) % stride
                st.update(marker=markers[label], ms=5, markevery=(phase, stride), mfc="none")
            ax.semilogy(x, y, label=label, lw=1.1, **st)
        _floor(ax)
        ax.set_xlabel(xlabel)
        if title:
            ax.set_title(title)
    axes[0, 0].set_ylabel(ylabel)
    legend_outside(fig)   # tells alike series apart in every panel, then one legend by label
    return finish(fig)

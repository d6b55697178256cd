"""Chapter 6's module (eaglebook.chapters.newton_schulz): its phrases, tables, recorded values, checks and glue,
on small fake inputs."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest

from eaglebook import comparisons
from eaglebook.chapters import newton_schulz as chap
from eaglebook.comparisons import c06_newton_schulz as c06
from eaglebook.ledger import at_least, in_range, within_factor

REPO = Path(__file__).resolve().parents[1]
CHAPTER = "06_newton_schulz"


def test_rule_words_each_criterion():
    assert chap.rule(within_factor(2.0, partly=4.0), "ln 10⁶") == (
        "counts as reproduced if it is within a factor 2 of ln 10⁶, and as partly reproduced if within a factor 4")
    assert chap.rule(within_factor(1.5), "x") == "counts as reproduced if it is within a factor 1.5 of x"
    assert chap.rule(at_least(0.95, partly=0.8)) == (
        "counts as reproduced if it is at least 0.95, and as partly reproduced if at least 0.8")
    with pytest.raises(ValueError, match="range"):
        chap.rule(in_range(-2, 2))


@pytest.mark.parametrize("diffs, words", [
    ([0, 0, 0], "as many layers as EAGLE needs iterations at every κ"),
    ([1, 1], "1 layer more than EAGLE needs iterations at every κ"),
    ([-2, -2], "2 layers fewer than EAGLE needs iterations at every κ"),
    ([0, -1, 0], "as many layers as EAGLE needs iterations or up to 1 layer fewer"),
    ([0, 2], "as many layers as EAGLE needs iterations or up to 2 layers more"),
    ([1, 3], "between 1 and 3 layers more than EAGLE needs iterations"),
    ([-1, -2], "between 1 and 2 layers fewer than EAGLE needs iterations"),
    ([-1, 2], "from 1 layer fewer to 2 layers more than EAGLE needs iterations"),
])
def test_gd_span(diffs, words):
    assert chap.gd_span([float(d) for d in diffs]) == words


def test_gd_median_word():
    assert chap.gd_median_word([0.0, -1.0, 0.0]) == "the same depth"
    assert chap.gd_median_word([1.0, 1.0, 2.0]) == "1 layer more for GD++"
    assert chap.gd_median_word([-2.0, -2.0]) == "2 layers fewer for GD++"


def test_mp_late_says_where_the_count_stops_and_refuses_growth():
    kappas = 10.0 ** np.arange(1, 10)
    assert chap.mp_late(kappas[:5], [9, 15, 20, 26, 31]) == "the sweep stops before it"
    counts = [9, 15, 20, 26, 31, 32, 31, np.nan, 38]
    assert chap.mp_late(kappas, counts) == "between 31 and 38 iterations from there to the largest κ"
    with pytest.raises(AssertionError, match="stops growing"):
        chap.mp_late(kappas, [9, 15, 20, 26, 31, 32, 36, 40, 45])


def test_alpha_phrases_follow_the_data():
    assert chap.alpha_slope_side(11.1).startswith("below ln 10⁶")
    assert chap.alpha_slope_side(np.log(1e6)).startswith("at least ln 10⁶")
    assert chap.alpha_linear_word(0.95) == "linear in 1/α"
    assert chap.alpha_linear_word(0.9) == "only roughly linear in 1/α"


def _sweep():
    out = []
    for i, k in enumerate(10.0 ** np.arange(1, 9)):
        for kind, it6, best in (("worst case", 10 + 6 * i if i < 6 else np.nan, 1e-16 * k),
                                ("make_problem", min(10 + 6 * i, 32), 1e-16)):
            out.append(dict(kappa=k, kind=kind, it6=float(it6), best=best, it_best=12.0 + 6 * i, stop=14 + 6 * i,
                            status="converged", lstsq=1.2e-16 * k if kind == "worst case" else 2e-16))
    return out


def test_tables_have_a_row_per_run_and_mark_unreached_targets():
    sweep = _sweep()
    t = chap.kappa_table(sweep).splitlines()
    assert len(t) == 2 + len(sweep) and all(line.count("|") == 9 for line in t)
    assert "| 1e+07 | worst case | — |" in t[2 + 12]
    a = chap.alpha_table([dict(alpha=1.0, it6=15.0, status="converged", best=3e-15),
                          dict(alpha=0.1, it6=136.0, status="converged", best=5e-10)]).splitlines()
    assert a[3] == "| 0.1 | 10 | 136 | converged | 5.0e-10 |"
    c = chap.constants_table({"theorem": NS(iterations=18, status="converged", rel_error=np.array([1.0, 8e-16]))})
    assert c.splitlines()[2] == "| theorem | 18 | `converged` | 8.0e-16 |"


def test_recorded_fills_exactly_the_declared_rows():
    declared = [r.key for r in comparisons.rows(CHAPTER)]
    assert declared == [r.key for r in c06.ROWS]
    got = chap.recorded(kappa_slope=5.67, kappa_r2=0.999, loglog=1.16, alpha_fit=(11.07, 3.0), alpha_r2=0.996,
                        gd_diffs=[0.0, -1.0, 0.0])
    assert list(got) == declared
    assert got["C6_kappa_slope"] == got["C6_kappa_slope_map"] == 5.67
    assert got["C6_alpha_slope"] == 11.07 and got["C6_gdpp_layers"] == 0.0


def test_superseded_constant_and_the_mechanism_constant():
    assert c06.PER_DECADE_THEOREM == pytest.approx(2.7631, abs=1e-4)
    assert c06.PER_DECADE_MAP == pytest.approx(5.6789, abs=1e-4)
    row = {r.key: r for r in c06.ROWS}
    assert row["C6_kappa_slope_map"].supersedes == "C6_kappa_slope"
    assert row["C6_kappa_slope"].paper_text.startswith("(6/5)·ln 10 ≈ 2.76 ")


def _checks(**over):
    kw = dict(n=40, ns_gap=6e-16, polar_err=3e-13, quad_ratio=0.9997, quad_exponent=1.92, error_gap=1e-14,
              acc_invariant=4e-15, eps_counts=np.array([9, 14, 15, 15, 16, 16, 16.0]), alpha_dev=2e-15)
    return {c.key: c for c in chap.checks(**(kw | over))}


def test_checks_hold_on_good_values_and_fail_on_bad_ones():
    ok = lambda c: (c.lower is None or c.value >= c.lower) and (c.upper is None or c.value <= c.upper)
    good = _checks()
    assert list(good) == ["C6_ns_identity", "C6_polar", "C6_quad_ratio", "C6_quad_exponent", "C6_error_formula",
                          "C6_acc_invariant", "C6_eps_extra", "C6_alpha_construction"]
    assert all(ok(c) for c in good.values())
    assert good["C6_eps_extra"].value == 2 and good["C6_ns_identity"].upper == pytest.approx(4 * 40 * 2.0 ** -52)
    assert not ok(_checks(quad_exponent=1.0)["C6_quad_exponent"])          # a linear phase fails the fit
    assert not ok(_checks(eps_counts=np.array([9, 14, 16, 18, 20, 22, 24.0]))["C6_eps_extra"])


class _Ledger:
    def verdict_phrase(self, claim):
        return f"verdict of {claim}"


def _glued(**over):
    const = {k: NS(rel_error=np.array(e)) for k, e in (("theorem", [1.0, 8e-16]), ("instance", [0.3, 0.25, 0.35]),
                                                        ("scaled", [1.0, 4e-16]))}
    kw = dict(fixed=np.array([0.0, 1.0]), dg=np.array([1.5, 0.0]), n=40, polar_iterations=29, lin_rate=0.4444,
              switch=34, quad_pairs=4, kappas=10.0 ** np.arange(1, 9), sweep=_sweep(), kappa_slope=5.67,
              eps_counts=np.array([9, 14, 15, 15, 16, 16, 16.0]), alpha_d=18, alpha_fit=(11.07, 3.0),
              alpha_r2=0.996, gd_diffs=[0.0, -1.0, 0.0], const=const, ledger=_Ledger())
    return chap.glued(**(kw | over))


def test_glued_values():
    g = _glued()
    assert g["C6_kappa_reached"] == 1e6 and g["C6_kappa_max"] == 1e8
    assert g["C6_ratio_floor"] == pytest.approx(1 / 1.2) and g["C6_it_e4"] == 14 and g["C6_it_e14"] == 16
    assert g["C6_const_instance"] == 0.35 and g["C6_const_instance_best"] == 0.25
    assert g["C6_gd_span"] == "as many layers as EAGLE needs iterations or up to 1 layer fewer"
    assert g["C6_findings_gdpp"] == "verdict of not-gdpp"


@pytest.mark.parametrize("over, words", [
    (dict(lin_rate=0.5), "4/9"), (dict(kappa_slope=2.0), "too small"), (dict(gd_diffs=[0.0, 3.0]), "same depth"),
])
def test_glued_refuses_data_that_contradict_the_prose(over, words):
    with pytest.raises(AssertionError, match=words):
        _glued(**over)


def test_theta_figure_names_every_line_in_its_legend():
    import matplotlib
    matplotlib.use("Agg")
    t = 10.0 ** -np.arange(-3.0, 8)
    fig = chap.plot_theta(t, predicted=t / 2, switch=4)
    labels = [x.get_text() for x in fig.axes[0].get_legend().get_texts()]
    assert len(labels) == 5 and any("roundoff" in x for x in labels) and any("< 1" in x for x in labels)


def test_error_curves_keep_coinciding_curves_visible():
    import matplotlib
    matplotlib.use("Agg")
    y = 10.0 ** -np.arange(20.0)
    fig = chap.plot_error_curves({"": {"EAGLE": y, "GD++": y}}, styles={"EAGLE": "EAGLE", "GD++": "GD"},
                                 markers={"EAGLE": "o", "GD++": "x"})
    a, b = [ln for ln in fig.axes[0].get_lines() if not ln.get_label().startswith("_")]
    assert (a.get_marker(), b.get_marker()) == ("o", "x")
    assert a.get_markevery()[0] != b.get_markevery()[0]             # staggered: both sets of markers show


def test_every_key_the_prose_quotes_is_produced():
    text = (REPO / "book" / f"{CHAPTER}.md").read_text()
    quoted = set(re.findall(r'G\("(\w+)"', text))
    rows = [r.key for r in c06.ROWS]
    produced = set(_glued()) | {"C6_setting"}
    produced |= {k + s for k in _checks() for s in ("", "_bound")}
    produced |= {k + s for k in rows for s in ("", "_verdict", "_paper", "_criterion", "_declared")}
    assert quoted - produced == set()

"""Chapter 4's module (eaglebook.chapters.extract), its comparison rows (eaglebook.comparisons.c04_extract) and
the regimes' words (eaglebook.regimes.paper), on fake inputs."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace as NS

import numpy as np
import pytest

from eaglebook import claims, comparisons, config, regimes
from eaglebook.chapters import extract
from eaglebook.ledger import EVIDENCE, HEADLINE

TOL = config.Tolerances()


def _measured(**kw):
    base = dict(off_qk=0.2, off_rand=1.0, off_vp=0.3, fit_max=0.5, cross_data_max=0.1, seed=0)
    return extract.Measured(**{**base, **kw})


def _ledger(regime: str, verdicts: dict[str, str], roles: dict[str, str] | None = None):
    """A fake recorded ledger: key suffix -> verdict (claim and role from chapter 4's rows)."""
    rows = {r.key: r for r in comparisons.rows("04_extract", None, regime)}
    comps = {}
    for suffix, v in verdicts.items():
        key = next(k for k in rows if k.endswith(suffix))
        comps[key] = dict(verdict=v, criterion=rows[key].criterion.text, claim=rows[key].claim, role=rows[key].role)
    return NS(comparisons=comps, declared={k: dict(criterion=dict(text=r.criterion.text)) for k, r in rows.items()})


def test_structure_phrase_has_three_grades():
    assert extract.structure_phrase(0.2) == "far from random"
    assert extract.structure_phrase(0.6) == "closer to the diagonal pattern than a random matrix"
    assert extract.structure_phrase(0.95) == "no closer to the pattern than a random matrix"
    assert _measured(off_qk=0.3, off_rand=1.0).structure == "far from random"


def test_each_regime_declares_its_rows_from_its_parts():
    keys = {r: [(row.key, row.role, row.part) for row in comparisons.rows("04_extract", None, r)] for r in regimes.PAPER}
    law = lambda r, role, part: [(f"C4_{r}_eta", EVIDENCE, None), (f"C4_{r}_gamma", EVIDENCE, None),
                                 (f"C4_{r}_eta_constancy", role, part), (f"C4_{r}_gamma_constancy", role, part)]
    pruned = [(f"C4_unconstrained_pruned_{x}", EVIDENCE, None) for x in ("eta", "gamma", "eta_constancy", "gamma_constancy")]
    assert keys["unconstrained"] == [("C4_unconstrained_quantized_ratio", HEADLINE, "unconstrained"),
                                     *law("unconstrained", HEADLINE, "unconstrained"), *pruned]
    assert keys["distributed"] == [("C4_distributed_quantized_ratio", HEADLINE, "distributed"),
                                   *law("distributed", EVIDENCE, None),
                                   ("C4_distributed_cross_query", HEADLINE, None), ("C4_distributed_gamma_avg", EVIDENCE, None)]
    assert keys["sketched"] == [*law("sketched", EVIDENCE, None), ("C4_sketched_rel_diff", HEADLINE, None)]
    un = {r.key: r for r in comparisons.rows("04_extract", None, "unconstrained")}
    for name in ("eta", "gamma"):     # the constancy headline replaces the median level, declared before the run
        row = un[f"C4_unconstrained_{name}_constancy"]
        assert row.replaces == f"C4_unconstrained_{name}" and row.declared.startswith("after the run (v0.4.0")
        assert row.because.startswith("the median level does not test a law that says η is the same in every layer")
    gamma = {r.key: r.what for r in comparisons.rows("04_extract", None, "distributed")}["C4_distributed_gamma"]
    assert gamma.endswith("distributed, per machine's own head)")
    assert comparisons.rows("04_extract", None, None) == []


def test_the_paper_facts_agree_with_the_claims_registry():
    """claims.py states, as the paper does, for which regimes it makes each chapter-4 claim; the regimes' paper
    facts must say the same (the registry is the book's; the claims are the paper's)."""
    facts = lambda f: tuple(r for r in regimes.PAPER if f(regimes.get(r).paper))
    assert claims.claim("quantisation").parts == facts(lambda p: p.quantized)
    assert claims.claim("eta").parts == claims.claim("gamma").parts == facts(lambda p: p.scaling_law)
    assert claims.claim("fidelity").parts == regimes.PAPER
    for r in regimes.PAPER:
        sp = regimes.get(r).paper.special
        assert sp is None or claims.claim(sp.claim).chapter == "04_extract"


def test_quant_phrase_names_the_quantised_regimes_from_the_registry():
    sk, un = regimes.get("sketched"), regimes.get("unconstrained")
    assert extract.quant_phrase(sk, None) == ("The paper applies this surgery only in the unconstrained and distributed "
                                             "regimes, so in the sketched regime the ratio is shown without a paper comparison.")
    t = extract.quant_phrase(un, dict(criterion="≤ 1.5, partly ≤ 3", verdict="partly"))
    assert "in the unconstrained and distributed regimes and reports no loss" in t and t.endswith("≤ 3), verdict partly.")


def test_eta_story_and_verdicts_depend_on_whether_the_paper_states_the_law():
    un, di = regimes.get("unconstrained"), regimes.get("distributed")
    t = extract.eta_story(un, "partly", "reproduced")
    assert t.startswith(", against the paper's 1 and 1.9 (by the criterion: partly and reproduced). Declared before the run")
    assert "the median level does not test a law that says η (and γ) is the same in every layer" in t
    t = extract.eta_story(di, "partly", "not reproduced", "Here γ is …")
    assert t.startswith(" in the distributed regime. The paper states η ≈ 1, γ ≈ 1.9 for the unconstrained model")
    assert t.endswith("(by the criterion: partly and not reproduced). Here γ is …")
    v = dict(eta="a", gamma="b", eta_constancy="c", gamma_constancy="d")
    assert extract.eta_verdicts(un, v, None) == ("one constant over the layers (headlines): c for η and d for γ; levels "
                                                 "against the paper's 1 and 1.9 (evidence): a and b")
    assert extract.eta_verdicts(di, v, 5.3) == ("one constant over the layers (evidence): c for η and d for γ; levels "
                                                "against the paper's 1 and 1.9 (evidence): a and b; the paper states them "
                                                "for the unconstrained model; Algorithm 1's convention gives γ = 5.30")


def test_spread_is_max_over_min_and_infinite_without_one_sign():
    assert extract.spread([1.0, 2.0, 4.0]) == 4.0
    assert extract.spread([1.0, -2.0]) == extract.spread([1.0, np.nan]) == float("inf")
    assert extract.constancy_word(2.9).startswith("one constant within 3×")
    assert extract.constancy_word(9.0).startswith("constant only within 10× (not 3×)")
    assert extract.constancy_word(134.0).startswith("no single constant")


def _laws(gammas: dict):
    return {s: NS(eta=1.0, gamma=g, eta_layer=np.array([1.0, 1.2, 1.4, 9.0]), eta_layers=(0, 1, 2),
                  gamma_layer=np.array([g, g, 2 * g, g]), gamma_layers=(0, 1, 2, 3)) for s, g in gammas.items()}


def test_seed_laws_and_where_the_shown_seed_sits():
    sl = extract.over_seeds(_laws({0: 5.95, 1: 1.7, 2: 2.4, 3: 2.0}))
    assert sl.eta_spread.tolist() == [1.4] * 4 and sl.gamma_spread.tolist() == [2.0] * 4
    r = sl.resampled("gamma")
    assert r.unit == "seeds" and r.value == pytest.approx(2.2) and list(r.names) == ["seed 0", "seed 1", "seed 2", "seed 3"]
    vals = dict(zip(sl.seeds, sl.gamma))
    assert extract.seed_rank(vals, 0) == (1, 4, True) and extract.seed_rank(vals, 3) == (3, 4, False)
    assert extract.seed_phrase(vals, 0, "γ") == ("its γ (5.95) is the highest of the 4 seeds, outside the other seeds' "
                                                 "range (1.70–2.40): an outlier by our rule")
    assert extract.seed_phrase(vals, 3, "γ").startswith("its γ (2.00) is the 3rd highest of the 4 seeds, inside")
    two = {0: 3.5, 1: 3.9}
    assert extract.seed_rank(two, 0) == (2, 2, None)
    assert extract.seed_phrase(two, 0, "γ") == ("its γ (3.50) is the lower of the 2 seeds; with 1 other seed, too few to "
                                                "call an outlier by our rule")


def test_constancy_and_pruned_phrases_quote_the_data():
    sl = extract.over_seeds(_laws({0: 2.0, 1: 1.9}))
    rows = {n: dict(verdict="reproduced", criterion="≤ 3, partly ≤ 10", role=HEADLINE, stability=None)
            for n in ("eta_constancy", "gamma_constancy", "pruned_eta", "pruned_gamma", "pruned_eta_constancy",
                      "pruned_gamma_constancy")}
    t = extract.constancy_phrase(regimes.get("unconstrained"), sl, 0, rows)
    assert t.startswith("In the model shown (seed 0), η_ℓ runs from 1.00 to 1.40 over layers 0..L−2 and γ_ℓ from 2.00 "
                        "to 4.00 over all layers (max/min 1.4 and 2).")
    assert "median max/min is 1.4 for η, one constant within 3× over the layers" in t and "the claims' headlines" in t
    law = _laws({0: 2.0})[0]
    p = extract.pruned_phrase(NS(**vars(law), eta_layer_=None), law, 0, 0.53, 0.0946, rows, 8)
    assert "the 8-head model of seed 0 pruned to one head" in p and "5.6 times worse than predicting zero" in p
    assert p.endswith("does not beat predicting zero on average.")
    assert "trained from scratch" in extract.model_phrase(regimes.get("unconstrained"), 1, 8)
    assert "pruned" not in extract.model_phrase(regimes.get("sketched"), 1, 8)


def test_findings_list_the_headlines_then_eta_gamma_as_evidence():
    led = _ledger("distributed", {"quantized_ratio": "partly", "_eta": "partly", "_gamma": "reproduced",
                                  "_eta_constancy": "partly", "_gamma_constancy": "reproduced",
                                  "cross_query": "reproduced", "gamma_avg": "not reproduced"})
    assert extract.findings_paper(regimes.get("distributed"), led) == (
        "quantising without loss: partly; only the C, D columns cross machines: reproduced; the scaling law, stated "
        "for the unconstrained model, here (evidence): one η and one γ over the layers partly and reproduced, η ≈ 1 "
        "and γ ≈ 1.9 partly and reproduced")
    led = _ledger("unconstrained", {"quantized_ratio": "not reproduced", "_eta": "partly", "_gamma": "reproduced",
                                    "_eta_constancy": "reproduced", "_gamma_constancy": "not reproduced"})
    assert extract.findings_paper(regimes.get("unconstrained"), led) == (
        "quantising without loss: not reproduced; one η in every layer: reproduced; one γ in every layer: not reproduced")
    pair = regimes.Regime("pair4", regimes.Heads(count=2), regimes.Diagonal(), regimes.Paper("pair"))
    led = NS(comparisons={f"C4_pair4_{k}": dict(verdict="partly", claim=k.split("_")[0], role=EVIDENCE)
                          for k in ("eta", "gamma", "eta_constancy", "gamma_constancy")})
    assert extract.findings_paper(pair, led).startswith("the paper states no claim of its own for the pair4 regime; the scaling law")


def test_checks_follow_what_was_measured():
    al = NS(cd=np.array([-1.0, -1, -1, 1]), ab=np.array([-1.0, -1, -1, 5]))
    names = lambda m: [c.key for c in extract.checks("r", m, al, TOL)]
    assert names(_measured()) == ["C4_r_offdiag_qk", "C4_r_cd_negative", "C4_r_ab_negative"]
    assert names(_measured(fit=0.1)) == ["C4_r_fit", "C4_r_cd_negative", "C4_r_ab_negative"]
    assert names(_measured(data_share=0.01))[-1] == "C4_r_cross_data"
    cd = extract.checks("r", _measured(), al, TOL)[1]
    assert (cd.value, cd.lower, cd.upper) == (3, 4, 4)              # a layer that does not contract fails the check


def test_recorded_holds_exactly_the_declared_rows():
    for r in regimes.PAPER:
        rg = regimes.get(r)
        avg = None if rg.reading.gamma_of_average(0.0, 0.0, 1) is None else np.array([5.0, 5.2])
        sl = extract.over_seeds(_laws({0: 1.9, 1: 2.0}))
        pruned = _laws({0: 1.9})[0] if rg.can("prunable") else None
        got = extract.recorded(rg, r, q_pairs=np.ones((4, 2)), sl=sl, gamma_avg=avg, special=0.5, pruned=pruned)
        assert set(got) == {row.key for row in comparisons.rows("04_extract", None, r)}, r
        assert all(got[f"C4_{r}_{k}"].unit == "seeds" for k in ("eta", "gamma", "eta_constancy", "gamma_constancy"))


def test_measured_reads_sketches_and_the_other_machines_where_there_are_some():
    sk = [NS(rel_diff=x, projector_overlap=o) for x, o in ((1.0, 0.2), (2.0, 0.95), (3.0, 0.3))]
    model = NS(cfg=NS(r=5), task=NS(n=20))
    st = extract.Structure(0.2, 1.0, 0.3, sketch=sk, fit=0.1)
    m = extract.measured(model, st, NS(other_query_mass=None), TOL, seed=1)
    assert (m.rel, m.overlap, m.random_overlap, m.shared, m.shared_phrase, m.share) == (2.0, (0.2, 0.95), 0.25, False,
                                                                                       "do not share", None)
    al = NS(other_query_mass=np.array([0.9, 1.0]), other_data_mass=np.array([0.0, 0.02]), b=np.ones(2), a3=np.ones(2))
    m = extract.measured(model, extract.Structure(0.2, 1.0, 0.3), al, TOL, seed=0)
    assert (m.share, m.data_share, m.sketch, m.rel) == (0.95, 0.01, None, None)
    assert regimes.get("distributed").paper.special_value(m) == 0.95 and regimes.get("unconstrained").paper.special_value(m) == 0.3


def test_the_regimes_words_quote_the_measurements():
    m = _measured(fit=0.14, rel=1.24, overlap=(0.11, 0.31), random_overlap=0.28, r=5, shared=False)
    sk = regimes.get("sketched").paper
    row = dict(verdict="not reproduced", criterion="within 2× of the paper, partly within 4×")
    t = sk.special_text(m, row)
    assert "relative residual of 0.14 (checked: at most 0.5)" in t and "Ours differ by 1.24" in t
    assert "do not share one sketch, and a layer is not Algorithm 1" in t
    assert "share one sketch. Chapter 9" in sk.special_text(replace(m, shared=True), row)
    assert "does not hold here" in sk.first_finding(m, row) and "holds only in part" in sk.first_finding(m, dict(row, verdict="partly"))
    un = regimes.get("unconstrained").paper
    assert un.first_finding(m, None).startswith("The trained model's weights are far from random: on average 0.20")
    assert un.special_intro().endswith("(its claim about heads is tested in chapter 3).")
    assert regimes.get("distributed").paper.special_intro().startswith("The paper makes one claim about this regime's")
    assert regimes.get("distributed").paper.gamma_average_text(5.3, dict(verdict="partly"), 3).endswith(
        "the other 2 heads together (chapter 2: α³ = γ/M per head): in that convention γ = 5.30 (by the criterion: partly).")
    assert un.gamma_average_text(5.3, None, 3) == ""


def test_gamma_average_only_where_heads_write_to_each_other():
    laws = {0: NS(gamma_layer=np.array([1.0, 2.0]), gamma_other_layer=np.array([0.5, 0.5])),
            1: NS(gamma_layer=np.array([3.0, 4.0]), gamma_other_layer=np.array([0.0, 0.0]))}
    assert extract.gamma_average(regimes.get("distributed"), laws, 3) == pytest.approx([2.5, 3.5])   # per seed; the row is their median
    assert extract.gamma_average(regimes.get("unconstrained"), laws, 1) is None

"""The scorecard's two tallies: every headline as declared before its run, and after documented corrections."""

import pytest

from eaglebook import report
from eaglebook.ledger import ADVANCE, HEADLINE, Ledger, after_run, at_most


def _ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLEBOOK_CLAIMS", str(tmp_path))
    return Ledger(chapter="06_newton_schulz", profile="test")


def test_a_replaced_headline_counts_its_declared_row_in_the_first_tally(tmp_path, monkeypatch):
    led = _ledger(tmp_path, monkeypatch)
    led.declare("first", what="declared first", criterion=at_most(1.0), claim="theorem1-kappa")
    led.declare("later", what="chosen after the run", criterion=at_most(1.0), claim="theorem1-kappa", role=HEADLINE,
                declared=after_run("v9"), replaces="first", because="the first row is not the paper's statistic")
    led.record("first", 2.0)       # not reproduced
    led.record("later", 0.5)       # reproduced
    now = {r.claim.id: r for r in report.claim_results([led])}["theorem1-kappa"]
    was = {r.claim.id: r for r in report.claim_results([led], declared=True)}["theorem1-kappa"]
    assert now.verdict == "reproduced" and was.verdict == "not reproduced"
    assert report.verdict_counts([led])["reproduced"] == report.verdict_counts([led], declared=True)["reproduced"] + 1
    table = report.claims_table([led])
    assert "as declared before the run: not reproduced" in table and "the first row is not the paper's statistic" in table


def test_a_post_hoc_headline_without_a_declared_row_is_not_judged_as_declared(tmp_path, monkeypatch):
    led = _ledger(tmp_path, monkeypatch)
    led.declare("later", what="chosen after the run", criterion=at_most(1.0), claim="theorem1-kappa", role=HEADLINE,
                declared=after_run("v9"))
    led.record("later", 0.5)
    was = {r.claim.id: r for r in report.claim_results([led], declared=True)}["theorem1-kappa"]
    assert was.verdict == "not judged" and "no row declared before the run" in was.why


def test_replaces_belongs_to_a_post_hoc_headline(tmp_path, monkeypatch):
    led = _ledger(tmp_path, monkeypatch)
    with pytest.raises(ValueError, match="replaces"):
        led.declare("x", what="w", criterion=at_most(1.0), claim="theorem1-kappa", role=HEADLINE, declared=ADVANCE,
                    replaces="y")

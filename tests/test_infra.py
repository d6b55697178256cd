"""Config, cache and claims ledger."""

import hashlib
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace

import numpy as np
import pytest

import eaglebook

from eaglebook import cache, config, report


# ---- config --------------------------------------------------------------------------------------

def test_profile_resolution_env_and_explicit(monkeypatch):
    monkeypatch.delenv(config.PROFILE_ENV, raising=False)
    assert config.resolve_profile() == "paper"
    monkeypatch.setenv(config.PROFILE_ENV, "ci")
    assert config.resolve_profile() == "ci"
    assert config.resolve_profile("paper") == "paper"  # explicit wins over the environment
    monkeypatch.setenv(config.PROFILE_ENV, "bogus")
    with pytest.raises(ValueError, match="^environment variable EAGLEBOOK_PROFILE='bogus' is not a profile; valid "
                                         "profiles: paper, ci"):
        config.resolve_profile()
    assert config.resolve_profile("ci") == "ci"      # an explicit value wins over a bad environment too
    with pytest.raises(ValueError, match="profile='nope'.*'paper', 'ci'"):
        config.resolve_profile("nope")


def test_paper_profile_is_the_papers_recipe():
    t = config.get("paper").train
    assert (t.steps, t.batch, t.lr, t.clip) == (20_000, 1024, 1e-3, 0.1)
    assert (t.task.n, t.task.d, t.task.n_prime, t.task.d_prime, t.task.s, t.task.alpha) == (18, 18, 2, 2, 10, 0.7)
    assert t.model.layers == 4 and t.model.r == 5 and t.model.machines == 3
    assert len(config.get("paper").seeds) == 10


def test_regime_names_and_aliases():
    assert config.regime_name("centralized") == "unconstrained"  # accepted and canonicalised
    assert config.ModelConfig(regime="centralized").regime == "unconstrained"
    assert config.ModelConfig(regime="compute-limited").regime == "sketched"
    with pytest.raises(ValueError, match="regime='dense'.*unconstrained.*distributed.*sketched"):
        config.regime_name("dense")
    assert config.get("ci").training("distributed", seed=2).model.regime == "distributed"


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_seed_validation(bad):
    with pytest.raises(ValueError, match="seed"):
        config.get("ci").training("unconstrained", seed=bad)


def test_configs_are_frozen():
    import dataclasses
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.get("ci").train.steps = 3


# ---- cache ---------------------------------------------------------------------------------------

@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "c"))
    return tmp_path / "c"


def test_hash_covers_the_whole_config():
    a = config.get("ci").train
    assert cache.config_hash(a) == cache.config_hash(replace(a))
    assert cache.config_hash(a) != cache.config_hash(replace(a, lr=2e-3))
    assert cache.config_hash(a) != cache.config_hash(replace(a, task=replace(a.task, alpha=0.69)))


def test_cached_computes_once_and_is_self_describing(tmp_cache):
    calls = []
    cfg = config.get("ci").train
    f = lambda: calls.append(1) or {"x": [1, 2, 3]}
    assert cache.cached("t", cfg, f) == {"x": [1, 2, 3]}
    assert cache.cached("t", cfg, f) == {"x": [1, 2, 3]}
    assert len(calls) == 1
    d = cache.entry_dir("t", cfg)
    assert json.loads((d / "config.json").read_text())["steps"] == cfg.steps
    assert "sha256" in json.loads((d / "meta.json").read_text())
    assert cache.cached("t", cfg, f, force=True) and len(calls) == 2


def test_corrupt_or_partial_entry_is_rebuilt(tmp_cache):
    cfg = config.get("ci").train
    cache.cached("t", cfg, lambda: 1)
    d = cache.entry_dir("t", cfg)
    (d / "payload.pt").write_bytes(b"garbage")           # corrupt payload
    with pytest.warns(RuntimeWarning, match="corrupt"):
        assert cache.cached("t", cfg, lambda: 2) == 2
    (d / "meta.json").unlink()                           # partial entry (no meta)
    with pytest.warns(RuntimeWarning):
        assert cache.cached("t", cfg, lambda: 3) == 3


def test_interrupted_compute_leaves_nothing(tmp_cache):
    cfg = config.get("ci").train

    def boom():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cache.cached("t", cfg, boom)
    assert not cache.is_valid(cache.entry_dir("t", cfg))
    assert cache.cached("t", cfg, lambda: 5) == 5


def _slow_compute(path, out):
    import os
    os.environ[cache.CACHE_ENV] = path
    cfg = config.get("ci").train

    def f():
        time.sleep(1.0)
        return os.getpid()

    out.put(cache.cached("t", cfg, f))


def test_two_processes_sharing_the_cache_compute_once(tmp_cache):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=_slow_compute, args=(str(tmp_cache), q)) for _ in range(2)]
    for p in ps:
        p.start()
    for p in ps:
        p.join(60)
    results = [q.get(timeout=5) for _ in ps]
    assert results[0] == results[1]  # the second waited for the first and loaded its result



class _Planted:
    """A pickle that runs code when loaded: it creates the folder ``path`` (the marker)."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        import os
        return (os.mkdir, (self.path,))


def _rewrite_checksum(d):
    meta = json.loads((d / "meta.json").read_text())
    meta["sha256"] = hashlib.sha256((d / "payload.pt").read_bytes()).hexdigest()
    (d / "meta.json").write_text(json.dumps(meta))


def test_planted_code_in_a_payload_never_runs(tmp_cache, tmp_path):
    import torch
    cfg = config.get("ci").train
    cache.cached("t", cfg, lambda: {"x": 1})
    d = cache.entry_dir("t", cfg)
    marker = tmp_path / "pwned"
    torch.save(_Planted(marker), d / "payload.pt")
    _rewrite_checksum(d)                                   # the checksum alone cannot catch it
    assert cache.is_valid(d)
    with pytest.warns(RuntimeWarning, match="corrupt"):
        assert cache.cached("t", cfg, lambda: {"x": 2}) == {"x": 2}
    assert not marker.exists()
    assert cache.cached("t", cfg, lambda: {"x": 3}) == {"x": 2}   # the rebuilt entry is used


@pytest.mark.parametrize("files", [None, ["payload.pt", "meta.json"]], ids=["whole-entry", "payload-only"])
def test_an_entry_for_another_config_is_never_returned(tmp_cache, files):
    c0 = config.get("ci").training(seed=0)
    c1 = config.get("ci").training(seed=1)
    cache.cached("t", c0, lambda: "seed 0")
    cache.cached("t", c1, lambda: "seed 1")
    d0, d1 = cache.entry_dir("t", c0), cache.entry_dir("t", c1)
    if files is None:                                      # the whole folder, checksum and config.json included
        shutil.rmtree(d0)
        shutil.copytree(d1, d0)
    else:                                                  # payload and its checksum, config.json kept
        for f in files:
            shutil.copy(d1 / f, d0 / f)
    assert cache.is_valid(d0)                              # the checksum matches the swapped payload
    # a copied config.json is caught before loading; a kept one only by the config stored in the payload
    assert cache.is_valid(d0, c0) == (files is not None)
    with pytest.warns(RuntimeWarning, match="corrupt"):
        assert cache.cached("t", c0, lambda: "rebuilt") == "rebuilt"
    assert cache.cached("t", c1, lambda: "x") == "seed 1"


def test_stale_temporary_folders_are_removed_fresh_ones_kept(tmp_cache):
    cfg = config.get("ci").train
    kind = tmp_cache / "t"
    old, fresh, old_file = kind / ".tmp-dead-1", kind / ".tmp-live-2", kind / ".tmp-ckpt-3.pt"
    for p in (old, fresh):
        p.mkdir(parents=True)
        (p / "payload.pt").write_bytes(b"partial")
    old_file.write_bytes(b"partial")
    two_days_ago = time.time() - 2 * 24 * 3600
    for p in (old, old_file):
        os.utime(p, (two_days_ago, two_days_ago))
    cache.cached("t", cfg, lambda: 1)                      # writing to the kind folder cleans it
    assert not old.exists() and not old_file.exists()
    assert fresh.is_dir() and (fresh / "payload.pt").exists()


def test_numpy_payloads_round_trip_and_objects_are_refused(tmp_cache):
    cfg = config.get("ci").train
    obj = {"a": np.arange(3.0), "n": np.int64(4), "t": (np.float32(0.5), [np.zeros((2, 2), np.int32)])}
    cache.cached("t", cfg, lambda: obj)
    got = cache.load(cache.entry_dir("t", cfg), cfg)
    assert np.array_equal(got["a"], obj["a"]) and got["a"].dtype == np.float64
    assert got["n"] == 4 and type(got["n"]) is int and got["t"][0] == 0.5
    assert got["t"][1][0].dtype == np.int32 and got["t"][1][0].shape == (2, 2)
    with pytest.raises(TypeError, match="type object"):
        cache.cached("u", cfg, lambda: {"x": object()})
    assert not cache.entry_dir("u", cfg).exists()


def test_importing_the_cache_and_the_ledger_does_not_import_torch():
    """``eaglebook/__init__.py`` imports its torch-based solver lazily (module ``__getattr__``), so
    importing ``eaglebook.cache`` and ``eaglebook.report`` in a fresh interpreter pulls in torch only if
    one of those modules (or something they import at load) does.  A fresh subprocess is the robust check:
    this test process has long imported torch, and an AST scan would miss indirect imports."""
    code = "import sys, eaglebook.cache, eaglebook.report; sys.exit('torch' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr or "importing eaglebook.cache or eaglebook.report imported torch"

# ---- claims ledger -------------------------------------------------------------------------------

@pytest.fixture
def claims(tmp_path, monkeypatch):
    monkeypatch.setenv(report.CLAIMS_ENV, str(tmp_path / "claims"))


def ledger(chapter="99_x", profile="ci", **kw):
    """A ledger with the provenance a chapter gives it (chapter.start)."""
    params = kw.pop("parameters", {"seed": 0})
    return report.Ledger(chapter, profile, provenance=report.provenance(chapter, profile, params), **kw)


def compare(led, key, ours, **kw):
    return led.record(led.declare(key, **{"what": "w", "claim": "final-mse", **kw}), ours)


def test_check_asserts_and_records(claims):
    led = ledger()
    assert led.check("k", 0.5, upper=1.0, what="w") == 0.5
    with pytest.raises(AssertionError, match="k2"):
        led.check("k2", 2.0, upper=1.0, what="w")
    with pytest.raises(AssertionError):
        led.check("k3", float("nan"), upper=1.0)
    saved = report.load_ledgers("ci")[0]
    assert saved.checks["k"]["ok"] and not saved.checks["k2"]["ok"]  # the failure is recorded too


def test_check_needs_a_bound(claims):
    with pytest.raises(ValueError, match="bound"):
        ledger().check("k", 1.0)


@pytest.mark.parametrize("crit, ours, paper, verdict", [
    (report.within_factor(2), 1.5e-3, 1e-3, "reproduced"),
    (report.within_factor(2, partly=10), 8e-3, 1e-3, "partly"),
    (report.within_factor(2, partly=10), 2e-2, 1e-3, "not reproduced"),
    (report.within_factor(2), -1e-3, 1e-3, "not reproduced"),
    (report.at_most(6e-4), 5e-4, 6e-4, "reproduced"),
    (report.at_most(6e-4), float("nan"), 6e-4, "not reproduced"),
    (report.at_least(10), 12, None, "reproduced"),
    (report.in_range(10, 50, partly=2), 7, None, "partly"),
    (report.in_range(10, 50, partly=2), 200, None, "not reproduced"),
])
def test_comparison_verdicts_never_raise(claims, crit, ours, paper, verdict):
    assert compare(ledger(), "c", ours, paper=paper, criterion=crit) == verdict


def test_a_comparison_must_be_declared_before_its_value(claims):
    led = ledger()
    with pytest.raises(ValueError, match="not declared"):
        led.record("c", 1.0)
    d = led.declare("c", what="w", criterion=report.at_most(1), claim="prune")
    led.record(d, 0.5)
    with pytest.raises(ValueError, match="declare it before"):
        led.declare("c", what="w", criterion=report.at_most(1), claim="prune")
    with pytest.raises(ValueError, match="declared"):
        led.declare("c2", what="w", criterion=report.at_most(1), declared="whenever", claim="prune")
    with pytest.raises(ValueError, match="unknown paper claim 'nope'; known claims: final-mse"):
        led.declare("c3", what="w", criterion=report.at_most(1), claim="nope")


def test_outlier_dominated_statistics_get_no_verdict_unless_the_paper_uses_them(claims):
    led = ledger()
    assert compare(led, "mean_ratio", 1e-17, criterion=report.in_range(0.5, 2), robust=False) == report.NOT_JUDGED
    assert compare(led, "paper_mean", 1e-4, criterion=report.at_most(6e-4), robust=False, judge=True) == "reproduced"
    after = report.after_run("v0.2.0, 2026-12-01")
    compare(led, "median_ratio", 1.1, criterion=report.in_range(0.5, 2), declared=after)
    md = report.comparisons_table(report.load_ledgers("ci"))
    assert "*not judged: outlier-dominated*" in md and "(an outlier-dominated statistic: the paper's own)" in md
    assert "declared after the run (v0.2.0, 2026-12-01)" in md and "declared in advance" in md
    # the tally counts claims, not rows: three evidence rows of one claim give no claim a verdict
    counts = report.verdict_counts(report.load_ledgers("ci"))
    assert counts["reproduced"] == counts["partly"] == counts["not reproduced"] == counts["not judged"] == 0
    assert counts["not run"] == len([c for c in report.CLAIMS if c.kind == "paper"])


def test_scorecard_tables(claims):
    led = ledger("01_a", title="One")
    compare(led, "c1", 2e-3, paper=1e-3, criterion=report.within_factor(3), what="MSE | final")
    led.check("k1", 1.0, lower=0.0, what="x")
    md = report.comparisons_table(report.load_ledgers("ci"), link=True)
    assert "*reproduced*" in md and "MSE \\| final" in md and "evidence for *final-mse*, not counted" in md
    assert "| yes |" in report.checks_table(report.load_ledgers("ci"))
    assert "No paper comparison" in report.comparisons_table([])


def test_ledgers_record_provenance(claims):
    led = ledger(parameters={"seed": 0, "regime": "sketched"})
    led.uses("train", config.get("ci").training("sketched", seed=0))
    p = report.load_ledgers("ci")[0].provenance
    assert p["version"] == eaglebook.__version__ and p["profile"] == "ci" and p["code"] == report.code_hash()
    assert p["parameters"] == {"seed": 0, "regime": "sketched"} and len(p["models"]["train"]) == 16
    assert p["commit"] and p["date"][:2] == "20"


def test_stale_and_foreign_ledgers_are_left_out_and_reported(claims):
    compare(ledger("01_a"), "fresh", 1.0, criterion=report.at_most(2))
    compare(ledger("02_b", parameters={"seed": 3}), "one_off", 1.0, criterion=report.at_most(2))
    old = ledger("03_c")
    compare(old, "old", 1.0, criterion=report.at_most(2))
    old.provenance["code"] = "0123456789ab"
    old.save()
    legacy = report.Ledger("04_d", "ci")         # written by code that recorded no provenance
    legacy.comparisons["legacy"] = {}
    legacy.save()
    ignored = []
    kept = report.load_ledgers("ci", ignored=ignored)
    assert [led.chapter for led in kept] == ["01_a"]
    reasons = dict(ignored)
    assert "non-default parameters" in reasons["02_b.json"] and "package source" in reasons["03_c.json"]
    assert "no provenance" in reasons["04_d.json"]


def test_toc_chapters_in_order():
    names = report.toc_chapters()
    assert names[0] == "index" and "01_task" in names


def test_variants_keep_their_own_files_and_duplicate_keys_show_once(claims):
    a = ledger("03_t", variant="sketched")
    compare(a, "c_shared", 1.0, paper=1.0, criterion=report.within_factor(2))
    compare(a, "c_sk", 1.0, paper=1.0, criterion=report.within_factor(2))
    b = ledger("03_t", variant="unconstrained")
    compare(b, "c_shared", 5.0, paper=1.0, criterion=report.within_factor(2))
    leds = report.load_ledgers("ci", ["03_t"])
    assert {led.variant for led in leds} == {"sketched", "unconstrained"}
    md = report.comparisons_table(leds)
    assert md.count("c_shared") == 1 and "c_sk" in md


# ---- the scorecard counts claims; headline rows give the verdict; evidence never counts ----------------

def test_the_tally_counts_claims_and_a_multi_part_claim_takes_its_weakest_part(claims):
    led = ledger("03_t")
    for part, v in (("unconstrained", 1.1e-3), ("distributed", 2.5e-3), ("sketched", 9e-3)):
        compare(led, f"h_{part}", v, paper=1e-3, criterion=report.within_factor(3, partly=10), claim="final-mse",
                role="headline", part=part)
        compare(led, f"e_{part}", 1e-3, paper=1e-3, criterion=report.within_factor(3), claim="final-mse")  # evidence
    compare(led, "prune_h", 1.1, criterion=report.in_range(0.5, 2), claim="prune", role="headline")
    leds = report.load_ledgers("ci")
    res = {r.claim.id: r for r in report.claim_results(leds)}
    assert res["final-mse"].verdict == "partly" and "weakest of its 3 parts" in res["final-mse"].why
    assert len(res["final-mse"].evidence) == 3 and res["prune"].verdict == "reproduced"
    counts = report.verdict_counts(leds)
    assert counts["partly"] == 1 and counts["reproduced"] == 1 and counts["not reproduced"] == 0
    md = report.claims_table(leds)
    assert md.count("\n") == len([c for c in report.CLAIMS if c.kind == "paper"]) + 1   # one row per claim
    assert "unconstrained: 0.0011 (reproduced)" in md and "sketched: 0.009 (partly)" in md


def test_headline_rows_are_validated(claims):
    led = ledger()
    with pytest.raises(ValueError, match="needs part= one of unconstrained, distributed, sketched"):
        led.declare("x", what="w", criterion=report.at_most(1), claim="final-mse", role="headline")
    with pytest.raises(ValueError, match="has no parts"):
        led.declare("x", what="w", criterion=report.at_most(1), claim="prune", role="headline", part="sketched")
    with pytest.raises(ValueError, match="secondary summary"):
        led.declare("x", what="w", criterion=report.at_most(1), claim="s-randsketch", role="headline")
    with pytest.raises(ValueError, match="role='main'"):
        led.declare("x", what="w", criterion=report.at_most(1), claim="prune", role="main")
    compare(led, "a", 1.0, criterion=report.at_most(2), claim="prune", role="headline")
    compare(ledger("05_other"), "b", 1.0, criterion=report.at_most(2), claim="prune", role="headline")
    with pytest.raises(ValueError, match="two headline rows"):
        report.claim_results(report.load_ledgers("ci"))


def test_a_different_setting_is_not_judged_and_a_superseded_row_stays_visible(claims):
    led = ledger()
    v = compare(led, "t2", 0.5, paper=0.63, criterion=report.at_most(1), claim="table2", role="headline",
                setting="one SuiteSparse matrix on one CPU thread (the paper: seven matrices on a GPU)")
    assert v == report.NOT_JUDGED and led.comparisons["t2"]["why"] == "different setting"
    assert led.comparisons["t2"]["criterion_verdict"] == "reproduced"
    compare(led, "old", 5.0, paper=2.76, criterion=report.within_factor(1.5, partly=3), claim="theorem1-kappa")
    compare(led, "new", 5.6, paper=5.68, criterion=report.within_factor(1.5), claim="theorem1-kappa",
            role="headline", supersedes="old", declared=report.after_run("v0.3.0"))
    leds = report.load_ledgers("ci")
    res = {r.claim.id: r for r in report.claim_results(leds)}
    assert res["table2"].verdict == report.NOT_JUDGED and res["table2"].why == "different setting"
    assert res["theorem1-kappa"].verdict == "reproduced"
    md = report.comparisons_table(leds)
    assert "superseded by `new` (after the run)" in md and "corrects `old`" in md
    assert "(criterion alone: reproduced)" in md


def test_claims_from_secondary_summaries_are_listed_apart(claims):
    led = ledger()
    compare(led, "rs", 1.5, paper=1 / 3, criterion=report.at_most(0.5), claim="s-randsketch")
    leds = report.load_ledgers("ci")
    assert all(r.claim.kind == "paper" for r in report.claim_results(leds))
    md = report.secondary_table(leds)
    assert "RandSketch+CG" in md and "not reproduced" in md and "`rs`" in md
    # a row the scorecard does not judge shows that verdict, with its reason, and the criterion's beneath it
    compare(led, "rs2", 1.5, paper=1 / 3, criterion=report.at_most(0.5), claim="s-randsketch", setting="a square problem")
    md = report.secondary_table(report.load_ledgers("ci"))
    assert "*not judged: different setting*<br><small>criterion alone: not reproduced</small>" in md


def test_claims_of_a_neighbouring_paper_are_judged_apart_from_the_tally(claims):
    """Chapter 10's claims (Vladymyrov et al. 2024) take headline rows and verdicts, in a table of their own;
    the paper's tally and its table never count them."""
    led = ledger()
    compare(led, "nb_ridge", 0.06, paper=0.068, criterion=report.within_factor(1.25), claim="v24-sigma5-ridge",
            role="headline", part="AdaRR")
    compare(led, "nb_df", 3.0, paper=1.0, criterion=report.within_factor(1.25, partly=2.0), claim="v24-diag-full",
            role="headline")
    compare(led, "paper_h", 1.1, criterion=report.in_range(0.5, 2), claim="prune", role="headline")
    leds = report.load_ledgers("ci")
    paper = report.verdict_counts(leds)
    assert paper["reproduced"] == 1 and paper["not reproduced"] == 0
    assert sum(paper.values()) == len([c for c in report.CLAIMS if c.kind == "paper"])
    nb = report.verdict_counts(leds, kind=report.NEIGHBOUR)
    assert nb["not reproduced"] == 1 and nb["not run"] == len([c for c in report.CLAIMS if c.kind == "neighbour"]) - 2
    res = {r.claim.id: r for r in report.claim_results(leds, kind=report.NEIGHBOUR)}
    assert res["v24-sigma5-ridge"].verdict == "reproduced" and "2 part(s) not run" in res["v24-sigma5-ridge"].why
    md, mine = report.neighbour_table(leds), report.claims_table(leds)
    assert "their paper" in md and "DIAG performs about as well as FULL" in md and "not reproduced" in md
    assert "DIAG performs" not in mine and "Vladymyrov" not in mine
    with pytest.raises(ValueError, match="needs part= one of ConstRR, AdaRR, TunedRR"):
        led.declare("x", what="w", criterion=report.at_most(1), claim="v24-sigma5-ridge", role="headline")


def test_every_claim_has_a_source_and_a_chapter():
    chapters = set(report.toc_chapters())
    for c in report.CLAIMS:
        assert c.source and c.statement.endswith((".", ")")) and c.chapter in chapters, c


# ---- timings: interleaved repeats, paired ratios, verdicts only beyond the spread ----------------------

def test_interleaved_timing_rotates_the_order_and_records_the_machine():
    from eaglebook import timing
    calls = []
    clock = iter(range(1000)).__next__
    t = timing.interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3, warmup=1,
                           clock=lambda: float(clock()))
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]       # warm-up, then A B, B A, A B
    assert len(t.seconds["a"]) == 3 and t.before["cores"] >= 1 and "load" in t.after
    with pytest.raises(ValueError, match="repeats"):
        timing.interleaved({"a": lambda: None}, 0)


def test_a_timing_verdict_needs_every_paired_ratio_on_one_side():
    from eaglebook import timing
    assert timing.ratio([1, 1, 1], [2, 2.1, 1.9], "x", "y").verdict == "x faster"
    assert timing.ratio([2, 2, 2], [1, 1, 1], "x", "y").verdict == "y faster"
    r = timing.ratio([1, 1.2, 0.9], [1, 1, 1], "x", "y")
    assert r.verdict == timing.WITHIN_NOISE and not r.decided and r.text(".2g") == "1×, 0.9–1.2 over 3 repeats"
    assert timing.ratio([1.02, 1.03, 1.04], [1, 1, 1]).verdict == timing.WITHIN_NOISE   # every repeat agrees, by < 5%
    assert timing.ratio([1], [2]).verdict.startswith(timing.WITHIN_NOISE)
    with pytest.raises(ValueError, match="same number"):
        timing.ratio([1, 2], [1])


def test_a_timing_ratio_inside_its_spread_is_not_judged(claims):
    from eaglebook import timing
    led = ledger()
    r = timing.ratio([1.0, 0.7, 1.1], [1.0, 1.0, 1.0], "frozen", "plain")
    d = led.declare("t2", what="w", criterion=report.at_most(0.9, partly=1.0), claim="freeze-time", role="headline")
    assert led.record(d, r.median, timing=r) == report.NOT_JUDGED and led.comparisons["t2"]["why"] == "within noise"
    fast = timing.ratio([0.5, 0.6, 0.55], [1.0, 1.0, 1.0])
    d3 = led.declare("t3", what="w", criterion=report.at_most(0.9), claim="freeze-rounds", role="headline")
    assert led.record(d3, fast.median, timing=fast) == "reproduced"
    # decided (beyond noise), but the range of the pairs straddles the criterion's boundary: no verdict either
    wide = timing.ratio([0.5, 0.8, 0.9], [1.0, 1.0, 1.0])
    d4 = led.declare("t4", what="w", criterion=report.at_most(0.7), claim="freeze-rounds", role="evidence")
    assert wide.decided and led.record(d4, wide.median, timing=wide) == report.NOT_JUDGED
    assert led.comparisons["t4"]["why"] == "the spread spans the criterion's boundary"
    # the range scales with the statistic (a ratio divided by a constant is judged on its scaled range)
    d5 = led.declare("t5", what="w", criterion=report.at_most(0.1), claim="freeze-rounds", role="evidence")
    assert led.record(d5, fast.median / 10, timing=fast) == "reproduced"
    assert "0.5–0.6, 3 repeats" in report.comparisons_table(report.load_ledgers("ci"))
    # ... and so does the range shown beside it (the pairs' range of the statistic, not of the raw ratio)
    assert led.comparisons["t5"]["spread"][:2] == pytest.approx([0.05, 0.06])

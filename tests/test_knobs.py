"""The knobs (every setting of the set-up a chapter parameter) and what must not move when they are added:
the shipped models' cache keys, the configs the paper-profile book uses, and training itself."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from eaglebook import ablations, beyond, cache, chapter, config, knobsets, report, training, variants
from eaglebook.config import ModelConfig, TaskConfig, TrainConfig

torch.set_num_threads(1)
REPO = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p for p in (REPO / "models" / "train").iterdir() if p.is_dir() and not p.name.startswith("."))


# ------------------------------------------------------------------------------------ the shipped models
def test_every_shipped_model_hashes_to_its_folder_name():
    assert len(SHIPPED) >= 57
    for d in SHIPPED:
        stored = json.loads((d / cache.CONFIG).read_text())
        cfg = training._cfg_from_dict(stored)
        assert cache.config_hash(cfg) == d.name, d.name
        assert cache.canonical_json(stored) == cache.canonical_json(cfg), d.name   # the load-time comparison
        assert cache.is_valid(d, cfg), d.name


def paper_book_configs() -> dict[str, TrainConfig]:
    """Every training config the paper-profile book uses, as chapters 3, 4, 5 and 9 and
    ``eaglebook.variants`` (chapter 4 for each regime) enumerate them."""
    P = config.get("paper")
    out = {}
    for r in config.REGIMES:                                   # chapters 3, 4 (and its variants), 5; 9's tail (seed 0)
        for s in P.seeds:
            out[f"{r} seed {s}"] = P.training(r, seed=s)
    out["unconstrained 8 heads seed 0"] = P.training("unconstrained", seed=0, heads=P.prune_heads)   # chapter 3
    for a in ablations.SKETCHED:                               # chapter 9: the sketched ablations
        for s in (P.seeds if a.key == "base" else P.ablation_seeds):
            out[f"sketched {a.key} seed {s}"] = a.config(P.training("sketched", seed=s))
    for s in P.ablation_seeds:                                 # chapter 9: the noise ablation
        out[f"unconstrained noise seed {s}"] = ablations.NOISE.config(P.training("unconstrained", seed=s))
    for s in P.prune_seeds:                                    # chapter 9: pruning over seeds
        out[f"unconstrained 8 heads seed {s}"] = P.training("unconstrained", seed=s, heads=P.prune_heads)
    assert set(variants.values("04_extract", "paper")) <= set(config.REGIMES)
    return out


def beyond_configs() -> dict[str, TrainConfig]:
    """Chapter 11's paper-profile configs (eaglebook.beyond): the SGD probe, and every change for the ablation
    seeds; the SGD runs only where the probe is shipped (their rate is its result)."""
    P = config.get("paper")
    out = {f"probe lr {c.lr:g}": c for c in beyond.probe_configs(P)}
    lr = None
    if all(cache.available("train", c) for c in out.values()):
        lr = beyond.probed_lr([training.trained(c, progress=False) for c in out.values()])
    for ch in beyond.CHANGES:
        if ch.key == "sgd" and lr is None:
            continue
        for s in P.ablation_seeds:
            out[f"{ch.key} seed {s}"] = beyond.configs(P, ch, [s], lr=lr)[0]
    return out


def test_every_config_of_the_paper_book_is_shipped(tmp_path, monkeypatch):
    """Chapters 3–9's models all ship; chapter 11's accumulate (a build trains the missing ones); nothing else ships."""
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "empty"))     # the shipped store alone
    monkeypatch.delenv(cache.SHIPPED_ENV, raising=False)
    cfgs = paper_book_configs()
    missing = [k for k, c in cfgs.items() if not cache.available("train", c)]
    assert not missing, f"not shipped: {missing}"
    known = {cache.config_hash(c) for c in (*cfgs.values(), *beyond_configs().values())}
    stray = sorted(d.name for d in SHIPPED if d.name not in known)
    assert not stray, f"shipped but used by no chapter: {stray}"


def test_shipped_models_load_and_reproduce_their_recorded_final_error():
    """The refactored model computes what the training code computed: each shipped run's last evaluation,
    recomputed from its weights on its own test set."""
    for d in SHIPPED:
        cfg = training._cfg_from_dict(json.loads((d / cache.CONFIG).read_text()))
        run = training.Run.from_payload(cache.load(d, cfg))
        X, Xo = training.test_set(cfg)
        got = training.evaluate(run.model(), X, Xo, cfg.task)
        assert got["median"] == pytest.approx(run.final["test_mse_median"], rel=1e-5), d.name
        assert got["frac_worse_than_zero"] == pytest.approx(run.final["test_frac_worse_than_zero"], abs=2 / len(X))


# -------------------------------------------------------------------------------------------- training
#: Computed with the code of main before the regimes became objects (commit a730642): final training loss,
#: final held-out median MSE and Σ|w| of the trained weights, float64, for one tiny run per regime.
GOLDEN = {
    "unconstrained": (0.1843857318162918, 0.19423080315649532, 34.55208120749753),
    "sketched": (0.1850389689207077, 0.19436057362201564, 6.436116571324007),
    "distributed": (0.18494683504104614, 0.19428807964720424, 6.73347619317884),
}


@pytest.mark.parametrize("regime,kw", [("unconstrained", {"heads": 2}), ("sketched", {"r": 2}), ("distributed", {"machines": 3})])
def test_training_is_what_it_was_before_the_refactoring(regime, kw):
    task = TaskConfig(n=6, d=6, n_prime=2, d_prime=2, s=3)
    cfg = TrainConfig(task=task, model=ModelConfig(regime=regime, layers=3, **kw), steps=40, batch=32,
                      eval_every=20, eval_size=64, seed=5, dtype="float64")
    run = training.train(cfg, progress=False)
    w = float(sum(v.double().abs().sum() for v in run.state_dict.values()))
    got = (float(run.history["train_loss"][-1]), run.final["test_mse_median"], w)
    np.testing.assert_allclose(got, GOLDEN[regime], rtol=1e-10)


# --------------------------------------------------------------------------------------------- knobs
def test_knobs_flow_into_the_config_and_its_cache_key():
    paper = config.get("paper")
    P = config.get("paper", knobs={"layers": 6, "r": 8, "lr": 2e-3, "alpha": 1, "seeds": 3})
    assert P.knobs == {"alpha": 1.0, "layers": 6, "r": 8, "lr": 2e-3, "seeds": (0, 1, 2)}
    c = P.training("sketched", seed=1)
    assert (c.model.layers, c.model.r, c.lr, c.task.alpha, P.seeds) == (6, 8, 2e-3, 1.0, (0, 1, 2))
    assert isinstance(c.task.alpha, float)                     # alpha=1 and alpha=1.0 are one config
    assert cache.config_hash(c) != cache.config_hash(paper.training("sketched", seed=1))
    assert P.training("unconstrained").model.r == 5            # r is the sketched regime's knob only
    same = config.get("paper", knobs={"r": 5, "layers": None})  # the paper's own value: no change at all
    assert same.knobs == {} and same.training("sketched") == paper.training("sketched")
    assert config.get("ci", knobs={"seeds": [3, 1]}).seeds == (3, 1)


@pytest.mark.parametrize("knobs,match", [
    ({"lyaers": 6}, r"'lyaers' is not a knob \(did you mean 'layers'\?\); the knobs are: n, d, n_prime"),
    ({"r": 0}, r"r=0 is not valid; allowed values: integers >= 1"),
    ({"r": 19}, r"r=19 is not valid; allowed values: integers in 1..n = 18"),
    ({"machines": 4}, r"machines=4 is not valid for n=18.*allowed: 1, 2, 3, 6, 9, 18"),
    ({"n": 20}, r"machines=3 is not valid for n=20"),
    ({"alpha": 1.5}, r"alpha=1.5 is not valid; allowed values: 0 < alpha <= 1"),
    ({"noise_var": -1}, r"noise_var=-1.0 is not valid"),
    ({"lr": 0}, r"lr=0.0 is not valid"),
    ({"clip": -1}, r"clip=-1.0 is not valid"),
    ({"init_std": 0}, r"init_std=0.0 is not valid"),
    ({"s": 30}, r"s=30 is not valid"),
    ({"layers": 2.5}, r"layers=2.5 is not valid; allowed values: integers >= 1"),
    ({"steps": "many"}, r"steps='many' is not valid"),
    ({"seeds": [1, 1]}, r"seeds=\[1, 1\] is not valid"),
    ({"seeds": 0}, r"seeds=0 is not valid"),
])
def test_a_bad_knob_names_itself_and_its_range(knobs, match):
    with pytest.raises(ValueError, match=match):
        config.get("ci", knobs=knobs)


def test_the_setting_sentence_names_what_differs_from_the_paper():
    P = config.get("ci", knobs={"r": 8, "noise_var": 0.01})
    text = chapter.setting_sentence(P)
    assert "σ² = 0.01 (paper: 0)" in text and "r = 8 (paper: 5; read by the sketched regime only)" in text
    assert "scorecard" in text and chapter.setting_sentence(config.get("ci")) == ""


def test_ablations_are_named_sets_of_knobs():
    P = config.get("ci")
    base = P.training("sketched", seed=0)
    for a in ablations.SKETCHED:
        assert a.config(base) == config.get("ci", knobs=a.settings(base)).training("sketched", seed=0), a.key
    assert ablations.ablation("long").settings(base) == {"steps": 2 * base.steps}
    with pytest.raises(ValueError, match="not a knob"):
        knobsets.KnobSet("x", "x", "x", {"rank": 3})


# ------------------------------------------------------------------------------------------ hash-neutral
def _cfg_classes():
    @dataclasses.dataclass(frozen=True)
    class Cfg:                      # the config as it was
        a: int = 1

    old = Cfg

    @dataclasses.dataclass(frozen=True)
    class Cfg:                      # noqa: F811 - the same config with a field added later
        a: int = 1
        b: float = config.neutral(0.5)

    return old, Cfg


def test_a_hash_neutral_field_keeps_the_old_hash_at_its_default(tmp_path, monkeypatch):
    Old, New = _cfg_classes()
    assert cache.config_hash(New()) == cache.config_hash(Old()) and cache.canonical_json(New()) == '{"a":1}'
    assert cache.config_hash(New(b=0.25)) != cache.config_hash(Old())
    assert json.loads(cache.canonical_json(New(b=0.25))) == {"a": 1, "b": 0.25}
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    cache.cached("t", Old(), lambda: {"v": 1})                  # an entry written before the field existed
    calls = []
    assert cache.cached("t", New(), lambda: calls.append(1) or {"v": 2}) == {"v": 1} and not calls
    assert cache.is_valid(cache.entry_dir("t", New()), New())
    assert cache.cached("t", New(b=0.25), lambda: {"v": 3}) == {"v": 3}


# ------------------------------------------------------------------------ chapters: parameters and ledgers
def test_papermills_injected_cell_may_only_set_the_chapters_parameters():
    params = "profile = None\nseed = 0\nlayers = None\nr = None\n"
    chapter.check_injected({"In": ["", params, "# Parameters\nr = 8\nlayers = 6\n"]})
    with pytest.raises(ValueError, match=r"'lyaers' is not a parameter of this chapter \(did you mean 'layers'\?\).*"
                                         r"profile, seed and the knobs layers, r"):
        chapter.check_injected({"In": ["", params, "# Parameters\nlyaers = 6\n"]})
    chapter.check_injected({"In": ["", params, "x = 1\nlyaers = 2\n"]})   # not papermill's cell: nothing to check
    assert chapter.knobs_of({"r": 8, "layers": None, "other": 1}) == {"r": 8}


def test_a_ledger_of_a_changed_setting_has_its_own_file_and_stays_off_the_scorecard(tmp_path, monkeypatch):
    monkeypatch.setenv(report.CLAIMS_ENV, str(tmp_path))
    for settings in ({}, {"r": 8, "layers": 6}):
        led = report.Ledger("99_x", "ci", variant="sketched", settings=settings,
                            provenance=report.provenance("99_x", "ci", {"seed": 0}, settings=settings))
        led.record(led.declare("k", what="w", criterion=report.at_most(1.0), claim="prune"), 0.5 if not settings else 2.0)
    assert sorted(p.name for p in (tmp_path / "ci").iterdir()) == ["99_x--sketched.json", "99_x--sketched@layers6-r8.json"]
    ignored = []
    kept = report.load_ledgers("ci", ["99_x"], ignored=ignored)
    assert [led.settings for led in kept] == [{}] and kept[0].comparisons["k"]["ours"] == 0.5
    assert ignored == [("99_x--sketched@layers6-r8.json", "run with non-default settings {'layers': 6, 'r': 8}")]


def _papermill(tmp_path, *params):
    return subprocess.run([str(Path(sys.executable).with_name("papermill")), "book/01_task.md", str(tmp_path / "o.ipynb"),
                           "-p", "profile", "ci", *params], cwd=REPO, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_chapter_takes_knobs_says_so_and_refuses_bad_ones(tmp_path, monkeypatch):
    monkeypatch.setenv(report.CLAIMS_ENV, str(tmp_path / "claims"))
    res = _papermill(tmp_path, "-p", "n", "12", "-p", "d", "10")
    assert res.returncode == 0, res.stderr[-2000:]
    nb = json.loads((tmp_path / "o.ipynb").read_text())
    shown = ["".join(o["data"]["text/markdown"]) for c in nb["cells"] for o in c.get("outputs", []) if "text/markdown" in o.get("data", {})]
    assert shown[0].startswith("**Setting.** This run differs from the paper's setting: n = 12 (paper: 18); d = 10 (paper: 18).")
    assert "TaskConfig(n=12, d=10" in "".join("".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", []))
    assert [p.name for p in (tmp_path / "claims" / "ci").iterdir()] == ["01_task@d10-n12.json"]
    bad = _papermill(tmp_path, "-p", "lyaers", "6")
    assert bad.returncode != 0 and "unknown parameter 'lyaers'" in bad.stderr and "layers" in bad.stderr
    bad = _papermill(tmp_path, "-p", "r", "0")
    assert bad.returncode != 0 and "parameter r=0 is not valid; allowed values: integers >= 1" in bad.stderr


@pytest.mark.slow
def test_the_kernel_refuses_an_unknown_parameter_even_without_papermills_check(tmp_path, monkeypatch):
    """eaglebook.papermill_io stops papermill itself on an unknown ``-p`` name; without that filter (another
    runner, or papermill without the package's entry points) the chapter's first cell still refuses it."""
    import logging

    import papermill as pm

    from eaglebook import papermill_io

    monkeypatch.setenv(report.CLAIMS_ENV, str(tmp_path / "claims"))
    log = logging.getLogger("papermill")
    monkeypatch.setattr(log, "filters", [f for f in log.filters if not isinstance(f, papermill_io.UnknownParameterFilter)])
    monkeypatch.setattr(papermill_io, "install_unknown_parameter_check", lambda: None)   # reading a chapter attaches it
    with pytest.raises(pm.PapermillExecutionError, match=r"'lyaers' is not a parameter of this chapter \(did you mean 'layers'\?\)"):
        pm.execute_notebook(str(REPO / "book" / "01_task.md"), str(tmp_path / "o.ipynb"), parameters={"profile": "ci", "lyaers": 6},
                            cwd=str(REPO / "book"), progress_bar=False, kernel_name="python3")
    nb = json.loads((tmp_path / "o.ipynb").read_text())
    failed = [i for i, c in enumerate(nb["cells"]) if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    first_code = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and "injected-parameters" not in
                  c["metadata"].get("tags", []) and "parameters" not in c["metadata"].get("tags", [])][0]
    assert failed == [first_code]                                 # the set-up cell, right after the parameters

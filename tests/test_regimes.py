"""The regimes as objects (eaglebook.regimes): one registry, no name comparisons elsewhere, and a toy regime
defined here alone that trains, extracts and compares with EAGLE through the same code as the paper's."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from eaglebook import config, extraction, models, regimes, tasks, training
from eaglebook.config import ModelConfig, TaskConfig, TrainConfig

torch.set_num_threads(1)
REPO = Path(__file__).resolve().parents[1]
F64 = torch.float64

_NAMES = "|".join(re.escape(n) for r in regimes.PAPER for n in (r, *regimes.get(r).aliases))
#: What a comparison of a regime's name looks like: ``== "sketched"``, ``"sketched" !=``, ``in ("unconstrained", …``,
#: and any ``regime``/``R`` on either side of ``==``, ``!=`` or ``in``.
NAME_COMPARISONS = [
    re.compile(rf"""(==|!=)\s*["']({_NAMES})["']"""),
    re.compile(rf"""["']({_NAMES})["']\s*(==|!=)"""),
    re.compile(rf"""\bin\s*[(\[{{]\s*["']({_NAMES})["']"""),
    re.compile(r"""\b(regime|R)\s*(==|!=|not\s+in\b|in\s*[(\[{])"""),
    re.compile(r"""(==|!=)\s*(\w+\.)*regime\b"""),
]


def test_no_module_compares_a_regime_name_outside_the_registry():
    # the registry itself, and the rows' `regimes=` filter (a row names the regimes it is declared for: data)
    allowed = {REPO / "src" / "eaglebook" / "regimes" / "__init__.py", REPO / "src" / "eaglebook" / "comparisons" / "__init__.py"}
    files = [p for p in (REPO / "src").rglob("*.py") if p not in allowed]
    files += sorted((REPO / "book").glob("*.md"))
    hits = [f"{p.relative_to(REPO)}:{i}: {line.strip()}" for p in files
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if any(rx.search(line) for rx in NAME_COMPARISONS)]
    assert not hits, "regime names compared outside eaglebook.regimes:\n" + "\n".join(hits)


def test_the_name_check_finds_a_planted_comparison():
    for planted in ('if model.regime == "distributed":', "if R in ('unconstrained', 'sketched'):",
                    'x = a if "sketched" != regime else b', "if prod.regime != model.regime:"):
        assert any(rx.search(planted) for rx in NAME_COMPARISONS), planted


def test_an_unknown_regime_is_an_error_listing_the_registered_ones():
    with pytest.raises(ValueError, match=r"regime='skeched'.*'unconstrained', 'distributed', 'sketched'.*did you mean 'sketched'"):
        regimes.get("skeched")
    with pytest.raises(ValueError, match="registered regimes"):
        ModelConfig(regime="dense")
    assert regimes.get("centralized") is regimes.get("unconstrained")
    assert regimes.get("compute-limited").name == "sketched"
    assert config.REGIMES == regimes.PAPER == ("unconstrained", "distributed", "sketched")
    with pytest.raises(ValueError, match="already registered"):
        regimes.register(regimes.SKETCHED)
    with pytest.raises(ValueError, match="cannot be unregistered"):
        regimes.unregister("sketched")


def test_each_regime_reads_its_own_settings_only():
    """A knob a regime does not read keeps the paper's value in its configs, so its cache key is unchanged."""
    paper, r8 = config.get("paper"), config.get("paper", knobs={"r": 8, "machines": 6, "heads": 2})
    assert r8.training("sketched").model.r == 8 and r8.training("distributed").model.machines == 6
    assert r8.training("unconstrained").model.heads == 2
    for name in regimes.PAPER:
        rg = regimes.get(name)
        for field in ("heads", "r", "machines"):
            want = getattr(r8.train.model if field in rg.uses else ModelConfig(), field)
            assert getattr(r8.training(name).model, field) == want, (name, field)
    assert r8.training("unconstrained", seed=3).model == ModelConfig(regime="unconstrained", heads=2)
    assert paper.training("sketched", seed=3) == config.get("paper", knobs={"heads": 2}).training("sketched", seed=3)


# ---------------------------------------------------------------------------------------------- a toy regime
class HalfHeads(regimes.Heads):
    """Two heads over all the features, each carrying half of the layer's W_VP when hand-set (so a hand-set
    layer with the diagonal weights is the EAGLE update again)."""

    def set_diagonal_layer(self, model, l, a1, a2, a3, *, sketch=None, other=None):
        n, np_ = model.task.n, model.task.n_prime
        c, sg = float(np.sqrt(abs(a1))), (1.0 if a1 >= 0 else -1.0)
        for h in range(2):
            model.W_Q[l, h] = c * torch.eye(n + np_, dtype=F64)
            model.W_K[l, h, :n, :n] = sg * c * torch.eye(n, dtype=F64)
            model.W_V[l, h] = torch.eye(n + np_, dtype=F64)
            model.W_P[l, h] = torch.diag(torch.tensor([a2 / 2] * n + [a3 / 2] * np_, dtype=F64))


#: A regime of this test alone: always two heads (reads no regime-specific setting), read like the paper's
#: unconstrained regime.
PAIR = regimes.Regime("pair", HalfHeads(count=2), regimes.Diagonal(),
                      regimes.Paper("pair (toy)", style=dict(color="#56B4E9", linestyle=":")))


TINY = TaskConfig(n=5, d=6, n_prime=2, d_prime=2, s=3)


@pytest.fixture
def pair():
    rg = regimes.register(PAIR)
    try:
        yield rg
    finally:
        regimes.unregister("pair")
    with pytest.raises(ValueError, match="regime='pair'"):
        ModelConfig(regime="pair")


def test_a_toy_regime_trains_extracts_and_compares_with_eagle(pair, tmp_path, monkeypatch):
    assert "pair" in regimes.names() and "pair" not in config.REGIMES     # the chapters' three stay the paper's
    cfg = TrainConfig(task=TINY, model=ModelConfig(regime="pair", layers=3), steps=80, batch=64, eval_every=40,
                      eval_size=128, seed=1, dtype="float64")
    assert config.get("ci").training("pair").model.regime == "pair"
    monkeypatch.setenv("EAGLEBOOK_CACHE", str(tmp_path))
    run = training.trained(cfg, progress=False)                          # through the cache, keyed by the regime
    assert training.trained(cfg, progress=False).state_dict["W_Q"].equal(run.state_dict["W_Q"])
    model = run.model(dtype=F64)
    assert model.rg is pair and model.heads == 2 and tuple(model.W_Q.shape) == (3, 2, 7, 7)
    assert run.final["test_mse_median"] < run.baselines["zero_mse"]       # it learned something
    # the extraction: products, structure, scalars, scaling law, sparsification
    X, Xo = training.test_set(cfg)
    al = extraction.alphas(model)
    assert al.regime == "pair" and al.a1.shape == (3,) and al.b is None and np.all(al.a1 >= 0)
    wp = extraction.weight_properties(model)
    assert set(wp) == {"qk", "vp", "qk_random", "vp_random"} and len(wp["qk"]) == 3
    law = extraction.scaling_law(model, batch=64)
    assert np.all(np.isfinite(law.eta_layer)) and law.norm2_max.shape == (3,)
    curve = extraction.sparsification_curve(model, X[:64], Xo[:64], TINY, factors=(0.5, 1.5))
    assert np.isclose(curve.original_median, training.evaluate(model, X[:64], Xo[:64], TINY)["median"], rtol=1e-10)
    assert extraction.quantized_model(model).heads == 2
    # the EAGLE comparison: the extracted iteration against the transformer, layer by layer
    fid = extraction.fidelity(model, Xo[:64], TINY, X_clean=X[:64])
    assert fid.mean.shape == (4,) and fid.mean[0] == 0.0 and np.all(np.isfinite(fid.mean))
    # with the hand-set diagonal weights the toy layer is exactly the EAGLE update
    hand = models.LinearTransformer(cfg.model, TINY, generator=torch.Generator().manual_seed(0), dtype=F64)
    coef = [(0.8, -0.1, -0.4), (0.5, -0.2, -0.5), (0.7, -0.15, -0.3)]
    hand.set_diagonal(coef)
    Z0 = tasks.prompt(Xo[:16], TINY)
    A, B, C, D = tasks.split(Z0, TINY)
    for a1, a2, a3 in coef:
        A, B, C, D = models.diagonal_update(A, B, C, D, a1, a2, a3)
    assert torch.allclose(hand(Z0), -D, rtol=1e-12, atol=1e-14)
    f = extraction.fidelity(hand, Xo[:16], TINY)
    assert f.mean[0] == 0.0 and max(v.max() for v in f.gauge_relative.values()) < 1e-24
    assert np.allclose(extraction.alphas(hand).ab, [a1 * a2 for a1, a2, _ in coef], rtol=1e-12)


def test_the_registered_regimes_differ_only_through_their_objects():
    """Every paper regime builds, runs and is read through its own object (shapes from its layout)."""
    for name in regimes.PAPER:
        rg = regimes.get(name)
        cfg = ModelConfig(regime=name, layers=2, machines=2, r=2, heads=2)
        lay = rg.attention.layout(cfg, TaskConfig(n=6, d=5, n_prime=2, d_prime=2, s=3))
        m = models.LinearTransformer(cfg, TaskConfig(n=6, d=5, n_prime=2, d_prime=2, s=3),
                                     generator=torch.Generator().manual_seed(0), dtype=F64)
        assert {k: tuple(getattr(m, k).shape) for k in lay.shapes} == lay.shapes and m.features == lay.features
        assert rg.style and rg.label and rg.paper.variant in ("centralized", "sketched", "distributed")

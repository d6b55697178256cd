"""Chapter 11's changes: the new settings (softmax attention, the noise share, the full-rank floor, SGD) and
eaglebook.beyond (the declared test, the readings, the order of convergence, the scorecard's answers)."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from eaglebook import ablations, beyond, cache, claims, config, knobsets, report, tasks, training
from eaglebook.config import ModelConfig, TaskConfig, TrainConfig
from eaglebook.models import LinearTransformer

torch.set_num_threads(1)
F64 = torch.float64
SMALL = TaskConfig(n=6, d=5, n_prime=2, d_prime=3, s=3)


def _model(attention, task=SMALL, seed=1, layers=2, heads=2):
    return LinearTransformer(ModelConfig(layers=layers, heads=heads, attention=attention, init_std=0.3), task,
                             generator=torch.Generator().manual_seed(seed), dtype=F64)


# ------------------------------------------------------------------------------------------------ settings
def test_the_new_fields_leave_every_old_cache_key_alone():
    P = config.get("paper")
    base = P.training("unconstrained", seed=0)
    assert cache.canonical_json(base) == cache.canonical_json(dataclasses.replace(base))
    for k in ("attention", "noise_fraction", "floor_var", "optimizer", "momentum"):
        assert k not in cache.canonical_json(base)
    changed = config.apply_knobs(base, {"attention": "softmax"})
    assert cache.config_hash(changed) != cache.config_hash(base) and '"attention":"softmax"' in cache.canonical_json(changed)


@pytest.mark.parametrize("knobs,match", [
    ({"attention": "relu"}, r"parameter attention='relu' is not valid; allowed values: 'linear', 'softmax'"),
    ({"optimizer": "rmsprop"}, r"parameter optimizer='rmsprop' is not valid; allowed values: 'adam', 'sgd'"),
    ({"noise_fraction": 1.5}, r"parameter noise_fraction=1.5 is not valid; allowed values: numbers in \[0, 1\]"),
    ({"floor_var": -1.0}, r"parameter floor_var=-1.0 is not valid; allowed values: finite numbers >= 0"),
    ({"momentum": 1.0}, r"parameter momentum=1.0 is not valid; allowed values: numbers in \[0, 1\)"),
])
def test_a_bad_value_of_a_new_knob_names_itself(knobs, match):
    with pytest.raises(ValueError, match=match):
        config.get("ci", knobs=knobs)


def test_softmax_attention_is_the_literal_definition():
    m = _model("softmax")
    X, _ = tasks.sample_X(SMALL, 3, generator=torch.Generator().manual_seed(0), dtype=F64)
    Z0 = tasks.prompt(X, SMALL)
    Z, d = Z0.clone(), SMALL.d
    for l in range(m.L):
        upd = 0
        for h in range(m.W_Q.shape[1]):
            S = (Z @ m.W_Q[l, h]) @ (Z[:, :d] @ m.W_K[l, h]).mT           # scores over the d keys
            upd = upd + torch.softmax(S, -1) @ Z[:, :d] @ m.W_V[l, h] @ m.W_P[l, h].T
        Z = Z + upd
    with torch.no_grad():
        assert torch.allclose(m.activations(Z0)[-1], Z, atol=1e-12)
        assert torch.allclose(m(Z0), -Z[:, d:, SMALL.n:], atol=1e-12)          # the fast last layer agrees
    assert not torch.allclose(_model("linear")(Z0), m(Z0))
    assert "attention=softmax" in repr(m) and "attention" not in repr(_model("linear"))


def test_the_noise_share_and_the_floor():
    g = lambda: torch.Generator().manual_seed(3)
    base = TaskConfig()
    X0, Xo0 = tasks.sample_X(dataclasses.replace(base, noise_var=0.01), 64, generator=g())
    low, X, Xo = tasks.sample_parts(dataclasses.replace(base, noise_var=0.01), 64, generator=g())
    assert torch.equal(X0, X) and torch.equal(Xo0, Xo) and torch.equal(low, X)   # defaults: the same draws as before
    _, X, Xo = tasks.sample_parts(dataclasses.replace(base, noise_var=0.01, noise_fraction=0.25), 64, generator=g())
    noisy = (Xo - X).abs().amax((-1, -2)) > 0
    assert noisy[:16].all() and not noisy[16:].any()
    low, X, Xo = tasks.sample_parts(dataclasses.replace(base, floor_var=0.04), 512, generator=g())
    assert torch.equal(X, Xo)                                          # the floor is part of the truth, not noise
    assert abs(float((X - low).var()) - 0.04) < 0.004
    assert int(torch.linalg.matrix_rank(X[0])) == 20 > int(torch.linalg.matrix_rank(low[0])) == base.s


def test_sgd_is_the_optimiser_the_config_names():
    cfg = config.apply_knobs(TrainConfig(steps=3, batch=8), {"optimizer": "sgd", "lr": 0.1, "momentum": 0.5})
    p = [torch.nn.Parameter(torch.zeros(2))]
    opt = training.optimizer(cfg, p, torch.device("cpu"))
    assert isinstance(opt, torch.optim.SGD) and opt.defaults["momentum"] == 0.5 and opt.defaults["lr"] == 0.1
    assert isinstance(training.optimizer(TrainConfig(), p, torch.device("cpu")), torch.optim.Adam)


# ------------------------------------------------------------------------------------------------ changes
def test_every_change_is_a_set_of_knobs_with_a_claim_of_kind_beyond():
    P = config.get("ci")
    keys = [c.key for c in beyond.CHANGES]
    assert keys[0] == "paper" and len(set(keys)) == len(keys)
    for c in beyond.CHANGES[1:]:
        assert claims.claim(c.claim).kind == claims.BEYOND and claims.claim(c.claim).chapter == "11_beyond"
        cfg = beyond.configs(P, c, [0], lr=0.3)[0]
        assert cfg != P.training("unconstrained", seed=0), c.key
    assert beyond.change("lr_low").config(P.training()).lr == pytest.approx(0.3 * P.train.lr)
    with pytest.raises(ValueError, match="needs the probed learning rate"):
        beyond.change("sgd").config(P.training())
    with pytest.raises(ValueError, match="allowed values: paper, softmax"):
        beyond.change("relu")


def test_chapter_9s_ablations_and_chapter_11s_changes_are_one_type_of_knob_set():
    P = config.get("ci")
    assert all(isinstance(k, knobsets.KnobSet) for k in (*ablations.SKETCHED, ablations.NOISE, *beyond.CHANGES))
    base = P.training("unconstrained", seed=0)
    # the noise ablation of chapter 9 and the all-noise change of chapter 11 set the same knobs: the same config
    assert ablations.NOISE.config(base) == beyond.change("noise_all").config(base)
    s = knobsets.KnobSet("x", "x", "a probed rate and twice the steps",
                         {"lr": knobsets.PROBED, "steps": knobsets.Derived("2 × steps", lambda c: 2 * c.steps)})
    assert s.settings(base, lr=0.5) == {"lr": 0.5, "steps": 2 * base.steps} and repr(s.knobs["steps"]) == "2 × steps"
    with pytest.raises(ValueError, match="needs the probed learning rate"):
        s.settings(base)
    with pytest.raises(ValueError, match="must be a sketched config"):
        knobsets.KnobSet("y", "y", "y", {"r": 3}, regime="sketched").config(base)
    with pytest.raises(ValueError, match="allowed values: x, y"):
        knobsets.find([s, knobsets.KnobSet("y", "y", "y")], "z")


def test_the_probe_picks_the_lowest_finite_median():
    R = lambda lr, m: training.Run(cfg=config.apply_knobs(TrainConfig(), {"lr": lr}), state_dict={},
                                   history={k: np.array([m]) for k in ("test_mse_mean", "test_mse_median", "test_frac_worse_than_zero")}, baselines={}, seconds=0.0, n_skipped=0)
    assert beyond.probed_lr([R(0.1, 0.02), R(0.3, 0.004), R(1.0, math.nan)]) == 0.3
    with pytest.raises(ValueError, match="non-finite"):
        beyond.probed_lr([R(1.0, math.nan)])
    assert [c.lr for c in beyond.probe_configs(config.get("ci"))] == list(beyond.SGD_PROBE_LRS)


# ------------------------------------------------------------------------------------------------ the test
def _stats(**kw):
    s = dict(offdiag_qk=0.1, offdiag_vp=0.1, eta=1.0, gamma=1.9, fidelity=1e-4, reduction=40.0)
    return s | kw


@pytest.mark.parametrize("kw,score", [
    ({}, 4.0), ({"gamma": 3.0}, 3.0), ({"gamma": 1.9 * 1.5}, 4.0), ({"eta": 0.6, "fidelity": 1e-3}, 2.0),
    ({"reduction": 9.9, "fidelity": 1.0, "eta": -1.0}, 1.0), ({"offdiag_vp": 0.41}, 0.0),
])
def test_the_declared_score(kw, score):
    assert beyond.same_algorithm(_stats(**kw)) == score


def test_the_sized_structure_test_reads_the_same_deviation_per_entry_alike_at_every_size():
    """A product Π + E with the same per-entry deviation has a larger off-structure mass at a larger size; the
    sized mass, converted to n = 18, n′ = 2, is the same at every size (and is the mass itself at n = 18)."""
    from eaglebook.extraction.structure import matrix_properties
    rng = np.random.default_rng(0)
    raw, sized = {}, {}
    for n in (18, 36, 72):
        N = n + 2
        qk = np.diag(np.r_[np.ones(n), np.zeros(2)]) + 0.05 * rng.standard_normal((N, N))
        vp = np.eye(N) + 0.05 * rng.standard_normal((N, N))
        for kind, W in (("qk", qk), ("vp", vp)):
            m = matrix_properties(W, n, kind).offdiag_mass
            raw[kind, n], sized[kind, n] = m, beyond.sized_mass(m, kind, n, 2)
    for kind in ("qk", "vp"):
        assert raw[kind, 18] < raw[kind, 36] < raw[kind, 72] and sized[kind, 18] == raw[kind, 18]
        assert sized[kind, 36] == pytest.approx(sized[kind, 18], rel=0.05) and sized[kind, 72] == pytest.approx(sized[kind, 18], rel=0.05)
    assert beyond.sized_mass(1.0, "qk", 36, 2) == 1.0 and beyond.sized_mass(0.36, "vp", 18, 2) == 0.36
    with pytest.raises(ValueError, match="kind"):
        beyond.sized_mass(0.3, "qv", 36, 2)
    big = _stats(offdiag_qk=0.5, n=36.0, n_prime=2.0)
    assert beyond.same_algorithm(big) == 0.0 and beyond.same_algorithm(big, sized=True) == 4.0
    assert beyond.same_algorithm(_stats(offdiag_qk=0.5, n=18.0, n_prime=2.0), sized=True) == 0.0
    with pytest.raises(ValueError, match="size"):
        beyond.tests_held(_stats(), sized=True)
    assert beyond.answer([big], sized=True)["answer"] == "yes" and beyond.answer([big])["answer"] == "no"
    assert [c.key for c in beyond.CHANGES if beyond.resized(c)] == ["scale"]


def test_the_resampled_score_is_the_score_on_the_medians_over_seeds():
    per_seed = [_stats(fidelity=f, n=18.0, n_prime=2.0) for f in (1e-4, 1e-3, 2e-3)]
    r = beyond.resampled_score(per_seed, [4, 5, 6])
    assert r.value == beyond.same_algorithm(beyond.median_stats(per_seed)) == 3.0 and list(r.names) == [4, 5, 6]


def test_order_of_convergence_tells_linear_from_quadratic():
    lin = 0.5 ** np.arange(8)
    quad = 0.5 ** (2.0 ** np.arange(6))
    assert beyond.order_of_convergence(lin) == pytest.approx(1.0)
    assert beyond.order_of_convergence(quad) == pytest.approx(2.0)
    assert math.isnan(beyond.order_of_convergence([1.0, 0.1, 0.2, 0.01]))          # stops at the first rise
    assert beyond.order_of_convergence([1.0, 0.1, 0.01, 0.001, 0.002]) == pytest.approx(1.0)
    assert math.isnan(beyond.order_of_convergence([1.0, 0.5]))
    burn_then_quad = np.concatenate([lin, lin[-1] * np.cumprod(0.5 ** (2.0 ** np.arange(1, 4)))])
    assert beyond.order_of_convergence(burn_then_quad) == pytest.approx(1.0)       # the burn-in dominates the median
    assert beyond.order_of_convergence(burn_then_quad, last=4) == pytest.approx(2.0)
    assert beyond.order_of_convergence(list(burn_then_quad) + [0.0], last=4) == pytest.approx(2.0)  # below the floor
    with pytest.raises(ValueError, match="last"):
        beyond.order_of_convergence(lin, last=2)


def test_readings_and_layer_errors_of_a_hand_set_eagle_model():
    """A model whose layers are EAGLE's steps (η = 1, γ = 1.9 at the batch-max ρ of the prompts) reads as EAGLE."""
    task = TaskConfig()
    X, Xo = tasks.sample_X(task, 64, generator=torch.Generator().manual_seed(0), dtype=F64)
    Z0 = tasks.prompt(Xo, task)
    m = LinearTransformer(ModelConfig(layers=3), task, generator=torch.Generator().manual_seed(0), dtype=F64)
    A = tasks.split(Z0, task).A
    rows = []
    for _ in range(3):                       # the α's of the EAGLE steps on this very batch
        rho = float(torch.linalg.matrix_norm(A, ord=2).square().max())
        rows.append((1.0, -1.0 / rho, -1.9 / rho))
        A = A - (A @ A.mT @ A) / rho
    m.set_diagonal(rows)
    e = beyond.layer_errors(m, X, Xo)
    assert np.allclose(e["model"], e["eagle"], rtol=1e-9) and e["model"][-1] < e["gd"][-1] < e["model"][0]
    r = beyond.readings(m, Xo)
    assert r["eagle"] < 1e-9 < r["gd"]


def test_the_scorecard_answers_yes_partly_no(tmp_path, monkeypatch):
    monkeypatch.setenv(report.CLAIMS_ENV, str(tmp_path))
    led = report.Ledger("11_beyond", "ci", provenance=report.provenance("11_beyond", "ci", {"seed": 0}))
    for key, v in (("softmax", 0.0), ("depth2", 2.0), ("depth8", 4.0)):
        d = led.declare(f"C11_{key}_same", claim=f"b-{key}", role=report.HEADLINE, criterion=report.at_least(4, partly=1),
                        what="tests held", setting=f"changed: {key}")
        led.record(d, v)
    assert [led.comparisons[f"C11_{k}_same"]["verdict"] for k in ("softmax", "depth2", "depth8")] == \
        ["not reproduced", "partly", "reproduced"]            # a changed setting is judged: it is the question
    table = report.beyond_table([led])
    assert "**no**" in table and "**partly**" in table and "**yes**" in table and "*not run*" in table
    assert "reproduced" not in table
    assert "**yes**" in report.comparisons_table([led]) and "reproduced" not in report.comparisons_table([led])
    assert report.verdict_counts([led])["not run"] == len([c for c in claims.CLAIMS if c.kind == claims.PAPER])


class _Zero(torch.nn.Module):
    """Predicts D = 0 (floor_targets reads the dtype of its parameters)."""

    def __init__(self, task):
        super().__init__()
        self.task, self.w = task, torch.nn.Parameter(torch.zeros((), dtype=F64))

    def forward(self, Z):
        return 0 * self.w + torch.zeros_like(Z[..., self.task.d:, self.task.n:])


@pytest.mark.parametrize("floor_var", [0.0, 0.04])
def test_the_floor_targets_of_a_model_that_predicts_zero(floor_var):
    task = dataclasses.replace(SMALL, floor_var=floor_var)
    t = beyond.floor_targets(TrainConfig(task=task, seed=2), _Zero(task), n=4096)
    assert set(t) == {"true D", "low-rank part of D", "Nyström B A^† C", f"rank-{task.s} Nyström B A_{task.s}^† C", "zero matrix"}
    assert t["true D"]["vs_truth"] == 0 and t["zero matrix"]["model"] == 0
    assert t["true D"]["model"] == t["zero matrix"]["vs_truth"] > 0.1                 # the beats-zero baseline
    floor = t["low-rank part of D"]["vs_truth"]
    if floor_var == 0:                                                    # low-rank data: every completion is the truth
        assert floor == 0 and t["Nyström B A^† C"]["vs_truth"] < 1e-20
        assert t[f"rank-{task.s} Nyström B A_{task.s}^† C"]["vs_truth"] < 1e-20
    else:                                                                 # the floor's part of D, a median of means of 6 squares
        assert 0.5 * floor_var < floor < floor_var and t["Nyström B A^† C"]["vs_truth"] > floor


def test_the_noise_sets_share_their_clean_draws():
    sets = beyond.noise_sets(TrainConfig(task=SMALL, seed=4), 2048, noise_var=0.04)
    (Xn, Xno), (Xc, Xco) = sets["noisy"], sets["clean"]
    assert Xn.dtype == F64 and torch.equal(Xn, Xc) and torch.equal(Xc, Xco)
    assert abs(float((Xno - Xn).var()) - 0.04) < 0.002


def test_theorem1_eagle_converges_with_its_own_rho_per_prompt():
    X, Xo = tasks.sample_X(SMALL, 32, generator=torch.Generator().manual_seed(5), dtype=F64)
    e = beyond.theorem1_errors(X, Xo, SMALL, 40)
    assert e.shape == (41,) and e[0] > 0.1 and e[-1] < 1e-12 * e[0]          # Theorem 1: D_ℓ → the Nyström D
    assert beyond.order_of_convergence(e, last=4) > 1.5                          # its tail is doubly exponential
    Z0 = tasks.prompt(Xo, SMALL)
    one = [beyond._iterate(Z0[i:i + 1], SMALL, 6, 1 / 3, 1.0)[-1] for i in range(3)]   # batch max of one prompt = its own ρ
    assert torch.allclose(beyond._iterate(Z0[:3], SMALL, 6, 1 / 3, 1.0, pool="instance")[-1], torch.cat(one), atol=1e-12)
    with pytest.raises(ValueError, match="pool"):
        beyond._iterate(Z0, SMALL, 1, 1.0, 1.0, pool="mean")


def test_median_kappa_reads_the_s_largest_singular_values_of_A():
    X = torch.zeros(2, SMALL.d + SMALL.d_prime, SMALL.n + SMALL.n_prime, dtype=F64)
    X[0, :3, :3] = torch.diag(torch.tensor([4.0, 2.0, 1.0]))
    X[1, :3, :3] = torch.diag(torch.tensor([8.0, 1.0, 1.0]))
    X[:, SMALL.d:, SMALL.n:] = 100.0                                   # D is not part of A
    assert beyond.median_kappa(X, SMALL) == pytest.approx(6.0)

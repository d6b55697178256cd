"""Every plotting function's figure passes the book's figure standard (plotting.audit), and the audit
catches each kind of illegible figure (one planted bad figure per check)."""

from types import SimpleNamespace as NS

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from eaglebook import plotting, regimes  # noqa: E402
from eaglebook.chapters import ablations, beyond, benchmarks, eagle, extract, newton_schulz, noisy_regression, task, train  # noqa: E402
from eaglebook.chapters import distributed as c8  # noqa: E402

plotting.use_style()
rng = np.random.default_rng(0)
decay = lambda n, r=0.7: r ** np.arange(1, n + 1)           # noqa: E731  (an error curve over decades)


def _task():
    return NS(n=8, d=8, n_prime=2, d_prime=2)


def _bench_rows():
    rows = []
    for k in (1e2, 1e4, 1e6):
        for rd in (False, True):
            runs = {name: dict(iterations=40, curve=dict(iteration=np.arange(1, 41), time=np.linspace(1e-4, 1e-2, 40),
                                                        value=decay(40, 0.5 + 0.1 * i)))
                    for i, name in enumerate(("EAGLE", "EAGLE (r = n/2)", "GD", "CG", "LSQR"))}
            runs["SVD"] = dict(iterations=1, curve=dict(iteration=[1], time=[1e-3], value=[1e-15]))
            rows.append(dict(kappa=k, rank_deficient=rd, runs=runs))
    return rows


def _tail(shift):
    n = 400
    return NS(norm_ratio=np.exp(rng.normal(shift, 0.5, n)), kappa=np.exp(rng.normal(3, 1, n)),
              worse=rng.random(n) < 0.05, eta0=1.0, gamma0=1.9, step=np.exp(rng.normal(0, 0.5, n)))


CASES = {
    "plot_blocks": lambda: task.plot_blocks(rng.standard_normal((10, 10)), _task()),
    "plot_mask_and_regimes": lambda: task.plot_mask_and_regimes(
        _task(), mask=np.tril(np.ones((10, 10))), r=3, owner=np.repeat([0, 1], 4)),
    "plot_tail": lambda: task.plot_tail(np.exp(rng.normal(1, 0.3, 500)), xlabel="t"),
    "plot_training": lambda: train.plot_training(
        dict(train_loss=np.exp(-np.linspace(0, 6, 600)) + 1e-3 * rng.random(600), skipped=[100, 300],
             eval_step=np.arange(0, 600, 50), test_mse_mean=np.exp(-np.linspace(0, 5, 12)),
             test_mse_median=np.exp(-np.linspace(0, 6, 12))), dict(zero_mse=1.0, nystrom_mse=1e-9)),
    "plot_regime_curves": lambda: train.plot_regime_curves(
        {(reg, s): NS(history=dict(eval_step=np.arange(0, 500, 50), test_mse_median=decay(10, 0.5 + 0.1 * s)))
         for reg in regimes.PAPER for s in range(2)}),
    "plot_variants": lambda: eagle.plot_variants(
        {k: NS(rel_error=decay(30, 0.4 + 0.2 * i)) for i, k in enumerate(("centralized", "sketched, r = 15", "distributed, M = 3"))}),
    "plot_side_by_side": lambda: eagle.plot_side_by_side(
        {reg: np.stack([decay(5, 0.3 + 0.1 * i), 1.1 * decay(5, 0.3 + 0.1 * i)], axis=1) for i, reg in enumerate(regimes.PAPER)}),
    "plot_constants": lambda: eagle.plot_constants(
        {k: NS(rel_error=decay(60, 0.5 + 0.1 * i)) for i, k in enumerate(("theorem", "per-instance", "batch-max", "1.5 × norm"))}),
    "plot_ablations": lambda: ablations.plot_ablations(
        {k: {"eta": list(1 + 0.1 * rng.random(3)), "gamma": list(10 ** rng.uniform(0, 4, 3)),
             "reduction": list(10 ** rng.uniform(0, 3, 3))} for k in ("base", "no clip", "one head")},
        paper={"eta": (1.0, "η", False), "gamma": (1.9, "γ", False), "reduction": ((10.0, 50.0), "reduction", True)}),
    "plot_definitions": lambda: ablations.plot_definitions({"max": [0.1, 0.2], "mean": [0.05, 0.07]}, paper=0.1),
    "plot_failure_boundary": lambda: ablations.plot_failure_boundary({"unconstrained": _tail(0.0), "sketched": _tail(0.3)}),
    "plot_versus": lambda: eagle.plot_versus(
        {(reg, 0): NS(theorem=10 ** rng.normal(-3, 1, 200), extracted=10 ** rng.normal(-3, 1, 200),
                      model=10 ** rng.normal(-3.2, 1, 200)) for reg in regimes.PAPER}, 0),
    "plot_products": lambda: plotting.plot_products(
        {r"$W_{QK}$": [rng.standard_normal((10, 10)) for _ in range(3)],
         r"$W_{VP}$": [rng.standard_normal((10, 10)) for _ in range(3)]}, blocks=(8,)),
    "plot_sparsification": lambda: extract.plot_sparsification(NS(
        factors=np.linspace(0, 3, 10), mse_median=decay(10)[::-1], quantized_median=1.1 * decay(10)[::-1],
        mse_mean=2 * decay(10)[::-1], original_median=1e-4, zero_mse=1.0)),
    "plot_scaling": lambda: extract.plot_scaling(NS(eta_layer=[0.5, 2.0, 40.0, 900.0],
                                                     gamma_layer=[1.0, 3.0, 60.0, 2000.0]), eta_paper=1.0, gamma_paper=1.9),
    "plot_sketch_spectrum": lambda: extract.plot_sketch_spectrum([NS(
        sv_qk=np.sort(rng.random(10))[::-1], sv_vp=np.sort(rng.random(10))[::-1], sv_reference=np.ones(10),
        entries_qk=rng.uniform(-1, 1, 100), entries_vp=rng.uniform(-1, 1, 100), sign=1,
        entries_reference=rng.uniform(-1, 1, 100)) for _ in range(3)]),
    "plot_scorecard": lambda: plotting.plot_scorecard(
        [("C1", 1e-3, 2e-3, "reproduced"), ("C2", 10.0, 40.0, "partly"), ("C3", 1.0, 100.0, "not reproduced"),
         ("C4 (a)", 6e-4, 4e14, "not reproduced"), ("C4 (b)", 6e-4, 2e13, "not reproduced")]),
    "plot_sv_map": lambda: newton_schulz.plot_sv_map(
        np.linspace(0, 1.7, 50), np.linspace(0, 1.7, 50) * (1 - np.linspace(0, 1.7, 50) ** 2 / 3),
        0.5 * np.linspace(0, 1.7, 50) * (3 - np.linspace(0, 1.7, 50) ** 2),
        orbits={"x0 = 0.01": np.minimum(1, 0.01 * 1.5 ** np.arange(15)), "x0 = 0.1": np.minimum(1, 0.1 * 1.5 ** np.arange(15))}),
    "plot_spectra": lambda: newton_schulz.plot_spectra({l: decay(10, 0.3 + 0.1 * l) for l in range(6)}, cols=3),
    "plot_theta": lambda: newton_schulz.plot_theta(decay(12, 0.2) * 50, predicted=decay(12, 0.2) * 40, switch=3),
    "plot_kappa_sweep": lambda: newton_schulz.plot_kappa_sweep(
        [1e1, 1e2, 1e3, 1e4], {"EAGLE": [[5, 8, 12, 16], [6, 8, 13, np.nan]], "GD": [50, 500, 5000, 50000]},
        {"EAGLE": [[1e-15, 1e-14, 1e-13, 1e-12], [2e-15, 3e-14, 1e-13, 5e-12]], "SVD": [1e-15, 1e-15, 1e-14, 1e-13]},
        reference=("log κ", [4, 8, 12, 16])),
    "plot_eps_sweep": lambda: newton_schulz.plot_eps_sweep([1e-2, 1e-4, 1e-6, 1e-8], {"EAGLE": [3, 4, 5, 6], "GD": [10, 20, 30, 40],
                                                                                  "CG": [5, 9, 13, 17]}),
    "plot_alpha": lambda: newton_schulz.plot_alpha([1, 2, 4, 8], [[5, 9, 17, 33], [6, 9, 18, 35]], fit=(4.0, 1.0)),
    "plot_error_curves": lambda: newton_schulz.plot_error_curves(
        {"centralized": {"EAGLE": decay(20), "EAGLE, float32": decay(20, 0.75), "GD": decay(20, 0.95)},
         "sketched": {"EAGLE": decay(20, 0.8), "GD": decay(20, 0.97)}},
        styles={"EAGLE": "EAGLE", "EAGLE, float32": "EAGLE", "GD": "GD"}, markers={"EAGLE": "o", "GD": "x"}),
    "plot_machine_sweep": lambda: c8.plot_machine_sweep({M: decay(30, 0.5 + 0.08 * M) for M in (1, 2, 4, 8, 16)}, eps=1e-6),
    "plot_alpha_sweep": lambda: c8.plot_alpha_sweep(
        {"random": ([0.5, 0.25, 0.1], [10, 20, 50]), "balanced": ([0.6, 0.3, 0.12], [9, 18, 45])},
        gd={"random": ([0.5, 0.25, 0.1], [100, 200, 500], [True, True, False]),
            "balanced": ([0.6, 0.3, 0.12], [90, 180, 450], [True, True, True])},
        cg={"random": ([0.5, 0.25, 0.1], [15, 16, 18], [True, True, False])}, eps=1e-6),
    "plot_round_time": lambda: c8.plot_round_time({"M = 2": (1e-3, 2e-3), "M = 4": (0.6e-3, 3e-3)}),
    "plot_bench_curves": lambda: benchmarks.plot_bench_curves(_bench_rows(), floor=1e-16),
    "plot_sketched": lambda: benchmarks.plot_sketched(
        [dict(n_over_r=q, eagle={"to": {"1e-06": {"iterations": 10 * q}}}) for q in (1, 2, 4, 8)],
        dict(s=[64, 32, 16, 8], ratio_to_full={"64": 1.0, "32": 0.7, "16": 0.4, "8": 0.3},
             paper_ms={"64": 21, "32": 16, "16": 7, "8": 5})),
    "plot_noise": lambda: benchmarks.plot_noise([dict(rank=r, noise_std=0.01, runs={
        "EAGLE": dict(curve=dict(iteration=np.arange(1, 31), value=np.maximum(decay(30), 1e-3))),
        "GD": dict(curve=dict(iteration=np.arange(1, 31), value=np.maximum(decay(30, 0.9), 1e-3))),
        "lstsq (numpy)": dict(final=1e-3)}) for r in (5, 10)]),
    "plot_step_grid": lambda: benchmarks.plot_step_grid(dict(max_iter=100, **{
        k: [dict(factor=f, best_median=1e-12 * f ** 4, iterations_to_1e10=[10 / f, 12 / f]) for f in (0.5, 1.0, 1.5)]
        for k in ("together", "ratio")})),
    "plot_grid_times": lambda: benchmarks.plot_grid_times({
        shape: dict(methods=["EAGLE", "SVD", "CG"], rows=[
            dict(k=k, n=k if shape != "wide" else 4 * k, d=k if shape != "tall" else 8 * k, runs={
                m: dict(median=c * 1e-3 * (k / 60) ** e, spread=(0.9 * c * 1e-3 * (k / 60) ** e, 1.1 * c * 1e-3 * (k / 60) ** e))
                for m, c, e in (("EAGLE", 1.0, 2.0), ("SVD", 0.3, 2.5), ("CG", 3.0, 1.5))}) for k in (60, 120, 240, 480)])
        for shape in ("square", "tall", "wide")}),
    "plot_floors": lambda: benchmarks.plot_floors(dict(
        unit_roundoff={"float64": 2.0 ** -53, "float32": 2.0 ** -24}, methods=["EAGLE", "Newton–Schulz", "SVD", "Cholesky"],
        rows=[dict(kappa=k, runs={dt: {m: dict(final=None if (m == "Newton–Schulz" and dt == "float32" and k > 1e4) else
                                                min(1.0, c * u * k ** e), floor=c * u * k ** e)
                                       for m, c, e in (("EAGLE", 3.0, 0.0), ("Newton–Schulz", 10.0, 0.5), ("SVD", 2.0, 0.0),
                                                       ("Cholesky", 1.0, 2.0)) if not (m == "SVD" and dt == "float32")}
                                  for dt, u in (("float64", 2.0 ** -53), ("float32", 2.0 ** -24))})
              for k in (1e2, 1e4, 1e8, 1e12)])),
    "plot_depth_losses": lambda: noisy_regression.plot_depth_losses(
        [1, 2, 3, 4], [1.8, 0.34, 0.03, 9e-3], {1: 1.768, 2: 0.341, 3: 0.019, 4: 9.91e-5}, floor=1e-7),
    "plot_readings": lambda: noisy_regression.plot_readings(
        {(m, r): list(10.0 ** -np.arange(0, 5 + k)) for k, m in enumerate(("GD++", "DIAG")) for r in ("GD++", "EAGLE")},
        {m: ([1.0, 0.9, 0.8], [0.5, -0.2, 0.1]) for m in ("GD++", "DIAG")}),
    "plot_shrinkage": lambda: noisy_regression.plot_shrinkage(
        np.linspace(0, 5, 11), {"oracle": list(0.1 + 0.05 * np.linspace(0, 5, 11) ** 2),
                                "ConstRR": list(0.12 + 0.06 * np.linspace(0, 5, 11) ** 2),
                                "DIAG, 3 layers": list(0.11 + 0.055 * np.linspace(0, 5, 11) ** 2)}),
    "plot_layer_constants": lambda: beyond.plot_layer_constants(
        {f"{L} layers": (list(np.linspace(0.8, 1.2, L)), list(np.linspace(1.5, 2.2, L))) for L in (2, 4, 8)},
        eta=1.0, gamma=1.9),
    "plot_layer_errors": lambda: beyond.plot_layer_errors(
        {"model, 8 layers": list(0.1 * 0.3 ** np.arange(9)), "EAGLE, 8 iterations": list(0.1 * 10.0 ** -(2.0 ** np.arange(9) / 40))},
        floor=1e-7),
}


def _figure_modules():
    """plotting and every chapter module (eaglebook.chapters.*): where the book's figures are drawn."""
    import importlib
    import pkgutil
    from eaglebook import chapters
    return [plotting] + [importlib.import_module(f"eaglebook.chapters.{m.name}") for m in pkgutil.iter_modules(chapters.__path__)]


def test_every_plotting_function_has_a_case():
    public = {n for mod in _figure_modules() for n in dir(mod) if n.startswith("plot_")}
    assert public == set(CASES), f"no audit case for {sorted(public - set(CASES))}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_figure_meets_the_standard(name):
    fig = CASES[name]()
    assert fig is not None, f"{name} does not return its figure"
    try:
        assert plotting.audit(fig) == []
    finally:
        plt.close(fig)


# ------------------------------------------------------------------------------ the audit catches each kind
def _fig(**kw):
    return plotting.subplots(**kw)


def _problems(fig):
    try:
        return plotting.audit(fig)
    finally:
        plt.close(fig)


def test_audit_catches_a_legend_over_data():
    fig, ax = _fig()
    x = np.linspace(0, 1, 50)
    ax.plot(x, np.full_like(x, 0.5), label="flat")
    ax.plot(x, x, label="rising")
    ax.legend(loc="center")
    assert any("legend covers" in p for p in _problems(fig))


def test_audit_catches_a_figure_legend_over_another_panel():
    fig, (a, b) = _fig(ncols=2)
    a.plot([0, 1], [0, 1], label="a")
    b.plot(np.linspace(0, 1, 20), np.full(20, 0.5), label="b")
    fig.legend(loc="center right", bbox_to_anchor=(0.95, 0.5))
    assert any("legend covers" in p for p in _problems(fig))


def test_audit_catches_a_linear_axis_over_decades():
    fig, ax = _fig()
    ax.plot(np.arange(1, 21), decay(20, 0.5))
    assert any("linear y axis" in p for p in _problems(fig))


def test_audit_leaves_an_evenly_spaced_axis_linear():
    fig, ax = _fig()
    ax.semilogy(np.arange(1, 5001), decay(5000, 0.999))      # steps 1…5000: three decades, evenly spread
    assert _problems(fig) == []


def test_audit_catches_a_heatmap_without_colourbar():
    fig, ax = _fig()
    plotting.heatmap(ax, rng.standard_normal((5, 5)), colorbar=False)
    assert any("no colour bar" in p for p in _problems(fig))
    fig, ax = _fig()
    plotting.heatmap(ax, rng.standard_normal((5, 5)), aspect="auto")
    assert _problems(fig) == []


def test_audit_catches_two_series_alike():
    fig, ax = _fig()
    ax.plot([0, 1], [0, 1], color="C0", label="one")
    ax.plot([0, 1], [1, 0], color="C0", label="two")
    assert any("share colour" in p for p in _problems(fig))
    fig, ax = _fig()
    ax.plot([0, 1], [0, 1], color="C0", label="one")
    ax.plot([0, 1], [1, 0], color="C0", label="two")
    plotting.distinct_styles(ax)
    assert _problems(fig) == []


def test_audit_catches_overlapping_titles():
    fig, axes = _fig(ncols=4)
    for ax in axes:
        ax.plot([0, 1], [0, 1])
        ax.set_title("a panel title far too long for a quarter of the text width")
    assert any("overlap" in p for p in _problems(fig))


def test_audit_catches_a_half_width_figure_and_small_ticks():
    fig, ax = plt.subplots(figsize=plotting.HALF, layout="constrained")
    ax.plot([0, 1], [0, 1])
    assert any("narrower than the text column" in p for p in _problems(fig))
    fig, ax = _fig()
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=6)
    assert any("tick label renders at" in p for p in _problems(fig))
    fig, ax = plt.subplots(figsize=(12, 3), layout="constrained")   # scaled down to the column: text shrinks
    ax.plot([0, 1], [0, 1])
    assert any("renders at" in p for p in _problems(fig))


def test_needs_log_decides_from_the_data():
    assert plotting.needs_log(decay(30, 0.5))
    assert not plotting.needs_log(np.arange(1, 5001))
    assert not plotting.needs_log([1.0, 2.0, 50.0])
    assert not plotting.needs_log([-1.0, 1e-5, 1.0])
    assert plotting.needs_log([1.9, 2.0, 2.1, 1e4])


def test_legend_outside_rejects_a_bad_place():
    fig, ax = _fig()
    ax.plot([0, 1], [0, 1], label="a")
    with pytest.raises(ValueError, match="right' or 'below"):
        plotting.legend_outside(ax, where="inside")
    plt.close(fig)


def test_finish_audits_on_request(monkeypatch):
    monkeypatch.setenv("EAGLEBOOK_FIGURE_AUDIT", "raise")
    fig, ax = _fig()
    ax.plot([0, 1], [0, 1], color="C0", label="one")
    ax.legend(loc="center")
    with pytest.raises(ValueError, match="legend covers"):
        plotting.finish(fig)
    plt.close(fig)
    monkeypatch.setenv("EAGLEBOOK_FIGURE_AUDIT", "loud")
    with pytest.raises(ValueError, match="'raise' or 'warn'"):
        plotting.finish(CASES["plot_tail"]())
    plt.close("all")


def test_audit_reads_bars_and_scatters():
    fig, ax = _fig()
    ax.bar([0, 1, 2, 3], [1e-3, 1e-2, 1.0, 5.0])
    assert any("linear y axis" in p for p in _problems(fig))
    fig, ax = _fig()
    ax.scatter(np.arange(1, 21), decay(20, 0.5), label="points")
    ax.legend(loc="center left", bbox_to_anchor=(0.0, 0.05))
    problems = _problems(fig)
    assert any("linear y axis" in p for p in problems)


def test_audit_measures_the_width_the_notebook_shows():
    fig, ax = plotting.subplots(height=3.0)                # a square heat map leaves most of the width empty
    plotting.heatmap(ax, rng.standard_normal((6, 6)))
    assert any("narrower than the text column" in p for p in _problems(fig))


@pytest.mark.parametrize("fmt", ["png", "svg"])
@pytest.mark.parametrize("top", [1e60, 1e251, 1e290])
def test_per_layer_constants_of_hundreds_of_decades_leave_the_other_curves_readable(tmp_path, fmt, top):
    """Per-layer constants of a deep model reach 1e250 and more: drawn at the axis edge (open triangles), so the
    axis keeps the other models' detail, and matplotlib's log ticks do not overflow."""
    eta, gamma = np.array([1.4, 3.2, 73.0, 1e18, top / 10]), np.array([1.9, 4.3, 1e2, 1e55, top])
    fig = beyond.plot_layer_constants({"8 layers": (eta, gamma), "4 layers": ([1.1, 0.9, 1.2, 1.0], [1.7, 2.1, 2.4, 1.8])},
                                      eta=1.0, gamma=1.9)
    fig.savefig(tmp_path / f"c.{fmt}")
    b = fig.axes[1]
    lo, hi = b.get_ylim()
    assert b.get_yscale() == "log" and lo <= 1.7 and 1e2 <= hi <= 1e3      # three decades around γ ≈ 1.9, no more
    edge = [l for l in b.get_lines() if l.get_label() == "_beyond"]
    assert len(edge) == 1 and np.allclose(edge[0].get_ydata(), hi / 1.3) and len(edge[0].get_ydata()) == 2
    assert "beyond the axis (at its edge)" in [t.get_text() for t in b.get_legend().get_texts()]
    plt.close(fig)
    fig = beyond.plot_layer_errors({"model": [0.05, 1e3, top, 1e-3], "EAGLE": [0.05, 1e-2, 1e-4, 1e-6]})
    fig.savefig(tmp_path / f"d.{fmt}")
    assert fig.axes[0].get_ylim()[1] < 1e3
    plt.close(fig)
    fig = beyond.plot_layer_errors({"model": [0.05, 1e-3, 1e-290, 0.0]})
    fig.savefig(tmp_path / f"e.{fmt}")
    assert fig.axes[0].get_ylim()[0] > 0
    plt.close(fig)


def test_scorecard_puts_an_outlier_on_the_edge_with_its_value():
    pts = [("a", 1e-3, 2e-3, "reproduced"), ("b", 10.0, 40.0, "partly"), ("fid", 6e-4, 4.1e14, "not reproduced")]
    fig = plotting.plot_scorecard(pts)
    try:
        ax = fig.axes[0]
        lo, hi = ax.get_ylim()
        assert hi < 1e3 and lo > 1e-5, "the outlier must not stretch the axes"
        notes = [t.get_text() for t in ax.texts]
        assert notes == ["fid: ours 4.1e+14"]
        drawn = np.concatenate([c.get_offsets() for c in ax.collections if len(c.get_offsets())])
        assert np.isclose(drawn[:, 1].max(), hi), "the outlier sits on the top edge"
    finally:
        plt.close(fig)

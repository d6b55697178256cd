"""The benchmark harness of chapter 7: the Matrix Market loader (tested on files written here), the Table 2
set-up, and `python -m eaglebook.bench real --matrix FILE.mtx --json out.json`."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse

from eaglebook.bench import harness, realdata


def _low_rank_sparse(m=50, k=30, rank=20, seed=0):
    rng = np.random.default_rng(seed)
    X = (rng.standard_normal((m, rank)) @ rng.standard_normal((rank, k)))
    X[rng.random(m) < 0.3] = 0.0     # some empty rows: sparse storage, and rank(X) = rank generically
    return scipy.sparse.coo_matrix(X)


def test_matrix_market_round_trip(tmp_path):
    M = _low_rank_sparse()
    p = tmp_path / "m.mtx"
    scipy.io.mmwrite(str(p), M)
    L = realdata.load_matrix_market(p)
    assert scipy.sparse.issparse(L) and L.shape == M.shape and L.dtype == np.float64
    np.testing.assert_allclose(L.toarray(), M.toarray())
    D = tmp_path / "dense.mtx"
    scipy.io.mmwrite(str(D), M.toarray())            # array format: a dense result
    assert isinstance(realdata.load_matrix_market(D), np.ndarray)


@pytest.mark.parametrize("content, message", [
    ("this is not a matrix\n1 2 3\n", "not a Matrix Market file"),
    ("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n", "malformed"),          # too few entries
    ("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 abc\n", "malformed"),          # non-numeric value
    ("%%MatrixMarket matrix coordinate real general\n3 three 1\n1 1 1.0\n", "malformed"),      # bad size line
    ("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1\n", "no numeric values"),
    ("%%MatrixMarket matrix coordinate complex general\n3 3 1\n1 1 1.0 2.0\n", "complex"),
    ("%%MatrixMarket matrix array real general\n2 2\n1\nnan\n3\n4\n", "non-finite"),
])
def test_matrix_market_bad_files_are_refused_clearly(tmp_path, content, message):
    p = tmp_path / "bad.mtx"
    p.write_text(content)
    with pytest.raises(ValueError, match=message) as e:
        realdata.load_matrix_market(p)
    assert "bad.mtx" in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        realdata.load_matrix_market(tmp_path / "nope.mtx")


def test_table2_problem_finds_a_full_rank_block():
    M = _low_rank_sparse(60, 40, rank=15)
    P = realdata.table2_problem(M)
    assert P["rank"] == 15 and P["A"].shape == (15, 15) and P["B"].shape == (1, 15)
    assert np.linalg.matrix_rank(P["A"]) == 15
    np.testing.assert_allclose(P["w"] @ P["A"], P["B"], atol=1e-10)
    assert len(set(P["rows"])) == 15 and len(set(P["cols"])) == 15


def test_illc1850_ships_as_matrix_market_with_its_source():
    """HB/illc1850 is the package's own Matrix Market file (not SciPy's private test data)."""
    p = realdata.illc1850_path()
    assert p.suffix == ".mtx" and p.is_file() and "site-packages/scipy" not in str(p)
    head = p.read_text().splitlines()[:6]
    assert head[0].startswith("%%MatrixMarket") and any("SuiteSparse" in h for h in head)
    M = realdata.illc1850()
    assert M.shape == (1850, 712) and M.nnz == 8636
    src = (Path(realdata.__file__)).read_text()
    assert "propack_test_data" not in src and "pickle" not in src


def test_ablation_distributions_have_full_rank_A():
    rng = np.random.default_rng(0)
    n = 60
    for kind in harness.DISTRIBUTIONS:
        A, B, C, D = harness.ablation_problem(kind, n, rng)
        assert A.shape == (n, n) and B.shape == (2, n) and C.shape == (n, 2)
        # sparse Rademacher (p = 0.1) factors may leave a few directions out at this small n
        assert np.linalg.matrix_rank(A) >= (0.9 * n if kind == "sparse Rademacher" else n), kind


def test_cli_real_on_a_user_matrix(tmp_path):
    p = tmp_path / "user.mtx"
    scipy.io.mmwrite(str(p), _low_rank_sparse(40, 30, rank=12))
    out = tmp_path / "out.json"
    r = subprocess.run([sys.executable, "-m", "eaglebook.bench", "real", "--matrix", str(p), "--json", str(out),
                        "--profile", "ci", "--quiet"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["part"] == "real" and res["environment"]["numpy"] == np.__version__
    assert res["environment"]["threads"] == 1 and res["environment"]["blas"]
    R = res["results"]
    assert R["matrix"] == "user.mtx" and R["rank"] == 12
    for name in ("EAGLE", "SVD", "CG", "LSMR"):
        run = R["runs"][name]
        assert run["reached"], name
        assert run["final"] <= 1e-3 and run["ratio"]["elapsed"] > 0       # timings as ratios to lstsq
    pairs = R["vs_svd"]                                                    # EAGLE vs SVD in interleaved pairs
    assert len(pairs["eagle_times"]) == len(pairs["svd_times"]) >= 3 and min(pairs["eagle_times"] + pairs["svd_times"]) > 0
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 abc\n")
    r = subprocess.run([sys.executable, "-m", "eaglebook.bench", "real", "--matrix", str(bad), "--quiet"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "malformed" in r.stderr and "bad.mtx" in r.stderr


def test_every_part_writes_json_at_tiny_sizes():
    """All parts of the harness run end to end and their results serialise to JSON (tiny sizes)."""
    from eaglebook import config
    from eaglebook.bench.__main__ import _jsonable
    S = config.BenchSizes(central_n=16, kappas=(1e2,), size_ns=(16,), headline_n=16, time_limit=0.2, max_iter=2000,
                          repeats=1, overhead_iters=20, sketch_n=16, sketch_timing_n=16, sketch_timing_iters=3,
                          real_max_cols=12, ablation_n=16, ablation_instances=1, grid_points=2, grid_ns=(12, 16),
                          grid_tall_ns=(4,), grid_kappas=(1e2,), grid_kappa_n=12, grid_precision_n=12, grid_repeats=2,
                          grid_time_limit=2.0)
    for part in harness.PARTS:
        out = harness.run(harness.BenchConfig(part=part, sizes=S), progress=False)
        text = json.dumps(_jsonable(out))
        back = json.loads(text)
        assert back["part"] == part and back["environment"]["threads"] == 1 and back["results"]
    cen = harness.run(harness.BenchConfig(part="centralized", sizes=S), progress=False)["results"]
    hl = cen["headline"]
    assert hl["runs"]["EAGLE"]["ratio"]["elapsed"] > 0 and "total" in hl["overhead"]
    # the headline's untraced block: the iterations the traced runs needed, interleaved, with the machine's load
    bare = hl["bare"]
    assert bare["iterations"]["CG"] == hl["runs"]["CG"]["to"]["1e-06"]["iterations"]
    assert set(bare["seconds"]) >= {"EAGLE", "lstsq (numpy)", "SVD"} and len(bare["seconds"]["EAGLE"]) == 3
    assert bare["machine"]["before"]["load"] is not None and "usable_cores" in bare["machine"]["after"]
    # every timed block of the chapter's timing rows records its machine
    assert cen["sweep"][0]["vs_svd"]["machine"]["before"]["load"] is not None and cen["sizes"][0]["machine"]


# ---------------------------------------------------------------------------------------------- the solver-choice baselines
from eaglebook import tasks  # noqa: E402
from eaglebook.solver import baselines as bl  # noqa: E402

GRID_METHODS = [k for k, m in bl.REGISTRY.items() if "sweep" not in m.parts]


def _shaped(shape, kappa=1e3, seed=0, rank=None):
    n, d = {"square": (30, 30), "tall": (12, 96), "wide": (96, 12)}[shape]
    rng = np.random.default_rng(seed)
    A, B, C, _ = tasks.make_problem(n, d, rank=rank or min(n, d), kappa=kappa, rng=rng)
    return A, B, C, tasks.nystrom(A, B, C)


def test_the_grid_registry_has_the_issue_methods():
    assert {"gelsd", "gelsy", "Cholesky", "Newton–Schulz", "Sketch+LSQR", "EAGLE (polar-express)"} <= set(GRID_METHODS)
    # the κ sweep of chapter 7 keeps its methods (the grid's are extra)
    assert not set(GRID_METHODS) & set(harness.ITERATIVE + harness.DIRECT)


@pytest.mark.parametrize("shape", ["square", "tall", "wide"])
@pytest.mark.parametrize("name", GRID_METHODS)
def test_grid_methods_are_accurate_on_small_problems(name, shape):
    m = bl.REGISTRY[name]
    A, B, C, ref = _shaped(shape)
    if shape not in m.shapes:
        with pytest.raises(ValueError, match="tall problem"):
            m.run(A, B, C, reference=ref, target=1e-10, max_iter=2000)
        return
    tr = m.run(A, B, C, reference=ref, target=1e-10, max_iter=2000, time_limit=20)
    assert tr.status in ("direct", "target"), (name, shape, tr.status)
    err = np.linalg.norm(tr.D - ref) / np.linalg.norm(ref)
    # κ = 1e3: the direct methods reach rounding (Cholesky squares κ: κ²·u ≈ 1e-10)
    assert err <= (1e-9 if name == "Cholesky" else 1e-10), (name, shape, err)
    assert tr.elapsed > 0 and tr.iterations >= 1


@pytest.mark.parametrize("name", [k for k in GRID_METHODS if bl.REGISTRY[k].dtyped])
def test_grid_methods_compute_float32(name):
    A, B, C, ref = _shaped("square", kappa=1e2)
    tr = bl.REGISTRY[name].run(A, B, C, reference=ref, target=1e-4, max_iter=500, dtype="float32")
    assert tr.status in ("direct", "target") and tr.final <= 1e-4
    assert tr.info["dtype"] == "float32"


def test_grid_methods_refuse_bad_input_clearly():
    A, B, C, ref = _shaped("square")
    with pytest.raises(ValueError, match="dtype"):
        bl.cholesky(A, B, C, dtype="float16")
    with pytest.raises(ValueError, match="float64 only"):
        bl.REGISTRY["Sketch+LSQR"].run(*_shaped("tall")[:3], dtype="float32")
    with pytest.raises(ValueError, match="gelsd"):
        bl.lstsq(A, B, C, backend="numpy", driver="gelsy")
    with pytest.raises(ValueError, match="shape|rows|columns"):
        bl.newton_schulz(A, B[:, :-1], C)
    with pytest.raises(ValueError, match="finite"):
        bl.cholesky(np.full_like(A, np.nan), B, C)
    with pytest.raises(ValueError, match="max_iter"):
        bl.newton_schulz(A, B, C, max_iter=0)
    with pytest.raises(ValueError, match="oversample"):
        bl.sketch_lsqr(*_shaped("tall")[:3], oversample=0.5)


def test_cholesky_reports_a_singular_gram_matrix():
    A, B, C, ref = _shaped("square", rank=10)
    tr = bl.cholesky(A, B, C, reference=ref)
    # a rank-10 A of size 30: the Gram matrix is singular, Cholesky fails or is inaccurate (never silently right)
    assert tr.status == "breakdown" and "positive definite" in tr.info["error"] or tr.final > 1e-6


def test_newton_schulz_converges_quadratically_at_the_end():
    A, B, C, ref = _shaped("square", kappa=1e2)
    tr = bl.newton_schulz(A, B, C, reference=ref, max_iter=40, tol=None)
    v = tr.values
    k = int(np.flatnonzero(v < 1e-3)[0])
    assert v[k + 1] <= 10 * v[k] ** 2 / v[k - 1] or v[k + 1] < 1e-12     # each step squares the error


def test_grid_compare_and_describe_follow_the_paired_spread():
    from eaglebook.bench import grid
    runs = {"EAGLE": dict(median=2.0, seconds=[2.0, 2.1, 1.9]), "gelsy": dict(median=1.0, seconds=[1.0, 1.05, 0.95]),
            "gelsd": dict(median=1.02, seconds=[1.1, 1.0, 0.9]), "Cholesky": dict(median=None, seconds=None)}
    c = grid.compare(runs)
    assert c["fastest"] == "gelsy" and c["runner_up"] == "gelsd" and c["order"] == ["gelsy", "gelsd", "EAGLE"]
    assert not c["margin"]["decided"]                       # gelsd ÷ gelsy straddles 1
    assert c["vs_eagle"]["gelsy"]["decided"] and c["vs_eagle"]["gelsy"]["median"] == pytest.approx(0.5, rel=0.1)
    row = dict(fastest="gelsy", runner_up="gelsd", margin=c["margin"])
    assert grid.describe(row) == "gelsy ≈ gelsd (within noise)"
    runs["gelsd"] = dict(median=3.0, seconds=[3.0, 3.1, 2.9])
    c = grid.compare(runs)
    assert c["runner_up"] == "EAGLE" and c["margin"]["decided"]
    assert grid.describe(dict(fastest="gelsy", runner_up="EAGLE", margin=c["margin"])).startswith("gelsy, by 2")
    one = grid.unpaired(dict(seconds=[1.0]), dict(seconds=[2.0]), "a", "b")
    assert not one["decided"] and "one repeat" in one["verdict"]
    assert grid.slope([10, 20, 40], [1.0, 8.0, 64.0]) == pytest.approx(3.0)
    assert grid.slope([10], [1.0]) is None
    # the local exponent between the two largest sizes, in any order; None when either is untimed
    assert grid.last_doubling([40, 10, 20], [64.0, 1.0, 4.0]) == pytest.approx(4.0)
    assert grid.last_doubling([10, 20, 40], [1.0, 8.0, None]) is None
    assert grid.last_doubling([10], [1.0]) is None


def test_grid_iterations_of_the_accelerated_variant_at_tiny_size():
    from eaglebook.bench import grid
    A, B, C, D = tasks.make_problem(24, 24, kappa=1e8, rng=np.random.default_rng(1))
    r = grid.measure(A, B, C, D, ("EAGLE", "EAGLE (polar-express)", "gelsy"), target=1e-6, repeats=2)
    e, p = r["runs"]["EAGLE"], r["runs"]["EAGLE (polar-express)"]
    assert e["to"]["1e-06"] >= 2 * p["to"]["1e-06"] and e["to"]["1e-12"] >= 2 * p["to"]["1e-12"]
    assert all(len(v["seconds"]) == 2 for v in r["runs"].values())
    assert r["runs"]["gelsy"]["iterations"] == 1 and r["fastest"] in r["runs"]


def test_grid_floors_separate_the_precisions_and_keep_their_records_consistent():
    from eaglebook import config
    from eaglebook.bench import grid
    S = config.BenchSizes(grid_precision_n=16, grid_kappas=(1e2, 1e8), grid_time_limit=5.0)
    fl = grid.floors(S, np.random.default_rng(3), methods=("EAGLE", "Newton–Schulz", "SVD", "gelsy", "Cholesky"))
    assert [r["kappa"] for r in fl["rows"]] == [1e2, 1e8] and fl["n"] == 16
    for r in fl["rows"]:
        assert "SVD" in r["runs"]["float64"] and "SVD" not in r["runs"]["float32"]      # float64 only
        assert r["reference"]["float32"]["kappa_u"] == pytest.approx(r["kappa"] * 2.0 ** -24)
        for dt, runs in r["runs"].items():
            for m, v in runs.items():
                assert v["iterations_run"] <= grid.FLOOR_MAX_ITER
                if v["floor"] is not None:
                    assert 1 <= v["at"] <= max(1, v["iterations_run"])
                    if v["final"] is not None:
                        assert v["floor"] <= v["final"]
        # a backward-stable direct solve: float64 near its unit roundoff, float32 far above it
        assert r["runs"]["float64"]["gelsy"]["final"] < 1e-12
        assert r["runs"]["float32"]["gelsy"]["final"] > 1e-10
        assert r["runs"]["float64"]["EAGLE"]["final"] < 1e-10
    # the normal equations square κ: Cholesky breaks down in float32 at κ = 1e8 (κ² u ≫ 1)
    assert fl["rows"][1]["runs"]["float32"]["Cholesky"]["status"] == "breakdown"


def test_grid_batched_job_times_every_method_on_a_whole_batch_and_enters_the_decision_table():
    import dataclasses
    from eaglebook.bench import grid as G
    from eaglebook import config
    S = dataclasses.replace(config.get("ci").bench, grid_batches=((30, 6),), grid_repeats=2)
    b = G.batched(S, np.random.default_rng(0))
    (row,) = b["rows"]
    assert row["count"] == 30 and row["n"] == 6 and set(row["runs"]) == set(G.BATCHED)
    for rec in row["runs"].values():     # every method solves the batch; the ones that reach the target are timed
        assert rec["final"] < 1e-10 and rec["reached"] and len(rec["seconds"]) == 2
    assert row["fastest"] in G.BATCHED and sorted(row["order"]) == sorted(G.BATCHED)
    empty = dict(rows=[])
    dec = G.decision_rows(dict(square=empty, tall=empty, wide=empty, kappa=empty, threads=dict(cores=1), batched=b,
                               precision={dt: dict(d=6, n=6, kappa=1e2, order=[], fastest=None) for dt in ("float64", "float32")}))
    (d,) = [r for r in dec if r["job"] == "batched"]
    assert d["setting"] == "batch of small problems" and d["size"] == "30 × 6×6" and d["methods"] == 3
    assert d["eagle_rank"] == row["order"].index("EAGLE") + 1


@pytest.mark.parametrize("field,value,words", [("grid_target", 2.0, "numbers > 0 and < 1"),
                                               ("grid_target", 0.0, "numbers > 0 and < 1"),
                                               ("sketch_kappa", 0.5, ">= 1"), ("kappas", (1e2, 0.1), ">= 1"),
                                               ("grid_kappas", (float("inf"),), ">= 1"), ("time_limit", 0.0, "> 0")])
def test_bench_config_refuses_sizes_no_part_can_run(field, value, words):
    """A relative error target of 2 and a κ below 1 were accepted (issue 34); the profiles' sizes pass."""
    import dataclasses
    from eaglebook import config
    for prof in config.PROFILES:
        harness.BenchConfig(part="grid", sizes=config.get(prof).bench)
    with pytest.raises(ValueError, match=rf"sizes\.{field}=.*{re.escape(words)}"):
        harness.BenchConfig(part="grid", sizes=dataclasses.replace(config.BenchSizes(), **{field: value}))


def test_table2_problem_refuses_a_zero_matrix_and_one_without_a_row_for_B():
    """An all-zero matrix was an IndexError inside the benchmark (issue 34)."""
    with pytest.raises(ValueError, match=r"^the 4×3 matrix is zero \(numerical rank 0\)"):
        realdata.table2_problem(scipy.sparse.csr_array((4, 3)))
    with pytest.raises(ValueError, match=r"numerical rank 3 = its number of rows: no row is left for B"):
        realdata.table2_problem(np.eye(3))
    assert realdata.table2_problem(np.eye(4)[:, :3])["rank"] == 3      # one row to spare is enough

import numpy as np
import pytest
import torch

from eaglebook import tasks
from eaglebook.config import TaskConfig

TASK = TaskConfig()


def test_sample_shapes_rank_and_determinism():
    g = torch.Generator().manual_seed(0)
    X, Xo = tasks.sample_X(TASK, 64, generator=g, dtype=torch.float64)
    assert X.shape == (64, 20, 20) and Xo is X
    sv = torch.linalg.svdvals(X)
    assert ((sv > 1e-10 * sv[:, :1]).sum(-1) == TASK.s).all()
    X2, _ = tasks.sample_X(TASK, 64, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.equal(X, X2)


def test_noise_is_added_to_observed_only():
    task = TaskConfig(noise_var=1e-2)
    X, Xo = tasks.sample_X(task, 512, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    var = (Xo - X).var().item()
    assert 0.008 < var < 0.012


def test_nystrom_exact_on_noiseless_and_matches_numpy():
    X, _ = tasks.sample_X(TASK, 32, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    A, B, C, D = tasks.split(X, TASK)
    Dh = tasks.nystrom(A, B, C)
    assert torch.allclose(Dh, D, rtol=0, atol=1e-10 * D.abs().max().item())
    Dn = tasks.nystrom(A[0].numpy(), B[0].numpy(), C[0].numpy())
    assert isinstance(Dn, np.ndarray) and np.allclose(Dn, D[0].numpy(), atol=1e-10)


def test_prompt_zeroes_D_only():
    X, _ = tasks.sample_X(TASK, 4, generator=torch.Generator().manual_seed(3))
    Z = tasks.prompt(X, TASK)
    assert (tasks.split(Z, TASK).D == 0).all()
    assert torch.equal(tasks.split(Z, TASK).A, tasks.split(X, TASK).A)
    assert not (tasks.split(X, TASK).D == 0).all()  # the input is not modified


def test_assemble_inverts_split():
    X, _ = tasks.sample_X(TASK, 2, generator=torch.Generator().manual_seed(4))
    assert torch.equal(tasks.assemble(*tasks.split(X, TASK)), X)


def test_mask_reads_first_d_tokens_only():
    M = tasks.token_mask(TASK)
    assert M.shape == (20, 20) and M[:, :18].eq(1).all() and M[:, 18:].eq(0).all()


@pytest.mark.parametrize("kappa", [1.0, 10.0, 1e3, 1e6])
@pytest.mark.parametrize("spectrum", ["log-uniform", "log-spaced"])
def test_make_problem_hits_kappa_and_rank(kappa, spectrum):
    A, B, C, D = tasks.make_problem(30, 20, 3, 2, rank=12, kappa=kappa, rng=np.random.default_rng(0), spectrum=spectrum)
    assert A.shape == (20, 30) and B.shape == (2, 30) and C.shape == (20, 3) and D.shape == (2, 3)
    s = np.linalg.svd(A, compute_uv=False)
    s = s[s > 1e-13 * s[0]]
    assert len(s) == 12
    assert abs(s[0] / s[-1] / kappa - 1) < 1e-7
    assert np.allclose(tasks.nystrom(A, B, C), D, atol=1e-8 * np.abs(D).max())


def test_feature_owner_contiguous_split():
    own = tasks.feature_owner(TASK, 3)
    assert own.tolist() == [0] * 6 + [1] * 6 + [2] * 6
    assert len(tasks.feature_owner(TASK, 4)) == 18


def test_scalar_regression_is_ols():
    rng = np.random.default_rng(0)
    X, y, xq = rng.standard_normal((4, 10)), rng.standard_normal(10), rng.standard_normal(4)
    b = tasks.scalar_regression(X, y, xq)
    w = np.linalg.lstsq(X.T, y, rcond=None)[0]
    assert abs(tasks.nystrom(b.A, b.B, b.C).item() - w @ xq) < 1e-12


# ---- bad input: each error names the argument ---------------------------------------------------

@pytest.mark.parametrize("kwargs, name", [
    (dict(kappa=0.5), "kappa"), (dict(kappa=float("nan")), "kappa"), (dict(kappa=float("inf")), "kappa"),
    (dict(rank=0), "rank"), (dict(rank=25), "rank"), (dict(rank=2.5), "rank"),
    (dict(noise_std=-1.0), "noise_std"), (dict(spectrum="flat"), "spectrum"),
])
def test_make_problem_rejects_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        tasks.make_problem(30, 20, rng=np.random.default_rng(0), **kwargs)


@pytest.mark.parametrize("n, name", [(0, "n"), (-3, "n"), (True, "n")])
def test_make_problem_rejects_bad_sizes(n, name):
    with pytest.raises(ValueError, match=name):
        tasks.make_problem(n, 20, rng=np.random.default_rng(0))


def test_nystrom_rejects_nonfinite_and_shapes():
    A, B, C = np.ones((4, 5)), np.ones((2, 5)), np.ones((4, 3))
    bad = A.copy(); bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="argument A"):
        tasks.nystrom(bad, B, C)
    with pytest.raises(ValueError, match="argument C"):
        tasks.nystrom(A, B, np.full((4, 3), np.inf))
    with pytest.raises(ValueError, match="argument B"):
        tasks.nystrom(A, np.ones((2, 4)), C)
    with pytest.raises(ValueError, match="argument C"):
        tasks.nystrom(A, B, np.ones((3, 3)))
    with pytest.raises(ValueError, match="argument A"):
        tasks.nystrom(np.ones(4), B, C)


def test_split_and_assemble_reject_wrong_shapes():
    with pytest.raises(ValueError, match="argument Z"):
        tasks.split(torch.zeros(2, 19, 20), TASK)
    with pytest.raises(ValueError, match="argument D"):
        tasks.assemble(np.ones((4, 5)), np.ones((2, 5)), np.ones((4, 3)), np.ones((2, 2)))


def test_sample_rejects_bad_batch():
    with pytest.raises(ValueError, match="batch"):
        tasks.sample_X(TASK, 0, generator=torch.Generator())


@pytest.mark.parametrize("kwargs, name", [(dict(s=30), "s"), (dict(alpha=0.0), "alpha"), (dict(n=0), "n"),
                                          (dict(noise_var=-1.0), "noise_var"), (dict(d_prime=1.5), "d_prime")])
def test_task_config_rejects_impossible(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TaskConfig(**kwargs)


def test_scalar_regression_rejects_mismatch():
    with pytest.raises(ValueError, match="argument y"):
        tasks.scalar_regression(np.ones((3, 4)), np.ones(5), np.ones(3))
    with pytest.raises(ValueError, match="argument x_query"):
        tasks.scalar_regression(np.ones((3, 4)), np.ones(4), np.ones(2))
    with pytest.raises(ValueError, match="argument X"):
        tasks.scalar_regression(np.full((3, 4), np.nan), np.ones(4), np.ones(3))


# --------------------------------------------------------------------------- validation of odd inputs

def test_nystrom_integer_complex_and_list_inputs():
    import torch
    from eaglebook.tasks import nystrom
    A = torch.tensor([[3, 1], [1, 2]], dtype=torch.uint8)
    B, C = torch.ones(1, 2, dtype=torch.uint8), torch.ones(2, 1, dtype=torch.uint8)
    D = nystrom(A, B, C)
    assert D.dtype == torch.float64 and abs(float(D) - 0.6) < 1e-14    # float64 as for NumPy; not truncated to 0
    with pytest.raises(ValueError, match=r"argument A\b"):
        nystrom(np.eye(2) * (1 + 1j), np.ones((1, 2)), np.ones((2, 1)))
    assert nystrom([[1.0, 0], [0, 2]], [[1.0, 1]], [[1.0], [1]])[0, 0] == 1.5
    big = nystrom(np.eye(3) * 1e200, np.ones((1, 3)) * 1e200, np.ones((3, 1)) * 1e-100)   # no overflow inside
    assert np.isclose(big[0, 0], 3e-100)


def test_make_problem_argument_errors():
    from eaglebook.tasks import make_problem
    assert make_problem(4, 3, rng=0).A.shape == (3, 4)          # a seed is accepted
    for kw, name in [(dict(kappa="10"), "kappa"), (dict(dtype=np.int8), "dtype"), (dict(rng=-1), "rng"),
                     (dict(noise_std="0"), "noise_std")]:
        with pytest.raises(ValueError, match=r"argument " + name + r"\b"):
            make_problem(4, 3, **({"rng": 0} | kw))


def test_papermill_rejects_an_unknown_parameter(tmp_path):
    """A real papermill run on a chapter-like text notebook: a misspelt -p name fails before running."""
    import subprocess
    import sys
    from pathlib import Path
    md = tmp_path / "book" / "01_chapter.md"       # a chapter of a book: listed in the book's _toc.yml
    md.parent.mkdir()
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/01_chapter\n")
    md.write_text("---\njupytext:\n  formats: md:myst\n  text_representation:\n    extension: .md\n"
                  "    format_name: myst\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n\n```{code-cell} ipython3\n:tags: [parameters]\n"
                  "profile = None\nseed = 0\n```\n\n```{code-cell} ipython3\nprint(seed)\n```\n")
    pm = [str(Path(sys.executable).with_name("papermill")), str(md), str(tmp_path / "out.ipynb"), "--prepare-only"]
    bad = subprocess.run(pm + ["-p", "sed", "3"], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0
    assert "unknown parameter 'sed'" in bad.stderr and "profile, seed" in bad.stderr
    ok = subprocess.run(pm + ["-p", "seed", "3"], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert "seed = 3" in (tmp_path / "out.ipynb").read_text()

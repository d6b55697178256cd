"""A regime is one file: the toy regime (eaglebook/regimes/toy.py), which only the ci profile registers, gets
its own page of chapter 4 in the ci build, and chapters 4 and 5 run with it, with no line anywhere else that
names it.  Its ledger stays off the scorecard; the paper book never shows it."""

from __future__ import annotations

import ast
import json
import re
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from eaglebook import config, extraction, regimes, report, training, variants

REPO = Path(__file__).resolve().parents[1]

def _named(path: Path) -> list[str]:
    """The lines of a module's code (docstrings and comments aside) whose strings name the toy regime."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [f"{path.relative_to(REPO)}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs and re.search(r"\btoy\b", n.value)]


def test_only_its_own_file_and_the_ci_profile_name_it():
    """Outside its file, the package's code names the toy regime once (the ci profile's ``extra_regimes``); no
    chapter does, nor the table of contents (it lists chapter 4's pages by a glob over the generated ones)."""
    hits = [h for p in sorted((REPO / "src").rglob("*.py")) if p.name != "toy.py" for h in _named(p)]
    assert len(hits) == 1 and hits[0].startswith("src/eaglebook/config.py:"), hits
    assert not [p.name for p in [*(REPO / "book").glob("*.md"), REPO / "_toc.yml"] if re.search(r"\btoy\b", p.read_text())]


def test_the_ci_profile_registers_it_and_the_paper_book_never_shows_it():
    ci, paper = config.get("ci"), config.get("paper")
    assert "toy" in ci.regimes and "toy" not in paper.regimes and paper.regimes == regimes.PAPER
    assert not regimes.in_paper("toy") and regimes.get("toy").label == "toy (two heads)"
    assert variants.values("04_extract", "paper") == regimes.PAPER[1:]      # chapter 4's extra pages, by profile
    assert variants.values("04_extract", "ci") == regimes.PAPER[1:] + ("toy",)
    assert ci.training("toy", seed=3).model == replace(ci.training("unconstrained", seed=3).model, regime="toy")
    assert regimes.get("toy").uses == frozenset() and not regimes.get("toy").can("prunable")


@pytest.mark.slow
def test_its_page_builds_and_chapters_4_and_5_pass(tmp_path, monkeypatch, chapter_times):
    """Chapter 4's toy page, as the ci build renders it (eaglebook.variants), then chapter 5 with the toy regime
    registered; the ledger of the toy page is written apart and the scorecard ignores it."""
    monkeypatch.setenv("EAGLEBOOK_PROFILE", "ci")
    monkeypatch.setenv("EAGLEBOOK_FIGURE_AUDIT", "raise")
    monkeypatch.setenv("TQDM_DISABLE", "1")
    claims = tmp_path / "claims"
    monkeypatch.setenv(report.CLAIMS_ENV, str(claims))
    page = tmp_path / "04_extract-toy.ipynb"
    t0 = time.perf_counter()
    variants.render(REPO, "04_extract", "toy", "ci", page)
    chapter_times["04_extract[toy] (page)"] = time.perf_counter() - t0
    nb = json.loads(page.read_text())
    text = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert re.search(r"^# Reading the algorithm out of the weights: the toy regime$", text, re.M)
    glued = {o["metadata"]["scrapbook"]["name"]: o["data"] for c in nb["cells"] for o in c.get("outputs", [])
             if "scrapbook" in o.get("metadata", {})}
    for key in ("C4_toy_eta", "C4_toy_gamma", "C4_toy_offdiag_qk", "C4_special_text", "C4_findings_paper"):
        assert key in glued, key
    assert "C4_toy_quantized_ratio" not in glued                              # the paper does not quantise it
    led = json.loads((claims / "ci" / "04_extract--toy@regimetoy.json").read_text())
    assert led["settings"] == {"regime": "toy"} and {c["role"] for c in led["comparisons"].values()} == {"evidence"}
    ignored = []
    assert not report.load_ledgers("ci", ["04_extract"], ignored=ignored) and ignored == [
        ("04_extract--toy@regimetoy.json", "run with non-default settings {'regime': 'toy'}")]
    # chapter 5 with the toy regime registered; and its science, the extracted iteration, on the toy model
    import papermill as pm
    t0 = time.perf_counter()
    pm.execute_notebook(str(REPO / "book" / "05_eagle.md"), str(tmp_path / "05_eagle.ipynb"), parameters={"profile": "ci"},
                        cwd=str(REPO / "book"), progress_bar=False, kernel_name="python3")
    chapter_times["05_eagle (toy registered)"] = time.perf_counter() - t0
    cfg = config.get("ci").training("toy", seed=0)
    model = training.trained(cfg, progress=False).model(dtype=torch.float64)
    fid = extraction.fidelity(model, training.test_set(cfg)[1][:256], cfg.task)
    assert model.heads == 2 and fid.mean[0] == 0.0 and np.all(np.isfinite(fid.mean))

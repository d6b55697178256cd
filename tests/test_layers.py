"""The package's layering (pyproject.toml, [tool.importlinter]) is enforced by import-linter."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(pkg_parent: Path) -> subprocess.CompletedProcess:
    env = {"PATH": str(LINT.parent), "PYTHONPATH": str(pkg_parent), "LANG": "C.UTF-8"}
    return subprocess.run([str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                          capture_output=True, text=True, env=env, cwd=pkg_parent)


def test_import_contracts_hold():
    r = _lint(ROOT / "src")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


def test_a_planted_violation_is_reported(tmp_path):
    """The contracts can fail: the solver importing the task module breaks one, tasks importing
    training breaks the layers."""
    shutil.copytree(ROOT / "src" / "eaglebook", tmp_path / "eaglebook",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "eaglebook" / "solver" / "update.py").open("a").write("\nfrom .. import tasks  # noqa\n")
    (tmp_path / "eaglebook" / "tasks.py").open("a").write("\nfrom . import training  # noqa\n")
    r = _lint(tmp_path)
    assert r.returncode != 0
    assert "2 broken" in r.stdout, r.stdout

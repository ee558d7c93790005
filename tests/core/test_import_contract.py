"""The architecture rule, checked by import-linter (as napari does): `training_core` never imports the
window (`app`) nor Qt and the plotting libraries, not even inside a function. The contract is
`.importlinter` at the repository root; `lint-imports` runs in a subprocess, as a developer runs it.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO

LINT_IMPORTS = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
                "--no-cache", "--no-logo"]  # what the `lint-imports` console script runs


def _lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(LINT_IMPORTS, cwd=root, capture_output=True, text=True, timeout=120)


def test_the_core_keeps_its_import_contract():
    r = _lint(REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 kept, 0 broken" in r.stdout


@pytest.mark.parametrize("planted", ["from app.settings import Settings", "import pyqtgraph as pg",
                                     "from PySide6.QtCore import QTimer"])
def test_the_contract_catches_a_lazy_import_of_the_window_or_qt(tmp_path, planted):
    """The same contract on a copy of the project with one forbidden import hidden in a function."""
    for name in ("training_core", "app"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / ".importlinter", tmp_path)
    (tmp_path / "training_core" / "planted.py").write_text(f"def later():\n    {planted}\n")
    r = _lint(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "0 kept, 1 broken" in r.stdout and "training_core.planted" in r.stdout, r.stdout

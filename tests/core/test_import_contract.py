"""The house's rules, checked by import-linter (as napari does), in `.importlinter` at the repository root:
`training_core` never imports the window (`app`) nor Qt and the plotting libraries, not even inside a
function; its rooms import only downward (a `layers` contract, TYPE_CHECKING imports included); the base
types and the run readers never import TensorFlow; the quality metrics import no room but base; the window
never imports the loop, the observers or the engine. `lint-imports` runs in a subprocess, as a developer runs it.
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
    assert "5 kept, 0 broken" in r.stdout


def _planted_copy(tmp_path: Path, where: str, source: str) -> subprocess.CompletedProcess:
    for name in ("training_core", "app"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / ".importlinter", tmp_path)
    (tmp_path / where).write_text(source)
    return _lint(tmp_path)


@pytest.mark.parametrize("planted", ["from app.settings import Settings", "import pyqtgraph as pg",
                                     "from PySide6.QtCore import QTimer"])
def test_the_contract_catches_a_lazy_import_of_the_window_or_qt(tmp_path, planted):
    """The same contract on a copy of the project with one forbidden import hidden in a function."""
    r = _planted_copy(tmp_path, "training_core/planted.py", f"def later():\n    {planted}\n")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "4 kept, 1 broken" in r.stdout and "training_core.planted" in r.stdout, r.stdout


@pytest.mark.parametrize("where, planted, broken", [
    # a room importing one above it, lazily or for type hints only: what closed the 13-module circle
    ("training_core/base/planted.py", "def later():\n    from training_core.loop.trainer import Trainer\n",
     "training_core.base.planted -> training_core.loop.trainer"),
    ("training_core/observers/planted.py",
     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from training_core.loop.trainer import Trainer\n",
     "training_core.observers.planted -> training_core.loop.trainer"),
    ("training_core/rundir/planted.py", "def later():\n    import training_core.engine.checkpoints\n",
     "training_core.rundir.planted -> training_core.engine.checkpoints"),
    # the quality metrics reaching for a room beside base (they must work on two arrays, without a run)
    ("training_core/quality/planted.py", "def later():\n    from training_core.rundir.samples import load_samples\n",
     "training_core.quality.planted -> training_core.rundir.samples"),
    ("training_core/quality/planted.py", "def later():\n    import training_core.engine.sampling\n",
     "training_core.quality.planted -> training_core.engine.sampling"),
    # the readers the window draws from pulling in TensorFlow
    ("training_core/runs/planted.py", "def later():\n    import tensorflow\n", "training_core.runs.planted"),
    # the window importing the training loop (its training runs in a process of its own)
    ("app/planted.py", "def later():\n    from training_core.loop.trainer import Trainer\n", "app.planted"),
])
def test_the_contracts_catch_an_import_against_the_order_of_the_rooms(tmp_path, where, planted, broken):
    r = _planted_copy(tmp_path, where, planted)
    assert r.returncode == 1, r.stdout + r.stderr
    assert " 0 broken" not in r.stdout and broken in r.stdout, r.stdout

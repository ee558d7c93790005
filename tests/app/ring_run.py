"""One real headless ring run (generator/dense_1 frozen from the start) for the plot tests, read back with
`read_run` (the `ring` fixture of tests/app/conftest.py), and what they compare it with."""
from __future__ import annotations

import sys
from pathlib import Path

from PySide6 import QtGui

from tests import zygote

REPO = Path(__file__).resolve().parents[2]
FROZEN = ("generator/dense_1/kernel", "generator/dense_1/bias")


def train_ring(run_dir: Path) -> Path:
    r = zygote.run([sys.executable, "main.py", "--headless", "--example", "ring", "--steps", "300",
                    "--freeze", "generator/dense_1", "--run-dir", str(run_dir), "--seed", "0", "--quiet",
                    "--no-tensorboard"], cwd=REPO, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    return run_dir


def shown_color(item) -> QtGui.QColor:
    return item.opts["pen"].color()

"""The window side of runs that survive: File → Resume Run… continues a run in its own directory, and the
NaN dialog's "Roll back to step N" takes the run back to its last good checkpoint; in both, the window's
curves are the record on disk, one timeline."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from PySide6.QtWidgets import QPushButton

from tests import zygote
from training_core import read_events
from training_core.runs import read_run
from training_core.runs.collection import LIVE

from test_window_e2e import NAN_EXPERIMENT  # tests/app is on sys.path (no package)

REPO = Path(__file__).resolve().parents[2]


def _same_losses(store, d: Path) -> None:
    disk = read_run(d)
    assert store.phases == disk.phases
    for phase in disk.phases:
        (s1, _, v1), (s2, _, v2) = store.loss(phase), disk.loss(phase)
        np.testing.assert_array_equal(s1, s2)
        np.testing.assert_array_equal(np.float32(v1), np.float32(v2))


def test_resume_run_continues_in_its_directory(ui, qtbot, tmp_path):
    d = tmp_path / "headless"
    zygote.run([sys.executable, "main.py", "--headless", "--example", "ring", "--steps", "130",
                "--checkpoint-every", "50", "--run-dir", str(d), "--quiet"], cwd=REPO, check=True,
               capture_output=True, timeout=300)
    (d / "checkpoints" / "ckpt-130.index").unlink()  # as if killed after step 130: resume from 100
    w = ui.make(steps=160)  # the run reached its own target (130): the panel's is used
    w.resume_run(str(d))
    ui.wait_finished(w, timeout=90_000)
    events = read_events(d)
    resumed = [e for e in events if e.kind == "resumed"]
    assert len(resumed) == 1 and resumed[0].step == 100 and resumed[0].steps == 160
    assert w.store.last_step == 160 and events[-1].kind == "stop" and events[-1].reason == "done"
    _same_losses(w.store, d)
    assert [m.label for m in w.store.markers].count("resumed") == 1
    assert w.experiment_panel.current_source() == ("example", "ring")
    # the window names the run it resumed: the status bar's link and the Runs tab (they said "–" and "live")
    assert w.session.run_dir == str(d) and str(d) in w.status_panel.run_dir_label.text()
    assert w.review.runs.get(LIVE).label == d.name
    qtbot.waitUntil(lambda: _samples_in(w, d), timeout=30_000)

    w.start()  # a new run in the window's own directory: its samples, not the resumed run's any more
    ui.wait_finished(w, timeout=90_000)
    new_dir = Path(w.session.run_dir)
    assert new_dir != d and w.review.runs.get(LIVE).label == new_dir.name
    qtbot.waitUntil(lambda: _samples_in(w, new_dir), timeout=30_000)


def _samples_in(w, run_dir: Path) -> bool:
    """The samples view lists `run_dir`'s samples, and only those."""
    files = w.plots.samples.files
    return bool(files) and all(Path(p).parent.parent == run_dir for _, p in files)


def test_resume_run_refuses_a_directory_that_is_not_a_run(ui, tmp_path):
    w = ui.make()
    w.resume_run(str(tmp_path))
    assert not w.running and "not a Freezeframe run directory" in w.last_error[0]


def test_nan_dialog_rolls_back_to_the_last_good_checkpoint(ui, qtbot, tmp_path):
    path = tmp_path / "diverges.py"
    path.write_text(NAN_EXPERIMENT)
    w = ui.make(source=("file", str(path)))
    w.start()
    ui.wait_event(w, "nan")
    qtbot.waitUntil(lambda: w.paused and w.error_dialog is not None, timeout=10_000)
    button = w.error_dialog.findChild(QPushButton, "rollbackButton")
    assert button is not None and button.text() == "Roll back to step 0"
    assert "Roll back to step 0, lower phase A's learning rate" in w.last_error[0]
    button.click()
    ui.wait_event(w, "rollback")
    assert w.paused and w.store.last_step == 0 and "nan" not in [e.kind for e in w.store.events]
    w.stop()
    ui.wait_finished(w)
    events = read_events(tmp_path / "run0")
    assert [e.kind for e in events if e.kind in ("nan", "rollback")] == ["rollback"]
    _same_losses(w.store, tmp_path / "run0")

"""The window attached to a run that a `Monitor` records: a keras.io-style GAN trained by `fit()` in a
process of its own (tests/core/keras_gan.py), watched and steered by the real window (offscreen) through the
run directory, as `--attach` does for a headless run.

Why: the Monitor promises that code which is no experiment file becomes a Freezeframe run the window can
attach to. The window must find its scope tree, losses and samples, and its Pause, learning-rate and Stop
controls must be obeyed by `fit()` (a pause blocks the batch loop; Stop ends `fit()` with the record closed).
"""
from __future__ import annotations

import sys

from PySide6.QtCore import Qt

from tests.core.helpers import REPO, start

TIMEOUT = 120_000


def test_the_window_attaches_to_a_monitored_fit_and_pauses_sets_a_rate_and_stops_it(ui, qtbot, tmp_path):
    run_dir = tmp_path / "fit-run"
    proc = start([sys.executable, "-m", "tests.core.keras_gan", str(run_dir), "2000"], cwd=REPO)
    try:
        w = ui.make(fake=True)
        qtbot.waitUntil(lambda: (run_dir / "events.jsonl").is_file(), timeout=TIMEOUT)
        assert w.attach_run(run_dir)
        qtbot.waitUntil(lambda: w.scope_tree.item("discriminator/dense_1") is not None and w.store.last_step > 20,
                        timeout=TIMEOUT)
        assert w.store.phases == ["discriminator", "generator"]  # the losses from fit()'s logs, by sub-model
        qtbot.waitUntil(lambda: w.store.samples is not None, timeout=TIMEOUT)  # sample(model), asked for
        assert w.store.samples["kind"] == "points2d"

        qtbot.mouseClick(w.experiment_panel.run_buttons["pause"], Qt.MouseButton.LeftButton)
        pause = ui.wait_event(w, "pause", timeout=TIMEOUT)
        assert pause.id in w.attachment.run.sent
        # absence, by flushing: a sample request sent after the pause is applied at the paused step
        asked = w.attachment.run.request_samples()
        qtbot.waitUntil(lambda: w.attachment.run.sent[asked].step is not None, timeout=TIMEOUT)
        assert w.attachment.run.sent[asked].step == pause.step and w.store.last_step == pause.step

        edit = w.schedule_panel.lrs["discriminator"].lineEdit()
        edit.selectAll()
        qtbot.keyClicks(edit, "5e-4")
        qtbot.keyClick(edit, Qt.Key.Key_Return)
        lr = ui.wait_event(w, "lr", timeout=TIMEOUT)  # applied to fit()'s d_optimizer while paused
        assert (lr.phase, lr.value, lr.step) == ("discriminator", 5e-4, pause.step)

        qtbot.mouseClick(w.experiment_panel.run_buttons["pause"], Qt.MouseButton.LeftButton)  # Continue
        ui.wait_event(w, "continue", timeout=TIMEOUT)
        qtbot.waitUntil(lambda: w.store.last_step > pause.step + 20, timeout=TIMEOUT)
        w.stop()
        qtbot.waitUntil(lambda: w.store.stop is not None, timeout=TIMEOUT)
        assert proc.wait(120) == 0  # fit() returned
        assert w.store.stop.reason == "stopped" and w.store.stop.id
        assert not [e for e in w.store.events if e.kind == "rejected"]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()

"""Errors show one line and the details in a dialog; training stops (or pauses) cleanly; the window stays
usable and Start works again once the cause is fixed."""
from __future__ import annotations

from pathlib import Path

from app.settings import Settings
from training_core import example_path, read_events

NAN_EXPERIMENT = '''
import keras
import numpy as np
from training_core import Experiment, Phase


class Scalar(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.kernel = self.add_weight(shape=(1,), initializer="ones", name="kernel")

    def call(self, x=None):
        return self.kernel


def loss(ctx):
    return keras.ops.sum(keras.ops.log(ctx.models.A()))  # SGD(10) steps w from 1 to -9: log -> NaN


def build():
    return Experiment(name="nan", models={"A": Scalar(name="A")}, data=np.zeros((4, 1), np.float32),
                      batch_size=None, phases=[Phase("A", loss, trains=["A"], optimizer=keras.optimizers.SGD(10.0))])
'''


def test_broken_experiment_file_then_fixed(ui, qtbot, tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("import numpy\n\nraise ValueError('broken on purpose')\n")
    w = ui.make(wait=False, source=("file", str(path)), steps=60)
    qtbot.waitUntil(lambda: w.last_error is not None and not w.busy, timeout=90_000)
    summary, detail = w.last_error
    assert "mine.py raised ValueError: broken on purpose at line 3" in summary
    assert "Traceback" in detail
    box = w.error_dialog
    assert box.isVisible() and box.text() == summary and "broken on purpose" in box.detailedText()
    assert w.scope_tree.item("generator") is None and w.start_action.isEnabled()
    assert str(path) in Settings().recent_files()  # remembered even though it failed: the user will fix it
    box.close()

    path.write_text(example_path("ring").read_text())  # the fix
    w.start()
    ui.wait_finished(w, timeout=60_000)
    assert w.store.last_step == 60
    assert w.scope_tree.item("generator/dense_1/kernel") is not None
    assert w.experiment_panel.current_source() == ("file", str(path.resolve()))


def test_nan_loss_pauses_and_shows_dialog(ui, qtbot, tmp_path):
    path = tmp_path / "diverges.py"
    path.write_text(NAN_EXPERIMENT)
    w = ui.make(source=("file", str(path)))
    w.start()
    nan = ui.wait_event(w, "nan")
    qtbot.waitUntil(lambda: w.paused and w.last_error is not None, timeout=10_000)
    assert nan.phase == "A" and nan.at_step == 2
    assert "became nan at step 2" in w.last_error[0] and w.error_dialog.isVisible()
    assert w.status_panel.state_label.text() == "Paused (nan)"
    assert w.running and w.stop_action.isEnabled()
    w.error_dialog.close()
    w.stop()
    ui.wait_finished(w)
    events = read_events(tmp_path / "run0")
    assert events[-1].kind == "stop" and any(e.kind == "nan" for e in events)

    w.choose_source(("example", "ring"))  # still usable: another experiment trains
    ui.wait_prepared(w)
    w.experiment_panel.steps_spin.setValue(40)
    w.start()
    ui.wait_finished(w, timeout=60_000)
    assert w.store.last_step == 40 and set(w.store.phases) == {"D", "G"}


def test_unwritable_run_dir_then_start_again(ui, qtbot, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    w = ui.make(run_dir=str(blocker / "run"), steps=30)
    w.start()
    qtbot.waitUntil(lambda: w.last_error is not None and not w.running, timeout=30_000)
    assert "is not writable" in w.last_error[0] and "choose another --run-dir" in w.last_error[0]
    assert w.error_dialog.isVisible() and w.start_action.isEnabled()
    w.error_dialog.close()
    w.start()  # the next run goes to the runs folder
    ui.wait_finished(w)
    assert w.store.last_step == 30 and w.last_error[0].startswith("run directory")
    run_dir = Path(w.status_panel.run_dir)
    assert run_dir.parent == tmp_path / "runs" and (run_dir / "events.jsonl").is_file()


def test_missing_file_is_reported_and_forgotten(ui, qtbot, tmp_path):
    w = ui.make()
    missing = tmp_path / "gone.py"
    assert not w.open_experiment(missing)
    assert w.last_error[0] == f"experiment file {missing} does not exist; check the path"
    assert w.experiment_panel.current_source() == ("example", "ring")
    assert str(missing) not in Settings().recent_files()


def test_training_process_killed_mid_run(ui, qtbot):
    """Out of memory, a segfault in a kernel, `kill`: the window says so in one line and ends the run
    instead of waiting forever, starts a new training process, and the next Start trains again."""
    w = ui.make(steps=None)
    w.start()
    ui.wait_steps(w, 50)
    first = w.core
    first.process.kill()
    qtbot.waitUntil(lambda: not w.running, timeout=30_000)
    assert w.last_error is not None and "training process ended unexpectedly" in w.last_error[0]
    assert w.core is not first and not first.alive()
    ui.wait_prepared(w)
    w.start()
    qtbot.waitUntil(lambda: w.running and w.store.last_step >= 20, timeout=60_000)
    w.stop()
    ui.wait_finished(w)
    w.close()

"""End to end: the real window on real training in its real training process, one test per path a user
takes (start, pause, step, continue, stop; freezing live; ratio, learning rate and method live; settings
made before Start; a NaN; a broken experiment file; an unwritable run directory; a killed training
process). What is checked is what training did: the run record on disk and what came back to the
window. The widgets' own behaviour is tested fast on the stand-in service (test_window_controls.py,
test_window_schedule.py, test_window_errors.py); closing mid-run is test_window_process.py.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt

from app.settings import Settings
from app.panels.scope_tree import STATE, UPDATE
from training_core.base import events
from training_core import example_path, read_events, read_scalars


def click(qtbot, w, name: str) -> None:
    button = w.experiment_panel.run_buttons[name]
    assert button.isEnabled(), f"{name} button is disabled"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def last_event(run_dir: str | Path) -> events.Event:
    return read_events(run_dir)[-1]


def _rows_after(store, path: str, lo: int, hi: float = np.inf) -> np.ndarray:
    steps, _, norms = store.var_series(path, "update_norm")
    return norms[(steps > lo) & (steps <= hi)]


def phase_runs(run_dir, lo: int, hi: int) -> list[tuple[str, int]]:
    """(phase, length) of each uninterrupted stay in a phase, from scalars.csv loss rows in (lo, hi]."""
    scalars = read_scalars(run_dir)
    at = {}
    for phase in ("D", "G"):
        for s in np.asarray(scalars[f"loss/{phase}"].steps).tolist():
            at[int(s)] = phase
    steps = sorted(s for s in at if lo < s <= hi)
    assert steps == list(range(steps[0], steps[-1] + 1)), "a step is missing from scalars.csv"
    runs: list[list] = []
    for s in steps:
        if runs and runs[-1][0] == at[s]:
            runs[-1][1] += 1
        else:
            runs.append([at[s], 1])
    return [tuple(r) for r in runs]


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


def test_start_pause_step_continue_stop(ui, qtbot, tmp_path):
    w = ui.make()
    sp = w.status_panel
    assert sp.state_label.text() == "Ready"
    devices = [w.experiment_panel.device_combo.itemData(i) for i in range(w.experiment_panel.device_combo.count())]
    assert devices[:2] == ["auto", "cpu"]  # listed by the training process once TensorFlow loaded
    assert sp.device_label.text() == "CPU"
    assert not w.experiment_panel.run_buttons["pause"].isEnabled()
    click(qtbot, w, "start")
    ui.wait_steps(w, 100)
    assert not w.experiment_panel.run_buttons["start"].isEnabled()
    assert not w.experiment_panel.source_combo.isEnabled()  # no switching experiment mid-run
    qtbot.waitUntil(lambda: sp.step_label.text() != "Step 0", timeout=60_000)
    assert sp.state_label.text() == "Training"
    assert sp.phase_label.text() in ("Phase D", "Phase G")
    assert str(tmp_path / "run0") in sp.run_dir_label.text()

    click(qtbot, w, "pause")
    pause = ui.wait_event(w, "pause", reason="user")
    held = pause.step
    qtbot.waitUntil(lambda: w.store.last_step == held and sp.step_label.text() == f"Step {held:,}", timeout=60_000)
    assert w.experiment_panel.run_buttons["pause"].text() == "Continue"
    assert sp.state_label.text() == "Paused"
    w.refresh()
    assert sp.rate_label.text() == "– steps/s"
    assert ui.flush(w) == held and w.store.last_step == held, "training moved while paused"

    click(qtbot, w, "step")
    ui.wait_event(w, "pause", reason="step")
    qtbot.waitUntil(lambda: w.store.last_step == held + 1, timeout=60_000)
    assert ui.flush(w) == held + 1 and w.store.last_step == held + 1, "Step ran more than one step"

    click(qtbot, w, "pause")  # now labelled Continue
    ui.wait_event(w, "continue")
    ui.wait_steps(w, held + 100)
    click(qtbot, w, "stop")
    ui.wait_finished(w)
    final = w.store.last_step
    assert final >= held + 100  # resumed and trained on (the stop may land on the very step waited for)
    stop = last_event(tmp_path / "run0")
    assert stop.kind == "stop" and stop.reason == "stopped" and stop.step == final
    assert w.start_action.isEnabled() and not w.stop_action.isEnabled()
    assert sp.state_label.text() == f"Stopped at step {final:,}"
    assert w.experiment_panel.source_combo.isEnabled()


def test_ticking_a_scope_freezes_it_live_and_unticking_unfreezes(ui, qtbot, tmp_path):
    w = ui.make()
    w.start()
    ui.wait_steps(w, 150)
    item = w.scope_tree.item("generator/dense_1")
    item.setCheckState(0, Qt.CheckState.Checked)  # as a click on its checkbox does
    frozen_at = ui.wait_event(w, "freeze", scopes=["generator/dense_1"]).step
    assert w.scope_tree.item("generator").checkState(0) == Qt.CheckState.PartiallyChecked
    ui.wait_steps(w, frozen_at + 300)
    for path in ("generator/dense_1/kernel", "generator/dense_1/bias"):
        after = _rows_after(w.store, path, frozen_at)
        assert len(after) >= 3 and np.all(after == 0.0), f"{path} moved while frozen: {after}"
        assert np.any(_rows_after(w.store, path, 0, frozen_at) > 0)
    assert np.all(_rows_after(w.store, "generator/dense_2/kernel", frozen_at) > 0)
    qtbot.waitUntil(lambda: w.scope_tree.item("generator/dense_1/kernel").text(STATE) == "frozen", timeout=60_000)
    assert w.scope_tree.item("generator/dense_1/kernel").text(UPDATE) == "0"
    assert w.scope_tree.item("generator/dense_2/kernel").text(STATE) == ""

    item.setCheckState(0, Qt.CheckState.Unchecked)
    thawed_at = ui.wait_event(w, "freeze", scopes=[]).step
    ui.wait_steps(w, thawed_at + 300)
    resumed = _rows_after(w.store, "generator/dense_1/kernel", thawed_at)
    assert len(resumed) >= 3 and np.all(resumed > 0)
    w.stop()
    ui.wait_finished(w)

    on_disk = read_scalars(tmp_path / "run0")["update_norm/generator/dense_1/kernel"]
    s, v = np.asarray(on_disk.steps), np.asarray(on_disk.values)
    assert np.all(v[(s > frozen_at) & (s <= thawed_at)] == 0.0)
    assert np.all(v[s > thawed_at] > 0) and np.all(v[s <= frozen_at] > 0)
    assert len([e for e in w.store.events if e.kind == "freeze"]) == 2  # one command per change


def test_a_freeze_through_the_runs_commands_file_is_ticked_and_the_next_tick_keeps_it(ui, qtbot, tmp_path):
    """A run the window started, steered from a shell through its commands.jsonl: the tree used to stay
    unticked, and the next tick sent the tree's whole set without that freeze, undoing it. The window's
    own ticks are acknowledged with its ids, the shell's with the shell's."""
    from training_core import SetFreeze, append_command
    w = ui.make()
    w.start()
    ui.wait_steps(w, 50)
    append_command(tmp_path / "run0", SetFreeze(["discriminator/dense_1"]), "shell-1")
    ui.wait_event(w, "freeze", id="shell-1")
    qtbot.waitUntil(lambda: w.scope_tree.item("discriminator/dense_1").checkState(0) == Qt.CheckState.Checked,
                    timeout=60_000)
    w.scope_tree.item("generator/dense_1").setCheckState(0, Qt.CheckState.Checked)
    mine = ui.wait_event(w, "freeze", scopes=list(w.scope_tree.frozen_scopes()))
    assert set(mine.scopes) == {"discriminator/dense_1", "generator/dense_1"} and mine.id.startswith("window-")
    w.stop()
    ui.wait_finished(w)


def test_ticks_before_start_are_the_initial_freeze(ui, qtbot, tmp_path):
    w = ui.make()
    tree = w.scope_tree
    for leaf in ("generator/dense_1", "generator/dense_2", "generator/out"):
        tree.item(leaf).setCheckState(0, Qt.CheckState.Checked)
    tree.item("discriminator/out/bias").setCheckState(0, Qt.CheckState.Checked)
    w.experiment_panel.steps_spin.setValue(120)
    w.start()  # the ticks made before Start are the run's initial freeze
    ui.wait_finished(w)
    freeze = [e for e in w.store.events if e.kind == "freeze"]
    assert freeze and freeze[0].step == 0 and freeze[0].scopes == ["generator", "discriminator/out/bias"]
    assert set(w.store.phases) == {"D"}  # G has every variable frozen: it is skipped
    assert np.all(_rows_after(w.store, "discriminator/out/bias", 0) == 0.0)
    assert w.status_panel.progress.isVisible() and w.status_panel.progress.value() == 120
    assert w.status_panel.state_label.text() == "Finished at step 120"


def test_ratio_change_mid_run_changes_recorded_phase_sequence(ui, qtbot, tmp_path):
    w = ui.make()
    sp = w.schedule_panel
    assert sp.schedule() == {"policy": "fixed", "ratio": [1, 1]}
    w.start()
    ui.wait_steps(w, 150)
    sp.steps["D"].setValue(2)  # two quick edits: one command after the debounce
    sp.steps["D"].setValue(3)
    changed_at = ui.wait_event(w, "ratio").step
    ui.wait_steps(w, changed_at + 200)
    w.stop()
    ui.wait_finished(w)
    ratio_events = [e for e in w.store.events if e.kind == "ratio"]
    assert len(ratio_events) == 1 and ratio_events[0].policy == {"policy": "fixed", "ratio": [3, 1]}

    before = phase_runs(tmp_path / "run0", 0, changed_at)
    assert all(n == 1 for _, n in before), "1:1 should alternate D, G"
    after = phase_runs(tmp_path / "run0", changed_at, w.store.last_step)[1:-1]  # inner, complete stays
    assert len(after) > 20
    assert all(n == (3 if p == "D" else 1) for p, n in after), after

    w.refresh()  # plots got the data and a marker where the ratio changed
    xs = w.plots.curves()["loss/D"].xData
    assert xs is not None and xs[-1] >= w.store.last_step - 3
    lines = w.plots.marker_lines("loss")
    assert any(ln.marker.kind == "ratio" and ln.value() == changed_at for ln in lines)


def test_learning_rate_method_and_leak_live(ui, qtbot, tmp_path):
    w = ui.make()
    sp = w.schedule_panel
    assert sp.lrs["D"].text() == "1e-4"  # the ring example's own rate, in scientific form
    w.start()
    ui.wait_steps(w, 150)
    edit = sp.lrs["D"].lineEdit()
    edit.selectAll()
    qtbot.keyClicks(edit, "5e-5")
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    lr = ui.wait_event(w, "lr")
    assert lr.command["phase"] == "D" and lr.command["value"] == 5e-5

    sp.method_combo.setCurrentIndex(sp.method_combo.findData("gate"))
    ui.wait_event(w, "method")
    w.scope_tree.item("generator/dense_2").setCheckState(0, Qt.CheckState.Checked)
    leak = ui.wait_event(w, "leak", timeout=20000)  # Adam's momentum still moves gated variables
    assert leak.variable.startswith("generator/dense_2/")
    row = w.scope_tree.item(leak.variable)
    qtbot.waitUntil(lambda: row.text(STATE) in ("LEAK", "leaked"), timeout=60_000)  # "leaked" once momentum died
    assert f"moved at step {leak.at_step}" in row.toolTip(STATE)
    assert w.scope_tree.item("generator").text(STATE) in ("LEAK", "leaked")

    sp.method_combo.setCurrentIndex(sp.method_combo.findData("exact"))
    exact_at = ui.wait_event(w, "method", command={"kind": "method", "method": "exact"}).step
    ui.wait_steps(w, exact_at + 200)
    steps, _, norms = w.store.var_series("generator/dense_2/kernel", "update_norm")
    assert np.all(norms[steps > exact_at] == 0.0)
    qtbot.waitUntil(lambda: w.scope_tree.item("generator/dense_2/kernel").text(STATE) == "frozen", timeout=60_000)
    w.refresh()
    kinds = {ln.marker.kind for ln in w.plots.marker_lines("update")}
    assert {"lr", "method", "freeze", "leak"} <= kinds
    w.stop()
    ui.wait_finished(w)


def test_adaptive_policy_and_settings_before_start(ui, qtbot, tmp_path):
    w = ui.make()
    sp = w.schedule_panel
    sp.policy_combo.setCurrentIndex(sp.policy_combo.findData("adaptive"))
    sp.thresholds["D"].setValue(1.2)
    sp.thresholds["G"].setValue(0.6)
    sp.max_steps.setValue(7)
    sp.lrs["G"].setValue(3e-4)
    w.experiment_panel.steps_spin.setValue(200)
    w.start()  # edits made before Start become the run's starting settings
    ui.wait_finished(w)
    ratio = [e for e in w.store.events if e.kind == "ratio"]
    assert ratio and ratio[0].step == 0
    assert ratio[0].policy == {"policy": "adaptive", "thresholds": [1.2, 0.6], "max_steps": 7, "min_steps": 1}
    assert [e.command["value"] for e in w.store.events if e.kind == "lr"] == [3e-4]
    runs = phase_runs(tmp_path / "run0", 0, 200)
    assert max(n for _, n in runs) <= 7 and {p for p, _ in runs} == {"D", "G"}
    assert w.store.last_step == 200


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


def test_preparings_warning_reaches_the_window_from_the_training_process(ui, qtbot, tmp_path):
    """The NaN experiment with a second, unnamed model its loss never reaches: preparing warns of both (its
    default name, the variables without a gradient), and the window shows the warnings at Ready."""
    path = tmp_path / "unreached.py"
    path.write_text(NAN_EXPERIMENT.replace('models={"A": Scalar(name="A")}', 'models={"A": Scalar(name="A"), '
                                           '"B": Scalar()}').replace('trains=["A"]', 'trains=["A", "scalar"]'))
    w = ui.make(source=("file", str(path)))
    text = w.experiment_panel.description.text()
    assert "Warning: phase A's loss has no gradient for 1 of its 2 variables (scalar/kernel)" in text, text


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

"""The run controls and the scope tree drive real training (ring example) through the real window."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from training_core import events, read_events, read_scalars


def click(qtbot, w, name: str) -> None:
    button = w.experiment_panel.control_buttons[name]
    assert button.isEnabled(), f"{name} button is disabled"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def last_event(run_dir: str | Path) -> events.Event:
    return read_events(run_dir)[-1]


def test_start_pause_step_stop_buttons(ui, qtbot, tmp_path):
    w = ui.make()
    sp = w.status_panel
    assert sp.state_label.text() == "Ready"
    assert not w.experiment_panel.control_buttons["pause"].isEnabled()
    click(qtbot, w, "start")
    ui.wait_steps(w, 100)
    assert not w.experiment_panel.control_buttons["start"].isEnabled()
    assert not w.experiment_panel.source_combo.isEnabled()  # no switching experiment mid-run
    qtbot.waitUntil(lambda: sp.step_label.text() != "Step 0", timeout=5000)
    assert sp.state_label.text() == "Training"
    assert sp.phase_label.text() in ("Phase D", "Phase G")
    assert str(tmp_path / "run0") in sp.run_dir_label.text()

    click(qtbot, w, "pause")
    pause = ui.wait_event(w, "pause", reason="user")
    held = pause.step
    qtbot.waitUntil(lambda: w.store.last_step == held and sp.step_label.text() == f"Step {held:,}", timeout=5000)
    assert w.experiment_panel.control_buttons["pause"].text() == "Resume"
    assert sp.state_label.text() == "Paused"
    ui.pause_for(600)
    assert w.store.last_step == held, "training moved while paused"

    click(qtbot, w, "step")
    ui.wait_event(w, "pause", reason="step")
    qtbot.waitUntil(lambda: w.store.last_step == held + 1, timeout=5000)
    ui.pause_for(600)
    assert w.store.last_step == held + 1, "Step ran more than one step"

    click(qtbot, w, "pause")  # now labelled Resume
    ui.wait_event(w, "resume")
    ui.wait_steps(w, held + 100)
    click(qtbot, w, "stop")
    ui.wait_finished(w)
    final = w.store.last_step
    assert final > held + 100
    stop = last_event(tmp_path / "run0")
    assert stop.kind == "stop" and stop.reason == "stopped" and stop.step == final
    assert w.start_action.isEnabled() and not w.stop_action.isEnabled()
    assert sp.state_label.text() == f"Stopped at step {final:,}"
    assert w.experiment_panel.source_combo.isEnabled()


def test_keyboard_shortcuts_and_tooltips(ui, qtbot):
    w = ui.make()
    tips = {n: b.toolTip() for n, b in w.experiment_panel.control_buttons.items()}
    assert "Ctrl+R" in tips["start"] and "Ctrl+P" in tips["pause"]
    assert "Ctrl+." in tips["step"] and "Ctrl+Shift+R" in tips["stop"]
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5000)
    qtbot.keyClick(w, Qt.Key.Key_Period, Qt.KeyboardModifier.ControlModifier)  # Step from idle: one step
    ui.wait_event(w, "pause", reason="step")
    qtbot.waitUntil(lambda: w.store.last_step == 1, timeout=10000)
    qtbot.keyClick(w, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)  # Resume
    ui.wait_steps(w, 50)
    qtbot.keyClick(w, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    ui.wait_finished(w)
    assert ui.wait_event(w, "stop").reason == "stopped"


def _rows_after(store, path: str, lo: int, hi: float = np.inf) -> np.ndarray:
    steps, _, norms = store.var_series(path, "update_norm")
    return norms[(steps > lo) & (steps <= hi)]


def test_ticking_a_scope_freezes_it_live_and_unticking_resumes(ui, qtbot, tmp_path):
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
    qtbot.waitUntil(lambda: w.scope_tree.item("generator/dense_1/kernel").text(4) == "frozen", timeout=5000)
    assert w.scope_tree.item("generator/dense_1/kernel").text(3) == "0"
    assert w.scope_tree.item("generator/dense_2/kernel").text(4) == ""

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


def test_tree_sets_initial_freeze_with_minimal_scopes(ui, qtbot, tmp_path):
    w = ui.make()
    tree = w.scope_tree
    sent = []
    tree.freezeChanged.connect(sent.append)
    for leaf in ("generator/dense_1", "generator/dense_2", "generator/out"):
        tree.item(leaf).setCheckState(0, Qt.CheckState.Checked)
    tree.item("discriminator/out/bias").setCheckState(0, Qt.CheckState.Checked)
    qtbot.waitUntil(lambda: len(sent) >= 1, timeout=2000)
    ui.pause_for(50)
    assert tree.item("generator").checkState(0) == Qt.CheckState.Checked  # tri-state rolls up
    assert tree.frozen_scopes() == ("generator", "discriminator/out/bias")
    assert sent[-1] == ("generator", "discriminator/out/bias")

    tree.filter_edit.setText("out/b")
    assert not tree.item("discriminator/out/bias").isHidden()
    assert tree.item("discriminator/dense_1").isHidden() and tree.item("generator/dense_1").isHidden()
    tree.filter_edit.clear()
    assert not tree.item("generator/dense_1").isHidden()

    w.experiment_panel.steps_spin.setValue(120)
    w.start()  # the ticks made before Start are the run's initial freeze
    ui.wait_finished(w)
    freeze = [e for e in w.store.events if e.kind == "freeze"]
    assert freeze and freeze[0].step == 0 and freeze[0].scopes == ["generator", "discriminator/out/bias"]
    assert set(w.store.phases) == {"D"}  # G has every variable frozen: it is skipped
    assert np.all(_rows_after(w.store, "discriminator/out/bias", 0) == 0.0)
    assert w.status_panel.progress.isVisible() and w.status_panel.progress.value() == 120
    assert w.status_panel.state_label.text() == "Finished at step 120"

    w.refresh()
    tree.select_variable("discriminator/dense_2/kernel")
    assert w.plots.highlighted == "discriminator/dense_2/kernel"
    w.plots.variableClicked.emit("discriminator/dense_1/kernel")  # a click on a curve selects its row
    assert tree.tree.currentItem() is tree.item("discriminator/dense_1/kernel")
    assert w.plots.highlighted == "discriminator/dense_1/kernel"



def test_loading_state_menus_and_devices(ui, qtbot):
    w = ui.make(wait=False)
    assert w.status_panel.state_label.text() == "Loading TensorFlow…"  # TensorFlow loads after the first paint
    assert w.scope_tree.tree.topLevelItem(0).text(0) == "Loading TensorFlow…"
    assert not w.start_action.isEnabled()
    ui.wait_prepared(w)
    devices = [w.experiment_panel.device_combo.itemData(i) for i in range(w.experiment_panel.device_combo.count())]
    assert devices[:2] == ["auto", "cpu"]  # listed on the worker thread once TensorFlow loaded
    assert w.status_panel.device_label.text() == "CPU"
    assert w.file_menu.title() == "&File"
    assert [a.text() for a in w.file_menu.actions() if a.text()][:2] == ["&Open Experiment…", "Open &Recent"]
    help_menu = [a.menu() for a in w.menuBar().actions() if a.text() == "&Help"][0]
    help_menu.actions()[0].trigger()  # About opens without blocking
    about = [b for b in w.findChildren(QMessageBox) if b.windowTitle() == "About Freezeframe"]
    assert about and about[0].isVisible() and "Ctrl+R" in about[0].text()
    about[0].close()

"""Live schedule edits on the stand-in training service (no TensorFlow): each edit the user makes becomes
one command, debounced; edits before Start become the run's starting settings; the tree and plots show
what came back. What training does with them is test_window_e2e.py."""
from __future__ import annotations

from PySide6.QtCore import Qt

from app.panels.scope_tree import STATE
from training_core import SetFreeze, SetFreezeMethod, SetLearningRate, SetRatio


def train(ui, w, n: int) -> None:
    w.core.train(n)
    ui.flush(w)
    w.refresh()


def test_ratio_edits_become_one_command_and_a_marker(ui, qtbot):
    w = ui.make(fake=True)
    sp = w.schedule_panel
    assert sp.schedule() == {"policy": "fixed", "ratio": [1, 1]}
    w.start()
    train(ui, w, 150)
    sp.steps["D"].setValue(2)  # two quick edits: one command after the debounce
    sp.steps["D"].setValue(3)
    assert w.core.sent == []
    qtbot.waitUntil(lambda: w.core.sent != [], timeout=60_000)
    sp.flush()
    assert w.core.sent == [SetRatio({"policy": "fixed", "ratio": [3, 1]})]
    train(ui, w, 40)
    xs = w.plots.curves()["loss/D"].xData
    assert xs is not None and xs[-1] >= w.store.last_step - 3
    changed_at = [e for e in w.store.events if e.kind == "ratio"][0].step
    lines = w.plots.marker_lines("loss")
    assert any(ln.marker.kind == "ratio" and ln.value() == changed_at == 150 for ln in lines)


def test_learning_rate_method_and_leak_states(ui, qtbot):
    w = ui.make(fake=True)
    sp = w.schedule_panel
    assert sp.lrs["D"].text() == "1e-4"  # the experiment's own rate, in scientific form
    w.start()
    train(ui, w, 150)
    edit = sp.lrs["D"].lineEdit()
    edit.selectAll()
    qtbot.keyClicks(edit, "5e-5")
    qtbot.keyClick(edit, Qt.Key.Key_Return)  # Enter sends at once, without waiting out the debounce
    assert w.core.sent == [SetLearningRate("D", 5e-5)]

    sp.method_combo.setCurrentIndex(sp.method_combo.findData("gate"))
    assert w.core.sent[-1] == SetFreezeMethod("gate")
    w.scope_tree.item("generator/dense_2").setCheckState(0, Qt.CheckState.Checked)
    w.scope_tree.flush()
    assert w.core.sent[-1] == SetFreeze(("generator/dense_2",), False)
    train(ui, w, 4)  # momentum still moves the gated variables: a leak
    leak = ui.wait_event(w, "leak")
    row = w.scope_tree.item(leak.variable)
    assert leak.variable.startswith("generator/dense_2/") and row.text(STATE) == "LEAK"
    assert f"moved at step {leak.at_step}" in row.toolTip(STATE) and "still moves it" in row.toolTip(STATE)
    assert w.scope_tree.item("generator").text(STATE) == "LEAK"
    assert w.scope_tree.item("generator").toolTip(STATE).startswith("leaked: generator/dense_2/")
    train(ui, w, 60)  # the momentum died out
    assert row.text(STATE) == "leaked" and w.scope_tree.item("generator").text(STATE) == "leaked"

    sp.method_combo.setCurrentIndex(sp.method_combo.findData("exact"))
    assert w.core.sent[-1] == SetFreezeMethod("exact")
    train(ui, w, 10)
    assert w.scope_tree.item("generator/dense_2/kernel").text(STATE) == "frozen"
    kinds = {ln.marker.kind for ln in w.plots.marker_lines("update")}
    assert {"lr", "method", "freeze", "leak"} <= kinds
    sp.stats_check.setChecked(True)  # BN statistics: the same freeze set, sent again with the new flag
    assert w.core.sent[-1] == SetFreeze(("generator/dense_2",), True)


def test_adaptive_policy_and_settings_before_start(ui, qtbot):
    w = ui.make(fake=True)
    sp = w.schedule_panel
    sp.policy_combo.setCurrentIndex(sp.policy_combo.findData("adaptive"))
    sp.thresholds["D"].setValue(1.2)
    sp.thresholds["G"].setValue(0.6)
    sp.max_steps.setValue(7)
    sp.lrs["G"].setValue(3e-4)
    w.experiment_panel.steps_spin.setValue(200)
    w.start()  # edits made before Start (still in their debounce) become the run's starting settings
    kind, config = w.core.requests[-1]
    assert kind == "start" and w.core.sent == []  # nothing was running to send them to
    assert config.schedule == {"policy": "adaptive", "thresholds": [1.2, 0.6], "max_steps": 7, "min_steps": 1}
    assert config.lr == {"D": 1e-4, "G": 3e-4} and config.steps == 200


def test_zero_ratio_is_refused_before_start(ui, qtbot):
    w = ui.make(fake=True)
    sp = w.schedule_panel
    sp.steps["D"].setValue(0)
    sp.steps["G"].setValue(0)
    w.start()
    assert not w.running and [r[0] for r in w.core.requests] == ["load", "prepare"]
    assert w.last_error[0] == "Every phase has 0 steps: give at least one phase a count above 0."

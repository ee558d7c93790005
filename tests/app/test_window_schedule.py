"""Live schedule edits reach the core as one command each and change what the run records."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from training_core import read_scalars


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
    qtbot.waitUntil(lambda: row.text(4) in ("LEAK", "leaked"), timeout=5000)  # "leaked" once momentum died
    assert f"moved at step {leak.at_step}" in row.toolTip(4)
    assert w.scope_tree.item("generator").text(4) in ("LEAK", "leaked")

    sp.method_combo.setCurrentIndex(sp.method_combo.findData("exact"))
    exact_at = ui.wait_event(w, "method", command={"kind": "method", "method": "exact"}).step
    ui.wait_steps(w, exact_at + 200)
    steps, _, norms = w.store.var_series("generator/dense_2/kernel", "update_norm")
    assert np.all(norms[steps > exact_at] == 0.0)
    qtbot.waitUntil(lambda: w.scope_tree.item("generator/dense_2/kernel").text(4) == "frozen", timeout=5000)
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

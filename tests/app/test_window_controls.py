"""The window's run controls, scope tree and status bar on the stand-in training service (no TensorFlow):
which controls are enabled when, what the status bar says, which command each click or key sends.
What training does with those commands is test_window_e2e.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.panels.scope_tree import STATE, UPDATE
from training_core import Continue, Pause, SetFreeze, Step, Stop


def click(qtbot, w, name: str) -> None:
    button = w.experiment_panel.run_buttons[name]
    assert button.isEnabled(), f"{name} button is disabled"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def train(ui, w, n: int) -> None:
    w.core.train(n)
    ui.flush(w)
    w.refresh()


def test_controls_and_status_bar_through_a_run(ui, qtbot, tmp_path):
    w = ui.make(fake=True)
    sp, buttons = w.status_panel, w.experiment_panel.run_buttons
    assert sp.state_label.text() == "Ready"
    assert not buttons["pause"].isEnabled() and not buttons["stop"].isEnabled()
    click(qtbot, w, "start")
    assert not buttons["start"].isEnabled() and buttons["pause"].isEnabled() and buttons["stop"].isEnabled()
    assert not w.experiment_panel.source_combo.isEnabled()  # no switching experiment mid-run
    assert not w.experiment_panel.seed_spin.isEnabled() and not w.experiment_panel.steps_spin.isEnabled()
    train(ui, w, 100)
    assert sp.step_label.text() == "Step 100" and sp.state_label.text() == "Training"
    assert sp.phase_label.text() in ("Phase D", "Phase G") and sp.rate_label.text() == "1,000 steps/s"
    assert str(tmp_path / "run0") in sp.run_dir_label.text() and sp.run_dir == str(tmp_path / "run0")
    assert not sp.progress.isVisible()  # no step target

    click(qtbot, w, "pause")
    ui.flush(w)
    w.refresh()
    assert w.core.sent == [Pause()] and w.paused
    assert buttons["pause"].text() == "Continue" and "Continue training (Ctrl+P)" == buttons["pause"].toolTip()
    assert sp.state_label.text() == "Paused" and sp.rate_label.text() == "– steps/s"
    sp.show_status(w.session.status.__class__(step=100, steps_per_s=900.0), paused=w.paused)  # a stale speed
    assert sp.rate_label.text() == "– steps/s"  # blank while paused, whatever the last numbers said
    click(qtbot, w, "step")
    assert w.core.sent[-1] == Step(1)
    train(ui, w, 10)  # the trainer runs the one step, then pauses again
    assert w.store.last_step == 101 and sp.state_label.text() == "Paused (step)" and buttons["pause"].text() == "Continue"
    click(qtbot, w, "pause")  # labelled Continue
    ui.flush(w)
    assert w.core.sent[-1] == Continue() and buttons["pause"].text() == "Pause" and sp.state_label.text() == "Training"
    train(ui, w, 100)
    click(qtbot, w, "stop")
    ui.flush(w)
    assert w.core.sent[-1] == Stop() and not w.running
    assert w.start_action.isEnabled() and not w.stop_action.isEnabled() and not w.pause_action.isEnabled()
    assert sp.state_label.text() == "Stopped at step 201"
    assert w.experiment_panel.source_combo.isEnabled()
    click(qtbot, w, "start")  # a new run starts from an empty plot and status bar
    assert w.store.last_step == 0 and w.plots.curves() == {}
    w.refresh()
    assert sp.step_label.text() == "Step 0" and sp.run_dir_label.text() == "Run: –"


def test_keyboard_shortcuts_and_tooltips(ui, qtbot):
    w = ui.make(fake=True)
    tips = {n: b.toolTip() for n, b in w.experiment_panel.run_buttons.items()}
    assert "Ctrl+R" in tips["start"] and "Ctrl+P" in tips["pause"]
    assert "Ctrl+." in tips["step"] and "Ctrl+Shift+R" in tips["stop"]
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=60_000)
    qtbot.keyClick(w, Qt.Key.Key_Period, Qt.KeyboardModifier.ControlModifier)  # Step from idle: start, one step
    assert [r[0] for r in w.core.requests][-1] == "start" and w.core.sent == [Step(1)]
    train(ui, w, 10)
    assert w.store.last_step == 1 and w.paused and w.status_panel.state_label.text() == "Paused (step)"
    qtbot.keyClick(w, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)  # Continue
    train(ui, w, 50)
    assert w.core.sent[-1] == Continue() and w.store.last_step == 51
    qtbot.keyClick(w, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    ui.flush(w)
    assert w.core.sent[-1] == Stop() and not w.running
    assert ui.wait_event(w, "stop").reason == "stopped"


def test_ticking_scopes_sends_one_freeze_and_the_tree_shows_states(ui, qtbot):
    w = ui.make(fake=True)
    w.start()
    train(ui, w, 150)
    item = w.scope_tree.item("generator/dense_1")
    item.setCheckState(0, Qt.CheckState.Checked)  # as a click on its checkbox does
    assert w.scope_tree.item("generator").checkState(0) == Qt.CheckState.PartiallyChecked
    w.scope_tree.flush()
    assert w.core.sent == [SetFreeze(("generator/dense_1",), False)]
    train(ui, w, 300)
    tree = w.scope_tree
    assert tree.item("generator/dense_1/kernel").text(STATE) == "frozen" and tree.item("generator/dense_1/kernel").text(UPDATE) == "0"
    assert tree.item("generator/dense_2/kernel").text(STATE) == "" and tree.item("generator/dense_2/kernel").text(UPDATE) != ""
    assert tree.item("generator").text(STATE) == "partly" and tree.item("generator").toolTip(STATE) == "2 of 6 variables frozen"
    item.setCheckState(0, Qt.CheckState.Unchecked)
    tree.flush()
    assert w.core.sent[-1] == SetFreeze((), False) and len(w.core.sent) == 2  # one command per change
    train(ui, w, 10)
    assert tree.item("generator/dense_1/kernel").text(STATE) == "" and tree.item("generator").text(STATE) == ""


def test_tree_sets_initial_freeze_with_minimal_scopes(ui, qtbot):
    w = ui.make(fake=True)
    tree = w.scope_tree
    sent = []
    tree.freezeChanged.connect(sent.append)
    for leaf in ("generator/dense_1", "generator/dense_2", "generator/out"):
        tree.item(leaf).setCheckState(0, Qt.CheckState.Checked)
    tree.item("discriminator/out/bias").setCheckState(0, Qt.CheckState.Checked)
    qtbot.waitUntil(lambda: len(sent) >= 1, timeout=60_000)
    tree.flush()
    assert tree.item("generator").checkState(0) == Qt.CheckState.Checked  # tri-state rolls up
    assert tree.frozen_scopes() == ("generator", "discriminator/out/bias")
    assert sent == [("generator", "discriminator/out/bias")]  # many item changes, one emission
    assert w.core.sent == []  # no run yet: the panels keep it for Start

    tree.filter_edit.setText("out/b")
    assert not tree.item("discriminator/out/bias").isHidden()
    assert tree.item("discriminator/dense_1").isHidden() and tree.item("generator/dense_1").isHidden()
    tree.filter_edit.clear()
    assert not tree.item("generator/dense_1").isHidden()

    w.experiment_panel.steps_spin.setValue(120)
    w.start()  # the ticks made before Start are the run's initial freeze
    config = w.core.requests[-1][1]
    assert config.freeze == ["generator", "discriminator/out/bias"] and config.steps == 120
    train(ui, w, 500)
    assert not w.running and w.store.last_step == 120
    assert w.status_panel.progress.isVisible() and w.status_panel.progress.value() == 120
    assert w.status_panel.state_label.text() == "Finished at step 120"

    tree.select_variable("discriminator/dense_2/kernel")
    assert w.plots.highlighted == "discriminator/dense_2/kernel"
    w.plots.variableClicked.emit("discriminator/dense_1/kernel")  # a click on a curve selects its row
    assert tree.tree.currentItem() is tree.item("discriminator/dense_1/kernel")
    assert w.plots.highlighted == "discriminator/dense_1/kernel"


def test_loading_state_menus_and_devices(ui, qtbot):
    w = ui.make(wait=False, fake=True)
    assert w.status_panel.state_label.text() == "Loading TensorFlow…"  # TensorFlow loads after the first paint
    assert w.scope_tree.tree.topLevelItem(0).text(0) == "Loading TensorFlow…"
    assert not w.start_action.isEnabled() and not w.step_action.isEnabled()
    ui.wait_prepared(w)
    assert [r[0] for r in w.core.requests] == ["load", "prepare"]
    devices = [w.experiment_panel.device_combo.itemData(i) for i in range(w.experiment_panel.device_combo.count())]
    assert devices[:2] == ["auto", "cpu"]
    assert w.status_panel.device_label.text() == "CPU"
    assert "synthetic stand-in" in w.experiment_panel.description.text()
    file_menu = w.menus.file_menu
    assert file_menu.title() == "&File"
    assert [a.text() for a in file_menu.actions() if a.text()][:2] == ["&Open Experiment…", "Open &Recent"]
    assert w.menus.quit_action.text() == "&Quit" and w.menus.export_actions.figure_action.shortcut().toString() == "Ctrl+E"
    help_menu = [a.menu() for a in w.menuBar().actions() if a.text() == "&Help"][0]
    help_menu.actions()[0].trigger()  # About opens without blocking
    about = [b for b in w.findChildren(QMessageBox) if b.windowTitle() == "About Freezeframe"]
    assert about and about[0].isVisible() and "Ctrl+R" in about[0].text()
    about[0].close()


STAND_IN_PROBE = r"""
import sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
from app.main_window import MainWindow
from tests.app.fake_service import FakeTrainingService
w = MainWindow(service_factory=FakeTrainingService, steps=30)
w.show()
w.load()
while w.prepared is None or w.busy:
    app.processEvents()
w.start()
w.core.train(100)
while w.running:
    app.processEvents()
print(w.store.last_step, "tensorflow" in sys.modules, "keras" in sys.modules)
w.close()
"""


def test_the_stand_in_needs_no_tensorflow(tmp_path):
    """Why these tests are fast: on the stand-in, a window prepares, trains and stops without TensorFlow."""
    import os
    import subprocess
    import sys
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "FREEZEFRAME_SETTINGS": str(tmp_path / "s.ini"),
           "PYTHONPATH": str(repo)}
    r = subprocess.run([sys.executable, "-c", STAND_IN_PROBE], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["30", "False", "False"]


def test_default_window_shows_the_state_column_and_hides_what_does_not_apply(ui, qtbot):
    """At the default size: the scope tree's value and State columns are in view (State used to be scrolled
    out), the BatchNormalization box is hidden for the ring (it has no BatchNormalization), the smoothing
    slider keeps a usable width when the plots column is made narrow."""
    from app.panels.scope_tree import STATE
    w = ui.make(fake=True)
    qtbot.waitExposed(w)
    tree = w.scope_tree.tree
    right = tree.header().sectionViewportPosition(STATE) + tree.columnWidth(STATE)
    assert 0 < right <= tree.viewport().width()
    assert not w.schedule_panel.stats_check.isVisible()
    w.splitter.setSizes([900, 500])
    w.plots.splitter.setSizes([300, 200])
    qtbot.wait(50)
    assert w.plots.smoothing_slider.width() >= 90


def test_a_long_state_is_cut_with_the_whole_in_its_tooltip_and_the_window_does_not_grow(ui, qtbot):
    """An attached run whose writer is gone said so with its resume command in the status bar's first
    field; the label only widens, so the window grew past a 1600-px screen for good."""
    from app.status import STATE_MAX_PX
    w = ui.make(fake=True)
    sp = w.status_panel
    width = w.minimumSizeHint().width()
    text = "Not training · attached · its process (pid 5292 on host vm) is gone after step 13,268 " + "x" * 300
    sp.set_state(text)
    assert sp.state_label.toolTip() == text and sp.state_label.text().endswith("…")
    assert sp.state_label.minimumWidth() <= STATE_MAX_PX + 40 and w.minimumSizeHint().width() <= max(width, 1200)
    sp.set_state("Training")
    assert sp.state_label.text() == "Training" and sp.state_label.toolTip() == "What training is doing"


def test_a_change_from_elsewhere_sets_only_its_panel(ui, qtbot):
    """A freeze from a shell reset every panel: a learning rate being typed (its send still debounced) went
    back to the old value and was never sent. Only the part that changed is set now."""
    from dataclasses import replace

    from PySide6.QtCore import Qt

    from training_core.runs.attach import Controls
    w = ui.make(fake=True)
    sp = w.schedule_panel
    c = Controls(freeze=[], schedule=sp.schedule(), lr={p: sp.lrs[p].value() for p in sp.phase_names})
    w.follower.show(c)
    sp.lrs["G"].setValue(3e-4)  # typed: not sent yet
    w.follower.show(replace(c, freeze=["generator/dense_1"]))
    assert sp.lrs["G"].value() == 3e-4
    assert w.scope_tree.item("generator/dense_1").checkState(0) == Qt.CheckState.Checked
    w.follower.show(replace(c, freeze=["generator/dense_1"], lr={**c.lr, "G": 5e-4}))  # the rate from elsewhere
    assert sp.lrs["G"].value() == 5e-4


def test_preparings_warnings_stay_in_view_under_the_description(ui, qtbot):
    """A warning found while preparing (variables no gradient reaches, a default model name) was only a
    passing status-bar line once the run started; it now stays under the experiment's description."""
    from dataclasses import replace

    from training_core.base import protocol as P
    w = ui.make(fake=True)
    info = w.session.prepared
    w.session.handle(P.Prepared(replace(info, description="A ring.", warnings=("phase G's loss has no gradient "
                                                                                "for 2 of its 6 variables",))))
    text = w.experiment_panel.description.text()
    assert text.startswith("A ring.") and "Warning: phase G's loss has no gradient for 2 of its 6 variables" in text
    w.session.handle(P.Prepared(replace(info, description="", warnings=())))
    assert w.experiment_panel.description.text() == "" and not w.experiment_panel.description.isVisible()


def _shown_whole(label, text: str) -> bool:
    """`label` shows all of `text` (not cut, its wrapped lines within the label's height and in the window)."""
    from PySide6.QtCore import QRect, Qt
    rect, window = label.contentsRect(), label.window()
    need = label.fontMetrics().boundingRect(QRect(0, 0, rect.width(), 1 << 20), Qt.TextFlag.TextWordWrap, text)
    bottom_right = label.mapTo(window, label.rect().bottomRight())
    return (label.isVisible() and label.text() == text and need.width() <= rect.width()
            and need.height() <= rect.height() and window.rect().contains(bottom_right))


@pytest.mark.parametrize("size", [(1366, 728), (1440, 900)])
def test_a_long_warning_a_refusal_and_the_description_are_shown_whole(ui, qtbot, size):
    """The tester's status bar read "…it now runs every 165 s, beside trainin" and "…the gate method (frozen
    gradients zeroed, momentum and deca" (QStatusBar's one-line message, gone 10 s later), and the shapes
    description "after 3,000 steps (85-190 s": the places the docs send users to for warnings and refusals."""
    import ast
    from pathlib import Path

    from training_core.base import events as E
    from training_core.experiment.gan import first_paragraph
    w = ui.make(fake=True)
    w.resize(*size)
    qtbot.waitExposed(w)
    w.status_panel.set_run_dir("/work/tester-files/runs/shapes-win")
    label = w.status_panel.note_label
    warning = ("metrics() took 8.23 s, more than its interval of 2 s (metrics_seconds); it now runs every 165 s, beside "
               "training, so that it takes at most 5% of the time")
    refusal = ("run.apply_gradients freezes exactly; the gate method (frozen gradients zeroed, momentum and decay still "
               "moving them) is for experiment files")
    for event in (E.Warning(step=2, message=warning), E.Rejected(step=6467, message=refusal)):
        w.session.track(event)
        qtbot.waitUntil(lambda: _shown_whole(label, f"Step {event.step}: {event.message}"), timeout=5000)
        assert w.status_panel.currentMessage() == f"Step {event.step}: {event.message}"
    w.status_panel.clearMessage()  # (the note's time is up): the state again, on one line
    state = w.status_panel.state_label
    qtbot.waitUntil(lambda: not label.isVisible() and _shown_whole(state, w.session.state_text), timeout=5000)
    assert state.lines == 1
    shapes = Path(__file__).resolve().parents[2] / "resources" / "experiments" / "shapes.py"
    text = first_paragraph(ast.get_docstring(ast.parse(shapes.read_text(encoding="utf-8"))))
    assert text.endswith("and sharper still by 6,000.")
    w.experiment_panel.set_description(text)
    qtbot.waitUntil(lambda: _shown_whole(w.experiment_panel.description, text), timeout=5000)


def test_start_reads_starting_and_is_off_while_a_command_line_start_waits_for_the_experiment(ui, qtbot):
    """`--example shapes --steps 3000` starts by itself once prepared; while "Preparing shapes…" took a minute,
    Start was enabled, and a user could not tell whether to press it. It reads "Starting…", off, until the run
    starts; a prepare that fails gives Start back to the user."""
    from tests.app.fake_service import FakeTrainingService

    class SlowPrepare(FakeTrainingService):
        """Prepares only when the test says (`release`): the window waits in "Preparing …"."""
        held: list = []

        def prepare(self, config) -> None:
            self.requests.append(("prepare", config))
            reports = self.sim.prepare(config)
            self._queue_reports(reports[:1])
            self.held = reports[1:]

        def release(self) -> None:
            self._queue_reports(self.held)

    w = ui.make(wait=False, service_factory=SlowPrepare)
    w.start_when_ready()
    qtbot.waitUntil(lambda: w.session.tf_ready and bool(w.busy), timeout=30_000)
    start = w.experiment_panel.run_buttons["start"]
    assert not start.isEnabled() and start.text() == "Starting…" and "by itself" in start.toolTip()
    assert not w.step_action.isEnabled()
    w.core.release()
    qtbot.waitUntil(lambda: w.running, timeout=30_000)
    assert start.text() == "Start" and not start.isEnabled()  # running: Start is off as ever, named as ever
    click(qtbot, w, "stop")
    ui.flush(w)
    assert start.isEnabled() and start.text() == "Start"

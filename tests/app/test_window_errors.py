"""Errors on the stand-in training service (no TensorFlow): a failed report shows one line and the details
in a dialog, the window stays usable, and Start works again once the cause is fixed. The same paths on
real training (a broken file, a NaN, an unwritable run directory, a killed process) are in
test_window_e2e.py."""
from __future__ import annotations

from app.settings import Settings
from training_core import Stop


def test_failed_preparation_shows_the_summary_and_details(ui, qtbot, tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("")
    w = ui.make(wait=False, fake=True, source=("file", str(path)), steps=60)
    summary = f"experiment file {path.name} raised ValueError: broken on purpose at line 3; fix it, then press Start"
    w.core.prepare_failures[("file", str(path.resolve()))] = (summary, "Traceback (most recent call last): ...")
    qtbot.waitUntil(lambda: w.last_error is not None and not w.busy, timeout=10_000)
    assert w.last_error == (summary, "Traceback (most recent call last): ...")
    box = w.error_dialog
    assert box.isVisible() and box.text() == summary and "Traceback" in box.detailedText()
    assert w.scope_tree.tree.topLevelItem(0).text(0) == "Could not prepare the experiment: fix it, then press Start"
    assert w.scope_tree.item("generator") is None and w.start_action.isEnabled()
    assert w.status_panel.state_label.text() == "Not prepared"
    assert str(path) in Settings().recent_files()  # remembered even though it failed: the user will fix it
    box.close()

    w.core.prepare_failures.clear()  # the fix
    w.start()  # prepares it afresh as part of the run
    config = w.core.requests[-1][1]
    assert config.experiment_file == str(path.resolve()) and config.freeze == []  # the panels show no experiment
    w.core.train(100)
    ui.flush(w)
    assert not w.running and w.store.last_step == 60
    assert w.experiment_panel.current_source() == ("file", str(path.resolve()))


def test_nan_shows_a_dialog_and_leaves_the_run_paused(ui, qtbot):
    w = ui.make(fake=True)
    w.start()
    w.core.train(2)
    w.core.nan("D")
    ui.flush(w)
    assert w.paused and "The loss of phase D became nan at step 2; training is paused" in w.last_error[0]
    assert "kind: nan" in w.last_error[1] and w.error_dialog.isVisible()
    assert w.status_panel.state_label.text() == "Paused (nan)"
    assert w.running and w.stop_action.isEnabled() and w.pause_action.text() == "Continue"
    w.error_dialog.close()
    w.stop()
    ui.flush(w)
    assert w.core.sent[-1] == Stop() and not w.running and w.status_panel.state_label.text() == "Stopped at step 2"


def test_run_that_fails_to_start_then_start_again(ui, qtbot, tmp_path):
    w = ui.make(fake=True, steps=30)
    w.core.run_failure = "run directory /x/run is not writable; choose another --run-dir"
    w.start()
    qtbot.waitUntil(lambda: w.last_error is not None and not w.running, timeout=10_000)
    assert w.last_error[0] == "run directory /x/run is not writable; choose another --run-dir"
    assert w.error_dialog.isVisible() and w.start_action.isEnabled()
    assert w.status_panel.run_dir_label.text() == "Run: –"  # no run directory was made
    w.error_dialog.close()
    w.start()  # the next run goes to the runs folder
    assert w.core.requests[-1][1].run_dir.startswith(str(tmp_path / "runs"))
    w.core.train(100)
    ui.flush(w)
    assert w.store.last_step == 30 and w.status_panel.run_dir.startswith(str(tmp_path / "runs"))


def test_missing_file_is_reported_and_forgotten(ui, qtbot, tmp_path):
    w = ui.make(fake=True)
    missing = tmp_path / "gone.py"
    assert not w.open_experiment(missing)
    assert w.last_error[0] == f"experiment file {missing} does not exist; check the path"
    assert w.experiment_panel.current_source() == ("example", "ring")
    assert str(missing) not in Settings().recent_files()


def test_a_dead_service_is_replaced(ui, qtbot):
    w = ui.make(fake=True)
    w.start()
    w.core.train(50)
    first = w.core
    first.die(-9)
    qtbot.waitUntil(lambda: w.core is not first, timeout=10_000)
    assert not w.running and first.closed
    assert "training process ended unexpectedly (killed by SIGKILL)" in w.last_error[0]
    ui.wait_prepared(w)
    assert [r[0] for r in w.core.requests] == ["load", "prepare"]
    w.start()
    w.core.train(20)
    ui.flush(w)
    assert w.running and w.store.last_step == 20

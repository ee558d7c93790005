"""Issue 12, the window's part: `--attach` / File → Attach to Run… on a headless run another process
trains, and File → Replay Run…. The windows run on the stand-in service (no training process of their
own); the run they watch is a real headless `main.py` training a tiny GAN. Two windows attached to one
run see every change either makes; controls are acknowledged in the status bar; detaching leaves the
run training; a replay started from the window reproduces the original's losses; an attached run, live or
finished, is drawn as the window's live run."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from tests.core.helpers import main_cmd, start, tiny_gan
from training_core.base import events as E
from training_core import read_scalars

TIMEOUT = 120_000


@pytest.fixture
def headless_run(tmp_path):
    run_dir = tmp_path / "server-run"
    proc = start(main_cmd("--headless", "--experiment", str(tiny_gan(tmp_path)), "--run-dir", str(run_dir),
                          "--deterministic", "--quiet"))
    try:
        yield run_dir, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _attached(ui, qtbot, run_dir):
    w = ui.make(fake=True)
    qtbot.waitUntil(lambda: (run_dir / "events.jsonl").is_file(), timeout=TIMEOUT)
    assert w.attach_run(run_dir)
    qtbot.waitUntil(lambda: w.scope_tree.item("generator/dense_1") is not None and w.store.last_step > 0,
                    timeout=TIMEOUT)
    return w


def _plotted(w) -> dict[str, np.ndarray]:
    """The steps the loss plot draws for each phase (its raw curves' x data)."""
    w.refresh()
    return {name.split("/")[1]: np.asarray(c.xData) for name, c in w.plots.losses.curves().items()
            if not name.endswith("/smoothed") and c.xData is not None}


def _detach_enabled(w) -> bool:
    """File → Detach as the menu shows it (its state is checked when the menu opens)."""
    menu = w.menus.file_menu
    menu.aboutToShow.emit()
    return next(a for a in menu.actions() if a.text() == "&Detach").isEnabled()


def _shows_the_record(w, run_dir) -> bool:
    recorded = read_scalars(run_dir)
    plotted = _plotted(w)
    return plotted.keys() == {"D", "G"} and all(
        np.array_equal(plotted[p], recorded[f"loss/{p}"].steps) for p in ("D", "G"))


def test_two_windows_attached_to_a_headless_run_steer_it_and_see_each_other(ui, qtbot, headless_run):
    run_dir, proc = headless_run
    a = _attached(ui, qtbot, run_dir)
    assert a.status_panel.state_label.text().startswith("Training · attached")
    qtbot.waitUntil(lambda: all(len(x) for x in _plotted(a).values()) and len(_plotted(a)) == 2, timeout=TIMEOUT)
    assert [e.label for e in a.review.runs.entries] == [run_dir.name]  # drawn as the live run, named as its dir
    assert a.running and not a.start_action.isEnabled() and a.stop_action.isEnabled()

    a.scope_tree.item("discriminator/dense_1").setCheckState(0, Qt.CheckState.Checked)  # the user ticks a scope
    freeze = ui.wait_event(a, "freeze", timeout=TIMEOUT)
    assert freeze.scopes == ["discriminator/dense_1"] and freeze.id in a.attachment.run.sent
    qtbot.waitUntil(lambda: f"freeze acknowledged at step {freeze.step:,}" in a.status_panel.state_label.text(),
                    timeout=TIMEOUT)

    b = _attached(ui, qtbot, run_dir)
    assert b.scope_tree.item("discriminator/dense_1").checkState(0) == Qt.CheckState.Checked  # the run's state
    edit = b.schedule_panel.lrs["G"].lineEdit()
    edit.selectAll()
    qtbot.keyClicks(edit, "5e-4")
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    lr = ui.wait_event(a, "lr", timeout=TIMEOUT)  # window a sees window b's change, and shows it
    assert (lr.phase, lr.value) == ("G", 5e-4) and lr.id in b.attachment.run.sent
    qtbot.waitUntil(lambda: a.schedule_panel.lrs["G"].value() == 5e-4, timeout=TIMEOUT)
    assert "lr G=0.0005" in [m.label for m in a.store.markers]
    assert not a.schedule_panel.stats_check.isVisibleTo(a)  # the tiny GAN has no BatchNormalization (showing
    # others' changes put the box back)
    qtbot.waitUntil(lambda: a.store.samples is not None and b.store.samples is not None, timeout=TIMEOUT)
    assert a.store.samples["kind"] == "points2d"

    assert _detach_enabled(a)
    a.attachment.detach()  # window a lets go; the run trains on, window b still sees it
    assert not a.running and not a.session.attached and not _detach_enabled(a)
    after = b.store.last_step
    qtbot.waitUntil(lambda: b.store.last_step > after + 100, timeout=TIMEOUT)

    b.stop()  # the Stop button of an attached window stops the run it watches
    qtbot.waitUntil(lambda: not b.running, timeout=TIMEOUT)
    assert proc.wait(60) == 0
    assert isinstance(b.store.stop, E.Stop) and b.store.stop.reason == "stopped" and b.store.stop.id
    assert b.status_panel.state_label.text() == f"Stopped at step {b.store.stop.step:,}"


def test_replay_run_from_the_window_reproduces_the_losses(ui, qtbot, headless_run, tmp_path):
    run_dir, proc = headless_run
    w = _attached(ui, qtbot, run_dir)
    w.scope_tree.item("generator/dense_10").setCheckState(0, Qt.CheckState.Checked)
    ui.wait_event(w, "freeze", timeout=TIMEOUT)
    qtbot.waitUntil(lambda: w.store.last_step > 300, timeout=TIMEOUT)
    w.stop()
    qtbot.waitUntil(lambda: not w.running, timeout=TIMEOUT)
    assert proc.wait(60) == 0

    assert w.replay_run(run_dir, tmp_path / "replayed")
    replaying = lambda: any(e.kind == "replay" for e in w.store.events)  # noqa: E731 - the window shows the replay
    qtbot.waitUntil(lambda: replaying() and w.store.stop is not None and not w.running, timeout=TIMEOUT)
    assert w.attachment.replay_process.wait(60) == 0
    original = read_scalars(run_dir)
    for phase in ("D", "G"):
        steps, _, values = w.store.loss(phase)
        assert np.array_equal(steps, original[f"loss/{phase}"].steps)
        assert np.array_equal(values, original[f"loss/{phase}"].values)
    qtbot.waitUntil(lambda: _shows_the_record(w, tmp_path / "replayed"), timeout=TIMEOUT)  # and draws them
    assert w.session.run_dir == str(tmp_path / "replayed") and w.store.stop.reason == "done"


def test_an_attached_window_follows_its_run_through_a_kill_and_a_resume(ui, qtbot, headless_run):
    """The server's run is killed and resumed with a new target and learning rate while a window watches:
    the window shows one timeline (the record read afresh after the cut) and the resumed settings."""
    run_dir, proc = headless_run
    w = _attached(ui, qtbot, run_dir)
    qtbot.waitUntil(lambda: w.store.last_step > 100, timeout=TIMEOUT)
    proc.kill()
    proc.wait(60)
    # killed on this host: its lock names a process that is gone, so the window stops calling it training
    qtbot.waitUntil(lambda: w.session.state_text.startswith("Not training"), timeout=TIMEOUT)
    assert f"--resume {run_dir}" in w.session.state_text
    # on a 1600-px screen (the window 1440 px wide) the status bar was cut exactly where it says how to resume
    w.resize(1440, 900)
    fix = f"resume it with python main.py --headless --resume {run_dir}"
    label = w.status_panel.state_label  # (re-laid out after the Run field gave way: its text follows its width)
    qtbot.waitUntil(lambda: label.text().endswith(fix), timeout=TIMEOUT)
    shown = label.text()
    assert w.session.state_text in (label.text(), label.toolTip())  # the whole line, wrapped or in its tooltip
    from PySide6.QtCore import QRect, Qt
    need = label.fontMetrics().boundingRect(QRect(0, 0, label.contentsRect().width(), 1 << 20),
                                            Qt.TextFlag.TextWordWrap, shown)  # (whole, wrapped: app/status.py)
    assert need.width() <= label.contentsRect().width() and need.height() <= label.contentsRect().height()
    from PySide6.QtCore import Qt
    before = (run_dir / "commands.jsonl").read_bytes() if (run_dir / "commands.jsonl").exists() else b""
    w.scope_tree.item("generator").setCheckState(0, Qt.CheckState.Checked)  # nothing would ever apply it
    qtbot.waitUntil(lambda: w.scope_tree.item("generator").checkState(0) == Qt.CheckState.Unchecked, timeout=TIMEOUT)
    assert ((run_dir / "commands.jsonl").read_bytes() if (run_dir / "commands.jsonl").exists() else b"") == before
    resumed = start(main_cmd("--headless", "--resume", str(run_dir), "--steps", "400", "--lr", "G=5e-4", "--quiet"))
    try:
        qtbot.waitUntil(lambda: w.store.stop is not None or not w.session.attached, timeout=TIMEOUT)
        assert resumed.wait(120) == 0
    finally:
        if resumed.poll() is None:
            resumed.kill()
        resumed.communicate()
    assert w.schedule_panel.lrs["G"].value() == 5e-4 and w.experiment_panel.steps_spin.value() == 400
    record = read_scalars(run_dir)
    for phase in ("D", "G"):
        steps, _, values = w.store.loss(phase)
        assert np.all(np.diff(steps) > 0) and np.array_equal(steps, record[f"loss/{phase}"].steps)
        assert np.array_equal(values, record[f"loss/{phase}"].values)


def test_attached_at_launch_before_tensorflow_loads(ui, qtbot, headless_run):
    """`--attach` attaches before the window's own training process has loaded TensorFlow: the load that
    follows leaves the attached run's scope tree and plots on screen (it used to replace the tree with
    "Preparing ring…" and forget the run's variables)."""
    run_dir, _ = headless_run
    qtbot.waitUntil(lambda: (run_dir / "events.jsonl").is_file(), timeout=TIMEOUT)
    w = ui.make(fake=True, wait=False)
    assert not w.session.tf_ready
    assert w.attach_run(run_dir)
    qtbot.waitUntil(lambda: w.session.tf_ready and not w.session.busy and w.store.last_step > 0, timeout=TIMEOUT)
    assert w.session.attached and w.session.prepared is not None
    assert w.scope_tree.item("generator/dense_1") is not None
    qtbot.waitUntil(lambda: len(_plotted(w)) == 2 and all(len(x) for x in _plotted(w).values()), timeout=TIMEOUT)


def test_attaching_to_a_finished_run_draws_all_of_it(ui, qtbot, tmp_path):
    """A run that ended before the window attached (a server's finished job): every recorded loss is drawn,
    and the window lets go of it at once."""
    run_dir = tmp_path / "finished"
    proc = start(main_cmd("--headless", "--experiment", str(tiny_gan(tmp_path)), "--run-dir", str(run_dir),
                          "--steps", "60", "--quiet"))
    assert proc.wait(300) == 0
    proc.communicate()
    w = ui.make(fake=True)
    assert w.attach_run(run_dir)
    qtbot.waitUntil(lambda: not w.session.attached and w.store.last_step == 60, timeout=TIMEOUT)
    qtbot.waitUntil(lambda: _shows_the_record(w, run_dir), timeout=TIMEOUT)
    assert w.status_panel.state_label.text() == "Finished at step 60"
    assert w.experiment_panel.steps_spin.value() == 60  # the run's target, not the window's "until stopped"
    files = w.plots.samples.files  # the run's own samples (a resumed run's directory used to stay in use)
    assert files and all(p.parent.parent == run_dir for _, p in files)


def test_attaching_to_something_that_is_not_a_run_says_so(ui, tmp_path):
    w = ui.make(fake=True)
    assert not w.attach_run(tmp_path)
    assert "has no events.jsonl" in w.last_error[0] and not w.session.attached


def test_an_attached_window_reads_an_old_records_resume_as_continue(ui, qtbot, tmp_path):
    """A record written before issue 23 ends a pause with kind `resume` (the un-pause, now `continue`): a
    window attached to it shows the run paused at its `pause` and training again after the old `resume`
    line (status bar, the Pause/Continue button, the session), as after a `continue`."""
    import json
    run_dir = tmp_path / "old-run"
    run_dir.mkdir()
    start = {"step": 0, "kind": "start", "time": 1.0, "phases": ["D", "G"], "experiment": "ring",
             "phase_variables": {"D": ["discriminator/dense/kernel"], "G": ["generator/dense/kernel"]},
             "variables": [{"path": p, "shape": [2, 2], "dtype": "float32", "trainable": True}
                           for p in ("discriminator/dense/kernel", "generator/dense/kernel")]}
    pause = {"step": 5, "kind": "pause", "time": 2.0, "reason": "user", "command": {"kind": "pause"}}
    events = run_dir / "events.jsonl"
    events.write_text("".join(json.dumps(d) + "\n" for d in (start, pause)), encoding="utf-8")
    w = ui.make(fake=True)
    assert w.attach_run(run_dir)
    button = w.experiment_panel.run_buttons["pause"]
    qtbot.waitUntil(lambda: w.session.paused and w.status_panel.state_label.text().startswith("Paused"),
                    timeout=TIMEOUT)
    assert button.text() == "Continue"
    with open(events, "a", encoding="utf-8") as f:  # as an earlier Freezeframe wrote the un-pause
        f.write(json.dumps({"step": 5, "kind": "resume", "time": 3.0, "command": {"kind": "resume"}}) + "\n")
    qtbot.waitUntil(lambda: not w.session.paused and button.text() == "Pause", timeout=TIMEOUT)
    assert isinstance(w.session.data.events[-1], E.Continue)
    assert w.status_panel.state_label.text().startswith("Training")
    assert not w.attachment.run.controls.paused


def _seeded_run(tmp_path, gan, name="seeded"):
    run_dir = tmp_path / name
    proc = start(main_cmd("--headless", "--experiment", str(gan), "--run-dir", str(run_dir), "--seed", "3",
                          "--freeze", "discriminator/dense_1", "--quiet"))
    return run_dir, proc


def test_an_attached_run_shows_its_experiment_and_seed_and_after_detach_start_trains_what_the_panels_show(
        ui, qtbot, tmp_path):
    """Attached to a run of a file with `--seed 3`, the panel read "ring (built-in)" and "Seed 0"; after
    Detach, Start was enabled for ring while the tree showed the GAN's ticked scopes, and the status bar read
    "Ended at step N" while the run trained on. The panel shows the record's experiment and seed; after
    Detach the window prepares that experiment with the tree's ticks, and Start trains it."""
    gan = tiny_gan(tmp_path)
    run_dir, proc = _seeded_run(tmp_path, gan)
    try:
        w = ui.make()  # ring, prepared by the window's own training process
        qtbot.waitUntil(lambda: (run_dir / "events.jsonl").is_file(), timeout=TIMEOUT)
        assert w.attach_run(run_dir)
        qtbot.waitUntil(lambda: w.scope_tree.item("generator/dense_1") is not None and w.store.last_step > 0,
                        timeout=TIMEOUT)
        panel = w.experiment_panel
        assert panel.current_source() == ("file", str(gan.resolve())) and panel.source_combo.currentText() == gan.name
        assert panel.seed_spin.value() == 3
        assert list(w.scope_tree.frozen_scopes()) == ["discriminator/dense_1"]

        w.attachment.detach()
        text = w.status_panel.state_label.text()
        assert text.startswith("Detached at step ") and f"the run goes on (pid {proc.pid})" in text, text
        assert not text.startswith("Ended")
        ui.wait_prepared(w)  # the window's own trainer of the run's experiment
        assert w.session.source == panel.current_source() == ("file", str(gan.resolve()))
        assert list(w.scope_tree.frozen_scopes()) == ["discriminator/dense_1"] and panel.seed_spin.value() == 3
        assert w.session.prepared.config.experiment_file == str(gan.resolve())
        assert w.status_panel.state_label.text().startswith("Detached at step ")
        assert proc.poll() is None  # the headless run trains on

        w.experiment_panel.steps_spin.setValue(20)
        w.start()
        ui.wait_finished(w, timeout=TIMEOUT)
        start_event = w.store.start
        assert start_event.experiment == gan.name or gan.stem in start_event.experiment
        assert start_event.freeze == ["discriminator/dense_1"] and w.store.last_step == 20
        from training_core.base.config import RunConfig
        cfg = RunConfig.read_toml(w.session.run_dir + "/config.toml")
        assert cfg.seed == 3 and cfg.experiment_file == str(gan.resolve())
    finally:
        proc.kill()
        proc.communicate()


def test_after_detach_from_a_run_whose_experiment_is_not_here_the_window_goes_back_to_its_own(ui, qtbot, tmp_path):
    """A server's run names a file this host does not have: after Detach the panel, the tree and Start are the
    window's own experiment again (the tree showed the run's scopes, Start would train the panel's)."""
    gan = tiny_gan(tmp_path)
    run_dir, proc = _seeded_run(tmp_path, gan, "elsewhere")
    try:
        w = ui.make(fake=True)
        qtbot.waitUntil(lambda: (run_dir / "events.jsonl").is_file(), timeout=TIMEOUT)
        gan.unlink()  # the file is on the server only
        assert w.attach_run(run_dir)
        qtbot.waitUntil(lambda: w.scope_tree.item("generator/dense_10") is not None, timeout=TIMEOUT)  # the run's
        assert w.experiment_panel.current_source() == ("file", str(gan.resolve()))
        w.attachment.detach()
        ui.wait_prepared(w)
        assert w.session.source == w.experiment_panel.current_source() == ("example", "ring")
        assert w.scope_tree.item("generator/dense_10") is None and w.scope_tree.item("generator/dense_2") is not None
        assert list(w.scope_tree.frozen_scopes()) == [] and w.start_action.isEnabled()
        assert w.session.prepared.config.example == "ring"
    finally:
        proc.kill()
        proc.communicate()


def test_step_of_an_attached_run_does_not_wait_for_the_windows_own_tensorflow(ui, qtbot, tmp_path, monkeypatch):
    """Attached at launch on a busy machine, the first Pause greyed Step out (Pause and Stop were on): Step
    waited for the window's own service to report TensorFlow loaded, a report an attached run never needs and
    one that can come late or never (here: it never comes). A Step that would start a run of the window's own
    still waits for it."""
    import json

    from tests.app.fake_service import FakeTrainingService
    from training_core import Step
    monkeypatch.setattr(FakeTrainingService, "load", lambda self: self.requests.append(("load",)))
    run_dir = tmp_path / "paused-run"
    run_dir.mkdir()
    start = {"step": 0, "kind": "start", "time": 1.0, "phases": ["D", "G"], "experiment": "ring",
             "phase_variables": {"D": ["discriminator/dense/kernel"], "G": ["generator/dense/kernel"]},
             "variables": [{"path": p, "shape": [2, 2], "dtype": "float32", "trainable": True}
                           for p in ("discriminator/dense/kernel", "generator/dense/kernel")]}
    pause = {"step": 5, "kind": "pause", "time": 2.0, "reason": "user", "command": {"kind": "pause"}}
    (run_dir / "events.jsonl").write_text("".join(json.dumps(d) + "\n" for d in (start, pause)), encoding="utf-8")
    w = ui.make(fake=True, wait=False)
    assert not w.step_action.isEnabled()  # nothing to step, and no TensorFlow to start a run with
    assert w.attach_run(run_dir)
    qtbot.waitUntil(lambda: w.session.paused and w.experiment_panel.run_buttons["pause"].text() == "Continue",
                    timeout=TIMEOUT)
    assert not w.session.tf_ready and w.step_action.isEnabled() and w.experiment_panel.run_buttons["step"].isEnabled()
    w.experiment_panel.run_buttons["step"].click()
    qtbot.waitUntil(lambda: (run_dir / "commands.jsonl").is_file()
                    and '"step"' in (run_dir / "commands.jsonl").read_text(encoding="utf-8"), timeout=TIMEOUT)
    assert Step(1) not in w.core.sent  # it went to the attached run, not to the window's own service

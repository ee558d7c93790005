"""The window attached to a run that a `Monitor` records: a keras.io-style GAN trained by `fit()` in a
process of its own (tests/core/keras_gan.py), watched and steered by the real window (offscreen) through the
run directory, as `--attach` does for a headless run.

Why: the Monitor promises that code which is no experiment file becomes a Freezeframe run the window can
attach to. The window must find its scope tree, losses and samples, and its Pause, learning-rate and Stop
controls must be obeyed by `fit()` (a pause blocks the batch loop; Stop ends `fit()` with the record closed).
The same for a hand-written `start_run` loop: the window never imports its script, and its pause, learning
rate and freeze ticks take effect at the paused step (a frozen layer's ‖ΔW‖ exactly 0 after), while a model no
phase trains (an EMA copy) offers no tick, and a freeze of it sent anyway is refused.
"""
from __future__ import annotations

import sys

from PySide6.QtCore import Qt

from app.panels.scope_tree import STATE, UNTRAINED
from training_core.base.monitored_controls import FIT_FREEZE, FIT_RATIO, LOOP_METHOD
from tests.core.helpers import REPO, start

TIMEOUT = 120_000


def _attached(ui, run_dir, scope: str, steps: int):
    """A window (on the stand-in service) attached to the run being written in `run_dir`, once its scope tree
    shows `scope` and its record is past `steps` steps."""
    w = ui.make(fake=True)
    ui.qtbot.waitUntil(lambda: (run_dir / "events.jsonl").is_file(), timeout=TIMEOUT)
    assert w.attach_run(run_dir)
    ui.qtbot.waitUntil(lambda: w.scope_tree.item(scope) is not None and w.store.last_step > steps, timeout=TIMEOUT)
    return w


def _type_rate(qtbot, w, phase: str, text: str) -> None:
    """The user types a learning rate for `phase` in the schedule panel and presses Return."""
    edit = w.schedule_panel.lrs[phase].lineEdit()
    edit.selectAll()
    qtbot.keyClicks(edit, text)
    qtbot.keyClick(edit, Qt.Key.Key_Return)


def test_the_window_attaches_to_a_monitored_fit_and_pauses_sets_a_rate_and_stops_it(ui, qtbot, tmp_path):
    run_dir = tmp_path / "fit-run"
    proc = start([sys.executable, "-m", "tests.core.keras_gan", str(run_dir), "2000"], cwd=REPO)
    try:
        w = _attached(ui, run_dir, "discriminator/dense_1", 20)
        assert w.store.phases == ["discriminator", "generator"]  # the losses from fit()'s logs, by sub-model
        # fit()'s train_step cannot be frozen from outside, nor its method or ratio changed: no box to tick, the
        # method and ratio boxes off, each saying why (they looked live and were refused at every use)
        for path in ("discriminator", "discriminator/dense_1", "discriminator/dense_1/kernel"):
            item = w.scope_tree.item(path)
            assert item.data(0, Qt.ItemDataRole.CheckStateRole) is None, path  # (no box drawn, not a greyed one)
            assert not item.flags() & Qt.ItemFlag.ItemIsUserCheckable and FIT_FREEZE in item.toolTip(0), path
        assert w.scope_tree.parentWidget().title() == "Scopes — this run cannot freeze (hover a row for why)"
        assert not w.schedule_panel.method_combo.isEnabled() and w.schedule_panel.method_combo.toolTip() == FIT_FREEZE
        for p in w.store.phases:
            assert not w.schedule_panel.steps[p].isEnabled() and w.schedule_panel.steps[p].toolTip() == FIT_RATIO
        assert w.schedule_panel.lrs["discriminator"].isEnabled()  # its learning rates do change
        qtbot.waitUntil(lambda: w.status_panel.phase_label.text() != "Phase –", timeout=TIMEOUT)
        assert w.status_panel.phase_label.text() == "Phase all (fit()'s train_step)"  # not "Phase discriminator"
        qtbot.waitUntil(lambda: w.store.samples is not None, timeout=TIMEOUT)  # sample(model), asked for
        assert w.store.samples["kind"] == "points2d"

        qtbot.mouseClick(w.experiment_panel.run_buttons["pause"], Qt.MouseButton.LeftButton)
        pause = ui.wait_event(w, "pause", timeout=TIMEOUT)
        assert pause.id in w.attachment.run.sent
        # absence, by flushing: a sample request sent after the pause is applied at the paused step
        asked = w.attachment.run.request_samples()
        qtbot.waitUntil(lambda: w.attachment.run.sent[asked].step is not None, timeout=TIMEOUT)
        assert w.attachment.run.sent[asked].step == pause.step and w.store.last_step == pause.step

        _type_rate(qtbot, w, "discriminator", "5e-4")
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


#: a user's hand-written loop with start_run (it trains until stopped, or to argv[2] steps); imported instead of
#: run (`__name__` is not "__main__"), as the window's training process once did, it leaves a marker file
LOOP = '''
import sys
sys.path.insert(0, {repo!r})
if __name__ != "__main__":
    open({marker!r}, "a").write(__name__ + "\\n")
import keras
import tensorflow as tf
from training_core.monitor import start_run

g = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, name="h"), keras.layers.Dense(2, name="out")],
                     name="generator")
opt = keras.optimizers.Adam(1e-3)
run = start_run(sys.argv[1], models={{"generator": g}}, phases={{"G": (opt, g)}}, resume=True, quiet=True,
                steps=int(sys.argv[2]) if len(sys.argv) > 2 else None, checkpoint_every=50)


@tf.function
def step():
    x = run.rng.normal((16, 2))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(g(x) - x))
    run.apply_gradients("G", opt, tape.gradient(loss, g.trainable_variables), g.trainable_variables)
    return loss


with run:
    for s in run.steps():
        run.log(s, {{"G": step()}})
'''


def _loop_script(tmp_path):
    marker = tmp_path / "imported.txt"
    script = tmp_path / "my_loop.py"
    script.write_text(LOOP.format(repo=str(REPO), marker=str(marker)))
    return script, marker


def _flush_service(ui, w) -> None:
    """Every request the window made of its training process is done: a prepare asked now reports after them
    (jobs run in order), so a script imported by an earlier one has left its marker by then."""
    from training_core import RunConfig
    got: list = []
    w.core.reports.prepared.connect(got.append)
    w.controller.prepare(RunConfig(example="ring", intra_op_threads=1))
    ui.qtbot.waitUntil(lambda: any(i.config.example == "ring" for i in got) and not w.session.busy, timeout=TIMEOUT)


def _attached_at_launch(ui, qtbot, run_dir):
    """As `python main.py --attach RUN_DIR`: the real window attaches before its training process loads
    TensorFlow, then that process loads."""
    from training_core import read_events
    qtbot.waitUntil(lambda: any(e.kind == "start" for e in read_events(run_dir)), timeout=TIMEOUT)
    w = ui.make(wait=False)
    assert w.attach_run(run_dir)
    qtbot.waitUntil(lambda: w.session.tf_ready and not w.session.busy, timeout=TIMEOUT)
    return w


def _says_its_script_trains_it(w, script) -> None:
    why = f"{script.name} trains this run itself (training_core.monitor): run your script again with " \
          "start_run(..., resume=True) to continue"
    assert w.session.start_blocked == why
    assert not w.start_action.isEnabled() and w.start_action.toolTip() == f"Start is off: {why}"
    assert why in w.experiment_panel.description.text()
    assert w.scope_tree.item("generator/h") is not None  # the record's variables, not "Preparing my_loop.py…"


def test_attached_to_a_monitored_loop_that_stops_the_window_never_imports_its_script(ui, qtbot, tmp_path):
    """The tester's D1: attached to a start_run loop and stopping it, the window's training process imported
    the script, whose start_run(resume=True) then resumed the run and trained it on, unseen. The window
    shows the run from its record, Start says the script trains it, and after the stop nothing runs it. D6:
    a freeze method the run rejects goes back to the run's in the method box."""
    from training_core import read_events
    script, marker = _loop_script(tmp_path)
    run_dir = tmp_path / "loop-run"
    proc = start([sys.executable, str(script), str(run_dir)])
    try:
        w = _attached_at_launch(ui, qtbot, run_dir)
        qtbot.waitUntil(lambda: w.store.last_step > 20 and w.scope_tree.item("generator/h") is not None,
                        timeout=TIMEOUT)
        _says_its_script_trains_it(w, script)

        combo = w.schedule_panel.method_combo  # a loop freezes exactly: the box is off, saying why
        assert not combo.isEnabled() and combo.toolTip() == LOOP_METHOD
        assert w.schedule_panel.steps["G"].isEnabled()  # (a loop's ratio: refused only if it never asks)
        combo.setCurrentIndex(combo.findData("gate"))  # sent anyway (as a command file can): the run refuses it
        rejected = ui.wait_event(w, "rejected", timeout=TIMEOUT)
        assert rejected.id in w.attachment.run.sent and "apply_gradients freezes exactly" in rejected.message
        qtbot.waitUntil(lambda: w.schedule_panel.method() == "exact", timeout=TIMEOUT)
        assert combo.currentText() == "exact"

        w.stop()
        qtbot.waitUntil(lambda: not w.session.attached, timeout=TIMEOUT)  # the run's `stop`: the window lets go
        assert proc.wait(120) == 0
        _flush_service(ui, w)
        assert not marker.exists()  # the script was never imported by the window's training process
        kinds = [e.kind for e in read_events(run_dir)]
        assert kinds[-1] == "stop" and "resumed" not in kinds  # nothing trained it after the stop
        assert not w.session.running
        _says_its_script_trains_it(w, script)
        assert w.session.state_text == f"Stopped at step {w.store.last_step:,} · {w.session.start_blocked}"
        assert w.status_panel.state_label.text().endswith("run your script again with start_run(..., resume=True) "
                                                          "to continue")  # the fix is kept whole
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_attached_to_a_finished_monitored_loop_the_window_never_imports_its_script(ui, qtbot, tmp_path):
    """A loop that reached its step target: the window ran the script twice (a 'pass --steps N' dialog and
    'Could not prepare the experiment'). It shows the finished run; Start says the script trains it."""
    script, marker = _loop_script(tmp_path)
    run_dir = tmp_path / "done-run"
    proc = start([sys.executable, str(script), str(run_dir), "30"])
    assert proc.wait(300) == 0, proc.communicate()[1]
    proc.communicate()
    w = _attached_at_launch(ui, qtbot, run_dir)
    qtbot.waitUntil(lambda: not w.session.attached and w.store.last_step == 30, timeout=TIMEOUT)
    _flush_service(ui, w)
    assert not marker.exists() and w.last_error is None
    _says_its_script_trains_it(w, script)
    assert w.session.state_text == f"Finished at step 30 · {w.session.start_blocked}"


#: LOOP with an EMA copy of its generator, in models= and moved by the loop's own assign (no phase trains it),
#: and a BatchNormalization whose statistics the loop's forward pass moves; at its end it writes its optimizer's
#: learning rate to RUN_DIR.lr, what the window's rate must have become
EMA_LOOP = LOOP.replace('keras.layers.Dense(2, name="out")],',
                        'keras.layers.Dense(2, name="out"), keras.layers.BatchNormalization(name="bn")],').replace(
    "tf.square(g(x) - x)", "tf.square(g(x, training=True) - x)").replace("opt = keras.optimizers.Adam(1e-3)\n", """opt = keras.optimizers.Adam(1e-3)
ema = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, name="h"), keras.layers.Dense(2, name="out")],
                       name="generator_ema")
""").replace('models={{"generator": g}}', 'models={{"generator": g, "generator_ema": ema}}').replace(
    "checkpoint_every=50)", "checkpoint_every=50, var_every=2)").replace("    return loss\n", """    for e, v in zip(ema.weights, g.weights):
        e.assign(0.9 * e + 0.1 * v)
    return loss
""") + 'open(sys.argv[1] + ".lr", "w").write(repr(float(opt.learning_rate)))\n'


def test_the_window_pauses_a_monitored_loop_sets_its_rate_and_freezes_a_scope_exactly(ui, qtbot, tmp_path):
    """The window steering a start_run loop beyond Stop: paused, the loop blocks at its boundary; a learning
    rate typed in and a scope ticked in the tree are applied at the paused step (the optimizer's rate is the
    one typed; the ticked layer's ‖ΔW‖ is exactly 0 at every measured step after it, the rest still moves);
    a ratio the loop refuses goes back in its box each time (the second time it stayed); the EMA copy no phase trains, and a statistic, have no box to tick, and a freeze of the EMA sent anyway is
    refused, said in the status bar."""
    from training_core import read_events
    from training_core.rundir.varstore import read_variables
    script, run_dir = tmp_path / "ema_loop.py", tmp_path / "ema-run"
    script.write_text(EMA_LOOP.format(repo=str(REPO), marker=str(tmp_path / "imported.txt")))
    for part in ('"generator_ema": ema', "var_every=2", "e.assign(0.9 * e", 'BatchNormalization(name="bn")',
                 "g(x, training=True)"):
        assert part in script.read_text()
    proc = start([sys.executable, str(script), str(run_dir)])
    try:
        w = _attached(ui, run_dir, "generator_ema/h", 10)

        qtbot.mouseClick(w.experiment_panel.run_buttons["pause"], Qt.MouseButton.LeftButton)
        pause = ui.wait_event(w, "pause", timeout=TIMEOUT)
        ratio = w.schedule_panel.steps["G"]  # paused, a ratio the loop refuses (it never asks run.next_phase())
        for n in (1, 2):                       # goes back in its box, each time (the second time it stayed "3":
            ratio.setValue(3)                  # nothing had changed since the first)
            ratio.editingFinished.emit()
            qtbot.waitUntil(lambda: len([e for e in w.store.events if e.kind == "rejected"]) == n, timeout=TIMEOUT)
            refused = ui.wait_event(w, "rejected", timeout=TIMEOUT)
            assert refused.id in w.attachment.run.sent and refused.step == pause.step
            assert "run.next_phase()" in refused.message
            assert ratio.value() == 1, n  # (set in the same poll that read the refusal)
        _type_rate(qtbot, w, "G", "2e-4")
        lr = ui.wait_event(w, "lr", timeout=TIMEOUT)
        w.scope_tree.item("generator/h").setCheckState(0, Qt.CheckState.Checked)  # the user ticks a layer
        freeze = ui.wait_event(w, "freeze", timeout=TIMEOUT)
        assert (lr.phase, lr.value, lr.step) == ("G", 2e-4, pause.step) and lr.id in w.attachment.run.sent
        assert (freeze.scopes, freeze.step) == (["generator/h"], pause.step) and freeze.id in w.attachment.run.sent

        ema = w.scope_tree.item("generator_ema")  # what no phase trains: no box to tick, and the row says why
        assert ema.data(0, Qt.ItemDataRole.CheckStateRole) is None and not ema.flags() & Qt.ItemFlag.ItemIsUserCheckable
        assert ema.text(STATE) == UNTRAINED and "no phase trains it" in ema.toolTip(0)
        stat = w.scope_tree.item("generator/bn/moving_mean")  # a statistic: the loop would refuse its freeze too
        assert not stat.flags() & Qt.ItemFlag.ItemIsUserCheckable and stat.text(STATE) == UNTRAINED
        assert w.scope_tree.item("generator/bn/gamma").flags() & Qt.ItemFlag.ItemIsUserCheckable
        w.scope_tree.freezeChanged.emit(("generator/h", "generator_ema"))  # sent anyway (as a command file can)
        qtbot.waitUntil(lambda: len([e for e in w.store.events if e.kind == "rejected"]) == 3, timeout=TIMEOUT)
        rejected = ui.wait_event(w, "rejected", timeout=TIMEOUT)
        assert rejected.message.startswith("cannot freeze 'generator_ema': no phase trains it")
        assert w.status_panel.currentMessage() == f"Step {pause.step}: {rejected.message}"
        assert w.scope_tree.frozen_scopes() == ("generator/h",)  # the run's freeze set, still shown
        assert w.store.last_step == pause.step  # paused: the loop blocked at its boundary all along

        qtbot.mouseClick(w.experiment_panel.run_buttons["pause"], Qt.MouseButton.LeftButton)  # Continue
        ui.wait_event(w, "continue", timeout=TIMEOUT)
        qtbot.waitUntil(lambda: w.store.last_step > pause.step + 10, timeout=TIMEOUT)
        w.stop()
        qtbot.waitUntil(lambda: w.store.stop is not None, timeout=TIMEOUT)
        assert proc.wait(120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert abs(float((tmp_path / "ema-run.lr").read_text()) - 2e-4) < 1e-9  # the optimizer's own rate, as typed (float32)
    assert [e.scopes for e in read_events(run_dir) if e.kind == "freeze"] == [["generator/h"]]
    (rows,) = read_variables(run_dir)  # phase G's: the EMA copy has no ‖ΔW‖ column, no phase updates it
    assert not any(p.startswith("generator_ema") for p in rows.paths)
    after = rows.steps > pause.step
    assert after.sum() >= 3 and (rows.steps <= pause.step).sum() >= 3
    for j, path in enumerate(rows.paths):
        if path.startswith("generator/h/"):
            assert (rows.update_norm[after, j] == 0).all() and rows.frozen[after, j].all(), path
            assert (rows.update_norm[~after, j] > 0).all() and not rows.frozen[~after, j].any(), path
        else:
            assert (rows.update_norm[after, j] > 0).all(), path

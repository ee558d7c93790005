"""The window's training process killed while the user steers it: the edits it never applied are taken back
(the panels show what the run did, from its record), the status bar says how the process ended and at which
step, the record stays, and the next Start trains with the settings shown."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from PySide6.QtCore import Qt

from training_core import read_events
from training_core.runs.attach import Controls


def shown(w) -> tuple:
    """What the panels show: the freeze set, the schedule and the learning rates."""
    sp = w.schedule_panel
    return tuple(w.scope_tree.frozen_scopes()), sp.schedule()["ratio"], sp.learning_rates()


def applied(c: Controls) -> tuple:
    return tuple(c.freeze), list(c.schedule["ratio"]), {p: float(v) for p, v in c.lr.items()}


def test_edits_a_killed_process_never_applied_are_taken_back(ui, qtbot):
    """The process is stopped (SIGSTOP) so that what the user changes next is sent and never applied, then
    killed. Before, the panels kept those edits (a rate the run never had), and once the new process had
    prepared they showed the experiment's own settings: neither what the run did nor what the user chose."""
    w = ui.make(steps=None)
    sp, tree = w.schedule_panel, w.scope_tree
    sp.lrs["D"].setValue(sp.lrs["D"].value() / 2)  # the run starts with settings of its own
    tree.item("generator/dense_1").setCheckState(0, Qt.CheckState.Checked)
    w.start()
    ui.wait_steps(w, 20)
    sp.steps["D"].setValue(sp.steps["D"].value() + 1)  # a change the run applies
    sp.flush()
    ratio = sp.schedule()["ratio"]
    ui.wait_event(w, "ratio")
    ui.flush(w)
    first = w.core
    run_dir = Path(w.status_panel.run_dir)
    os.kill(first.process.pid, signal.SIGSTOP)  # it reads nothing more: what is sent from here is never applied
    sp.lrs["G"].setValue(sp.lrs["G"].value() * 4)
    sp.steps["G"].setValue(sp.steps["G"].value() + 2)
    sp.flush()
    tree.item("discriminator/out/bias").setCheckState(0, Qt.CheckState.Checked)
    tree.flush()
    edited = shown(w)
    os.kill(first.process.pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: w.core is not first, timeout=60_000)

    record = read_events(run_dir)  # kept, and read as any record is
    assert any(e.kind == "start" for e in record) and not any(e.kind == "stop" for e in record)
    did = applied(Controls.of(record))
    assert did[1] == ratio and did != edited  # the acknowledged change is in it, the ones in flight are not
    # at once, before the new process has loaded TensorFlow (the tree waits for it, as at any loading)
    assert shown(w)[1:] == did[1:] and w.scope_tree.item("generator/dense_1") is None
    state = w.status_panel.state_label.full
    step = f"{w.session.status.step:,}"
    assert state.startswith(f"Training process killed by SIGKILL at step {step}; its record is kept"), state
    assert "killed by SIGKILL" in w.last_error[0]

    ui.wait_prepared(w)  # the new process prepared the experiment: the panels still show the run's settings
    assert shown(w) == did
    assert w.status_panel.state_label.full == f"Training process killed by SIGKILL at step {step}; its record is kept"
    assert w.status_panel.run_dir == str(run_dir)

    w.start()  # the next run starts from what is shown
    ui.wait_event(w, "start")
    ui.flush(w)  # (a reused trainer gets the panels' settings as commands right after its start)
    assert applied(Controls.of(w.store.events)) == did
    w.stop()
    ui.wait_finished(w)
    assert w.status_panel.state_label.full.startswith("Stopped at step")

"""The window's state model without Qt or TensorFlow: protocol reports in, one answer for each question
the window asks (running, paused and why, the run directory, the state text, each variable's state)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from training_core import RunConfig, Status, VarInfo, build_scope_tree
from training_core.base import commands as C, events as E
from training_core.base import protocol as P
from training_core.base.metrics import MetricsBatch, PhaseBlock
from training_core.runs import RunData, Session, VariableStates
from training_core.runs.session import nan_message

from .synthetic import RING_VARS, SimulatedTrainer, prepared_info


class Recorder:
    """Every signal a session emitted, in order, as (name, args)."""

    NAMES = ("state_changed", "devices_loaded", "experiment_prepared", "problem", "note", "run_dir_changed",
             "data_cleared", "run_started", "run_finished")

    def __init__(self, session: Session) -> None:
        self.seen: list[tuple[str, tuple]] = []
        for name in self.NAMES:
            getattr(session, name).connect(lambda *a, n=name: self.seen.append((n, a)))

    def named(self, name: str) -> list[tuple]:
        return [a for n, a in self.seen if n == name]


def feed(session: Session, reports: list) -> None:
    for r in reports:
        session.handle(r)


@pytest.fixture
def ready() -> tuple[Session, SimulatedTrainer, Recorder]:
    s, sim = Session(("example", "ring")), SimulatedTrainer()
    rec = Recorder(s)
    assert s.state_text == "Loading TensorFlow…" and not s.can_start
    s.loading()
    feed(s, sim.load() + sim.prepare(RunConfig(example="ring")))
    return s, sim, rec


def test_loading_then_prepared(ready):
    s, _, rec = ready
    assert s.tf_ready and s.devices == ["cpu"] and rec.named("devices_loaded") == [(["cpu"],)]
    assert s.prepared is not None and s.state_text == "Ready" and s.can_start
    (info, rebuild), = rec.named("experiment_prepared")
    assert rebuild and info.phase_names == ["D", "G"]
    s.handle(P.Busy("Preparing ring…"))
    assert s.state_text == "Preparing ring…"  # busy wins over everything


def test_run_pause_step_continue_stop(ready):
    s, sim, rec = ready
    s.begin_run()
    assert s.running and s.state_text == "Training" and not s.can_start and rec.named("data_cleared")
    feed(s, sim.run(RunConfig(run_dir="/tmp/x/run0")) + sim.train(30))
    assert s.run_dir == "/tmp/x/run0" and rec.named("run_dir_changed")[-1] == ("/tmp/x/run0",)
    assert s.data.last_step == 30 and s.status.step == 30
    feed(s, sim.command(C.Pause()))
    assert s.paused and s.pause_reason == "user" and s.state_text == "Paused"
    feed(s, sim.command(C.Step(3)))
    assert not s.paused  # a Step trains: the session says so until the trainer pauses again
    feed(s, sim.train(10))
    assert s.paused and s.pause_reason == "step" and s.state_text == "Paused (step)" and s.data.last_step == 33
    feed(s, sim.command(C.Continue()) + sim.train(5) + sim.command(C.Stop()))
    assert not s.running and not s.paused and s.state_text == "Stopped at step 38" and s.can_start
    assert rec.named("run_finished")[-1][0].step == 38
    assert s.run_dir == "/tmp/x/run0"  # the finished run's directory stays shown


def test_paused_comes_from_events_not_from_status(ready):
    s, sim, _ = ready
    s.begin_run()
    feed(s, sim.run(RunConfig()))
    s.handle(P.StatusChanged(Status(step=3, paused=True, running=True)))
    assert not s.paused and s.status.step == 3  # a status carries numbers only
    feed(s, sim.train(2) + sim.nan("G"))
    assert s.paused and s.state_text == "Paused (nan)"


def test_nan_warning_and_failures_become_problems_and_notes(ready):
    s, sim, rec = ready
    s.begin_run()
    feed(s, sim.run(RunConfig()) + sim.train(4) + sim.nan("D"))
    (summary, detail), = rec.named("problem")
    assert "phase D became nan at step 4" in summary and "Lower phase D's learning rate" in summary
    assert (summary, detail) == nan_message(s.data.events[-2])
    s.handle(P.Emitted(E.Warning(step=4, message="every phase has all its scopes frozen")))
    feed(s, sim.command(C.Step(0)))
    assert rec.named("note") == [("Step 4: every phase has all its scopes frozen",),
                                 ("Step 4: step count must be >= 1, got 0",)]
    s.handle(P.Failed("run directory x is not writable; choose another --run-dir", "trace"))
    assert rec.named("problem")[-1] == ("run directory x is not writable; choose another --run-dir", "trace")
    s.handle(object())
    assert rec.named("problem")[-1][0] == "an unknown report from training was ignored: object"


def test_a_nan_in_two_phases_is_one_dialog_until_training_goes_on(ready):
    """Both phases' losses can go non-finite in one batch: the trainer reports each (and pauses once); the
    window used to open a dialog per report, and the second stayed up after the first's roll-back."""
    s, sim, rec = ready
    s.begin_run()
    feed(s, sim.run(RunConfig()) + sim.train(4))
    s.handle(P.Emitted(E.Nan(step=4, phase="D", at_step=3, value="inf")))
    s.handle(P.Emitted(E.Nan(step=4, phase="G", at_step=4, value="nan")))
    feed(s, sim._pause("nan"))  # the trainer paused at the first
    (summary, _), = rec.named("problem")
    assert "phase D became inf at step 3" in summary
    assert rec.named("note") == [("Step 4: the loss of phase G became nan too",)]
    assert [m.label for m in s.data.markers][:2] == ["Inf in D", "NaN in G"]
    feed(s, sim.command(C.Continue()) + sim.train(2) + sim.nan("G"))  # training went on: a new incident
    assert len(rec.named("problem")) == 2 and "phase G became nan at step 6" in rec.named("problem")[-1][0]


def test_run_that_never_started_and_a_lost_service(ready):
    s, _, _ = ready
    s.begin_run()
    feed(s, [P.Busy(""), P.RunStarted("/nowhere/run"), P.Failed("cannot write", ""), P.RunFinished(None)])
    assert not s.running and s.run_dir == "" and s.last_run is None and s.state_text == "Ready"
    s.service_lost()
    assert not s.tf_ready and s.prepared is None and s.state_text == "Loading TensorFlow…"


def test_switching_experiment_drops_stale_preparations(ready):
    s, sim, rec = ready
    assert s.choose(("file", "/abs/mine.py"))
    assert s.prepared is None and s.state_text == "Not prepared"
    s.handle(P.Prepared(prepared_info(RunConfig(example="ring"))))  # the old choice, arriving late
    assert s.prepared is None
    feed(s, sim.prepare(RunConfig(example=None, experiment_file="/abs/mine.py")))
    assert s.prepared.config.experiment_file == "/abs/mine.py"
    s.begin_run()
    assert not s.choose(("example", "digits")) and s.source == ("file", "/abs/mine.py")  # not mid-run
    again = prepared_info(RunConfig(example=None, experiment_file="/abs/mine.py"))
    s.handle(P.Prepared(again))  # same variables, mid-run: the tree and schedule are left as they are
    assert rec.named("experiment_prepared")[-1] == (again, False)


def _variable_states(session: Session) -> dict:
    states = session.variable_states()
    assert states is not None and session.variable_states() is None  # unchanged: nothing recomputed
    return states


def test_variable_states_frozen_partly_leak_leaked(ready):
    s, sim, _ = ready
    s.begin_run()
    feed(s, sim.run(RunConfig()) + sim.train(10) + sim.command(C.SetFreeze(("generator/dense_1",))) + sim.train(10))
    st = _variable_states(s)
    assert st["generator/dense_1/kernel"].state == "frozen" and st["generator/dense_1/kernel"].value == 0.0
    assert st["generator/dense_1"].state == "frozen" and st["generator"].state == "partly"
    assert st["generator"].tip == "2 of 6 variables frozen" and st["discriminator"].state == ""
    assert st["generator/dense_2/kernel"].state == "" and st["generator/dense_2/kernel"].value > 0
    assert st["generator"].value == max(st[v.path].value for v in RING_VARS if v.path.startswith("generator/"))

    feed(s, sim.command(C.SetFreezeMethod("gate")) + sim.train(4))  # momentum still moves the gated variables
    st = _variable_states(s)
    leak = [e for e in s.data.events if isinstance(e, E.Leak)][0]
    assert st[leak.variable].state == "LEAK" and f"moved at step {leak.at_step}" in st[leak.variable].tip
    assert st["generator"].state == "LEAK" and st["generator"].tip.startswith("leaked: generator/dense_1/")
    feed(s, sim.train(60))  # the momentum died out: it moved once, it does not move now
    st = _variable_states(s)
    assert st[leak.variable].state == "leaked" and "moved it for a while" in st[leak.variable].tip
    feed(s, sim.command(C.SetFreezeMethod("exact")) + sim.train(4))
    assert _variable_states(s)[leak.variable].state == "frozen"  # a new method: old leaks are history

    s.handle(P.RunFinished(sim.status()))
    s.begin_run()  # a new run starts from nothing
    st = s.variable_states()
    assert st is not None and {x.state for x in st.values()} == {""} and {x.value for x in st.values()} == {None}


def test_variable_states_of_any_run_data():
    """The same derivation serves a `RunData` read from a run directory (review, attach)."""
    data = RunData()
    paths = ("a/k", "a/b")
    steps = np.arange(1, 6, dtype=np.int64)
    norm = np.array([[0.0, 1e-3]] * 5)
    data.add_batch(MetricsBatch([PhaseBlock("A", paths, steps, steps * 1.0, np.ones(5), norm, norm, norm,
                                            np.array([[True, False]] * 5), np.ones(5, bool))]))
    states = VariableStates(build_scope_tree([VarInfo(p, (1,), "float32", True) for p in paths]))
    assert states.update(data) and not states.update(data)
    assert [states.states[p].state for p in ("a/k", "a/b", "a")] == ["frozen", "", "partly"]


def test_control_changes_from_elsewhere_reach_the_panels_and_the_windows_own_do_not(ready):
    """A freeze, ratio, rate or method applied to the window's own run by another process (its
    commands.jsonl) is announced with the run's controls, so the panels show it and the next tick sends a
    freeze set that keeps it; an event acknowledging one of the window's own commands (its id) is not:
    re-showing it could untick a scope whose command is still in flight."""
    s, sim, _ = ready
    changed: list = []
    s.controls_changed.connect(lambda c: changed.append((list(c.freeze), dict(c.lr), c.method, c.update_frozen_stats)))
    s.begin_run()
    feed(s, sim.run(RunConfig(lr={"D": 1e-3, "G": 2e-3})) + sim.train(5))
    own = s.own_command_id()
    feed(s, [P.Emitted(replace(r.event, id=own)) if isinstance(r, P.Emitted) else r
             for r in sim.command(C.SetFreeze(["generator/dense_1"]))])
    assert changed == [] and s.controls.freeze == ["generator/dense_1"]
    feed(s, sim.command(C.SetFreeze(["discriminator/dense_1"], update_frozen_stats=True)))  # no id: elsewhere
    feed(s, sim.command(C.SetLearningRate("G", 5e-4)))
    assert changed == [(["discriminator/dense_1"], {"D": 1e-3, "G": 2e-3}, "exact", True),
                       (["discriminator/dense_1"], {"D": 1e-3, "G": 5e-4}, "exact", True)]
    s.begin_run()  # a new run starts from its own settings
    assert s.controls.freeze == [] and s.controls.lr == {}


def _own(s: Session, reports: list, cid: str) -> list:
    """`reports` as the trainer sends them for a command that carried the window's id `cid`."""
    return [P.Emitted(replace(r.event, id=cid)) if isinstance(r, P.Emitted) else r for r in reports]


def test_a_change_from_elsewhere_waits_for_the_windows_own_commands_in_flight(ready):
    """The window ticks A (in flight); a freeze of B from commands.jsonl is applied first, then A's, which
    was the tree's whole set. Shown at once, B's change unticked A on screen, and after A's acknowledgement
    (an own id: not shown) the panels said [B] while the run had [A]. Now the panels follow once nothing of
    the window's is in flight, with what the run then has."""
    s, sim, _ = ready
    changed: list = []
    s.controls_changed.connect(lambda c: changed.append(list(c.freeze)))
    s.begin_run()
    feed(s, sim.run(RunConfig()) + sim.train(3))
    tick = s.own_command_id()  # sent, not acknowledged yet
    feed(s, sim.command(C.SetFreeze(["discriminator/dense_1"])))  # from elsewhere, applied first
    assert changed == []
    feed(s, _own(s, sim.command(C.SetFreeze(["generator/dense_1"])), tick))
    assert changed == [["generator/dense_1"]] and s.controls.freeze == ["generator/dense_1"]
    dropped = s.own_command_id()
    s.command_dropped(dropped)  # no run took it: nothing waits for it
    feed(s, sim.command(C.SetFreeze([])))
    assert changed[-1] == []


def test_a_roll_back_shows_the_checkpoints_settings(ready):
    """A roll-back restores the checkpoint's freeze set and rates; the panels kept showing the later ones
    (a freeze made after the checkpoint stayed ticked though the trainer had dropped it)."""
    s, sim, _ = ready
    changed: list = []
    s.controls_changed.connect(lambda c: changed.append(list(c.freeze)))
    s.begin_run()
    feed(s, sim.run(RunConfig()) + sim.train(4))
    feed(s, [P.Emitted(E.Checkpoint(step=4, path="checkpoints/ckpt-4"))] + sim.train(4))
    tick = s.own_command_id()
    feed(s, _own(s, sim.command(C.SetFreeze(["generator/dense_1"])), tick))
    assert changed == [] and s.controls.freeze == ["generator/dense_1"]
    s.data.set_samples({"kind": "points", "step": 7})  # drawn by the weights the run goes back from
    feed(s, [P.Emitted(E.Rollback(step=4, from_step=8, checkpoint="checkpoints/ckpt-4", id=s.own_command_id()))])
    assert changed == [[]] and s.controls.freeze == []
    assert s.data.samples is None  # the samples view showed them after the roll-back


def test_a_died_service_takes_back_the_commands_it_never_applied(ready):
    """The training process dies with one of the window's commands in flight: the panels are told the run's
    controls (what it applied) at once and again once the new service has prepared (which shows the
    experiment's own); the state text says how the process ended and where. A died service with no run
    cut off (idle) changes no panel."""
    s, sim, _ = ready
    changed: list = []
    s.controls_changed.connect(lambda c: changed.append((list(c.freeze), dict(c.lr))))
    s.begin_run()
    feed(s, sim.run(RunConfig(lr={"D": 1e-3, "G": 2e-3})) + sim.train(7))
    feed(s, _own(s, sim.command(C.SetFreeze(["generator/dense_1"])), s.own_command_id()))
    s.own_command_id()  # a learning rate sent, never applied: the process died
    feed(s, [P.Failed("the training process ended unexpectedly (killed by SIGKILL)", ""), P.Busy(""),
             P.RunFinished(None)])
    assert changed == []
    s.service_lost(-9)
    applied = (["generator/dense_1"], {"D": 1e-3, "G": 2e-3})
    assert changed == [applied]
    assert s.state_text == "Training process killed by SIGKILL at step 7; its record is kept · Loading TensorFlow…"
    s.loading()
    feed(s, sim.load() + sim.prepare(RunConfig(example="ring")))
    assert changed == [applied, applied] and s.state_text == "Training process killed by SIGKILL at step 7; its record is kept"
    feed(s, sim.prepare(RunConfig(example="ring")))  # shown once: a later preparing is the user's
    s.service_lost(1)  # died again, idle: no run was cut off
    assert len(changed) == 2 and s.state_text == "Training process ended with exit code 1 · Loading TensorFlow…"
    s.loading()
    feed(s, sim.load() + sim.prepare(RunConfig(example="ring")))
    s.begin_run()
    assert s.state_text == "Training"

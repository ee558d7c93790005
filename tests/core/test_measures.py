"""The measure in flight beside training (loop/measures.py) and what does and does not wait for it: the alarms
and live views see every step while it runs (only the record's rows wait, observers/record.py); a checkpoint, a
rollback and the loop past its hold bound wait for it, so the record holds every step up to them; a Stop or an
error ends the run without waiting for it; its values are stamped with the wall time of the step it measured.

Real training on the ring. A measure is held in flight by a `threading.Event` the test sets, or until the training
has reached a step (the one wait that polls the step: the checkpoint at that step waits for the measure before any
observer sees the step, so none could notify it), never by a sleep (the test of the hold bound gives its measures a
cost of 0.2 s, and asserts only an upper bound of the steps they last); the guard on each wait only keeps a broken
run from hanging the suite, and no assertion depends on it."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from training_core import Observer, Rollback, RunConfig, Stop, Trainer, read_events, read_scalars
from training_core.observers import health

from .helpers import run
from .measure_watch import (GUARD_S, METRICS_THREAD, Watch, all_rows, assert_measured_at_their_steps,
                            assert_one_ordered_record)


class HeldMeasure(Observer):
    """Wraps the experiment's `metrics(ctx)` before the run begins: the first measure beside training (the one
    of step 0) waits on the metrics thread until `release` is set."""

    def __init__(self) -> None:
        self.release, self.began = threading.Event(), threading.Event()
        self.trainer: Trainer | None = None

    def on_prepared(self, run_) -> None:
        self.trainer = run_._t
        exp = self.trainer.prepared.experiment
        own = exp.metrics

        def metrics(ctx):
            if threading.current_thread().name == METRICS_THREAD and not self.began.is_set():
                self.began.set()
                self.release.wait(GUARD_S)
            return own(ctx)

        exp.metrics = metrics


def _ring(run_dir, steps: int, **kw) -> RunConfig:
    return RunConfig(**{"example": "ring", "steps": steps, "seed": 0, "run_dir": str(run_dir), "fetch_every": 1,
                        "checkpoint_every": 0, "tensorboard": False, **kw})


def test_a_nan_while_a_measure_is_in_flight_stops_the_run_at_once(run_dir):
    """D's weights become NaN after step 30 while the step-0 measure is in flight: the NaN alarm saw nothing of
    the steps after 0 until the measure was in (up to HOLD_MAX_STEPS steps late); now it sees step 31 as it is
    fetched, and `--on-nan stop` stops there. The measure is let go only after 300 steps or once the NaN is
    seen, so the old code trained on to step 300."""
    held = HeldMeasure()

    class Poison(Observer):
        in_flight_at_30: int | None = None

        def on_step_end(self, run_) -> None:
            if run_.step == 30:
                self.in_flight_at_30 = held.trainer.measures.step
                for v in held.trainer.prepared.experiment.models["discriminator"].trainable_variables:
                    v.assign(np.full(v.shape, np.nan, "float32"))
            if run_.step >= 300:
                held.release.set()

        def on_event(self, event) -> None:
            if event.kind == "nan":
                held.release.set()

    poison = Poison()
    Trainer(_ring(run_dir, 2000, on_nan="stop"), [held, poison]).run()
    held.release.set()
    assert poison.in_flight_at_30 == 0  # the measure of step 0 was in flight when the weights went bad
    events = read_events(run_dir)
    nan = next(e for e in events if e.kind == "nan")
    assert nan.at_step == 31 and nan.step == 31
    assert events[-1].kind == "stop" and events[-1].reason == "halted" and events[-1].step == 31
    assert sorted(s for s, t in all_rows(run_dir) if t.startswith("loss/")) == list(range(1, 32))


class Interrupt(Exception):
    """Stands for a second Ctrl-C (KeyboardInterrupt would end pytest too)."""


@pytest.mark.parametrize("how", ["stop", "error"])
def test_a_stop_or_an_error_ends_the_run_without_waiting_for_the_measure_in_flight(run_dir, how):
    """A Stop (or an exception, as a second Ctrl-C) at step 20 while the step-0 measure is in flight: run() returns
    while the measure still waits (it used to wait for it, then measure once more on the training thread: a
    30-second FID lost the window's final checkpoint to its kill at 62 s), the measure is dropped, no measure is
    taken at the end, and the record holds every step's losses, the final checkpoint and the stop event."""
    held = HeldMeasure()

    class EndAt20(Observer):
        in_flight = None

        def on_step_end(self, run_) -> None:
            if run_.step == 20:
                self.in_flight = held.trainer.measures.step
                if how == "stop":
                    run_.send(Stop())
                else:
                    raise Interrupt("the second Ctrl-C")

    end = EndAt20()
    trainer = Trainer(_ring(run_dir, 2000, checkpoint_every=1000), [held, end])
    try:
        if how == "stop":
            trainer.run()
        else:
            with pytest.raises(Interrupt):
                trainer.run()
        returned_while_waiting = not held.release.is_set()
    finally:
        held.release.set()
    assert end.in_flight == 0 and returned_while_waiting
    events = read_events(run_dir)
    assert events[-1].kind == "stop" and events[-1].reason == ("stopped" if how == "stop" else "error")
    assert events[-1].step == 20
    assert sorted(s for s, t in all_rows(run_dir) if t.startswith("loss/")) == list(range(1, 21))
    assert not [t for t in read_scalars(run_dir) if t.startswith("metric/")]  # dropped; none at the end
    if how == "stop":
        assert [e.step for e in events if e.kind == "checkpoint"] == [0, 20]


def test_a_measure_is_stamped_with_the_wall_time_of_the_step_it_measured(run_dir):
    """Each measure beside training waits on the metrics thread until the training has taken 20 more steps: its
    rows' wall time is when its snapshot was taken (between its step's and the next step's), not when its
    values came back (after 20 more steps), so a plot against wall time puts it where its step is. (The clock is
    set due after each measure, so they come one after another.)"""

    class Slow(Observer):
        trainer = None
        beside = 0
        stepped = threading.Condition()

        def on_prepared(self, run_) -> None:
            t = self.trainer = run_._t
            own = t.prepared.experiment.metrics

            def metrics(ctx):
                if threading.current_thread().name == METRICS_THREAD:
                    self.beside += 1
                    until = min(t.state.step + 20, 400)  # (the run's last step: the end waits for this measure)
                    with self.stepped:
                        self.stepped.wait_for(lambda: t.state.step >= until, GUARD_S)
                return own(ctx)

            t.prepared.experiment.metrics = metrics

        def on_step_end(self, run_) -> None:
            with self.stepped:
                self.stepped.notify_all()
            if self.trainer.measures.step is None:  # the clock says the next measure is due: one after another
                next(o for o in self.trainer.observers if isinstance(o, health.HealthMetrics))._next = 0.0

    slow = Slow()
    Trainer(_ring(run_dir, 400, metrics_seconds=1.0), slow).run()
    sc = assert_one_ordered_record(run_dir, 400)
    wall = {}
    for tag in ("loss/D", "loss/G"):
        wall.update(zip(sc[tag].steps.tolist(), sc[tag].wall_time.tolist()))
    measured = sc["metric/modes_covered"]
    assert slow.beside >= 2 and len(measured.steps) >= 3
    for step, w in zip(measured.steps.tolist(), measured.wall_time.tolist()):
        if step in wall:
            assert wall[step] <= w, f"the measure of step {step} is stamped before its step ran"
        if step + 1 in wall:
            assert w <= wall[step + 1], f"the measure of step {step} is stamped after step {step + 1} ran"


# -- what waits for the measure in flight: a checkpoint, a rollback, the loop past its bound --------------------
class CheckpointWitness(Observer):
    """At each `checkpoint` event, the rows scalars.csv holds then (the record is synced before a checkpoint)."""

    def __init__(self, run_dir) -> None:
        self.run_dir, self.seen = run_dir, {}

    def on_event(self, event) -> None:
        if event.kind == "checkpoint":
            self.seen[event.step] = all_rows(self.run_dir)


class MeasureBeforeACheckpoint(Observer):
    """Once, from step 100 on, at a step with no measure in flight whose next step is no checkpoint's: the clock is
    set due (and the checkpoint margin's estimate cleared), so a measure begins at the next step F; on the metrics
    thread that measure waits until the training has reached the next checkpoint's step C, where the checkpoint
    waits for it. Put before a `Watch`, whose wrapper then notes the steps before and after the wait."""

    def __init__(self, every: int) -> None:
        self.every, self.forced = every, None

    def on_prepared(self, run_) -> None:
        t = run_._t
        own = t.prepared.experiment.metrics

        def metrics(ctx):
            f = self.forced
            if threading.current_thread().name == METRICS_THREAD and f is not None and t.measures.step == f:
                until, guard = (f // self.every + 1) * self.every, time.monotonic() + GUARD_S
                while t.state.step < until and time.monotonic() < guard:
                    time.sleep(0.002)  # (polled: the wait ends when the training has reached the checkpoint)
            return own(ctx)

        t.prepared.experiment.metrics = metrics

    def on_step_end(self, run_) -> None:
        if self.forced is None and run_.step >= 100 and (run_.step + 1) % self.every and run_.measure_step is None:
            h = next(o for o in run_._t.observers if isinstance(o, health.HealthMetrics))
            h._next, h._steps_per_measure = 0.0, 0
            self.forced = run_.step + 1


def test_a_checkpoint_comes_after_the_record_holds_every_step_up_to_it(run_dir, monkeypatch):
    """A checkpoint every 30 steps, measures beside training, and one measure (of step F) that lasts until the
    training has reached the next checkpoint's step: that checkpoint waits for it, so the record then holds every
    row up to the checkpoint's step that it ever will, as every checkpoint's does (only a measure of the
    checkpoint's own step may follow it)."""
    monkeypatch.setattr(health, "SHARE", 0.5)
    forced, watch = MeasureBeforeACheckpoint(30), Watch()
    witness = CheckpointWitness(run_dir)
    trainer = Trainer(RunConfig(example="ring", steps=600, seed=0, run_dir=str(run_dir), metrics_seconds=0.05,
                                fetch_every=20, checkpoint_every=30), [forced, watch, witness])
    trainer.run()
    final = all_rows(run_dir)
    assert len(witness.seen) == 600 // 30 + 1

    def upto(rows, step):
        return [r for r in rows if r[0] < step or (r[0] == step and r[1].startswith("loss/"))]

    for step, rows in witness.seen.items():
        assert upto(rows, step) == upto(final, step), f"checkpoint at step {step}"
    f = forced.forced
    assert f is not None and f % 30
    assert (f, "metric/modes_covered") in witness.seen[(f // 30 + 1) * 30]  # the checkpoint waited for it
    assert any(after >= (f // 30 + 1) * 30 for _, _, after in watch.beside())  # it lasted up to the checkpoint
    assert_measured_at_their_steps(assert_one_ordered_record(run_dir, 600), watch)


def test_a_rollback_with_a_measure_in_flight_keeps_one_record(run_dir, monkeypatch):
    """A rollback (with D's learning rate halved, so the timeline after it differs) sent at the step a measure
    began (the clock set due once a checkpoint to go back to exists), which is in flight then (a measure is taken at
    a later boundary at the soonest), so the rollback waits for it; what the record keeps after the cut is one timeline, in step order, and every measure in it equals
    the weights of its step on the timeline that stayed."""
    monkeypatch.setattr(health, "SHARE", 0.5)
    watch = Watch()

    class RollBackOnce(Observer):
        sent = None

        def on_step_end(self, run_) -> None:
            good = [s for s in run_.checkpoint_steps() if 0 < s < run_.step]
            if self.sent is None and run_.measure_step == run_.step and good:
                self.sent = (run_.step, good[-1])
                run_.send(Rollback(step=good[-1], phase="D", lr_factor=0.5, reason="test"))
            elif self.sent is None and good and run_.measure_step is None:  # the clock says due: one begins next
                h = next(o for o in run_._t.observers if isinstance(o, health.HealthMetrics))
                h._next, h._steps_per_measure = 0.0, 0

    rb = RollBackOnce()
    run(RunConfig(example="ring", steps=600, seed=0, run_dir=str(run_dir), metrics_seconds=0.05, fetch_every=20,
                  checkpoint_every=50), [watch, rb])
    assert rb.sent is not None
    events = read_events(run_dir)
    assert [(e.kind, e.step) for e in events if e.kind == "rollback"] == [("rollback", rb.sent[1])]
    assert watch.beside()
    sc = assert_one_ordered_record(run_dir, 600)
    assert_measured_at_their_steps(sc, watch)


def test_a_measure_held_longer_than_the_bound_makes_the_loop_wait(run_dir, monkeypatch):
    """With HOLD_MAX_STEPS at 5, a slow measure makes the loop wait for it after a few steps: the record stays
    whole and in step order, and the steps a measure lasted are few."""
    from training_core.loop import trainer as trainer_module
    monkeypatch.setattr(trainer_module, "HOLD_MAX_STEPS", 5)
    monkeypatch.setattr(health, "SHARE", 0.5)
    watch = Watch(sleep=0.2)
    run(RunConfig(example="ring", steps=500, seed=0, run_dir=str(run_dir), metrics_seconds=0.05, fetch_every=1,
                  fetch_seconds=1e-6, checkpoint_every=0), watch)
    assert_measured_at_their_steps(assert_one_ordered_record(run_dir, 500), watch)
    assert watch.beside() and all(after - before <= 5 for _, before, after in watch.beside())

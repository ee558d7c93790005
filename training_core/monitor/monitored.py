"""The run behind `Monitor` (Keras `fit()`) and `Run` (a hand-written loop): a Freezeframe run whose steps
someone else's code takes.

Why one core for both: what the two do between the user's steps is the same. They write the record
(observers/record.py through rundir/writer.py), measure every variable's update on the device at the sampled
steps (monitor/update_meter.py), report leaks (observers/alarms.py's `LeakAlarm`), take the window's commands from
`commands.jsonl` (observers/command_file.py) and apply them with the trainer's own command table
(loop/command_table.py), block while paused, draw samples and save checkpoints (engine/checkpoints.py), and
begin or resume the run directory as the trainer does (loop/restore.py). Those pieces read a trainer through
a few declared names (`config`, `prepared`, `state`, `flow`, `emit`, `pause`, `set_freeze`, ...); this class
offers exactly those, so it reuses them unchanged, and its observers see it through the trainer's handle.

What differs is said by the two front ends: which commands they can honour (`refuse`: fit() cannot freeze
exactly nor change its ratio), and how a freeze set reaches the update (`on_freeze`: `run.apply_gradients`'
masks). Every call here runs on the user's training thread, between steps.
"""
from __future__ import annotations

import atexit
import sys
import time
import traceback
import weakref
from dataclasses import replace
from typing import Any, Callable, Mapping

import numpy as np

from training_core.base import commands as C
from training_core.base import events as E
from training_core.base.config import RunConfig
from training_core.base.errors import UserError
from training_core.base.metrics import Status
from training_core.base.scopes import MONITOR_SCOPES, frozen_mask, resolve_scopes, scope_list
from training_core.loop import command_table
from training_core.loop.dispatch import EventDispatch
from training_core.loop.handle import TrainerHandle
from training_core.loop.state import Flow, LoopState
from training_core.monitor.step_log import _EAGER, StepLog, check_scalar
from training_core.monitor.update_meter import UpdateMeter, next_measured
from training_core.monitor.described import Described, frozen_flags
from training_core.observers.base import Observer, step_hooks
from training_core.rundir import lock as runlock

IDLE_POLL_S = 0.25  # while paused: how often the commands file is looked at
#: runs begun and not closed: closed at the interpreter's exit (a script that ended without `close()`, or that
#: an exception ended inside fit(), which calls no callback then), so the record gets its `error` and `stop`
_OPEN: "weakref.WeakSet[MonitoredRun]" = weakref.WeakSet()


@atexit.register
def _close_open_runs() -> None:
    error = getattr(sys, "last_value", None)  # the exception that ended the script, if one did
    for run in list(_OPEN):
        try:
            run.close("error" if error is not None else "stopped", error)
        except Exception:  # noqa: BLE001 - at exit: the record keeps what it has
            pass


class MonitorHandle(TrainerHandle):
    """The trainer's handle on this run; a leak names how the run freezes (`leak_method`)."""

    @property
    def method(self) -> str:
        return self._t.leak_method or self._t.state.method


class MonitoredRun:
    """A run whose steps the user's code takes; `observers` are the run's, in order (the record last)."""

    #: an unknown scope (a `SetFreeze` sent by the script) points at the models' paths: a script has no --list-scopes
    scope_hint = MONITOR_SCOPES

    def __init__(self, described: Described, observers: list[Observer], resume: bool,
                 refuse: Callable[[C.Command], str | None],
                 on_freeze: Callable[[list[np.ndarray]], None] | None = None,
                 sample: Callable[[], dict | None] | None = None, leak_method: str | None = None) -> None:
        self.prepared = described
        self.config: RunConfig = described.config
        self.resuming = resume
        self.state = LoopState(method=self.config.freeze_method, phase_counts=[0] * len(described.phase_names))
        self._logged_at = [0] * len(described.phase_names)  # the step each phase was last logged at
        self._phase_index = {name: i for i, name in enumerate(described.phase_names)}
        self.flow = Flow()
        self.commands = C.CommandQueue()
        self.observers = observers
        self._step_observers = step_hooks(observers)
        self._dispatch = EventDispatch(lambda: self.observers)
        self.handle = MonitorHandle(self)
        self.run_dir: Any = None
        self.lock: Any = None
        self.checkpoints: Any = None
        self.scratch_dir = None
        self.command_file_start: int | None = None
        self.measures: Any = None
        self.traces = self.retraces = 0
        self.refuse, self.on_freeze, self.sample_fn = refuse, on_freeze, sample
        self.leak_method = leak_method
        self.error: BaseException | None = None
        self.closed = False
        flat, columns = _columns(described.phase_vars)
        self.meter = UpdateMeter(flat)
        self.log = StepLog(described.phase_names, described.phase_paths, columns)
        self._next_fetch = 0.0
        self._measured_at = -1
        self.snapshot_at = 0  # the next step whose weights are copied before it runs (before_step)
        self._fetch_every = self.config.fetch_every
        self._frozen_last: list[tuple | None] = [None] * len(described.phase_names)  # (_mark_frozen)
        self._t0 = time.perf_counter()

    # -- what the reused pieces call ------------------------------------------------------------------------
    def send(self, command: C.Command, id: str | None = None) -> None:  # noqa: A002 - the wire name
        """Queue a command for the next step boundary (any thread)."""
        self.commands.put(command, id)

    def emit(self, event: E.Event) -> None:
        self._dispatch(replace(event, step=event.step or self.state.step, time=event.time or E.now()))

    def pause(self, reason: str, cmd: C.Command | None = None, cid: str | None = None, decided: bool = True) -> None:
        if self.flow.paused:
            return
        self.flow.paused = True
        self.emit(E.Pause(reason=reason, command=None if cmd is None else cmd.to_dict(), id=cid))
        self.report_status()

    def status(self) -> Status:
        return Status(step=self.state.step, paused=self.flow.paused, running=self.flow.running and not self.flow.stopping,
                      elapsed_s=time.perf_counter() - self._t0, device=self.prepared.device_name,
                      run_dir=str(self.run_dir or ""), target_steps=self.config.steps)

    def report_status(self) -> None:
        status = self.status()
        for o in self.observers:
            o.on_status(status)

    def set_freeze(self, scopes: tuple[str, ...], update_stats: bool) -> list[E.Warning]:
        """The freeze set: what the record marks frozen, and (a hand-written loop) what its update leaves out."""
        p = self.prepared
        self.state.freeze = tuple(scopes)
        self.config.update_frozen_stats = update_stats
        masks = [np.array(frozen_mask(paths, scopes), dtype=bool) for paths in p.phase_paths]
        if self.on_freeze is not None:
            self.on_freeze(masks)
        self._mark_frozen(self.state.step + 1)
        return [E.Warning(message=f"phase {name} has all its variables frozen; its updates change nothing", phase=name)
                for name, m in zip(p.phase_names, masks) if len(m) and m.all()]

    def set_method(self, method: str) -> None:
        if method not in C.FREEZE_METHODS:
            raise UserError(f"freeze method {method!r} is unknown; use 'exact' or 'gate'")
        self.state.method = method
        if self.on_freeze is not None:
            self.set_freeze(self.state.freeze, self.config.update_frozen_stats)

    def sample(self) -> None:
        """Draw samples with the user's function (one that fails is turned off, with a warning)."""
        if self.sample_fn is None:
            return
        try:
            got = self.sample_fn()
        except Exception as e:  # noqa: BLE001 - a broken sample view must not stop training
            self.sample_fn = None
            self.emit(E.Warning(message=f"sample() failed and is turned off: {type(e).__name__}: {e}"))
            return
        if got is not None:
            samples = {**_sample_kind(got), **got, "step": self.state.step}
            for o in self.observers:
                o.on_samples(samples)

    def sync(self, measure_may_follow: bool = False) -> None:
        self.flush()
        for o in self.observers:
            o.on_sync()

    def save_checkpoint(self) -> None:
        """Checkpoint the models, optimizers and the run's state after this step, once the record holds it."""
        from pathlib import Path

        from training_core.engine.checkpoints import CheckpointStore
        from training_core.loop.restore import host_state
        store = self.checkpoints
        if store is None or store.last_step == self.state.step:
            return
        self.sync()
        if self.state.nan_at is not None:
            return
        if _optimizer_variables(self.prepared) != self._opt_vars:  # built since (fit(): at its first step)
            store = self.checkpoints = CheckpointStore(self.prepared, self.run_dir)
            self._opt_vars = _optimizer_variables(self.prepared)
        path = store.save(self.state.step, host_state(self))
        self.emit(E.Checkpoint(path=str(Path(path).relative_to(self.run_dir))))

    # -- the run's life -------------------------------------------------------------------------------------
    def begin(self) -> None:
        """Open (or resume) the run directory: the `start` or `resumed` event, the observers' first look."""
        from training_core.loop.restore import begin
        self.flow.running = True
        self.set_freeze(tuple(self.config.freeze), self.config.update_frozen_stats)
        try:
            began = begin(self)
        except BaseException:
            if self.lock is not None:
                runlock.release(self.lock)
            raise
        self._opt_vars = _optimizer_variables(self.prepared)
        self._next_fetch = time.perf_counter() + self.config.fetch_seconds
        _OPEN.add(self)
        self.emit(began)
        for o in self.observers:
            o.on_run_begin(self.handle)
        self.before_step(self.state.step + 1)

    def check_freeze(self, scopes: Any) -> tuple[str, ...]:
        return resolve_scopes(scope_list(scopes, "scopes"), self.prepared.var_infos, MONITOR_SCOPES)

    def record(self, step: Any, losses: Mapping[str, Any], metrics: Mapping[str, Any] | None, where: str) -> None:
        """One step's losses by phase and its metrics (`metric/<name>`), checked: one line for bad use. (Called
        every step, right after the user's step, when the CPU's caches hold TensorFlow's work and not this: the
        usual case, floats and scalar tensors, is a few type tests, and no message is built unless one is said.)"""
        if type(step) is not int and (isinstance(step, bool) or not isinstance(step, (int, np.integer))) or step < 1:
            raise UserError(f"{where}: step must be a whole number >= 1, got {step!r}")
        step, last = int(step), self.state.step
        if type(losses) is not dict and not isinstance(losses, Mapping):
            raise UserError(f"{where}: losses must be a dict of phase name -> loss, got {type(losses).__name__}")
        if step < last:
            raise self._out_of_order(where, step, last)
        index, eager, logged = self._phase_index, _EAGER, self._logged_at
        rows = []
        for name, value in losses.items():
            i = index.get(name)  # (None for a name of another type too)
            if i is None:
                raise UserError(f"{where}: there is no phase {name!r}; phases are {', '.join(index)}")
            if logged[i] == step:
                raise self._out_of_order(where, step, last)
            kind = type(value)
            if kind is not float and not (kind is eager and value._shape_tuple() == ()):
                value = check_scalar(value, f"{where}: the loss of phase {name!r} at step {step}")
            rows.append((i, value))
        extra = [(f"metric/{k}", check_scalar(v, f"{where}: metric {k!r} at step {step}"))
                 for k, v in metrics.items()] if metrics else ()
        for i, _ in rows:
            logged[i] = step
        wall = time.time()
        self.log.add_step(step, wall, rows, self.state.phase_counts)
        for tag, value in extra:
            self.log.scalar(tag, step, value, wall)
        self.state.step = step

    @staticmethod
    def _out_of_order(where: str, step: int, last: int) -> UserError:
        return UserError(f"{where}: step {step} is logged after step {last} was; log each phase once a step, "
                         f"steps in order (a resumed loop continues from run.step + 1)")

    def before_step(self, step: int) -> None:
        """`step` is about to run: if it is one to measure, the weights are copied now (on the device). Which
        step that is, is worked out once a block (`snapshot_at`), so a step's test is one comparison."""
        if step >= self.snapshot_at:
            every = self.config.var_every
            if step > self.snapshot_at:  # (the first step, or steps not announced: the next one from here)
                self.snapshot_at = next_measured(step, every)
            if step == self.snapshot_at:
                if not self.meter.armed:
                    self.meter.snapshot()
                    self._measured_at = step
                self.snapshot_at = next_measured(step + 1, every)

    def after_step(self, step: int) -> None:
        """`step` ran and was logged: its update is measured if a snapshot waits for it; a Step command counts it."""
        if self.meter.armed and step >= self._measured_at:
            self._mark_frozen(step)  # the flags as they read at the step measured, not when the batch is read
            self.log.measure(step, self.meter.norms())
        flow = self.flow
        if flow.steps_left is not None:
            flow.steps_left -= 1
            if flow.steps_left <= 0:
                flow.steps_left = None
                self.pause("step")
        for o, period in self._step_observers:
            if period == 1 or step % period == 0:
                o.on_step_end(self.handle)
        if len(self.log) >= self._fetch_every:
            self.flush()
            self._next_fetch = time.perf_counter() + self.config.fetch_seconds
        else:
            now = time.perf_counter()
            if now >= self._next_fetch:
                self.flush()
                self._next_fetch = now + self.config.fetch_seconds

    def boundary(self) -> bool:
        """Apply the commands that came, and block while paused; False once the run is to stop."""
        if self.commands.pending() or self.flow.paused:
            self._apply(self.commands.drain())
            while self.flow.paused and not self.flow.stopping:
                self.flush()
                for o in self.observers:
                    o.on_idle(self.handle)
                env = self.commands.get(timeout=IDLE_POLL_S)
                self._apply(([env] if env is not None else []) + self.commands.drain())
        return not self.flow.stopping

    def _apply(self, envelopes: list[C.Envelope]) -> None:
        if envelopes:
            self.flush()  # what ran before a change is reported (a leak) before the change's event
        for env in envelopes:
            why = self.refuse(env.command)
            if why is None and isinstance(env.command, C.Rollback):
                why = "a rollback needs the loop to go back to a step, which a monitored loop cannot; stop, then " \
                      "restart the loop with resume=True to continue from the last checkpoint"
            if why is not None:
                self.emit(E.Rejected(message=why, command=env.command.to_dict(), id=env.id))
            else:
                command_table.apply(self, env)

    def flush(self) -> None:
        """Hand every step logged so far to the observers (one device read for the batch)."""
        batch = self.log.batch(self.status())
        if batch is not None:
            for o in self.observers:
                o.on_metrics(batch)

    def _mark_frozen(self, step: int) -> None:
        """The frozen column from `step` on, as the freeze set and the trainable flags say it now. (At every
        measured step: a column equal to the phase's last one is not handed on, as it changes nothing.)"""
        p, last = self.prepared, self._frozen_last
        for i in range(len(p.phase_names)):
            mask = frozen_flags(p, i, self.state.freeze, ())
            seen = last[i]  # (the step and mask last handed on, and whether that step is the latest handed)
            if seen is not None and seen[2] and step >= seen[0] and np.array_equal(seen[1], mask):
                continue
            latest = seen is None or step >= seen[0] and seen[2]
            last[i] = (step, mask, latest)
            self.log.set_frozen(i, mask, step)

    def close(self, reason: str = "done", error: BaseException | None = None) -> None:
        """End the run: the last steps, the observers' end (a final checkpoint), the `stop` event, the lock."""
        if self.closed:
            return
        self.closed = True
        _OPEN.discard(self)
        try:
            self.flush()
            for o in self.observers:
                o.on_run_end(self.handle, reason)
            self.flush()
        except BaseException as e:  # noqa: BLE001 - the final checkpoint failed (a full disk): not "done"
            if error is None:
                reason, error = "error", e
        self.flow.stopping, self.flow.running = True, False
        if error is not None:
            self.emit(E.Error(message=" ".join(str(error).split())[:300] or type(error).__name__,
                              detail="".join(traceback.format_exception(error))))
        stop = self.flow.stop_command
        self.emit(E.Stop(reason=reason, traces=self.traces, retraces=self.retraces,
                         command=None if stop is None else stop.command.to_dict(), id=None if stop is None else stop.id))
        if self.lock is not None:
            runlock.release(self.lock)

    def stop_reason(self) -> str:
        stop = self.flow.stop_command
        return stop.command.reason if stop is not None else "stopped"


def _columns(phase_vars: list[list[Any]]) -> tuple[list[Any], list[list[int]]]:
    """Every phase's variables once (a variable two phases train is measured once), and each phase's columns."""
    flat, where, columns = [], {}, []
    for vs in phase_vars:
        cols = []
        for v in vs:
            if id(v) not in where:
                where[id(v)] = len(flat)
                flat.append(v)
            cols.append(where[id(v)])
        columns.append(cols)
    return flat, columns


def _optimizer_variables(p: Described) -> tuple[int, ...]:
    return tuple(len(opt.variables) if opt is not None else 0 for opt in p.optimizers)


def _sample_kind(samples: dict) -> dict:
    """The view a drawing is shown in, when `sample()` does not say: images for arrays of 3 or more dimensions,
    points for rows of two numbers."""
    if "kind" in samples:
        return {}
    fake = np.asarray(samples.get("fake", np.zeros((0, 0))))
    return {"kind": "images" if fake.ndim >= 3 else "points2d" if fake.ndim == 2 and fake.shape[-1] == 2 else "matrix"}

"""The training loop: plain Python that reports to a list of observers and takes commands.

In the manner of Keras 3's trainer and Orange3's TaskState: `Trainer.run()` blocks on whatever thread
calls it (the training process's main thread, or the main thread headless), applies queued commands
at step boundaries, and reports to its observers on that same thread. Every policy (the run record,
checkpoints, samples, leak and NaN alarms, the CLI's progress bar) is an observer (observers.py);
the loop itself only steps, fetches metrics and dispatches commands through a table.

A command applied at a boundary is logged with the step count at that boundary: a command logged at
step N first affects step N+1.
"""
from __future__ import annotations

import time
import traceback
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from . import commands as C, events as E, runlock
from .config import RunConfig
from .controls import HANDLERS
from .errors import UserError
from .metrics import MetricsBatch, PendingStep, PhaseBlock, Status, scalar_columns
from .observers import EventDispatch, Observer, overrides
from .policies import default_observers
from .recorder import default_run_dir  # noqa: F401 - the window imports it from here
from .scopes import frozen_mask
from .usercode import failure_line
from .warmup import WarmUp

IDLE_POLL_S = 0.25  # while paused: how often observers (a command file reader) get a look


class Trainer:
    """`resume=True` continues the run in `config.run_dir` from its last checkpoint (resume.py)."""

    def __init__(self, config: RunConfig, observers: Observer | Sequence[Observer] | None = None,
                 resume: bool = False) -> None:
        self.config = config.validate()
        self.resume = resume
        extra = [] if observers is None else [observers] if isinstance(observers, Observer) else list(observers)
        self.warm = WarmUp(self._on_trace)  # which variants are traced when (warmup.py)
        self._dispatch = EventDispatch(lambda: self.observers)
        self.observers: list[Observer] = [self.warm, *default_observers(self.config), *extra]
        self._step_observers = [o for o in self.observers if overrides(o, "on_step_end")]
        self.commands = C.CommandQueue()
        self.prepared: Any = None  # prepare.Prepared, after prepare()
        self.step = self.traces = self.retraces = 0
        self.run_dir: Path | None = None
        self.lock: runlock.RunLock | None = None  # one writer per run directory (taken by resume.begin)
        self.checkpoints: Any = None  # checkpoints.CheckpointStore, while running
        self.method = self.config.freeze_method
        self.freeze: tuple[str, ...] = ()
        self._running = self._paused = self._stop = False
        self._stop_command: C.Envelope | None = None
        self.scratch_dir: Path | None = None  # a non-chief worker's own checkpoints (set by prepare)
        self._steps_left: int | None = None
        self._pending: list[PendingStep] = []
        self._pending_scalars: list[tuple[str, int, float, float]] = []  # (tag, step, wall, value)
        self._phase = -1
        self.phase_counts: list[int] = []  # steps each phase ran (decides the per-variable record)
        self.rollbacks = 0
        self.nan_at: int | None = None  # a non-finite loss seen at this step and not rolled back
        self._use_masked: list[bool] = []
        self._frozen_rows: list[np.ndarray] = []
        self._runnable: list[bool] = []
        self._t0 = 0.0
        self._rate = (0.0, 0, 0.0)  # (time, step, steps/s)
        self._handlers: dict[type[C.Command], Callable[[Any, str | None], None]] = {
            C.Pause: self._cmd_pause, C.Resume: self._cmd_resume,
            C.Step: self._cmd_step, C.Stop: self._cmd_stop,
            **{kind: partial(handler, self) for kind, handler in HANDLERS.items()},
        }

    # -- any thread -------------------------------------------------------------------------------------------
    def send(self, command: C.Command, id: str | None = None) -> None:  # noqa: A002 - the wire name
        """Queue a command; it applies at the next step boundary. Safe from any thread."""
        self.commands.put(command, id)

    # -- read-only views (valid after prepare) --------------------------------------------------------------
    @property
    def phase_names(self) -> list[str]:
        return self.prepared.phase_names

    @property
    def paused(self) -> bool:
        return self._paused

    def status(self) -> Status:
        p = self.prepared
        return Status(step=self.step, phase=p.phase_names[self._phase] if p and self._phase >= 0 else "",
                      paused=self._paused, running=self._running and not self._stop,
                      steps_per_s=0.0 if self._paused else self._rate[2],
                      elapsed_s=time.perf_counter() - self._t0 if self._t0 else 0.0,
                      device=p.device_name if p else "", run_dir=str(self.run_dir or ""),
                      target_steps=self.config.steps, traces=self.traces)

    # -- preparation ----------------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Load the experiment, build models and optimizers, trace the steps. Raises `UserError`."""
        if self.prepared is not None:
            return
        from .prepare import prepare  # (it turns on op determinism, after the checks that need no TensorFlow)
        run_dir = self.config.run_dir
        # a resumed run's directory is not empty, by definition: only a new run's is checked
        self.prepared = prepare(replace(self.config, run_dir=None) if self.resume else self.config, self.warm.on_trace)
        self.config = self.prepared.config
        # a non-chief worker's own directory (prepare made it): its collective checkpoints, deleted at the end
        self.scratch_dir = None if self.prepared.placement.chief else Path(self.config.run_dir)
        if self.resume:
            self.config.run_dir = run_dir
        self.phase_counts = [0] * len(self.prepared.steps)
        frozen_warnings = self.set_freeze(self.prepared.freeze, self.config.update_frozen_stats)
        self.set_method(self.config.freeze_method)
        for w in [E.Warning(message=m) for m in self.prepared.warnings] + frozen_warnings:
            self.emit(w)
        for o in self.observers:
            o.on_prepared(self)

    def _on_trace(self, phase: str, variant: str, retrace: bool) -> None:
        self.traces += 1
        self.retraces += retrace  # a variant's first trace is warm-up (at preparing or on the warm-up thread)
        self.emit((E.Retrace if retrace else E.Trace)(phase=phase, variant=variant, traces=self.traces))

    # -- the loop -------------------------------------------------------------------------------------------
    def run(self) -> Status:
        """Train until the step target, a Stop command, or an error. Returns the final status.

        However it ends, the record closes with a `stop` event whose reason is true (an `error` event
        first when it failed), and the exception is raised again for the caller."""
        import tensorflow as tf

        from .resume import begin
        self.prepare()
        p = self.prepared
        try:
            began = begin(self)  # the run directory made, or the run resumed in its own: `start` or `resumed`
        except BaseException:
            if self.lock is not None:
                runlock.release(self.lock)
            raise
        self._t0 = time.perf_counter()
        self._rate = (self._t0, self.step, 0.0)
        self._running = True
        reason, error = "done", None
        try:
            self.emit(began)
            for o in self.observers:
                o.on_run_begin(self)
            with tf.device(p.device):
                reason = self._loop()
        except BaseException as e:  # noqa: BLE001 - recorded, then raised again below
            reason, error = "error", e
        try:
            self._fetch()
            for o in self.observers:
                o.on_run_end(self, reason)
            self._fetch()  # what observers recorded at the end (final metrics)
        except BaseException as e:  # noqa: BLE001 - the final checkpoint failed (a full disk): not "done"
            if error is None:
                reason, error = "error", e
        self._stop, self._running = True, False
        if error is not None:
            lost = p.sync.failure_line(error, self) if p.sync is not None else None  # a multiworker peer died
            self.emit(E.Error(message=lost or failure_line(error, p.source, p.phase_names[self._phase]
                                                           if self._phase >= 0 else None, self.step),
                              detail=getattr(error, "detail", None) or "".join(traceback.format_exception(error))))
        stop = self._stop_command
        self.emit(E.Stop(reason=reason, traces=self.traces, retraces=self.retraces,
                         command=None if stop is None else stop.command.to_dict(),
                         id=None if stop is None else stop.id))
        self.report_status()
        if self.lock is not None:
            runlock.release(self.lock)
        if error is not None:
            raise error
        return self.status()

    def _loop(self) -> str:
        p, cfg = self.prepared, self.config
        steps = p.steps
        fetch_every, fetch_s = cfg.fetch_every, cfg.fetch_seconds
        next_fetch = time.perf_counter() + fetch_s
        var_every = cfg.var_every
        step_observers = self._step_observers
        self.report_status()
        while True:
            if p.sync is not None:  # multiworker: commands only at boundaries every worker reaches
                p.sync.boundary(self)
            elif self._paused or self.commands.pending():
                self._handle_commands()
            if self._stop:
                return self._stop_command.command.reason if self._stop_command is not None else "stopped"
            if cfg.steps is not None and self.step >= cfg.steps:
                return "done"
            if self._paused:
                continue
            policy = self.prepared.policy
            i = policy.next_phase(self._runnable)
            if i is None:
                self.emit(E.Warning(message="every phase has all its scopes frozen; nothing can train. "
                                            "Unfreeze a scope to continue"))
                self.pause("nothing to train")
                continue
            st = steps[i]
            self._phase = i
            out = st.masked() if self._use_masked[i] else st.fast()
            self.step += 1
            self.phase_counts[i] += 1
            self._pending.append(PendingStep(self.step, i, time.time(), out, self._frozen_rows[i],
                                             self.phase_counts[i] % var_every == 0))
            if policy.needs_loss:
                policy.observe(i, float(out[0]))
            if self._steps_left is not None:
                self._steps_left -= 1
                if self._steps_left <= 0:
                    self._steps_left = None
                    self.pause("step")
            now = time.perf_counter()
            if len(self._pending) >= fetch_every or now >= next_fetch:
                self._fetch()
                next_fetch = now + fetch_s
            for o in step_observers:
                o.on_step_end(self)

    def _handle_commands(self) -> None:
        envs = self.commands.drain()
        if envs:
            self._fetch()  # what ran before the change is reported (leaks, NaN) before the change's event
        for env in envs:
            self._apply(env)
        while self._paused and not self._stop:
            self._fetch()
            for o in self.observers:
                o.on_idle(self)
            env = self.commands.get(timeout=IDLE_POLL_S)
            if env is not None:
                self._apply(env)

    # -- commands -------------------------------------------------------------------------------------------
    def _apply(self, env: C.Envelope) -> None:
        cmd, cid = env
        try:
            handler = self._handlers.get(type(cmd))
            if handler is None:
                raise UserError(f"unsupported command {cmd!r}")
            handler(cmd, cid)
        except (UserError, TypeError, ValueError) as e:
            # A command with a wrong value (a typo in a replayed or remote command) is refused, not fatal:
            # it must not end a long run.
            message = str(e) if isinstance(e, UserError) else f"{type(e).__name__}: {' '.join(str(e).split())}"
            self.emit(E.Rejected(message=message, command=cmd.to_dict(), id=cid))

    def _cmd_pause(self, cmd: C.Pause, cid: str | None) -> None:
        if self._paused:  # refused, not dropped: an event with its id is a remote sender's acknowledgement
            raise UserError("already paused: Pause has nothing to do (send resume to go on)")
        self.pause("user", cmd, cid)

    def _cmd_resume(self, cmd: C.Resume, cid: str | None) -> None:
        stepping, self._steps_left = self._steps_left is not None, None
        if not (self._paused or stepping):
            raise UserError("not paused: Resume has nothing to do")
        self._paused = False  # (a Step count running out would have paused: it trains on now)
        self.emit(E.Resume(command=cmd.to_dict(), id=cid))
        self.report_status()

    def _cmd_step(self, cmd: C.Step, cid: str | None) -> None:
        n = int(cmd.n)
        if n < 1:
            raise UserError(f"step count must be >= 1, got {cmd.n!r}")
        self._steps_left = n
        self.emit(E.Step(n=n, command=cmd.to_dict(), id=cid))
        self._paused = False

    def _cmd_stop(self, cmd: C.Stop, cid: str | None) -> None:
        self._stop = True
        self._stop_command = C.Envelope(cmd, cid)

    # -- state changes ----------------------------------------------------------------------------------------
    def pause(self, reason: str, cmd: C.Command | None = None, cid: str | None = None) -> None:
        """Pause at the next boundary (`reason`: user, step, nan, nothing to train). Training thread only."""
        if self._paused or (self.prepared.sync is not None and self.prepared.sync.defer_pause(reason)):
            return
        self._paused = True
        self.emit(E.Pause(reason=reason, command=None if cmd is None else cmd.to_dict(), id=cid))
        self.report_status()

    def set_freeze(self, scopes: tuple[str, ...], update_stats: bool) -> list[E.Warning]:
        """Apply a freeze set; returns the warnings it gives (a phase with nothing left to train), for the
        caller to emit after the event that says what changed, so the record reads cause, then effect."""
        p = self.prepared
        warnings = []
        self.freeze = tuple(scopes)
        self.config.update_frozen_stats = update_stats
        restore = np.array(frozen_mask(p.stat_paths, scopes), dtype=bool) & (not update_stats)
        self._use_masked, self._frozen_rows, self._runnable = [], [], []
        for name, paths, st in zip(p.phase_names, p.phase_paths, p.steps):
            mask = np.array(frozen_mask(paths, scopes), dtype=bool)
            st.frozen.assign(mask)
            st.restore_stats.assign(restore)
            self._use_masked.append(bool(mask.any() or restore.any()))
            if self._use_masked[-1]:
                self.warm.ensure(st, "masked")  # traced by now, or waited for: the change stays exact
            self._frozen_rows.append(mask)
            self._runnable.append(not mask.all())
            if mask.all():
                warnings.append(E.Warning(message=f"phase {name} has all its variables frozen; it is skipped",
                                          phase=name))
        return warnings

    def set_method(self, method: str) -> None:
        if method not in C.FREEZE_METHODS:
            raise UserError(f"freeze method {method!r} is unknown; use 'exact' or 'gate'")
        self.method = method
        for st in self.prepared.steps:
            st.gate.assign(method == "gate")

    # -- mechanics the observers call -------------------------------------------------------------------------
    def emit(self, event: E.Event) -> None:
        """Stamp `event` with the current step and time and hand it to every observer (`EventDispatch`)."""
        self._dispatch(replace(event, step=event.step or self.step, time=event.time or E.now()))

    def sync(self) -> None:
        """Bring every step's numbers to the observers and have them written out (`on_sync`)."""
        self._fetch()
        for o in self.observers:
            o.on_sync()

    def save_checkpoint(self) -> None:
        """Checkpoint the state after the current step (once per step), after the record holds every step
        up to it (so a resume finds no gap). Not while a loss is non-finite: resuming such a model is useless,
        and the last good checkpoint must survive the "last 3 kept"."""
        from .resume import host_state
        store = self.checkpoints
        if store is None or store.last_step == self.step:
            return
        self.sync()
        if self.nan_at is not None:  # the state is not worth keeping
            return
        path = store.save(self.step, host_state(self))
        self.emit(E.Checkpoint(path=str(Path(path).relative_to(self.run_dir))))

    def sample(self) -> None:
        """Draw samples now and hand them to the observers (a failing `sample()` is turned off, with a warning)."""
        from .sampling import draw_samples
        try:
            samples = draw_samples(self.prepared, self.step)
        except Exception as e:  # noqa: BLE001 - a broken sample view must not stop training
            self.prepared.experiment.sample = None
            self.emit(E.Warning(message=f"sample() failed and is turned off: {type(e).__name__}: {e}"))
            return
        if samples is not None:
            for o in self.observers:
                o.on_samples(samples)

    def record_scalars(self, values: dict[str, float]) -> None:
        """`metric/<name>` values at this step, sent with the next batch (so in step order). Training thread."""
        self._pending_scalars += [(tag, self.step, time.time(), float(v)) for tag, v in values.items()]

    def report_status(self) -> None:
        status = self.status()
        for o in self.observers:
            o.on_status(status)

    def _fetch(self) -> None:
        if not self._pending and not self._pending_scalars:
            return
        import tensorflow as tf
        p = self.prepared
        pending, self._pending = self._pending, []
        scalars, self._pending_scalars = scalar_columns(self._pending_scalars), []
        blocks = []
        for i in sorted({s.phase for s in pending}):
            items = [s for s in pending if s.phase == i]
            packed = tf.stack([s.packed for s in items]).numpy()  # the one device sync for these steps
            blocks.append(PhaseBlock.from_packed(p.phase_names[i], p.phase_paths[i], [s.step for s in items],
                                                 [s.wall for s in items], packed, np.stack([s.frozen for s in items]),
                                                 np.array([s.record for s in items], dtype=bool)))
        now = time.perf_counter()
        t, s, r = self._rate
        if now - t >= 0.5:
            inst = (self.step - s) / (now - t)
            self._rate = (now, self.step, inst if r == 0 else 0.5 * r + 0.5 * inst)
        batch = MetricsBatch(blocks, self.status(), scalars)
        for o in self.observers:
            o.on_metrics(batch)

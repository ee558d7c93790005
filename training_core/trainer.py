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
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from . import commands as C
from . import events as E
from .config import RunConfig
from .errors import UserError
from .health import HealthMetrics
from .metrics import MetricsBatch, PendingStep, PhaseBlock, Status, scalar_columns
from .observers import Checkpointer, LeakAlarm, NanAlarm, Observer, Sampler, overrides
from .prepare import set_learning_rate
from .recorder import RunRecord, default_run_dir, prepare_run_dir
from .sample_record import SampleRecord
from .schedule import policy_from_dict
from .scopes import frozen_mask, resolve_scopes

IDLE_POLL_S = 0.25  # while paused: how often observers (a command file reader) get a look


def default_observers(config: RunConfig) -> list[Observer]:
    """Every run's policies: record writer last (it sees what the others emitted), samples and metrics
    before checkpoints (they draw from the sample generator, which a checkpoint saves)."""
    return [Sampler(config.sample_seconds, config.sample_every), HealthMetrics(config.metrics_seconds),
            Checkpointer(config.checkpoint_every), LeakAlarm(), NanAlarm(config.pause_on_nan), SampleRecord(),
            RunRecord()]


class Trainer:
    def __init__(self, config: RunConfig, observers: Observer | Sequence[Observer] | None = None) -> None:
        self.config = config.validate()
        extra = [] if observers is None else [observers] if isinstance(observers, Observer) else list(observers)
        self.observers: list[Observer] = default_observers(self.config) + extra
        self._step_observers = [o for o in self.observers if overrides(o, "on_step_end")]
        self.commands = C.CommandQueue()
        self.prepared: Any = None  # prepare.Prepared, after prepare()
        self.step = 0
        self.traces = 0
        self.retraces = 0
        self.run_dir: Path | None = None
        self.checkpoints: Any = None  # checkpoints.CheckpointStore, while running
        self.method = self.config.freeze_method
        self.freeze: tuple[str, ...] = ()
        self._warm = False
        self._running = False
        self._paused = False
        self._stop = False
        self._stop_command: C.Envelope | None = None
        self._steps_left: int | None = None
        self._pending: list[PendingStep] = []
        self._pending_scalars: list[tuple[str, int, float, float]] = []  # (tag, step, wall, value)
        self._phase = -1
        self._phase_counts: list[int] = []
        self._use_masked: list[bool] = []
        self._frozen_rows: list[np.ndarray] = []
        self._runnable: list[bool] = []
        self._t0 = 0.0
        self._rate = (0.0, 0, 0.0)  # (time, step, steps/s)
        self._handlers: dict[type[C.Command], Callable[[Any, str | None], None]] = {
            C.Pause: self._cmd_pause, C.Resume: self._cmd_resume, C.Step: self._cmd_step, C.Stop: self._cmd_stop,
            C.SetFreeze: self._cmd_freeze, C.SetSchedule: self._cmd_schedule, C.SetLearningRate: self._cmd_lr,
            C.SetFreezeMethod: self._cmd_method, C.SampleNow: self._cmd_sample,
            C.SaveCheckpoint: self._cmd_checkpoint,
        }

    # -- any thread -------------------------------------------------------------------------------------------
    def send(self, command: C.Command, id: str | None = None) -> None:  # noqa: A002 - the wire name
        """Queue a command; it applies at the next step boundary. Safe from any thread."""
        self.commands.put(command, id)

    # -- read-only views (valid after prepare) --------------------------------------------------------------
    @property
    def var_infos(self) -> list:
        return self.prepared.var_infos

    @property
    def scope_tree(self) -> Any:
        return self.prepared.tree

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

    def has_listener(self, hook: str, besides: Observer | None = None) -> bool:
        """Whether an observer other than `besides` overrides `hook` (nobody shows samples headless)."""
        return any(o is not besides and overrides(o, hook) for o in self.observers)

    # -- preparation ----------------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Load the experiment, build models and optimizers, trace the steps. Raises `UserError`."""
        if self.prepared is not None:
            return
        from .prepare import prepare
        self.prepared = prepare(self.config, self._on_trace)
        self.config = self.prepared.config
        self._warm = True
        self._set_freeze(self.prepared.freeze, self.config.update_frozen_stats)
        self._set_method(self.config.freeze_method)
        for message in self.prepared.warnings:
            self.emit(E.Warning(message=message))
        for o in self.observers:
            o.on_prepared(self)

    def _on_trace(self, phase: str, variant: str) -> None:
        self.traces += 1
        if self._warm:
            self.retraces += 1
        cls = E.Retrace if self._warm else E.Trace
        self.emit(cls(phase=phase, variant=variant, traces=self.traces))

    # -- the loop -------------------------------------------------------------------------------------------
    def run(self) -> Status:
        """Train until the step target, a Stop command, or an error. Returns the final status."""
        import tensorflow as tf

        from .checkpoints import CheckpointStore
        self.prepare()
        p, cfg = self.prepared, self.config
        self.run_dir = prepare_run_dir(cfg.run_dir or default_run_dir(cfg))
        cfg.run_dir = str(self.run_dir)
        self.checkpoints = CheckpointStore(p, self.run_dir)
        self._t0 = time.perf_counter()
        self._rate = (self._t0, self.step, 0.0)
        self._running = True
        reason = "done"
        try:
            self.emit(E.Start(device=p.device_name, experiment=cfg.experiment_file or cfg.example or "",
                              phases=list(p.phase_names),
                              phase_variables={n: list(paths) for n, paths in zip(p.phase_names, p.phase_paths)},
                              freeze=list(self.freeze), schedule=p.policy.to_dict(), lr=dict(cfg.lr),
                              method=self.method, run_dir=str(self.run_dir), steps=cfg.steps))
            for o in self.observers:
                o.on_run_begin(self)
            with tf.device(p.device):
                reason = self._loop()
        except BaseException as e:
            reason = "error"
            self.emit(E.Error(message=str(e) if isinstance(e, UserError) else f"{type(e).__name__}: {e}",
                              detail=getattr(e, "detail", None) or traceback.format_exc()))
            raise
        finally:
            try:
                self._fetch()
                for o in self.observers:
                    o.on_run_end(self, reason)
                self._fetch()  # what observers recorded at the end (final metrics)
            finally:
                self._stop, self._running = True, False
                stop = self._stop_command
                self.emit(E.Stop(reason=reason, traces=self.traces, retraces=self.retraces,
                                 command=None if stop is None else stop.command.to_dict(),
                                 id=None if stop is None else stop.id))
                self._report_status()
        return self.status()

    def _loop(self) -> str:
        p, cfg = self.prepared, self.config
        steps = p.steps
        fetch_every, fetch_s = cfg.fetch_every, cfg.fetch_seconds
        next_fetch = time.perf_counter() + fetch_s
        var_every = cfg.var_every
        step_observers = self._step_observers
        self._phase_counts = [0] * len(steps)
        self._report_status()
        while True:
            if self._paused or self.commands.pending():
                self._handle_commands()
            if self._stop:
                return "stopped"
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
            out = st.masked() if self._use_masked[i] else st.fast()
            self.step += 1
            self._phase = i
            self._phase_counts[i] += 1
            self._pending.append(PendingStep(self.step, i, time.time(), out, self._frozen_rows[i],
                                             self._phase_counts[i] % var_every == 0))
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
        for env in self.commands.drain():
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
        self.pause("user", cmd, cid)

    def _cmd_resume(self, cmd: C.Resume, cid: str | None) -> None:
        self._steps_left = None
        if self._paused:
            self._paused = False
            self.emit(E.Resume(command=cmd.to_dict(), id=cid))
            self._report_status()

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

    def _cmd_freeze(self, cmd: C.SetFreeze, cid: str | None) -> None:
        scopes = resolve_scopes(cmd.scopes, self.prepared.var_infos)
        self._set_freeze(scopes, bool(cmd.update_frozen_stats))
        self.emit(E.Freeze(scopes=list(scopes), update_frozen_stats=bool(cmd.update_frozen_stats),
                           command=cmd.to_dict(), id=cid))

    def _cmd_schedule(self, cmd: C.SetSchedule, cid: str | None) -> None:
        if not isinstance(cmd.policy, dict):
            raise UserError(f"a ratio command needs a policy dictionary, got {cmd.policy!r}")
        new = policy_from_dict(cmd.policy, self.prepared.phase_names).continue_from(self.prepared.policy)
        self.prepared.policy = new
        self.emit(E.Ratio(policy=new.to_dict(), command=cmd.to_dict(), id=cid))

    def _cmd_lr(self, cmd: C.SetLearningRate, cid: str | None) -> None:
        names = self.prepared.phase_names
        if cmd.phase not in names:
            raise UserError(f"unknown phase {cmd.phase!r}; phases are {', '.join(names)}")
        set_learning_rate(self.prepared.optimizers[names.index(cmd.phase)], cmd.phase, cmd.value)
        self.config.lr[cmd.phase] = float(cmd.value)
        self.emit(E.LearningRate(phase=cmd.phase, value=float(cmd.value), command=cmd.to_dict(), id=cid))

    def _cmd_method(self, cmd: C.SetFreezeMethod, cid: str | None) -> None:
        self._set_method(cmd.method)
        self.emit(E.Method(method=cmd.method, command=cmd.to_dict(), id=cid))

    def _cmd_sample(self, cmd: C.SampleNow, cid: str | None) -> None:
        self.emit(E.SampleRequested(command=cmd.to_dict(), id=cid))
        self.sample()

    def _cmd_checkpoint(self, cmd: C.SaveCheckpoint, cid: str | None) -> None:
        self.emit(E.CheckpointRequested(command=cmd.to_dict(), id=cid))
        self.save_checkpoint()

    # -- state changes ----------------------------------------------------------------------------------------
    def pause(self, reason: str, cmd: C.Command | None = None, cid: str | None = None) -> None:
        """Pause at the next boundary (`reason`: user, step, nan, nothing to train). Training thread only."""
        if self._paused:
            return
        self._paused = True
        self.emit(E.Pause(reason=reason, command=None if cmd is None else cmd.to_dict(), id=cid))
        self._report_status()

    def _set_freeze(self, scopes: tuple[str, ...], update_stats: bool) -> None:
        p = self.prepared
        self.freeze = tuple(scopes)
        self.config.update_frozen_stats = update_stats
        restore = np.array(frozen_mask(p.stat_paths, scopes), dtype=bool) & (not update_stats)
        self._use_masked, self._frozen_rows, self._runnable = [], [], []
        for name, paths, st in zip(p.phase_names, p.phase_paths, p.steps):
            mask = np.array(frozen_mask(paths, scopes), dtype=bool)
            st.frozen.assign(mask)
            st.restore_stats.assign(restore)
            self._use_masked.append(bool(mask.any() or restore.any()))
            self._frozen_rows.append(mask)
            self._runnable.append(not mask.all())
            if mask.all():
                self.emit(E.Warning(message=f"phase {name} has all its variables frozen; it is skipped", phase=name))

    def _set_method(self, method: str) -> None:
        if method not in C.FREEZE_METHODS:
            raise UserError(f"freeze method {method!r} is unknown; use 'exact' or 'gate'")
        self.method = method
        for st in self.prepared.steps:
            st.gate.assign(method == "gate")

    # -- mechanics the observers call -------------------------------------------------------------------------
    def emit(self, event: E.Event) -> None:
        """Stamp `event` with the current step and time and hand it to every observer."""
        event = replace(event, step=event.step or self.step, time=event.time or E.now())
        for o in self.observers:
            o.on_event(event)

    def save_checkpoint(self) -> None:
        """Checkpoint the state after the current step (once per step)."""
        store = self.checkpoints
        if store is None or store.last_step == self.step:
            return
        path = store.save(self.step)
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

    def _report_status(self) -> None:
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

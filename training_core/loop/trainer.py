"""The training loop: plain Python that reports to a list of observers and takes commands.

In the manner of Keras 3's trainer and Orange3's TaskState: `Trainer.run()` blocks on whatever thread
calls it (the training process's main thread, or the main thread headless), applies queued commands
at step boundaries, and reports to its observers on that same thread. Everything it does besides
training (the run record, checkpoints, samples, leak and NaN alarms, the CLI's progress bar) is an
observer (observers/), and each sees the run through a narrow handle (`handle`, loop/handle.py), never
the trainer itself. The loop only steps, fetches metrics (loop/fetch.py) and applies commands through
one table (loop/command_table.py) at the boundaries its command source decides (loop/multiworker.py: one
device, or every worker at once).

Its state is declared in two records (loop/state.py): `state`, what a checkpoint holds of the loop, and
`flow`, whether it runs, pauses or stops. A command applied at a boundary is logged with the step count at
that boundary: a command logged at step N first affects step N+1.

A measure beside training (`metrics(ctx)` on a snapshot of the weights, on a thread of its own) is
loop/measures.py's; the loop waits for it where the record must hold every step up to now.
"""
from __future__ import annotations

import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from training_core.base import commands as C
from training_core.base import events as E
from training_core.base.config import RunConfig
from training_core.base.errors import UserError
from training_core.base.metrics import PendingStep, Status
from training_core.base.scopes import frozen_mask
from training_core.experiment.usercode import first_line, user_line
from training_core.loop import command_table
from training_core.loop.dispatch import EventDispatch
from training_core.loop.fetch import Fetcher
from training_core.loop.handle import TrainerHandle
from training_core.loop.measures import Measures
from training_core.loop.multiworker import CommandSource, LocalCommands
from training_core.loop.state import Flow, LoopState
from training_core.loop.warmup import WarmUp
from training_core.observers.base import Observer, step_hooks
from training_core.observers.defaults import default_observers
from training_core.rundir import lock as runlock

IDLE_POLL_S = 0.25  # while paused: how often observers (a command file reader) get a look
#: steps the record may hold back for a measure in flight before the loop waits for it: memory (a few numbers per
#: step on the host) and how late scalars.csv (what an attached view reads) may run; ~30 s of the ring at 600
#: steps/s, and more than one 3-second measure of any model this project has run
HOLD_MAX_STEPS = 20_000


class Trainer:
    """`resume=True` continues the run in `config.run_dir` from its last checkpoint (loop/restore.py)."""

    def __init__(self, config: RunConfig, observers: Observer | Sequence[Observer] | None = None,
                 resume: bool = False) -> None:
        self.config = config.validate()
        self.resuming = resume
        extra = [] if observers is None else [observers] if isinstance(observers, Observer) else list(observers)
        self.warm = WarmUp(self._on_trace)  # which variants are traced when (loop/warmup.py)
        self.handle = TrainerHandle(self)  # what the observers see
        self._dispatch = EventDispatch(lambda: self.observers)
        self.observers: list[Observer] = [*default_observers(self.config), *extra]
        self._step_observers = step_hooks(self.observers)
        self.commands = C.CommandQueue()
        self.source: CommandSource = LocalCommands()  # a multi-worker run's is set by prepare()
        self.prepared: Any = None  # engine.prepare.Prepared, after prepare()
        self.state = LoopState(method=self.config.freeze_method)
        self.flow = Flow()
        self.traces = self.retraces = 0
        self.run_dir: Path | None = None
        self.lock: runlock.RunLock | None = None  # one writer per run directory (taken by restore.begin)
        self.checkpoints: Any = None  # engine.checkpoints.CheckpointStore, while running
        self.scratch_dir: Path | None = None  # a non-chief worker's own checkpoints (set by prepare)
        #: where this run's lines of commands.jsonl begin (restore.begin: a resume skips the older lines)
        self.command_file_start: int | None = None
        self._fetcher = Fetcher()
        self.measures = Measures()  # metrics(ctx) beside training, when it runs there
        self._phase = -1
        self._use_masked: list[bool] = []
        self._frozen_rows: list[np.ndarray] = []
        self._runnable: list[bool] = []
        self._t0 = 0.0

    def send(self, command: C.Command, id: str | None = None) -> None:  # noqa: A002 - the wire name
        """Queue a command; it applies at the next step boundary. Safe from any thread."""
        self.commands.put(command, id)

    @property
    def step(self) -> int:
        return self.state.step

    @property
    def phase_counts(self) -> list[int]:
        return self.state.phase_counts

    @property
    def paused(self) -> bool:
        return self.flow.paused

    def status(self) -> Status:
        p, f = self.prepared, self.flow
        return Status(step=self.state.step, phase=p.phase_names[self._phase] if p and self._phase >= 0 else "",
                      paused=f.paused, running=f.running and not f.stopping,
                      steps_per_s=0.0 if f.paused else self._fetcher.steps_per_s,
                      elapsed_s=time.perf_counter() - self._t0 if self._t0 else 0.0,
                      device=p.device_name if p else "", run_dir=str(self.run_dir or ""),
                      target_steps=self.config.steps, traces=self.traces, count_phase=self.config.count or "",
                      counted=self.counted())

    def counted(self) -> int:
        """The steps the step target counts: one phase's (`count`), or every phase's together."""
        count, st = self.config.count, self.state
        if count is None or self.prepared is None or count not in self.prepared.phase_names:
            return st.step
        return st.phase_counts[self.prepared.phase_names.index(count)] if st.phase_counts else 0

    # -- preparation ----------------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Load the experiment, build models and optimizers, trace the steps. Raises `UserError`."""
        if self.prepared is not None:
            return
        from training_core.engine.prepare import prepare  # (it turns on op determinism, after the checks)
        run_dir = self.config.run_dir
        # a resumed run's directory is not empty, by definition: only a new run's is checked
        cfg = replace(self.config, run_dir=None) if self.resuming else self.config
        self.prepared = p = prepare(cfg, self.warm.on_trace)
        self.config = p.config
        self.set_target(self.config.steps, self.config.count)
        # a non-chief worker's own directory (prepare made it): its collective checkpoints, deleted at the end
        self.scratch_dir = None if p.placement.chief else Path(self.config.run_dir)
        if self.resuming:
            self.config.run_dir = run_dir
        if p.placement.kind == "multiworker":
            from training_core.engine.collective import Broadcast
            from training_core.loop.multiworker import CommandSync
            self.source = CommandSync(Broadcast(p.placement.strategy, p.placement.chief), p.placement.chief,
                                      self.config.sync_every)
        self.state.phase_counts = [0] * len(p.steps)
        frozen_warnings = self.set_freeze(p.freeze, self.config.update_frozen_stats)
        self.set_method(self.config.freeze_method)
        for w in [E.Warning(message=m) for m in p.warnings] + frozen_warnings:
            self.emit(w)
        self.warm.prepared(p)
        for o in self.observers:
            o.on_prepared(self.handle)

    def set_target(self, steps: int | None, count: str | None) -> None:
        """The step target before the run begins: `steps` of phase `count` (None: of every phase together)."""
        if count is not None and count not in self.prepared.phase_names:
            raise UserError(f"--count {count}: the experiment has no phase of that name; phases are "
                            f"{', '.join(self.prepared.phase_names)}")
        self.config.steps, self.config.count = steps, count

    def _on_trace(self, phase: str, variant: str, retrace: bool) -> None:
        self.traces += 1
        self.retraces += retrace  # a variant's first trace is warm-up (at preparing or on the warm-up thread)
        self.emit((E.Retrace if retrace else E.Trace)(phase=phase, variant=variant, traces=self.traces))

    # -- the loop -------------------------------------------------------------------------------------------
    def run(self) -> Status:
        """Train until the step target, a Stop command, or an error; return the final status. However it ends,
        the record closes with a `stop` event whose reason is true (an `error` event first when it failed), and
        the exception is raised again for the caller."""
        import tensorflow as tf

        from training_core.loop.restore import begin
        self.prepare()
        p = self.prepared
        try:
            began = begin(self)  # the run directory made, or the run resumed in its own: `start` or `resumed`
        except BaseException:
            if self.lock is not None:
                runlock.release(self.lock)
            raise
        self._t0 = time.perf_counter()
        self._fetcher.start(self.state.step)
        self.flow.running = True
        self.warm.begin()
        reason, error = "done", None
        try:
            self.emit(began)
            for o in self.observers:
                o.on_run_begin(self.handle)
            with tf.device(p.device):
                reason = self._loop()
        except BaseException as e:  # noqa: BLE001 - recorded, then raised again below
            reason, error = "error", e
        from training_core.loop.ending import end
        error = end(self, reason, error)  # the record closed with a true `stop` event, however the run ended
        if error is not None:
            raise error
        return self.status()

    def _loop(self) -> str:
        p, cfg, st, flow = self.prepared, self.config, self.state, self.flow
        steps = p.steps
        fetch_every, fetch_s = cfg.fetch_every, cfg.fetch_seconds
        next_fetch = time.perf_counter() + fetch_s
        var_every = cfg.var_every
        step_observers = self._step_observers
        counted = p.phase_names.index(cfg.count) if cfg.count else None  # the target counts this phase's steps
        self.report_status()
        while True:
            self._boundary()
            if flow.stopping:
                return flow.stop_command.command.reason if flow.stop_command is not None else "stopped"
            if cfg.steps is not None and (st.step if counted is None else st.phase_counts[counted]) >= cfg.steps:
                if not self._fetcher.pending:
                    return "done"
                # the last steps' numbers, read before the run is called done: a NaN among them pauses, halts or
                # rolls back as one mid-run does, at the boundary this goes back to (a short run on a fast
                # machine reached its target before its first NaN was read, and its record said `done`)
                self.fetch()
                next_fetch = time.perf_counter() + fetch_s
                continue
            if flow.paused:
                continue
            policy = p.policy
            i = policy.next_phase(self._runnable)
            if i is None:
                self.emit(E.Warning(message="every phase has all its scopes frozen; nothing can train. "
                                            "Unfreeze a scope to continue"))
                self.pause("nothing to train", decided=True)
                continue
            self._phase = i
            out = steps[i].masked() if self._use_masked[i] else steps[i].fast()
            st.step += 1
            st.phase_counts[i] += 1
            ready = self._fetcher.add(PendingStep(st.step, i, time.time(), out, self._frozen_rows[i],
                                                  st.phase_counts[i] % var_every == 0))
            if policy.needs_loss:
                policy.observe(i, float(out[0]))
            if flow.steps_left is not None:
                flow.steps_left -= 1
                if flow.steps_left <= 0:
                    flow.steps_left = None
                    self.pause("step", decided=True)
            now = time.perf_counter()
            if ready >= fetch_every or now >= next_fetch:
                measuring = self.measures.step
                if measuring is not None and st.step - measuring >= HOLD_MAX_STEPS:  # the record holds too many back
                    self.measures.collect(wait=True)
                self.fetch()
                next_fetch = now + fetch_s
            for o, period in step_observers:
                if period == 1 or st.step % period == 0:
                    o.on_step_end(self.handle)

    def _boundary(self) -> None:
        """The one paused loop: commands at this boundary, then, while paused, wait for the next ones."""
        src, flow = self.source, self.flow
        if not src.due(self.state.step, flow.paused, self.commands.pending()):
            return
        self._apply_all(self.commands.drain() if src.leads else [])
        while flow.paused and not flow.stopping:
            self.fetch()
            waiting: list[C.Envelope] = []
            if src.leads:
                for o in self.observers:
                    o.on_idle(self.handle)
                env = self.commands.get(timeout=IDLE_POLL_S)
                waiting = ([env] if env is not None else []) + self.commands.drain()
            self._apply_all(waiting)

    def _apply_all(self, envelopes: list[C.Envelope]) -> None:
        decided, pause = self.source.exchange(envelopes, self.state.nan_at)
        if decided:
            self.fetch()  # what ran before the change is reported (leaks, NaN) before the change's event
        for env in decided:
            command_table.apply(self, env)
        if pause:
            self.pause(pause, decided=True)

    # -- state changes ----------------------------------------------------------------------------------------
    def pause(self, reason: str, cmd: C.Command | None = None, cid: str | None = None, decided: bool = False) -> None:
        """Pause now: no further step is taken (`reason`: user, step, nan, nothing to train). Training thread only.
        `decided`: every worker pauses here too (a Pause command, a Step count run out, nothing to train, the
        pause a boundary's exchange carried); otherwise (an observer's: a NaN) a multi-worker run defers it to
        the next sync boundary, whose exchange carries it to every worker."""
        if self.flow.paused or (not decided and self.source.defer_pause(reason)):
            return
        self.flow.paused = True
        self.emit(E.Pause(reason=reason, command=None if cmd is None else cmd.to_dict(), id=cid))
        self.report_status()

    def set_freeze(self, scopes: tuple[str, ...], update_stats: bool) -> list[E.Warning]:
        """Apply a freeze set; returns the warnings it gives (a phase with nothing left to train), for the
        caller to emit after the event that says what changed, so the record reads cause, then effect."""
        p = self.prepared
        warnings = []
        self.state.freeze = tuple(scopes)
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
        self.state.method = method
        for st in self.prepared.steps:
            st.gate.assign(method == "gate")

    # -- mechanics the observers ask for (through the handle) -------------------------------------------------
    def emit(self, event: E.Event) -> None:
        """Stamp `event` with the current step and time and hand it to every observer (`EventDispatch`)."""
        self._dispatch(replace(event, step=event.step or self.state.step, time=event.time or E.now()))

    def sync(self, measure_may_follow: bool = False) -> None:
        """Bring every step's numbers to the observers and have them written out (`on_sync`), a measure in flight
        taken first (waited for). `measure_may_follow`: not one whose snapshot is of this very step: it holds no
        row back, and is recorded when it is done (after a checkpoint at its step, which does not hold it)."""
        if not (measure_may_follow and self.measures.step == self.state.step):
            self.measures.collect(wait=True)
        self.fetch()
        for o in self.observers:
            o.on_sync()

    def save_checkpoint(self) -> None:
        """Checkpoint the state after the current step (once per step), after the record holds every step up to
        it (so a resume finds no gap): a measure in flight of an earlier step is waited for; one of this very step
        is not (a resumed run whose record has no measure at its step measures it again). Not while a loss is non-finite: resuming such a model is useless,
        and the last good checkpoint must survive the "last 3 kept"."""
        from training_core.loop.restore import host_state
        store = self.checkpoints
        if store is None or store.last_step == self.state.step:
            return
        self.sync(measure_may_follow=True)
        if self.source.nan_at(self.state.nan_at) is not None:  # not worth keeping (decided alike on every worker)
            return
        path = store.save(self.state.step, host_state(self))
        self.emit(E.Checkpoint(path=str(Path(path).relative_to(self.run_dir))))

    def sample(self) -> None:
        """Draw samples now and hand them to the observers (a failing `sample()` is turned off, with a warning)."""
        from training_core.engine.model_state import kept, state_of
        from training_core.engine.sampling import draw_samples
        try:
            with kept(state_of(self.prepared)):  # a layer that draws at every call must not move the training's noise
                samples = draw_samples(self.prepared, self.state.step)
        except Exception as e:  # noqa: BLE001 - a broken sample view must not stop training
            self.prepared.experiment.sample = None
            self.emit(E.Warning(message=f"sample() failed and is turned off: {first_line(e)}"
                                        f"{user_line(e, self.prepared.source)}; fix the experiment file",
                                detail="".join(traceback.format_exception(e))))
            return
        if samples is not None:
            for o in self.observers:
                o.on_samples(samples)

    def record_scalars(self, values: dict[str, float], step: int | None = None, wall: float | None = None) -> None:
        """`metric/<name>` values at this step and now (or at `step` and `wall`: a measure's, whose later steps the
        record holds back), sent with the next batch. Training thread."""
        self._fetcher.add_scalars(self.state.step if step is None else step, values, wall)

    def report_status(self) -> None:
        status = self.status()
        for o in self.observers:
            o.on_status(status)

    def fetch(self) -> None:
        """Bring the steps still on the device to every observer (`on_metrics`), as one batch."""
        p = self.prepared
        batch = self._fetcher.fetch(p.phase_names, p.phase_paths, self.state.step, self.status)
        if batch is None:
            return
        self.warm.after_metrics(self.state.phase_counts)  # (first: the traces it reports came before the batch)
        for o in self.observers:
            o.on_metrics(batch)

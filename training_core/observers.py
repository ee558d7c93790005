"""The trainer's observers, as Keras runs callbacks: the loop stays plain, and every policy is an
observer in a list.

`Observer` is the base (every hook a no-op). The policies here decide *when*; the trainer provides the
mechanics they call (`save_checkpoint`, `sample`, `pause`, `emit`):
  Checkpointer  a checkpoint at step 0, every `checkpoint_every` steps and at the end
  Sampler       samples every `sample_seconds` while someone shows them (else every `sample_every`
                for the record), and at the end
  LeakAlarm     a `leak` event when a frozen variable moved (once per variable and freeze set)
  NanAlarm      a `nan` event when a loss is not finite (once per episode), then pause, stop or go on
  NanRollback   with `on_nan = "rollback"`: back to the last good checkpoint with a lower learning rate
The run record (recorder.py) and the CLI's progress bar are observers too.

Hooks run on the training thread between steps and must return quickly. `on_step_end` runs after
every step, so the trainer calls it only on observers that override it.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from . import events as E
from .metrics import MetricsBatch, PhaseBlock, Status

if TYPE_CHECKING:
    from .trainer import Trainer


class EventDispatch:
    """Hands each event to every observer, in order. An observer that emits while it handles an event
    (NanRollback giving up on a `nan`: a warning and a pause) has its events handed out once that event
    has reached every observer, so the record reads cause, then effect: they used to come before the `nan`
    they answered. Per thread: the warm-up thread's `trace` events are its own."""

    def __init__(self, observers: Callable[[], Sequence["Observer"]]) -> None:
        self._observers = observers
        self._local = threading.local()

    def __call__(self, event: E.Event) -> None:
        queue = getattr(self._local, "queue", None)
        if queue is not None:  # inside an observer's on_event: after the event it handles
            queue.append(event)
            return
        self._local.queue = queue = deque([event])
        try:
            while queue:
                e = queue.popleft()
                for o in self._observers():
                    o.on_event(e)
        finally:
            self._local.queue = None


class Observer:
    """Receives a run's reports on the training thread. Override what you need."""

    def on_prepared(self, trainer: "Trainer") -> None:
        """Models built and steps traced; no run directory yet."""

    def on_run_begin(self, trainer: "Trainer") -> None:
        """The run directory exists and the `start` event is about to be emitted."""

    def on_step_end(self, trainer: "Trainer") -> None:
        """After every step (only called when overridden)."""

    def on_idle(self, trainer: "Trainer") -> None:
        """While paused, a few times a second."""

    def on_metrics(self, batch: MetricsBatch) -> None:
        """Every `fetch_every` steps or `fetch_seconds`: the numbers of the steps since the last batch."""

    def on_event(self, event: E.Event) -> None:
        """Every event, in order (also those before the run directory exists: traces)."""

    def on_samples(self, samples: dict[str, Any]) -> None:
        """Generated samples (see `Experiment.sample`)."""

    def on_status(self, status: Status) -> None:
        """The trainer's state changed (paused, resumed, ended)."""

    def on_sync(self) -> None:
        """Write out everything received so far (before a checkpoint or a rollback: the record must hold
        every step a checkpoint holds)."""

    def on_run_end(self, trainer: "Trainer", reason: str) -> None:
        """Training ended (`done`, `stopped` or `error`); the `stop` event follows."""


def overrides(observer: Observer, hook: str) -> bool:
    return getattr(type(observer), hook) is not getattr(Observer, hook)


class Checkpointer(Observer):
    """Checkpoints at step 0 (so a run killed early can resume), every `every` steps (0: none between),
    and at the end, with each model's weights in Keras' format (`models/<name>.weights.h5`). Not after an
    error: a failed step may have left the model half-updated, so the last checkpoint before it stays the
    resume point."""

    def __init__(self, every: int) -> None:
        self.every = every

    def on_run_begin(self, trainer: "Trainer") -> None:
        trainer.save_checkpoint()

    def on_step_end(self, trainer: "Trainer") -> None:
        if self.every and trainer.step % self.every == 0:
            trainer.save_checkpoint()

    def on_run_end(self, trainer: "Trainer", reason: str) -> None:
        if reason != "error":
            trainer.save_checkpoint()
            if trainer.checkpoints is not None and trainer.nan_at is None:
                trainer.checkpoints.export_weights()


class Sampler(Observer):
    """Draws samples every `seconds` while another observer shows them (the window), else every
    `record_seconds` for the record alone (headless; 0: none between), and once at the end, so the
    samples view and the record end on the final state. Observers marked `records_only` (the run
    record's sample writer) take what is drawn but do not ask for the live cadence."""

    def __init__(self, seconds: float, record_seconds: float = 0.0) -> None:
        self.seconds = seconds
        self.record_seconds = record_seconds
        self._next = 0.0
        self._period: float | None = None  # None: nobody wants samples
        self._wanted = False

    def on_run_begin(self, trainer: "Trainer") -> None:
        takers = [o for o in trainer.observers if o is not self and overrides(o, "on_samples")]
        live = any(not getattr(o, "records_only", False) for o in takers)
        self._wanted = bool(takers)
        self._period = self.seconds if live else (self.record_seconds or None) if takers else None
        self._next = time.perf_counter()

    def on_step_end(self, trainer: "Trainer") -> None:
        if self._period is not None and time.perf_counter() >= self._next:
            self._next = time.perf_counter() + self._period
            trainer.sample()

    def on_run_end(self, trainer: "Trainer", reason: str) -> None:
        if self._wanted and reason != "error":
            trainer.sample()


class LeakAlarm(Observer):
    """A frozen variable whose update is not exactly 0 leaked (the gate method: Adam's momentum, AdamW's
    decay). Reported once per variable until the freeze set or the method changes."""

    def __init__(self) -> None:
        self._trainer: "Trainer | None" = None
        self._seen: set[str] = set()

    def on_run_begin(self, trainer: "Trainer") -> None:
        self._trainer = trainer

    def on_event(self, event: E.Event) -> None:
        if isinstance(event, (E.Freeze, E.Method, E.Rollback, E.Resumed)):
            self._seen.clear()

    def on_metrics(self, batch: MetricsBatch) -> None:
        for b in batch.blocks:
            self._check(b)

    def _check(self, b: PhaseBlock) -> None:
        leaks = b.frozen & (b.update_norm > 0)
        for j in np.flatnonzero(leaks.any(axis=0)):
            path = b.var_paths[j]
            if path in self._seen or self._trainer is None:
                continue
            self._seen.add(path)
            r = int(np.flatnonzero(leaks[:, j])[0])
            self._trainer.emit(E.Leak(variable=path, phase=b.phase, at_step=int(b.steps[r]),
                                      update_norm=float(b.update_norm[r, j]), method=self._trainer.method))


class NanAlarm(Observer):
    """A loss that is NaN or Inf: one `nan` event per phase and episode (a loss that stays NaN is not
    reported again at every fetch; a finite loss, a resume or a rollback re-arms it). Then, by `on_nan`:
    pause (the window: the user can roll back), stop (headless), or go on (`rollback`: NanRollback acts;
    `continue`). While a loss is non-finite, `trainer.nan_at` says since when, and no checkpoint is saved."""

    def __init__(self, on_nan: str) -> None:
        self.on_nan = on_nan
        self._trainer: "Trainer | None" = None
        self._phases: set[str] = set()

    def on_run_begin(self, trainer: "Trainer") -> None:
        self._trainer = trainer

    def on_event(self, event: E.Event) -> None:
        if isinstance(event, (E.Resume, E.Rollback)):
            self._phases.clear()

    def on_metrics(self, batch: MetricsBatch) -> None:
        """A batch spans many steps of every phase: its non-finite losses are reported earliest first (the
        phase that failed first is the one a rollback lowers), then the run pauses or stops once."""
        tr = self._trainer
        if tr is None:
            return
        found = []
        for b in batch.blocks:
            bad = ~np.isfinite(b.loss)
            if bad.any() and b.phase not in self._phases:
                self._phases.add(b.phase)
                r = int(np.flatnonzero(bad)[0])
                found.append((int(b.steps[r]), b.phase, str(b.loss[r])))
            elif len(b.loss) and np.isfinite(b.loss[-1]):
                self._phases.discard(b.phase)
                if not self._phases:
                    tr.nan_at = None
        for at, phase, value in sorted(found):
            tr.nan_at = at if tr.nan_at is None else min(tr.nan_at, at)
            tr.emit(E.Nan(phase=phase, at_step=at, value=value))
        if found and self.on_nan in ("pause", "stop"):
            tr.pause("nan")
        if found and self.on_nan == "stop":
            from .commands import Stop
            tr.send(Stop(reason="halted"))


class NanRollback(Observer):
    """`--on-nan rollback`: on a `nan` event, go back to the last checkpoint strictly before the NaN's step
    (one saved after it, before the NaN reached the host, holds non-finite weights) and multiply the
    failing phase's learning rate by `factor`; after `MAX_ROLLBACKS`, give up and pause (headless: stop)."""

    MAX_ROLLBACKS = 3

    def __init__(self, factor: float) -> None:
        self.factor = factor
        self._trainer: "Trainer | None" = None
        self._pending = False

    def on_run_begin(self, trainer: "Trainer") -> None:
        self._trainer = trainer

    def on_event(self, event: E.Event) -> None:
        tr = self._trainer
        if isinstance(event, E.Rollback):
            self._pending = False
        if not isinstance(event, E.Nan) or tr is None or self._pending:
            return
        good = [s for s in tr.checkpoints.steps() if s < event.at_step]
        if tr.rollbacks >= self.MAX_ROLLBACKS or not good:
            why = (f"after this run's {tr.rollbacks} rollback{'s' if tr.rollbacks != 1 else ''}" if good
                   else "and there is no checkpoint before it")
            tr.emit(E.Warning(message=f"the loss of phase {event.phase} became {event.value} at step "
                                      f"{event.at_step} {why}; gave up. Lower its learning rate and resume "
                                      f"from the last checkpoint", phase=event.phase))
            tr.pause("nan")
            return
        from .commands import RollBack
        self._pending = True
        tr.send(RollBack(step=good[-1], phase=event.phase, lr_factor=self.factor,
                         reason=f"nan: loss of {event.phase} was {event.value} at step {event.at_step}"))

"""The alarms: a frozen variable that moved (a leak) and a loss that is not finite (a NaN), and what a run does
about a NaN (pause, stop, go on, or roll back to the last good checkpoint with a lower learning rate).

Each sees the run through its `RunHandle` only: it reads the batches of metrics, emits the events that say
what it found, and asks the run to pause, stop or roll back with the same commands a user sends.
"""
from __future__ import annotations

import numpy as np

from training_core.base import events as E
from training_core.base.metrics import MetricsBatch, PhaseBlock
from training_core.observers.base import Observer, RunHandle


class LeakAlarm(Observer):
    """A frozen variable whose update is not exactly 0 leaked (the gate method: Adam's momentum, AdamW's
    decay). Reported once per variable until the freeze set or the method changes."""

    def __init__(self) -> None:
        self._run: "RunHandle | None" = None
        self._seen: set[str] = set()

    def on_run_begin(self, run: RunHandle) -> None:
        self._run = run

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
            if path in self._seen or self._run is None:
                continue
            self._seen.add(path)
            r = int(np.flatnonzero(leaks[:, j])[0])
            self._run.emit(E.Leak(variable=path, phase=b.phase, at_step=int(b.steps[r]),
                                      update_norm=float(b.update_norm[r, j]), method=self.cause(b.phase, path)))

    def cause(self, phase: str, path: str) -> str:
        """The leak's `method`: how the run freezes (a front end may tell the causes of its leaks apart)."""
        return self._run.method


class NanAlarm(Observer):
    """A loss that is NaN or Inf: one `nan` event per phase and episode (a loss that stays NaN is not
    reported again at every fetch; a finite loss, a Continue command or a rollback re-arms it). Then, by `on_nan`:
    pause (the window: the user can roll back), stop (headless), or go on (`rollback`: NanRollback acts;
    `continue`). While a loss is non-finite, the run's `nan_at` says since when, and no checkpoint is saved."""

    def __init__(self, on_nan: str) -> None:
        self.on_nan = on_nan
        self._run: "RunHandle | None" = None
        self._phases: set[str] = set()

    def on_run_begin(self, run: RunHandle) -> None:
        self._run = run

    def on_event(self, event: E.Event) -> None:
        if isinstance(event, (E.Continue, E.Rollback)):
            self._phases.clear()

    def on_metrics(self, batch: MetricsBatch) -> None:
        """A batch spans many steps of every phase: its non-finite losses are reported earliest first (the
        phase that failed first is the one a rollback lowers), then the run pauses or stops once."""
        run = self._run
        if run is None:
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
                    run.note_nan(None)
        for at, phase, value in sorted(found):
            run.note_nan(at)
            run.emit(E.Nan(phase=phase, at_step=at, value=value))
        if found and self.on_nan in ("pause", "stop"):
            run.pause("nan")
        if found and self.on_nan == "stop":
            from training_core.base.commands import Stop
            run.send(Stop(reason="halted"))


class NanRollback(Observer):
    """`--on-nan rollback`: on a `nan` event, go back to the last checkpoint strictly before the NaN's step
    (one saved after it, before the NaN reached the host, holds non-finite weights) and multiply the
    failing phase's learning rate by `factor`; after `MAX_ROLLBACKS`, give up and pause (headless: stop)."""

    MAX_ROLLBACKS = 3

    def __init__(self, factor: float) -> None:
        self.factor = factor
        self._run: "RunHandle | None" = None
        self._pending = False

    def on_run_begin(self, run: RunHandle) -> None:
        self._run = run

    def on_event(self, event: E.Event) -> None:
        run = self._run
        if isinstance(event, E.Rollback):
            self._pending = False
        if not isinstance(event, E.Nan) or run is None or self._pending:
            return
        good = [s for s in run.checkpoint_steps() if s < event.at_step]
        if run.rollbacks >= self.MAX_ROLLBACKS or not good:
            why = (f"after this run's {run.rollbacks} rollback{'s' if run.rollbacks != 1 else ''}" if good
                   else "and there is no checkpoint before it")
            run.emit(E.Warning(message=f"the loss of phase {event.phase} became {event.value} at step "
                                      f"{event.at_step} {why}; gave up. Lower its learning rate and resume "
                                      f"from the last checkpoint", phase=event.phase))
            run.pause("nan")
            return
        from training_core.base.commands import Rollback
        self._pending = True
        run.send(Rollback(step=good[-1], phase=event.phase, lr_factor=self.factor,
                         reason=f"nan: loss of {event.phase} was {event.value} at step {event.at_step}"))


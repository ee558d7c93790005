"""Replaying a run: the plan's commands sent at the steps they were logged at (the plan, and why a replay
is exact: rundir/replay_plan.py)."""
from __future__ import annotations

from collections import deque

from training_core.base import events as E
from training_core.base.commands import Command, SampleNow
from training_core.observers.base import Observer, RunHandle
from training_core.rundir.replay_plan import ReplayPlan


class Replayer(Observer):
    """Sends the plan's commands at the steps they were logged at (see the module docstring)."""

    def __init__(self, plan: ReplayPlan) -> None:
        self.plan = plan
        self._due: deque[tuple[int, Command]] = deque(plan.commands)
        self._samples: deque[int] = deque(plan.sample_steps)  # drawn after that step's commands, as they were

    def on_run_begin(self, run: RunHandle) -> None:
        p = self.plan
        run.emit(E.Replay(source=str(p.source), commands=len(p.commands), stop_step=p.stop_step))
        if not p.stopped_cleanly:
            run.emit(E.Warning(message=f"{p.source} has no stop event (the process was killed); "
                                           f"replaying up to its last recorded step, {p.stop_step}"))
        self._send_due(run)

    def on_step_end(self, run: RunHandle) -> None:
        if (self._due and self._due[0][0] <= run.step) or (self._samples and self._samples[0] <= run.step):
            self._send_due(run)

    on_idle = on_step_end

    def _send_due(self, run: RunHandle) -> None:
        while self._due and self._due[0][0] <= run.step:
            run.send(self._due.popleft()[1])
        if self._samples and self._samples[0] <= run.step:
            while self._samples and self._samples[0] <= run.step:
                self._samples.popleft()
            run.send(SampleNow())

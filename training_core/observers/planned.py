"""`PlannedCommands`: the run's planned changes (`config.planned`, base/planned.py), sent at their steps.

Only a run with a plan has this observer (observers/defaults.py): every other run's steps are as before.

Why an observer: a planned change must take the path every other change takes (the window's, code's,
`commands.jsonl`'s), so it is applied at a step boundary by the one command table and logged as its
ordinary event; the observer only decides when. A change planned at step N is sent after step N
(`on_step_end`), and the trainer applies it at that boundary: logged at step N, it first affects step
N + 1, like a command a user sent then. One planned at step 0 is sent before the first step.

Resumed (`--resume`) or rolled back, the record has been cut back to a checkpoint and holds the events of
exactly the changes that checkpoint holds: a planned change whose event (by its id) is there is not sent
again; every other one is sent at its step. (A change planned at step C, where the checkpoint is, may be in
the checkpoint or not: at the end of a run it was applied before the final checkpoint was saved, mid-run
after the checkpoint of that step; the record says which.) After a rollback to the checkpoint at C, a
change planned at exactly C is applied after step C + 1: the rollback itself was applied at that boundary.
"""
from __future__ import annotations

from collections import deque

from training_core.base import events as E
from training_core.base.commands import Command
from training_core.base.planned import is_planned_id, planned_commands, planned_id
from training_core.observers.base import Observer, RunHandle
from training_core.rundir.reading import read_events


class PlannedCommands(Observer):
    """Sends `config.planned` at its steps (module docstring). Nothing to do without a plan."""

    def __init__(self) -> None:
        self._plan: list[tuple[int, Command, str]] = []
        self._due: deque[tuple[int, Command, str]] = deque()
        self._run: RunHandle | None = None

    def on_run_begin(self, run: RunHandle) -> None:
        self._run = run
        planned = planned_commands(run.config.planned)
        # stable by step: two changes planned at one step apply in the order written
        self._plan = sorted(((s, c, planned_id(i)) for i, (s, c) in enumerate(planned)), key=lambda t: t[0])
        self._from_record(run)
        self._send_due(run)

    def _from_record(self, run: RunHandle) -> None:
        """Due: the changes whose event the record (cut back to a checkpoint, when resumed) does not hold."""
        done = {e.id for e in read_events(run.run_dir) if is_planned_id(getattr(e, "id", None))} \
            if run.run_dir is not None else set()
        self._due = deque(t for t in self._plan if t[2] not in done)

    def on_step_end(self, run: RunHandle) -> None:
        if self._due and self._due[0][0] <= run.step:
            self._send_due(run)

    def on_event(self, event: E.Event) -> None:
        if isinstance(event, E.Rollback) and self._plan and self._run is not None:
            self._from_record(self._run)  # the restored state lacks the changes applied after that checkpoint
            self._send_due(self._run)

    def _send_due(self, run: RunHandle) -> None:
        while self._due and self._due[0][0] <= run.step:
            _, command, cid = self._due.popleft()
            run.send(command, cid)

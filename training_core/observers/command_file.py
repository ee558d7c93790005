"""Commands from other processes, through the run directory's `commands.jsonl`, sent to the loop.

The file's format, and why a file (a run on a server is steered from a laptop over sshfs or NFS, with no
port and no daemon), are in `rundir/commands_file.py`; this observer only decides when to look.

Cost: it looks at most every `POLL_S` seconds (one `stat`, ~5 us; reading only the new bytes when the file
grew), from `on_metrics` while training (the loop fetches metrics at a step boundary at least every
0.25 s) and `on_idle` while paused. It has no per-step hook, so a step costs nothing more (`bench/run.py`
compares runs with and without it). A command sent here is applied at the same boundary.

Lines already in the file when the run opens its directory (a resumed run) are not applied: they were
meant for an earlier process. A warning says how many of them no event of the record answers (those a sender
may still wait for); the rest were applied or refused then, and a window's sample requests are stale.
"""
from __future__ import annotations

import time
from pathlib import Path

from training_core.base import events as E
from training_core.base.commands import Envelope
from training_core.base.metrics import MetricsBatch
from training_core.observers.base import Observer, RunHandle
from training_core.rundir.commands_file import POLL_S, CommandTail
from training_core.rundir.layout import COMMANDS_FILE
from training_core.rundir.reading import read_events


class CommandFileReader(Observer):
    """Reads `RUN_DIR/commands.jsonl` at step boundaries (at most every `poll_s`) and sends what it finds."""

    def __init__(self, poll_s: float = POLL_S) -> None:
        self.poll_s = poll_s
        self.path: Path | None = None
        self._run: RunHandle | None = None
        self._tail: CommandTail | None = None
        self._next = 0.0

    def on_run_begin(self, run: RunHandle) -> None:
        self._run = run
        self.path = Path(run.run_dir) / COMMANDS_FILE
        # where this run's commands begin (a resume: the file's size when it resumed): lines appended since,
        # after the `start` or `resumed` event a watcher saw, are applied
        self._tail = CommandTail(self.path, run.command_file_start)
        if self._tail.skipped:
            answered = {e.id for e in read_events(run.run_dir) if getattr(e, "id", None)}
            n = self._tail.unanswered(answered)
            if n:
                run.emit(E.Warning(message=f"{n} command(s) in {COMMANDS_FILE} from before this process opened the "
                                           f"run were never applied (no event answers them) and are not applied by "
                                           f"it now; append them again to apply them"))
        self._next = time.perf_counter()

    def on_metrics(self, batch: MetricsBatch) -> None:
        if self._run is not None:
            self.on_idle(self._run)

    def on_idle(self, run: RunHandle) -> None:
        now = time.perf_counter()
        if now >= self._next:
            self._next = now + self.poll_s
            self.poll(run)

    def poll(self, run: RunHandle) -> None:
        """Read what was appended since the last look and send it (on the training thread)."""
        if self._tail is None:
            return
        for got in self._tail.read():
            if isinstance(got, Envelope):
                run.send(got.command, got.id)
            else:
                run.emit(got)

"""A stand-in for app.training_process.TrainingProcess in tests of the window's own widgets: the same methods
(load, prepare, start, send, shutdown) and the same `reports` signals (app.training_process.Reports), fed by
tests/core/synthetic.py's `SimulatedTrainer` instead of a training process. No process, no TensorFlow.

Reports are delivered as the real ones are: later, from the event loop (a zero timer stands in for the
reader thread's queued signals), never inside the call that caused them. Steps happen only when a
test calls `train(n)`, so what a test checks is exactly what it made happen. End-to-end tests with
the real training process cover every path too (tests/app/test_window_e2e.py).
"""
from __future__ import annotations

from collections import deque
from dataclasses import replace

from PySide6.QtCore import QObject, QTimer

from app.training_process import Reports
from tests.core.synthetic import SimulatedTrainer
from training_core import Command, RunConfig
from training_core.base import events as E
from training_core.base import protocol as P
from training_core.runs import source_of

_DIED = object()  # queued marker: emit `died` here


class FakeTrainingService(QObject):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.reports = Reports(self)
        self.sim = SimulatedTrainer()
        self.requests: list[tuple] = []  # ("load",), ("prepare", config), ("start", config), in order
        self.sent: list[Command] = []  # every command the window handed to a run
        self.prepare_failures: dict[tuple[str, str], tuple[str, str]] = {}  # source -> (summary, detail)
        self.run_failure: str | None = None  # the next run fails before it starts, with this summary
        self.closed = False
        self._accepting = False
        self._queue: deque = deque()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._deliver)

    # -- the TrainingService interface ----------------------------------------------------------------
    def load(self) -> None:
        self.requests.append(("load",))
        self._queue_reports(self.sim.load())

    def prepare(self, config: RunConfig) -> None:
        self.requests.append(("prepare", config))
        failure = self.prepare_failures.get(source_of(config))
        if failure is None:
            self._queue_reports(self.sim.prepare(config))
        else:
            self._queue_reports([P.Busy("Preparing…"), P.Failed(*failure), P.Busy("")])

    def start(self, config: RunConfig, resume: bool = False) -> None:
        self.requests.append(("start", config))  # (resume is a real-service path: test_window_resume.py)
        self._accepting = True
        if self.run_failure is not None:
            summary, self.run_failure = self.run_failure, None
            self._queue_reports([P.Busy(""), P.RunStarted(config.run_dir or ""), P.Failed(summary, ""),
                                 P.Busy(""), P.RunFinished(None)])
        else:
            self._queue_reports(self.sim.run(config))

    def send(self, command: Command, id: str | None = None) -> bool:  # noqa: A002 - the wire name
        if not self._accepting:
            return False
        self.sent.append(command)
        reports = self.sim.command(command)
        if id is not None:  # as the trainer does: the event that applies a command carries its id
            reports = [P.Emitted(replace(r.event, id=id)) if isinstance(r, P.Emitted)
                       and isinstance(r.event, E.ControlEvent) else r for r in reports]
        self._queue_reports(reports)
        return True

    def shutdown(self, timeout_s: float = 2.0) -> bool:
        self.closed, self._accepting = True, False
        self._timer.stop()
        self._queue.clear()
        return True

    def alive(self) -> list:
        return []

    # -- what a test makes happen -------------------------------------------------------------------------
    def train(self, n: int) -> None:
        """`n` steps (fewer when a Step count or the step target ends them first)."""
        self._queue_reports(self.sim.train(n))

    def nan(self, phase: str = "D") -> None:
        self._queue_reports(self.sim.nan(phase))

    def die(self, code: int = -9) -> None:
        """What the reader thread reports when the training process is killed."""
        self._queue_reports([P.Failed(f"the training process ended unexpectedly ({P.process_end(code)}); a new one "
                                      "is starting: check the run's memory use, then press Start"),
                             P.Busy(""), P.RunFinished(None), (_DIED, code)])

    @property
    def pending(self) -> bool:
        """Reports queued and not delivered yet."""
        return bool(self._queue)

    # -- delivery -------------------------------------------------------------------------------------------
    def _queue_reports(self, reports: list) -> None:
        if self.closed:
            return
        self._queue.extend(reports)
        self._timer.start()

    def _deliver(self) -> None:
        while self._queue and not self.closed:
            r = self._queue.popleft()
            if isinstance(r, tuple) and r[0] is _DIED:
                self._accepting = False
                self.reports.died.emit(r[1])
                continue
            if isinstance(r, P.RunFinished):
                self._accepting = False
            self.reports.emit_report(r)

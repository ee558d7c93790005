"""The window's end of its training service: requests go out, every report goes into the `Session`,
and a service that dies is replaced.

Reports arrive as queued Qt signals (the service's reader thread emits them); they are received here,
by a QObject that lives on the GUI thread, so `Session.handle` and everything subscribed to the session
always run on the GUI thread. The window never handles a report itself: it draws the session.
"""
from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QObject, Signal, Slot

from training_core import Command, RunConfig, SetFreeze, SetFreezeMethod, SetLearningRate, SetRatio
from training_core.runs import Session

from .training_process import TrainingProcess, TrainingService

ServiceFactory = Callable[[QObject], TrainingService]


class TrainingController(QObject):
    serviceReplaced = Signal()  # the old service died; a new one runs but has not loaded TensorFlow yet

    def __init__(self, session: Session, factory: ServiceFactory = TrainingProcess,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self._factory = factory
        self.closing = False  # the window is closing: a service that ends now is not replaced
        #: while the session is attached to a run another process writes, commands go here (app/attach.py)
        self.remote: Callable[[Command], None] | None = None
        self.service = self._connect(factory(self))

    def _connect(self, service: TrainingService) -> TrainingService:
        service.reports.report.connect(self._on_report)
        service.reports.died.connect(self._on_died)
        return service

    # -- requests ------------------------------------------------------------------------------------------
    def load(self, config: RunConfig | None) -> None:
        """Import TensorFlow in the service, then prepare `config`'s experiment (None: prepare nothing)."""
        self.session.loading()
        self.service.load()
        if config is not None:
            self.service.prepare(config)

    def prepare(self, config: RunConfig) -> None:
        self.service.prepare(config)

    def start(self, config: RunConfig, resume: bool = False) -> None:
        """Run `config`; with `resume`, continue the run in `config.run_dir` from its last checkpoint."""
        self.session.begin_run(str(config.run_dir) if resume else "")
        self.service.start(config, resume)

    def send(self, command: Command) -> None:
        """A live command, for the run going on (none: dropped, the panels keep the setting for Start)."""
        if self.session.attached and self.remote is not None:
            self.remote(command)
        elif self.session.running:
            cid = self.session.own_command_id()
            if not self.service.send(command, cid):
                self.session.command_dropped(cid)

    def follow_edits(self, schedule: Any, tree: Any) -> None:
        """Each edit of the schedule panel or the scope tree becomes one command for the run going on (kept
        by the panel, for Start, when nothing runs)."""
        send = self.send
        schedule.scheduleChanged.connect(lambda d: send(SetRatio(d)))
        schedule.learningRateChanged.connect(lambda p, v: send(SetLearningRate(p, v)))
        schedule.methodChanged.connect(lambda m: send(SetFreezeMethod(m)))
        schedule.frozenStatsChanged.connect(lambda on: send(SetFreeze(tree.frozen_scopes(), on)))
        tree.freezeChanged.connect(lambda scopes: send(SetFreeze(tuple(scopes), schedule.update_frozen_stats())))

    def shutdown(self, timeout_s: float) -> bool:
        self.closing = True
        return self.service.shutdown(timeout_s)

    # -- reports (GUI thread, queued) ------------------------------------------------------------------------
    @Slot(object)
    def _on_report(self, report: object) -> None:
        self.session.handle(report)

    @Slot(int)
    def _on_died(self, code: int) -> None:
        """The training process died (out of memory, killed): start a new one, so the next Start works
        without restarting the window. The old run's directory keeps what it flushed; the session says how
        the process ended and puts the run's applied settings back on the panels (`Session.service_lost`)."""
        if self.closing:
            return
        old = self.service
        self.service = self._connect(self._factory(self))
        old.shutdown(1.0)
        old.deleteLater()
        self.session.service_lost(code)
        self.serviceReplaced.emit()

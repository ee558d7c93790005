"""After File → Detach: the window prepares an experiment of its own again, the one its panels show.

While attached, the scope tree and the panels show the run's record (its experiment, seed, ticks); the
record is no trainer of this window's, so the session has nothing prepared after a detach. Before this,
the panel kept naming the window's own "ring (built-in)" while the tree showed the attached GAN's ticked
scopes, and Start trained neither as shown. Here, once the training service is idle, the experiment
the session now names is prepared: the run's (its file is here) with the tree's ticks, schedule and
rates, so Start trains what the panels show; or the window's own from before attaching, afresh.
"""
from __future__ import annotations

from typing import Callable

from training_core.runs import Session, Source

from .controller import TrainingController
from .panels import ExperimentPanel, SchedulePanel, ScopeTree
from .run_config import run_config


class PrepareAfterDetach:
    def __init__(self, session: Session, controller: TrainingController, experiment: ExperimentPanel,
                 schedule: SchedulePanel, tree: ScopeTree, show_preparing: Callable[[], None]) -> None:
        self.session, self.controller = session, controller
        self.experiment, self.schedule, self.tree = experiment, schedule, tree
        self._show_preparing = show_preparing
        self.tree_source: Source | None = None  # the experiment whose scopes the tree shows
        self.due = False
        session.experiment_prepared.connect(lambda *_: setattr(self, "tree_source", session.source))
        session.run_finished.connect(self._run_finished)
        session.state_changed.connect(self.check)

    def _run_finished(self, _status: object) -> None:
        self.due = self.session.prepared is None  # a detach (or a service lost mid-run: its load prepares)
        self.check()

    def check(self) -> None:
        """Prepare once the service is idle (a load going on at the detach prepares by itself)."""
        s = self.session
        if not self.due or not s.tf_ready or s.busy or s.running:
            return
        self.due = False
        if s.prepared is not None or s.monitored:  # a monitored run's script is never imported: its tree stays
            return
        self.experiment.select_source(s.source, add=True)
        same = self.tree_source == s.source
        if not same:
            self._show_preparing()
        self.controller.prepare(run_config(s.source, self.experiment, self.schedule, self.tree if same else None))

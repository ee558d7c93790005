"""The window's runs: the one it trains (live) and those opened to review or compare, as one `RunSet`.

Why apart from the window: review reads run directories, the window trains; they meet only in the
run set the plots draw. This object opens runs (File → Open Run…, `--open`, recent runs), follows the
ones still being written (a poll every second reads only the bytes they gained; a stopped one is looked
at every 5 s, since `--resume` makes it grow again), keeps the live entry in step with the window's
`Session` (a new run replaces it; its label is its directory's name), and drives the Runs tab. Opened
runs are read-only: no Start, no commands reach them. A sweep directory opens as a sweep: its runs join the
run set and a tab of the window's Sweeps dock (beside the plots in a short window, app/sweep_dock.py) groups them
by setting (app/sweep_view.py).
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QMainWindow

from training_core import UserError
from training_core.runs import LIVE, RunSet, Session
from training_core.runs.sweep import Sweep, is_sweep_dir

from .panels import RunsPanel
from .settings import Settings

POLL_MS = 500  # the Runs tab's lists; growing runs are read every other tick
STOPPED_EVERY = 10  # ticks: stopped runs are looked at every 5 s, in case a resume made them grow again


class RunReview(QObject):
    def __init__(self, session: Session, settings: Settings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session, self.settings = session, settings
        self.runs = RunSet()
        self.panel = RunsPanel(self.runs)
        self.sweeps = None  # app/sweep_dock.SweepDock, made when the first sweep is opened
        self._tick = 0
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self.poll)
        self._timer.start()
        session.data_cleared.connect(lambda: self.runs.set_live(None))
        session.run_started.connect(lambda _dir: self.runs.set_live(session.data, LIVE))
        session.run_dir_changed.connect(self._live_dir)
        session.run_finished.connect(self._live_finished)

    def open(self, paths: list[str | Path]) -> list[str]:
        """Open run directories; returns a one-line problem for each that could not be opened."""
        problems = []
        for p in paths:
            try:
                key = self.open_sweep(p) if is_sweep_dir(p) else self.runs.open(p).key
            except UserError as e:
                problems.append(str(e))
                continue
            self.settings.add_recent_run(key)
        return problems

    def open_sweep(self, path: str | Path) -> str:
        """Show a sweep: its tab in the Sweeps dock (made the first time, in the window this belongs to), which
        opens its runs. Returns its resolved directory."""
        sweep = Sweep.open(path)
        if self.sweeps is None:
            from .sweep_dock import SweepDock
            window = self.parent()
            if not isinstance(window, QMainWindow):
                raise UserError(f"{path} is a sweep directory; open it in the window (File → Open Run…)")
            self.sweeps = SweepDock(self.runs, window)
            self.sweeps.failed.connect(lambda text: window.statusBar().showMessage(text, 10000))
        self.sweeps.show_sweep(sweep)
        return str(sweep.dir.resolve())

    def poll(self) -> None:
        self._tick += 1
        if self._tick % 2 == 0:
            self.runs.poll(stopped_too=self._tick % STOPPED_EVERY == 0)
        self.panel.refresh()

    def labelled(self) -> list:
        """(label, RunData) of the runs shown: what a figure exports."""
        return self.runs.labelled()

    def stop(self) -> None:
        self._timer.stop()

    def _live_dir(self, run_dir: str) -> None:
        if run_dir and self.runs.get(LIVE) is not None:
            self.runs.set_live(self.session.data, Path(run_dir).name)

    def _live_finished(self, _status: object) -> None:
        if self.session.run_dir:
            self.settings.add_recent_run(self.session.run_dir)

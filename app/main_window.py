"""The main window: experiment, schedule and scope tree on the left, plots on the right, status below.

Threading contract (see app/worker.py): the window never waits on training and the core never touches
a widget. Reports arrive as queued signals and only append to the `RunData` (cheap); a 25 Hz
timer redraws plots, tree values and the status bar from the store. Controls become commands in the
trainer's queue. Before a run, panel edits are just remembered; Start hands them to the core.

Only Qt, pyqtgraph and the TF-free parts of training_core are imported here: TensorFlow loads in the
training process (app/worker.py) after the window is visible, and never in the window's own process.
"""
from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QShowEvent
from PySide6.QtWidgets import QGroupBox, QMainWindow, QMenu, QMessageBox, QSplitter, QStyle, QVBoxLayout, QWidget

from training_core import (Pause, Resume, RollBack, events, SetFreeze, SetFreezeMethod, SetLearningRate,
                           SetSchedule, Status, Step, Stop, UserError, builtin_examples)

from training_core.trainer import default_run_dir

from .errors import nan_message, offer_rollback, show_error
from .gui_gc import collector
from .menus import build_menus, open_dialog, run_actions, shortcut_text
from .panels import ExperimentPanel, SchedulePanel, ScopeTree
from .panels.experiment import Source
from .plots import PlotsPanel
from .run_config import resume_run_config, run_config
from .settings import Settings
from .status import StatusPanel
from training_core.runs import RunData, reload_resumed
from .worker import PreparedInfo, TrainingProcess

REFRESH_MS = 40  # 25 Hz: plots, tree values, status bar
SHUTDOWN_S = 2.0
DEFAULT_SIZE = (1440, 900)
LEFT_WIDTH = 430  # the panels; the plots get the rest


class MainWindow(QMainWindow):
    """`store` and `file_menu` are public: exporters read the one and add actions to the other."""

    file_menu: QMenu  # built by app/menus.py; exporters add their actions here
    recent_menu: QMenu
    quit_action: QAction

    firstShown = Signal()  # the window is on screen; TensorFlow has not started loading yet
    ready = Signal()  # the chosen experiment is prepared
    runStarted = Signal()
    runFinished = Signal(object)  # final Status or None

    def __init__(self, source: Source = ("example", "ring"), steps: int | None = None, seed: int = 0,
                 device: str = "auto", run_dir: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Freezeframe")
        self.settings = Settings()
        self.store = RunData()
        collector.acquire()  # before the report reader thread exists: it must never run the collector
        self._gc_held = True
        self.core = TrainingProcess(self)
        self._run_dir_once = run_dir
        if source[0] == "file":
            source = ("file", str(Path(source[1]).resolve()))
        self._source: Source = source
        self._prepared: PreparedInfo | None = None
        self._prepared_source: Source | None = None
        self._status: Status | None = None
        self._shown_status: Status | None = None
        self._busy = ""
        self._tf_ready = False
        self._running = False
        self._paused = False
        self._pause_reason = ""
        self._last_run: Status | None = None
        self._stop_reason = ""
        self._loading_started = False
        self._closing = False
        self._start_when_ready = False
        self._resumed_dir = ""
        self._wanted_highlight: str | None = None
        self.last_error: tuple[str, str] | None = None  # (summary, details) of the latest dialog
        self.error_dialog: QMessageBox | None = None

        actions = run_actions(self, {"start": self.start, "pause": self.toggle_pause, "step": self.step_once,
                                     "stop": self.stop})
        self.start_action, self.pause_action = actions["start"], actions["pause"]
        self.step_action, self.stop_action = actions["step"], actions["stop"]
        self._build_ui(actions)
        build_menus(self)
        self.experiment_panel.set_sources(builtin_examples(), self.settings.recent_files())
        if source[0] == "file":
            self.settings.add_recent(source[1])
            self.experiment_panel.set_sources(builtin_examples(), self.settings.recent_files())
        self.experiment_panel.select_source(source)
        self.experiment_panel.steps_spin.setValue(steps or 0)
        self.experiment_panel.seed_spin.setValue(seed)
        self.experiment_panel.set_device(device)
        self._connect_core()
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        self._timer.start()
        self._update_controls()

    # -- construction ----------------------------------------------------------------------------------
    def _build_ui(self, actions: dict[str, QAction]) -> None:
        self.experiment_panel = ExperimentPanel()
        self.experiment_panel.add_controls(actions)
        self.experiment_panel.sourceChosen.connect(self.choose_source)
        self.experiment_panel.openRequested.connect(lambda: open_dialog(self))
        self.schedule_panel = SchedulePanel()
        self.scope_tree = ScopeTree()
        self.plots = PlotsPanel(self.store)

        left = QWidget()
        col = QVBoxLayout(left)
        col.setContentsMargins(6, 6, 2, 6)
        for title, w, stretch in (("Experiment", self.experiment_panel, 0), ("Schedule", self.schedule_panel, 0),
                                  ("Scopes — tick to freeze", self.scope_tree, 1)):
            box = QGroupBox(title)
            QVBoxLayout(box).addWidget(w)
            box.layout().setContentsMargins(8, 6, 8, 8)
            col.addWidget(box, stretch)
        left.setMinimumWidth(340)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(left)
        self.splitter.addWidget(self.plots)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([LEFT_WIDTH, DEFAULT_SIZE[0] - LEFT_WIDTH])
        self.splitter.setChildrenCollapsible(False)
        self.setCentralWidget(self.splitter)
        self.status_panel = StatusPanel()
        self.setStatusBar(self.status_panel)
        self.resize(*DEFAULT_SIZE)
        geometry = self.settings.geometry("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        splitter = self.settings.geometry("splitter")
        if splitter is not None:
            self.splitter.restoreState(splitter)

        self.scope_tree.freezeChanged.connect(self._freeze_edited)
        self.scope_tree.variableSelected.connect(self._highlight)
        self.plots.variableClicked.connect(self.scope_tree.select_variable)
        sp = self.schedule_panel
        sp.scheduleChanged.connect(lambda d: self._send_live(SetSchedule(d)))
        sp.learningRateChanged.connect(lambda p, v: self._send_live(SetLearningRate(p, v)))
        sp.methodChanged.connect(lambda m: self._send_live(SetFreezeMethod(m)))
        sp.frozenStatsChanged.connect(lambda on: self._send_live(SetFreeze(self.scope_tree.frozen_scopes(), on)))

    def _connect_core(self) -> None:
        w = self.core.worker
        w.died.connect(self._on_core_died)
        w.busy.connect(self._on_busy)
        w.loaded.connect(self._on_loaded)
        w.prepared.connect(self._on_prepared)
        w.failed.connect(self._on_failed)
        w.runStarted.connect(self._on_run_started)
        w.runFinished.connect(self._on_run_finished)
        w.metrics.connect(self._on_metrics)
        w.event.connect(self._on_event)
        w.samples.connect(self.store.set_samples)
        w.status.connect(self._on_status)

    # -- loading and preparing ---------------------------------------------------------------------------
    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._loading_started:
            self._loading_started = True
            QTimer.singleShot(0, self.firstShown.emit)
            QTimer.singleShot(50, self.load)  # after the first paint: the import competes for the GIL

    def load(self) -> None:
        """Import TensorFlow and prepare the chosen experiment, in the training process."""
        self._loading_started = True
        if self._tf_ready or self._busy:
            return
        self._busy = "Loading TensorFlow…"
        self._update_controls()
        self.core.load()
        self._prepare(self._source)

    def choose_source(self, source: Source) -> None:
        """Switch experiment: prepare it (worker) so the scope tree shows its variables."""
        if self._running:
            self.experiment_panel.select_source(self._source)
            return
        self._source = source
        self.experiment_panel.select_source(source)
        self.store.clear()
        self.plots.reset()
        self.status_panel.reset()
        self._prepare(source)

    def _prepare(self, source: Source) -> None:
        self._prepared = None
        self.scope_tree.set_placeholder(f"Preparing {Path(source[1]).name}…" if self._tf_ready else
                                        "Loading TensorFlow…")
        self.experiment_panel.set_description("")
        self.core.prepare(run_config(source, self.experiment_panel, self.schedule_panel))

    def open_experiment(self, path: str | Path) -> bool:
        p = Path(path).expanduser()
        if not p.is_file():
            self._error(f"experiment file {p} does not exist; check the path", "")
            self.settings.remove_recent(p)
            self.experiment_panel.set_sources(builtin_examples(), self.settings.recent_files())
            return False
        self.settings.add_recent(p)
        self.experiment_panel.set_sources(builtin_examples(), self.settings.recent_files())
        self.choose_source(("file", str(p.resolve())))
        return True

    # -- controls --------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start a new run with the panels' settings (reusing the prepared trainer when it matches)."""
        if self._running or not self._tf_ready:
            return
        self.schedule_panel.flush()  # edits still in their debounce belong to the starting settings
        self.scope_tree.flush()
        problem = self.schedule_panel.problem()
        if problem:
            self._error(problem, "")
            return
        same = self._prepared is not None and self._prepared_source == self._source
        cfg = run_config(self._source, self.experiment_panel, self.schedule_panel, self.scope_tree if same else None)
        folder = self.settings.runs_folder()
        cfg.run_dir = self._run_dir_once or (str(default_run_dir(cfg, folder)) if folder else None)
        self._run_dir_once = None
        self.store.clear()
        self.plots.reset()
        self.status_panel.reset()
        self._status = self._shown_status = None
        self._running, self._paused, self._pause_reason, self._stop_reason = True, False, "", ""
        self._update_controls()
        self.core.start(cfg)

    def resume_run(self, run_dir: str | Path) -> None:
        """File → Resume Run…: continue a run in its own directory from its last checkpoint."""
        if self._running or not self._tf_ready:
            return
        try:
            cfg, self._source = resume_run_config(str(run_dir), self.experiment_panel)
        except UserError as e:
            return self._error(str(e), "")
        self.store.clear()
        self.plots.reset()
        self.status_panel.reset()
        self._status = self._shown_status = None
        self._running, self._paused, self._pause_reason, self._stop_reason = True, False, "", ""
        self.experiment_panel.select_source(self._source)
        self._resumed_dir = cfg.run_dir
        self._update_controls()
        self.core.start(cfg, resume=True)

    def toggle_pause(self) -> None:
        if self._running:
            self.core.send(Resume() if self._paused else Pause())

    def step_once(self) -> None:
        """Run exactly one step, then pause; from an idle window this starts a run that pauses after one step."""
        if not self._running:
            self.start()
        if self._running:
            self.core.send(Step(1))

    def stop(self) -> None:
        if self._running:
            self.core.send(Stop())

    def start_when_ready(self) -> None:
        """Start as soon as the experiment is prepared (command line `--start`, `--screenshot`)."""
        self._start_when_ready = True
        if self._prepared is not None and not self._busy:
            self._start_when_ready = False
            self.start()

    def _send_live(self, command: Any) -> None:
        if self._running:
            self.core.send(command)

    def _highlight(self, path: str | None) -> None:
        self._wanted_highlight = path
        self.plots.highlight_variable(path)

    def _freeze_edited(self, scopes: tuple[str, ...]) -> None:
        self._send_live(SetFreeze(tuple(scopes), self.schedule_panel.update_frozen_stats()))

    # -- reports from the core (GUI thread, queued) ------------------------------------------------------
    def _on_core_died(self, _code: int) -> None:
        """The training process died (out of memory, killed): start a new one, load and prepare again, so
        the next Start works without restarting the window. The old run's directory keeps what it flushed."""
        if self._closing:
            return
        old = self.core
        self.core = TrainingProcess(self)
        self._connect_core()
        old.shutdown(1.0)
        old.deleteLater()
        self._tf_ready, self._prepared = False, None
        self._busy = ""
        self.load()

    def _on_busy(self, text: str) -> None:
        self._busy = text
        self._update_controls()
        if not text and self._start_when_ready and self._prepared is not None:
            self._start_when_ready = False
            self.start()

    def _on_loaded(self, devices: list) -> None:
        self._tf_ready = True
        self.experiment_panel.set_devices(devices)
        if self._prepared is None and self._busy == "":
            self.scope_tree.set_placeholder(f"Preparing {Path(self._source[1]).name}…")
        self._update_controls()

    def _on_prepared(self, info: PreparedInfo) -> None:
        # Qt, pyqtgraph and the window are built now and live as long as the process: move them out of the
        # collector's way, so full collections on the GUI thread (app/gui_gc.py) stay short.
        gc.freeze()
        structure_changed = self._prepared is None or [v.path for v in info.var_infos] != \
            [v.path for v in self._prepared.var_infos] or info.phase_names != self._prepared.phase_names
        c = info.config
        source = ("file", c.experiment_file) if c.experiment_file else ("example", c.example)
        if source != self._source:
            return  # superseded: the user chose another experiment meanwhile
        self._prepared = info
        self._prepared_source = source
        self.experiment_panel.set_description(info.description)
        self.status_panel.set_device(info.device_name)
        if structure_changed or not self._running:
            self.scope_tree.set_tree(info.tree, c.freeze)
            self.schedule_panel.set_config(info.phase_names, c.schedule, c.lr, c.freeze_method,
                                           c.update_frozen_stats)
        self.ready.emit()

    def _on_failed(self, summary: str, detail: str) -> None:
        if self._prepared is None:
            self.scope_tree.set_placeholder("Could not prepare the experiment: fix it, then press Start")
        self._error(summary, detail)

    def _on_run_started(self, run_dir: str) -> None:
        self.status_panel.set_run_dir(run_dir)
        self._update_controls()
        self.runStarted.emit()

    def _on_run_finished(self, status: Status | None) -> None:
        self._running, self._paused = False, False
        self._last_run = status
        if status is not None:
            self._status = status
        self.refresh()
        self._update_controls()
        self.runFinished.emit(status)

    def _on_metrics(self, batch: Any) -> None:
        self.store.add_batch(batch)
        self._status = batch.status

    def _on_status(self, status: Status) -> None:
        self._status = status
        if status.paused != self._paused and self._running:
            self._paused = status.paused
            self._update_controls()

    def _on_event(self, e: events.Event) -> None:
        if isinstance(e, events.Resumed):  # the run's record up to here, from its (just cut back) directory
            reload_resumed(self.store, self._resumed_dir, e)
            self.plots.reset()
            return
        self.store.add_event(e)
        if isinstance(e, events.Rollback):  # the store went back with the run: curves start over
            self.plots.reset()
        if isinstance(e, events.Pause):
            self._paused, self._pause_reason = True, e.reason
            self._update_controls()
        elif isinstance(e, events.Resume):
            self._paused, self._pause_reason = False, ""
            self._update_controls()
        elif isinstance(e, events.Nan):
            good = [c.step for c in self.store.events if isinstance(c, events.Checkpoint) and c.step < e.at_step]
            self._error(*nan_message(e, max(good) if good else None))
            if good and self.error_dialog is not None:
                offer_rollback(self.error_dialog, max(good), lambda: self.core.send(RollBack(step=max(good))))
        elif isinstance(e, (events.Warning, events.Rejected)):
            self.statusBar().showMessage(f"Step {e.step}: {e.message}", 10000)
        elif isinstance(e, events.Start):
            self.status_panel.set_run_dir(e.run_dir)
        elif isinstance(e, events.Stop):
            self._stop_reason = e.reason

    def _error(self, summary: str, detail: str) -> None:
        self.last_error = (summary, detail)
        if self._closing:
            return
        self.error_dialog = show_error(self, summary, detail)

    # -- periodic refresh and state ----------------------------------------------------------------------
    def refresh(self) -> None:
        """Redraw what changed since the last tick: plots, tree values, status bar (25 Hz)."""
        self.plots.refresh()
        if self._wanted_highlight != self.plots.highlighted and self._wanted_highlight in self.store.var_paths:
            self.plots.highlight_variable(self._wanted_highlight)  # its curve exists now (new run)
        self.scope_tree.refresh(self.store)
        if self._status is not None and self._status is not self._shown_status:
            self._shown_status = self._status
            self.status_panel.show_status(self._status)

    def _update_controls(self) -> None:
        running, idle = self._running, self._tf_ready and not self._running
        self.start_action.setEnabled(idle)
        self.step_action.setEnabled(self._tf_ready)
        self.pause_action.setEnabled(running)
        self.stop_action.setEnabled(running)
        resume = running and self._paused
        self.pause_action.setText("Resume" if resume else "Pause")
        self.pause_action.setIcon(self.style().standardIcon(
            QStyle.StandardPixmap.SP_MediaPlay if resume else QStyle.StandardPixmap.SP_MediaPause))
        self.pause_action.setToolTip(f"{'Resume' if resume else 'Pause'} training ({shortcut_text(self.pause_action)})")
        self.experiment_panel.set_running(running)
        self.status_panel.set_state(self.state_text())

    def state_text(self) -> str:
        if self._busy:
            return self._busy
        if self._running:
            if self._paused:
                return "Paused" + (f" ({self._pause_reason})" if self._pause_reason not in ("", "user") else "")
            return "Training"
        if not self._tf_ready:
            return "Loading TensorFlow…"
        if self._last_run is not None:
            verb = {"done": "Finished", "stopped": "Stopped", "error": "Failed"}.get(self._stop_reason, "Ended")
            return f"{verb} at step {self._last_run.step:,}"
        return "Ready" if self._prepared is not None else "Not prepared"

    @property
    def busy(self) -> str:
        """What the worker is doing ('' when idle)."""
        return self._busy

    @property
    def running(self) -> bool:
        return self._running

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def prepared(self) -> PreparedInfo | None:
        return self._prepared

    # -- closing ---------------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        """Stop training, let the core flush its record, join the thread, then close."""
        self._closing = True
        self._timer.stop()
        self.settings.set_geometry("geometry", self.saveGeometry())
        self.settings.set_geometry("splitter", QByteArray(self.splitter.saveState()))
        t0 = time.perf_counter()
        if not self.core.shutdown(SHUTDOWN_S):
            print(f"freezeframe: the training process took {time.perf_counter() - t0:.1f}s to stop")
        if self._gc_held:
            self._gc_held = False
            collector.release()
        super().closeEvent(event)


def run_app(argv: list[str]) -> int:
    """`python main.py [--example NAME | --experiment FILE] [--steps N] ...`: the window (see app/launch.py)."""
    from .launch import run_app as launch
    return launch(argv)

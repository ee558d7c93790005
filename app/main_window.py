"""The main window: experiment, schedule and scope tree (Train tab) or the runs shown (Runs tab) on the left,
plots of the run that trains and of any runs opened beside it on the right, status below.

The window builds widgets and connects them to its `Session` (training_core/runs/session.py), the one
model of what is going on: the session takes every report of the training service (through
app/controller.py) and says what changed; the window draws it. A user's edit becomes a command for
the run going on, or is kept by its panel until Start hands all settings to the service. The window
never waits on training and training never touches a widget: reports only update the session and
its `RunData` (cheap), and a 25 Hz timer redraws plots, tree values and the status bar from them.

Only Qt, pyqtgraph, superqt and the TF-free parts of training_core are imported here: TensorFlow
loads in the training process after the window is visible, never in the window's own process.
"""
from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QShowEvent
from PySide6.QtWidgets import QMainWindow, QMessageBox, QWidget

from training_core import Continue, Pause, Rollback, RunConfig, Status, Step, Stop, UserError, builtin_examples
from training_core.base.protocol import PreparedInfo
from training_core.runs import RunData, Session, Source
from training_core.rundir.writer import default_run_dir

from . import gui_gc
from .attach import AttachController
from .controller import ServiceFactory, TrainingController
from .detach import PrepareAfterDetach
from .errors import offer_rollback, show_error
from .menus import Menus, build_menus, choose_run_dir, open_dialog, open_runs_dialog, run_actions, show_run_state
from .panels import ExperimentPanel, SchedulePanel, ScopeTree, beside_plots, left_tabs, panels_column
from .panels.follow import TICK_TITLE, ControlsFollower
from .plots import PlotsPanel
from .review import RunReview
from .run_config import resume_run_config, run_config
from .settings import Settings
from .status import StatusPanel
from .window_size import DEFAULT_SIZE, fitting_size
from .training_process import TrainingProcess, TrainingService

REFRESH_MS = 40  # 25 Hz: plots, tree values, status bar
SHUTDOWN_S = 2.0
LEFT_WIDTH = 430  # the panels; the plots get the rest


class MainWindow(QMainWindow):
    """`session` (and its `store`) and `menus.file_menu` are public: exporters read the one and add
    actions to the other. `service_factory` makes the training service (a stand-in in widget tests)."""

    firstShown = Signal()  # the window is on screen; TensorFlow has not started loading yet
    ready = Signal()  # the chosen experiment is prepared
    runStarted = Signal()
    runFinished = Signal(object)  # final Status or None

    def __init__(self, source: Source = ("example", "ring"), steps: int | None = None, seed: int = 0,
                 device: str = "auto", run_dir: str | None = None, parent: QWidget | None = None,
                 service_factory: ServiceFactory = TrainingProcess, open_runs: list[str] | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Freezeframe")
        self.settings = Settings()
        if source[0] == "file":
            source = ("file", str(Path(source[1]).resolve()))
        self.session = Session(source)
        gui_gc.hold()  # before the service's report reader thread exists: it must never run the collector
        self._gc_held = True
        self.controller = TrainingController(self.session, service_factory, self)
        self.attachment = AttachController(self.session, self)  # runs other processes write (app/attach.py)
        self.controller.remote = self.attachment.send
        self.review = RunReview(self.session, self.settings, self)
        self._defer_loading = bool(open_runs)  # reviewing: TensorFlow loads when the Train tab is opened
        self._run_dir_once = run_dir
        self._loading_started = False
        self._closing = False
        self._start_when_ready = False
        self._wanted_highlight: str | None = None
        self.last_error: tuple[str, str] | None = None  # (summary, details) of the latest dialog
        self.error_dialog: QMessageBox | None = None

        actions = run_actions(self, {"start": self.start, "pause": self.toggle_pause, "step": self.step_once,
                                     "stop": self.stop})
        self._actions = actions
        self.start_action, self.pause_action, self.step_action, self.stop_action = actions.values()
        self._build_ui(actions)
        self.menus: Menus = build_menus(self, self.settings, list(actions.values()), self.open_experiment,
                                        self.open_runs, self.export_runs, lambda: self.plots.smoothing,
                                        {"Res&ume Run…": lambda: choose_run_dir(self, "Resume", self.resume_run),
                                         "&Attach to Run…": lambda: choose_run_dir(self, "Attach to", self.attach_run),
                                         "Re&play Run…": lambda: choose_run_dir(self, "Replay", self.replay_run),
                                         "&Detach": (self.attachment.detach, lambda: self.session.attached)})
        self._show_sources()
        if source[0] == "file":
            self.settings.add_recent(source[1])
            self._show_sources()
        self.experiment_panel.select_source(source)
        self.experiment_panel.steps_spin.setValue(steps or 0)
        self.experiment_panel.seed_spin.setValue(seed)
        self.experiment_panel.set_device(device)
        self._connect_session()
        self.after_detach = PrepareAfterDetach(self.session, self.controller, self.experiment_panel,
                                               self.schedule_panel, self.scope_tree, self._show_preparing)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(lambda: self.refresh(part=True))
        self._timer.start()
        self._show_state()
        if open_runs:
            self.open_runs(open_runs)

    # -- construction ----------------------------------------------------------------------------------
    def _build_ui(self, actions: dict[str, QAction]) -> None:
        self.experiment_panel = ExperimentPanel()
        self.experiment_panel.add_run_buttons(actions)
        self.experiment_panel.sourceChosen.connect(self.choose_source)
        self.experiment_panel.openRequested.connect(lambda: open_dialog(self, self.open_experiment))
        self.schedule_panel = SchedulePanel()
        self.scope_tree = ScopeTree()
        self.follower = ControlsFollower(self.scope_tree, self.schedule_panel, self.experiment_panel.steps_spin)
        self.plots = PlotsPanel(self.review.runs)
        runs_panel = self.review.panel
        runs_panel.openRequested.connect(lambda: open_runs_dialog(self, self.settings, self.open_runs))
        runs_panel.eventChosen.connect(self.plots.show_step)
        runs_panel.runSelected.connect(self.plots.show_samples_of)

        self.tabs = left_tabs(panels_column([("Experiment", self.experiment_panel, 0),
                                             ("Schedule", self.schedule_panel, 0),
                                             (TICK_TITLE, self.scope_tree, 1)]), runs_panel)
        self.tabs.currentChanged.connect(self._tab_changed)
        self.splitter = beside_plots(self.tabs, self.plots, LEFT_WIDTH, DEFAULT_SIZE[0] - LEFT_WIDTH)
        self.setCentralWidget(self.splitter)
        self.status_panel = StatusPanel()
        self.setStatusBar(self.status_panel)
        self.resize(*fitting_size())
        self.settings.restore_window(self, self.splitter)

        self.scope_tree.variableSelected.connect(self._highlight)
        self.plots.link_tree(self.scope_tree)  # a click on a curve or heat-map row selects; a selection draws
        self.controller.follow_edits(self.schedule_panel, self.scope_tree)

    def _connect_session(self) -> None:
        s = self.session
        s.state_changed.connect(self._show_state)
        s.devices_loaded.connect(self._on_loaded)
        s.experiment_prepared.connect(self._on_prepared)
        s.problem.connect(self._on_problem)
        s.note.connect(self.status_panel.show_note)  # whole, wrapped (app/status.py), not cut on one line
        s.run_dir_changed.connect(self.status_panel.set_run_dir)
        s.data_cleared.connect(self.plots.reset)
        s.rewound.connect(self.plots.reset)
        s.rollback_offered.connect(self._offer_rollback)
        s.run_started.connect(lambda _dir: (self.follower.forget(), self.runStarted.emit()))
        s.run_finished.connect(self._on_run_finished)
        self.controller.serviceReplaced.connect(self.load)
        self.attachment.controlsChanged.connect(self.follower.show)  # changed by another process
        self.attachment.commandRejected.connect(self.follower.rejected)  # (before the controls that follow it)
        s.controls_changed.connect(self.follower.show)
        self.attachment.failed.connect(lambda text: self._error(text, ""))

    def _show_sources(self) -> None:
        self.experiment_panel.set_sources(builtin_examples(), self.settings.recent_files())

    # -- loading and preparing ---------------------------------------------------------------------------
    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._defer_loading:
            self._load_soon()

    def _load_soon(self) -> None:
        if not self._loading_started:
            self._loading_started = True
            QTimer.singleShot(0, self.firstShown.emit)
            QTimer.singleShot(50, self.load)  # after the first paint: the import competes for the GIL

    def load(self) -> None:
        """Import TensorFlow and prepare the chosen experiment, in the training process."""
        self._loading_started = True
        if self.session.tf_ready or self.session.busy:
            return
        if not self.session.attached and not self.session.monitored:  # attached at launch: its tree stays
            self._show_preparing()
        self.controller.load(None if self.session.monitored else self._prepare_config())  # (never a monitored script)

    def choose_source(self, source: Source) -> None:
        """Switch experiment (not mid-run): prepare it, so the scope tree shows its variables."""
        if not self.session.choose(source):
            self.experiment_panel.select_source(self.session.source)
            return
        self.experiment_panel.select_source(source)
        if self.session.monitored:  # a monitored run's script, never imported here: the panels say why
            self.scope_tree.set_placeholder(self.session.start_blocked)
            return self.experiment_panel.set_description(self.session.start_blocked)
        self._show_preparing()
        self.controller.prepare(self._prepare_config())

    def _prepare_config(self) -> RunConfig:
        cfg = run_config(self.session.source, self.experiment_panel, self.schedule_panel)
        cfg.monitor = self.session.monitored_kind(self.session.source) or None  # the service refuses such a script
        return cfg

    def _show_preparing(self) -> None:
        text = f"Preparing {Path(self.session.source[1]).name}…" if self.session.tf_ready else "Loading TensorFlow…"
        self.scope_tree.set_placeholder(text)
        self.experiment_panel.set_description("")

    def open_runs(self, paths: list[str]) -> bool:
        """Open run directories for review and comparison (read-only) and show the Runs tab."""
        problems = self.review.open(list(paths))
        if problems:
            self._error(problems[0] if len(problems) == 1 else f"{len(problems)} runs could not be opened: "
                        f"{problems[0]}", "\n".join(problems))
        if len(problems) < len(paths):
            self.tabs.setCurrentIndex(1)
            self.plots.follow()
        self._show_state()
        return not problems

    def export_runs(self) -> list:
        """What File → Export figure draws: the runs shown (label, data), or the live run alone."""
        return self.review.labelled() or [("run", self.store)]

    def _tab_changed(self, index: int) -> None:
        if index == 0 and self._defer_loading:
            self._defer_loading = False
            self._load_soon()

    def open_experiment(self, path: str | Path) -> bool:
        p = Path(path).expanduser()
        if not p.is_file():
            self._error(f"experiment file {p} does not exist; check the path", "")
            self.settings.remove_recent(p)
            self._show_sources()
            return False
        self.settings.add_recent(p)
        self._show_sources()
        self.choose_source(("file", str(p.resolve())))
        return True

    # -- controls --------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start a new run with the panels' settings (reusing the prepared trainer when it matches)."""
        if not self.session.can_start:
            return
        self.schedule_panel.flush()  # edits still in their debounce belong to the starting settings
        self.scope_tree.flush()
        problem = self.schedule_panel.problem()
        if problem:
            self._error(problem, "")
            return
        prepared = self.session.prepared is not None
        cfg = run_config(self.session.source, self.experiment_panel, self.schedule_panel,
                         self.scope_tree if prepared else None)
        folder = self.settings.runs_folder()
        cfg.run_dir = self._run_dir_once or (str(default_run_dir(cfg, folder)) if folder else None)
        self._run_dir_once = None
        self.controller.start(cfg)

    def resume_run(self, run_dir: str | Path) -> bool:
        """File → Resume Run…: continue a run in its own directory from its last checkpoint."""
        return self.session.tf_ready and not self.session.running and self._other_run(lambda: self._resume(str(run_dir)))

    def _resume(self, run_dir: str) -> None:
        cfg, source = resume_run_config(run_dir, self.experiment_panel)
        self.session.choose(source)
        self.experiment_panel.select_source(source)
        self.controller.start(cfg, resume=True)

    def toggle_pause(self) -> None:
        self.controller.send(Continue() if self.session.paused else Pause())

    def step_once(self) -> None:
        """Run exactly one step, then pause; from an idle window this starts a run that pauses after one step."""
        self.start()
        self.controller.send(Step(1))

    def stop(self) -> None:
        self.controller.send(Stop())

    def start_when_ready(self) -> None:
        """Start as soon as the experiment is prepared (command line `--start`, `--screenshot`)."""
        self._start_when_ready = True
        self._show_state()

    # -- runs other processes write ----------------------------------------------------------------------
    def attach_run(self, run_dir: str | Path) -> bool:
        """Show and steer a run another process writes (its controls then write `commands.jsonl`)."""
        return self._other_run(lambda: self.attachment.attach(run_dir))

    def replay_run(self, source: str | Path, run_dir: str | Path | None = None) -> bool:
        """Replay a recorded run headless (`--replay`) into a new run directory, and attach to it."""
        return self._other_run(lambda: self.attachment.replay(source, run_dir))

    def _other_run(self, go: Callable[[], None]) -> bool:
        try:
            go()
        except UserError as e:
            self._error(str(e), "")
            return False
        return True

    def _highlight(self, path: str | None) -> None:
        self._wanted_highlight = path
        self.plots.highlight_variable(path)

    # -- what the session says -----------------------------------------------------------------------------
    def _on_loaded(self, devices: list) -> None:
        self.experiment_panel.set_devices(devices)
        if self.session.prepared is None and not self.session.busy and not self.session.monitored:
            self.scope_tree.set_placeholder(f"Preparing {Path(self.session.source[1]).name}…")

    def _on_prepared(self, info: PreparedInfo, rebuild: bool) -> None:
        gc.freeze()  # Qt, pyqtgraph and the window live as long as the process: full collections stay short
        self.experiment_panel.show_prepared(info, self.session.source, attached=bool(self.session.attached))
        if self.session.monitored:  # the record of a run the user's script trains: the panel says who trains it
            self.experiment_panel.set_description(self.session.start_blocked)
        self.status_panel.set_device(info.device_name)
        if rebuild:
            self.follower.set_prepared(info, self.session.variables.states)
        self.ready.emit()

    def _on_problem(self, summary: str, detail: str) -> None:
        self._start_when_ready = False  # (a failed prepare: no start is pending any more, Start is the user's)
        if self.session.prepared is None and not self.session.monitored:  # (a monitored run's tree stays)
            self.scope_tree.set_placeholder("Could not prepare the experiment: fix it, then press Start")
        self._error(summary, detail)

    def _offer_rollback(self, step: int) -> None:
        """The NaN dialog gets a "Roll back to step N" button (the run stays paused there: lower the rate)."""
        if self.error_dialog is not None:
            offer_rollback(self.error_dialog, step, lambda: self.controller.send(Rollback(step=step)))

    def _on_run_finished(self, status: Status | None) -> None:
        self.refresh()
        self.runFinished.emit(status)

    def _error(self, summary: str, detail: str) -> None:
        self.last_error = (summary, detail)
        if not self._closing:
            self.error_dialog = show_error(self, summary, detail)

    # -- periodic refresh and state ----------------------------------------------------------------------
    def refresh(self, part: bool = False) -> None:
        """Redraw what changed: plots, tree values, status bar (the 25 Hz timer: a part of the plots a tick)."""
        (self.plots.refresh_part if part else self.plots.refresh)()
        if self._wanted_highlight != self.plots.highlighted and self._wanted_highlight in self.store.var_paths:
            self.plots.highlight_variable(self._wanted_highlight)  # its curve exists now (new run)
        states = self.session.variable_states()
        if states is not None:
            self.scope_tree.show_states(states)
        self.status_panel.draw(self.session.status, self.session.paused, self.review.runs)

    def _show_state(self) -> None:
        """The session's state on the run buttons, the experiment panel and the status bar; a waiting Start goes."""
        s = self.session
        if self._start_when_ready and s.prepared is not None and not s.busy and s.can_start:
            self._start_when_ready = False
            self.start()  # changes the state again: this method runs anew from there
            return
        show_run_state(self._actions, s.can_start, s.tf_ready, s.running, s.paused, s.start_blocked,
                       pending=self._start_when_ready)
        self.experiment_panel.set_running(s.running)
        reviewing = self._defer_loading and not s.tf_ready and not s.busy
        self.status_panel.set_state(f"Reviewing {len(self.review.runs.entries)} run(s): the Train tab loads "
                                    "TensorFlow" if reviewing else s.state_text, keep=s.state_fix)

    store: RunData = property(lambda self: self.session.data,  # type: ignore[assignment]
                              doc="The run's metrics, events and samples (the session's `RunData`).")
    core: TrainingService = property(lambda self: self.controller.service,  # type: ignore[assignment]
                                     doc="The training service now in use (a new one after the old one died).")
    # the session's state, read where tests and scripts used to read the window's
    busy = property(lambda self: self.session.busy, doc="What the service is doing ('' when idle).")
    running = property(lambda self: self.session.running)
    paused = property(lambda self: self.session.paused)
    prepared = property(lambda self: self.session.prepared)

    # -- closing ---------------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        """Stop training, let the service flush its record and exit, then close."""
        self._closing = True
        self._timer.stop()
        self.review.stop()
        self.settings.save_window(self, self.splitter)
        self.attachment.shutdown(SHUTDOWN_S)  # an attached run trains on; a replay this window started stops
        t0 = time.perf_counter()
        if not self.controller.shutdown(SHUTDOWN_S):
            print(f"freezeframe: the training process took {time.perf_counter() - t0:.1f}s to stop")
        if self._gc_held:
            self._gc_held = False
            gui_gc.release()
        super().closeEvent(event)

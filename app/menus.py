"""The window's actions and menus: run controls with their shortcuts, File (open an experiment or runs,
recent ones, runs folder, export, quit), Run, Help.

The run actions are shared by the menu and the panel's buttons, so enabled state, text and tooltip
(which names the shortcut) are defined once. `build_menus` returns what it made (`Menus`); it reaches
the window only through the callables it is given.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QAbstractItemView, QFileDialog, QMainWindow, QMenu, QMessageBox, QStyle, QWidget

from .export.actions import ExportActions, install_export_menu
from .settings import Settings

#: name -> (text, tooltip, shortcuts (the first is shown), icon)
RUN_ACTIONS = {
    "start": ("Start", "Start a new run", ["Ctrl+R", "F5"], QStyle.StandardPixmap.SP_MediaPlay),
    "pause": ("Pause", "Pause or continue training", ["Ctrl+P", "F6"], QStyle.StandardPixmap.SP_MediaPause),
    "step": ("Step", "Run one step, then pause", ["Ctrl+.", "F10"], QStyle.StandardPixmap.SP_MediaSkipForward),
    "stop": ("Stop", "Stop the run (the record is kept)", ["Ctrl+Shift+R", "Shift+F5"],
             QStyle.StandardPixmap.SP_MediaStop),
}
PENDING_TIP = "Training starts by itself once the experiment is prepared (asked for on the command line)"


def shortcut_text(action: QAction) -> str:
    return action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)


def run_actions(window: QWidget, slots: dict[str, Any]) -> dict[str, QAction]:
    """One window-wide QAction per run control, triggering `slots[name]`."""
    out = {}
    for name, (text, tip, keys, icon) in RUN_ACTIONS.items():
        a = QAction(window.style().standardIcon(icon), text, window)
        a.setShortcuts([QKeySequence(k) for k in keys])
        a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        a.setToolTip(f"{tip} ({shortcut_text(a)})")
        a.triggered.connect(slots[name])
        window.addAction(a)
        out[name] = a
    return out


def show_run_state(actions: dict[str, QAction], can_start: bool, tf_ready: bool, running: bool, paused: bool,
                   blocked: str = "", pending: bool = False) -> None:
    """Enable the run controls the state allows; Pause reads Continue (with its icon) while paused. `blocked`:
    why Start cannot train what the window shows (a monitored run's script): Start's tooltip says so. Step during a
    run is a command for that run; only a Step that starts a run needs the window's own TensorFlow (`tf_ready`): an
    attached run's Step was greyed out until the window's own service reported it had loaded (30 s and more on a
    busy machine, never if that service died), its Pause and Stop not. `pending`: a start asked for on the command
    line (`--steps`, `--start`) waits for the experiment to be prepared: Start reads "Starting…", off (it was on
    while "Preparing shapes…" took a minute, and a user could not tell whether to press it)."""
    go_on = running and paused
    waiting = pending and not running
    start = actions["start"]
    start.setEnabled(can_start and not waiting)
    start.setText("Starting…" if waiting else RUN_ACTIONS["start"][0])
    start.setIconText(start.text())  # (the button's text: Qt drops a trailing "…" from the text's default)
    start.setToolTip(f"Start is off: {blocked}" if blocked else PENDING_TIP if waiting
                     else f"{RUN_ACTIONS['start'][1]} ({shortcut_text(start)})")
    actions["step"].setEnabled((running or (tf_ready and not blocked)) and not waiting)
    actions["pause"].setEnabled(running)
    actions["stop"].setEnabled(running)
    pause = actions["pause"]
    pause.setText("Continue" if go_on else "Pause")
    pause.setIcon(pause.parent().style().standardIcon(
        QStyle.StandardPixmap.SP_MediaPlay if go_on else QStyle.StandardPixmap.SP_MediaPause))
    pause.setToolTip(f"{'Continue' if go_on else 'Pause'} training ({shortcut_text(pause)})")


@dataclass
class Menus:
    file_menu: QMenu  # public: exporters and plug-ins add their actions here
    recent_menu: QMenu
    recent_runs_menu: QMenu
    open_run_action: QAction
    quit_action: QAction
    export_actions: ExportActions


def build_menus(window: QMainWindow, settings: Settings, run: list[QAction], open_file: Callable[[str], object],
                open_runs: Callable[[list[str]], object], runs: Callable[[], object],
                smoothing: Callable[[], float], other_runs: dict[str, Any] | None = None) -> Menus:
    """File, Run and Help on `window`'s menu bar. `open_file(path)` opens an experiment file,
    `open_runs(paths)` run directories for review; `runs()` is what figures export; `other_runs`
    (menu text -> slot, or (slot, enabled())) are File's entries for runs other processes write (resume,
    attach, replay, detach)."""
    bar = window.menuBar()
    file_menu = bar.addMenu("&File")
    file_menu.addAction("&Open Experiment…", lambda: open_dialog(window, open_file)).setShortcut(
        QKeySequence.StandardKey.Open)
    recent = file_menu.addMenu("Open &Recent")
    recent.setToolTipsVisible(True)
    recent.aboutToShow.connect(lambda: fill_recent_menu(recent, settings, open_file))
    open_run = file_menu.addAction("Open R&un…", lambda: open_runs_dialog(window, settings, open_runs))
    open_run.setShortcut(QKeySequence("Ctrl+Shift+O"))
    open_run.setToolTip("Open run directories to review or compare (several at once), or a sweep directory")
    recent_runs = file_menu.addMenu("Open Recent Ru&n")
    recent_runs.setToolTipsVisible(True)
    recent_runs.aboutToShow.connect(lambda: fill_recent_runs_menu(recent_runs, settings, open_runs))
    file_menu.addAction("Runs &Folder…", lambda: choose_runs_folder(window, settings))
    file_menu.addSeparator()
    for text, slot in (other_runs or {}).items():
        enabled = None
        if isinstance(slot, tuple):  # (slot, when it can be chosen): checked each time the menu opens
            slot, enabled = slot
        action = file_menu.addAction(text, slot)
        if enabled is not None:
            file_menu.aboutToShow.connect(lambda a=action, e=enabled: a.setEnabled(bool(e())))
    if other_runs:
        file_menu.addSeparator()
    export_actions = install_export_menu(window, file_menu, runs, smoothing_provider=smoothing)
    file_menu.addSeparator()
    quit_action = file_menu.addAction("&Quit", window.close)
    quit_action.setShortcut(QKeySequence.StandardKey.Quit)
    run_menu = bar.addMenu("&Run")
    for a in run:
        run_menu.addAction(a)
    bar.addMenu("&Help").addAction("&About Freezeframe", lambda: show_about(window))
    return Menus(file_menu, recent, recent_runs, open_run, quit_action, export_actions)


def open_dialog(parent: QWidget, open_file: Callable[[str], object]) -> None:
    path, _ = QFileDialog.getOpenFileName(parent, "Open experiment file", str(Path.cwd()),
                                          "Experiment files (*.py);;All files (*)")
    if path:
        open_file(path)


def fill_recent_menu(menu: QMenu, settings: Settings, open_file: Callable[[str], object]) -> None:
    menu.clear()
    files = settings.recent_files()
    for f in files:
        menu.addAction(Path(f).name, lambda f=f: open_file(f)).setToolTip(f)
    if not files:
        menu.addAction("(none yet)").setEnabled(False)


def open_runs_dialog(parent: QWidget, settings: Settings, open_runs: Callable[[list[str]], object]) -> None:
    """Pick one or more run directories (a directory dialog takes one; the list view lets a user select
    several with Ctrl or Shift)."""
    dialog = QFileDialog(parent, "Open runs (select one or more run directories)",
                         settings.runs_folder() or str(Path.cwd() / "runs"))
    dialog.setFileMode(QFileDialog.FileMode.Directory)
    dialog.setOption(QFileDialog.Option.DontUseNativeDialog, True)  # the native one selects one folder only
    for view in dialog.findChildren(QAbstractItemView):
        view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
    if dialog.exec():
        open_runs(dialog.selectedFiles())


def fill_recent_runs_menu(menu: QMenu, settings: Settings, open_runs: Callable[[list[str]], object]) -> None:
    menu.clear()
    runs = settings.recent_runs()
    for r in runs:
        menu.addAction(Path(r).name, lambda r=r: open_runs([r])).setToolTip(r)
    if not runs:
        menu.addAction("(none yet)").setEnabled(False)


def choose_runs_folder(parent: QWidget, settings: Settings) -> None:
    folder = QFileDialog.getExistingDirectory(parent, "Folder for new runs", settings.runs_folder() or "runs")
    if folder:
        settings.set_runs_folder(folder)


def show_about(parent: QWidget) -> QMessageBox:
    box = QMessageBox(QMessageBox.Icon.Information, "About Freezeframe",
                      "<b>Freezeframe</b><p>A training monitor for alternating-phase TensorFlow training "
                      "(GANs: D steps with G frozen, then G steps): live losses and per-variable update "
                      "magnitudes, exact scope freezing, live schedules.</p>"
                      "<p>Every run is recorded in its run directory: config.toml, scalars.csv, events.jsonl, "
                      "samples, TensorBoard files and checkpoints. File → Open Run… shows finished runs, "
                      "several overlaid for comparison.</p>"
                      "<p>Shortcuts: " + ", ".join(f"{t} {k[0]}" for t, _, k, _ in RUN_ACTIONS.values()) + "</p>",
                      QMessageBox.StandardButton.Ok, parent)
    box.open()
    return box



def choose_run_dir(parent: QWidget, verb: str, then: Callable[[str], object]) -> None:
    """Pick a run directory in a dialog and hand it to `then` (nothing if cancelled)."""
    path = QFileDialog.getExistingDirectory(parent, f"{verb} a run directory", str(Path.cwd()))
    if path:
        then(path)

"""The window's actions and menus: run controls with their shortcuts, File (open, recent, runs folder,
quit), Run, Help.

The run actions are shared by the menu and the panel's buttons, so enabled state, text and tooltip
(which names the shortcut) are defined once. `file_menu` is public: exporters add their actions to it.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMessageBox, QStyle, QWidget

if TYPE_CHECKING:
    from .main_window import MainWindow

#: name -> (text, tooltip, shortcuts (the first is shown), icon)
RUN_ACTIONS = {
    "start": ("Start", "Start a new run", ["Ctrl+R", "F5"], QStyle.StandardPixmap.SP_MediaPlay),
    "pause": ("Pause", "Pause or resume training", ["Ctrl+P", "F6"], QStyle.StandardPixmap.SP_MediaPause),
    "step": ("Step", "Run one step, then pause", ["Ctrl+.", "F10"], QStyle.StandardPixmap.SP_MediaSkipForward),
    "stop": ("Stop", "Stop the run (the record is kept)", ["Ctrl+Shift+R", "Shift+F5"],
             QStyle.StandardPixmap.SP_MediaStop),
}


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


def build_menus(w: "MainWindow") -> None:
    bar = w.menuBar()
    w.file_menu = bar.addMenu("&File")
    open_action = w.file_menu.addAction("&Open Experiment…", lambda: open_dialog(w))
    open_action.setShortcut(QKeySequence.StandardKey.Open)
    w.recent_menu = w.file_menu.addMenu("Open &Recent")
    w.recent_menu.setToolTipsVisible(True)
    w.recent_menu.aboutToShow.connect(lambda: fill_recent_menu(w))
    w.file_menu.addAction("Runs &Folder…", lambda: choose_runs_folder(w))
    w.file_menu.addAction("Res&ume Run…", lambda: resume_dialog(w))
    w.file_menu.addSeparator()
    from .export.actions import install_export_menu
    w.export_actions = install_export_menu(w, w.file_menu, lambda: w.store, smoothing_provider=lambda: w.plots.smoothing)
    w.file_menu.addSeparator()
    w.quit_action = w.file_menu.addAction("&Quit", w.close)
    w.quit_action.setShortcut(QKeySequence.StandardKey.Quit)
    run = bar.addMenu("&Run")
    for a in (w.start_action, w.pause_action, w.step_action, w.stop_action):
        run.addAction(a)
    help_menu = bar.addMenu("&Help")
    help_menu.addAction("&About Freezeframe", lambda: show_about(w))


def open_dialog(w: "MainWindow") -> None:
    path, _ = QFileDialog.getOpenFileName(w, "Open experiment file", str(Path.cwd()),
                                          "Experiment files (*.py);;All files (*)")
    if path:
        w.open_experiment(path)


def resume_dialog(w: "MainWindow") -> None:
    """Pick a run directory and continue that run from its last checkpoint."""
    folder = QFileDialog.getExistingDirectory(w, "Resume a run (its directory)", w.settings.runs_folder() or "runs")
    if folder:
        w.resume_run(folder)


def fill_recent_menu(w: "MainWindow") -> None:
    w.recent_menu.clear()
    files = w.settings.recent_files()
    for f in files:
        w.recent_menu.addAction(Path(f).name, lambda f=f: w.open_experiment(f)).setToolTip(f)
    if not files:
        w.recent_menu.addAction("(none yet)").setEnabled(False)


def choose_runs_folder(w: "MainWindow") -> None:
    folder = QFileDialog.getExistingDirectory(w, "Folder for new runs", w.settings.runs_folder() or "runs")
    if folder:
        w.settings.set_runs_folder(folder)


def show_about(parent: QWidget) -> QMessageBox:
    box = QMessageBox(QMessageBox.Icon.Information, "About Freezeframe",
                      "<b>Freezeframe</b><p>A training monitor for alternating-phase TensorFlow training "
                      "(GANs: D steps with G frozen, then G steps): live losses and per-variable update "
                      "magnitudes, exact scope freezing, live schedules.</p>"
                      "<p>Every run is recorded in its run directory: config.toml, scalars.csv, events.jsonl, "
                      "TensorBoard files and checkpoints.</p>"
                      "<p>Shortcuts: " + ", ".join(f"{t} {k[0]}" for t, _, k, _ in RUN_ACTIONS.values()) + "</p>",
                      QMessageBox.StandardButton.Ok, parent)
    box.open()
    return box

"""File-menu entries for figures, data and screenshots: the only glue between the window and export.

The window passes a callable that returns its `RunData`; every action reads that store on the
GUI thread and never talks to the trainer, so exporting mid-run costs the training nothing.
"""
from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMenu

from training_core import UserError
from training_core.figures import FigureSpec

from .clipboard import copy_figure, save_window_screenshot
from .csv_export import write_csv
from .dialog import ExportDialog, show_error
from .figure import Figure


class ExportActions(QObject):
    """Owns the actions and remembers the last figure options for the session (child of the window)."""

    def __init__(self, window: QMainWindow, store_provider: Callable[[], object],
                 smoothing_provider: Callable[[], float] | None = None) -> None:
        super().__init__(window)
        self.setObjectName("exportActions")
        self.window, self.store_provider, self.smoothing_provider = window, store_provider, smoothing_provider
        self.spec = FigureSpec()
        self.dialog: ExportDialog | None = None

        def action(text: str, name: str, slot: Callable[[], None], shortcut: str | None = None) -> QAction:
            a = QAction(text, window)
            a.setObjectName(name)
            if shortcut:
                a.setShortcut(QKeySequence(shortcut))
            a.triggered.connect(slot)
            return a

        self.figure_action = action("Export figure…", "exportFigureAction", self.open_dialog, "Ctrl+E")
        self.csv_action = action("Export data as CSV…", "exportCsvAction", self._ask_csv)
        self.copy_action = action("Copy figure to clipboard", "copyFigureAction", self.copy)
        self.shot_actions = [action(f"{label}…", f"screenshot{r}xAction",
                                    lambda _checked=False, r=r: self._ask_screenshot(r))
                             for r, label in ((1, "1× pixel ratio"), (2, "2× pixel ratio (sharp)"))]

    def current_spec(self) -> FigureSpec:
        """The dialog's options if it was used, else the defaults with the screen's smoothing."""
        if self.dialog is not None:
            try:
                self.spec = self.dialog.spec()
            except UserError:
                pass
        elif self.smoothing_provider is not None:
            self.spec.smoothing = float(self.smoothing_provider())
        return self.spec

    def open_dialog(self) -> ExportDialog:
        if self.dialog is None:
            self.dialog = ExportDialog(self.store_provider, self.current_spec(), self.window, auto_height=True,
                                       auto_plots=True)
        self.dialog.show()
        self.dialog.raise_()
        self.dialog.activateWindow()
        self.dialog.schedule_preview()
        return self.dialog

    def copy(self) -> None:
        self._guard(lambda: (copy_figure(Figure(self.store_provider(), self.current_spec())),
                             self._status("figure copied to the clipboard")))

    def _ask_csv(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export data as CSV", "figure.csv", "CSV (*.csv)")
        if path:
            self._guard(lambda: self._status(
                f"wrote {path} ({write_csv(Figure(self.store_provider(), self.current_spec()).data, path)} rows)"))

    def _ask_screenshot(self, ratio: int) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Save window screenshot", "freezeframe.png", "PNG (*.png)")
        if path:
            self._guard(lambda: (save_window_screenshot(self.window, path, ratio),
                                 self._status(f"saved {path} at {ratio}×")))

    def _guard(self, fn: Callable[[], object]) -> None:
        try:
            fn()
        except UserError as e:
            show_error(self.window, str(e))

    def _status(self, text: str) -> None:
        bar = self.window.statusBar() if isinstance(self.window, QMainWindow) else None
        if bar is not None:
            bar.showMessage(text, 4000)


def install_export_menu(window: QMainWindow, file_menu: QMenu, store_provider: Callable[[], object],
                        smoothing_provider: Callable[[], float] | None = None) -> ExportActions:
    """Add File → Export figure… (Ctrl+E), Export data as CSV…, Copy figure to clipboard and
    Save window screenshot ▸ 1× / 2×. `smoothing_provider` (optional) lets the figure default to the
    smoothing the plots show. Returns the owner of the actions (kept alive by the window)."""
    ea = ExportActions(window, store_provider, smoothing_provider)
    file_menu.addSeparator()
    file_menu.addAction(ea.figure_action)
    file_menu.addAction(ea.csv_action)
    file_menu.addAction(ea.copy_action)
    shots = file_menu.addMenu("Save window screenshot")
    shots.setObjectName("screenshotMenu")
    for a in ea.shot_actions:
        shots.addAction(a)
    return ea

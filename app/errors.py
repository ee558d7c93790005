"""The error dialog: one line that names the problem and the fix, the traceback behind "Show Details".

Dialogs open window-modal but without a nested event loop (`open()`, not `exec()`), so training reports
keep flowing while one is up and a test never blocks on it.
"""
from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QMessageBox, QWidget


def show_error(parent: QWidget | None, summary: str, detail: str = "", title: str = "Freezeframe",
               warning: bool = False) -> QMessageBox:
    icon = QMessageBox.Icon.Warning if warning else QMessageBox.Icon.Critical
    box = QMessageBox(icon, title, summary, QMessageBox.StandardButton.Ok, parent)
    box.setObjectName("errorDialog")
    if detail and detail.strip() != summary.strip():
        box.setDetailedText(detail)
    box.open()
    return box


def offer_rollback(box: QMessageBox, step: int, roll_back: Callable[[], None]) -> None:
    """A "Roll back to step N" button on the NaN dialog: the run goes back to its last good checkpoint, and
    stays paused so the learning rate can be lowered before Continue."""
    button = box.addButton(f"Roll back to step {step}", QMessageBox.ButtonRole.ActionRole)
    button.setObjectName("rollbackButton")
    button.clicked.connect(roll_back)

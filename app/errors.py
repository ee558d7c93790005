"""The error dialog: one line that names the problem and the fix, the traceback behind "Show Details".

Dialogs open window-modal but without a nested event loop (`open()`, not `exec()`), so training reports
keep flowing while one is up and a test never blocks on it.
"""
from __future__ import annotations

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


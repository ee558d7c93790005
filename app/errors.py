"""The error dialog: one line that names the problem and the fix, the traceback behind "Show Details".

Dialogs open window-modal but without a nested event loop (`open()`, not `exec()`), so training reports
keep flowing while one is up and a test never blocks on it.
"""
from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

from training_core.events import Nan


def show_error(parent: QWidget | None, summary: str, detail: str = "", title: str = "Freezeframe",
               warning: bool = False) -> QMessageBox:
    icon = QMessageBox.Icon.Warning if warning else QMessageBox.Icon.Critical
    box = QMessageBox(icon, title, summary, QMessageBox.StandardButton.Ok, parent)
    box.setObjectName("errorDialog")
    if detail and detail.strip() != summary.strip():
        box.setDetailedText(detail)
    box.open()
    return box


def nan_message(event: Nan) -> tuple[str, str]:
    """(summary, details) for the core's `nan` event; the core has paused itself."""
    phase, at = event.phase, event.at_step
    summary = (f"The loss of phase {phase} became {event.value} at step {at}; training is paused. "
               f"Lower phase {phase}'s learning rate (or fix the loss), then Resume, or Stop.")
    detail = "\n".join(f"{k}: {v}" for k, v in event.to_dict().items())
    return summary, detail

"""The export dialog's small pieces: its warning box, its combo and spin boxes made in one line each, and what
tells it the data to draw changed."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QMessageBox, QWidget


def show_error(parent: QWidget, message: str) -> QMessageBox:
    """A window-modal warning that does not block the event loop (open(), not exec()): the live plots
    keep updating behind it."""
    box = QMessageBox(QMessageBox.Icon.Warning, "Export", message, QMessageBox.StandardButton.Ok, parent)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box


def version_of(runs: object) -> object:
    """What changes when the data to draw changed: a run's version, or every shown run's."""
    if isinstance(runs, (list, tuple)):
        return tuple((label, getattr(data, "version", None)) for label, data in runs)
    return getattr(runs, "version", None)


def combo(items: list[str], current: str) -> QComboBox:
    box = QComboBox()
    box.addItems(items)
    box.setCurrentText(current)
    return box


def dspin(lo: float, hi: float, step: float, value: float, suffix: str = "", decimals: int = 2) -> QDoubleSpinBox:
    box = QDoubleSpinBox(minimum=lo, maximum=hi, singleStep=step, decimals=decimals, suffix=suffix)
    box.setValue(value)
    return box

"""The export dialog's small pieces: its warning box, its combo and spin boxes made in one line each, its
buttons, its preview's image, and what tells it the data to draw changed."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QComboBox, QDialogButtonBox, QDoubleSpinBox, QMessageBox, QPushButton, QWidget


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


def dialog_buttons(parent: QWidget) -> tuple[QDialogButtonBox, QPushButton, QPushButton, QPushButton]:
    """(the box, Export…, Copy, Export CSV…), with Close rejecting `parent`."""
    buttons = QDialogButtonBox()
    export = buttons.addButton("Export…", QDialogButtonBox.ButtonRole.AcceptRole)
    copy, csv = QPushButton("Copy"), QPushButton("Export CSV…")
    buttons.addButton(copy, QDialogButtonBox.ButtonRole.ActionRole)
    buttons.addButton(csv, QDialogButtonBox.ButtonRole.ActionRole)
    buttons.addButton(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(parent.reject)
    export.setDefault(True)
    return buttons, export, copy, csv


def preview_image(fig, avail_w: float, avail_h: float, ratio: float) -> QImage:
    """The figure drawn as the file is (same points, same paint), scaled to fit the room at the screen's ratio."""
    w_pt, h_pt = fig.size_pt
    scale = min(max(avail_w, 100) / w_pt, max(avail_h, 100) / h_pt) * ratio
    img = QImage(max(1, round(w_pt * scale)), max(1, round(h_pt * scale)), QImage.Format.Format_ARGB32)
    img.fill(0)
    p = QPainter(img)
    p.scale(scale, scale)
    fig.paint(p, dpi_equiv=72.0 * scale)
    p.end()
    img.setDevicePixelRatio(ratio)
    return img

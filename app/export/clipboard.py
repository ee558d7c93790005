"""Copying a figure, and grabbing the window, for slides and chats where a file is one step too many."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QSize, Qt
from PySide6.QtGui import QGuiApplication, QPixmap
from PySide6.QtWidgets import QWidget

from training_core import UserError
from training_core.rundir.outputs import check_output

from .figure import Figure
from .render import figure_image, svg_bytes

CLIPBOARD_DPI = 200  # sharp on a slide or a retina screen, still a modest image


def copy_figure(fig: Figure, dpi: float = CLIPBOARD_DPI) -> None:
    """Put the figure on the clipboard as an image and as SVG (image/svg+xml): office and vector
    editors take the SVG, everything else the image.

    The clipboard owns the QMimeData from here on; no Python reference to it is kept or returned, since
    a wrapper that outlives the clipboard's own deletion of it crashes the interpreter at exit."""
    mime = QMimeData()
    mime.setImageData(figure_image(fig, dpi))
    mime.setData("image/svg+xml", svg_bytes(fig))
    QGuiApplication.clipboard().setMimeData(mime)


def window_screenshot(widget: QWidget, ratio: float = 1.0) -> QPixmap:
    """The widget as it looks, at `ratio` pixels per logical pixel (2 = a sharp 'retina' screenshot
    on any screen), by painting it again rather than grabbing the screen."""
    size = widget.size()
    pix = QPixmap(QSize(round(size.width() * ratio), round(size.height() * ratio)))
    pix.setDevicePixelRatio(ratio)
    pix.fill(Qt.GlobalColor.transparent)
    widget.render(pix)
    return pix


def save_window_screenshot(widget: QWidget, path: str | Path, ratio: float = 1.0) -> QPixmap:
    check_output(path, "the screenshot")
    pix = window_screenshot(widget, ratio)
    if not pix.save(str(path), "PNG"):
        raise UserError(f"could not write {path}; check that its folder exists and is writable")
    return pix

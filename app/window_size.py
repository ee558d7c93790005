"""How big the window opens: its default size, shrunk to fit a small screen."""
from __future__ import annotations

from PySide6.QtWidgets import QApplication

DEFAULT_SIZE = (1440, 900)


def fitting_size() -> tuple[int, int]:
    """DEFAULT_SIZE, or the screen's available size when that is smaller (a 1280x720 screen cut the
    samples view off at the window's right edge); offscreen (tests, --screenshot) keeps DEFAULT_SIZE."""
    app = QApplication.instance()
    screen = app.primaryScreen() if app is not None else None
    if screen is None or QApplication.platformName() in ("offscreen", "minimal"):
        return DEFAULT_SIZE
    avail = screen.availableGeometry()
    return min(DEFAULT_SIZE[0], avail.width()), min(DEFAULT_SIZE[1], avail.height() - 40)

"""Painting without holding the GIL, so the window's other Python (its report reader) keeps running.

PySide6 keeps the GIL through every C++ call it wraps: measured here, a Python thread ran at 3% of
its speed while a QGraphicsView repainted from a Python `paintEvent`, and at 100% when the view was
painted by Qt alone. pyqtgraph paints everything from Python (its `GraphicsView.paintEvent`, every
item's `paint`), so each redraw of the plots stopped training for its whole length (~11 ms, five
times a second).

So the window's plot views are painted by Qt: `Canvas` keeps QGraphicsView's C++ `paintEvent` (the
Python step pyqtgraph needs before a paint, `prepareForPaint`, runs from an event filter, which
returns before Qt paints), and the curves, grid and marker lines are `Stroke`s, plain
QGraphicsPathItems that Qt draws in C++. Only small items (axes, legend samples) still paint from
Python. Training has since moved to a process of its own (app/worker.py); painting in C++ still keeps
the window's GUI thread from holding the GIL against its report reader, and keeps paints short.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets


class _PrepareBeforePaint(QtCore.QObject):
    def __init__(self, scene: QtWidgets.QGraphicsScene, parent: QtCore.QObject) -> None:
        super().__init__(parent)
        self._scene = scene

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 (Qt name)
        if event.type() == QtCore.QEvent.Type.Paint:
            self._scene.prepareForPaint()  # pyqtgraph: deferred autorange and view transforms
        return False


class CppPaint:
    """Mixin for a pyqtgraph GraphicsView subclass: Qt paints it in C++ (see the module docstring).
    List it first among the bases and call `paint_in_cpp()` at the end of `__init__`."""

    paintEvent = QtWidgets.QGraphicsView.paintEvent  # Shiboken: the C++ method itself, no Python call

    def paint_in_cpp(self) -> None:
        self._prepare = _PrepareBeforePaint(self.scene(), self)
        self.viewport().installEventFilter(self._prepare)


class Canvas(CppPaint, pg.GraphicsLayoutWidget):
    """The window's plot area: a GraphicsLayoutWidget painted in C++."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.paint_in_cpp()


class Stroke(QtWidgets.QGraphicsPathItem):
    """A polyline drawn by Qt's raster engine, with the fast 1-pixel cosmetic pen only.

    Wider pens go through Qt's path stroker, which took 3 ms for a 1000-point curve at 2 px (0.13 ms at
    1 px); a bold line is therefore the same path stamped at k×k pixel offsets (`set_path(..., offsets)`),
    which is what a k-pixel square brush draws. The pen is width 0 (a 1-pixel hairline): with a
    non-zero width QGraphicsPathItem computes its bounding box by stroking the path. Hit tests see an
    empty shape, so hovering and clicking never stroke thousands of segments (clicks are resolved
    from the data instead)."""

    def __init__(self, parent: QtWidgets.QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)
        self.setAcceptHoverEvents(False)

    def shape(self) -> QtGui.QPainterPath:
        return QtGui.QPainterPath()

    def set_pen(self, pen: QtGui.QPen | None) -> None:
        if pen is None or pen.style() == QtCore.Qt.PenStyle.NoPen:
            self.setPen(QtGui.QPen(QtCore.Qt.PenStyle.NoPen))
            return
        hairline = QtGui.QPen(pen)
        hairline.setWidthF(0)
        hairline.setCosmetic(True)
        self.setPen(hairline)

    def set_path(self, path: QtGui.QPainterPath, offsets: list[tuple[float, float]] | None = None) -> None:
        if offsets:
            stamped = QtGui.QPainterPath()
            for dx, dy in offsets:
                stamped.addPath(path.translated(dx, dy))
            path = stamped
        self.setPath(path)


def pixel_offsets(width: float, solid: bool = True) -> list[tuple[int, int]]:
    """Whole-pixel offsets whose union draws a line about `width` pixels wide ([] for a thin line).
    A dashed line is stamped vertically only: sideways stamps would shift its dashes into the gaps."""
    k = int(round(width))
    if k < 2:
        return []
    lo = -((k - 1) // 2)
    if not solid:
        return [(0, j) for j in range(lo, lo + k)]
    return [(i, j) for i in range(lo, lo + k) for j in range(lo, lo + k)]


def view_offsets(pen: QtGui.QPen | None, vb) -> list[tuple[float, float]]:
    """`pixel_offsets` of a cosmetic `pen`, in the data units of view box `vb` (what `Stroke.set_path`
    takes); [] for a thin line or a view with no size yet."""
    if pen is None or not pen.isCosmetic() or vb is None or vb.width() <= 0 or vb.height() <= 0:
        return []
    offsets = pixel_offsets(pen.widthF(), pen.style() == QtCore.Qt.PenStyle.SolidLine)
    rect = vb.viewRect()
    px, py = rect.width() / vb.width(), rect.height() / vb.height()
    return [(dx * px, dy * py) for dx, dy in offsets]

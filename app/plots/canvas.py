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
Python. Training has since moved to a process of its own (app/training_process.py); painting in C++ still keeps
the window's GUI thread from holding the GIL against its report reader, and keeps paints short.
"""
from __future__ import annotations

import math

import numpy as np
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


PIECE_PX = 100  # pixel columns per piece of a `SplitStroke`
SPLIT_AFTER = 3  # calls with the same view before a `SplitStroke` cuts its curve into pieces


class SplitStroke:
    """A polyline cut along x into pieces of about `PIECE_PX` pixel columns, each a `Stroke`; `set_data`
    sets the path of a piece only when its points changed.

    Why: `setPath` marks an item's whole bounding rect for repaint, so a live curve that gained a few points
    at its right end had its whole plot repainted (every curve, grid line and marker under it) at each
    25 Hz refresh: 8-20 ms of the GUI thread a frame on a slow machine, with 10^6 points per curve. While
    the view range stays put (following a run keeps 5% of room, plot_view.py, and the peak decimation's chunks
    are aligned to the data, decimate.py), only the last piece of each curve changes, so Qt repaints a
    strip at the right end. Each piece starts at the last point of the one before, so the line stays
    connected. A piece costs a path of its own (~40 us of Python each time the view moves), so while the
    view moves at every refresh (a short run growing fast, a zoom) the curve stays one piece, repainted
    whole as before; it is cut once the view has stayed put for `SPLIT_AFTER` calls."""

    def __init__(self, parent: QtWidgets.QGraphicsItem) -> None:
        self._parent = parent
        self.pieces: list[Stroke] = []
        self._drawn: list[tuple[bytes, bytes, tuple] | None] = []
        self._pen: QtGui.QPen | None = None
        self._view: tuple | None = None
        self._still = 0  # calls since the view last changed

    def set_pen(self, pen: QtGui.QPen | None) -> None:
        self._pen = pen
        for piece in self.pieces:
            piece.set_pen(pen)

    def clear(self) -> None:
        for piece, drawn in zip(self.pieces, self._drawn):
            if drawn is not None:
                piece.set_path(QtGui.QPainterPath())
        self._drawn = [None] * len(self.pieces)

    def set_data(self, x: np.ndarray, y: np.ndarray, x_range: tuple[float, float], width_px: float,
                 offsets: list[tuple[float, float]] | None = None) -> None:
        """Draw the points (`x` sorted) of a view showing `x_range` over `width_px` pixel columns, connected
        where finite (NaN and inf: gaps), stamped at `offsets` (see `Stroke.set_path`)."""
        key_offsets = tuple(offsets or ())
        view = (tuple(x_range), width_px, key_offsets)
        self._still = self._still + 1 if view == self._view else 0
        self._view = view
        n = max(1, math.ceil(width_px / PIECE_PX)) if self._still >= SPLIT_AFTER else 1
        while len(self.pieces) < n:
            piece = Stroke(self._parent)
            piece.set_pen(self._pen)
            self.pieces.append(piece)
            self._drawn.append(None)
        x0, x1 = x_range
        cuts = np.searchsorted(x, x0 + (x1 - x0) * np.arange(1, n) / n) if n > 1 else np.empty(0, int)
        starts = [0, *cuts.tolist()]
        ends = [*cuts.tolist(), len(x)]
        for i, piece in enumerate(self.pieces):
            lo, hi = (max(0, starts[i] - 1), ends[i]) if i < n else (0, 0)
            if hi - lo < 2:
                lo = hi
            xs, ys = x[lo:hi], y[lo:hi]
            key = (xs.tobytes(), ys.tobytes(), key_offsets)
            if key == self._drawn[i]:
                continue
            self._drawn[i] = key
            path = pg.arrayToQPath(xs, ys, connect="finite") if hi > lo else QtGui.QPainterPath()
            piece.set_path(path, offsets)

    def drawn(self) -> int:
        """How many points the pieces draw (each piece's first point repeats its neighbour's last)."""
        counts = [piece.path().elementCount() for piece in self.pieces]
        nonempty = [c for c in counts if c]
        return sum(nonempty) - max(0, len(nonempty) - 1)


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

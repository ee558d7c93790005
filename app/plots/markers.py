"""Vertical lines at the steps where the user changed something or an alarm went off.

Both step plots show every store marker: control changes (freeze, ratio, lr, method) in one colour,
pauses in grey, alarms (NaN, leak) in red, so a change in a curve can be read against its cause.
Markers only ever get appended during a run, so items are added for the new ones only.

Every Step and every pause adds one, so a session of stepping through training leaves hundreds. As
pyqtgraph InfiniteLines, each one re-laid itself out in Python on every view change and painted from
Python (with the GIL held): the benchmark's 600-step chunks left the GUI thread ~40% busy with them.
Here the lines of one look are a single C++-painted `Stroke` per plot, rebuilt when the view moves,
and labels are QGraphicsTextItems (painted by Qt) placed in pixels.
"""
from __future__ import annotations

import html

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from training_core.runs import Marker, RunData

from . import palette
from .canvas import Stroke, view_offsets

MAX_LABEL = 28  # characters; the full label is in the tooltip
LABEL_ROWS = (0.96, 0.86, 0.76, 0.66, 0.56)  # label heights, as fractions of the plot height
GAP_PX = 6


class MarkerLine:
    """One marker on one plot: its step, look and label (the line itself is drawn by the plot's strokes)."""

    def __init__(self, m: Marker, vb: pg.ViewBox) -> None:
        self.marker = m
        self._vb = vb
        alarm = m.kind in ("nan", "leak")
        color = palette.marker_color(m.kind)
        self.pen = pg.mkPen(color, width=2 if alarm else 1.2,
                            style=QtCore.Qt.PenStyle.SolidLine if alarm else QtCore.Qt.PenStyle.DashLine)
        text = m.label if len(m.label) <= MAX_LABEL else m.label[:MAX_LABEL - 1] + "…"
        self.label = QtWidgets.QGraphicsTextItem()
        self.label.setHtml(f'<span style="background-color: rgba(255,255,255,200)">{html.escape(text)}</span>')
        self.label.setDefaultTextColor(QtGui.QColor(color))
        self.label.setFlag(QtWidgets.QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        self.label.setToolTip(f"step {m.step}: {m.label}")
        self.label.setZValue(6)
        vb.addItem(self.label, ignoreBounds=True)

    @property
    def look(self) -> tuple:
        """Markers that look alike share one stroke."""
        return (self.pen.color().name(), self.pen.style(), self.pen.widthF())

    def value(self) -> int:
        return self.marker.step

    def getViewBox(self) -> pg.ViewBox:  # noqa: N802 (pyqtgraph's name, as tests and callers use it)
        return self._vb


class _PlotMarkers:
    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.lines: list[MarkerLine] = []
        self.strokes: dict[tuple, Stroke] = {}
        self.pens: dict[tuple, QtGui.QPen] = {}
        plot.vb.sigRangeChanged.connect(self.layout)
        plot.vb.sigResized.connect(self.layout)

    def add(self, m: Marker) -> None:
        line = MarkerLine(m, self.plot.vb)
        self.lines.append(line)
        if line.look not in self.strokes:
            stroke = Stroke()
            stroke.set_pen(line.pen)
            stroke.setZValue(5)
            self.plot.addItem(stroke, ignoreBounds=True)
            self.strokes[line.look] = stroke
            self.pens[line.look] = line.pen

    def layout(self, *_args) -> None:
        """Lines from the bottom to the top of the view; each label where it overlaps no other: right of
        its line (left near the right edge), in the highest free row."""
        vb = self.plot.vb
        (x0, x1), (y0, y1) = vb.viewRange()
        width, height = vb.width(), vb.height()
        if not self.lines or x1 <= x0 or width <= 0 or height <= 0:
            for stroke in self.strokes.values():
                stroke.set_path(QtGui.QPainterPath())
            return
        paths = {look: QtGui.QPainterPath() for look in self.strokes}
        for line in self.lines:
            path = paths[line.look]
            path.moveTo(line.value(), y0)
            path.lineTo(line.value(), y1)
        px = (x1 - x0) / width
        for look, stroke in self.strokes.items():
            stroke.set_path(paths[look], view_offsets(self.pens[look], vb))  # alarms: two pixels wide
        taken: list[list[tuple[float, float]]] = [[] for _ in LABEL_ROWS]
        for line in sorted(self.lines, key=lambda ln: ln.value()):
            x = (line.value() - x0) / px
            rect = line.label.boundingRect()
            w = rect.width()
            right = x + GAP_PX + w < width
            span = (x, x + w + GAP_PX) if right else (x - w - GAP_PX, x)
            row = next((i for i, spans in enumerate(taken)
                        if all(span[1] <= a or span[0] >= b for a, b in spans)), len(LABEL_ROWS) - 1)
            taken[row].append(span)
            left_px = x + GAP_PX / 2 if right else x - GAP_PX / 2 - w
            y = y0 + LABEL_ROWS[row] * (y1 - y0)
            line.label.setPos(x0 + left_px * px, y)
            line.label.setTransform(QtGui.QTransform.fromTranslate(0, -rect.height() / 2))

    def clear(self) -> None:
        for line in self.lines:
            self.plot.vb.removeItem(line.label)
        for stroke in self.strokes.values():
            self.plot.removeItem(stroke)
        self.lines.clear()
        self.strokes.clear()
        self.pens.clear()


class MarkerLines:
    def __init__(self, plots: list[pg.PlotItem]) -> None:
        self.plots = [_PlotMarkers(p) for p in plots]
        self.markers: list[Marker] = []

    def update(self, store: RunData) -> None:
        if len(store.markers) < len(self.markers):
            self.clear()
        new = store.markers[len(self.markers):]
        for m in new:
            self.markers.append(m)
            for pm in self.plots:
                pm.add(m)
        if new:
            self.place_labels()

    def place_labels(self) -> None:
        for pm in self.plots:
            pm.layout()

    def lines_of(self, index: int) -> list[MarkerLine]:
        """The markers of plot `index` (0 losses, 1 updates), in store order."""
        return self.plots[index].lines

    def clear(self) -> None:
        for pm in self.plots:
            pm.clear()
        self.markers.clear()

"""A faint grid at the axes' major and minor ticks, drawn directly instead of by the axes.

pyqtgraph's built-in grid (`showGrid`) extends each axis' cached QPicture over the whole view; replaying
that picture costs ~4 ms per plot per frame in the raster engine, as much as all the curves together.
Drawing the same few dozen lines straight from `paint` costs well under a millisecond.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from . import palette


class LightGrid(pg.GraphicsObject):
    def __init__(self, plot: pg.PlotItem) -> None:
        super().__init__()
        self.plot = plot
        self.setZValue(-100)
        color = QtGui.QColor(palette.FOREGROUND)
        self._pens = []
        for alpha in (palette.GRID_ALPHA, palette.GRID_ALPHA / 2.5):
            c = QtGui.QColor(color)
            c.setAlphaF(alpha)
            pen = QtGui.QPen(c)
            pen.setCosmetic(True)
            pen.setWidth(0)
            self._pens.append(pen)
        plot.addItem(self, ignoreBounds=True)
        plot.vb.sigRangeChanged.connect(self._range_changed)

    def _range_changed(self, *_args) -> None:
        self.prepareGeometryChange()
        self.update()

    def boundingRect(self) -> QtCore.QRectF:
        return self.plot.vb.viewRect()

    def paint(self, p: QtGui.QPainter, *args) -> None:
        vb = self.plot.vb
        rect = vb.viewRect()
        if rect.width() <= 0 or rect.height() <= 0:
            return
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, False)
        for name, vertical in (("bottom", True), ("left", False)):
            axis = self.plot.getAxis(name)
            lo, hi = (rect.left(), rect.right()) if vertical else (rect.top(), rect.bottom())
            size = vb.width() if vertical else vb.height()
            for level, (_spacing, values) in enumerate(axis.tickValues(lo, hi, size)[:2]):
                p.setPen(self._pens[level])
                lines = [QtCore.QLineF(v, rect.top(), v, rect.bottom()) if vertical
                         else QtCore.QLineF(rect.left(), v, rect.right(), v) for v in values if lo <= v <= hi]
                if lines:
                    p.drawLines(lines)

"""A faint grid at the axes' major and minor ticks, drawn by Qt (two `Stroke`s), not by the axes.

pyqtgraph's built-in grid (`showGrid`) extends each axis' cached QPicture over the whole view; replaying
that picture cost ~4 ms per plot per frame, as much as all the curves together. Here the lines are
recomputed only when the view range or size changes, as one path per tick level, and painted in C++
without the GIL (canvas.py).
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from . import palette
from .canvas import Stroke


class LightGrid:
    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        color = QtGui.QColor(palette.FOREGROUND)
        self.strokes = []
        for alpha in (palette.GRID_ALPHA, palette.GRID_ALPHA / 2.5):
            c = QtGui.QColor(color)
            c.setAlphaF(alpha)
            stroke = Stroke()
            stroke.set_pen(QtGui.QPen(c))
            stroke.setZValue(-100)
            plot.addItem(stroke, ignoreBounds=True)
            self.strokes.append(stroke)
        plot.vb.sigRangeChanged.connect(self.update)
        plot.vb.sigResized.connect(self.update)

    def update(self, *_args) -> None:
        vb = self.plot.vb
        rect = vb.viewRect()
        paths = [QtGui.QPainterPath(), QtGui.QPainterPath()]
        if rect.width() > 0 and rect.height() > 0:
            for name, vertical in (("bottom", True), ("left", False)):
                axis = self.plot.getAxis(name)
                lo, hi = (rect.left(), rect.right()) if vertical else (rect.top(), rect.bottom())
                size = vb.width() if vertical else vb.height()
                for level, (_spacing, values) in enumerate(axis.tickValues(lo, hi, size)[:2]):
                    path = paths[level]
                    for v in values:
                        if lo <= v <= hi:
                            if vertical:
                                path.moveTo(QtCore.QPointF(v, rect.top()))
                                path.lineTo(QtCore.QPointF(v, rect.bottom()))
                            else:
                                path.moveTo(QtCore.QPointF(rect.left(), v))
                                path.lineTo(QtCore.QPointF(rect.right(), v))
        for stroke, path in zip(self.strokes, paths):
            stroke.set_path(path)

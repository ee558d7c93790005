"""The numbers under the cursor: step and values, in a line under the plots, plus a step cursor line.

Mouse moves arrive through a rate-limited SignalProxy (30/s at most), so hovering never competes
with the refresh timer however fast the mouse moves.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from . import palette
from .losses import LossCurves
from .updates import AXIS_LABEL, UpdateCurves

HINT = "hover a plot for values · drag to pan · wheel to zoom · “A” (bottom left) to follow the run again"


class HoverReadout:
    def __init__(self, scene: QtWidgets.QGraphicsScene, loss_plot: pg.PlotItem, update_plot: pg.PlotItem,
                 losses: LossCurves, updates: UpdateCurves, label: QtWidgets.QLabel) -> None:
        self.loss_plot, self.update_plot = loss_plot, update_plot
        self.losses, self.updates, self.label = losses, updates, label
        self.cursors = []
        for plot in (loss_plot, update_plot):
            line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen(palette.FOREGROUND + "60", width=1))
            line.hide()
            line.setZValue(20)
            plot.addItem(line, ignoreBounds=True)
            self.cursors.append(line)
        label.setText(HINT)
        self.proxy = pg.SignalProxy(scene.sigMouseMoved, rateLimit=30, slot=self._moved)

    def _moved(self, args: tuple) -> None:
        pos: QtCore.QPointF = args[0]
        for plot in (self.loss_plot, self.update_plot):
            if plot.vb.sceneBoundingRect().contains(pos):
                p = plot.vb.mapSceneToView(pos)
                self.show_at(plot, p.x(), p.y())
                return
        for line in self.cursors:
            line.hide()

    def show_at(self, plot: pg.PlotItem, step: float, y: float) -> str:
        """Describe the data at view point (step, y) of `plot`; returns the text (also shown)."""
        for line in self.cursors:
            line.setValue(step)
            line.show()
        parts = [f"step {step:,.0f}"]
        for phase, color, s, raw, smooth in self.losses.values_at(step):
            parts.append(f"<span style='color:{color}'>loss {phase} {raw:.4g} (smoothed {smooth:.4g})</span>")
        if plot is self.update_plot:
            near = self.updates.nearest(step, y)
            if near is not None:
                path, color, s, value = near
                name = AXIS_LABEL[self.updates.mode]
                shown = "0 (frozen)" if value == 0 else f"{value:.3g}"
                parts.append(f"<span style='color:{color}'><b>{path}</b> {name} {shown} at step {s:,}</span>")
        text = " · ".join(parts)
        self.label.setText(text)
        return text

    def clear(self) -> None:
        for line in self.cursors:
            line.hide()
        self.label.setText(HINT)

"""The numbers under the cursor: step and values, in a line under the plots, plus a step cursor line.

Mouse moves arrive through a rate-limited SignalProxy (30/s at most), so hovering never competes
with the refresh timer however fast the mouse moves. The text wraps rather than running past the
window's edge, and goes back to the hint when the mouse leaves the plots.
"""
from __future__ import annotations

import html

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from . import palette
from .losses import LossCurves
from .update_curves import AXIS_LABEL, UpdateCurves

HINT = "hover a plot for values · drag to pan · wheel to zoom the steps · A to follow the run again"


def readout_label() -> QtWidgets.QLabel:
    """The label under the plots that the readout writes to."""
    label = QtWidgets.QLabel()
    label.setTextFormat(QtCore.Qt.TextFormat.RichText)
    label.setStyleSheet("font-size: 9pt;")
    label.setWordWrap(True)  # a long readout wraps, never runs past the window's edge
    label.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
    font = QtGui.QFont(label.font())
    font.setPointSizeF(9.0)
    # room for two lines from the start: a readout that wrapped grew the label and shrank the plots under a
    # still cursor, so the heat map's next readout named another row than the one then clicked
    label.setFixedHeight(2 * QtGui.QFontMetrics(font).lineSpacing() + 2)
    return label


class HoverReadout(QtCore.QObject):
    def __init__(self, view: pg.GraphicsView, loss_plot: pg.PlotItem, update_plot: pg.PlotItem,
                 losses: LossCurves, updates: UpdateCurves, label: QtWidgets.QLabel, heat=None) -> None:
        super().__init__(view)
        self.loss_plot, self.update_plot = loss_plot, update_plot
        self.losses, self.updates, self.label = losses, updates, label
        self.heat = heat  # the heat-map view (heatmap.UpdateHeatmap): `plot` and `describe(x, y)`
        self.plots = [loss_plot, update_plot] + ([heat.plot] if heat is not None else [])
        self.cursors = []
        for plot in self.plots:
            line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen(palette.FOREGROUND + "60", width=1))
            line.hide()
            line.setZValue(20)
            plot.addItem(line, ignoreBounds=True)
            self.cursors.append(line)
        label.setText(HINT)
        self.proxy = pg.SignalProxy(view.scene().sigMouseMoved, rateLimit=30, slot=self._moved)
        view.viewport().installEventFilter(self)

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 (Qt name)
        if event.type() == QtCore.QEvent.Type.Leave:
            self.clear()
        return False

    def _moved(self, args: tuple) -> None:
        pos: QtCore.QPointF = args[0]
        for plot in self.plots:
            if plot.isVisible() and plot.vb.sceneBoundingRect().contains(pos):
                p = plot.vb.mapSceneToView(pos)
                self.show_at(plot, p.x(), p.y())
                return
        self.clear()

    def show_at(self, plot: pg.PlotItem, x: float, y: float) -> str:
        """Describe the data at view point (x, y) of `plot`; returns the text (also shown)."""
        for line in self.cursors:
            line.setValue(x)
            line.show()
        parts = [f"step {x:,.0f}" if self.loss_plot.getAxis("bottom").labelText.startswith("step") else f"{x:,.1f} s"]
        for name, color, s, raw, smooth in self.losses.values_at(x):
            shown = html.escape(name.replace("loss/", "loss "))
            parts.append(f"<span style='color:{color}'>{shown} {raw:.4g} (smoothed {smooth:.4g})</span>")
        if plot is self.update_plot:
            near = self.updates.nearest(x, y)
            if near is not None:
                name, color, s, _value, reading = near
                kind = AXIS_LABEL[self.updates.mode]
                parts.append(f"<span style='color:{color}'><b>{html.escape(name)}</b> {kind} {reading} "
                             f"at step {s:,}</span>")
        elif self.heat is not None and plot is self.heat.plot:
            cell = self.heat.describe(x, y)
            if cell is not None:
                parts.append(f"<b>{html.escape(cell)}</b>")
        text = " · ".join(parts)
        self.label.setText(text)
        return text

    def clear(self) -> None:
        for line in self.cursors:
            line.hide()
        self.label.setText(HINT)

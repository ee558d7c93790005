"""Curves that stay cheap with millions of points, and the common look of the step plots.

A curve holds every point (`xData`, `yData` are the store's arrays) but draws a peak-decimated view
of what is visible: one min and one max per pixel column, cut from a `PeakPyramid` that is extended
by the new points only (decimate.py), so a refresh costs the same at 10^3 and 10^7 steps. A live plot
that follows the newest step moves its x range on every refresh; `held()` lets the panel move the
range first, with curves ignoring that change, and then call `setData` once, so each refresh
decimates every curve exactly once. Dynamic-range limiting is off because it scans all data for
bounds; peak decimation keeps the envelope, so the y autorange is still exact.
"""
from __future__ import annotations

import bisect
from contextlib import contextmanager
from typing import Iterator

import numpy as np
import pyqtgraph as pg
from pyqtgraph.graphicsItems.PlotDataItem import PlotDataset
from PySide6 import QtCore, QtGui, QtWidgets

from . import palette
from .canvas import SplitStroke, pixel_offsets, view_offsets
from .decimate import PeakPyramid
from .grid import LightGrid

LEFT_AXIS_WIDTH = 62  # same for both plots so their step axes line up


class LiveCurve(pg.PlotDataItem):
    """A PlotDataItem (data, pen, legend entry, as pyqtgraph knows them) drawn by a C++ `Stroke`."""

    _held = 0

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("dynamicRangeLimit", None)
        kwargs.setdefault("autoDownsampleFactor", 1.0)  # peak: one min and one max per pixel column
        kwargs.setdefault("skipFiniteCheck", False)
        self._pyramid = PeakPyramid()
        self._grown = False
        self.stroke = None
        super().__init__(*args, **kwargs)
        self.curve.hide()  # pyqtgraph's own curve item paints from Python: never given data
        self.stroke = SplitStroke(self)
        self.setClipToView(True)  # both on, so that pyqtgraph redraws on a range change; the work is ours
        self.setDownsampling(auto=True, method="peak")
        self.updateItems(styleUpdate=True)

    def setData(self, *args, grown: bool = False, **kwargs) -> None:  # noqa: N802 (Qt name)
        """`grown=True`: the caller promises the arrays only gained points at the end since the last
        call, so the pyramid takes in the new points only; otherwise it is rebuilt (lazily, once)."""
        self._grown = grown
        super().setData(*args, **kwargs)

    def keep(self, y: np.ndarray) -> bool:
        """Skip the `setData` of points `y` (the same series as the last handed, grown at its end) when what they
        add draws nothing: gaps (NaN) only, as a frozen variable's trained curve gains while it stays frozen.
        Whether it was skipped. A range moved inside `held()` still gets its re-cut (of the points handed).

        Why: each `setData` costs a frozen stretch's two curves twice the Python of one (a window tick with 6 of
        12 variables frozen took 1.15x the tick with none, bench/frozen_window.py); a gap draws nothing and the
        curve's bounds hold no NaN, so handing it changes no pixel."""
        n = 0 if self.yData is None else len(self.yData)
        if not n or len(y) < n or np.isfinite(y[n:]).any():
            return False
        if self._datasetDisplay is None:  # a held range change is waiting for this curve's data
            self.updateItems(styleUpdate=False)
        return True

    def updateItems(self, styleUpdate: bool = True) -> None:  # noqa: N802 (pyqtgraph's name)
        if self.stroke is None:  # pyqtgraph's constructor, before the stroke exists
            return
        if styleUpdate:
            self.stroke.set_pen(self._pen())
        self._draw(self._getDisplayDataset())

    def _draw(self, ds: PlotDataset | None) -> None:
        vb = self.getViewBox()
        if ds is None or len(ds.x) == 0 or vb is None:
            self.stroke.clear()
            return
        rect = vb.viewRect()
        self.stroke.set_data(ds.x, ds.y, (rect.left(), rect.right()), vb.width(), view_offsets(self._pen(), vb))

    def shown(self) -> tuple[np.ndarray, np.ndarray]:
        """The points drawn now (the decimated view of `xData`, `yData`)."""
        ds = self._getDisplayDataset()
        return (np.empty(0), np.empty(0)) if ds is None else (ds.x, ds.y)

    def _pen(self) -> QtGui.QPen | None:
        pen = self.opts["pen"]
        return None if pen is None else pg.mkPen(pen)

    def dataBounds(self, ax: int, frac: float = 1.0, orthoRange=None):  # noqa: N802 (pyqtgraph's name)
        """Bounds of what is drawn (the peak envelope contains every point), for the autorange."""
        ds = self._datasetDisplay
        if ds is None or len(ds.x) == 0:
            return (None, None)
        vals = ds.x if ax == 0 else ds.y
        if orthoRange is not None:
            other = ds.y if ax == 0 else ds.x
            vals = vals[(other >= orthoRange[0]) & (other <= orthoRange[1])]
        vals = vals[np.isfinite(vals)]
        if not len(vals):
            return (None, None)
        return (float(vals.min()), float(vals.max()))

    def _getDisplayDataset(self) -> PlotDataset | None:  # noqa: N802 (pyqtgraph's name)
        ds = self._dataset
        vb = self.getViewBox()
        if ds is None or vb is None or vb.width() <= 0 or len(ds.x) < 2:
            return super()._getDisplayDataset()
        if self._datasetDisplay is not None and not self.property("xViewRangeWasChanged"):
            return self._datasetDisplay
        x, y = ds.x, ds.y
        if not self._grown:
            self._pyramid.reset()
        self._grown = True  # until the next setData: a view change re-cuts the same data
        self._pyramid.extend(y)
        rect = vb.viewRect()
        i0 = bisect.bisect_left(x, rect.left()) - 1
        i1 = bisect.bisect_right(x, rect.right()) + 1
        i0, i1 = max(0, i0), min(len(x), i1)
        per_chunk = (i1 - i0) / (vb.width() * self.opts["autoDownsampleFactor"])
        xo, yo = self._pyramid.view(x, y, i0, i1, per_chunk)
        self._datasetDisplay = PlotDataset(xo, yo, None, None)
        self.setProperty("xViewRangeWasChanged", False)
        self.setProperty("yViewRangeWasChanged", False)
        return self._datasetDisplay

    def viewRangeChanged(self, vb=None, ranges=None, changed=None) -> None:  # noqa: N802 (pyqtgraph's name)
        if LiveCurve._held:
            # setData follows within the same refresh and recomputes against the new range
            self.setProperty("xViewRangeWasChanged", True)
            self._datasetDisplay = None
            return
        x_changed = changed is None or changed[0]
        super().viewRangeChanged(vb, ranges, changed)  # x: re-cut and redraw (updateItems)
        pen = self._pen()
        if not x_changed and self.stroke is not None and pen is not None and pixel_offsets(pen.widthF()):
            self._draw(self._datasetDisplay)  # y only: a bold line's pixel offsets changed size


def dashed_pen(colour: str, width: float, dash: int = 0) -> QtGui.QPen:
    """A pen in `colour` with the line style `palette.VARIABLE_DASHES[dash]` (0: solid)."""
    pen = pg.mkPen(colour, width=width)
    pattern = palette.VARIABLE_DASHES[dash % len(palette.VARIABLE_DASHES)]
    if pattern:
        pen.setDashPattern(list(pattern))
    return pen


def legend_pen(colour: str, width: float, dash: int = 0) -> QtGui.QPen:
    """`dashed_pen` for a legend sample: its pattern in pixels as at width 1, so that the sample's 20 px
    line shows a whole period (Qt scales a pattern by the width: at 2.2 px a dash-dot period is 44 px, and
    its sample looked solid, as the dashed one nearly did)."""
    pen = dashed_pen(colour, width, dash)
    if pen.style() == QtCore.Qt.PenStyle.CustomDashLine:
        pen.setDashPattern([v / max(width, 1.0) for v in pen.dashPattern()])
    return pen


def nearest_index(xs: np.ndarray, x: float) -> int:
    """Index of the value of sorted, non-empty `xs` nearest to `x` (the later one on a tie)."""
    i = int(np.searchsorted(xs, x))
    if i >= len(xs):
        return len(xs) - 1
    if i > 0 and x - xs[i - 1] < xs[i] - x:
        return i - 1
    return i


@contextmanager
def held() -> Iterator[None]:
    """Move view ranges inside this block without curves re-decimating (they get setData next)."""
    LiveCurve._held += 1
    try:
        yield
    finally:
        LiveCurve._held -= 1


def label_x(plots: tuple[pg.PlotItem, ...], text: str) -> None:
    """Name x on the stacked plots; only the lowest shows it (the others share the same x)."""
    for plot in plots:
        plot.setLabel("bottom", text, color=palette.FOREGROUND)
    plots[0].getAxis("bottom").showLabel(False)


def style_plot(plot: pg.PlotItem, left: str, bottom: str = "step") -> None:
    """White background look shared by both step plots (labels, light grid, aligned left axis)."""
    for name in ("left", "bottom"):
        ax = plot.getAxis(name)
        ax.setPen(pg.mkPen(palette.FOREGROUND))
        ax.setTextPen(pg.mkPen(palette.FOREGROUND))
    plot.setLabel("left", left, color=palette.FOREGROUND)
    plot.setLabel("bottom", bottom, color=palette.FOREGROUND)
    plot.getAxis("left").setWidth(LEFT_AXIS_WIDTH)
    LightGrid(plot)
    plot.setClipToView(True)
    plot.setDownsampling(auto=True, mode="peak")
    plot.getViewBox().setAutoVisible(y=True)
    plot.getViewBox().disableAutoRange(axis=pg.ViewBox.XAxis)  # the panel follows the newest step itself
    autorange_without_repaint(plot.getViewBox())


def autorange_without_repaint(vb: pg.ViewBox) -> None:
    """pyqtgraph queues an autorange (done before the next paint) with `update()` of the whole ViewBox, so
    each refresh that added points repainted the whole plot, curves, grid and all, though only the end of
    each curve changed (canvas.SplitStroke). (An `update(rect)` of one pixel of the ViewBox repainted it
    whole too.) Here a blank 1x1 item asks for the paint: the paint comes, and with it the autorange
    (canvas._PrepareBeforePaint); if the range then moves, the whole view repaints anyway. It sits in the
    top right corner, by the newest points, so that what is repainted stays one strip there."""
    poke = QtWidgets.QGraphicsRectItem(0, 0, 1, 1, vb)
    poke.setPen(QtGui.QPen(QtCore.Qt.PenStyle.NoPen))
    poke.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)  # clicks and drags go to the view as before

    def queue_update_auto_range() -> None:
        vb._autoRangeNeedsUpdate = True
        poke.update()

    def to_corner(*_args) -> None:
        poke.setPos(max(0.0, vb.width() - 1), 0)
    vb.queueUpdateAutoRange = queue_update_auto_range
    vb.sigResized.connect(to_corner)

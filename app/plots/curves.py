"""Curves that stay cheap with millions of points, and the common look of the step plots.

pyqtgraph clips to the view and peak-downsamples on every view-range change. A live plot that follows
the newest step moves its x range on every refresh, so a plain PlotDataItem would decimate its whole
array twice per refresh: once in `setData` (old range) and again when the range moves. `LiveCurve`
lets the panel move the range first, with curves ignoring that change (`held()`), and then call
`setData` once, so each refresh decimates every curve exactly once. Dynamic-range limiting is off
because it re-decimates on every y change and scans all data for bounds; peak downsampling keeps the
envelope, so the y autorange is still exact.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pyqtgraph as pg

from . import palette
from .grid import LightGrid

LEFT_AXIS_WIDTH = 62  # same for both plots so their step axes line up


class LiveCurve(pg.PlotDataItem):
    _held = 0

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("dynamicRangeLimit", None)
        kwargs.setdefault("autoDownsampleFactor", 1.0)  # peak: one min and one max per pixel column
        kwargs.setdefault("skipFiniteCheck", False)
        super().__init__(*args, **kwargs)
        self.setClipToView(True)
        self.setDownsampling(auto=True, method="peak")

    def viewRangeChanged(self, vb=None, ranges=None, changed=None) -> None:
        if LiveCurve._held:
            # setData follows within the same refresh and recomputes against the new range
            self.setProperty("xViewRangeWasChanged", True)
            self._datasetDisplay = None
            return
        super().viewRangeChanged(vb, ranges, changed)


@contextmanager
def held() -> Iterator[None]:
    """Move view ranges inside this block without curves re-decimating (they get setData next)."""
    LiveCurve._held += 1
    try:
        yield
    finally:
        LiveCurve._held -= 1


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

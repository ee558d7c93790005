"""A sweep's plot: one line per setting, the mean over its seeds, and a band around it (min–max or ± sd), each
setting in its own colour, named in the legend with its seed count.

Why a plot of its own, beside the window's loss plots: those draw runs, one curve each; a sweep's question is
whether settings differ by more than their seeds do, which only the band shows. The numbers come from
training_core/runs/sweep_table.py (`group_bands`, which runs/groups.py computes), the same as the table's and
the exported figures'. A band of many points is thinned for drawing to at most `MAX_POINTS` per edge, each
kept bin's lowest low and highest high (the band never looks narrower than it is).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSizePolicy, QWidget

from training_core.runs.sweep_table import GroupBand

from .plots import palette
from .plots.update_plot import fit_columns

MAX_POINTS = 2000  # per band edge and mean line, after thinning
BAND_ALPHA = 60  # 0..255: the band is context, the mean the signal


def thin(steps: np.ndarray, mean: np.ndarray, low: np.ndarray, high: np.ndarray,
         n: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """At most `n` points: the steps in `n` bins, each bin's first step, mean of its means, min of its lows and
    max of its highs."""
    if len(steps) <= n:
        return steps, mean, low, high
    edges = np.linspace(0, len(steps), n + 1).astype(np.int64)[:-1]
    counts = np.diff(np.r_[edges, len(steps)])
    return (steps[edges], np.add.reduceat(mean, edges) / counts, np.minimum.reduceat(low, edges),
            np.maximum.reduceat(high, edges))


class BandPlot(pg.GraphicsLayoutWidget):
    """`show(bands, ylabel)` draws them; `drawn` holds (label, mean item, fill item) per setting, in order. The
    legend is a row above the plot, as the window's plots have theirs: inside it, it was drawn over the bands
    with no background."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setBackground(palette.BACKGROUND)
        self.legend = pg.LegendItem(colCount=2, labelTextColor=palette.FOREGROUND, labelTextSize="8pt",
                                    verSpacing=-8, horSpacing=4, frame=False)
        self.addItem(self.legend, row=0, col=0)
        self.legend.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Maximum)
        self.ci.layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignLeft)
        self.plotItem: pg.PlotItem = self.addPlot(row=1, col=0)
        self.ci.layout.setRowStretchFactor(1, 1)
        self.plotItem.showGrid(x=True, y=True, alpha=palette.GRID_ALPHA)
        for side in ("left", "bottom"):
            axis = self.plotItem.getAxis(side)
            axis.setPen(palette.FOREGROUND)
            axis.setTextPen(palette.FOREGROUND)
        self.plotItem.setLabel("bottom", "step")
        self.drawn: list[tuple[str, pg.PlotDataItem, pg.FillBetweenItem]] = []

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        if hasattr(self, "legend"):  # (GraphicsLayoutWidget's constructor resizes before it exists)
            fit_columns(self.legend, self.width(), 4)

    def show_bands(self, bands: list[GroupBand], ylabel: str) -> None:
        self.plotItem.clear()
        self.legend.clear()
        self.drawn = []
        self.plotItem.setLabel("left", ylabel)
        for i, g in enumerate(bands):
            if not len(g.band.steps):
                continue
            colour = palette.run_color(i)
            steps, mean, low, high = thin(g.band.steps, g.band.mean, g.band.low, g.band.high)
            lo = pg.PlotDataItem(steps, low, pen=pg.mkPen(None))
            hi = pg.PlotDataItem(steps, high, pen=pg.mkPen(None))
            brush = pg.mkColor(colour)
            brush.setAlpha(BAND_ALPHA)
            fill = pg.FillBetweenItem(lo, hi, brush=brush)
            line = pg.PlotDataItem(steps, mean, pen=pg.mkPen(colour, width=palette.SMOOTH_WIDTH))
            for item in (lo, hi, fill, line):
                self.plotItem.addItem(item)
            seeds = f"{g.band.n} seed{'s' * (g.band.n != 1)}"
            label = f"{g.label} ({seeds})"
            self.legend.addItem(line, label)
            self.drawn.append((label, line, fill))
        fit_columns(self.legend, self.width(), 4)
        self.plotItem.enableAutoRange()

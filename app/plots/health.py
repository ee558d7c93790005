"""GAN health beside the losses: one small plot per `metric/<name>` the shown runs recorded.

The experiment's `metrics(ctx)` (training_core/observers/health.py) is measured every 2 s (faster at first), so
these curves have few points, drawn as measured (no smoothing) with a dot at each: the dots say where
the line is a measurement and where it only joins two.
Each metric gets its own plot because their scales differ (modes covered 0-8, a fraction 0-1); the
plots sit in a column between the loss and the update plots, x-linked to them, so a freeze or a
ratio change reads as quality, not only as loss.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from . import palette
from .axes import TidyAxis, quiet_axes
from .curves import dashed_pen, style_plot
from .plot_view import PlotView


class MetricPlots:
    def __init__(self, layout: pg.GraphicsLayout, link_to: pg.PlotItem) -> None:
        self.layout = layout
        self.link_to = link_to
        self.plots: dict[str, pg.PlotItem] = {}  # by tag
        self.curves: dict[str, pg.PlotDataItem] = {}  # by curve name ("metric/x", or "<run>: metric/x")
        self._looks: dict[str, tuple[str, int]] = {}  # curve -> (colour, dash)
        self.created = 0  # plots made so far (tests: the row is rebuilt only when tags change)

    def update(self, view: PlotView) -> bool:
        """Draw every metric of the shown runs; True if a plot was added (the panel re-lays out)."""
        tags = list(dict.fromkeys(t for ly in view.layers for t in ly.data.scalar_tags if t.startswith("metric/")))
        added, changed = False, set()
        for tag in tags:
            if tag not in self.plots:
                self._add_plot(tag)
                added = True
        for layer in view.layers:
            for tag in tags:
                if tag not in layer.data.scalar_tags:
                    continue
                name = view.name(layer, tag)
                by_run = view.multi and view.colour_by == "run"  # else colour means phase: a run is a line style
                colour = palette.run_color(layer.colour) if by_run else palette.METRIC_COLOR
                look = (colour, layer.index % len(palette.VARIABLE_DASHES) if view.multi and not by_run else 0)
                curve = self.curves.get(name)
                if curve is None or self._looks.get(name) != look:
                    if curve is not None:
                        self.plots[tag].removeItem(curve)
                    # a plain item: a point every second or two, each drawn as a dot (where it was measured)
                    curve = self.curves[name] = pg.PlotDataItem(pen=dashed_pen(colour, palette.SMOOTH_WIDTH - 0.7,
                                                                               look[1]),
                                                                symbol="o", symbolSize=5, symbolPen=None,
                                                                symbolBrush=colour)
                    self._looks[name] = look
                    self.plots[tag].addItem(curve)
                steps, wall, values = layer.data.scalar(tag)
                # values only grow, and a change of x (steps or time) makes new curves: only a new point
                # needs drawing (metrics come every second or two; refreshes 25 times a second)
                if curve.yData is None or len(curve.yData) != len(values):
                    curve.setData(view.x(layer, steps, wall), values)
                    changed.add(tag)
        for tag in changed:
            self._fit_y(tag, view)
        return added

    def _fit_y(self, tag: str, view: PlotView) -> None:
        """From 0 for measures that are never negative (counts, fractions), to a little above the largest;
        pyqtgraph's autorange would put a constant 0 in a band around -0.5..0.5."""
        values = [ly.data.scalar(tag)[2] for ly in view.layers if tag in ly.data.scalar_tags]
        values = [v[np.isfinite(v)] for v in values if len(v)]
        if not values or not any(len(v) for v in values):
            return
        lo = float(min(v.min() for v in values if len(v)))
        hi = float(max(v.max() for v in values if len(v)))
        lo = min(lo, 0.0)
        if hi <= lo:
            hi = lo + 1.0
        self.plots[tag].vb.setYRange(lo, hi, padding=0.08)

    def _add_plot(self, tag: str) -> None:
        plot = self.layout.addPlot(row=len(self.plots), col=0, axisItems={"left": TidyAxis("left"),
                                                                         "bottom": TidyAxis("bottom")})
        style_plot(plot, "", bottom="")
        quiet_axes(plot)
        plot.hideAxis("bottom")
        # the name as a title over the plot, not a rotated axis label: in a short plot those ran into the next
        plot.setTitle(tag.removeprefix("metric/").replace("_", " "), size="8pt", color=palette.FOREGROUND,
                      justify="left")
        plot.getAxis("left").enableAutoSIPrefix(False)  # "modes covered (x0.001)" for a run at 0 modes
        plot.vb.disableAutoRange(axis=pg.ViewBox.YAxis)
        plot.setXLink(self.link_to)
        plot.setMenuEnabled(False, enableViewBoxMenu=True)
        plot.vb.setMouseEnabled(x=True, y=False)
        plot.setMinimumHeight(64)
        self.plots[tag] = plot
        self.created += 1

    def all_curves(self) -> dict[str, pg.PlotDataItem]:
        return dict(self.curves)

    def clear(self) -> None:
        for plot in self.plots.values():
            self.layout.removeItem(plot)
        self.plots.clear()
        self.curves.clear()
        self._looks.clear()

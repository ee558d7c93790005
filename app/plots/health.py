"""GAN health beside the losses: a small plot per measure the shown runs recorded (`metric/<name>`), its spread
(`<name>_std`) drawn as a band around it, on a log axis when its values span decades.

The experiment's `metrics(ctx)` (training_core/observers/health.py) is measured every 2 s (faster at first), so
these curves have few points, drawn as measured (no smoothing) with a dot at each: the dots say where
the line is a measurement and where it only joins two.
Which metrics share a plot and when a plot is logarithmic is one rule for the window and the exported figures
(training_core/figures/metric_groups.py): a measure and its `_std` in one plot, other measures a plot each
(their scales differ: modes covered 0-8, a fraction 0-1, FID in the hundreds); a log axis once the values are
positive and span more than a decade, so an untrained generator's FID of ~145 at step 0 no longer flattens the
late run's 2 → 1 (the shapes example) into a line on the floor. Right-click a plot to choose log or linear yourself.
The plots sit in a column between the loss and the update plots, x-linked to them, so a freeze or a
ratio change reads as quality, not only as loss. On a log axis the curves hold log10 of the values (as the
loss plot does), the axis labels powers of ten.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtGui

from training_core.figures.metric_groups import MetricGroup, band_edges, metric_groups, wants_log

from . import palette, tight
from .axes import PlainLogAxis, TidyAxis, decades_view, quiet_axes
from .curves import dashed_pen, style_plot
from .losses import log10_or_nan
from .plot_view import PlotView

SCALES = ("auto", "log", "linear")  # a plot's y scale: by the rule, or the user's choice from its menu
SCALE_TEXT = {"auto": "Y scale: automatic (log when the values span > 10×)", "log": "Y scale: log",
              "linear": "Y scale: linear"}
BAND_ALPHA = 0.35  # the spread's band over the background: the measure's line stays the darkest thing


def band_colour(colour: str) -> str:
    """`colour` as the band draws it over the background (opaque, so the title's swatch matches it)."""
    return palette.mix(colour, palette.BACKGROUND, 1.0 - BAND_ALPHA)


class MetricPlot:
    """One plot: a measure of every shown run (and its band), its scale, and the items that draw them."""

    def __init__(self, group: MetricGroup, plot: pg.PlotItem) -> None:
        self.group, self.plot = group, plot
        self.scale = "auto"
        self.log = False
        self.lines: dict[str, pg.PlotDataItem] = {}  # by curve name ("metric/kid", or "<run>: metric/kid")
        self.bands: dict[str, tuple[pg.PlotCurveItem, pg.PlotCurveItem, pg.FillBetweenItem]] = {}
        self.looks: dict[str, tuple[str, int]] = {}  # curve name -> (colour, dash)
        self.drawn: dict[str, tuple[int, int, bool]] = {}  # curve name -> (points, spread points, log) drawn
        self.lows: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # curve name -> a band's (x, lower edge)

    def curves(self) -> dict[str, pg.GraphicsObject]:
        out: dict[str, pg.GraphicsObject] = dict(self.lines)
        for name, (low, high, _) in self.bands.items():
            std = name.removesuffix(self.group.tag) + self.group.std
            out[f"{std}/low"], out[f"{std}/high"] = low, high
        return out


class MetricPlots:
    def __init__(self, layout: pg.GraphicsLayout, link_to: pg.PlotItem) -> None:
        self.layout = layout
        self.link_to = link_to
        self.groups: list[MetricGroup] = []
        self.views: dict[str, MetricPlot] = {}  # by the measure's tag
        self.plots: dict[str, pg.PlotItem] = {}  # by the measure's tag ("metric/kid"; its _std has none)
        self.created = 0  # plots made so far (tests: the row is rebuilt only when tags change)
        self._scales: dict[str, str] = {}  # the user's choice per measure, kept over a redraw from scratch
        self._view: PlotView | None = None  # the last refresh's (a scale chosen from a menu redraws with it)

    def update(self, view: PlotView) -> bool:
        """Draw every metric of the shown runs; True if the plots changed (the panel re-lays out)."""
        tags = list(dict.fromkeys(t for ly in view.layers for t in ly.data.scalar_tags if t.startswith("metric/")))
        groups = metric_groups(tags)
        self._view = view
        added = groups != self.groups
        if added:  # a new measure, or a spread joined its measure: the column is laid out again
            self._remove_plots()
            self.groups = groups
            by_run = view.multi and view.colour_by == "run"
            for group in groups:
                self._add_plot(group, palette.FOREGROUND if by_run else palette.METRIC_COLOR)
        for mp in self.views.values():
            changed = False
            for layer in view.layers:
                if mp.group.tag in layer.data.scalar_tags:
                    changed |= self._draw_layer(mp, view, layer, redraw=False)
            if changed:
                self._rescale(mp, view)
        return added

    # -- drawing ---------------------------------------------------------------------------------------
    def _look(self, view: PlotView, layer) -> tuple[str, int]:
        by_run = view.multi and view.colour_by == "run"  # else colour means phase: a run is a line style
        colour = palette.run_color(layer.colour) if by_run else palette.METRIC_COLOR
        return colour, (layer.index % len(palette.VARIABLE_DASHES) if view.multi and not by_run else 0)

    def _draw_layer(self, mp: MetricPlot, view: PlotView, layer, redraw: bool) -> bool:
        """Draw one run's measure (and band) if it gained points, or if `redraw`; True if it drew."""
        group, data = mp.group, layer.data
        name = view.name(layer, group.tag)
        look = self._look(view, layer)
        if mp.looks.get(name) != look:
            self._remove_items(mp, name)
            colour, dash = look
            # a plain item: a point every second or two, each drawn as a dot (where it was measured)
            line = pg.PlotDataItem(pen=dashed_pen(colour, palette.SMOOTH_WIDTH - 0.7, dash), symbol="o",
                                   symbolSize=5, symbolPen=None, symbolBrush=colour)
            line.setZValue(2)
            mp.plot.addItem(line)
            mp.lines[name], mp.looks[name] = line, look
            if group.std is not None:
                low, high = pg.PlotCurveItem(pen=pg.mkPen(None)), pg.PlotCurveItem(pen=pg.mkPen(None))
                fill = pg.FillBetweenItem(low, high, brush=pg.mkBrush(band_colour(colour)))
                for item in (low, high, fill):
                    mp.plot.addItem(item)
                fill.setZValue(0)
                mp.bands[name] = (low, high, fill)
            mp.drawn.pop(name, None)
        steps, wall, values = data.scalar(group.tag)
        spread = data.scalar(group.std) if group.std is not None and group.std in data.scalar_tags else None
        state = (len(values), 0 if spread is None else len(spread[2]), mp.log)
        # values only grow, and a change of x (steps or time) makes new curves: only a new point needs drawing
        # (metrics come every second or two; refreshes 25 times a second)
        if not redraw and mp.drawn.get(name) == state:
            return False
        mp.drawn[name] = state
        x = view.x(layer, steps, wall)
        mp.lines[name].setData(x, log10_or_nan(values) if mp.log else values)
        if name in mp.bands:
            low, high, _ = mp.bands[name]
            idx, lo, hi = (band_edges(steps, values, spread[0], spread[2]) if spread is not None
                           else (np.zeros(0, np.int64), np.zeros(0), np.zeros(0)))
            if mp.log:
                lo, hi = log10_or_nan(lo), log10_or_nan(hi)
            mp.lows[name] = (x[idx], lo)  # drawn once the y range is known (`_clip_bands`)
            high.setData(x[idx], hi)
        return True

    def _rescale(self, mp: MetricPlot, view: PlotView) -> None:
        """Log or linear by the plot's scale, every run drawn again if that changed, then fit y."""
        values = [ly.data.scalar(mp.group.tag)[2] for ly in view.layers if mp.group.tag in ly.data.scalar_tags]
        log = wants_log(values) if mp.scale == "auto" else mp.scale == "log"
        if log != mp.log:
            mp.log = log
            mp.plot.getAxis("left").setLogMode(log)
            for layer in view.layers:
                if mp.group.tag in layer.data.scalar_tags:
                    self._draw_layer(mp, view, layer, redraw=True)
        self._fit_y(mp, view, values)
        self._clip_bands(mp)

    def _clip_bands(self, mp: MetricPlot) -> None:
        """The bands' lower edges, on a log axis stopped at the plot's bottom: an edge below it (or <= 0, which
        has no logarithm) is drawn there, so the band runs along the axis instead of aiming at minus infinity
        between two measures (it cut the plot diagonally)."""
        bottom = mp.plot.vb.viewRange()[1][0]
        for name, (x, lo) in mp.lows.items():
            mp.bands[name][0].setData(x, np.where(np.isnan(lo), bottom, np.fmax(lo, bottom)) if mp.log else lo)

    def _fit_y(self, mp: MetricPlot, view: PlotView, values: list[np.ndarray]) -> None:
        """Linear: from 0 for measures that are never negative (counts, fractions), to a little above the
        largest (pyqtgraph's autorange would put a constant 0 in a band around -0.5..0.5). Log: the decades the
        measure and the top of its band span; a band's lower edge may run off the bottom (its spread reaches
        below what the measure ever was: fitting it would flatten the measure again)."""
        tops, bottoms = list(values), []
        if mp.group.std is not None:
            for ly in view.layers:
                if mp.group.tag in ly.data.scalar_tags and mp.group.std in ly.data.scalar_tags:
                    (s, _, v), (ss, _, sv) = ly.data.scalar(mp.group.tag), ly.data.scalar(mp.group.std)
                    _, lo, hi = band_edges(s, v, ss, sv)
                    tops.append(hi)
                    bottoms.append(lo)
        vals = np.concatenate([np.asarray(v, np.float64) for v in tops + ([] if mp.log else bottoms)] or [[]])
        vals = vals[np.isfinite(vals) & (vals > 0 if mp.log else True)]
        if not vals.size:
            return
        if mp.log:
            lo, hi = float(np.log10(vals.min())), float(np.log10(vals.max()))
            if hi - lo < 0.3:  # a flat measure on a log axis you chose: a factor of 2 around it at least
                mid = (hi + lo) / 2
                lo, hi = mid - 0.15, mid + 0.15
            lo, hi = decades_view(lo, hi)  # two labelled decades (this range is set, not autoranged)
        else:
            lo, hi = min(float(vals.min()), 0.0), float(vals.max())
            if hi <= lo:
                hi = lo + 1.0
        mp.plot.vb.setYRange(lo, hi, padding=0.08)

    # -- plots -----------------------------------------------------------------------------------------
    def _add_plot(self, group: MetricGroup, band: str) -> None:
        plot = self.layout.addPlot(row=len(self.plots), col=0, axisItems={"left": PlainLogAxis("left"),
                                                                         "bottom": TidyAxis("bottom")})
        style_plot(plot, "", bottom="")
        quiet_axes(plot)
        plot.hideAxis("bottom")
        # the name as a title over the plot, not a rotated axis label: in a short plot those ran into the next
        plot.setTitle(title_html(group, band), size="8pt", color=palette.FOREGROUND, justify="left")
        plot.getAxis("left").enableAutoSIPrefix(False)  # "modes covered (x0.001)" for a run at 0 modes
        plot.vb.disableAutoRange(axis=pg.ViewBox.YAxis)
        plot.setXLink(self.link_to)
        plot.setMenuEnabled(False, enableViewBoxMenu=True)
        plot.vb.setMouseEnabled(x=True, y=False)
        tight.metric_plot(plot)  # a title row as tall as its text; no taller than needed in a short window
        mp = MetricPlot(group, plot)
        mp.scale = self._scales.get(group.tag, "auto")
        self._add_scale_menu(mp)
        self.plots[group.tag], self.views[group.tag] = plot, mp
        self.created += 1

    def _add_scale_menu(self, mp: MetricPlot) -> None:
        """Automatic, log or linear, as three choices at the end of the plot's right-click menu."""
        menu = mp.plot.vb.menu
        menu.addSeparator()
        choices = QtGui.QActionGroup(menu)
        mp.scale_actions = {}
        for scale in SCALES:
            action = menu.addAction(SCALE_TEXT[scale])
            action.setCheckable(True)
            action.setChecked(scale == mp.scale)
            choices.addAction(action)
            action.triggered.connect(lambda _on=False, s=scale, m=mp: self.set_scale(m.group.tag, s))
            mp.scale_actions[scale] = action
        mp.scale_group = choices

    def set_scale(self, tag: str, scale: str, view: PlotView | None = None) -> None:
        """Plot `tag` (a measure, `metric/fid`) on a log or linear axis, or by the rule ("auto")."""
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
        self._scales[tag] = scale
        mp = self.views.get(tag)
        if mp is None:
            return
        mp.scale = scale
        mp.scale_actions[scale].setChecked(True)
        view = view if view is not None else self._view
        if view is not None:
            self._rescale(mp, view)

    def _remove_items(self, mp: MetricPlot, name: str) -> None:
        line = mp.lines.pop(name, None)
        if line is not None:
            mp.plot.removeItem(line)
        for item in mp.bands.pop(name, ()):
            mp.plot.removeItem(item)
        mp.lows.pop(name, None)
        mp.looks.pop(name, None)

    def _remove_plots(self) -> None:
        for plot in self.plots.values():
            self.layout.removeItem(plot)
        self.plots.clear()
        self.views.clear()
        self.groups = []

    def all_curves(self) -> dict[str, pg.GraphicsObject]:
        """{"metric/<name>": its line, and for a measure with a spread "metric/<name>_std/low" and ".../high"
        (the band's edges)}; log10 of the values on a log axis."""
        out: dict[str, pg.GraphicsObject] = {}
        for mp in self.views.values():
            out.update(mp.curves())
        return out

    def clear(self) -> None:
        self._remove_plots()


def title_html(group: MetricGroup, band: str = palette.METRIC_COLOR) -> str:
    """The plot's title, which is its legend too: the measure's name, and for a band a swatch of it (in
    `band`: the metric's colour, or a neutral one when the runs' colours tell them apart) and what it is
    ("■ ± kid std"). Outside the data, so it never hides a point; set once, so it never flickers."""
    name = group.tag.removeprefix("metric/").replace("_", " ")
    if group.std is None:
        return name
    swatch = band_colour(band)
    std = group.std.removeprefix("metric/").replace("_", " ")
    return f'{name} &nbsp;<span style="color:{swatch}">■</span> ± {std}'

"""The update plot: its two views, curves and heat map, and the controls above them.

Up to `AUTO_LIMIT` variables the update plot draws a curve per variable (update_curves.py). Above it, curves
are an unreadable tangle, so the view switches by itself to the heat map (heatmap.py: a row per
variable, grouped by scope), until the user picks one with the "Curves / Heat map" buttons (the
choice then holds). In heat-map mode curves are drawn on demand, in the curve plot above the heat
map: those of the scope tree's selection (a variable, or the variables under a scope, at most
`AUTO_LIMIT`) and, with "top movers" ticked, of the `TOP_K` variables with the largest recent mean
update (training_core/runs/heat.py `top_movers`). With no curve to draw the curve plot folds away.
The "Updates of" scope filter of the Runs tab narrows both views (a narrow enough filter brings the
curves back by itself).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets
from superqt.utils import signals_blocked

from training_core.runs.heat import scope_order, top_movers
from training_core.base.scopes import in_scope

from . import palette, tight
from .axes import FloorLogAxis, TidyAxis, quiet_axes
from .curves import LEFT_AXIS_WIDTH, style_plot
from .heatmap import UpdateHeatmap
from .update_curves import KIND, UpdateCurves
from .plot_view import PlotView
from .run_legend import LEGEND_SAMPLE_PX, columns_for, fit_run_legend

AUTO_LIMIT = 48  # more variables shown than this: the heat map, unless the user chose curves
TOP_K = 8
MOVERS_EVERY = 10  # the top movers are chosen again after this many new records (of each phase, on average),
# or at once when the freeze set changed: a new choice swaps curves and rebuilds the legend, a third of a
# wide refresh when it came every tick
MOVERS_TIP = (f"heat map: also draw the curves of the {TOP_K} variables with the largest mean update over their "
              "last records (the tree's selection is always drawn)")
MOVERS_OFF_TIP = (f"Applies to the heat map only: the curves view draws every variable shown (up to {AUTO_LIMIT}). "
                  "Press Heat map to draw only the top movers' curves")
MAX_LEGEND_COLUMNS = 6
CLICK_PX = 6  # how near (pixels) a click must be to an update curve to select its variable


def fit_columns(legend: pg.LegendItem, width: float, most: int = MAX_LEGEND_COLUMNS) -> int:
    """Give `legend` the most columns (up to `most`) whose entries, laid out row by row as pyqtgraph does, fit in
    `width` pixels, each column as wide as its widest entry (measured: the legend laid out so). Sizing every
    column by the widest entry of all made one long entry ("10 variables per run: ...") a legend of one column,
    taller than the plot above it; a fixed count (the loss legend's 8) ran off the plot's right edge with a
    sweep's long run names. Done again only when the entries or the width changed."""
    key = (tuple(label.text for _, label in legend.items), int(width), most)
    if getattr(legend, "_fitted", None) == key:
        return legend.columnCount
    widths = [label.item.boundingRect().width() + LEGEND_SAMPLE_PX for _, label in legend.items]  # the text's
    cols = columns_for(widths, width, most)
    if legend.columnCount != cols:
        legend.setColumnCount(cols)
    legend._fitted = key
    return cols


class UpdateViews:
    """Creates the curve plot (row `row`), the heat-map plot (`row` + 1) and the update legend (`row` + 2)
    in `graphics`, and decides each refresh which of them show what."""

    def __init__(self, graphics: pg.GraphicsLayoutWidget, row: int, legend_style: dict) -> None:
        self.axis = FloorLogAxis("left")
        self.axis.enableAutoSIPrefix(False)
        self.plot: pg.PlotItem = graphics.addPlot(row=row, col=0, axisItems={"left": self.axis,
                                                                             "bottom": TidyAxis("bottom")})
        self.heat_plot: pg.PlotItem = graphics.addPlot(row=row + 1, col=0, axisItems={"bottom": TidyAxis("bottom")})
        self.legend = pg.LegendItem(colCount=4, **legend_style)  # even: kernel and bias side by side
        graphics.addItem(self.legend, row=row + 2, col=0)
        style_plot(self.plot, "‖ΔW‖ / ‖W‖")
        tight.titled(self.plot, tight.UPDATE_TITLE)  # not read as the metric plot's axis above it
        for name in ("left", "bottom"):
            ax = self.heat_plot.getAxis(name)
            ax.setPen(pg.mkPen(palette.FOREGROUND))
            ax.setTextPen(pg.mkPen(palette.FOREGROUND))
        self.heat_plot.getAxis("left").setWidth(LEFT_AXIS_WIDTH)
        for plot in (self.plot, self.heat_plot):
            quiet_axes(plot)
        quiet_axes(self.heat_plot, ("left",))  # "500 variables": no prefix to find
        self.heat_plot.setLabel("bottom", "step", color=palette.FOREGROUND)
        self.curves = UpdateCurves(self.plot, self.axis, self.legend)
        self._layout, self._row = graphics.ci.layout, row
        self.heat = UpdateHeatmap(self.heat_plot)
        self.choice: str | None = None  # "curves" or "heatmap" once the user picked one; None: by count
        self.top_movers = True
        self.selected: str | None = None  # the scope tree's selection: a scope or a variable
        self.highlighted: str | None = None  # the variable selected (tree or click)
        self.showing_heat = False
        self.movers: list[str] = []
        self._shown_key: tuple | None = None
        self._movers_at: tuple | None = None  # (what was ranked, how many records then)
        self._shown: list[str] = []
        self._chosen_key: tuple | None = None
        self._chosen: list[str] = []
        self._variable: dict[str, str] = {}  # series name -> the variable's path (path@phase -> path)
        self._build_controls()
        self._show(False, True)

    def _build_controls(self) -> None:
        self.relative_button = QtWidgets.QRadioButton("relative ‖ΔW‖/‖W‖")
        self.absolute_button = QtWidgets.QRadioButton("absolute ‖ΔW‖")
        self.relative_button.setChecked(True)
        self.relative_button.setToolTip("update size relative to the weights (about 1e-3 is healthy)")
        self.absolute_button.setToolTip("update size in weight units")
        self.curves_button = QtWidgets.QToolButton(text="Curves", checkable=True, autoRaise=True)
        self.heat_button = QtWidgets.QToolButton(text="Heat map", checkable=True, autoRaise=True)
        for b in (self.curves_button, self.heat_button):
            b.setToolTip(f"a curve per variable, or a heat map (rows: variables by scope; columns: steps); "
                         f"above {AUTO_LIMIT} variables the heat map shows until you choose")
        self.movers_box = QtWidgets.QCheckBox(f"top {TOP_K} movers")
        self.movers_box.setChecked(self.top_movers)
        self.movers_box.setToolTip(MOVERS_TIP)
        self.controls = QtWidgets.QHBoxLayout()
        self.controls.addWidget(QtWidgets.QLabel("Updates:"))
        for w in (self.relative_button, self.absolute_button, self.curves_button, self.heat_button, self.movers_box):
            self.controls.addWidget(w)
        group = QtWidgets.QButtonGroup(self.relative_button)
        group.addButton(self.relative_button)
        group.addButton(self.absolute_button)
        self.relative_button.toggled.connect(lambda on: self.set_mode("relative" if on else "absolute"))
        self.curves_button.clicked.connect(lambda: self.choose("curves"))
        self.heat_button.clicked.connect(lambda: self.choose("heatmap"))
        self.movers_box.toggled.connect(self.set_top_movers)
        self._view_source = None  # a callable giving the PlotView now (the panel's runs)

    def bind(self, view_now) -> None:
        """`view_now()`: the PlotView to redraw from when a control changes between refreshes."""
        self._view_source = view_now

    # -- choices -------------------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return self.curves.mode

    def set_mode(self, mode: str) -> None:
        view = self._view_source()
        self.curves.set_mode(mode, view)
        self.update(view)
        button = self.relative_button if mode == "relative" else self.absolute_button
        if not button.isChecked():
            with signals_blocked(button):
                button.setChecked(True)

    def choose(self, which: str | None) -> None:
        """"curves" or "heatmap" (held from now on), or None: by the number of variables shown."""
        if which not in ("curves", "heatmap", None):
            raise ValueError(f"update view must be 'curves', 'heatmap' or None, got {which!r}")
        self.choice = which
        self.update(self._view_source())

    def set_top_movers(self, on: bool) -> None:
        self.top_movers = bool(on)
        with signals_blocked(self.movers_box):
            self.movers_box.setChecked(self.top_movers)
        self.update(self._view_source())

    def select(self, path: str | None) -> None:
        """The scope tree's selection (a scope or a variable): its curves are drawn in heat-map mode."""
        self.selected = path
        self.update(self._view_source())

    def highlight(self, path: str | None) -> None:
        """Emphasise one variable (its curve, its heat-map row); in heat-map mode its curve is drawn."""
        self.highlighted = path
        self.heat.highlight(path)
        self.update(self._view_source())
        self.curves.highlight(path)

    # -- drawing ---------------------------------------------------------------------------------------
    def shown_paths(self, view: PlotView) -> list[str]:
        """The variables shown, in scope order (kept while the runs' variables and the view stay the same)."""
        key = (view.signature, tuple(len(ly.data.var_paths) for ly in view.layers))
        if key != self._shown_key:
            self._shown_key = key
            self._variable = {p: ly.data.var_path(p) for ly in view.layers for p in ly.data.var_paths}
            self._shown = scope_order(dict.fromkeys(p for ly in view.layers for p in ly.data.var_paths
                                                    if view.runs.shows(p, self._variable[p])))
        return self._shown

    def update(self, view: PlotView) -> None:
        paths = self.shown_paths(view)
        heat = self.choice == "heatmap" if self.choice is not None else len(paths) > AUTO_LIMIT
        only = None
        if heat:
            self.heat.update(view, self.mode)
            key = (self._shown_key, self.highlighted, self.selected)
            if key != self._chosen_key:  # the tree's selection: a pass over every variable only when it moved
                self._chosen_key = key
                self._chosen = [p for p in paths if self.highlighted in (p, self._variable[p])
                                or (self.selected and in_scope(self._variable[p], self.selected))][:AUTO_LIMIT]
            chosen = self._chosen
            self._choose_movers(view, paths)
            only = set(chosen) | set(self.movers)
        if only != self.curves.only:
            self.curves.only = only
        self.curves.update(view)
        self._show(heat, not heat or bool(only))

    def _choose_movers(self, view: PlotView, paths: list[str]) -> None:
        """Re-rank every MOVERS_EVERY records, not at every refresh: rank changes of near-equal variables
        would otherwise swap curves (and legend entries) several times a second."""
        if not self.top_movers:
            self.movers, self._movers_at = [], None
            return
        phases = [(ly.data, ph) for ly in view.layers for ph in ly.data.var_phases]
        records = sum(len(data.var_block(ph)[1]) for data, ph in phases)
        frozen = tuple(bytes(np.asarray(f[-1], dtype=bool)) if len(f) else b""  # a freeze: rank again at once
                       for f in (data.var_block(ph)[4] for data, ph in phases))
        key = (view.signature, self.mode, len(paths), frozen)
        if self._movers_at is not None and self._movers_at[0] == key \
                and records < self._movers_at[1] + MOVERS_EVERY * max(len(phases), 1):
            return
        self._movers_at = (key, records)
        self.movers = top_movers([ly.data for ly in view.layers], paths, KIND[self.mode], TOP_K, keep=self.movers)

    def _show(self, heat: bool, curves: bool) -> None:
        self.showing_heat = heat
        self.heat.set_visible(heat)
        self._layout.setRowStretchFactor(self._row, 3 if heat else 5)  # the heat map (8) gets the room; the loss plot 4
        self.plot.setVisible(curves)
        self.plot.setMaximumHeight(1e6 if curves else 0)
        for button, on in ((self.curves_button, not heat), (self.heat_button, heat)):
            if button.isChecked() != on:
                with signals_blocked(button):
                    button.setChecked(on)
        # ticked only where it applies: a ticked, greyed box beside a legend of all 18 variables read as a
        # filter that had failed; the user's choice (`top_movers`) comes back with the heat map
        self.movers_box.setEnabled(heat)
        with signals_blocked(self.movers_box):
            self.movers_box.setChecked(self.top_movers and heat)
        self.movers_box.setToolTip(MOVERS_TIP if heat else MOVERS_OFF_TIP)

    def fit_legend(self, width: float, also: pg.LegendItem | None = None) -> None:
        """As many legend columns as its entries fit in `width` pixels (`fit_columns`). A fixed 4 needed ~790 px and,
        in a narrower window, pushed the plots' right edge out of view; 2 below 860 px made 24 variables a
        legend as tall as the update plot on a 1366x768 screen (3 columns fit there). `also`: the loss legend,
        up to 8 columns, its run names cut to a few rows (run_legend.py)."""
        fit_columns(self.legend, width)
        if also is not None:
            fit_run_legend(also, width, 8)

    def clicked(self, scene_pos: QtCore.QPointF) -> str | None:
        """The variable under a click: its heat-map row, or the update curve nearest the cursor at that step
        within CLICK_PX pixels (found from the data: the curves have no hit shape, canvas.Stroke)."""
        vb = self.heat_plot.vb
        if self.showing_heat and vb.sceneBoundingRect().contains(scene_pos):
            return self.heat.path_at(vb.mapSceneToView(scene_pos).y())
        vb = self.plot.vb
        if not self.plot.isVisible() or not vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = vb.mapSceneToView(scene_pos)
        near = self.curves.nearest(p.x(), p.y())
        got = None if near is None else self.curves.vars[near[0]].point_near(p.x())
        if got is None:
            return None
        hit = vb.mapViewToScene(QtCore.QPointF(p.x(), got[1]))
        return self.curves.path_of(near[0]) if abs(hit.y() - scene_pos.y()) <= CLICK_PX else None

    def clear(self) -> None:
        self.curves.clear()
        self.heat.clear()

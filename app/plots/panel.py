"""The window's plots: losses, GAN health and update magnitudes over steps, with control markers, and
samples; of the run that trains and of any runs opened beside it (`RunSet`).

A view of the run set: the window's ~25 Hz timer calls `refresh()`, which does nothing unless a shown
run's version moved, and otherwise gives every curve exactly one `setData` with the store's own arrays
(no copies, no dropped points; curves peak-decimate to the pixel width). When what is shown changes
(a run opened, hidden or renamed, align by time, colour by phase, a scope filter) everything is
drawn afresh. While the user has not zoomed or panned, the x axis follows the runs: the panel sets
the new range before the data so that each curve is decimated once per refresh (see curves.py).

Mouse: drag pans and the wheel zooms the x axis only (y always fits what is in view); "A" (or the
small "A" button) follows the runs again.
"""
from __future__ import annotations

import time

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from superqt.utils import signals_blocked

from training_core.runs import RunData, RunSet

from . import palette, tight
from .axes import FloorLogAxis, TidyAxis, quiet_axes
from .canvas import Canvas
from .curves import held, label_x, style_plot
from .health import MetricPlots
from .losses import LossCurves, warm_up
from .markers import MarkerLine, MarkerLines
from .readout import HoverReadout, readout_label
from .samples import SampleBrowser
from .update_plot import UpdateViews
from .update_curves import KIND
from .plot_view import PlotView, follow_range
from .wrap import WrapRow

DEFAULT_SMOOTHING = 0.6
MAX_SMOOTHING = 0.999
SLIDER_STEPS = 1000  # slider units per 1.0 of smoothing weight


class PlotsPanel(QtWidgets.QWidget):
    variableClicked = QtCore.Signal(str)

    def __init__(self, source: RunData | RunSet, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        if isinstance(source, RunData):
            self.runs = RunSet()
            self.runs.set_live(source, "run")
        else:
            self.runs = source
        self._seen: tuple | None = None
        self._signature: tuple | None = None
        self._x_label = ""  # what the x axes say x counts (plot_view.PlotView.x_label)
        self._follow, self._by_time = True, False  # following the runs; x is the time since each began (or step)
        self._followed: tuple[float, float] | None = None  # the x range last set while following
        self._others_due = False  # `refresh_part` drew the losses: the rest comes next, before new data
        self.sample_key: str | None = None  # whose samples are shown (None: the first shown run)
        warm_up()

        # rows: loss legend, losses, metrics (one plot each), updates, update legend. Legends sit outside
        # the data so no curve (and no marker label) ever hides behind them.
        self.graphics = Canvas()
        self.graphics.setBackground(palette.BACKGROUND)
        self.graphics.setFocusPolicy(QtCore.Qt.FocusPolicy.StrongFocus)
        legend_style = {"labelTextColor": palette.FOREGROUND, "labelTextSize": "8pt", "verSpacing": -8,
                        "horSpacing": 4, "frame": False}
        self.loss_legend = pg.LegendItem(colCount=8, **legend_style)
        self.graphics.addItem(self.loss_legend, row=0, col=0)
        self.loss_axis = FloorLogAxis("left")
        self.loss_axis.setLogMode(False)
        self.loss_axis.enableAutoSIPrefix(False)  # "loss (x0.001)" over 800 read as a loss of 800
        self.loss_plot: pg.PlotItem = self.graphics.addPlot(row=1, col=0, axisItems={
            "left": self.loss_axis, "bottom": TidyAxis("bottom")})
        self.metrics_layout = self.graphics.addLayout(row=2, col=0)
        self.metrics_layout.setContentsMargins(0, 0, 0, 0)
        # rows 3-5: update curves, update heat map, update legend (update_plot.py)
        self.update_views = UpdateViews(self.graphics, 3, legend_style)
        self.update_views.bind(lambda: PlotView(self.runs))
        self.update_axis, self.update_plot = self.update_views.axis, self.update_views.plot
        self.update_legend, self.heat = self.update_views.legend, self.update_views.heat
        tight.legends(self)  # as wide as their entries, on the left, fitted to the canvas's width
        style_plot(self.loss_plot, "loss")
        self.loss_plot.getAxis("bottom").showLabel(False)  # x-linked: the update (or heat-map) plot below names it
        quiet_axes(self.loss_plot)
        for plot in (self.update_plot, self.update_views.heat_plot):
            plot.setXLink(self.loss_plot)
        for plot in (self.loss_plot, self.update_plot, self.update_views.heat_plot):
            plot.setMenuEnabled(False, enableViewBoxMenu=True)  # no log/FFT toggles that fight ours
            plot.vb.setMouseEnabled(x=True, y=False)  # the wheel zooms steps only; y fits what is in view
        for row, stretch in ((1, 4), (2, 0), (3, 5), (4, 8)):  # the update plot first: what one freezes by
            self.graphics.ci.layout.setRowStretchFactor(row, stretch)

        self.losses = LossCurves(self.loss_plot, self.loss_legend, DEFAULT_SMOOTHING)
        self.metrics = MetricPlots(self.metrics_layout, self.loss_plot)
        self.updates = self.update_views.curves
        self.markers = MarkerLines([self.loss_plot, self.update_plot])
        self.samples = SampleBrowser()
        self.samples_view = self.samples.view

        self.readout_label = readout_label()
        self.readout = HoverReadout(self.graphics, self.loss_plot, self.update_plot, self.losses, self.updates,
                                    self.readout_label, self.heat)

        self.graphics.scene().sigMouseClicked.connect(self._clicked)
        for vb in (self.loss_plot.vb, self.update_plot.vb):
            vb.sigRangeChangedManually.connect(self._user_moved)
            vb.sigStateChanged.connect(self._autorange_asked)
        self.graphics.installEventFilter(self)  # "A" pressed on the plots: follow the runs again

        self._build_layout()

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 (Qt name)
        """The "A" key on the plots follows the runs again (pyqtgraph only has its small "A" button)."""
        if event.type() == QtCore.QEvent.Type.KeyPress and event.key() == QtCore.Qt.Key.Key_A \
                and not event.modifiers() & ~QtCore.Qt.KeyboardModifier.KeypadModifier:
            self.follow()
            return True
        return False

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)  # the legends' columns fit the width
        self._fit_legend_columns()

    def _fit_legend_columns(self) -> None:  # the loss legend's 8 columns of a sweep's long names ran off the right
        tight.fit(self)  # and the metric plots' share of the height

    # -- layout and controls ---------------------------------------------------------------------------
    def _build_layout(self) -> None:
        self.smoothing_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.smoothing_slider.setRange(0, round(MAX_SMOOTHING * SLIDER_STEPS))
        self.smoothing_slider.setValue(round(DEFAULT_SMOOTHING * SLIDER_STEPS))
        self.smoothing_slider.setToolTip("TensorBoard-style debiased exponential smoothing of the loss curves")
        self.smoothing_slider.setMinimumWidth(90)  # never squeezed to a box when the column narrows
        self.smoothing_slider.valueChanged.connect(lambda v: self.set_smoothing(v / SLIDER_STEPS))
        self.smoothing_label = QtWidgets.QLabel(f"{DEFAULT_SMOOTHING:.3f}")
        self.smoothing_label.setMinimumWidth(40)
        self.log_loss_box = QtWidgets.QCheckBox("log")
        self.log_loss_box.setToolTip("The loss plot on a log axis (losses that fall by decades)")
        self.log_loss_box.toggled.connect(self.set_log_losses)

        self.relative_button = self.update_views.relative_button
        self.absolute_button = self.update_views.absolute_button

        loss_controls = QtWidgets.QHBoxLayout()
        loss_controls.addWidget(QtWidgets.QLabel("Loss smoothing"))
        loss_controls.addWidget(self.smoothing_slider, 1)
        loss_controls.addWidget(self.smoothing_label)
        loss_controls.addWidget(self.log_loss_box)
        self.controls_row = WrapRow([loss_controls, self.update_views.controls])  # two lines when narrow

        left = QtWidgets.QWidget()
        lv = QtWidgets.QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addWidget(self.graphics, 1)
        lv.addWidget(self.readout_label)

        splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(self.samples)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([750, 260])
        splitter.setChildrenCollapsible(False)
        self.splitter = splitter
        outer = QtWidgets.QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.controls_row)  # over the samples too: one line at 1366 px beside the tabs, not two
        outer.addWidget(splitter)

    # -- public API ------------------------------------------------------------------------------------
    @property
    def store(self) -> RunData | None:
        """The run the samples view shows (the live run while training)."""
        entry = self._sample_entry()
        return None if entry is None else entry.data

    def refresh(self) -> bool:
        """Redraw all that changed: what a shown run gained, or everything if what is shown changed;
        returns whether anything was redrawn. (The window's timer draws a part per tick: `refresh_part`.)"""
        left = self._others_due
        if left:
            self.refresh_part()  # what the last tick left
        drew = self.refresh_part()
        if self._others_due:
            self.refresh_part()
        return drew or left

    def refresh_part(self) -> bool:
        """Redraw a part of what changed: the losses and markers, and at the next call the rest. All of
        it and its paint held the GUI thread 20-40 ms on a slow machine; a part and its paint, about half."""
        if self._others_due:
            self._others_due = False
            self._draw_others()
            return True
        view = PlotView(self.runs)
        if view.signature != self._signature:
            self._follow |= view.by_time != self._by_time  # a step range read as seconds squeezed the runs to a pixel
            self._by_time = view.by_time
            self._clear_curves()
            self._followed = None
            self._signature = view.signature
            self._seen = None
        if view.x_label != self._x_label:
            self._x_label = view.x_label
            label_x((self.loss_plot, self.update_plot, self.update_views.heat_plot), view.x_label)
        state = (view.version, self.samples_key_now())
        if state == self._seen:
            self._show_samples()
            return False
        self._seen = state
        if self._follow:
            with held():
                self._fit_x(view)
        self._others_due = True
        self.losses.update(view)
        self._fit_legend_columns()  # their entries may have changed
        self.markers.update(view)
        self._prepare_paint()
        return True

    def _draw_others(self) -> None:
        view = PlotView(self.runs)  # the data as it is now
        if view.signature != self._signature:  # what is shown changed since: the next part starts afresh
            return
        if self.metrics.update(view):  # health plots: smaller than the loss and update plots
            tight.metric_rows(self)
        self.update_views.update(view)
        self._fit_legend_columns()  # its entries may have changed
        self._show_samples()
        self._prepare_paint()

    def _prepare_paint(self) -> None:
        self.graphics.scene().prepareForPaint()  # pyqtgraph's deferred autorange now: in the paint, it
        # moved the range and asked for a second paint of every frame

    def _sample_entry(self):
        shown = self.runs.visible() or self.runs.entries
        if self.sample_key is not None:
            chosen = self.runs.get(self.sample_key)
            if chosen is not None:
                return chosen
        return shown[0] if shown else None

    def samples_key_now(self) -> str | None:
        entry = self._sample_entry()
        return None if entry is None else entry.key

    def _show_samples(self) -> None:
        entry = self._sample_entry()
        if entry is None:
            self.samples.clear()
            return
        start = entry.data.start
        self.samples.show_run(entry.data, entry.data.run_dir or (start.run_dir if start else None), time.monotonic())

    def show_samples_of(self, key: str | None) -> None:
        """Show the samples of run `key` (the Runs tab's selection)."""
        self.sample_key = key
        self._show_samples()

    def _clear_curves(self) -> None:
        self.losses.clear()
        self.metrics.clear()
        self.update_views.clear()
        self.markers.clear()
        self.readout.clear()

    def reset(self) -> None:
        """Forget every curve, marker and sample (a new run); the next refresh draws the runs afresh."""
        self._clear_curves()
        self.samples.clear()
        self._seen = None
        self._signature = None
        self._follow = True
        self._followed = None
        self._others_due = False
        for plot in (self.loss_plot, self.update_plot):
            plot.vb.setYRange(0, 1, padding=0)  # with no data left (a roll-back to step 0) autorange keeps any
            plot.vb.enableAutoRange(axis=pg.ViewBox.YAxis)  # old range: a diverged run's 2e15 stayed on screen

    def highlight_variable(self, path: str | None) -> None:
        """Emphasise one variable's update curve (thicker, on top) and dim the others, and outline its
        heat-map row; None: all normal."""
        self.update_views.highlight(path)

    def link_tree(self, tree) -> None:
        """Follow a scope tree (app/panels/scope_tree.py): a click on a curve or heat-map row selects the
        variable there; the tree's selected scope or variable gets its curves in heat-map mode."""
        self.variableClicked.connect(tree.select_variable)
        tree.pathSelected.connect(self.select_scope)

    def select_scope(self, path: str | None) -> None:
        """The scope tree's selection (a scope or a variable): the heat map draws the curves under it."""
        self.update_views.select(path)

    @property
    def highlighted(self) -> str | None:
        return self.updates.highlighted

    @property
    def smoothing(self) -> float:
        return self.losses.weight

    def set_smoothing(self, weight: float) -> None:
        weight = float(weight)
        if not 0.0 <= weight <= MAX_SMOOTHING:
            raise ValueError(f"smoothing must be between 0 and {MAX_SMOOTHING}, got {weight}")
        if weight != self.losses.weight:
            self.losses.set_weight(weight, PlotView(self.runs))
        self.smoothing_label.setText(f"{weight:.3f}")
        units = round(weight * SLIDER_STEPS)
        if self.smoothing_slider.value() != units:
            with signals_blocked(self.smoothing_slider):
                self.smoothing_slider.setValue(units)

    def set_log_losses(self, on: bool) -> None:
        """The loss plot on a log axis (a loss <= 0 is a gap there)."""
        on = bool(on)
        if on != self.losses.log:
            self.loss_axis.setLogMode(on)
            self.losses.set_log(on, PlotView(self.runs))
            self.loss_plot.vb.enableAutoRange(axis=pg.ViewBox.YAxis)
        if self.log_loss_box.isChecked() != on:
            with signals_blocked(self.log_loss_box):
                self.log_loss_box.setChecked(on)

    @property
    def update_mode(self) -> str:
        return self.updates.mode

    @property
    def update_kind(self) -> str:
        """The store kind the update plot shows: update_ratio (relative) or update_norm (absolute)."""
        return KIND[self.updates.mode]

    def set_update_mode(self, mode: str) -> None:
        self.update_views.set_mode(mode)

    def curves(self) -> dict[str, pg.PlotDataItem]:
        """{"loss/D": raw, "loss/D/smoothed": smoothed, "update/<path>": update curve (log10 values;
        "update/<path> (frozen)": its frozen stretches), "metric/<name>": a metric}; with several runs shown each name starts with "<run label>: "."""
        return {**self.losses.curves(), **self.updates.curves(), **self.metrics.all_curves()}

    def marker_lines(self, plot: str = "loss") -> list[MarkerLine]:
        """The markers on the "loss" or "update" plot, in the order added (line.marker is the Marker)."""
        return self.markers.lines_of(0 if plot == "loss" else 1)

    @property
    def following(self) -> bool:
        """True while the x axis follows the runs (until the user zooms or pans; "A" follows again)."""
        return self._follow

    def follow(self) -> None:
        """Follow the runs again: the whole of every shown run in view, the newest step at the right."""
        self._follow = True
        self._followed = None
        with held():
            self._fit_x(PlotView(self.runs))
        self._seen = None  # curves must re-decimate against the new range
        self.refresh()

    def show_step(self, x: float) -> None:
        """Centre the plots on `x` (a step, or seconds when aligned by time), keeping the zoom; stop
        following. The samples move to that step too."""
        (x0, x1), _ = self.loss_plot.vb.viewRange()
        half = (x1 - x0) / 2
        self._follow = False
        self.loss_plot.vb.setXRange(x - half, x + half, padding=0)
        if self.runs.align == "step":
            self.samples.show_step(int(x))

    def _clicked(self, event) -> None:
        """A click on a heat-map row or an update curve selects its variable (`UpdateViews.clicked`)."""
        if event.button() != QtCore.Qt.MouseButton.LeftButton:
            return
        self.graphics.setFocus()  # so "A" reaches the plots
        path = self.update_views.clicked(event.scenePos())
        if path is not None:
            self.variableClicked.emit(path)

    # -- following the run -----------------------------------------------------------------------------
    def _fit_x(self, view: PlotView) -> None:
        """Every shown run from its first step, with room to spare after the newest (`follow_range`)."""
        x_range = follow_range(view, self._followed)
        if x_range is not None:
            self._followed = x_range
            self.loss_plot.vb.setXRange(*x_range, padding=0.01)

    def _user_moved(self, mask) -> None:
        if mask is None or mask[0]:
            self._follow = False

    def _autorange_asked(self, vb: pg.ViewBox) -> None:
        if vb.autoRangeEnabled()[0]:  # the "A" button or "View all": follow the run again
            vb.disableAutoRange(axis=pg.ViewBox.XAxis)
            self.follow()

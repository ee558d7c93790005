"""The window's live plots: losses and update magnitudes over steps, with control markers, and samples.

A view of a `RunData`: the window's ~25 Hz timer calls `refresh()`, which does nothing unless
the store's version moved, and otherwise gives every curve exactly one `setData` with the store's
own arrays (no copies, no dropped points; pyqtgraph clips to the view and peak-downsamples to the
pixel width). While the user has not zoomed or panned, the step axis follows the run: the panel sets
the new range before the data so that each curve is decimated once per refresh (see curves.py).
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from superqt.utils import signals_blocked

from training_core.runs import RunData

from . import palette
from .axes import FloorLogAxis
from .canvas import Canvas
from .curves import held, style_plot
from .losses import LossCurves, warm_up
from .markers import MarkerLine, MarkerLines
from .readout import HoverReadout
from .samples import SamplesView
from .updates import KIND, UpdateCurves

DEFAULT_SMOOTHING = 0.6
MAX_SMOOTHING = 0.999
SLIDER_STEPS = 1000  # slider units per 1.0 of smoothing weight
CLICK_PX = 6  # how near (pixels) a click must be to an update curve to select its variable


class PlotsPanel(QtWidgets.QWidget):
    variableClicked = QtCore.Signal(str)

    def __init__(self, store: RunData, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self._seen_version: int | None = None
        self._follow = True
        warm_up()

        # rows: loss legend, losses, updates, update legend. Legends sit outside the data so no curve
        # (and no marker label) ever hides behind them.
        self.graphics = Canvas()
        self.graphics.setBackground(palette.BACKGROUND)
        legend_style = {"labelTextColor": palette.FOREGROUND, "labelTextSize": "8pt", "verSpacing": -8,
                        "horSpacing": 4, "frame": False}
        self.loss_legend = pg.LegendItem(colCount=8, **legend_style)
        self.graphics.addItem(self.loss_legend, row=0, col=0)
        self.loss_plot: pg.PlotItem = self.graphics.addPlot(row=1, col=0)
        self.update_axis = FloorLogAxis("left")
        self.update_axis.enableAutoSIPrefix(False)
        self.update_plot: pg.PlotItem = self.graphics.addPlot(row=2, col=0, axisItems={"left": self.update_axis})
        self.update_legend = pg.LegendItem(colCount=4, **legend_style)  # even: kernel and bias side by side
        self.graphics.addItem(self.update_legend, row=3, col=0)
        for legend in (self.loss_legend, self.update_legend):  # as wide as their entries, on the left
            legend.setSizePolicy(QtWidgets.QSizePolicy.Policy.Maximum, QtWidgets.QSizePolicy.Policy.Maximum)
            self.graphics.ci.layout.setAlignment(legend, QtCore.Qt.AlignmentFlag.AlignLeft)
        style_plot(self.loss_plot, "loss")
        style_plot(self.update_plot, "‖ΔW‖ / ‖W‖")
        self.update_plot.setXLink(self.loss_plot)
        for plot in (self.loss_plot, self.update_plot):
            plot.setMenuEnabled(False, enableViewBoxMenu=True)  # no log/FFT toggles that fight ours

        self.losses = LossCurves(self.loss_plot, self.loss_legend, DEFAULT_SMOOTHING)
        self.updates = UpdateCurves(self.update_plot, self.update_axis, self.update_legend)
        self.markers = MarkerLines([self.loss_plot, self.update_plot])
        self.samples_view = SamplesView()

        self.readout_label = QtWidgets.QLabel()
        self.readout_label.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.readout_label.setStyleSheet("font-size: 9pt;")
        # a long readout is cut at the right, never widening the window
        self.readout_label.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored,
                                         QtWidgets.QSizePolicy.Policy.Preferred)
        self.readout = HoverReadout(self.graphics.scene(), self.loss_plot, self.update_plot,
                                    self.losses, self.updates, self.readout_label)

        self.graphics.scene().sigMouseClicked.connect(self._clicked)
        for vb in (self.loss_plot.vb, self.update_plot.vb):
            vb.sigRangeChangedManually.connect(self._user_moved)
            vb.sigStateChanged.connect(self._autorange_asked)

        self._build_layout()

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802 (Qt name)
        """Fit the update legend's columns to the width: a fixed 4 columns needed ~790 px and, in a
        narrower window, pushed the plots' right edge (the newest steps) out of view."""
        super().resizeEvent(event)
        self._fit_legend_columns()

    def _fit_legend_columns(self) -> None:
        width = self.graphics.width()
        cols = 4 if width >= 860 else 2 if width >= 440 else 1  # even: kernel and bias side by side
        if self.update_legend.columnCount != cols:
            self.update_legend.setColumnCount(cols)

    # -- layout and controls ---------------------------------------------------------------------------
    def _build_layout(self) -> None:
        self.smoothing_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.smoothing_slider.setRange(0, round(MAX_SMOOTHING * SLIDER_STEPS))
        self.smoothing_slider.setValue(round(DEFAULT_SMOOTHING * SLIDER_STEPS))
        self.smoothing_slider.setToolTip("TensorBoard-style debiased exponential smoothing of the loss curves")
        self.smoothing_slider.valueChanged.connect(lambda v: self.set_smoothing(v / SLIDER_STEPS))
        self.smoothing_label = QtWidgets.QLabel(f"{DEFAULT_SMOOTHING:.3f}")
        self.smoothing_label.setMinimumWidth(40)

        self.relative_button = QtWidgets.QRadioButton("relative ‖ΔW‖/‖W‖")
        self.absolute_button = QtWidgets.QRadioButton("absolute ‖ΔW‖")
        self.relative_button.setChecked(True)
        self.relative_button.setToolTip("update size relative to the weights (about 1e-3 is healthy)")
        self.absolute_button.setToolTip("update size in weight units")
        group = QtWidgets.QButtonGroup(self)
        group.addButton(self.relative_button)
        group.addButton(self.absolute_button)
        self.relative_button.toggled.connect(lambda on: self.set_update_mode("relative" if on else "absolute"))

        controls = QtWidgets.QHBoxLayout()
        controls.addWidget(QtWidgets.QLabel("Loss smoothing"))
        controls.addWidget(self.smoothing_slider, 1)
        controls.addWidget(self.smoothing_label)
        controls.addSpacing(16)
        controls.addWidget(QtWidgets.QLabel("Updates:"))
        controls.addWidget(self.relative_button)
        controls.addWidget(self.absolute_button)
        controls.addStretch(1)

        left = QtWidgets.QWidget()
        lv = QtWidgets.QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addLayout(controls)
        lv.addWidget(self.graphics, 1)
        lv.addWidget(self.readout_label)

        splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(self.samples_view)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([750, 260])
        self.splitter = splitter
        outer = QtWidgets.QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(splitter)

    # -- public API ------------------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Redraw from the store if its version moved; returns whether anything was redrawn."""
        store = self.store
        if store.version == self._seen_version:
            return False
        self._seen_version = store.version
        if self._follow:
            with held():
                self._fit_steps()
        self.losses.update(store)
        self.updates.update(store)
        self.markers.update(store)
        self.samples_view.show_samples(store.samples)
        # pyqtgraph's deferred y autorange, now: run first thing in the paint, it moved the range and
        # asked for a second paint of every frame
        self.graphics.scene().prepareForPaint()
        return True

    def reset(self) -> None:
        """Forget every curve, marker and sample (a new run); the next refresh draws the store afresh."""
        self.losses.clear()
        self.updates.clear()
        self.markers.clear()
        self.samples_view.clear()
        self.readout.clear()
        self._seen_version = None
        self._follow = True
        for plot in (self.loss_plot, self.update_plot):
            plot.vb.enableAutoRange(axis=pg.ViewBox.YAxis)

    def highlight_variable(self, path: str | None) -> None:
        """Emphasise one variable's update curve (thicker, on top) and dim the others; None: all normal."""
        self.updates.highlight(path)

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
            self.losses.set_weight(weight, self.store)
        self.smoothing_label.setText(f"{weight:.3f}")
        units = round(weight * SLIDER_STEPS)
        if self.smoothing_slider.value() != units:
            with signals_blocked(self.smoothing_slider):
                self.smoothing_slider.setValue(units)

    @property
    def update_mode(self) -> str:
        return self.updates.mode

    @property
    def update_kind(self) -> str:
        """The store kind the update plot shows: update_ratio (relative) or update_norm (absolute)."""
        return KIND[self.updates.mode]

    def set_update_mode(self, mode: str) -> None:
        self.updates.set_mode(mode, self.store)
        button = self.relative_button if mode == "relative" else self.absolute_button
        if not button.isChecked():
            with signals_blocked(button):
                button.setChecked(True)

    def curves(self) -> dict[str, pg.PlotDataItem]:
        """{"loss/D": raw, "loss/D/smoothed": smoothed, "update/<path>": update curve (log10 values)}."""
        return {**self.losses.curves(), **self.updates.curves()}

    def marker_lines(self, plot: str = "loss") -> list[MarkerLine]:
        """The markers on the "loss" or "update" plot, in store order (line.marker is the Marker)."""
        return self.markers.lines_of(0 if plot == "loss" else 1)

    @property
    def following(self) -> bool:
        """True while the step axis follows the run (until the user zooms or pans; "A" resumes)."""
        return self._follow

    def _clicked(self, event) -> None:
        """A click on an update curve selects its variable. Resolved from the data (the curve nearest
        the cursor at that step, within CLICK_PX pixels), as curves have no hit shape (canvas.Stroke)."""
        vb = self.update_plot.vb
        if event.button() != QtCore.Qt.MouseButton.LeftButton or not vb.sceneBoundingRect().contains(event.scenePos()):
            return
        p = vb.mapSceneToView(event.scenePos())
        near = self.updates.nearest(p.x(), p.y())
        if near is None:
            return
        path, _color, step, _value = near
        _, y = self.updates.vars[path].point_near(step)
        hit = vb.mapViewToScene(QtCore.QPointF(p.x(), y))
        if abs(hit.y() - event.scenePos().y()) <= CLICK_PX:
            self.variableClicked.emit(path)

    # -- following the run -----------------------------------------------------------------------------
    def _fit_steps(self) -> None:
        first = [self.store.loss(p)[0][:1] for p in self.store.phases]
        starts = [int(s[0]) for s in first if len(s)]
        if not starts:
            return
        x0, x1 = min(starts), max(self.store.last_step, min(starts) + 1)
        self.loss_plot.vb.setXRange(x0, x1, padding=0.01)

    def _user_moved(self, mask) -> None:
        if mask is None or mask[0]:
            self._follow = False

    def _autorange_asked(self, vb: pg.ViewBox) -> None:
        if vb.autoRangeEnabled()[0]:  # the "A" button or "View all": follow the run again
            vb.disableAutoRange(axis=pg.ViewBox.XAxis)
            self._follow = True
            with held():
                self._fit_steps()
            self._seen_version = None  # curves must re-decimate against the new range
            self.refresh()

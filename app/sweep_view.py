"""A sweep shown as a group (File → Open Run… or `--open` on a sweep directory): its runs grouped by setting,
each setting one mean line over its seeds with a band (min–max or ± sd, chosen here), and the table of settings ×
final metrics beside it, or under it when its columns would not fit there whole (app/sweep_table.py), a tab per
sweep in a dock below the plots, or beside them in a short window (app/sweep_dock.py).

Why a view of its own: the window's plots draw runs; a sweep's runs join them too (the Runs tab lists each, by
its grid point), but what an ablation asks is whether settings differ by more than their seeds do. The
grouping, the bands and the table's numbers are training_core/runs/sweep_table.py's (from runs/groups.py), read
from the runs' `RunData` in the window's `RunSet`, so they follow a sweep still being run: a point that begins
later joins when its run directory appears (looked for every `ADOPT_MS`), and the view redraws when a run grew.
The plot is smoothed as chosen here (TensorBoard's EMA on each seed, then combined); the table holds the
recorded values, as `main.py --export SWEEP_DIR --table` writes them.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QSpinBox, QSplitter, QVBoxLayout,
                               QWidget)

from training_core import is_run_dir
from training_core.runs import RunSet
from training_core.runs.collection import MAX_COLOURS
from training_core.runs.sweep import Sweep
from training_core.runs.sweep_table import build_table, column_label, group_bands, members_of

from .plots.wrap import WrapRow
from .sweep_plot import BandPlot
from .sweep_table import SweepTableWidget

ADOPT_MS = 2000  # how often a sweep still being run is looked at for points that began since
REDRAW_MS = 250  # a run that grew is redrawn at most this often
SPREADS = {"min–max over seeds": "minmax", "mean ± sd over seeds": "sd"}
DEFAULT_SMOOTHING = 0.6  # as the window's plots
PLOT_MIN_PX = (380, 240)  # the band plot beside (wide) or over (tall) the table still reads: axes, legend, bands


class SweepView(QWidget):
    """One sweep. `keys` maps a point's index to its run's key in `runs` (those opened so far)."""

    failed = Signal(str)

    def __init__(self, sweep: Sweep, runs: RunSet, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.sweep, self.runs = sweep, runs
        self.keys: dict[int, str] = {}
        self.done = 0  # points done, at the last look
        self._drawn: tuple | None = None
        self.metric = QComboBox()
        self.metric.setToolTip("What the plot shows, per setting: a loss or a metric the runs recorded")
        self.spread = QComboBox()
        for text, value in SPREADS.items():
            self.spread.addItem(text, value)
        self.smoothing = QDoubleSpinBox()
        self.smoothing.setRange(0.0, 0.999)
        self.smoothing.setSingleStep(0.05)
        self.smoothing.setDecimals(3)
        self.smoothing.setValue(DEFAULT_SMOOTHING)
        self.smoothing.setToolTip("The plot's smoothing (each seed's curve, then the band); the table holds the "
                                  "recorded values")
        self.at_step = QSpinBox()
        self.at_step.setRange(-1, 2**31 - 1)
        self.at_step.setSpecialValueText("end only")
        self.at_step.setValue(-1)
        self.at_step.setToolTip("The table's columns at this step too (each run's last record at or before it)")
        self.status = QLabel()
        groups = [QHBoxLayout() for _ in range(2)]
        for label, w in (("plot", self.metric), ("band", self.spread), ("smoothing", self.smoothing),
                         ("table at step", self.at_step)):
            groups[0].addWidget(QLabel(label))
            groups[0].addWidget(w)
        groups[1].addWidget(self.status)
        for group in groups:
            group.addStretch(1)  # stacked, each on the left of its line
        controls = WrapRow(groups)  # stacked when narrow: beside the plots (a short window) the row was ~1,000 px
        self.plot = BandPlot()
        self.table = SweepTableWidget(sweep.dir)
        self.table.failed.connect(self.failed.emit)
        self.split = split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.plot)
        split.addWidget(self.table)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 0)  # the table keeps the room fit_split gave it, the plot takes the rest
        split.setChildrenCollapsible(False)
        self.split_by_user = False  # the user dragged the handle: the sizes are theirs from then on
        split.splitterMoved.connect(lambda *_: setattr(self, "split_by_user", True))
        self._fit_soon = QTimer(self, singleShot=True, interval=0, timeout=self.fit_split)
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)
        col.addWidget(controls)
        col.addWidget(split, 1)
        for signal in (self.metric.currentIndexChanged, self.spread.currentIndexChanged,
                       self.smoothing.valueChanged, self.at_step.valueChanged):
            signal.connect(self.redraw)
        self._redraw_soon = QTimer(self, singleShot=True, interval=REDRAW_MS, timeout=self.refresh)
        self._adopt = QTimer(self, interval=ADOPT_MS, timeout=self.adopt)
        #: a sweep whose runs fit the palette has them drawn in the window's plots too; a larger one lists them in
        #: the Runs tab, hidden, to be ticked
        self.runs_shown = len(sweep.points) <= MAX_COLOURS
        self.adopt()
        self._adopt.start()
        runs.grew.connect(self._grew)
        self.refresh()

    def adopt(self) -> None:
        """Open the runs of the points that have begun since the last look, each labelled by its grid point."""
        states = [s.state for s in self.sweep.states()]  # (read here, on the slow timer: every run's events)
        self.done = states.count("done")
        new = [p for p in self.sweep.points if p.index not in self.keys and is_run_dir(self.sweep.run_dir(p))]
        if not new:
            self._show_status()
            return
        for p in new:
            entry = self.runs.open(self.sweep.run_dir(p))
            self.runs.set_label(entry.key, " ".join(f"{k}={v}" for k, v in p.texts.items()))
            self.runs.set_visible(entry.key, self.runs_shown)
            self.keys[p.index] = entry.key
        self.refresh()

    def stop(self) -> None:
        """No more looking or redrawing (the tab is closing)."""
        self._adopt.stop()
        self._redraw_soon.stop()
        self.runs.grew.disconnect(self._grew)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._fit_soon.start()  # once the splitter has its new size

    def fit_split(self) -> None:
        """The table beside the plot when its columns fit there whole with the plot still `PLOT_MIN_PX` wide; else
        under the plot, across the view, when its rows fit with the plot still `PLOT_MIN_PX` tall; else beside,
        the plot at its minimum, the table scrolled. Why: a tab beside the window's plots at 1440x900 is 998 px
        wide, and split 1:1 the table had ~500 px for the 586 its columns need (the ring, 2 ratios × 2 seeds; 965
        with the columns at a step too, 724 for docs/sweeps.md's ablation); a dock below the plots is wide and
        short. Again when the table or the view changes size, until the user drags the handle."""
        w, h, gap = self.split.width(), self.split.height(), self.split.handleWidth()
        if self.split_by_user or w <= 0 or h <= 0:
            return
        need = self.table.needed_size()
        if need.width() + PLOT_MIN_PX[0] + gap > w and need.height() + PLOT_MIN_PX[1] + gap <= h:
            scroll = self.table.grid.horizontalScrollBar().sizeHint().height() if need.width() > w else 0
            table = need.height() + scroll
            self.split.setOrientation(Qt.Orientation.Vertical)
            self.split.setSizes([h - gap - table, table])
            return
        self.split.setOrientation(Qt.Orientation.Horizontal)
        table = max(min(need.width(), w - gap - PLOT_MIN_PX[0]), 0)
        self.split.setSizes([w - gap - table, table])

    def _show_status(self) -> None:
        self.status.setText(f"{len(self.keys)} of {len(self.sweep.points)} runs open, {self.done} done")

    def _grew(self) -> None:
        if not self._redraw_soon.isActive():
            self._redraw_soon.start()

    def members(self) -> list:
        data = {i: e.data for i, k in self.keys.items() if (e := self.runs.get(k)) is not None}
        return members_of(self.sweep, data)

    def refresh(self) -> None:
        """Redraw if a run of the sweep gained records (or was opened) since the last drawing."""
        versions = tuple((k, e.data.version) for k in self.keys.values() if (e := self.runs.get(k)) is not None)
        if versions == self._drawn:
            return
        self._drawn = versions
        self.redraw()

    def redraw(self) -> None:
        members = self.members()
        tags = list(dict.fromkeys(t for m in members for t in m.curves))
        tags = [t for t in tags if t.startswith("loss/")] + [t for t in tags if t.startswith("metric/")]
        chosen = self.metric.currentData()
        if tags != [self.metric.itemData(i) for i in range(self.metric.count())]:
            self.metric.blockSignals(True)
            self.metric.clear()
            for t in tags:  # titled as the table's columns ("G loss"), the tag kept as the item's data
                self.metric.addItem(column_label(t), t)
            if chosen in tags:
                self.metric.setCurrentIndex(tags.index(chosen))
            self.metric.blockSignals(False)
        self._show_status()
        if not members:
            return
        tag = self.metric.currentData()
        self.plot.show_bands(group_bands(members, tag, self.spread.currentData(), self.smoothing.value()),
                             column_label(tag))
        step = self.at_step.value()
        self.table.show_table(build_table(members, step=None if step < 0 else step))
        self._fit_soon.start()  # (after the grid has laid its columns out)

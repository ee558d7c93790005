"""The heat-map update view: a row per variable, a column per bin of steps, colour = log ‖ΔW‖/‖W‖ (or
log ‖ΔW‖ in absolute mode). For models with hundreds of variables, where curves are a tangle.

The numbers come from `HeatGrid` (training_core/runs/heat.py): rows grouped by scope (each model a
block, with a separator line and its name at the block's left edge), each column the geometric mean of
the records in it that are not exactly 0. Cells whose records are all exactly 0 are painted apart from
the colour scale, by a second image over the first: grey "0 (frozen)" (the core reported the variable
frozen), magenta "0 (no update)" (it trains but did not move), the curves' two floors. A column with
no record of a variable stays blank.

Live and cheap: each refresh adds only the records that arrived since the last one into the grid's
sums (nothing dropped; bins merge pairwise when they become too many), computes again only the image's
columns those changed (`HeatGrid.changes`), and sets the image once per refresh that brought data.
Painting it is one scaled `drawImage`.
"""
from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from training_core.runs.heat import (ZERO_FREE, ZERO_FROZEN, HeatGrid, cell_records, record_spacing,
                                     scope_order)

from . import palette
from .update_curves import AXIS_LABEL, zero_reading
from .plot_view import Layer, PlotView

COLORMAP = "viridis"
FROZEN_RGBA = (200, 200, 200, 255)   # light grey: frozen (the curves draw frozen variables grey too)
NO_UPDATE_RGBA = (231, 41, 138, 255)  # magenta: trains but its update is exactly 0 (not in viridis)
LABEL_MIN_PX = 14  # a block label needs this much height
LOW_PERCENTILE = 1.0  # the colour scale starts at this percentile of the cells (lower ones: its lowest colour)


def shrinkable(label: pg.LabelItem) -> None:
    """Let `label` be narrower than its text. pyqtgraph makes a title's width its plot's minimum (on every
    text change and resize): the heat map's (640 px) made the plot column wider than the window below
    1,440 px, and every plot lost its right end under the samples view. The title is cut instead."""
    full = label.updateMin

    def update_min() -> None:
        full()
        minimum = QtCore.Qt.SizeHint.MinimumSize
        label.setMinimumWidth(0)
        label._sizeHint[minimum] = (0, label._sizeHint[minimum][1])  # LabelItem.sizeHint reads this table
    label.updateMin = update_min
    update_min()
    label.updateGeometry()


def _hex(rgba: tuple) -> str:
    return "#" + "".join(f"{c:02x}" for c in rgba[:3])


class UpdateHeatmap:
    """Draws the shown variables of the shown runs into `plot` (its own PlotItem, x linked to the others)."""

    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        # more rows than pixels (500 variables): averaged down to the screen, not every n-th row drawn
        self.image = pg.ImageItem(axisOrder="row-major", autoDownsample=True)
        self.zero_image = pg.ImageItem(axisOrder="row-major", autoDownsample=True)
        for z, item in enumerate((self.image, self.zero_image)):
            item.setZValue(z - 10)
            plot.addItem(item)
        self.bar = pg.ColorBarItem(values=(-4.0, -1.0), colorMap=pg.colormap.get(COLORMAP), interactive=False,
                                   orientation="horizontal", width=9, pen=palette.FOREGROUND)
        self.bar.setImageItem(self.image, insert_in=plot)
        self.bar.axis.setLogMode(True)  # the levels are log10: ticks read 0.001, 1e-05
        self.bar.axis.setTextPen(pg.mkPen(palette.FOREGROUND))
        self.highlight_band = pg.LinearRegionItem(orientation="horizontal", movable=False,
                                                  brush=pg.mkBrush(0, 0, 0, 0), pen=pg.mkPen("#d62728", width=1.5))
        self.highlight_band.setZValue(5)
        plot.addItem(self.highlight_band, ignoreBounds=True)
        self.highlight_band.hide()
        plot.vb.invertY(True)  # the first row (the first model's first layer) at the top
        plot.vb.setMouseEnabled(x=True, y=False)
        plot.vb.disableAutoRange(axis=pg.ViewBox.YAxis)
        plot.getAxis("left").setTicks([[]])
        plot.vb.sigResized.connect(self._place_labels)
        self.mode = "relative"
        self.rows: list[tuple[Layer, str]] = []
        self._variables: list[str] = []
        self.grid: HeatGrid | None = None
        self.highlighted: str | None = None
        self.levels = (-4.0, -1.0)
        self._key: tuple | None = None
        self._consumed: dict[tuple[str, str], int] = {}
        self._cols: dict[tuple[str, str], tuple] = {}  # (run, phase) -> (variables, columns, rows) (`_columns`)
        self._view: PlotView | None = None
        self._cells: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (log means, as float32, zero
        # cells' RGBA) of the grid's columns, with room for more (`_render`)
        self._shown = 0  # columns in them
        self._blocks: list[tuple[str, int, int]] = []
        self._lines: list[pg.InfiniteLine] = []
        self._labels: list[QtWidgets.QGraphicsTextItem] = []
        shrinkable(self.plot.titleLabel)
        self._set_title()

    def _set_title(self) -> None:
        def box(rgba: tuple) -> str:
            return f"<span style='color:{_hex(rgba)}'>■</span>"
        self.plot.setTitle(f"{AXIS_LABEL[self.mode]} per variable, log colour; a column is the geometric mean of "
                           f"its records &nbsp; {box(FROZEN_RGBA)} 0 (frozen) &nbsp; {box(NO_UPDATE_RGBA)} 0 (no update)",
                           size="8pt", color=palette.FOREGROUND)

    # -- data ------------------------------------------------------------------------------------------
    def update(self, view: PlotView, mode: str) -> bool:
        """Take in what the shown runs recorded since the last call; True if the image changed."""
        kind = "update_ratio" if mode == "relative" else "update_norm"
        key = (view.signature, mode, tuple(len(ly.data.var_paths) for ly in view.layers))
        if key != self._key:  # what is shown changed (variables are only ever added to a run)
            rows = [(ly, p) for ly in view.layers
                    for p in scope_order(p for p in ly.data.var_paths if view.runs.shows(p, ly.data.var_path(p)))]
            self._rebuild(view, mode, rows, key)
        rows = self.rows
        self._view = view
        grown = False
        for ly in view.layers:
            data = ly.data
            for phase in data.var_phases:
                paths, steps, wall, values, frozen = data.var_block(phase, kind)
                done = self._consumed.get((ly.key, phase), 0)
                if len(steps) < done:  # the run went back (a rollback): start over
                    self._key = None
                    return self.update(view, mode)
                if len(steps) == done:
                    continue
                cols, grid_rows = self._columns(ly, phase, paths)
                if len(cols):
                    self.grid.widen_to(record_spacing(view.x(ly, steps[-16:], wall[-16:])))
                    self.grid.add(grid_rows, view.x(ly, steps[done:], wall[done:]), values[done:, cols],
                                  frozen[done:, cols])
                    grown = True
                self._consumed[(ly.key, phase)] = len(steps)
        if grown:
            self._render()
        return grown

    def _columns(self, ly: Layer, phase: str, paths: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The columns of a phase's records that are rows here, and their rows (kept until the rows change: a
        pass over 500 variables a tick otherwise)."""
        got = self._cols.get((ly.key, phase))
        if got is None or got[0] != len(paths):
            row_of = {(lay.key, p): i for i, (lay, p) in enumerate(self.rows)}
            cols = [j for j, p in enumerate(paths) if (ly.key, p) in row_of and ly.data.phase_of(p) == phase]
            got = (len(paths), np.array(cols, dtype=np.intp),  # an array: a list was converted at every tick
                   np.array([row_of[(ly.key, paths[j])] for j in cols], dtype=np.int64))
            self._cols[(ly.key, phase)] = got
        return got[1], got[2]

    def _rebuild(self, view: PlotView, mode: str, rows: list[tuple[Layer, str]], key: tuple) -> None:
        self._key, self.rows, self._consumed, self._cols = key, rows, {}, {}
        self._variables = [ly.data.var_path(p) for ly, p in rows]  # each row's variable (path@phase -> path)
        if mode != self.mode:
            self.mode = mode
            self._set_title()
        self.grid = HeatGrid(len(rows), width=1.0 / 64 if view.by_time else 1.0)
        self._cells = None
        self.image.clear()
        self.zero_image.clear()
        self._blocks = []
        for i, (ly, p) in enumerate(rows):  # a block per run and top-level scope (model)
            name = (f"{ly.label}: " if view.multi else "") + p.split("/")[0]
            if self._blocks and self._blocks[-1][0] == name:
                self._blocks[-1] = (name, self._blocks[-1][1], i + 1)
            else:
                self._blocks.append((name, i, i + 1))
        for line in self._lines:
            self.plot.removeItem(line)
        for label in self._labels:
            if label.scene() is not None:
                label.scene().removeItem(label)
        self._lines = [pg.InfiniteLine(pos=start, angle=0, movable=False, pen=pg.mkPen("#ffffff", width=2))
                       for _, start, _ in self._blocks[1:]]
        for line in self._lines:
            self.plot.addItem(line, ignoreBounds=True)
        self._labels = []
        for name, _, _ in self._blocks:
            label = QtWidgets.QGraphicsTextItem(self.plot.vb)
            label.document().setDocumentMargin(1)
            label.setHtml(f'<span style="background-color: rgba(255,255,255,215); color:{palette.FOREGROUND}">'
                          f'{html.escape(name)}</span>')
            label.setZValue(20)
            self._labels.append(label)
        self.plot.setLabel("left", f"{len(rows)} variables", color=palette.FOREGROUND)
        self.plot.vb.setYRange(0, max(len(rows), 1), padding=0)
        self._place_labels()
        self.highlight(self.highlighted)

    def _render(self) -> None:
        """The image of the grid: only the columns that changed are computed again (a live tick's one or two
        newest; all after a merge), into buffers with room for more columns, so a tick's cost follows its
        records, not the grid (the whole grid's means and zero cells, 500 rows, were most of a wide render)."""
        g = self.grid
        lo, hi = g.changes()
        n = g.n_columns
        if self._cells is None or self._cells[0].shape[0] != g.n_rows or n > self._cells[0].shape[1]:
            kept = self._cells if self._cells is not None and self._cells[0].shape[0] == g.n_rows else None
            room = max(n, 2 * (kept[0].shape[1] if kept is not None else 0), 64)
            self._cells = (np.full((g.n_rows, room), np.nan), np.full((g.n_rows, room), np.nan, dtype=np.float32),
                           np.zeros((g.n_rows, room, 4), dtype=np.uint8))
            if kept is not None and (lo, hi) != (0, n):  # more room, the same columns: they are kept
                for new, old in zip(self._cells, kept):
                    new[:, :self._shown] = old[:, :self._shown]
            else:
                lo, hi = 0, n
        means64, means32, overlay = self._cells
        means64[:, lo:hi] = means32[:, lo:hi] = g.log_means(lo, hi)
        zeros = g.zero_state(lo, hi)
        cells = overlay[:, lo:hi]
        cells[...] = 0
        cells[zeros == ZERO_FROZEN] = FROZEN_RGBA
        cells[zeros == ZERO_FREE] = NO_UPDATE_RGBA
        self._shown = n
        means = means64[:, :n]
        finite = means[np.isfinite(means)]
        if len(finite):
            # whole decades from the 1st percentile (a few stray tiny updates would leave one colour for the
            # rest) to the largest; float32 records: log10 of 1e-3 reads -2.9999999, still the -3 decade
            sample = finite[::max(1, len(finite) // 8192)]  # whole decades: a sample is as good, at a tenth the cost
            low = float(np.percentile(sample, LOW_PERCENTILE))
            lo_level, hi_level = math.floor(low + 1e-5), math.ceil(float(finite.max()) - 1e-5)
            self.levels = (float(lo_level), float(max(hi_level, lo_level + 1)))
        rect = QtCore.QRectF(g.c0 * g.width, 0, n * g.width, g.n_rows)
        self.image.setImage(means32[:, :n], levels=self.levels, autoLevels=False, rect=rect)
        self.zero_image.setImage(overlay[:, :n], autoLevels=False, levels=(0, 255), rect=rect)
        if tuple(self.bar.levels()) != self.levels:  # the bar re-lays out its axis and gradient on every call
            self.bar.setLevels(self.levels)

    # -- look ------------------------------------------------------------------------------------------
    def _place_labels(self, *_args) -> None:
        vb = self.plot.vb
        for label, (_, start, end) in zip(self._labels, self._blocks):
            top = vb.mapFromView(QtCore.QPointF(0, start)).y()
            bottom = vb.mapFromView(QtCore.QPointF(0, end)).y()
            label.setVisible(abs(bottom - top) >= LABEL_MIN_PX)
            label.setPos(2, min(top, bottom))

    def highlight(self, path: str | None) -> None:
        """Outline the row(s) of `path` (the variable selected in the tree: every phase's row of a variable
        several phases train); None: none."""
        self.highlighted = path
        rows = [i for i, ((_, p), v) in enumerate(zip(self.rows, self._variables)) if path is not None
                and path in (p, v)]
        self.highlight_band.setVisible(bool(rows))
        if rows:
            self.highlight_band.setRegion((rows[0], rows[-1] + 1))

    def set_visible(self, on: bool) -> None:
        self.plot.setVisible(on)
        self.plot.setMaximumHeight(1e6 if on else 0)

    # -- reading ---------------------------------------------------------------------------------------
    def row_at(self, y: float) -> tuple[Layer, str] | None:
        i = math.floor(y)
        return self.rows[i] if 0 <= i < len(self.rows) else None

    def path_at(self, y: float) -> str | None:
        row = self.row_at(y)
        return None if row is None else row[1]

    def describe(self, x: float, y: float) -> str | None:
        """What the cell under view point (x, y) holds: variable, step range, value (plain text)."""
        row, col = self.row_at(y), None if self.grid is None else self.grid.column_at(x)
        if row is None or col is None or self._view is None:
            return None
        ly, path = row
        lo, hi = self.grid.column_span(col)
        steps, wall, _ = ly.data.var_series(path)
        values, frozen = cell_records(ly.data, path, "update_ratio" if self.mode == "relative" else "update_norm",
                                      np.asarray(self._view.x(ly, steps, wall), dtype=np.float64), lo, hi)
        name = (f"{ly.label}: " if self._view.multi else "") + path
        span = (f"steps {math.ceil(lo):,}–{math.ceil(hi) - 1:,}" if not self._view.by_time
                else f"{lo:,.1f}–{hi:,.1f} s")
        kind = AXIS_LABEL[self.mode]
        if not len(values):
            return f"{name} · {span} · no record"
        pos = values[(values > 0) & np.isfinite(values)]
        zero = values == 0
        if not len(pos):
            if zero.any():
                n = len(values)
                return f"{name} · {span} · {kind} {zero_reading(bool(frozen[zero].any()))} ({n} record{'s' * (n > 1)})"
            return f"{name} · {span} · {kind} not finite"
        mean = 10.0 ** float(np.log10(pos).mean())
        text = f"{name} · {span} · {kind} {mean:.3g}"
        text += (f" (geometric mean of {len(pos)} records, {pos.min():.3g}–{pos.max():.3g})" if len(pos) > 1
                 else " (1 record)")
        if zero.any():
            text += f"; {int(zero.sum())} of {len(values)} records {zero_reading(bool(frozen[zero].any()))}"
        return text

    def clear(self) -> None:
        self._key, self.rows, self._variables, self.grid, self._consumed = None, [], [], None, {}
        self._cells = None
        self.image.clear()
        self.zero_image.clear()

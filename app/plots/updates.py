"""Update magnitude per variable over steps, on a log axis: relative ||dW||/||W|| or absolute ||dW||.

Curves hold log10 of the value (computed here, incrementally, instead of by pyqtgraph's log mode,
which would take the log of every point again on each refresh). Exact zeros, the signature of a
frozen variable, are drawn on a floor a decade below the smallest real value, along a dashed line
labelled "0 (frozen)", so a user sees the curve drop to zero the moment they freeze it. A variable
frozen now is drawn dashed and greyed, and its legend entry says so.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from training_core.figures import REFERENCE_RATIO
from training_core.runs import GrowArray, RunData

from . import palette
from .axes import FloorLogAxis
from .curves import LiveCurve, nearest_index

KIND = {"relative": "update_ratio", "absolute": "update_norm"}
AXIS_LABEL = {"relative": "‖ΔW‖ / ‖W‖", "absolute": "‖ΔW‖"}
MAX_LEGEND = 24        # more variables than this: no legend (the hover readout and the tree name them)
LOWEST_FLOOR = -15.0   # log10: below this even a leak reads as zero
DEFAULT_FLOOR = -12.0  # before any real value is known


class _VarCurve:
    def __init__(self, path: str, index: int, curve: LiveCurve) -> None:
        self.path = path
        self.color = palette.variable_color(index)
        self.curve = curve
        self.log = GrowArray(np.float64)
        self.frozen = False
        self.style: tuple | None = None

    def point_near(self, step: float) -> tuple[int, float] | None:
        """(recorded step, plotted log10 value) nearest `step`; None if there is none or it is a gap."""
        xs = self.curve.xData
        if xs is None or not len(xs):
            return None
        i = nearest_index(xs, step)
        y = float(self.log.view()[i])
        return (int(xs[i]), y) if np.isfinite(y) else None


class UpdateCurves:
    def __init__(self, plot: pg.PlotItem, axis: FloorLogAxis, legend: pg.LegendItem) -> None:
        self.plot = plot
        self.axis = axis
        self.legend = legend
        self.mode = "relative"
        self.vars: dict[str, _VarCurve] = {}
        self.highlighted: str | None = None
        self._min_pos = math.inf
        self.floor = DEFAULT_FLOOR
        self.has_zero = False
        self.reference = pg.InfiniteLine(pos=math.log10(REFERENCE_RATIO), angle=0, movable=False,
                                         pen=pg.mkPen(palette.REFERENCE_COLOR, width=1.2,
                                                      style=QtCore.Qt.PenStyle.DashDotLine),
                                         label="1e-3", labelOpts={"position": 0.995, "color": palette.REFERENCE_COLOR,
                                                                  "anchors": [(1, 1), (1, 1)],
                                                                  "fill": pg.mkBrush(255, 255, 255, 200)})
        self.floor_line = pg.InfiniteLine(pos=self.floor, angle=0, movable=False,
                                          pen=pg.mkPen(palette.FLOOR_COLOR, width=1,
                                                       style=QtCore.Qt.PenStyle.DashLine),
                                          label="0 (frozen)", labelOpts={"position": 0.02, "color": palette.FLOOR_COLOR,
                                                                         "anchors": [(0, 1), (0, 1)]})
        for line in (self.reference, self.floor_line):
            line.setZValue(-5)
            plot.addItem(line, ignoreBounds=True)
        self.floor_line.hide()
        plot.setLabel("left", AXIS_LABEL[self.mode], color=palette.FOREGROUND)

    # -- data ------------------------------------------------------------------------------------------
    def update(self, store: RunData) -> None:
        """Append the new log values of every variable; redo all only if the floor had to move down."""
        kind = KIND[self.mode]
        for path in store.var_paths:
            if path not in self.vars:
                self._add(path)
        fresh, redo = {}, set()
        for path, vc in self.vars.items():
            steps, _, values = store.var_series(path, kind)
            if len(values) < len(vc.log) or not len(vc.log):
                vc.log = GrowArray(np.float64)
                redo.add(path)
            fresh[path] = (steps, values)
            self._note_range(values[len(vc.log):])
        floor = self._floor()
        if floor != self.floor:
            self.floor = floor
            for path, vc in self.vars.items():
                vc.log = GrowArray(np.float64)
                redo.add(path)
        for path, vc in self.vars.items():
            steps, values = fresh[path]
            vc.log.extend(self._to_log(values[len(vc.log):]))
            vc.frozen = store.frozen_now(path)
            self._style(vc)
            vc.curve.setData(steps, vc.log.view(), grown=path not in redo)
        self.axis.set_floor(self.floor if self.has_zero else None)
        self.floor_line.setValue(self.floor)
        self.floor_line.setVisible(self.has_zero)

    def set_mode(self, mode: str, store: RunData) -> None:
        if mode not in KIND:
            raise ValueError(f"update mode must be 'relative' or 'absolute', got {mode!r}")
        if mode == self.mode:
            return
        self.mode = mode
        self._min_pos, self.has_zero, self.floor = math.inf, False, DEFAULT_FLOOR
        for vc in self.vars.values():
            vc.log = GrowArray(np.float64)
        self.reference.setVisible(mode == "relative")
        self.plot.setLabel("left", AXIS_LABEL[mode], color=palette.FOREGROUND)
        self.update(store)

    def _note_range(self, values: np.ndarray) -> None:
        if not len(values):
            return
        pos = values[np.isfinite(values) & (values > 0)]
        if len(pos):
            self._min_pos = min(self._min_pos, float(pos.min()))
        if not self.has_zero and bool((values == 0).any()):
            self.has_zero = True

    def _floor(self) -> float:
        """A whole decade below the smallest real value (and below the 1e-3 reference).

        The smallest value only falls, so once real values exist the floor only moves down, and every
        move (a full recomputation) takes a new decade of data: rare."""
        if not math.isfinite(self._min_pos):
            return self.floor
        f = math.floor(math.log10(self._min_pos)) - 1.0
        if self.mode == "relative":
            f = min(f, math.log10(REFERENCE_RATIO) - 1.0)
        return max(f, LOWEST_FLOOR)

    def _to_log(self, values: np.ndarray) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        out = np.full(len(v), self.floor)
        pos = v > 0
        with np.errstate(divide="ignore"):
            out[pos] = np.maximum(np.log10(v[pos]), self.floor)
        out[~np.isfinite(v)] = np.nan  # inf or NaN: a gap, not a point on the floor
        return out

    # -- look ------------------------------------------------------------------------------------------
    def _add(self, path: str) -> None:
        curve = LiveCurve(name=path)
        vc = self.vars[path] = _VarCurve(path, len(self.vars), curve)
        self.plot.addItem(curve)
        if len(self.vars) <= MAX_LEGEND:
            self.legend.addItem(curve, path)
        elif len(self.vars) == MAX_LEGEND + 1:
            self.legend.clear()
            self.legend.hide()
            self.legend.setMaximumHeight(0)
        self._style(vc)

    def _style(self, vc: _VarCurve) -> None:
        hi = self.highlighted
        style = (vc.frozen, hi is None, hi == vc.path)
        if style == vc.style:
            return
        vc.style = style
        color = palette.mix(vc.color, palette.FROZEN_GREY, 0.5) if vc.frozen else vc.color
        pen = pg.mkPen(color, width=palette.HIGHLIGHT_WIDTH if hi == vc.path else palette.UPDATE_WIDTH,
                       style=QtCore.Qt.PenStyle.DashLine if vc.frozen else QtCore.Qt.PenStyle.SolidLine)
        if hi is not None and hi != vc.path:
            c = pen.color()
            c.setAlpha(palette.DIM_ALPHA)
            pen.setColor(c)
        vc.curve.setPen(pen)
        vc.curve.setZValue(10 if hi == vc.path else 1)
        label = self.legend.getLabel(vc.curve)
        if label is not None:
            label.setText(f"{vc.path} (frozen)" if vc.frozen else vc.path)

    def highlight(self, path: str | None) -> None:
        self.highlighted = path if path in self.vars else None
        for vc in self.vars.values():
            self._style(vc)

    # -- reading ---------------------------------------------------------------------------------------
    def curves(self) -> dict[str, pg.PlotDataItem]:
        return {f"update/{p}": vc.curve for p, vc in self.vars.items()}

    def nearest(self, step: float, log_y: float) -> tuple[str, str, int, float] | None:
        """The visible variable whose value at `step` is closest to the cursor: (path, colour, step, value)."""
        best = None
        for path, vc in self.vars.items():
            near = vc.point_near(step) if vc.curve.isVisible() else None
            if near is None:
                continue
            at, ly = near
            d = abs(ly - log_y)
            if best is None or d < best[0]:
                value = 0.0 if ly <= self.floor and self.has_zero else 10.0 ** ly
                best = (d, (path, vc.color, at, value))
        return None if best is None else best[1]

    def clear(self) -> None:
        for vc in self.vars.values():
            self.plot.removeItem(vc.curve)
            self.legend.removeItem(vc.curve)
        self.vars.clear()
        self.legend.setMaximumHeight(1e6)
        self.legend.show()
        self.highlighted = None
        self._min_pos, self.has_zero, self.floor = math.inf, False, DEFAULT_FLOOR
        self.axis.set_floor(None)
        self.floor_line.hide()

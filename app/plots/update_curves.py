"""Update magnitude per variable over steps, on a log axis: relative ||dW||/||W|| or absolute ||dW||.

Curves hold log10 of the value (computed here, incrementally, instead of by pyqtgraph's log mode,
which would take the log of every point again on each refresh). Exact zeros have no logarithm: they
are drawn on a floor a decade below the smallest real value, along a dashed line labelled by what
sits on it. A frozen variable that leaks (the gate method: Adam's momentum decaying towards 0) reaches down
by decades a step; the floor follows it only `LEAK_DECADES` below the lowest trained value, and a leak below
that is drawn on the floor, which then reads "leak ≤ 1e-N": before, the floor fell to 1e-15 and the trained
curves kept a sliver of the plot, while the axis called the leak "0" beside a tree reading LEAK.
A zero is not always a freeze: a record the core reports frozen reads "0 (frozen)" and
is drawn grey and dotted, stretch by stretch (update_stretches.py); a variable that is not frozen but whose update was exactly 0 (converged
below float32 resolution, or a zero gradient) keeps its colour and reads "0 (no update)".

Each variable has a colour per layer and a line style per kind of leaf (`PlotView.variable_looks`),
distinct for 24 and more variables; with several runs, colour names the run and line style the
variable (or the reverse). The scope filter of the run set narrows the variables, across runs.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from training_core.figures import REFERENCE_RATIO, frozen_label
from . import palette
from .axes import FloorLogAxis
from .curves import LiveCurve, dashed_pen, legend_pen
from .plot_view import Layer, PlotView
from .update_stretches import VarCurve

KIND = {"relative": "update_ratio", "absolute": "update_norm"}
AXIS_LABEL = {"relative": "‖ΔW‖ / ‖W‖", "absolute": "‖ΔW‖"}
MAX_LEGEND = 24        # more variables than this: no legend (the hover readout and the tree name them)
LOWEST_FLOOR = -15.0   # log10: below this even a leak reads as zero
DEFAULT_FLOOR = -12.0  # before any real value is known
LEAK_DECADES = 2       # how far below the lowest trained value a frozen variable's leak may take the floor
FLOOR_LABELS = {(True, False): "0 (frozen)", (False, True): "0 (no update)", (True, True): "0 (frozen · no update)"}


def zero_reading(frozen: bool) -> str:
    """How an update of exactly 0 reads: a freeze, or a variable that did not move although it trains."""
    return "0 (frozen)" if frozen else "0 (no update)"


def _label_of(vc: VarCurve) -> str:
    """A variable's legend name: with the export's words while it is frozen (figures/frozen.py `frozen_label`),
    "(frozen)", or "— not trainable (moved: a leak)" for a `trainable = False` variable fit() trained anyway."""
    return frozen_label(vc.path, vc.layer.data, vc.moved) if vc.frozen else vc.path


def _sample_of(vc: VarCurve) -> pg.PlotDataItem:
    """The curve whose line a variable's legend entry shows: the frozen style while it is frozen."""
    return vc.frozen_curve if vc.frozen and vc.frozen_curve is not None else vc.curve


class UpdateCurves:
    def __init__(self, plot: pg.PlotItem, axis: FloorLogAxis, legend: pg.LegendItem) -> None:
        self.plot = plot
        self.axis = axis
        self.legend = legend
        self.mode = "relative"
        self.vars: dict[str, VarCurve] = {}  # by curve name (PlotView.name of the variable's path)
        self.highlighted: str | None = None  # a variable path
        self.only: set[str] | None = None  # draw only these variables (the heat map's curves); None: all
        self._min_pos = math.inf  # the smallest update > 0 of a record not frozen
        self._min_leak = math.inf  # the smallest update > 0 of a frozen record (a leak)
        self.floor = DEFAULT_FLOOR
        self.zeros = (False, False)  # (a frozen variable at 0, an unfrozen one at 0)
        self._legend_key: tuple | None = None
        self._shown_key: tuple | None = None
        self._shown: dict = {}
        self._spare: list[LiveCurve] = []  # curves of variables no longer drawn, hidden, for the next to come
        self._samples: list = []
        self.reference = pg.InfiniteLine(pos=math.log10(REFERENCE_RATIO), angle=0, movable=False,
                                         pen=pg.mkPen(palette.REFERENCE_COLOR, width=1.2,
                                                      style=QtCore.Qt.PenStyle.DashDotLine),
                                         label="10⁻³", labelOpts={"position": 0.995, "color": palette.REFERENCE_COLOR,
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

    @property
    def has_zero(self) -> bool:
        return any(self.zeros)

    @property
    def leak_under(self) -> bool:
        """A frozen variable leaked by less than the floor: drawn on it, which then names the leak, not "0"."""
        return self._min_leak < 10.0 ** self.floor

    def _leak_text(self) -> str:
        return f"1e{int(self.floor)}"

    # -- data ------------------------------------------------------------------------------------------
    def update(self, view: PlotView) -> None:
        """Append the new log values of every variable; redo all only if the floor had to move down."""
        kind = KIND[self.mode]
        only = self.only
        key = (view.signature, tuple(len(ly.data.var_paths) for ly in view.layers),
               None if only is None else frozenset(only))
        if key != self._shown_key:  # a pass over every variable (500 of a wide model) only when it can change
            self._shown_key = key
            self._shown = {ly.key: [p for p in ly.data.var_paths if view.runs.shows(p, ly.data.var_path(p))
                                    and (only is None or p in only)]
                           for ly in view.layers}
        shown = self._shown
        keep = {view.name(ly, p) for ly in view.layers for p in shown[ly.key]}
        for name in [n for n in self.vars if n not in keep]:  # left the subset (heat-map mode's curves)
            gone = self.vars.pop(name)
            for curve in (gone.curve, gone.frozen_curve):
                if curve is not None:  # kept for the next to come in: a new curve item a mover's swap was churn
                    curve.hide()
                    curve.setData([], [])
                    self._spare.append(curve)
        looks = view.variable_looks(shown)
        order = []
        for layer in view.layers:
            for path in shown[layer.key]:
                name = view.name(layer, path)
                order.append(name)
                if name not in self.vars:
                    self._add(name, layer, path)
                self.vars[name].color, self.vars[name].dash = looks[(layer.key, path)]
        if list(self.vars) != order:  # the run's order, whatever order they came in (the legend follows it)
            self.vars = {name: self.vars[name] for name in order}
        fresh, redo = {}, set()
        for name, vc in self.vars.items():
            steps, wall, values = vc.layer.data.var_series(vc.path, kind)
            frozen = vc.layer.data.frozen_series(vc.path)
            if len(values) < vc.n or not vc.n:
                vc.reset()
                redo.add(name)
            fresh[name] = (steps, wall, values, frozen)
            vc.note_moved(values, frozen)
            self._note_range(values[vc.n:], frozen[vc.n:])
        floor = self._floor()
        if floor != self.floor:
            self.floor = floor
            for name, vc in self.vars.items():
                vc.reset()
                redo.add(name)
        for name, vc in self.vars.items():
            steps, wall, values, frozen = fresh[name]
            vc.extend(view, steps, wall, self._to_log(values[vc.n:]), frozen)
            vc.frozen = vc.layer.data.frozen_now(vc.path)
            if vc.has_frozen and vc.frozen_curve is None:  # its first frozen record: the frozen stretches' curve
                vc.frozen_curve = self._new_curve(f"{name} (frozen)")
            self._style(vc)
            vc.draw(grown=name not in redo)
        on_floor = self.has_zero or self.leak_under
        self.axis.set_floor(self.floor if on_floor else None, "0" if not self.leak_under else f"≤{self._leak_text()}")
        self.floor_line.setValue(self.floor)
        self.floor_line.setVisible(on_floor)
        if on_floor:
            parts = [FLOOR_LABELS[self.zeros]] if self.has_zero else []
            self.floor_line.label.setFormat(" · ".join(parts + [f"leak ≤ {self._leak_text()}"] * self.leak_under))
        self._update_legend(view)

    def set_mode(self, mode: str, view: PlotView) -> None:
        if mode not in KIND:
            raise ValueError(f"update mode must be 'relative' or 'absolute', got {mode!r}")
        if mode == self.mode:
            return
        self.mode = mode
        self._min_pos, self._min_leak, self.zeros, self.floor = math.inf, math.inf, (False, False), DEFAULT_FLOOR
        for vc in self.vars.values():
            vc.reset()
        self.reference.setVisible(mode == "relative")
        self.plot.setLabel("left", AXIS_LABEL[mode], color=palette.FOREGROUND)
        self.update(view)

    def _note_range(self, values: np.ndarray, frozen: np.ndarray) -> None:
        if not len(values):
            return
        f = np.asarray(frozen[:len(values)], dtype=bool)
        pos = np.isfinite(values) & (values > 0)
        trained, leaked = pos & ~f, pos & f
        if trained.any():
            self._min_pos = min(self._min_pos, float(values[trained].min()))
        if leaked.any():
            self._min_leak = min(self._min_leak, float(values[leaked].min()))
        zero = values == 0
        if zero.any():
            self.zeros = (self.zeros[0] or bool((zero & f).any()), self.zeros[1] or bool((zero & ~f).any()))

    def _floor(self) -> float:
        """A whole decade below the smallest real value (and below the 1e-3 reference).

        The smallest value only falls, so once real values exist the floor only moves down, and every
        move (a full recomputation) takes a new decade of data: rare. A leak (a frozen record's value) counts
        only down to `LEAK_DECADES` below the lowest trained value: it falls by decades for as long as it is
        frozen, and took the floor to 1e-15, the trained curves squeezed into the top of the plot."""
        lowest = self._min_pos
        if math.isfinite(self._min_leak):
            lowest = min(lowest, self._min_leak if not math.isfinite(lowest)
                         else max(self._min_leak, lowest * 10.0 ** -LEAK_DECADES))
        if not math.isfinite(lowest):
            return self.floor
        f = math.floor(math.log10(lowest)) - 1.0
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
    def _add(self, name: str, layer: Layer, path: str) -> None:
        self.vars[name] = VarCurve(name, layer, path, self._new_curve(name))

    def _new_curve(self, name: str) -> LiveCurve:
        if self._spare:
            curve = self._spare.pop()
            curve.opts["name"] = name
            curve.show()
        else:
            curve = LiveCurve(name=name)
            self.plot.addItem(curve)
        return curve

    def _style(self, vc: VarCurve) -> None:
        """The trained stretches in the variable's own look, the frozen ones (`frozen_curve`) grey and dotted, as
        the legend's "(frozen)" and the paper export (app/export/curves.py) draw them."""
        hi = self.highlighted
        lit = hi is not None and hi in (vc.path, vc.variable)  # a shared variable's path lights each phase's curve
        style = (vc.frozen_curve is not None, hi is None, lit, vc.color, vc.dash)
        if style == vc.style:
            return
        vc.style = style
        width = palette.HIGHLIGHT_WIDTH if lit else palette.UPDATE_WIDTH
        pens = [(vc.curve, dashed_pen(vc.color, width, vc.dash))]
        if vc.frozen_curve is not None:
            pen = pg.mkPen(palette.FROZEN_GREY, width=width)
            pen.setDashPattern(list(palette.FROZEN_DOTS))
            pen.setStyle(QtCore.Qt.PenStyle.DotLine)
            pens.append((vc.frozen_curve, pen))
        for curve, pen in pens:
            if hi is not None and not lit:
                c = pen.color()
                c.setAlpha(palette.DIM_ALPHA)
                pen.setColor(c)
            curve.setPen(pen)
            curve.setZValue(10 if lit else 1)
        self._legend_key = None  # its sample and "(frozen)" follow

    def _update_legend(self, view: PlotView) -> None:
        """One run: an entry per variable (up to MAX_LEGEND), "(frozen)" while frozen (`_label_of`). Several runs: the
        variables by line style (or colour); the runs, by colour (or line style), are in the loss legend."""
        key = (view.signature, tuple((n, vc.frozen, vc.moved) for n, vc in self.vars.items()))
        if key == self._legend_key:
            return
        self._legend_key = key
        entries = [(_sample_of(vc), _label_of(vc)) for vc in self.vars.values()]
        if not view.multi and not self._samples and len(self.legend.items) == len(entries) and self.legend.isVisible():
            # the same number of entries (the top movers changed, a freeze): relabel them in place, as
            # building a legend entry anew (a text item, a layout) took ~1.5 ms each
            for (sample, label), (curve, text) in zip(self.legend.items, entries):
                if sample.item is not curve:
                    sample.item = curve
                    sample.update()
                if label.text != text:
                    label.setText(text)
            return
        self.legend.clear()
        self._samples = []
        paths = list(dict.fromkeys(vc.path for vc in self.vars.values()))
        too_many = len(paths) > MAX_LEGEND
        self.legend.setVisible(not too_many)
        self.legend.setMaximumHeight(0 if too_many else 1e6)
        if too_many:
            return
        if not view.multi:
            for vc in self.vars.values():
                self.legend.addItem(_sample_of(vc), _label_of(vc))
            return
        # the runs are named in the loss legend above, in the same colours (or line styles): listed here again,
        # a sweep's 8 long names made this legend taller than the plot
        by_run = view.colour_by == "run"
        looks = len(palette.VARIABLE_DASHES) if by_run else len(palette.VARIABLE_CYCLE)
        if len(paths) > looks:  # too many to tell apart by line style (or colour)
            self._sample(None, 0, f"{len(paths)} variables a run: narrow with “Updates of”")
            return
        first = {vc.path: vc for vc in reversed(list(self.vars.values()))}
        for path in paths:
            vc = first[path]
            self._sample(palette.FOREGROUND if by_run else vc.color, vc.dash if by_run else 0, path)

    def _sample(self, colour: str | None, dash: int, label: str) -> None:
        """A legend entry with a line of its own (`colour` None: text only)."""
        item = pg.PlotDataItem(pen=None if colour is None else legend_pen(colour, palette.UPDATE_WIDTH + 1, dash))
        self._samples.append(item)
        self.legend.addItem(item, label)

    def highlight(self, path: str | None) -> None:
        self.highlighted = path if any(path in (vc.path, vc.variable) for vc in self.vars.values()) else None
        for vc in self.vars.values():
            self._style(vc)

    # -- reading ---------------------------------------------------------------------------------------
    def curves(self) -> dict[str, pg.PlotDataItem]:
        """{"update/<name>": the trained stretches' curve, "update/<name> (frozen)": the frozen ones', if any}."""
        out = {f"update/{n}": vc.curve for n, vc in self.vars.items()}
        out.update({f"update/{n} (frozen)": vc.frozen_curve for n, vc in self.vars.items() if vc.frozen_curve})
        return out

    def stretches(self, name: str) -> list[tuple[float, float, str]]:
        """Variable `name`'s drawn stretches in step order: (first x, last x, "trained" or "frozen")."""
        return self.vars[name].stretches()

    def nearest(self, x: float, log_y: float) -> tuple[str, str, int, float, str] | None:
        """The visible variable whose value at `x` is closest to the cursor: (curve name, colour, step,
        value, reading), the reading "0 (frozen)" or "0 (no update)" for an exact zero."""
        best = None
        for name, vc in self.vars.items():
            near = vc.point_near(x) if vc.curve.isVisible() else None
            if near is None:
                continue
            i, ly = near
            d = abs(ly - log_y)
            if best is None or d < best[0]:
                steps, _, values = vc.layer.data.var_series(vc.path, KIND[self.mode])
                value = float(values[i]) if i < len(values) else 10.0 ** ly
                frozen = vc.layer.data.frozen_series(vc.path)
                reading = zero_reading(bool(frozen[i])) if value == 0 and i < len(frozen) else f"{value:.3g}"
                best = (d, (name, vc.color, int(steps[i]) if i < len(steps) else int(x), value, reading))
        return None if best is None else best[1]

    def path_of(self, name: str) -> str:
        return self.vars[name].path

    def clear(self) -> None:
        self._shown_key = None
        for curve in [c for vc in self.vars.values() for c in (vc.curve, vc.frozen_curve) if c] + self._spare:
            self.plot.removeItem(curve)
        self._spare = []
        self.legend.clear()
        self._samples = []
        self._legend_key = None
        self.vars.clear()
        self.legend.setMaximumHeight(1e6)
        self.legend.show()
        self._min_pos, self._min_leak, self.zeros, self.floor = math.inf, math.inf, (False, False), DEFAULT_FLOOR
        self.axis.set_floor(None)
        self.floor_line.hide()

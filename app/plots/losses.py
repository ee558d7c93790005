"""Loss per phase over steps (or time), of every shown run: the raw loss faint and thin, the smoothed bold.

Smoothing is TensorBoard's debiased EMA from `training_core.ema_smooth`, the same numbers the CSV and
figure export write. It runs incrementally: each refresh smooths only the points that arrived since
the last one, carrying an `EmaState` per curve, and recomputes a whole curve only when the weight
moves. On a log axis (losses that fall by decades, as factorization's) the curves hold log10 of the
values, extended incrementally too; a loss <= 0 is a gap there.
"""
from __future__ import annotations

import threading

import numpy as np
import pyqtgraph as pg

from training_core import EmaState, ema_smooth
from training_core.runs import GrowArray

from . import palette
from .curves import LiveCurve, dashed_pen, legend_pen, nearest_index
from .plot_view import Layer, PlotView


def log10_or_nan(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    out = np.full(len(v), np.nan)
    pos = v > 0
    out[pos] = np.log10(v[pos])
    return out


class _PhaseCurves:
    def __init__(self, plot: pg.PlotItem, name: str, layer: Layer, phase: str, colour: str, dash: int) -> None:
        self.layer, self.phase, self.color = layer, phase, colour
        raw_pen = dashed_pen(colour, palette.RAW_WIDTH, dash)
        c = raw_pen.color()
        c.setAlpha(palette.RAW_ALPHA)
        raw_pen.setColor(c)
        self.raw = LiveCurve(pen=raw_pen)
        self.smooth = LiveCurve(pen=dashed_pen(colour, palette.SMOOTH_WIDTH, dash), name=name)
        self.raw.setZValue(0)
        self.smooth.setZValue(1)
        plot.addItem(self.raw)
        plot.addItem(self.smooth)
        self.restart()

    def restart(self) -> None:
        self.smoothed = GrowArray(np.float64)
        self.state = EmaState()
        self.x = GrowArray(np.float64)  # by time: seconds since the run began
        self.log_raw = GrowArray(np.float64)
        self.log_smooth = GrowArray(np.float64)

    def catch_up(self, values: np.ndarray, weight: float) -> None:
        """Smooth what arrived since last time; values only ever grow (a new run resets the panel)."""
        done = len(self.smoothed)
        if len(values) > done:
            out, self.state = ema_smooth(values[done:], weight, self.state)
            self.smoothed.extend(out)


class LossCurves:
    """One raw and one smoothed curve per run and phase."""

    def __init__(self, plot: pg.PlotItem, legend: pg.LegendItem, weight: float = 0.6) -> None:
        self.plot = plot
        self.legend = legend
        self.weight = weight
        self.log = False
        self.phases: dict[str, _PhaseCurves] = {}  # by curve name (see PlotView.name)
        self._legend_key: tuple | None = None
        self._samples: list = []

    def update(self, view: PlotView) -> None:
        """One setData per curve, with the store's arrays (no copies) and the smoothed tail appended."""
        all_phases = list(dict.fromkeys(p for ly in view.layers for p in ly.data.phases))
        for layer in view.layers:
            for phase in layer.data.phases:
                name = view.name(layer, f"loss/{phase}")
                pc = self.phases.get(name)
                if pc is None:
                    colour, dash = view.phase_look(layer, phase, all_phases.index(phase))
                    pc = self.phases[name] = _PhaseCurves(self.plot, name, layer, phase, colour, dash)
                self._draw(view, pc)
        self._update_legend(view, all_phases)

    def _draw(self, view: PlotView, pc: _PhaseCurves, redo: bool = False) -> None:
        steps, wall, values = pc.layer.data.loss(pc.phase)
        grown = len(values) >= len(pc.smoothed) and not redo
        if not grown:  # the store was refilled behind our back, or the look changed: start over
            pc.restart()
        pc.catch_up(values, self.weight)
        x = steps
        if view.by_time:
            pc.x.extend(view.x(pc.layer, steps[len(pc.x):], wall[len(pc.x):]))
            x = pc.x.view()
        raw, smooth = values, pc.smoothed.view()
        if self.log:
            pc.log_raw.extend(log10_or_nan(values[len(pc.log_raw):]))
            pc.log_smooth.extend(log10_or_nan(smooth[len(pc.log_smooth):]))
            raw, smooth = pc.log_raw.view(), pc.log_smooth.view()
        pc.raw.setData(x, raw, grown=grown)
        pc.smooth.setData(x, smooth, grown=grown)

    def _update_legend(self, view: PlotView, phases: list[str]) -> None:
        """One run: an entry per phase. Several: the runs by colour and the phases by line style (or the
        reverse), each entry drawn with a sample line of its own."""
        key = (view.signature, tuple(phases))
        if key == self._legend_key:
            return
        self._legend_key = key
        self.legend.clear()
        self._samples = []
        if not view.multi:
            self.legend.run_count = 0
            for name, pc in self.phases.items():
                self.legend.addItem(pc.smooth, f"loss {pc.phase}")
            return
        by_run = view.colour_by == "run"
        self.legend.run_count = len(view.layers)  # the runs first, then the phases (run_legend.py lays them out)
        for layer in view.layers:
            colour = palette.run_color(layer.colour) if by_run else palette.FOREGROUND
            self._sample(colour, 0 if by_run else layer.index % len(palette.VARIABLE_DASHES), layer.label)
        for k, phase in enumerate(phases):
            colour = palette.FOREGROUND if by_run else palette.phase_color(phase, k)
            self._sample(colour, k % len(palette.VARIABLE_DASHES) if by_run else 0, f"loss {phase}")

    def _sample(self, colour: str, dash: int, label: str) -> None:
        item = pg.PlotDataItem(pen=legend_pen(colour, palette.SMOOTH_WIDTH, dash))
        self._samples.append(item)
        self.legend.addItem(item, label)

    def set_weight(self, weight: float, view: PlotView) -> None:
        """The only full recomputation: every curve re-smoothed from its first point."""
        self.weight = weight
        for pc in self.phases.values():
            self._draw(view, pc, redo=True)

    def set_log(self, log: bool, view: PlotView) -> None:
        self.log = log
        for pc in self.phases.values():
            self._draw(view, pc, redo=True)

    def curves(self) -> dict[str, pg.PlotDataItem]:
        out = {}
        for name, pc in self.phases.items():
            out[name] = pc.raw
            out[f"{name}/smoothed"] = pc.smooth
        return out

    def values_at(self, x: float) -> list[tuple[str, str, int, float, float]]:
        """(curve name, colour, step, raw, smoothed) nearest to `x` per curve, for the hover readout."""
        out = []
        for name, pc in self.phases.items():
            xs = pc.raw.xData
            if xs is None or not len(xs) or len(pc.smoothed) < len(xs):
                continue
            i = nearest_index(xs, x)
            steps, _, values = pc.layer.data.loss(pc.phase)
            if i < len(values):
                out.append((name, pc.color, int(steps[i]), float(values[i]), float(pc.smoothed.view()[i])))
        return out

    def clear(self) -> None:
        for pc in self.phases.values():
            self.plot.removeItem(pc.raw)
            self.plot.removeItem(pc.smooth)
        self.legend.clear()
        self._samples = []
        self._legend_key = None
        self.phases.clear()


def warm_up() -> None:
    """Load the smoothing's lazily imported scipy (~0.5 s) on a side thread now, not in the first refresh
    with data, which runs on the GUI thread while training has started."""
    threading.Thread(target=ema_smooth, args=(np.zeros(2), 0.5), name="warm-smoothing", daemon=True).start()


"""Loss per phase over steps: the raw loss faint and thin, the smoothed loss bold.

Smoothing is TensorBoard's debiased EMA from `training_core.ema_smooth`, the same numbers the CSV and
figure export write. It runs incrementally: each refresh smooths only the points that arrived since
the last one, carrying an `EmaState` per phase, and recomputes a whole curve only when the weight moves.
"""
from __future__ import annotations

import threading

import numpy as np
import pyqtgraph as pg

from training_core.runs import GrowArray, RunData
from training_core import EmaState, ema_smooth

from . import palette
from .curves import LiveCurve, nearest_index


class _PhaseCurves:
    def __init__(self, plot: pg.PlotItem, legend: pg.LegendItem, phase: str, index: int) -> None:
        color = palette.phase_color(phase, index)
        raw_pen = pg.mkPen(color, width=palette.RAW_WIDTH)
        c = raw_pen.color()
        c.setAlpha(palette.RAW_ALPHA)
        raw_pen.setColor(c)
        self.color = color
        self.raw = LiveCurve(pen=raw_pen)
        self.smooth = LiveCurve(pen=pg.mkPen(color, width=palette.SMOOTH_WIDTH), name=f"loss {phase}")
        self.raw.setZValue(0)
        self.smooth.setZValue(1)
        plot.addItem(self.raw)
        plot.addItem(self.smooth)
        legend.addItem(self.smooth, f"loss {phase}")
        self.smoothed = GrowArray(np.float64)
        self.state = EmaState()

    def catch_up(self, values: np.ndarray, weight: float) -> None:
        """Smooth what arrived since last time; values only ever grow (a new run resets the panel)."""
        done = len(self.smoothed)
        if len(values) > done:
            out, self.state = ema_smooth(values[done:], weight, self.state)
            self.smoothed.extend(out)

    def restart(self) -> None:
        self.smoothed = GrowArray(np.float64)
        self.state = EmaState()


class LossCurves:
    """One raw and one smoothed curve per phase, coloured by phase."""

    def __init__(self, plot: pg.PlotItem, legend: pg.LegendItem, weight: float = 0.6) -> None:
        self.plot = plot
        self.legend = legend
        self.weight = weight
        self.phases: dict[str, _PhaseCurves] = {}

    def update(self, store: RunData) -> None:
        """One setData per curve, with the store's arrays (no copies) and the smoothed tail appended."""
        for i, phase in enumerate(store.phases):
            pc = self.phases.get(phase)
            if pc is None:
                pc = self.phases[phase] = _PhaseCurves(self.plot, self.legend, phase, i)
            steps, _, values = store.loss(phase)
            grown = len(values) >= len(pc.smoothed)
            if not grown:  # the store was refilled behind our back: start over
                pc.restart()
            pc.catch_up(values, self.weight)
            pc.raw.setData(steps, values, grown=grown)
            pc.smooth.setData(steps, pc.smoothed.view(), grown=grown)

    def set_weight(self, weight: float, store: RunData) -> None:
        """The only full recomputation: every curve re-smoothed from its first point."""
        self.weight = weight
        for phase, pc in self.phases.items():
            pc.restart()
            steps, _, values = store.loss(phase)
            pc.catch_up(values, weight)
            pc.smooth.setData(steps, pc.smoothed.view())

    def curves(self) -> dict[str, pg.PlotDataItem]:
        out = {}
        for phase, pc in self.phases.items():
            out[f"loss/{phase}"] = pc.raw
            out[f"loss/{phase}/smoothed"] = pc.smooth
        return out

    def values_at(self, step: float) -> list[tuple[str, str, int, float, float]]:
        """(phase, colour, step, raw, smoothed) nearest to `step` per phase, for the hover readout."""
        out = []
        for phase, pc in self.phases.items():
            xs = pc.raw.xData
            if xs is None or not len(xs) or len(pc.smoothed) < len(xs):
                continue
            i = nearest_index(xs, step)
            out.append((phase, pc.color, int(xs[i]), float(pc.raw.yData[i]), float(pc.smoothed.view()[i])))
        return out

    def clear(self) -> None:
        for pc in self.phases.values():
            self.plot.removeItem(pc.raw)
            self.plot.removeItem(pc.smooth)
            self.legend.removeItem(pc.smooth)
        self.phases.clear()


def warm_up() -> None:
    """Load the smoothing's lazily imported scipy (~0.5 s) on a side thread now, not in the first refresh
    with data, which runs on the GUI thread while training has started."""
    threading.Thread(target=ema_smooth, args=(np.zeros(2), 0.5), name="warm-smoothing", daemon=True).start()


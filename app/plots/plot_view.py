"""What the live plots draw, decided once per refresh: the shown runs and how they are told apart.

The plots read a `RunSet` (training_core/runs/collection.py): one run while training, several when
comparing. `PlotView` is the snapshot a refresh works from: the visible runs as `Layer`s, x by step
or by time since each run began, colour by run (line style by phase or variable) or the reverse,
and the scopes the update plot shows. Its `signature` changes when any of that changes, or when a run's
data was refilled from scratch (`RunData.generation`: a followed record read again after a resume cut it
back, with more points than before as often as not); the plots then redraw from scratch, and otherwise
only append what the runs gained.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from training_core.figures import variable_styles
from training_core.runs import RunData, RunSet

from . import palette


@dataclass(frozen=True)
class Layer:
    key: str  # the run's key in the RunSet (its directory, or "live")
    label: str
    data: RunData
    index: int  # position among the shown runs
    colour: int  # the run's own colour (palette.run_color)
    t0: float | None  # x by time: seconds since this; None: x is the step


class PlotView:
    def __init__(self, runs: RunSet) -> None:
        self.runs = runs
        entries = runs.visible()
        by_time = runs.align == "time"
        self.layers = [Layer(e.key, e.label, e.data, i, e.colour, e.data.start_time() if by_time else None)
                       for i, e in enumerate(entries)]
        self.colour_by = runs.colour_by
        self.by_time = by_time
        self.signature = (tuple((ly.key, ly.label, ly.colour, id(ly.data), ly.data.generation) for ly in self.layers),
                          self.colour_by, by_time, tuple(runs.scopes))

    @property
    def x_label(self) -> str:
        """What x counts: time, or steps, said to be every phase's when a shown run has several (with
        `--count G` the progress bar counts G's steps, the axis all of them: the label tells them apart)."""
        if self.by_time:
            return "time (s)"
        several = any(len(ly.data.start.phases if ly.data.start is not None else ly.data.phases) > 1
                      for ly in self.layers)
        return "step (all phases)" if several else "step"

    @property
    def multi(self) -> bool:
        return len(self.layers) > 1

    @property
    def version(self) -> tuple:
        return tuple(ly.data.version for ly in self.layers)

    def name(self, layer: Layer, tag: str) -> str:
        """A curve's name in `PlotsPanel.curves()` and the readout: its tag, with the run's label when
        several runs are shown."""
        return f"{layer.label}: {tag}" if self.multi else tag

    def x(self, layer: Layer, steps: np.ndarray, wall: np.ndarray) -> np.ndarray:
        if layer.t0 is None:
            return steps
        return np.asarray(wall, dtype=np.float64) - layer.t0

    # -- looks -------------------------------------------------------------------------------------------
    def phase_look(self, layer: Layer, phase: str, phase_index: int) -> tuple[str, int]:
        """(colour, dash index) of a phase's loss: the phase's colour for one run; else by run and phase."""
        if not self.multi:
            return palette.phase_color(phase, phase_index), 0
        if self.colour_by == "run":
            return palette.run_color(layer.colour), phase_index % len(palette.VARIABLE_DASHES)
        return palette.phase_color(phase, phase_index), layer.index % len(palette.VARIABLE_DASHES)

    def variable_looks(self, shown: dict[str, list[str]]) -> dict[tuple[str, str], tuple[str, int]]:
        """(run key, path) -> (colour, dash index) for the variables each run shows (`shown`: key -> paths).
        One run: a colour per layer and a line style per kind of leaf (distinct for 24+ variables). Several:
        colour by run and line style by variable, or colour by variable and line style by run."""
        n_dash = len(palette.VARIABLE_DASHES)
        order = {p: i for i, p in enumerate(dict.fromkeys(p for paths in shown.values() for p in paths))}
        styles = variable_styles(list(order), len(palette.VARIABLE_CYCLE), n_dash)
        out = {}
        for layer in self.layers:
            for p in shown.get(layer.key, []):
                c, d = styles[p]
                if not self.multi:
                    out[(layer.key, p)] = (palette.variable_color(c), d)
                elif self.colour_by == "run":  # more variables than line styles: one style, the legend says so
                    dash = order[p] if len(order) <= n_dash else 0
                    out[(layer.key, p)] = (palette.run_color(layer.colour), dash)
                else:  # a colour per variable (by layer, kernel and bias looked alike: the dash is the run's)
                    colour = order[p] % len(palette.VARIABLE_CYCLE)  # (a dict: this runs every refresh)
                    out[(layer.key, p)] = (palette.variable_color(colour), layer.index % n_dash)
        return out


#: while following, the x range reaches this fraction of the shown span past the newest step, and moves
#: only when the run passes its end: moving it re-lays out every linked plot and axis and repaints them
#: all (~4 ms and a full paint per refresh on a slow machine), so it moves every ~5% of the run instead
FOLLOW_HEADROOM = 0.05


def follow_range(view: PlotView, followed: tuple[float, float] | None) -> tuple[float, float] | None:
    """The x range that shows every run of `view` from its first step, with FOLLOW_HEADROOM to spare after
    the newest while one still runs (none once all have stopped); None to keep `followed` (the range set
    last) while the runs grow into its room."""
    firsts, lasts = [], []
    for layer in view.layers:
        for phase in layer.data.phases:
            steps, wall, _ = layer.data.loss(phase)
            if len(steps):
                xs = view.x(layer, steps[[0, -1]], wall[[0, -1]])
                firsts.append(float(xs[0]))
                lasts.append(float(xs[-1]) if view.by_time else float(max(layer.data.last_step, steps[-1])))
    if not firsts:
        return None
    x0, last = min(firsts), max(lasts)
    room = 0.0 if all(layer.data.stop is not None for layer in view.layers) else FOLLOW_HEADROOM
    x1 = max(last + (last - x0) * room, x0 + (1 if not view.by_time else 0.1))
    if followed is not None and followed[0] == x0 and last <= followed[1] and (room or followed[1] == x1):
        return None
    return x0, x1

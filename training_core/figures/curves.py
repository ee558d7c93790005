"""The pieces a figure is made of, Qt-free: curves (or a group of seeds' mean and band), legend entries, and a
panel's data. The painter (app/export/) only draws these, and the CSV writes the very same curves.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: dash patterns (in pen widths) for the leaves of a scope: kernel solid, bias dashed, ...; a curve
#: names one by index (`Curve.dash`), and the legend carries the pattern itself
DASHES: list[list[float] | None] = [None, [4.0, 2.5], [5.0, 2.0, 1.0, 2.0], [1.0, 1.8]]
N_COLOURS = 8  # the paper palette (Okabe-Ito); the screen theme has as many


@dataclass
class Curve:
    tag: str  # as in scalars.csv: loss/D, update_ratio/generator/dense_1/kernel, metric/modes_covered
    steps: np.ndarray
    wall: np.ndarray
    values: np.ndarray
    smoothed: np.ndarray
    colour: int  # palette index
    dash: int = 0  # index into DASHES
    frozen: np.ndarray | None = None  # per point: the variable was frozen (drawn grey, dotted)
    run: str = ""  # the run's label (the CSV's `run` column), or its group's
    x: np.ndarray | None = None  # where each point is drawn: its step, or its time in `FigureData.x_unit`
    #: a group of seeds (figures/bands.py): `smoothed` is their mean, `low`/`high` the band's edges, `seeds`
    #: how many runs each point combines; `values` is the mean of their raw values
    low: np.ndarray | None = None
    high: np.ndarray | None = None
    seeds: int = 1
    #: per point: the x its frozen state changed at since the point before (NaN: no change), where the figure
    #: draws that change as a step (figures/frozen.py `state_changes`); None when it never changes
    step_x: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.x is None:
            self.x = self.steps.astype(np.float64)

    @property
    def is_band(self) -> bool:
        return self.low is not None and self.high is not None


@dataclass
class LegendEntry:
    label: str
    colour: int | str | None  # palette index, "fg" / "muted", or None for a header (no line sample)
    dash: list[float] | None = None
    frozen: bool = False
    band: bool = False  # a group of seeds: the sample shows its band behind the line
    #: listed under the header above it (a scope's layers): a legend in columns keeps it in its header's column
    under: bool = False


@dataclass
class PlotData:
    name: str  # losses, updates, or metric/<name>
    curves: list[Curve]
    legend: list[LegendEntry]  # what only this panel draws (the runs are named once, in FigureData.run_legend)
    log_y: bool = False
    reference: float | None = None  # dashed horizontal line
    zero_floor: bool = False  # log axis: exact zeros sit on a "0" floor below the data (else: gaps)
    problem: str = ""  # the plot draws, but cannot tell its curves apart: one line naming the fix

    @property
    def empty(self) -> bool:
        return not any(len(c.steps) for c in self.curves)

"""A log axis that can say "0": the update plot's frozen variables sit on a floor at the bottom.

Update curves are drawn in log10 space by the panel itself (incrementally, so long runs stay cheap),
with this axis in log mode so ticks read as powers of ten. An update of exactly zero (a frozen
variable) has no logarithm; it is drawn at `floor` (a decade below the smallest real value), and
this axis labels that tick "0" so the drop to zero reads as zero, not as a tiny number.
"""
from __future__ import annotations

import math

import pyqtgraph as pg


class FloorLogAxis(pg.AxisItem):
    def __init__(self, orientation: str = "left", **kwargs) -> None:
        super().__init__(orientation, **kwargs)
        self.floor: float | None = None  # log10 of the floor, or None while nothing is zero
        self.setLogMode(True)

    def set_floor(self, floor_log: float | None) -> None:
        if floor_log != self.floor:
            self.floor = floor_log
            self.picture = None
            self.update()

    def logTickValues(self, minVal, maxVal, size, stdTicks):
        ticks = super().logTickValues(minVal, maxVal, size, stdTicks)
        if self.floor is None or not (minVal <= self.floor <= maxVal) or not ticks:
            return ticks
        # the floor always gets a major tick; ticks under it (there is nothing there) are dropped
        spacing, values = ticks[0]
        major = [v for v in values if v > self.floor + 0.5] + [self.floor]
        rest = [(s, [v for v in vs if v > self.floor + 0.5]) for s, vs in ticks[1:]]
        return [(spacing, sorted(major))] + rest

    def logTickStrings(self, values, scale, spacing):
        strings = super().logTickStrings(values, scale, spacing)
        if self.floor is None:
            return strings
        return ["0" if math.isclose(v, self.floor, abs_tol=1e-9) else s for v, s in zip(values, strings)]

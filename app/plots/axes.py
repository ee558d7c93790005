"""Axes whose tick labels never overprint, and a log axis that can say "0".

pyqtgraph decides per tick *level* whether to label it, from how much of the axis the labels fill,
not from whether two labels collide: on a log axis spanning a decade or two it labelled 0.1, 0.09,
0.08, ... on top of each other. `TidyAxis` keeps the labels pyqtgraph chose in its order (major level
first) and drops any label whose rectangle would touch one already kept.

`FloorLogAxis`: update curves are drawn in log10 space by the panel itself (incrementally, so long
runs stay cheap), with this axis in log mode so ticks read as powers of ten. An update of exactly
zero (a frozen variable, or one whose update underflowed) has no logarithm; it is drawn at `floor` (a
decade below the smallest real value), and this axis labels that tick "0" so the drop to zero reads
as zero, not as a tiny number.
"""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from app.log_decades import two_decades
from training_core.base.notation import superscript

LABEL_GAP_PX = 3.0  # the least room between two tick labels
DECADE_PAD = 0.04  # of the span, beyond a decade the view was widened to: its label is not cut at the edge


class TidyAxis(pg.AxisItem):
    _label_html: str | None = None

    def _updateLabel(self) -> None:  # noqa: N802 (pyqtgraph's name)
        """pyqtgraph re-sets the label's HTML (and re-lays out the axis) on every range change, although
        the text changes only when its SI prefix does: following a live run moves every linked axis at
        each refresh, ~1 ms of the GUI thread's time. Only the ticks are redrawn then. (The HTML holds the
        text, units and style; showing or hiding the label re-lays out the axis itself.)"""
        html = self.labelString()
        if html == self._label_html:
            self.picture = None
            self.update()
            return
        self._label_html = html
        super()._updateLabel()

    def generateDrawSpecs(self, p):  # noqa: N802 (pyqtgraph's name)
        specs = super().generateDrawSpecs(p)
        if specs is None:
            return specs
        axis, ticks, texts = specs
        self.kept_labels = tidy_labels(texts)
        return axis, ticks, self.kept_labels


def tidy_labels(texts: list) -> list:
    """The (rect, flags, text) labels in order, without those that would touch an earlier kept one."""
    kept: list = []
    for spec in texts:
        grown = spec[0].adjusted(-LABEL_GAP_PX / 2, -LABEL_GAP_PX / 2, LABEL_GAP_PX / 2, LABEL_GAP_PX / 2)
        if not any(grown.intersects(k[0]) for k in kept):
            kept.append(spec)
    return kept


def label_rects(axis: pg.AxisItem) -> list[tuple[QtCore.QRectF, str]]:
    """The (rectangle, text) of each label `axis` draws now (tests check that none overlap)."""
    img = QtGui.QImage(8, 8, QtGui.QImage.Format.Format_ARGB32)
    p = QtGui.QPainter(img)
    p.setFont(axis.style["tickFont"] or p.font())
    try:
        specs = axis.generateDrawSpecs(p)
    finally:
        p.end()
    return [] if specs is None else [(r, t) for r, _, t in specs[2]]


class TwoDecadeAxis(TidyAxis):
    """A y axis whose log mode always labels two decades: its powers of ten are the first tick level (labelled
    before any 2…9 between them: `TidyAxis` keeps that order), and its view widens to hold two of them by the
    export's rule (`two_decades`). Before, a plot spanning a decade or less read "2 3 4 … 9", or nothing,
    with no power of ten to say which: pyqtgraph put decades and 2…9 in one level, labelled all or none.
    The view's autorange stays on: the next data fit it again, and it widens again if it must."""

    def logTickValues(self, minVal, maxVal, size, stdTicks):  # noqa: N802 (pyqtgraph's name)
        ticks = super().logTickValues(minVal, maxVal, size, stdTicks)
        if len(ticks) != 1 or ticks[0][0] is not None:  # several decades: pyqtgraph's levels are decades already
            return ticks
        decades = [float(k) for k in range(math.ceil(minVal - 1e-9), math.floor(maxVal + 1e-9) + 1)]
        minors = [v for v in ticks[0][1] if not math.isclose(v, round(v), abs_tol=1e-9)]
        return [(1.0, decades), (None, minors)]

    def linkToView(self, view) -> None:  # noqa: N802 (pyqtgraph's name)
        """Widens the view's autorange to two decades where it is computed (its children's bounds), so a refresh
        changes the range once or not at all: widening the range after autorange had set it changed it twice a
        refresh, and a changed range repaints every curve whole (`canvas.SplitStroke` repaints a strip)."""
        super().linkToView(view)
        if self.orientation not in ("left", "right") or getattr(view, "_two_decades", False):
            return
        bounds = view.childrenBounds

        def widened(*args, **kwargs):
            got = bounds(*args, **kwargs)
            if self.logMode and got is not None and got[1] is not None:
                lo, hi = got[1]
                if hi <= lo:  # one value: `decades_view` needs a span
                    lo, hi = lo - 1e-6, hi + 1e-6
                got[1] = list(decades_view(lo, hi))
            return got

        view.childrenBounds = widened
        view._two_decades = True


def decades_view(lo: float, hi: float) -> tuple[float, float]:
    """A log10 view (lo, hi) widened by `two_decades` to hold two decades `DECADE_PAD` of the span inside its
    edges (a label on the edge is cut), and padded by as much on a side it moved; unchanged if it holds them."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return lo, hi
    m = (hi - lo) * DECADE_PAD
    a, b = (math.log10(v) for v in two_decades(10.0 ** (lo + m), 10.0 ** (hi - m)))
    pad = (b - a) * DECADE_PAD
    return (a - pad if a < lo + m - 1e-9 else lo), (b + pad if b > hi - m + 1e-9 else hi)


class FloorLogAxis(TwoDecadeAxis):
    def __init__(self, orientation: str = "left", **kwargs) -> None:
        super().__init__(orientation, **kwargs)
        self.floor: float | None = None  # log10 of the floor, or None while nothing is zero
        self.floor_text = "0"  # the floor's tick label: "0", or "≤1e-7" when a leak below it is drawn there
        self.setLogMode(True)

    def set_floor(self, floor_log: float | None, text: str = "0") -> None:
        if (floor_log, text) != (self.floor, self.floor_text):
            self.floor, self.floor_text = floor_log, text
            self.picture = None
            self.update()

    def logTickValues(self, minVal, maxVal, size, stdTicks):  # noqa: N802 (pyqtgraph's name)
        ticks = super().logTickValues(minVal, maxVal, size, stdTicks)
        if self.floor is None or not (minVal <= self.floor <= maxVal) or not ticks:
            return ticks
        # the floor always gets a major tick; ticks under it (there is nothing there) are dropped
        spacing, values = ticks[0]
        major = [v for v in values if v > self.floor + 0.5] + [self.floor]
        rest = [(s, [v for v in vs if v > self.floor + 0.5]) for s, vs in ticks[1:]]
        return [(spacing, sorted(major))] + rest

    def logTickStrings(self, values, scale, spacing):  # noqa: N802 (pyqtgraph's name)
        """Each power of ten as the export writes it ("10⁻²", "10⁻⁴", "10⁻⁶": pyqtgraph wrote "0.01", "0.0001"
        beside "10⁻⁶" on one axis), the floor as its text, the 2…9 between decades as pyqtgraph does."""
        strings = [decade_text(round(v)) if math.isclose(v, round(v), abs_tol=1e-9) else s
                   for v, s in zip(values, super().logTickStrings(values, scale, spacing))]
        if self.floor is None:
            return strings
        return [self.floor_text if math.isclose(v, self.floor, abs_tol=1e-9) else s for v, s in zip(values, strings)]


def decade_text(k: int) -> str:
    """10**k as a printed figure writes it: "1", "10", "10²", "10⁻³"."""
    return "1" if k == 0 else "10" if k == 1 else "10" + superscript(k)


class PlainLogAxis(TwoDecadeAxis):
    """A metric's axis: on a log scale its ticks read as plain numbers (200, 20, 2, 0.1), not as pyqtgraph's
    "2·10²" beside "6": a metric plot spans a decade or two, where most labels are such minor ticks."""

    def logTickStrings(self, values, scale, spacing):  # noqa: N802 (pyqtgraph's name)
        return [plain_number(10.0 ** v) for v in values]


def plain_number(x: float) -> str:
    """`x` to 3 significant digits, as a reader writes it ("0.02", "300"), in e-notation beyond 1e5 or below 1e-3."""
    if x == 0 or 1e-3 <= abs(x) < 1e3:
        return f"{x:.3g}"
    if 1e3 <= abs(x) < 1e5:  # "1000", "12300": .3g wrote 1000 as "1e+03"
        return f"{float(f'{x:.3g}'):.0f}"
    return f"{x:.0e}".replace("e-0", "e-").replace("e+0", "e").replace("e+", "e")


def quiet_axes(plot: pg.PlotItem, names: tuple[str, ...] = ("top", "right")) -> None:
    """No SI prefix on `plot`'s axes `names` (by default the hidden top and right ones): a PlotItem's hidden
    axes follow every range change too, and each one re-set its label's HTML on every change (~1.4 ms a
    time on this machine), a third of a wide refresh's Python time."""
    for name in names:
        plot.getAxis(name).enableAutoSIPrefix(False)

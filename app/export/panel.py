"""One panel of an exported figure: a plot's axes, curves, legend and marker lines, laid out in points.

Everything is measured in points at print size (see figure.py): tick labels, the legend of what only this
panel draws (inside the emptiest corner when it covers nothing, else beside or under the plot; the runs are
named once for the figure), marker labels above the plot area at their lines. The figure lines panels up
(`bounds`: panels side by side share their plot's top and bottom, stacked ones its left and right, whatever
their legends), and the panel reports how much room its plot area got, so the figure can say when a chosen
height leaves a plot too small to read.
"""
from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QLineF, QRectF
from PySide6.QtGui import QColor, QPainter

from training_core.figures import PlotData, counts_steps, default_labels, short_label

from .axes import Tick, linear_range, linear_ticks, log_range, log_ticks, two_decades, whole_ticks
from .curves import LONE_POINT_PT, band_low, draw_curves, layers, line_path  # noqa: F401 - LONE_POINT_PT: tests read it
from .legend import Legend, best_corner, make_pen
from .markers import assign_marker_labels, draw_marker_labels, draw_marker_lines, label_row_height
from .text import PowerLabel, TextStyle

Bounds = tuple[float | None, float | None, float | None, float | None]  # left, top, right, bottom (pt) or None
MIN_AREA_IN = (1.1, 0.75)  # a plot area smaller than this (width, height) is too small to read in print


def empty_text(plot: str) -> str:
    """What an empty panel says: per-variable rows come every `--var-every` steps of a phase, so a short
    run can have losses and no update rows (it said "no data yet" of a finished run)."""
    if plot == "updates":
        return "no per-variable records"
    return "nothing recorded"


class Panel:
    def __init__(self, fig, plot: PlotData, cell: QRectF, letter: str | None, label_markers: bool,
                 dpi_equiv: float) -> None:
        self.fig, self.plot, self.cell, self.letter = fig, plot, cell, letter
        self.spec, self.theme = fig.spec, fig.theme
        self.label_markers, self.dpi = label_markers, dpi_equiv
        fs = self.spec.font_size
        self.fs = fs
        self.tick_style = TextStyle(max(4.0, fs - 1))
        self.power = PowerLabel(self.tick_style)
        self.label_style = TextStyle(fs)
        self.legend_style = TextStyle(max(4.0, fs - 1))
        self.marker_style = TextStyle(max(5.0, fs - 2))
        self.letter_style = TextStyle(fs + 1, bold=True)
        self.steps_axis = counts_steps(fig.data.x_unit)
        self.xlabel, self.ylabel = self.spec.axis_labels(plot.name, fig.data.x_unit)
        self.show_xlabel = bool(self.xlabel)
        self.grid = (0, 0)  # (row, column) in the figure
        #: the plot area's edges the figure imposes, to line this panel up with its neighbours
        self.bounds: Bounds = (None, None, None, None)
        #: the legend is drawn by the figure, in columns under the panel's whole row (band_legend.py)
        self.in_band = False
        # metrics are drawn as measured (a few points, not smoothed): no faint copy behind them
        self.show_raw = self.spec.raw and self.spec.smoothing > 0 and not plot.name.startswith("metric")
        self._data_ranges()

    # -- data -> axis units ----------------------------------------------------------------------
    def _drawn(self) -> list[np.ndarray]:
        """The values that end up on the axes. Frozen stretches show the measured value (exactly 0 with
        the exact method, the leak with the gate), not the EMA decaying towards it."""
        out = []
        for c in self.plot.curves:
            live = np.ones(len(c.values), bool) if c.frozen is None else ~c.frozen
            out += [c.smoothed[live], c.values[~live]]
            if c.is_band:  # on a log axis a metric's band may run off the bottom (curves.band_low)
                out += [c.high[live]] if self.plot.log_y and self.plot.name.startswith("metric/") else \
                    [c.low[live], c.high[live]]
            elif self.show_raw:
                out.append(c.values[live])
        return out

    def _data_ranges(self) -> None:
        self.xr = self.fig.x_range
        vals = np.concatenate([a[np.isfinite(a)] for a in self._drawn()] or [np.zeros(0)])
        self.floor = None
        if not self.plot.log_y:
            lo, hi = (float(vals.min()), float(vals.max())) if vals.size else (0.0, 1.0)
            if self.plot.name.startswith("metric/") and lo >= 0:  # counts and fractions: from 0
                lo, hi = 0.0, hi if hi > 0 else 1.0
            self.yr = linear_range(lo, hi)
            return
        pos = vals[vals > 0]
        lo = float(pos.min()) if pos.size else 1e-8
        hi = float(pos.max()) if pos.size else 1e-7
        ref = self.plot.reference
        if ref and lo / 100 <= ref <= hi * 100:
            lo, hi = min(lo, ref), max(hi, ref)
        lo, hi = two_decades(lo, hi)  # two labelled decades at least, above the "0" floor if there is one
        if self.plot.zero_floor and (vals <= 0).any():  # zeros sit one decade below the smallest real value
            self.floor = 10.0 ** (math.floor(math.log10(lo)) - 1)
            lo = self.floor
        self.yr = log_range(lo, hi)

    def ty(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=np.float64)
        if not self.plot.log_y:
            return v
        with np.errstate(divide="ignore", invalid="ignore"):
            if not self.plot.zero_floor:  # a loss <= 0 has no place on a log axis: a gap
                return np.where(np.isfinite(v) & (v > 0), np.log10(v), np.nan)
            floor = self.floor if self.floor is not None else 1e-300
            return np.where(np.isfinite(v), np.log10(np.maximum(v, floor)), np.nan)

    def X(self, v):
        a, b = self.xr
        return self.area.left() + (np.asarray(v, dtype=np.float64) - a) / (b - a) * self.area.width()

    def Y(self, v):
        a, b = self.yr
        return self.area.bottom() - (np.asarray(v, dtype=np.float64) - a) / (b - a) * self.area.height()

    # -- layout ----------------------------------------------------------------------------------
    def _yticks(self, height: float) -> list[Tick]:
        n = max(2, int(height / (self.tick_style.height * 2.4)))
        if not self.plot.log_y:  # at least two labelled ticks, or a reader cannot tell the scale
            ticks = linear_ticks(*self.yr, n, scientific=True)
            for more in range(n + 1, n + 6):
                if len(ticks) >= 2:
                    break
                ticks = linear_ticks(*self.yr, more, scientific=True)
            if self._whole_numbers():  # a count (modes covered): no tick at 0.5 of a mode
                ticks = whole_ticks(ticks)
            return ticks
        if self.floor is None:
            return log_ticks(*self.yr, n)
        # the decades above the "0" (the floor's own decade is no value: its labels would not count), and
        # no ticks between the "0" and the first real decade
        f = math.log10(self.floor)
        ticks = log_ticks(f + 1, self.yr[1], max(n - 1, 2))
        return [t for t in ticks if t.value >= f + 1 - 1e-9] + [Tick(f, "0")]

    def _whole_numbers(self) -> bool:
        vals = [c.values for c in self.plot.curves if len(c.values)]
        return self.plot.name.startswith("metric/") and bool(vals) and all(
            np.all(np.mod(v[np.isfinite(v)], 1.0) == 0) for v in vals)

    def _tick_w(self, t: Tick) -> float:
        return self.power.width(t.text, t.exponent) if t.text else 0.0

    def layout(self, legend_mode: str, legend: Legend | None) -> None:
        fs, c, ts = self.fs, self.cell, self.tick_style
        tl = self.theme.tick_length
        head = self.letter_style.height if self.letter else ts.height / 2
        top = c.top() + 0.6 * fs + max(head, self.rows * label_row_height(self) + 0.3 * fs)
        right_extra = below_extra = 0.0
        if legend_mode == "right" and legend:
            legend.ncol, legend.max_col = 1, None
            right_extra = legend.size()[0] + self._legend_gap() - max(self._half_last_tick(), 0.3 * fs)
        if legend_mode == "below" and legend:
            legend.fit_columns(c.width() - fs)
            below_extra = legend.size()[1] + 0.5 * fs
        self.x_block = tl + 0.3 * fs + ts.height + (0.4 * fs + self.label_style.height if self.show_xlabel else 0.0)
        bottom = c.bottom() - 0.4 * fs - self.x_block - below_extra
        b = self.bounds  # lined up with the neighbours: a step, or a value, at the same place in each
        top = max(top, b[1]) if b[1] is not None else top
        bottom = min(bottom, b[3]) if b[3] is not None else bottom
        for _ in range(3):  # down as far as keeps the top tick label clear of the panel letter
            self.yticks = self._yticks(bottom - top)
            ytw = max((self._tick_w(t) for t in self.yticks), default=0.0)
            left = c.left() + 0.4 * fs + self.label_style.height + 0.45 * fs + ytw + 0.3 * fs + tl
            left = max(left, b[0]) if b[0] is not None else left
            short = self._letter_overlap(left, top, bottom)
            if short <= 0:
                break
            top += short
        right = c.right() - 0.4 * fs - right_extra - max(self._half_last_tick(), 0.3 * fs)
        right = min(right, b[2]) if b[2] is not None else right
        self.area = QRectF(left, top, max(right - left, 10.0), max(bottom - top, 10.0))
        self.xticks = self._xticks()
        self.legend_mode, self.legend = legend_mode, legend

    def _letter_overlap(self, left: float, top: float, bottom: float) -> float:
        """How far (pt) the top labelled y tick's text reaches up into the panel letter's box (<= 0: clear), for a
        plot area from `top` to `bottom` whose y axis is at `left`. A tick label as wide as the column left of
        the axis ("0.0010" of (c), a sweep's high_quality at 7.16 in) reached under "(c)"."""
        labelled = [t for t in self.yticks if t.text]
        if not self.letter or not labelled:
            return 0.0
        fs, ts, tl = self.fs, self.tick_style, self.theme.tick_length
        t = max(labelled, key=lambda t: t.value)
        lx, ly = self.cell.left() + 0.4 * fs, self.cell.top() + 0.4 * fs
        letter_right, letter_bottom = lx + self.letter_style.width(self.letter), ly + self.letter_style.height
        text_right = left - tl - 0.3 * fs
        if text_right - self._tick_w(t) >= letter_right + 0.1 * fs:
            return 0.0
        a, b = self.yr
        y = bottom - (t.value - a) / (b - a) * (bottom - top)
        text_top = y + ts.cap / 2 - ts.ascent
        if t.exponent:  # the raised exponent reaches higher
            text_top = min(text_top, y + ts.cap / 2 - 0.62 * ts.cap - self.power.sup.ascent)
        return letter_bottom + 0.1 * fs - text_top

    def _xticks(self) -> list[Tick]:
        """As many ticks as fit with a gap between labels; 1000 -> 1k before giving up a tick."""
        ts = self.tick_style
        for n in range(max(2, int(self.area.width() / (ts.size * 5))), 1, -1):
            for compact in (False, True):
                ticks = linear_ticks(*self.xr, n, steps_axis=self.steps_axis, compact=compact)
                widest = max((ts.width(t.text) for t in ticks), default=0.0)
                if len(ticks) * (widest + 0.9 * self.fs) <= self.area.width():
                    return ticks
        return linear_ticks(*self.xr, 2, steps_axis=self.steps_axis, compact=True)

    def _choose_legend(self) -> None:
        self.legend_rect = None
        if not (self.spec.legend and self.plot.legend and not self.plot.empty) or self.in_band:
            self.layout("none", None)
            return
        legend = Legend(self.plot.legend, self.legend_style)
        self.layout("inside", legend)
        w, h = legend.size()
        a = self.area
        if w <= 0.6 * a.width() and h <= 0.8 * a.height():
            pts = self._obstacles()
            rect, covered = best_corner(a, (w, h), pts, inset=0.5 * self.fs)
            if covered == 0:
                self.legend_rect = rect
                return
        self.layout("right", legend)
        lw, lh = legend.size()
        right_area = self.area.width() * self.area.height()
        fits = lh <= self.cell.bottom() - self.area.top()
        if fits and self.area.width() >= max(0.4 * self.cell.width(), MIN_AREA_IN[0] * 72):
            self.legend_rect = QRectF(self._right_legend_x(lw), self.area.top(), lw, lh)
            return
        self.layout("below", legend)
        if fits and right_area > self.area.width() * self.area.height():  # both cramped: keep the larger plot
            self.layout("right", legend)
            self.legend_rect = QRectF(self._right_legend_x(lw), self.area.top(), lw, lh)
            return
        lw, lh = legend.size()
        self.legend_rect = QRectF(self.cell.center().x() - lw / 2,
                                  self.area.bottom() + self.x_block + 0.5 * self.fs, lw, lh)

    def _half_last_tick(self) -> float:
        """How far the last x tick label reaches past the plot's right edge."""
        return self.tick_style.width(linear_ticks(*self.xr, 2, steps_axis=self.steps_axis)[-1].text) / 2

    def _legend_gap(self) -> float:
        """Between the plot and a legend beside it: clear of the last x tick label, which a tall legend reaches."""
        return max(0.8 * self.fs, self._half_last_tick() + 0.5 * self.fs)

    def _right_legend_x(self, lw: float) -> float:
        """Beside the plot area (not at the cell's edge: a stacked panel's area may end short of it)."""
        return min(self.cell.right() - 0.4 * self.fs - lw, self.area.right() + self._legend_gap())

    def _obstacles(self) -> np.ndarray:
        """Points (in pt), one per pt of width, along every line drawn: what a legend must not cover."""
        xs = np.arange(self.area.left(), self.area.right() + 1.0, 1.0)
        out = []
        lines = [(x, y) for layer in layers(self) for _, x, y in layer]
        for c in self.plot.curves:  # a band is covered anywhere between its edges, not only along them
            if c.is_band:
                lo, hi = band_low(self, c), self.ty(c.high)
                lines += [(c.x, lo + f * (hi - lo)) for f in (0.0, 0.25, 0.5, 0.75, 1.0)]
        for x, y in lines:
            px, py = self.X(x), self.Y(y)
            ok = np.isfinite(py)
            if ok.sum() >= 2:
                ys = np.interp(xs, px[ok], py[ok], left=np.nan, right=np.nan)
                out.append(np.c_[xs, ys][np.isfinite(ys)])
        if self.plot.reference is not None:
            out.append(np.c_[xs, np.full(len(xs), float(self.Y(self.ty(np.array([self.plot.reference]))[0])))])
        return np.concatenate(out) if out else np.zeros((0, 2))

    # -- drawing ---------------------------------------------------------------------------------
    def prepare(self, rows: int | None = None) -> int:
        """Lay out the panel; `rows` asks for at least that many marker-label rows (to line up panels side by
        side). Laying out again for the rows the labels need can move the legend and so the markers' x,
        and the labels may then need another row: the rows only grow until they hold every label."""
        self.rows = rows or 0
        self._choose_legend()
        self.labels = assign_marker_labels(self)
        needed = max((f.top_row + 1 for f in self.labels), default=0)
        for _ in range(8):
            if needed <= self.rows:
                break
            self.rows = needed
            self._choose_legend()
            self.labels = assign_marker_labels(self)
            needed = max((f.top_row + 1 for f in self.labels), default=0)
        return self.rows

    def draw(self, p: QPainter) -> None:
        th, a = self.theme, self.area
        self._grid_and_reference(p)
        draw_marker_lines(self, p)
        if self.plot.empty:
            self.label_style.draw(p, a.center().x(), a.center().y(), empty_text(self.plot.name), QColor(th.muted),
                                  ha="center", va="center")
        draw_curves(self, p)
        self._axes(p)
        draw_marker_labels(self, p, self.labels)
        if self.legend is not None and self.legend_rect is not None:
            self.legend.draw(p, self.legend_rect.left(), self.legend_rect.top(), th,
                             frame=self.legend_mode == "inside")
        if self.letter:
            self.letter_style.draw(p, self.cell.left() + 0.4 * self.fs, self.cell.top() + 0.4 * self.fs,
                                   self.letter, QColor(th.foreground), va="top")

    def ylabel_text(self) -> str:
        """The y label drawn: the default's short form when the long one is taller than the plot."""
        ylabel, ls = self.ylabel, self.label_style
        lo, hi = self._ylabel_span()
        if ls.width(ylabel) > hi - lo and \
                ylabel == default_labels(self.plot.name, self.spec.update_kind)[1]:
            ylabel = short_label(ylabel)
        return ylabel

    @property
    def ylabel_fits(self) -> bool:
        """Whether the y label is drawn whole (else it is cut with "…": a height that fits it is recommended)."""
        lo, hi = self._ylabel_span()
        return self.label_style.width(self.ylabel_text()) <= hi - lo

    def _ylabel_span(self) -> tuple[float, float]:
        """(top, bottom) in pt the rotated y label may take: half a font size past the plot's top and bottom,
        but below the panel letter, which stands over the label's column: a label as tall as the plot (the
        three runs' "modes_covered" at 7.16 in) reached 1.5 pt into "(b)"."""
        a, fs = self.area, self.fs
        top = a.top() - 0.5 * fs
        if self.letter:
            top = max(top, self.cell.top() + 0.4 * fs + self.letter_style.height + 0.2 * fs)
        return top, a.bottom() + 0.5 * fs

    def _ylabel_centre(self, text: str) -> float:
        """The y label's centre: the plot's, moved down as little as keeps it in `_ylabel_span`."""
        lo, hi = self._ylabel_span()
        half = min(self.label_style.width(text), hi - lo) / 2
        return min(max(self.area.center().y(), lo + half), hi - half)

    def _grid_and_reference(self, p: QPainter) -> None:
        a, th = self.area, self.theme
        p.setPen(make_pen(QColor(th.grid), 0.4))
        for t in self.yticks:
            if t.text and (self.floor is None or t.text != "0"):
                y = float(self.Y(t.value))
                p.drawLine(QLineF(a.left(), y, a.right(), y))
        ref = self.plot.reference
        if ref is not None:
            v = float(self.ty(np.array([ref]))[0])
            if self.yr[0] <= v <= self.yr[1]:
                y = float(self.Y(v))
                p.setPen(make_pen(QColor(th.muted), 0.8, [3.0, 2.0]))
                p.drawLine(QLineF(a.left(), y, a.right(), y))

    def _path(self, x: np.ndarray, y: np.ndarray):
        return line_path(self, x, y)

    def _layers(self) -> list[list[tuple]]:
        return layers(self)

    def _axes(self, p: QPainter) -> None:
        a, th, fs, ts = self.area, self.theme, self.fs, self.tick_style
        fg = QColor(th.foreground)
        tl = th.tick_length
        p.setPen(make_pen(fg, th.axis_width))
        p.drawLine(QLineF(a.left(), a.top(), a.left(), a.bottom()))
        p.drawLine(QLineF(a.left(), a.bottom(), a.right(), a.bottom()))
        p.setPen(make_pen(fg, th.tick_width))
        for t in self.yticks:
            y = float(self.Y(t.value))
            p.drawLine(QLineF(a.left() - (tl if t.text else 0.6 * tl), y, a.left(), y))
        for t in self.xticks:
            x = float(self.X(t.value))
            p.drawLine(QLineF(x, a.bottom(), x, a.bottom() + tl))
        for t in self.yticks:
            if t.text:
                self.power.draw(p, a.left() - tl - 0.3 * fs, float(self.Y(t.value)), t.text, t.exponent, fg)
        for t in self.xticks:
            ts.draw(p, float(self.X(t.value)), a.bottom() + tl + 0.3 * fs, t.text, fg, ha="center", va="top")
        if self.floor is not None:  # an axis break between the "0" and the first decade
            y = float(self.Y(math.log10(self.floor) + 0.5))
            d = 0.35 * fs
            p.fillRect(QRectF(a.left() - d, y - 0.22 * fs, 2 * d, 0.44 * fs), QColor(th.background))
            p.setPen(make_pen(fg, th.axis_width))
            for off in (-0.2 * fs, 0.2 * fs):
                p.drawLine(QLineF(a.left() - d, y + off + 0.15 * fs, a.left() + d, y + off - 0.15 * fs))
        ls = self.label_style
        if self.show_xlabel:
            ls.draw(p, a.center().x(), a.bottom() + self.x_block - ls.height, self.xlabel, fg, ha="center", va="top")
        lo, hi = self._ylabel_span()
        text = ls.elide(self.ylabel_text(), hi - lo)
        ls.draw(p, self.cell.left() + 0.4 * fs, self._ylabel_centre(text), text, fg, ha="center", va="top",
                rotation=-90)

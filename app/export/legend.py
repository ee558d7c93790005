"""Legends: measuring, placing where they hide the least data, and drawing.

A panel's own legend follows what people do by hand for a paper: inside the axes in the emptiest corner
when it is small enough to cover (almost) nothing; otherwise beside the axes; otherwise under them in
columns, so a long legend never shrinks the plot to a sliver in a narrow journal column. The runs of an
overlay are named once for the whole figure (`FlowLegend`, across its top), not under each panel.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen

from training_core.figures import LegendEntry

from .text import TextStyle
from .theme import FROZEN_DASH, Theme


def colour_of(theme: Theme, colour: int | str) -> QColor:
    if colour == "fg":
        return QColor(theme.foreground)
    if colour == "muted":
        return QColor(theme.muted)
    return theme.colour(int(colour))


def make_pen(colour: QColor, width: float, dash: list[float] | None = None, dots: bool = False) -> QPen:
    """A non-cosmetic pen: its width is in points at print size, whatever the output's resolution."""
    pen = QPen(colour, width)
    pen.setCosmetic(False)
    pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
    pen.setCapStyle(Qt.PenCapStyle.RoundCap if dots else Qt.PenCapStyle.FlatCap)
    if dots:
        pen.setDashPattern(FROZEN_DASH)
    elif dash:
        pen.setDashPattern(dash)
    return pen


def entry_pen(theme: Theme, e: LegendEntry) -> QPen:
    return make_pen(colour_of(theme, e.colour), theme.line_width, e.dash, dots=e.frozen)


@dataclass
class Legend:
    entries: list[LegendEntry]
    style: TextStyle
    ncol: int = 1
    max_col: float | None = None  # a column no wider than this: longer labels are elided (`fit_columns`)

    def header_style(self) -> TextStyle:
        if not hasattr(self, "_header"):
            self._header = TextStyle(self.style.size, italic=True)
        return self._header

    @property
    def pad(self) -> float:
        return 0.45 * self.style.size

    @property
    def sample(self) -> float:
        return 1.6 * self.style.size

    @property
    def row_h(self) -> float:
        return self.style.height * 1.12

    def col_w(self) -> float:
        line = self.sample + 0.5 * self.style.size
        w = max((self.header_style().width(e.label) if e.colour is None else line + self.style.width(e.label)
                 for e in self.entries), default=0.0)
        return w if self.max_col is None else min(w, self.max_col)

    def size(self) -> tuple[float, float]:
        rows = math.ceil(len(self.entries) / self.ncol)
        gap = 1.0 * self.style.size
        return (2 * self.pad + self.ncol * self.col_w() + (self.ncol - 1) * gap, 2 * self.pad + rows * self.row_h)

    def fit_columns(self, max_width: float) -> None:
        gap = 1.0 * self.style.size
        self.max_col = None
        if self.col_w() > max_width - 2 * self.pad:  # a label wider than the room: cut, never past the page
            self.max_col = max(max_width - 2 * self.pad, self.sample)
        self.ncol = max(1, min(len(self.entries), int((max_width - 2 * self.pad + gap) // (self.col_w() + gap))))

    def draw(self, p: QPainter, x: float, y: float, theme: Theme, frame: bool = True) -> None:
        w, h = self.size()
        if frame:
            p.setPen(make_pen(QColor(theme.muted), theme.legend_frame_width))
            p.setBrush(QColor(theme.background))
            p.drawRect(QRectF(x, y, w, h))
            p.setBrush(Qt.BrushStyle.NoBrush)
        rows = math.ceil(len(self.entries) / self.ncol)
        gap = 1.0 * self.style.size
        # a tree (headers over their entries) reads down the columns; a flat list across the rows
        across = all(e.colour is not None for e in self.entries)
        for i, e in enumerate(self.entries):
            row, col = divmod(i, self.ncol) if across else divmod(i, rows)[::-1]
            ex = x + self.pad + col * (self.col_w() + gap)
            ey = y + self.pad + (row + 0.5) * self.row_h
            room = self.col_w()
            if e.colour is None:  # a header: the scope the entries below belong to
                hs = self.header_style()
                hs.draw(p, ex, ey, hs.elide(e.label, room), QColor(theme.foreground), va="center")
                continue
            draw_sample(p, theme, e, ex, ey, self.sample, self.style.height)
            self.style.draw(p, ex + self.sample + 0.5 * self.style.size, ey,
                            self.style.elide(e.label, room - self.sample - 0.5 * self.style.size),
                            QColor(theme.foreground), va="center")


def draw_sample(p: QPainter, theme: Theme, e: LegendEntry, x: float, y: float, length: float, height: float) -> None:
    """An entry's line sample at (x, y) to x + length; a group of seeds gets its band behind the line, filled and
    edged as the plot's bands (curves.py, with the theme's `band_*`)."""
    if e.band:
        colour = colour_of(theme, e.colour)
        fill = QColor(colour)
        fill.setAlphaF(theme.band_alpha)
        half = 0.3 * height
        p.fillRect(QRectF(x, y - half, length, 2 * half), fill)
        p.setPen(make_pen(theme.tint(colour, theme.band_edge_alpha), theme.band_edge_width))
        for edge in (y - half, y + half):
            p.drawLine(QLineF(x, edge, x + length, edge))
    p.setPen(entry_pen(theme, e))
    p.drawLine(QLineF(x, y, x + length, y))


class FlowLegend:
    """One legend for the figure: entries side by side, each as wide as it needs, in as many centred lines as
    the width takes; a header entry (colour None) is a note in italics (what a band means)."""

    def __init__(self, entries: list[LegendEntry], style: TextStyle, theme: Theme) -> None:
        self.entries, self.style, self.theme = entries, style, theme
        self.note_style = TextStyle(style.size, italic=True)
        self.sample, self.gap = 1.6 * style.size, 1.2 * style.size
        self.lines: list[list[tuple[LegendEntry, float]]] = []
        self.row_h = style.height * 1.12

    def width_of(self, e: LegendEntry) -> float:
        if e.colour is None:
            return self.note_style.width(e.label)
        return self.sample + 0.4 * self.style.size + self.style.width(e.label)

    def fit(self, width: float) -> None:
        self.lines = [[]]
        used = 0.0
        for e in self.entries:
            w = self.width_of(e)
            if self.lines[-1] and used + self.gap + w > width:
                self.lines.append([])
                used = 0.0
            used += (self.gap if self.lines[-1] else 0.0) + w
            self.lines[-1].append((e, w))

    @property
    def height(self) -> float:
        return len(self.lines) * self.row_h

    def draw(self, p: QPainter, x: float, y: float, width: float) -> None:
        fg = QColor(self.theme.foreground)
        for i, line in enumerate(self.lines):
            total = sum(w for _, w in line) + self.gap * (len(line) - 1)
            ex, ey = x + (width - total) / 2, y + (i + 0.5) * self.row_h
            for e, w in line:
                if e.colour is None:
                    self.note_style.draw(p, ex, ey, e.label, fg, va="center")
                else:
                    draw_sample(p, self.theme, e, ex, ey, self.sample, self.style.height)
                    self.style.draw(p, ex + self.sample + 0.4 * self.style.size, ey, e.label, fg, va="center")
                ex += w + self.gap


def best_corner(plot: QRectF, size: tuple[float, float], points: np.ndarray, inset: float) -> tuple[QRectF, int]:
    """The inside corner whose box covers the fewest of `points` (n x 2, in points); ties go clockwise
    from upper right, the conventional spot."""
    w, h = size
    corners = [
        (plot.right() - inset - w, plot.top() + inset),
        (plot.left() + inset, plot.top() + inset),
        (plot.right() - inset - w, plot.bottom() - inset - h),
        (plot.left() + inset, plot.bottom() - inset - h),
    ]
    best = None
    for cx, cy in corners:
        # a little margin around the box: a line grazing the frame reads as covered too
        m = 0.5 * inset
        inside = ((points[:, 0] >= cx - m) & (points[:, 0] <= cx + w + m)
                  & (points[:, 1] >= cy - m) & (points[:, 1] <= cy + h + m)) if len(points) else np.array([])
        n = int(inside.sum())
        if best is None or n < best[1]:
            best = (QRectF(cx, cy, w, h), n)
    return best

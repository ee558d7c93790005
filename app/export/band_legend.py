"""A panel's legend in columns under its whole row of panels, across the figure's width.

Why: side by side, the update plot's tall legend (a scope tree, the leaves' line styles, the frozen style, the
reference: a dozen entries) went in one column under its own panel; the row's plots share their bottom, so the
neighbour's cell was left empty under its plot and the figure was twice as tall as its plots needed (a 7.16 in
figure of losses and updates: 2.85 in, half of it blank). Under the row the entries take as few rows as the
figure's width allows, a scope's header keeping its layers in its column (`LegendEntry.under`), so no header
ends a column with its entries in the next. It is centred under the row's plots, from (a)'s axis to the last plot's
right edge (figure.py `_centre_bands`), so it reads as one legend for the row, not as (b)'s.
"""
from __future__ import annotations

from PySide6.QtGui import QColor, QPainter

from training_core.figures import LegendEntry

from .legend import draw_sample
from .text import TextStyle
from .theme import Theme


class BandLegend:
    """`fit(width)` packs the entries into columns no wider together than `width` (False if none does);
    `draw` draws them unframed, each column as wide as its widest entry."""

    def __init__(self, entries: list[LegendEntry], style: TextStyle, theme: Theme) -> None:
        self.entries, self.style, self.theme = entries, style, theme
        self.header = TextStyle(style.size, italic=True)
        self.pad, self.sample, self.gap = 0.45 * style.size, 1.6 * style.size, 1.2 * style.size
        self.row_h = style.height * 1.12
        self.columns: list[list[LegendEntry]] = []

    def _blocks(self) -> list[list[LegendEntry]]:
        """A header with the entries listed under it, or one entry: what a column break never splits."""
        out: list[list[LegendEntry]] = []
        for e in self.entries:
            if e.under and out and (out[-1][0].colour is None):
                out[-1].append(e)
            else:
                out.append([e])
        return out

    def width_of(self, e: LegendEntry) -> float:
        if e.colour is None:
            return self.header.width(e.label)
        return self.sample + 0.5 * self.style.size + self.style.width(e.label)

    def _column_widths(self, columns: list[list[LegendEntry]]) -> list[float]:
        return [max(self.width_of(e) for e in col) for col in columns]

    @staticmethod
    def _pack(blocks: list[list[LegendEntry]], rows: int) -> list[list[LegendEntry]]:
        columns: list[list[LegendEntry]] = [[]]
        for b in blocks:
            if columns[-1] and len(columns[-1]) + len(b) > rows:
                columns.append([])
            columns[-1].extend(b)
        return columns

    def fit(self, width: float) -> bool:
        """The fewest rows whose columns fit in `width` (pt), their padding included."""
        blocks = self._blocks()
        if not blocks:
            return False
        for rows in range(max(len(b) for b in blocks), len(self.entries) + 1):
            columns = self._pack(blocks, rows)
            if self._width(columns) <= width:
                self.columns = columns
                return True
        return False

    def _width(self, columns: list[list[LegendEntry]]) -> float:
        return 2 * self.pad + sum(self._column_widths(columns)) + self.gap * (len(columns) - 1)

    def size(self) -> tuple[float, float]:
        rows = max((len(c) for c in self.columns), default=0)
        return self._width(self.columns), 2 * self.pad + rows * self.row_h

    def draw(self, p: QPainter, x: float, y: float) -> None:
        fg = QColor(self.theme.foreground)
        ex = x + self.pad
        for col, cw in zip(self.columns, self._column_widths(self.columns)):
            for row, e in enumerate(col):
                ey = y + self.pad + (row + 0.5) * self.row_h
                if e.colour is None:
                    self.header.draw(p, ex, ey, e.label, fg, va="center")
                    continue
                draw_sample(p, self.theme, e, ex, ey, self.sample, self.style.height)
                self.style.draw(p, ex + self.sample + 0.5 * self.style.size, ey, e.label, fg, va="center")
            ex += cw + self.gap

"""The export figure: a snapshot of one run or several drawn with QPainter in points, for paper or screen.

Why its own drawing instead of grabbing the live pyqtgraph plots: a printed figure needs sizes in
points (text, line widths, ticks), not screen pixels; pyqtgraph's cosmetic pens come out one device
pixel wide in a 1200-dpi PDF and its SVG exporter fails under PySide6 6.11. Here the painter's unit is
one point, pens are non-cosmetic, fonts are set in those units (see text.py), and the same `paint()`
feeds the PNG, the SVG, the PDF, the clipboard and the dialog's preview, so they all agree.
Curves are min/max decimated to the output's resolution before drawing (training_core.figures.minmax_decimate).

Nothing is dropped for want of room: every marker label is drawn at its line, in as many rows above the
plot as the labels need, and `check()` says when the chosen height leaves a plot too small to read
(`recommended_height` gives one that does, rows of labels included). Several runs are named once, in a
legend across the top of the figure, not under every panel; and panels line up whatever their own legends
(side by side: one top and one bottom for their plots; stacked: one left and one right).
"""
from __future__ import annotations

import math
from typing import Sequence

from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QPainter

from training_core.figures import FigureData, FigureSpec, counts_steps
from training_core.runs import RunData

from .axes import step_range
from .band_legend import BandLegend
from .legend import FlowLegend
from .panel import MIN_AREA_IN, Panel
from .text import TextStyle
from .theme import Theme, theme_named

VECTOR_DPI = 200.0  # SVG/PDF curves keep 2-4 points per 1/200 in: far finer than a 1 pt line
MAX_HEIGHT_IN = 40.0  # the largest figure side a spec takes: no height past it is suggested

Runs = RunData | Sequence[tuple[str, RunData]]


class Figure:
    """`Figure(runs, spec).paint(painter)` draws the whole figure in (0, 0)-(width_pt, height_pt);
    `runs` is one `RunData` or a list of (label, RunData) to overlay."""

    def __init__(self, runs: Runs, spec: FigureSpec, groups: Sequence[Sequence[int]] | None = None,
                 names: Sequence[str] | None = None) -> None:
        """`groups` and `names`: with `spec.bands`, which runs are seeds of one setting and what the legend calls
        each group (default: by their configurations, named by what their labels share)."""
        self.spec = spec.copy()
        self.theme: Theme = theme_named(spec.theme)
        if isinstance(runs, RunData):
            self.data = FigureData.from_store(runs, self.spec)
        else:
            self.data = FigureData.from_runs(list(runs), self.spec, groups, names)
        self._laid_out: tuple | None = None
        self.legend: FlowLegend | None = None
        self.row_legends: list[tuple[BandLegend, float, float]] = []

    @property
    def size_pt(self) -> tuple[float, float]:
        return self.spec.size_pt

    @property
    def x_range(self) -> tuple[float, float]:
        """One x axis for all panels, so (a) and (b) line up step for step."""
        curves = [c for plot in self.data.plots for c in plot.curves if len(c.x)]
        first = min((float(c.x[0]) for c in curves), default=0.0)
        last = max((float(c.x[-1]) for c in curves), default=1.0)
        if counts_steps(self.data.x_unit):
            return step_range(int(first), int(last))
        return (0.0, last) if last > 0 else (0.0, 1.0)

    # -- layout ------------------------------------------------------------------------------------
    def layout(self, dpi_equiv: float = VECTOR_DPI) -> list[Panel]:
        """The panels for the figure's size, under the figure's legend of runs (if any)."""
        key = (dpi_equiv,)
        if self._laid_out is not None and self._laid_out[0] == key:
            return self._laid_out[1]
        w, h = self.size_pt
        top = 0.0
        self.legend = None
        self.row_legends: list[tuple[BandLegend, float, float]] = []  # (legend, x, y): under a row of panels
        self._band_rows: list[int] = []  # the row of panels each of row_legends is under
        if self.spec.legend and self.data.run_legend:
            fs = self.spec.font_size
            self.legend = FlowLegend(self.data.run_legend, TextStyle(max(4.0, fs - 1)), self.theme)
            self.legend.fit(w - 0.8 * fs)
            top = self.legend.height + 0.3 * fs
        panels = self._panels(w, h, top, dpi_equiv)
        self._laid_out = (key, panels)
        return panels

    def _panels(self, w: float, h: float, top: float, dpi_equiv: float) -> list[Panel]:
        n = len(self.data.plots)
        rows, cols = self._grid(n, w, h - top)
        ch = (h - top) / rows
        panels = []
        for i, plot in enumerate(self.data.plots):
            r, c = divmod(i, cols)
            cell = QRectF(c * w / cols, top + r * ch, w / cols, ch)
            letter = f"({chr(ord('a') + i)})" if n > 1 and self.spec.panel_labels else None
            panels.append(Panel(self, plot, cell, letter, label_markers=(i == 0), dpi_equiv=dpi_equiv))
            panels[-1].grid = (r, c)
        if cols == 1:  # stacked panels share the x axis: its label only under the bottom one
            for upper in panels[:-1]:
                upper.show_xlabel = upper.xlabel != panels[-1].xlabel
        for pn in panels:
            pn.prepare()
        self._band_legends(panels, w, h, top, cols)
        for _ in range(3):  # line the plots up: a row shares its top and bottom, a column its left and right
            bounds = {pn: self._bounds_of(pn, panels) for pn in panels}
            if all(bounds[pn] == pn.bounds for pn in panels):
                break
            for pn in panels:
                pn.bounds = bounds[pn]
                pn.prepare(pn.rows)
        self._centre_bands(panels, w)
        return panels

    def _band_legends(self, panels: list[Panel], w: float, h: float, top: float, cols: int) -> None:
        """A legend that went under its panel, or beside it (in a grid of several rows, whose column shares its
        left and right; side by side, when it squeezed the plot to under 60% of its cell), goes in columns under the
        panel's whole row, across the figure, when it is the row's only one: the neighbours' room under (or beside)
        their plots was left empty (band_legend.py), or, of several under their panels, the one whose names its cell
        would cut ("not trainable (moved: a l…)" at 3.5 in) while the figure's width holds them whole. The rows
        share what the bands leave of the height."""
        fs = self.spec.font_size
        stacked = len(panels) > cols  # a legend beside one plot of a column leaves the others' room beside empty
        rows = sorted({pn.grid[0] for pn in panels})
        bands: dict[int, tuple[BandLegend, Panel]] = {}
        for r in rows:
            row = [pn for pn in panels if pn.grid[0] == r and pn.legend is not None]
            below = [pn for pn in row if pn.legend_mode == "below"]
            beside = [pn for pn in row if pn.legend_mode == "right" and (
                stacked or (cols > 1 and pn.area.width() < 0.6 * pn.cell.width()))]
            # two legends under their panels fill the row's room, unless one is cut to its cell's width (its
            # names shortened, "discriminator/…", when the figure's width holds them); of those beside, the one
            # whose plot it squeezes most
            cut = [pn for pn in below if pn.legend.max_col is not None]
            owner = below[0] if len(below) == 1 else cut[0] if cut else None if below or not beside else \
                min(beside, key=lambda pn: pn.area.width())
            if owner is not None:
                band = BandLegend(owner.plot.legend, owner.legend_style, self.theme)
                if band.fit(w - 0.8 * fs):
                    bands[r] = (band, owner)
        if not bands:
            return
        ch = (h - top - sum(b.size()[1] for b, _ in bands.values())) / len(rows)
        y = top
        for r in rows:
            for pn in panels:
                if pn.grid[0] == r:
                    pn.cell = QRectF(pn.cell.left(), y, pn.cell.width(), ch)
            y += ch
            if r in bands:
                band, owner = bands[r]
                owner.in_band = True
                self.row_legends.append((band, 0.0, y))  # its x once the row's plots are lined up (_centre_bands)
                self._band_rows.append(r)
                y += band.size()[1]
        for pn in panels:
            pn.prepare()

    def _centre_bands(self, panels: list[Panel], w: float) -> None:
        """Each row's legend centred under its whole row of plots, from the first plot's left axis to the last
        plot's right edge: centred on the panel it came from (b), it sat under (a) only partly and read as
        (b)'s alone. Kept on the page (0.4 em from its edges) when it is wider than the row's plots."""
        fs = self.spec.font_size
        for i, (band, _, y) in enumerate(self.row_legends):
            areas = [pn.area for pn in panels if pn.grid[0] == self._band_rows[i]]
            bw = band.size()[0]
            x = (min(a.left() for a in areas) + max(a.right() for a in areas) - bw) / 2
            self.row_legends[i] = (band, min(max(x, 0.4 * fs), w - 0.4 * fs - bw), y)

    @staticmethod
    def _bounds_of(pn: Panel, panels: list[Panel]) -> tuple[float, float, float, float]:
        row = [q.area for q in panels if q.grid[0] == pn.grid[0]]
        col = [q.area for q in panels if q.grid[1] == pn.grid[1]]
        return (max(a.left() for a in col), max(a.top() for a in row), min(a.right() for a in col),
                min(a.bottom() for a in row))

    def _grid(self, n: int, w: float, h: float) -> tuple[int, int]:
        """(rows, columns): one row, one column, or with `auto` the grid whose panels are closest to a 3:2
        landscape (four panels at 7.16 in: two by two, not four slivers side by side); ties keep the fewer rows."""
        layout = self.spec.layout
        if layout != "auto":
            return (1, n) if layout == "row" else (n, 1)
        grids = list(dict.fromkeys((r, math.ceil(n / r)) for r in range(1, n + 1)))
        grids = [(r, c) for r, c in grids if (r - 1) * c < n]  # no empty row

        def cost(grid: tuple[int, int]) -> float:
            r, c = grid
            return abs(math.log((w / c) / (h / r) / 1.5))
        return min(grids, key=lambda g: (round(cost(g), 9), g[0]))

    def check(self) -> str:
        """'' if every plot area is large enough to read, else one line naming the problem and the fix."""
        panels = self.layout()
        small = [pn for pn in panels
                 if pn.area.width() < MIN_AREA_IN[0] * 72 - 0.5 or pn.area.height() < MIN_AREA_IN[1] * 72 - 0.5]
        cut = [pn for pn in panels if not pn.ylabel_fits]
        if not small and cut:
            better = recommended_height(self.spec, self.data)
            return (f"at {self.spec.width_in:.2f} × {self.spec.height_in:.2f} in, the y label of plot "
                    f"{cut[0].plot.name} is cut short; use a height of at least {better:.2f} in (or a shorter label)")
        if not small:
            return ""
        def room(pn: Panel) -> float:
            return min(pn.area.width() / (MIN_AREA_IN[0] * 72), pn.area.height() / (MIN_AREA_IN[1] * 72))

        worst = min(small, key=room)
        narrow = worst.area.width() < MIN_AREA_IN[0] * 72 - 0.5
        n = len(self.data.plots)
        rows, cols = self._grid(n, *self.size_pt)
        better = recommended_height(self.spec, self.data)
        # the advice follows what is short: a taller page, or, at a width where no height helps, a wider one
        fix = (f"use a height of at least {better:.2f} in" if better < MAX_HEIGHT_IN
               else "no height is enough at this width: make it wider")
        others = ["fewer plots"] + (["a column layout"] if narrow and cols > 1 else []) \
            + (["a row layout"] if not narrow and rows > 1 else [])
        return (f"at {self.spec.width_in:.2f} × {self.spec.height_in:.2f} in, plot {worst.plot.name} gets only "
                f"{worst.area.width() / 72:.2f} × {worst.area.height() / 72:.2f} in; {fix} "
                f"(or {', or '.join(others)})")

    # -- drawing -----------------------------------------------------------------------------------
    def paint(self, p: QPainter, dpi_equiv: float = VECTOR_DPI) -> None:
        w, h = self.size_pt
        panels = self.layout(dpi_equiv)
        p.save()
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        p.fillRect(QRectF(0, 0, w, h), QColor(self.theme.background))
        if self.legend is not None:
            self.legend.draw(p, 0.0, 0.15 * self.spec.font_size, w)
        for pn in panels:
            pn.draw(p)
        for band, x, y in self.row_legends:
            band.draw(p, x, y)
        p.restore()


def recommended_height(spec: FigureSpec, data: FigureData | None = None, runs: Runs | None = None) -> float:
    """The smallest height (inches, to 0.05) at which every plot area of the figure is readable
    (`MIN_AREA_IN`, and its y label whole) for the spec's width, layout and number of plots, its marker labels'
    rows and its legend of runs included: what the CLI uses when no height is
    given and what the export dialog suggests."""
    if data is None:
        data = Figure(runs, spec).data
    probe = Figure.__new__(Figure)
    probe.theme, probe.data, probe.legend = theme_named(spec.theme), data, None
    for tenths in range(int(max(spec.width_in / 6, 1.0) * 20), int(MAX_HEIGHT_IN) * 20 + 1):
        probe.spec, probe._laid_out = spec.copy(height_in=tenths / 20), None
        # readable: large enough, and tall enough for its y label in full (a user's label is never cut)
        if not any(pn.area.width() < MIN_AREA_IN[0] * 72 - 0.5 or pn.area.height() < MIN_AREA_IN[1] * 72 - 0.5
                   or not pn.ylabel_fits for pn in probe.layout()):
            return tenths / 20
    return MAX_HEIGHT_IN

"""Vertical lines at the steps where the user changed something or an alarm went off.

Both step plots show every store marker: control changes (freeze, ratio, lr, method) in one colour,
pauses in grey, alarms (NaN, leak) in red, so a change in a curve can be read against its cause.
Markers only ever get appended during a run, so lines are added for the new ones only.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore

from app.store import Marker, MetricsStore

from . import palette

MAX_LABEL = 28  # characters; the full label is in the tooltip
LABEL_ROWS = (0.96, 0.86, 0.76, 0.66, 0.56)  # label heights, as fractions of the plot height
GAP_PX = 6


class MarkerLines:
    def __init__(self, plots: list[pg.PlotItem]) -> None:
        self.plots = plots
        self.lines: list[list[pg.InfiniteLine]] = [[] for _ in plots]
        self.markers: list[Marker] = []

    def update(self, store: MetricsStore) -> None:
        if len(store.markers) < len(self.markers):
            self.clear()
        new = store.markers[len(self.markers):]
        for m in new:
            self.markers.append(m)
            for plot, lines in zip(self.plots, self.lines):
                line = _line(m)
                plot.addItem(line, ignoreBounds=True)
                lines.append(line)
        if new:
            self.place_labels()

    def place_labels(self) -> None:
        """Put each label where it overlaps no other: right of its line (left near the right edge), in
        the highest free row. Runs on new markers and on view changes; a handful of items, cheap."""
        for plot, lines in zip(self.plots, self.lines):
            (x0, x1), width = plot.vb.viewRange()[0], plot.vb.width()
            if not lines or x1 <= x0 or width <= 0:
                continue
            taken: list[list[tuple[float, float]]] = [[] for _ in LABEL_ROWS]
            for line in sorted(lines, key=lambda ln: ln.value()):
                px = (line.value() - x0) / (x1 - x0) * width
                w = line.label.boundingRect().width()
                right = px + GAP_PX + w < width
                span = (px, px + w + GAP_PX) if right else (px - w - GAP_PX, px)
                row = next((i for i, spans in enumerate(taken)
                            if all(span[1] <= a or span[0] >= b for a, b in spans)), len(LABEL_ROWS) - 1)
                taken[row].append(span)
                anchor = (0, 0.5) if right else (1, 0.5)
                line.label.anchors = [anchor, anchor]
                line.label.setPosition(LABEL_ROWS[row])

    def lines_of(self, index: int) -> list[pg.InfiniteLine]:
        """The marker lines of plot `index` (0 losses, 1 updates), in store order."""
        return self.lines[index]

    def clear(self) -> None:
        for plot, lines in zip(self.plots, self.lines):
            for line in lines:
                plot.removeItem(line)
            lines.clear()
        self.markers.clear()


def _line(m: Marker) -> pg.InfiniteLine:
    color = palette.marker_color(m.kind)
    alarm = m.kind in ("nan", "leak")
    text = m.label if len(m.label) <= MAX_LABEL else m.label[:MAX_LABEL - 1] + "…"
    text = text.replace("{", "{{").replace("}", "}}")  # the label is a format string for the line's value
    line = pg.InfiniteLine(pos=m.step, angle=90, movable=False,
                           pen=pg.mkPen(color, width=2 if alarm else 1.2,
                                        style=QtCore.Qt.PenStyle.SolidLine if alarm else QtCore.Qt.PenStyle.DashLine),
                           label=text, labelOpts={"position": LABEL_ROWS[0], "color": color, "rotateAxis": None,
                                                  "anchors": [(0, 0.5), (0, 0.5)],
                                                  "fill": pg.mkBrush(255, 255, 255, 200)})
    line.setToolTip(f"step {m.step}: {m.label}")
    line.setZValue(5)
    line.marker = m
    return line

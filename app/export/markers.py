"""Event markers on a panel: dashed vertical lines at control and alarm events, labelled above the axes.

Labels sit above the plot area, never over data, so they stay legible at 6 pt in print; a label
that finds no room in two rows is left out and its line still marks the step.
"""
from __future__ import annotations

from PySide6.QtCore import QLineF
from PySide6.QtGui import QPainter

from .legend import make_pen

MARKER_DASH = [3.0, 3.0]  # in pen widths: finer than the data's dashed "bias" lines
LABEL_ROWS = 2


def visible_markers(panel) -> list[tuple[float, str, str]]:
    """(x in pt, kind, label) of the markers inside the panel's step range, in step order."""
    if not panel.spec.markers:
        return []
    lo, hi = panel.xr
    return [(float(panel.X(s)), k, lab) for s, k, lab in sorted(panel.fig.data.markers) if lo <= s <= hi]


def assign_marker_labels(panel) -> list[tuple[float, int, str, str]]:
    """(left, row, kind, text) per label: left-aligned at its line (right-aligned near the edge),
    in the first row where it does not touch the previous label."""
    if not panel.label_markers:
        return []
    ms, a, fs = panel.marker_style, panel.area, panel.fs
    row_right = [-1e9] * LABEL_ROWS
    out = []
    for x, kind, label in visible_markers(panel):
        room_right, room_left = panel.cell.right() - 0.3 * fs - x, x - a.left()
        text = ms.elide(label, max(room_right, room_left))
        w = ms.width(text)
        left = x if w <= room_right else x - w
        for r in range(LABEL_ROWS):
            if left > row_right[r] + 0.6 * fs:
                row_right[r] = left + w
                out.append((left, r, kind, text))
                break
    return out


def label_row_height(panel) -> float:
    return panel.marker_style.height * 1.05


def draw_marker_lines(panel, p: QPainter) -> None:
    a, th = panel.area, panel.theme
    for x, kind, _ in visible_markers(panel):
        p.setPen(make_pen(th.marker_colour(kind), th.marker_width, MARKER_DASH))
        p.drawLine(QLineF(x, a.top(), x, a.bottom()))


def draw_marker_labels(panel, p: QPainter, labels: list[tuple[float, int, str, str]]) -> None:
    for left, r, kind, text in labels:
        y = panel.area.top() - 0.3 * panel.fs - r * label_row_height(panel)
        panel.marker_style.draw(p, left, y, text, panel.theme.marker_text_colour(kind), va="bottom")

"""Event markers on a panel: dashed vertical lines at control and alarm events, each labelled at its line.

Labels sit in a band above the plot area, never over data, so they stay legible at 6 pt in print. Each
starts just right of its own line (or ends just left of it near the right edge), and the line goes on up to
its label's row, so a reader follows the line to its label (training_core/figures/markers.py chooses the rows
and sides: no label touches another, no line runs through a label). None is dropped and none becomes a
footnote: the band takes the rows its labels need and the figure grows to hold them. Runs of the same label
in a row (every Step click pauses) become one label with a count ("pause (step) ×12").

The band spans the plot's width and the margin to its right, not the whole cell: left of the plot are the
panel letter "(a)" and the y axis's top tick label, which a label pushed there overprinted. A label too wide
for the room beside its line is wrapped onto more rows (training_core/figures/markers.py: `label_lines`),
each line starting (or, on the line's left, ending) at its line.
"""
from __future__ import annotations

from PySide6.QtCore import QLineF
from PySide6.QtGui import QPainter

from training_core.figures import Flag, label_lines, merge_repeats, place_flags, repeat_text

from .legend import make_pen

MARKER_DASH = [3.0, 3.0]  # in pen widths: finer than the data's dashed "bias" lines
LEADER_WIDTH = 0.5  # pt: the line's way up to its label, solid (it is no data)


def visible_markers(panel) -> list[tuple[float, str, str]]:
    """(x in pt, kind, label) of the markers inside the panel's x range, in order along the axis."""
    lo, hi = panel.xr
    return [(float(panel.X(m.x)), m.kind, m.label) for m in panel.fig.data.markers if lo <= m.x <= hi]


def gap(panel) -> float:
    """Between a line and the start of its label's text."""
    return 0.3 * panel.fs


def assign_marker_labels(panel) -> list[Flag]:
    """A flag per (merged) marker of the labelling panel, at its line, inside the band: from the plot's left edge
    to the panel's cell's right (clear of the panel letter and the y ticks, left of the plot, and of the next
    panel), wrapped where it is too wide for the room beside its line."""
    if not panel.label_markers:
        return []
    lo_x, hi_x = panel.xr
    ms, fs = panel.marker_style, panel.fs
    lo, hi = panel.area.left(), panel.cell.right() - 0.3 * fs
    merged = merge_repeats([m for m in panel.fig.data.markers if lo_x <= m.x <= hi_x])
    xs = [float(panel.X(m.x)) for m, _ in merged]
    texts = [label_lines(repeat_text(m, n), x, lo, hi, gap(panel), ms.width) for (m, n), x in zip(merged, xs)]
    flags = place_flags(xs, [max(ms.width(t) for t in lines) for lines in texts], lo, hi, gap(panel), 0.6 * fs,
                        [len(lines) for lines in texts])
    for f, lines, (m, n) in zip(flags, texts, merged):
        f.text, f.lines, f.kind = repeat_text(m, n), tuple(lines), m.kind
    return flags


def label_row_height(panel) -> float:
    return panel.marker_style.height * 1.05


def row_bottom(panel, row: int) -> float:
    """The bottom of the text in label row `row` (0: next to the plot)."""
    return panel.area.top() - 0.3 * panel.fs - row * label_row_height(panel)


def label_rect(panel, f: Flag) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of a flag's text, all its lines, in pt."""
    return f.left, row_bottom(panel, f.top_row) - panel.marker_style.height, f.right, row_bottom(panel, f.row)


def draw_marker_lines(panel, p: QPainter) -> None:
    a, th = panel.area, panel.theme
    for x, kind, _ in visible_markers(panel):
        p.setPen(make_pen(th.marker_colour(kind), th.marker_width, MARKER_DASH))
        p.drawLine(QLineF(x, a.top(), x, a.bottom()))


def draw_marker_labels(panel, p: QPainter, flags: list[Flag]) -> None:
    """Each label in its rows (a line of its text a row, the first at the top; on the line's left each ends at
    it), and its line drawn on from the plot's top to the cap height of the label's first line."""
    ms, th = panel.marker_style, panel.theme
    for f in flags:
        cap_top = row_bottom(panel, f.top_row) - ms.descent - ms.cap
        p.setPen(make_pen(th.marker_colour(f.kind), LEADER_WIDTH))
        p.drawLine(QLineF(f.x, panel.area.top(), f.x, cap_top))
        for k, line in enumerate(f.lines or (f.text,)):
            left = f.left if f.side == "right" else f.right - ms.width(line)
            ms.draw(p, left, row_bottom(panel, f.top_row - k), line, th.marker_text_colour(f.kind), va="bottom")

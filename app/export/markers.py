"""Event markers on a panel: dashed vertical lines at control and alarm events, labelled above the axes.

Labels sit above the plot area, never over data, so they stay legible at 6 pt in print. None is
dropped: runs of the same label in a row (every Step click pauses) become one label with a count
("pause (step) ×12"); a label that finds no room in the rows above the plot becomes a number at its
line, with the full text in a footnote list under the figure (`Footnotes`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QLineF
from PySide6.QtGui import QColor, QPainter

from .legend import make_pen
from .text import TextStyle

MARKER_DASH = [3.0, 3.0]  # in pen widths: finer than the data's dashed "bias" lines
LABEL_ROWS = 2  # rows for labels in full; footnote numbers may take up to NUMBER_ROWS
NUMBER_ROWS = 4


@dataclass
class Label:
    left: float  # pt
    row: int
    kind: str
    text: str  # what is drawn at the line: the label, or its footnote number(s) ("3", "3–5")
    notes: list[tuple[str, str]] = field(default_factory=list)  # (number, full label) of footnoted markers


def visible_markers(panel) -> list[tuple[float, str, str]]:
    """(x in pt, kind, label) of the markers inside the panel's x range, in order along the axis."""
    if not panel.spec.markers:
        return []
    lo, hi = panel.xr
    return [(float(panel.X(s)), k, lab) for s, k, lab in sorted(panel.fig.data.markers) if lo <= s <= hi]


def merged_markers(panel) -> list[tuple[float, str, str]]:
    """Consecutive markers with the same label as one: "pause (step) ×12" at the first of them."""
    out: list[list] = []
    for x, kind, label in visible_markers(panel):
        if out and out[-1][2] == label and out[-1][1] == kind:
            out[-1][3] += 1
        else:
            out.append([x, kind, label, 1])
    return [(x, kind, label if n == 1 else f"{label} ×{n}") for x, kind, label, n in out]


def assign_marker_labels(panel, number_from: int = 1) -> list[Label]:
    """A label per (merged) marker: left-aligned at its line (right-aligned near the edge) in the first
    row where it does not touch the previous label; else its footnote number, wherever that fits."""
    if not panel.label_markers:
        return []
    ms, a, fs = panel.marker_style, panel.area, panel.fs
    row_right = [-1e9] * NUMBER_ROWS
    out: list[Label] = []
    number = number_from

    def place(x: float, text: str, rows: int = LABEL_ROWS) -> tuple[float, int] | None:
        w = ms.width(text)
        room_right = panel.cell.right() - 0.3 * fs - x
        if w > max(room_right, x - panel.cell.left() - 0.3 * fs):
            return None
        left = x if w <= room_right else x - w
        for r in range(rows):
            if left > row_right[r] + 0.6 * fs:
                row_right[r] = left + w
                return left, r
        return None

    last: tuple[Label, float, int] | None = None  # the latest footnote label, its line's x, its first number
    for x, kind, label in merged_markers(panel):
        got = place(x, label)
        if got is not None:
            out.append(Label(got[0], got[1], kind, label))
            last = None
            continue
        tag = str(number)
        if last is not None and x - last[1] < ms.width(f"{number}–{number}") + 0.6 * fs:
            # lines too close for a number each: one label for the run of them ("3–5") at the first line
            lab, _, first = last
            lab.text = f"{first}–{number}"
            lab.notes.append((tag, label))
            row_right[lab.row] = max(row_right[lab.row], lab.left + ms.width(lab.text))
            number += 1
            continue
        got = place(x, tag, NUMBER_ROWS)
        if got is None:  # even the number has no room: the top row, over its neighbour, never left out
            got = (x - ms.width(tag) / 2, NUMBER_ROWS - 1)
        lab = Label(got[0], got[1], kind, tag, [(tag, label)])
        out.append(lab)
        last = (lab, x, number)
        number += 1
    return out


def label_row_height(panel) -> float:
    return panel.marker_style.height * 1.05


def draw_marker_lines(panel, p: QPainter) -> None:
    a, th = panel.area, panel.theme
    for x, kind, _ in visible_markers(panel):
        p.setPen(make_pen(th.marker_colour(kind), th.marker_width, MARKER_DASH))
        p.drawLine(QLineF(x, a.top(), x, a.bottom()))


def draw_marker_labels(panel, p: QPainter, labels: list[Label]) -> None:
    for lab in labels:
        y = panel.area.top() - 0.3 * panel.fs - lab.row * label_row_height(panel)
        panel.marker_style.draw(p, lab.left, y, lab.text, panel.theme.marker_text_colour(lab.kind), va="bottom")


class Footnotes:
    """The labels that had no room, numbered, in lines under the figure: "1 lr D=5e-05  2 freeze: …"."""

    def __init__(self, fig, width: float) -> None:
        self.fig, self.width = fig, width
        self.style = TextStyle(max(5.0, fig.spec.font_size - 2))
        self.notes: list[tuple[str, str, str]] = []  # (number, kind, text)
        self.top = 0.0

    def collect(self, panels: list) -> None:
        self.notes = [(n, lab.kind, text) for pn in panels for lab in pn.labels for n, text in lab.notes]

    def _lines(self) -> list[list[tuple[float, str, str, str]]]:
        pad, gap = 0.4 * self.fig.spec.font_size, 1.2 * self.style.size
        lines: list[list] = [[]]
        x = pad
        for number, kind, text in self.notes:
            full = f"{number} {text}"
            w = self.style.width(full)
            if lines[-1] and x + w > self.width - pad:
                lines.append([])
                x = pad
            lines[-1].append((x, number, kind, text))
            x += w + gap
        return lines if self.notes else []

    def height(self) -> float:
        lines = self._lines()
        return len(lines) * self.style.height * 1.15 + 0.4 * self.fig.spec.font_size if lines else 0.0

    def draw(self, p: QPainter) -> None:
        th, st = self.fig.theme, self.style
        for i, line in enumerate(self._lines()):
            y = self.top + i * st.height * 1.15
            for x, number, kind, text in line:
                st.draw(p, x, y, number, th.marker_text_colour(kind), va="top")
                st.draw(p, x + st.width(number + " "), y, text, QColor(th.foreground), va="top")

"""Vertical lines at the steps where the user changed something or an alarm went off, with their labels.

Both step plots show every marker of every shown run: control changes (freeze, ratio, lr, method) in
one colour, pauses in grey, alarms (NaN, leak) in red, so a change in a curve can be read against its
cause. Markers only ever get appended during a run, so items are added for the new ones only.

Every Step and every pause adds one, so a session of stepping through training leaves hundreds. As
pyqtgraph InfiniteLines, each one re-laid itself out in Python on every view change and painted from
Python (with the GIL held): the benchmark's 600-step chunks left the GUI thread ~40% busy with them.
Here the lines of one look are a single C++-painted `Stroke` per plot, rebuilt when the view moves,
and labels are QGraphicsTextItems (painted by Qt) placed in pixels.

Labels sit in a band above the plot area (the plot's title row, grown to `LABEL_ROWS` rows), never
over the curves. A label is shown in full where it fits (right of its line, else left of it), in the
highest free row; consecutive markers with the same label share one ("pause (step) ×12"), and so do
markers of one kind at one step ("leak: discriminator (4 variables)", as the export says it); a label
with no room shows its short form (the kind), or a "+"; labels never overprint: one with no room even
for a "+" has its line alone, and the nearest label to its left names it in its tooltip. None is
dropped without a trace: the tooltips and the Runs tab's event list hold the full text. Markers out of
view have no label.
"""
from __future__ import annotations

import html

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from training_core.figures import LEAK_PREFIX, leak_text
from training_core.runs import Marker

from . import palette
from .canvas import Stroke, view_offsets
from .plot_view import PlotView
from .tight import TITLE_PX

LABEL_ROWS = 3  # at most; the band above a plot is as tall as its labels need (0 without markers)
ROW_PX = 17  # height of a label row (a line of the default font, without the text item's margin)
GAP_PX = 6
TITLE_GAP_PX = 6  # a title's text reaches this far below its row (its 8 pt text item is 21 px tall)
SHORT = {"freeze": "freeze", "ratio": "ratio", "lr": "lr", "method": "method", "pause": "pause", "nan": "NaN",
         "leak": "leak"}


class MarkerLine:
    """One marker on one plot: its x, look and label (the line itself is drawn by the plot's strokes)."""

    def __init__(self, m: Marker, x: float, text: str, plot: pg.PlotItem) -> None:
        self.marker = m
        self.x = x
        self.text = text
        self._vb = plot.vb
        alarm = m.kind in ("nan", "leak")
        color = palette.marker_color(m.kind)
        self.pen = pg.mkPen(color, width=2 if alarm else 1.2,
                            style=QtCore.Qt.PenStyle.SolidLine if alarm else QtCore.Qt.PenStyle.DashLine)
        self.label = QtWidgets.QGraphicsTextItem(plot)
        self.label.document().setDocumentMargin(0)
        self.label.setDefaultTextColor(QtGui.QColor(color))
        self.tip = f"step {m.step:,}: {text}"
        self.label.setToolTip(self.tip)
        self.label.setZValue(6)
        self.repeats = 1  # how many markers in a row its label stands for (0: none, another's label or none shown)
        self.shown = ""
        self.set_text(text)

    def set_text(self, text: str) -> None:
        """What the label shows now (the full text, its short form, or "+")."""
        if text != self.shown:
            self.shown = text
            self.label.setHtml(f'<span style="background-color: rgba(255,255,255,210)">{html.escape(text)}</span>')

    @property
    def look(self) -> tuple:
        """Markers that look alike share one stroke."""
        return (self.pen.color().name(), self.pen.style(), self.pen.widthF())

    def value(self) -> float:
        return self.x

    def getViewBox(self) -> pg.ViewBox:  # noqa: N802 (pyqtgraph's name, as tests and callers use it)
        return self._vb


def _same_change(a: MarkerLine, b: MarkerLine) -> bool:
    return a.marker.kind == b.marker.kind and a.marker.label == b.marker.label


def _same_kind_and_step(a: MarkerLine, b: MarkerLine) -> bool:
    return a.marker.kind == b.marker.kind and a.marker.step == b.marker.step


def merged_label(kind: str, labels: list[str]) -> str:
    """One label for markers of one kind at one step with different texts: "leak: discriminator (4 variables)"
    for four leaking variables (the export's words, `leak_text`), "NaN ×2" for other kinds. Why: a label per
    variable filled the band's rows and pushed the rest aside; the tooltip lists each."""
    distinct = list(dict.fromkeys(labels))
    if kind != "leak":
        return f"{SHORT.get(kind, kind)} ×{len(distinct)}"
    return leak_text([lb.removeprefix(LEAK_PREFIX) for lb in distinct])


class _PlotMarkers:
    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.lines: list[MarkerLine] = []
        self.strokes: dict[tuple, Stroke] = {}
        self.pens: dict[tuple, QtGui.QPen] = {}
        self.rows = 0
        # a titled plot (the update plot) keeps its title at the band's top, the label rows under it: a marker
        # near the run's start printed its label over "update magnitude per variable"
        self.floor = TITLE_PX if plot.titleLabel.text else 0
        plot.layout.setRowFixedHeight(0, self.floor)  # the title row: the labels' band, grown as labels need
        plot.vb.sigRangeChanged.connect(self.layout)
        plot.vb.sigResized.connect(self.layout)

    def add(self, m: Marker, x: float, text: str) -> None:
        line = MarkerLine(m, x, text, self.plot)
        self.lines.append(line)
        if line.look not in self.strokes:
            stroke = Stroke()
            stroke.set_pen(line.pen)
            stroke.setZValue(5)
            self.plot.addItem(stroke, ignoreBounds=True)
            self.strokes[line.look] = stroke
            self.pens[line.look] = line.pen

    def layout(self, *_args) -> None:
        """Lines from the bottom to the top of the view; labels in the band above it (module docstring)."""
        vb = self.plot.vb
        (x0, x1), (y0, y1) = vb.viewRange()
        width, height = vb.width(), vb.height()
        if not self.lines or x1 <= x0 or width <= 0 or height <= 0:
            for stroke in self.strokes.values():
                stroke.set_path(QtGui.QPainterPath())
            for line in self.lines:
                line.label.hide()
            self._set_rows(0 if not self.lines else self.rows)
            return
        paths = {look: QtGui.QPainterPath() for look in self.strokes}
        for line in self.lines:
            path = paths[line.look]
            path.moveTo(line.value(), y0)
            path.lineTo(line.value(), y1)
        for look, stroke in self.strokes.items():
            stroke.set_path(paths[look], view_offsets(self.pens[look], vb))  # alarms: two pixels wide
        self._place_labels(vb, x0, x1, width)

    def _place_labels(self, vb: pg.ViewBox, x0: float, x1: float, width: float) -> None:
        geo = vb.geometry()  # the view box in the plot item's coordinates
        px = (x1 - x0) / width
        taken: list[list[tuple[float, float]]] = [[] for _ in range(LABEL_ROWS)]
        used = 0
        shown: list[tuple[float, MarkerLine]] = []
        unplaced: list[tuple[float, MarkerLine]] = []
        for line, repeats, x, full, tips in self._visible_runs(x0, px, width):
            line.repeats = repeats
            count = f" ×{repeats}" if repeats > 1 else ""  # part of the text before it is placed: never clipped
            placed = None
            for text in (full + count, SHORT.get(line.marker.kind, line.marker.kind) + count, "+"):
                line.set_text(text)
                placed = self._free_spot(taken, x, line.label.boundingRect().width(), width)
                if placed is not None:
                    break
            line.label.setToolTip("\n".join([line.tip, *tips]))
            if placed is None:  # no room even for "+": a label over its neighbour's would hide both
                line.label.hide()
                unplaced.append((x, line))
                continue
            left, row = placed
            line.label.setPos(geo.left() + left, geo.top() - (row + 1) * ROW_PX)
            line.label.show()
            shown.append((x, line))
            used = max(used, row + 1)
        for x, line in unplaced:  # named in the tooltip of the nearest label to its left (else its right)
            left = [s for s in shown if s[0] <= x]
            host = max(left, key=lambda s: s[0]) if left else min(shown, key=lambda s: s[0], default=None)
            if host is not None:
                host[1].label.setToolTip(host[1].label.toolTip() + "\n" + line.tip)
        self._set_rows(used)

    def _visible_runs(self, x0: float, px: float, width: float) -> list[tuple[MarkerLine, int, float, str, list]]:
        """(line, how many times its label comes in a row, x in pixels, its text, the tooltips of the others it
        stands for) of the lines in view; the repeats after the first are hidden (their count goes on the
        first's label)."""
        out: list[list] = []
        for line in sorted(self.lines, key=lambda ln: ln.value()):
            x = (line.value() - x0) / px
            line.repeats = 0  # shown by another's label, or out of view
            if not -0.5 <= x <= width + 0.5:
                line.label.hide()
            elif out and out[-1][0].text == line.text and out[-1][0].marker.kind == line.marker.kind:
                out[-1][1] += 1
                line.label.hide()
            elif out and abs(out[-1][2] - x) < 1 and _same_change(out[-1][0], line):
                # several runs' same change at one step (a sweep's planned freeze): one label, not a stack of
                # them filling the band above the plot; each is in its tooltip
                out[-1][1] += 1
                out[-1][3] = line.marker.label
                out[-1][4].append(line.tip)
                out[-1][5].append(line.marker.label)
                line.label.hide()
            elif out and abs(out[-1][2] - x) < 1 and _same_kind_and_step(out[-1][0], line):
                # one event per variable at one step (a Keras run's 4 leaking variables): 4 labels stacked
                # over one line, the band's rows full and one pushed left of it; one label names them all
                out[-1][4].append(line.tip)
                out[-1][5].append(line.marker.label)
                out[-1][1], out[-1][3] = 1, merged_label(line.marker.kind, out[-1][5])
                line.label.hide()
            else:
                out.append([line, 1, x, line.text, [], [line.marker.label]])
        return [(ln, n, x, text, tips) for ln, n, x, text, tips, _labels in out]

    def _set_rows(self, rows: int) -> None:
        """Grow or shrink the band (a change re-lays out the plot, which places the labels again)."""
        if rows != self.rows:
            self.rows = rows
            title = self.floor + TITLE_GAP_PX if self.floor else 0
            self.plot.layout.setRowFixedHeight(0, rows * ROW_PX + 4 + title if rows else self.floor)

    @staticmethod
    def _free_spot(taken: list[list[tuple[float, float]]], x: float, w: float, width: float
                   ) -> tuple[float, int] | None:
        """(left, row) for a label `w` wide at its line `x`: right of the line, else left of it, inside the
        plot's width, in the highest row where it touches no other label."""
        for left in (x + GAP_PX / 2, x - GAP_PX / 2 - w):
            if left < 0 or left + w > width:
                continue
            for row, spans in enumerate(taken):
                if all(left + w + GAP_PX <= a or left >= b + GAP_PX for a, b in spans):
                    spans.append((left, left + w))
                    return left, row
        return None

    def clear(self) -> None:
        for line in self.lines:
            scene = line.label.scene()
            if scene is not None:
                scene.removeItem(line.label)
        for stroke in self.strokes.values():
            self.plot.removeItem(stroke)
        self.lines.clear()
        self.strokes.clear()
        self.pens.clear()
        self._set_rows(0)


class MarkerLines:
    def __init__(self, plots: list[pg.PlotItem]) -> None:
        self.plots = [_PlotMarkers(p) for p in plots]
        self.seen: dict[str, int] = {}  # run key -> markers of that run already added

    def update(self, view: PlotView) -> None:
        added = False
        for layer in view.layers:
            markers = layer.data.markers
            done = self.seen.get(layer.key, 0)
            if len(markers) < done:  # that run's data was cleared: start over
                self.clear()
                return self.update(view)
            for m in markers[done:]:
                x = float(m.step) if layer.t0 is None else layer.data.marker_time(m) - layer.t0
                text = f"{layer.label}: {m.label}" if view.multi else m.label
                for pm in self.plots:
                    pm.add(m, x, text)
                added = True
            self.seen[layer.key] = len(markers)
        if added:
            self.place_labels()

    def place_labels(self) -> None:
        for pm in self.plots:
            pm.layout()

    def lines_of(self, index: int) -> list[MarkerLine]:
        """The markers of plot `index` (0 losses, 1 updates), in the order they were added."""
        return self.plots[index].lines

    def clear(self) -> None:
        for pm in self.plots:
            pm.clear()
        self.seen.clear()

"""The loss legend of several runs, kept to a few rows: long names cut, the whole name as a tooltip.

Why: the loss legend names the runs shown once for the whole panel (the update legend names only the variables),
but a sweep's grid-point names ("ratio=2:1 freeze=discriminator/dense_1@100 seed=0", ~300 px at 8 pt) fit one
column only in a 1366 px window: 8 runs and 2 phases made a legend of 10 rows, ~130 px, and with the ring's two
metric plots the loss and update plots were left a line of ticks each. Cutting the longest settings from their
start keeps what tells grid points apart ("ratio=2:1 …@100 seed=0", "ratio=2:1 …none seed=0") and lets the entries
fill `MAX_ROWS` rows of columns, the phases' entries in a column of their own; hovering a cut name shows it whole
(and the Runs tab lists every run by colour). Names are cut only as much as it takes, never below `MIN_NAME_PX`.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

LEGEND_SAMPLE_PX = 35  # a legend entry's line sample and the spacing beside it (measured: 2 columns of 274 px texts, 618 px)
MAX_ROWS = 3  # the most rows the names are cut for (more entries than MAX_ROWS × the columns: more rows)
MIN_NAME_PX = 140  # ~23 characters at 8 pt ("ratio=2:1 …@100 seed=0"): a name is never cut shorter
STEP_PX = 10
MIN_WORD_PX = 36  # a word is not cut shorter than "…none": the whole name is cut in the middle instead


def full_name(label: pg.LabelItem) -> str:
    """The entry's whole name, however it is shown now (kept on the label the first time it is cut)."""
    return getattr(label, "full_name", label.text)


def _font(label: pg.LabelItem) -> QtGui.QFont:
    font = QtGui.QFont(label.item.font())
    size = str(label.opts.get("size", ""))
    if size.endswith("pt"):
        font.setPointSizeF(float(size[:-2]))
    return font


def columns_for(widths: list[float], width: float, most: int) -> int:
    """The most columns (up to `most`) whose entries, laid out row by row as pyqtgraph does, fit in `width`
    (each column as wide as its widest entry); as update_plot.fit_columns counts them."""
    for n in range(min(most, max(len(widths), 1)), 0, -1):
        if sum(max(widths[c::n]) for c in range(n) if widths[c::n]) <= width - 8:
            return n
    return 1


def shorten(metrics: QtGui.QFontMetricsF, name: str, cap: float) -> str:
    """`name` in `cap` px: its longest word cut from its start ("freeze=discriminator/dense_1@100" to "…1@100"), as
    a grid point's settings differ at their ends and its short ones ("ratio=2:1", "seed=0") stay whole; the whole
    name cut in the middle when that is not enough."""
    width = metrics.horizontalAdvance
    if width(name) <= cap:
        return name
    words = name.split(" ")
    longest = max(range(len(words)), key=lambda i: width(words[i]))
    room = width(words[longest]) - (width(name) - cap)
    if room >= MIN_WORD_PX:
        words[longest] = metrics.elidedText(words[longest], QtCore.Qt.TextElideMode.ElideLeft, room)
        return " ".join(words)
    return metrics.elidedText(name, QtCore.Qt.TextElideMode.ElideMiddle, cap)


def fit_run_legend(legend: pg.LegendItem, width: float, most: int) -> int:
    """Lay the loss legend out in `width` px: the runs' names (its first `legend.run_count` entries) in columns,
    cut (`shorten`) as little as it takes to fit `MAX_ROWS` rows, never below `MIN_NAME_PX`, and the phases'
    entries ("loss D", "loss G") in a narrow column of their own beside them (in the runs' columns they made a row
    more). A cut name has its whole one as a tooltip. Returns the text width the names were cut to (0: none).
    Done again only when the entries or the width changed."""
    labels = [label for _, label in legend.items]
    names = [full_name(label) for label in labels]
    runs = min(getattr(legend, "run_count", 0), len(labels))
    key = (tuple(names), tuple(label.text for label in labels), int(width), most, runs)  # (rebuilt: whole names)
    if getattr(legend, "_fitted_runs", None) == key:
        return legend._cut_px
    if not labels:
        return 0
    metrics = QtGui.QFontMetricsF(_font(labels[0]))
    advance = [metrics.horizontalAdvance(n) for n in names]
    shown = labels[0].item.boundingRect().width()  # the text item's margins beside the text itself
    pad = max(0.0, shown - metrics.horizontalAdvance(labels[0].text)) + LEGEND_SAMPLE_PX
    rest = len(labels) - runs
    side_px = max(advance[runs:], default=0) + pad

    def arrange(cap: float) -> tuple[int, int, bool]:
        """(columns of entries, rows, the phases beside the runs)"""
        if runs and rest:
            n = columns_for([min(a, cap) + pad for a in advance[:runs]], width - side_px, most - 1)
            if rest <= runs // n:  # beside full rows of runs
                return n, -(-runs // n), True
        n = columns_for([min(a, cap) + pad for a in advance], width, most)
        return n, -(-len(labels) // n), False

    widest = max(advance[:runs], default=0)
    cap, best = widest, (arrange(widest)[1], widest)
    while best[0] > MAX_ROWS and cap - STEP_PX >= MIN_NAME_PX:
        cap -= STEP_PX
        best = min(best, (arrange(cap)[1], cap), key=lambda b: (b[0], -b[1]))  # fewest rows, then the widest names
    cap = best[1]
    for i, (label, name) in enumerate(zip(labels, names)):
        text = shorten(metrics, name, cap) if i < runs else name
        if text != label.text:
            label.full_name = name
            label.setText(text)
        label.setToolTip(name if text != name else "")
    n, rows, side = arrange(cap)
    places = [(i // n, i % n) for i in range(runs)] + [(j, n) for j in range(rest)] if side else \
        [(i // n, i % n) for i in range(len(labels))]
    for i in range(legend.layout.count() - 1, -1, -1):
        legend.layout.removeAt(i)
    for (sample, label), (row, col) in zip(legend.items, places):
        legend.layout.addItem(sample, row, 2 * col, alignment=QtCore.Qt.AlignmentFlag.AlignVCenter)
        legend.layout.addItem(label, row, 2 * col + 1)
    legend.columnCount, legend.rowCount = n + side, rows
    legend.updateSize()
    legend._cut_px = int(cap) if cap < widest else 0
    legend._fitted_runs = (tuple(names), tuple(label.text for label in labels), int(width), most, runs)
    return legend._cut_px

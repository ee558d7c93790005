"""The loss legend of several runs (app/plots/run_legend.py): a sweep's 8 grid-point names and the 2 phases in a
few rows, the longest setting cut from its start, the whole name on hover, the phases in a column of their own.
A real pyqtgraph legend, its text measured by Qt's own font metrics."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtGui

from app.plots.run_legend import MAX_ROWS, MIN_NAME_PX, fit_run_legend, shorten

NAMES = [f"ratio={r} freeze={f} seed={s}" for r in ("1:1", "2:1") for f in ("none", "discriminator/dense_1@100")
         for s in (0, 1)]


def legend_of(qtbot, names=NAMES, phases=("loss D", "loss G")) -> pg.LegendItem:
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    legend = pg.LegendItem(labelTextSize="8pt", verSpacing=-8, horSpacing=4)
    view.addItem(legend)
    for text in [*names, *phases]:
        legend.addItem(pg.PlotDataItem(pen="k"), text)
    legend.run_count = len(names)
    legend.view_kept = view  # (the view, and with it the legend, lives as long as the test holds the legend)
    return legend


def places(legend: pg.LegendItem) -> dict[str, tuple[int, int]]:
    """Each entry's (row, column) in the legend's grid."""
    out = {}
    for r in range(legend.layout.rowCount()):
        for c in range(1, legend.layout.columnCount(), 2):
            item = legend.layout.itemAt(r, c)
            if item is not None:
                out[item.text] = (r, c // 2)
    return out


def test_a_sweeps_names_fit_three_rows_with_what_tells_them_apart_and_whole_on_hover(qtbot):
    legend = legend_of(qtbot)
    cut = fit_run_legend(legend, 689, 8)  # the plots' width beside the tabs at 1366x728
    assert cut >= MIN_NAME_PX
    runs = [label for _, label in legend.items][:8]
    shown = [label.text for label in runs]
    assert len(set(shown)) == 8 and shown != NAMES  # cut, and still eight different names
    for label, name in zip(runs, NAMES):
        assert label.text.startswith(name.split(" ")[0] + " ") and label.text.endswith(" " + name.split(" ")[-1])
        assert label.toolTip() == (name if label.text != name else "")
    at = places(legend)
    assert max(r for r, _ in at.values()) + 1 <= MAX_ROWS  # was 10 rows of one column
    phase_col = {at["loss D"][1], at["loss G"][1]}
    assert len(phase_col) == 1 and phase_col.pop() > max(at[t][1] for t in shown)  # beside the runs, on their right


def test_a_wide_legend_cuts_nothing_and_a_rebuilt_one_is_fitted_again(qtbot):
    legend = legend_of(qtbot)
    assert fit_run_legend(legend, 3000, 8) == 0
    assert [label.text for _, label in legend.items][:8] == NAMES
    assert fit_run_legend(legend, 689, 8) > 0
    legend.clear()  # what LossCurves does when the runs shown change
    for text in [*NAMES, "loss D", "loss G"]:
        legend.addItem(pg.PlotDataItem(pen="k"), text)
    assert fit_run_legend(legend, 689, 8) > 0 and all(label.toolTip() for _, label in legend.items[:4])


def test_shorten_cuts_the_longest_word_from_its_start_or_the_whole_name_in_its_middle(qtbot):
    m = QtGui.QFontMetricsF(QtGui.QFont())
    name = "ratio=2:1 freeze=discriminator/dense_1@100 seed=1"
    cap = m.horizontalAdvance("ratio=2:1 …@100 seed=1") + 1
    short = shorten(m, name, cap)
    assert short.startswith("ratio=2:1 …") and short.endswith("@100 seed=1") and m.horizontalAdvance(short) <= cap
    assert shorten(m, "ratio=2:1 seed=1", cap) == "ratio=2:1 seed=1"  # fits: whole
    tight = shorten(m, name, 60)  # no room for a word: the middle goes
    assert "…" in tight and m.horizontalAdvance(tight) <= 60 and tight[0] == "r" and tight[-1] == "1"

"""The controls above the plots wrap onto two lines rather than widen the window past a laptop screen
(app/plots/wrap.py): the row asks only for its widest group, stacks its groups when they do not fit
side by side, and puts them back on one line when they do."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from app.plots.wrap import WrapRow


def _group(*widths: int) -> QHBoxLayout:
    row = QHBoxLayout()
    for w in widths:
        b = QPushButton("x")
        b.setFixedWidth(w)
        row.addWidget(b)
    return row


def test_groups_stack_when_narrow_and_line_up_when_wide(qtbot):
    row = WrapRow([_group(200, 100), _group(250)], spacing=10)
    qtbot.addWidget(row)
    row.show()
    one_line = sum(g.sizeHint().width() for g in row._groups) + 10
    assert row.minimumSizeHint().width() == max(g.minimumSize().width() for g in row._groups) < one_line

    row.resize(one_line + 40, 40)
    qtbot.waitUntil(lambda: not row.wrapped, timeout=60_000)
    low = row.sizeHint().height()
    row.resize(one_line - 1, 40)
    qtbot.waitUntil(lambda: row.wrapped, timeout=60_000)
    assert row.sizeHint().height() > low  # two lines ask for more height
    row.resize(one_line, 40)
    qtbot.waitUntil(lambda: not row.wrapped, timeout=60_000)


@pytest.mark.parametrize("width, height", [(1280, 720), (1366, 768)])
def test_the_window_fits_a_laptop_screen_with_every_plot_control_on_it(ui, width, height):
    """Before, the controls made one ~870 px row and the window could not be narrower than 1,421 px:
    on these screens the samples view was cut off at the right. (They wrap at 1280; at 1366 they fit one line.)"""
    w = ui.make(fake=True, wait=False)
    assert w.minimumSizeHint().width() <= width
    w.resize(width, height)
    ui.qtbot.waitUntil(lambda: w.width() == width, timeout=60_000)
    row = w.plots.controls_row  # one line over the plots and the samples where it fits (1366: 911 of 936 px), else two
    ui.qtbot.waitUntil(lambda: row.wrapped == (row.width() < row._one_line_width()), timeout=60_000)
    inside = w.rect()
    controls = [c for c in w.plots.controls_row.findChildren(QWidget) if c.isVisible()]
    assert any(isinstance(c, QLabel) and c.text() == "Updates:" for c in controls)
    for c in controls + [w.plots.samples]:
        box = QRect(c.mapTo(w, QPoint(0, 0)), c.size())
        assert inside.contains(box), f"{type(c).__name__} {c.objectName()} at {box} is outside {inside}"
    g = w.plots.graphics  # and the plots fit their view: the heat map's title held them at 658 px, wider than
    ui.qtbot.waitUntil(lambda: g.ci.geometry().width() <= g.viewport().width() + 1, timeout=60_000)  # the view

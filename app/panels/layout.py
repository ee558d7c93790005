"""The window's layout: the panels stacked in titled boxes on the left, the plots taking the rest."""
from __future__ import annotations

from typing import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGroupBox, QSplitter, QVBoxLayout, QWidget

LEFT_MIN_WIDTH = 340


def panels_beside_plots(panels: Sequence[tuple[str, QWidget, int]], plots: QWidget, left_width: int,
                        plots_width: int) -> QSplitter:
    """(title, widget, stretch) boxes in a column, beside `plots`; the splitter never collapses either side,
    so a narrow window scrolls the panels rather than hiding them."""
    left = QWidget()
    col = QVBoxLayout(left)
    col.setContentsMargins(6, 6, 2, 6)
    for title, w, stretch in panels:
        box = QGroupBox(title)
        QVBoxLayout(box).addWidget(w)
        box.layout().setContentsMargins(8, 6, 8, 8)
        col.addWidget(box, stretch)
    left.setMinimumWidth(LEFT_MIN_WIDTH)
    splitter = QSplitter(Qt.Orientation.Horizontal)
    splitter.addWidget(left)
    splitter.addWidget(plots)
    splitter.setStretchFactor(1, 1)
    splitter.setSizes([left_width, plots_width])
    splitter.setChildrenCollapsible(False)
    return splitter

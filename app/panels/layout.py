"""The window's layout: tabs of panels (titled boxes in a column) on the left, the plots taking the rest."""
from __future__ import annotations

from typing import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGroupBox, QSplitter, QTabWidget, QVBoxLayout, QWidget

LEFT_MIN_WIDTH = 340


def panels_column(panels: Sequence[tuple[str, QWidget, int]]) -> QWidget:
    """(title, widget, stretch) boxes in a column; a minimum width so a narrow window scrolls the panels
    rather than squeezing them."""
    left = QWidget()
    col = QVBoxLayout(left)
    col.setContentsMargins(6, 6, 2, 6)
    for title, w, stretch in panels:
        box = QGroupBox(title)
        QVBoxLayout(box).addWidget(w)
        box.layout().setContentsMargins(8, 6, 8, 8)
        col.addWidget(box, stretch)
    left.setMinimumWidth(LEFT_MIN_WIDTH)
    return left


def beside_plots(left: QWidget, plots: QWidget, left_width: int, plots_width: int) -> QSplitter:
    """`left` beside `plots`; the splitter never collapses either side."""
    splitter = QSplitter(Qt.Orientation.Horizontal)
    splitter.addWidget(left)
    splitter.addWidget(plots)
    splitter.setStretchFactor(1, 1)
    splitter.setSizes([left_width, plots_width])
    splitter.setChildrenCollapsible(False)
    return splitter


def left_tabs(train: QWidget, runs: QWidget) -> QTabWidget:
    """Train (what to train and how) and Runs (the runs the plots show) share the left column."""
    tabs = QTabWidget()
    tabs.addTab(train, "Train")
    tabs.addTab(runs, "Runs")
    tabs.setTabToolTip(1, "The runs the plots show: opened ones for review and comparison, and this one")
    return tabs

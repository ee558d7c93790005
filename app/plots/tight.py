"""The plots' column packed tight, so the loss and update plots keep their height in a short window.

Why: on a 1366×768 laptop (a 728 px window) showing a sweep's 8 runs of the ring, what was not a plot's data took
most of the column: each legend had pyqtgraph's 9 px margins above and below, each metric plot a 30 px row for its
8 pt title and as much height as the loss plot, and the rows 6 px apart; the loss and update plots were left
57 and 66 px of data. Measured in the same window (tests/app/test_window_layout.py), packed: see docs/window.md.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from . import palette

LEGEND_MARGIN_PX = 2  # around a legend's entries (pyqtgraph: 9)
ROW_SPACING_PX = 2  # between the column's rows: legends, plots (pyqtgraph: 6)
TITLE_PX = 16  # a metric plot's title row, for an 8 pt title (pyqtgraph: 30 for any title)
METRIC_PX = 56  # a metric plot's height, title included, while the column is short: the loss and update plots
# get what is left (a metric has a few dozen points and a scale of its own; its line reads at 38 px)
ROOMY_PX = 620  # a column this tall lets the metric plots grow too (measured: a 1100x700 panel, 637 px; a 1366x728
# window, 631; beside the sweep tabs at 1250x780, 608, and at 1366x728, 587)
METRICS_ROW = 2  # the panel's rows: loss legend, losses, metrics, updates, heat map, update legend


def legends(panel) -> None:
    """The panel's two legends as wide as their entries, on the left of their rows, with thin margins; the rows
    close together; the legends fitted again whenever the plots' canvas changes size (`fit`)."""
    graphics = panel.graphics
    layout = graphics.ci.layout
    layout.setVerticalSpacing(ROW_SPACING_PX)
    left, _, right, _ = layout.getContentsMargins()
    layout.setContentsMargins(left, ROW_SPACING_PX, right, ROW_SPACING_PX)
    for legend in (panel.loss_legend, panel.update_legend):
        legend.setSizePolicy(QtWidgets.QSizePolicy.Policy.Maximum, QtWidgets.QSizePolicy.Policy.Maximum)
        legend.layout.setContentsMargins(*(LEGEND_MARGIN_PX,) * 4)
        layout.setAlignment(legend, QtCore.Qt.AlignmentFlag.AlignLeft)
    graphics.installEventFilter(_FitOnResize(panel))


class _FitOnResize(QtCore.QObject):
    """`fit` when the canvas is resized, not only the panel: the splitter beside the samples, or a window still
    being laid out, changed the canvas's width alone and left the loss legend fitted to a narrower one (a row more)."""

    def __init__(self, panel) -> None:
        super().__init__(panel.graphics)
        self.panel = panel

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 (Qt name)
        if event.type() == QtCore.QEvent.Type.Resize:
            fit(self.panel)
        return False


def fit(panel) -> None:
    """The panel's legends to its width (update_plot.UpdateViews.fit_legend), the metric plots' row to its height."""
    panel.update_views.fit_legend(panel.graphics.width(), also=panel.loss_legend)
    metric_rows(panel)


def metric_rows(panel) -> None:
    """In a column of `ROOMY_PX` or more the metric plots' row grows too, half as fast as the loss plot's (its
    stretch 2 against 4, with two plots or more); in a shorter one they keep `METRIC_PX` each and the loss and
    update plots get the rest."""
    metrics = getattr(panel, "metrics", None)  # (a resize while the panel is being built)
    plots = len(metrics.plots) if metrics is not None else 0
    stretch = min(plots, 2) if panel.graphics.height() >= ROOMY_PX else 0
    layout = panel.graphics.ci.layout
    if layout.rowStretchFactor(METRICS_ROW) != stretch:
        layout.setRowStretchFactor(METRICS_ROW, stretch)


UPDATE_TITLE = "update magnitude per variable"  # the update plot's own title: under the last metric plot 2 px away,
# its curves read as that plot's continuation (the kid plot's axis ran on into ‖ΔW‖/‖W‖); BORDER: each metric
# plot's frame, so where one plot ends and the next begins is drawn, not guessed
BORDER = "#b0b0b0"


def titled(plot: pg.PlotItem, text: str) -> None:
    """A plot's name as a title row over it, as tall as its 8 pt text (`TITLE_PX`), on the left: the update plot's."""
    plot.setTitle(text, size="8pt", color=palette.FOREGROUND, justify="left")
    plot.titleLabel.setMaximumHeight(TITLE_PX)
    plot.layout.setRowFixedHeight(0, TITLE_PX)


def metric_plot(plot: pg.PlotItem) -> None:
    """A metric plot (titled): a title row as tall as its text, and the plot no taller than the loss plot needs it
    to be: its preferred height is its minimum, so a short column shrinks the loss and update plots last."""
    plot.titleLabel.setMaximumHeight(TITLE_PX)
    plot.layout.setRowFixedHeight(0, TITLE_PX)
    plot.vb.setBorder(pg.mkPen(BORDER, width=1))
    plot.setMinimumHeight(METRIC_PX)
    plot.setPreferredHeight(METRIC_PX)

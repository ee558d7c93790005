"""Axes (app/plots/axes.py) whose tick labels never overprint, on log axes too."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
from PySide6 import QtGui  # noqa: E402

from tests.app.blocks import block  # noqa: E402
from training_core import MetricsBatch  # noqa: E402
from training_core.runs import RunData  # noqa: E402


def test_tick_labels_never_overprint_on_log_axes(panel_of, qtbot):
    """Less than a decade in view (0.08-0.1: pyqtgraph labelled 0.1, 0.09, 0.08 ... over each other), and
    a loss on a log axis: no two label rectangles touch."""
    from app.plots.axes import label_rects
    store = RunData()
    paths = ("d/a/kernel", "d/a/bias", "d/b/kernel")
    steps = np.arange(1, 301)
    ratio = np.column_stack([np.linspace(0.08, 0.1, 300), np.linspace(0.0085, 0.01, 300), np.full(300, 0.009)])
    store.add_batch(MetricsBatch([block("D", steps, paths, ratio=ratio, loss=np.geomspace(800, 1e-3, 300))]))
    panel = panel_of(store)
    panel.show()
    qtbot.waitExposed(panel)
    panel.resize(900, 520)
    panel.refresh()
    panel.set_log_losses(True)
    QtGui.QGuiApplication.processEvents()
    for axis in (panel.update_axis, panel.loss_axis, panel.update_plot.getAxis("bottom")):
        rects = label_rects(axis)
        assert len(rects) >= 2
        for i, (a, ta) in enumerate(rects):
            for b, tb in rects[i + 1:]:
                assert not a.intersects(b), (ta, tb)
    assert panel.loss_plot.getAxis("left").logMode  # log losses: factorization's falls by decades, not flat at 0
    np.testing.assert_allclose(panel.curves()["loss/D"].yData, np.log10(np.geomspace(800, 1e-3, 300)))

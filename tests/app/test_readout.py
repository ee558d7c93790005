"""The hover readout (app/plots/readout.py): the step and values under the cursor, wrapped, cleared when the
mouse leaves, and never moving the plots."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtCore, QtGui  # noqa: E402

from training_core.runs import RunData  # noqa: E402


def test_hover_readout_names_step_and_values(ring, panel_of, qtbot):
    panel = panel_of(ring)
    panel.show()
    qtbot.waitExposed(panel)
    panel.refresh()
    QtGui.QGuiApplication.processEvents()
    steps, _, values = ring.loss("D")
    vb = panel.loss_plot.vb
    pos = panel.graphics.mapFromScene(vb.mapViewToScene(QtCore.QPointF(float(steps[40]), float(values[40]))))
    qtbot.mouseMove(panel.graphics.viewport(), pos)
    qtbot.waitUntil(lambda: "loss D" in panel.readout_label.text(), timeout=60_000)
    assert f"{values[40]:.4g}" in panel.readout_label.text()
    text = panel.readout.show_at(panel.update_plot, 200, -2.5)
    assert "step 200" in text and any(p in text for p in ring.var_paths)


def test_a_readout_that_wraps_does_not_move_the_plots(panel_of, qtbot):
    """A heat-map readout long enough to wrap grew its label and shrank the plots under a still cursor: the
    row the readout named was not the row a click then selected."""
    panel = panel_of(RunData())
    panel.show()
    qtbot.waitExposed(panel)
    panel.readout_label.setText("hover a plot for values")
    QtGui.QGuiApplication.processEvents()
    before = panel.graphics.height()
    panel.readout_label.setText("generator/dense_26/kernel · steps 1,344–1,407 · " * 4)
    QtGui.QGuiApplication.processEvents()
    assert panel.graphics.height() == before


def test_readout_wraps_and_clears_when_the_mouse_leaves(ring, panel_of, qtbot):
    panel = panel_of(ring)
    panel.refresh()
    text = panel.readout.show_at(panel.update_plot, 200, -3.0)
    assert panel.readout_label.text() == text and panel.readout_label.wordWrap()
    QtCore.QCoreApplication.sendEvent(panel.graphics.viewport(), QtCore.QEvent(QtCore.QEvent.Type.Leave))
    assert "hover a plot" in panel.readout_label.text() and not panel.readout.cursors[0].isVisible()

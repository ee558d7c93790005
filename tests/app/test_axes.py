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


def _decades(axis) -> list[float]:
    """The powers of ten among `axis`'s drawn labels (after two paints: an axis widens for its labels)."""
    from app.plots.axes import label_rects
    out = []
    for _, text in label_rects(axis):
        try:  # "10⁻³" (the update axis), "0.01", "1e-4" (a metric's), and not "0.002" nor "0", the floor
            v = 10.0 ** int(text[2:].translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789"))) \
                if text.startswith("10") and len(text) > 2 and not text[2:].isdigit() else float(text)
        except ValueError:
            continue
        if v > 0 and abs(np.log10(v) - round(np.log10(v))) < 1e-9:
            out.append(v)
    return out


def _painted(panel) -> None:
    for _ in range(2):
        QtGui.QGuiApplication.processEvents()
        panel.grab()


def test_every_log_axis_labels_two_decades(panel_of, qtbot):
    """Updates within a decade (0.002-0.008) and a metric on a log axis within a factor of 2: pyqtgraph put the
    decades and 2…9 in one tick level and drew "0.002 … 0.009" (or nothing) with no power of ten; the view
    widens to two decades (the export's `two_decades`) and labels them first."""
    store = RunData()
    paths = ("d/a/kernel", "d/b/kernel")
    steps = np.arange(1, 301)
    ratio = np.column_stack([np.linspace(0.002, 0.008, 300), np.full(300, 0.004)])
    store.add_batch(MetricsBatch([block("D", steps, paths, ratio=ratio)],
                                 scalars={"metric/kid": (np.array([0, 100, 200, 300]), np.zeros(4),
                                                         np.array([0.03, 0.025, 0.02, 0.022]))}))
    panel = panel_of(store)
    panel.show()
    qtbot.waitExposed(panel)
    panel.refresh()
    panel.metrics.set_scale("metric/kid", "log")
    _painted(panel)
    lo, hi = panel.update_plot.vb.viewRange()[1]
    assert lo < -3 and hi > -2  # 0.001 and 0.01 inside the view, not only 0.002-0.008
    assert len(_decades(panel.update_axis)) >= 2, panel.update_axis.kept_labels
    kid = panel.metrics.plots["metric/kid"].getAxis("left")
    assert kid.logMode and sorted(_decades(kid)) == [0.01, 0.1]
    assert panel.update_plot.vb.autoRangeEnabled()[1]  # new data still fit the view


def test_plain_numbers_read_as_written():
    from app.plots.axes import plain_number
    assert [plain_number(x) for x in (0.02, 300, 1000, 12345, 2e5, 1e-4)] == ["0.02", "300", "1000", "12300", "2e5",
                                                                            "1e-4"]


def test_an_update_axis_writes_every_decade_one_way_as_the_export_does():
    # pyqtgraph wrote "0.01" and "0.0001" beside "10⁻⁶" on one axis (a window shot of the shapes run, 2026-12-03)
    from app.plots.axes import FloorLogAxis, decade_text
    assert [decade_text(k) for k in (-6, -3, 0, 1, 2)] == ["10⁻⁶", "10⁻³", "1", "10", "10²"]
    axis = FloorLogAxis()
    assert axis.logTickStrings([-2.0, -4.0, -6.0], 1, 2) == ["10⁻²", "10⁻⁴", "10⁻⁶"]
    axis.set_floor(-8.0)
    assert axis.logTickStrings([-8.0, -6.0, -2.0], 1, 2) == ["0", "10⁻⁶", "10⁻²"]


def test_the_axis_and_the_sweep_table_write_one_exponent_alike():
    from app.plots.axes import decade_text
    from training_core.runs.sweep_table import tex_number
    assert decade_text(-5) == "10⁻⁵" and tex_number(1.2e-5, plain=True) == "1.20×10⁻⁵"

"""The loss plot (app/plots/losses.py): the store's own arrays, raw and TensorBoard-smoothed, a debiased EMA kept
incremental, and a million points per curve drawn decimated to the pixel width."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PySide6 import QtGui  # noqa: E402

from app.plots import palette  # noqa: E402
from tests.app.blocks import block  # noqa: E402
from tests.app.ring_run import FROZEN, shown_color  # noqa: E402
from training_core import MetricsBatch, ema_smooth  # noqa: E402
from training_core.runs import RunData  # noqa: E402


def test_curves_hold_the_stores_data_and_debiased_ema(ring, panel_of):
    panel = panel_of(ring)
    assert panel.refresh() is True
    curves = panel.curves()
    assert ring.phases == ["D", "G"]
    for phase in ring.phases:
        steps, _, values = ring.loss(phase)
        raw, smooth = curves[f"loss/{phase}"], curves[f"loss/{phase}/smoothed"]
        assert len(raw.xData) == len(raw.yData) == len(steps) > 100
        np.testing.assert_array_equal(raw.xData, steps)
        np.testing.assert_array_equal(raw.yData, values)
        np.testing.assert_allclose(smooth.yData, ema_smooth(values, 0.6)[0], rtol=1e-12)
        assert smooth.opts["pen"].widthF() > raw.opts["pen"].widthF()
        assert shown_color(smooth).name() == palette.phase_color(phase, ring.phases.index(phase))
        assert shown_color(raw).alpha() < 255 == shown_color(smooth).alpha()
    for path in ring.var_paths:
        steps, _, ratio = ring.var_series(path, "update_ratio")
        c = curves[f"update/{path}"]
        assert len(c.xData) == len(c.yData) == len(steps) > 5
        if path not in FROZEN:
            np.testing.assert_allclose(c.yData, np.log10(ratio.astype(np.float64)), rtol=1e-9)
    assert panel.update_plot.getAxis("bottom").labelText == "step (all phases)"  # not one phase's (--count G)
    assert not panel.loss_plot.getAxis("bottom").label.isVisible()  # the plot below names the same x
    assert panel.loss_plot.getAxis("left").labelText == "loss"
    assert panel.update_plot.getAxis("left").labelText == "‖ΔW‖ / ‖W‖"


def test_the_x_axis_says_all_phases_once_a_second_phase_trains(panel_of):
    store = RunData()
    panel = panel_of(store)
    store.add_batch(MetricsBatch([block("D", np.arange(1, 6), ("d/k",), loss=np.ones(5))]))
    panel.refresh()
    assert panel.update_plot.getAxis("bottom").labelText == "step"
    store.add_batch(MetricsBatch([block("G", np.arange(6, 9), ("g/k",), loss=np.ones(3))]))
    panel.refresh()
    assert panel.update_plot.getAxis("bottom").labelText == "step (all phases)"


def test_smoothing_is_incremental_and_the_slider_recomputes(panel_of):
    store = RunData()
    panel = panel_of(store)
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.normal(2.0, 0.5, 700), [np.nan], rng.normal(1.0, 0.5, 299)])
    for lo in range(0, 1000, 137):  # batches of odd sizes, a refresh after each
        hi = min(lo + 137, 1000)
        store.add_batch(MetricsBatch([block("D", np.arange(lo, hi) + 1, ("d/k",), loss=values[lo:hi])]))
        panel.refresh()
    smooth = panel.curves()["loss/D/smoothed"]
    np.testing.assert_allclose(smooth.yData, ema_smooth(values, 0.6)[0], rtol=1e-12, equal_nan=True)

    panel.set_smoothing(0.95)
    assert panel.smoothing == 0.95 and panel.smoothing_slider.value() == 950
    np.testing.assert_allclose(smooth.yData, ema_smooth(values, 0.95)[0], rtol=1e-12, equal_nan=True)
    panel.smoothing_slider.setValue(0)  # the user drags the slider to "no smoothing"
    assert panel.smoothing == 0.0
    np.testing.assert_array_equal(smooth.yData, values)
    with pytest.raises(ValueError, match="between 0 and 0.999"):
        panel.set_smoothing(1.0)


def test_a_million_points_per_loss_curve(panel_of, qtbot):
    n, chunk = 1_000_000, 250_000
    paths = {"D": ("d/l1/kernel", "d/l1/bias", "d/out/kernel"), "G": ("g/l1/kernel", "g/l1/bias", "g/out/kernel")}
    store = RunData()
    for lo in range(0, n, chunk):
        idx = np.arange(lo, lo + chunk)
        store.add_batch(MetricsBatch([block(p, 2 * idx + k, paths[p], loss=np.sin(idx / 1e4) + k, every=10)
                                      for k, p in ((1, "D"), (2, "G"))]))
    panel = panel_of(store)
    panel.show()
    qtbot.waitExposed(panel)
    assert panel.refresh() is True
    QtGui.QGuiApplication.processEvents()
    for i in range(5):  # live batches: each refresh draws the new points (how fast: bench/, not here)
        idx = np.arange(n + 56 * i, n + 56 * (i + 1))
        store.add_batch(MetricsBatch([block(p, 2 * idx + k, paths[p], every=10) for k, p in ((1, "D"), (2, "G"))]))
        assert panel.refresh() is True
        QtGui.QGuiApplication.processEvents()
        assert panel.curves()["loss/D"].xData[-1] == 2 * idx[-1] + 1
    curves = panel.curves()
    assert len(curves["loss/D"].xData) == len(curves["loss/D/smoothed"].yData) == n + 5 * 56
    assert len(curves["update/g/out/kernel"].xData) == len(store.var_series("g/out/kernel")[0])
    assert curves["loss/D"].opts["clipToView"] and curves["loss/D"].opts["autoDownsample"]
    assert curves["loss/D"].opts["downsampleMethod"] == "peak"
    shown = curves["loss/D"].shown()[0]
    assert 0 < len(shown) < 10_000  # drawn decimated to the pixel width, while holding every point
    assert curves["loss/D"].stroke.drawn() == len(shown)

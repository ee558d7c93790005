"""The live plots draw what the store holds: one real headless ring run (with generator/dense_1 frozen
from the start) read back with `read_run`, plus synthetic PhaseBlocks where a test
needs a freeze in mid-run or a million steps."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PySide6 import QtCore, QtGui  # noqa: E402

from app.plots import palette  # noqa: E402
from app.plots.plot_view import FOLLOW_HEADROOM  # noqa: E402
from tests import zygote
from tests.app.blocks import block
from training_core.runs import RunData, read_run  # noqa: E402
from training_core import MetricsBatch, ema_smooth
from training_core.base import events  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FROZEN = ("generator/dense_1/kernel", "generator/dense_1/bias")


@pytest.fixture(scope="module")
def ring_dir(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("plots") / "ring"
    r = zygote.run([sys.executable, "main.py", "--headless", "--example", "ring", "--steps", "300",
                    "--freeze", "generator/dense_1", "--run-dir", str(run_dir), "--seed", "0", "--quiet",
                    "--no-tensorboard"], cwd=REPO, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    return run_dir


@pytest.fixture
def ring(ring_dir) -> RunData:
    return read_run(ring_dir)


def shown_color(item) -> QtGui.QColor:
    return item.opts["pen"].color()


# -- losses ----------------------------------------------------------------------------------------------
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
    assert panel.loss_plot.getAxis("bottom").labelText == "step"
    assert panel.loss_plot.getAxis("left").labelText == "loss"
    assert panel.update_plot.getAxis("left").labelText == "‖ΔW‖ / ‖W‖"


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


def test_refresh_is_a_noop_until_the_version_moves_then_one_setdata_per_curve(ring, panel_of):
    panel = panel_of(ring)
    panel.refresh()
    counts = {name: 0 for name in panel.curves()}
    for name, c in panel.curves().items():
        c.sigPlotChanged.connect(lambda *_a, n=name: counts.__setitem__(n, counts[n] + 1))
    assert panel.refresh() is False and panel.refresh() is False
    assert set(counts.values()) == {0}
    ring.add_event(events.LearningRate(step=280, phase="D", value=1e-4))
    assert panel.refresh() is True
    metric = {n for n in counts if n.startswith("metric/")}
    assert metric and len(metric) < len(counts)
    assert {counts[n] for n in counts if n not in metric} == {1}, counts
    assert {counts[n] for n in metric} == {0}, counts  # a point every second or two: unchanged, not redrawn
    assert panel.refresh() is False
    tag = sorted(metric)[0]
    steps, wall, values = ring.scalar(tag)
    ring.add_scalar(tag, [steps[-1] + 1], [wall[-1] + 1], [values[-1]])
    assert panel.refresh() is True
    assert counts[tag] == 1 and {counts[n] for n in metric - {tag}} == {0}, counts


def test_the_timer_draws_a_part_per_tick_and_refresh_draws_everything(ring, panel_of):
    """`refresh_part` (the window's 25 Hz timer) draws the losses, then the update and health plots at the
    next tick; `refresh` finishes what a tick left and draws everything at once."""
    panel = panel_of(ring)
    assert panel.refresh_part() is True
    drawn = panel.curves()
    assert {"loss/D", "loss/G"} <= set(drawn) and not any(n.startswith(("update/", "metric/")) for n in drawn)
    assert panel.refresh_part() is True
    drawn = panel.curves()
    assert any(n.startswith("update/") for n in drawn) and any(n.startswith("metric/") for n in drawn)
    assert panel.refresh_part() is False
    steps, wall, values = ring.loss("D")
    ring.add_scalar("loss/D", [ring.last_step + 1], [wall[-1] + 1], [values[-1]])
    assert panel.refresh_part() is True  # new data: the losses first, the rest still to do ...
    assert panel.refresh() is True  # ... which refresh finishes
    assert panel.refresh() is False and panel.refresh_part() is False  # nothing newer to draw


# -- markers ---------------------------------------------------------------------------------------------
def test_markers_at_their_steps_on_both_plots_alarms_in_red(ring, panel_of):
    panel = panel_of(ring)
    panel.refresh()
    assert panel.marker_lines("loss") == []  # the run's only freeze was at the start: no marker
    ring.add_event(events.Freeze(step=120, scopes=["discriminator/out"]))
    ring.add_event(events.Ratio(step=150, policy={"policy": "fixed", "ratio": [5, 1]}))
    ring.add_event(events.Nan(step=260, at_step=251, phase="D"))
    ring.add_event(events.Warning(step=270, message="not a marker"))
    panel.refresh()
    for plot in ("loss", "update"):
        lines = panel.marker_lines(plot)
        assert [ln.value() for ln in lines] == [120, 150, 251]
        assert [ln.label.toPlainText() for ln in lines] == ["freeze: discriminator/out", "ratio 5:1", "NaN in D"]
        assert [ln.pen.color().name() for ln in lines] == [palette.CONTROL_COLOR, palette.CONTROL_COLOR,
                                                          palette.ALARM_COLOR]
    assert panel.marker_lines("loss")[0].getViewBox() is panel.loss_plot.vb
    assert panel.marker_lines("update")[0].getViewBox() is panel.update_plot.vb


# -- update magnitudes -----------------------------------------------------------------------------------
def test_frozen_variable_sits_on_the_zero_floor_dotted(ring, panel_of):
    panel = panel_of(ring)
    panel.refresh()
    ups = panel.updates
    curves = panel.curves()
    others = [p for p in ring.var_paths if p not in FROZEN]
    lowest = min(float(ring.var_series(p)[2].min()) for p in others)
    assert ups.has_zero and ups.floor <= math.floor(math.log10(lowest)) - 1
    for path in FROZEN:
        _, _, ratio = ring.var_series(path)
        assert (ratio == 0).all() and ring.frozen_now(path)
        c = curves[f"update/{path}"]
        np.testing.assert_array_equal(c.yData, np.full(len(ratio), ups.floor))
        assert c.opts["pen"].style() == QtCore.Qt.PenStyle.DotLine
        assert panel.update_legend.getLabel(c).text == f"{path} (frozen)"
    for path in others:  # kernels solid, biases dashed: a line style per kind of leaf
        c = curves[f"update/{path}"]
        style = QtCore.Qt.PenStyle.SolidLine if path.endswith("kernel") else QtCore.Qt.PenStyle.CustomDashLine
        assert c.opts["pen"].style() == style and (c.yData > ups.floor).all()
    assert panel.updates.floor_line.label.format == "0 (frozen)"
    assert panel.update_axis.logTickStrings([ups.floor, -3.0], 1, 1) == ["0", "0.001"]
    assert panel.updates.floor_line.isVisible() and panel.updates.floor_line.value() == ups.floor


def test_freeze_in_mid_run_drops_the_curve_to_zero_and_unfreeze_lifts_it(panel_of):
    paths = ("g/d1/kernel", "g/d1/bias")
    store = RunData()
    panel = panel_of(store)
    store.add_batch(MetricsBatch([block("G", np.arange(1, 101), paths)]))
    panel.refresh()
    c = panel.curves()["update/g/d1/kernel"]
    assert not panel.updates.has_zero and not panel.update_axis.floor
    assert c.opts["pen"].style() == QtCore.Qt.PenStyle.SolidLine
    store.add_event(events.Freeze(step=100, scopes=["g/d1/kernel"]))
    store.add_batch(MetricsBatch([block("G", np.arange(101, 201), paths, frozen=[[True, False]] * 100)]))
    panel.refresh()
    floor = panel.updates.floor
    assert (c.yData[:100] > floor + 0.5).all() and (c.yData[100:] == floor).all()
    assert c.opts["pen"].style() == QtCore.Qt.PenStyle.DotLine
    assert panel.update_axis.floor == floor and panel.marker_lines("update")[0].value() == 100
    assert panel.readout.show_at(panel.update_plot, 150, floor).count("0 (frozen)") == 1
    store.add_batch(MetricsBatch([block("G", np.arange(201, 251), paths)]))
    panel.refresh()
    assert c.opts["pen"].style() == QtCore.Qt.PenStyle.SolidLine and (c.yData[200:] > floor).all()


def test_absolute_mode_shows_update_norm_without_the_ratio_reference(ring, panel_of):
    panel = panel_of(ring)
    panel.refresh()
    panel.absolute_button.click()
    assert panel.update_mode == "absolute" and panel.update_kind == "update_norm"
    path = "discriminator/dense_2/kernel"
    _, _, norm = ring.var_series(path, "update_norm")
    np.testing.assert_allclose(panel.curves()[f"update/{path}"].yData, np.log10(norm), rtol=1e-9)
    assert panel.update_plot.getAxis("left").labelText == "‖ΔW‖"
    assert not panel.updates.reference.isVisible()
    panel.set_update_mode("relative")
    assert panel.relative_button.isChecked() and panel.updates.reference.isVisible()
    assert panel.updates.reference.value() == -3.0
    with pytest.raises(ValueError, match="relative.*absolute"):
        panel.set_update_mode("log")


def test_highlight_thickens_one_curve_and_a_click_names_it(ring, panel_of, qtbot):
    panel = panel_of(ring)
    panel.show()
    qtbot.waitExposed(panel)
    panel.refresh()
    target = "discriminator/out/bias"
    panel.highlight_variable(target)
    curves = panel.curves()
    hi = curves[f"update/{target}"]
    assert hi.opts["pen"].widthF() == palette.HIGHLIGHT_WIDTH and hi.zValue() > 1
    for path in ring.var_paths:
        if path != target:
            c = curves[f"update/{path}"]
            assert c.opts["pen"].color().alpha() == palette.DIM_ALPHA and c.zValue() < hi.zValue()

    # click on the middle point of the highlighted (topmost) curve, through the real widget
    QtGui.QGuiApplication.processEvents()
    i = len(hi.xData) // 2
    vb = panel.update_plot.vb
    scene_pt = vb.mapViewToScene(QtCore.QPointF(float(hi.xData[i]), float(hi.yData[i])))
    pos = panel.graphics.mapFromScene(scene_pt)
    with qtbot.waitSignal(panel.variableClicked, timeout=60_000) as sig:
        qtbot.mouseClick(panel.graphics.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=pos)
    assert sig.args == [target]

    panel.highlight_variable(None)
    assert {c.opts["pen"].widthF() for n, c in panel.curves().items() if n.startswith("update/")} \
        == {palette.UPDATE_WIDTH}


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


# -- following the run -----------------------------------------------------------------------------------
def test_the_step_axis_follows_the_run_until_the_user_zooms(panel_of, qtbot):
    store = RunData()
    panel = panel_of(store)
    panel.show()
    qtbot.waitExposed(panel)
    store.add_batch(MetricsBatch([block("D", np.arange(1, 501), ("d/k",))]))
    panel.refresh()
    x0, x1 = panel.loss_plot.vb.viewRange()[0]
    assert x0 <= 1 and 500 <= x1 < 500 * (1 + FOLLOW_HEADROOM) + 10  # room to grow into, padding aside
    assert panel.update_plot.vb.viewRange()[0] == [x0, x1]  # linked
    store.add_batch(MetricsBatch([block("D", np.arange(501, 511), ("d/k",))]))
    panel.refresh()
    assert panel.loss_plot.vb.viewRange()[0] == [x0, x1]  # the run grew into the room: nothing moved
    store.add_batch(MetricsBatch([block("D", np.arange(511, 541), ("d/k",))]))
    panel.refresh()
    assert panel.loss_plot.vb.viewRange()[0][1] >= 540  # past the end: the range moves
    vp = panel.graphics.viewport()
    centre = panel.graphics.mapFromScene(panel.loss_plot.vb.sceneBoundingRect().center())
    wheel = QtGui.QWheelEvent(QtCore.QPointF(centre), QtCore.QPointF(vp.mapToGlobal(centre)), QtCore.QPoint(0, 0),
                              QtCore.QPoint(0, 240), QtCore.Qt.MouseButton.NoButton,
                              QtCore.Qt.KeyboardModifier.NoModifier, QtCore.Qt.ScrollPhase.NoScrollPhase, False)
    QtCore.QCoreApplication.sendEvent(vp, wheel)
    assert not panel.following
    zoomed = panel.loss_plot.vb.viewRange()[0]
    store.add_batch(MetricsBatch([block("D", np.arange(541, 1001), ("d/k",))]))
    panel.refresh()
    assert panel.loss_plot.vb.viewRange()[0] == zoomed
    panel.loss_plot.autoBtnClicked()  # the "A" button: follow again
    assert panel.following and panel.loss_plot.vb.viewRange()[0][1] > 1000 * (1 + FOLLOW_HEADROOM / 2)
    store.add_event(events.Stop(step=1000, reason="done"))
    panel.refresh()
    assert 1000 <= panel.loss_plot.vb.viewRange()[0][1] < 1000 + 15  # stopped: no room left, padding aside


def test_switching_to_time_follows_the_runs_again(panel_of):
    """An event clicked in the Runs tab stops following (the plots go to its step); x by time then kept
    the step range, read as seconds: 0 to ~10,800 s for a 55 s run, every curve in the first pixels."""
    store = RunData()
    store.add_batch(MetricsBatch([block("D", np.arange(1, 2001), ("d/k",))]))  # a millisecond a step (blocks.py)
    panel = panel_of(store)
    panel.refresh()
    panel.show_step(1500)
    assert not panel.following
    panel.runs.set_option(align="time")
    panel.refresh()
    (x0, x1), _ = panel.loss_plot.vb.viewRange()
    steps, wall, _ = store.loss("D")
    assert panel.following and x1 <= (wall[-1] - wall[0]) * 1.1 + 1


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


def test_reset_leaves_no_stale_y_range(panel_of):
    """A run that diverged, then rolled back to step 0: the loss axis spanned 2e15 with no data."""
    store = RunData()
    store.add_batch(MetricsBatch([block("D", np.arange(1, 101), ("d/k",))]))
    store.add_scalar("loss/D", np.array([101]), np.array([101.0]), np.array([2e15]))
    panel = panel_of(store)
    panel.refresh()
    assert panel.loss_plot.vb.viewRange()[1][1] > 1e15
    store.clear()
    panel.reset()
    panel.refresh()
    assert panel.loss_plot.vb.viewRange()[1][1] < 10


def test_reset_forgets_the_run(ring, panel_of):
    panel = panel_of(ring)
    ring.add_event(events.Pause(step=100, reason="user"))
    panel.refresh()
    assert panel.curves() and panel.marker_lines("loss")
    ring.clear()
    panel.reset()
    assert panel.curves() == {} and panel.marker_lines("loss") == [] and panel.samples_view.kind is None
    assert panel.refresh() is True and panel.curves() == {}
    ring.add_batch(MetricsBatch([block("G", np.arange(1, 11), ("g/k",))]))
    panel.refresh()
    assert set(panel.curves()) == {"loss/G", "loss/G/smoothed", "update/g/k"}
    assert len(panel.curves()["loss/G"].xData) == 10


# -- long runs -------------------------------------------------------------------------------------------
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


# -- reading true --------------------------------------------------------------------------------------------
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


def test_an_unfrozen_zero_reads_no_update_and_a_frozen_one_frozen(panel_of):
    paths = ("g/a/kernel", "g/b/kernel")
    store = RunData()
    panel = panel_of(store)
    ratio = np.column_stack([np.full(100, 1e-3), np.r_[np.full(50, 1e-3), np.zeros(50)]])
    store.add_batch(MetricsBatch([block("G", np.arange(1, 101), paths, ratio=ratio)]))
    panel.refresh()
    floor = panel.updates.floor
    assert panel.updates.floor_line.label.format == "0 (no update)"  # g/b converged: not "frozen"
    c = panel.curves()["update/g/b/kernel"]
    assert c.opts["pen"].style() != QtCore.Qt.PenStyle.DotLine and (c.yData[50:] == floor).all()
    assert "g/b/kernel</b> ‖ΔW‖ / ‖W‖ 0 (no update)" in panel.readout.show_at(panel.update_plot, 80, floor)
    frozen = np.zeros((50, 2), bool)
    frozen[:, 0] = True
    store.add_batch(MetricsBatch([block("G", np.arange(101, 151), paths, ratio=np.zeros((50, 2)), frozen=frozen)]))
    panel.refresh()
    assert panel.updates.floor_line.label.format == "0 (frozen · no update)"
    assert "0 (frozen)" in panel.readout.show_at(panel.update_plot, 140, floor + 0.0001)


def test_wheel_zooms_steps_only_and_a_follows_again(panel_of, qtbot):
    store = RunData()
    store.add_batch(MetricsBatch([block("D", np.arange(1, 1001), ("d/k",), loss=np.linspace(5, 1, 1000))]))
    panel = panel_of(store)
    panel.show()
    qtbot.waitExposed(panel)
    panel.refresh()
    QtGui.QGuiApplication.processEvents()
    vb = panel.loss_plot.vb
    assert vb.state["mouseEnabled"] == [True, False] and panel.update_plot.vb.state["mouseEnabled"] == [True, False]
    vp = panel.graphics.viewport()
    centre = panel.graphics.mapFromScene(vb.sceneBoundingRect().center())
    wheel = QtGui.QWheelEvent(QtCore.QPointF(centre), QtCore.QPointF(vp.mapToGlobal(centre)), QtCore.QPoint(0, 0),
                              QtCore.QPoint(0, 480), QtCore.Qt.MouseButton.NoButton,
                              QtCore.Qt.KeyboardModifier.NoModifier, QtCore.Qt.ScrollPhase.NoScrollPhase, False)
    QtCore.QCoreApplication.sendEvent(vp, wheel)
    panel.graphics.scene().prepareForPaint()
    (x0, x1), (y0, y1) = vb.viewRange()
    assert x1 - x0 < 700 and not panel.following  # zoomed in on the steps ...
    shown = np.linspace(5, 1, 1000)[(np.arange(1, 1001) >= x0) & (np.arange(1, 1001) <= x1)]
    assert y0 <= shown.min() and shown.max() <= y1  # ... and the curve stays in view (y fits what is shown)
    panel.graphics.setFocus()
    qtbot.keyClick(panel.graphics, QtCore.Qt.Key.Key_A)
    assert panel.following and vb.viewRange()[0][1] >= 1000


def test_readout_wraps_and_clears_when_the_mouse_leaves(ring, panel_of, qtbot):
    panel = panel_of(ring)
    panel.refresh()
    text = panel.readout.show_at(panel.update_plot, 200, -3.0)
    assert panel.readout_label.text() == text and panel.readout_label.wordWrap()
    QtCore.QCoreApplication.sendEvent(panel.graphics.viewport(), QtCore.QEvent(QtCore.QEvent.Type.Leave))
    assert "hover a plot" in panel.readout_label.text() and not panel.readout.cursors[0].isVisible()


def test_each_metric_gets_a_plot_of_its_own(panel_of):
    store = RunData()
    batch = MetricsBatch([block("D", np.arange(1, 101), ("d/k",))],
                         scalars={"metric/modes_covered": (np.array([0, 50, 100]), np.zeros(3), np.array([0., 3, 8])),
                                  "metric/high_quality": (np.array([0, 50, 100]), np.zeros(3), np.array([0, .4, .9]))})
    store.add_batch(batch)
    panel = panel_of(store)
    panel.refresh()
    assert set(panel.metrics.plots) == {"metric/modes_covered", "metric/high_quality"}
    np.testing.assert_array_equal(panel.curves()["metric/modes_covered"].yData, [0, 3, 8])
    (lo, hi) = panel.metrics.plots["metric/modes_covered"].vb.viewRange()[1]
    assert lo <= 0 and hi >= 8
    assert panel.metrics.plots["metric/high_quality"].titleLabel.text == "high quality"
    assert panel.metrics.plots["metric/modes_covered"].vb.state["mouseEnabled"] == [True, False]


def test_24_variables_get_24_looks_in_the_window(panel_of):
    paths = tuple(f"net/layer_{i}/{leaf}" for i in range(12) for leaf in ("kernel", "bias"))
    store = RunData()
    store.add_batch(MetricsBatch([block("D", np.arange(1, 11), paths)]))
    panel = panel_of(store)
    panel.refresh()
    looks = {(c.opts["pen"].color().name(), c.opts["pen"].style(), tuple(c.opts["pen"].dashPattern()))
             for n, c in panel.curves().items() if n.startswith("update/")}
    assert len(looks) == 24


def test_a_variable_two_phases_train_gets_a_curve_per_phase_and_its_path_lights_both(panel_of):
    """An encoder trained by a reconstruction phase and a regularisation phase: the store kept the first phase's
    rows alone and the plot drew one curve for the two; now each phase's rows are a curve, named path@phase in
    the legend, and selecting the variable (by its path, as the scope tree does) lights both."""
    rec = ("encoder/dense/kernel", "decoder/dense/kernel")
    store = RunData()
    panel = panel_of(store)
    store.add_event(events.Start(phases=["rec", "reg"],
                                 phase_variables={"rec": list(rec), "reg": ["encoder/dense/kernel"]}))
    store.add_batch(MetricsBatch([block("rec", np.arange(1, 41, 2), rec),
                                  block("reg", np.arange(2, 42, 2), ("encoder/dense/kernel",))]))
    panel.refresh()
    curves = {n: c for n, c in panel.curves().items() if n.startswith("update/")}
    assert set(curves) == {"update/encoder/dense/kernel@rec", "update/decoder/dense/kernel",
                           "update/encoder/dense/kernel@reg"}
    for name, steps in (("encoder/dense/kernel@rec", np.arange(1, 41, 2)), ("encoder/dense/kernel@reg",
                                                                             np.arange(2, 42, 2))):
        np.testing.assert_array_equal(curves[f"update/{name}"].xData, steps)
        assert panel.update_legend.getLabel(curves[f"update/{name}"]).text == name
    panel.highlight_variable("encoder/dense/kernel")
    widths = {n: c.opts["pen"].widthF() for n, c in curves.items()}
    assert widths == {"update/encoder/dense/kernel@rec": palette.HIGHLIGHT_WIDTH,
                      "update/encoder/dense/kernel@reg": palette.HIGHLIGHT_WIDTH,
                      "update/decoder/dense/kernel": palette.UPDATE_WIDTH}

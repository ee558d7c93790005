"""The plots panel (app/plots/panel.py) as a whole: a refresh draws only what moved, a part per timer tick;
the x axis follows the run until the user zooms or pans; a reset forgets the run."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
from PySide6 import QtCore, QtGui  # noqa: E402

from app.plots.plot_view import FOLLOW_HEADROOM  # noqa: E402
from tests.app.blocks import block  # noqa: E402
from training_core import MetricsBatch  # noqa: E402
from training_core.base import events  # noqa: E402
from training_core.runs import RunData  # noqa: E402


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
    update = {n for n in counts if n.startswith("update/")}
    assert metric and update and len(metric | update) < len(counts)
    assert {counts[n] for n in counts if n not in metric | update} == {1}, counts
    assert {counts[n] for n in metric} == {0}, counts  # a point every second or two: unchanged, not redrawn
    assert {counts[n] for n in update} == {0}, counts  # no new record: nothing to hand (LiveCurve.keep)
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

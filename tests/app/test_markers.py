"""Marker labels (app/plots/markers.py) on a real plots panel: in the band above the plot, in full where
they fit, repeats merged into one label with its count, and inside the plot at its right edge."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
from PySide6 import QtGui  # noqa: E402

from tests.app.blocks import block  # noqa: E402
from training_core import MetricsBatch
from training_core.base import events  # noqa: E402
from app.plots import palette  # noqa: E402
from training_core.runs import RunData  # noqa: E402


def _labelled(panel_of, qtbot, *marks: events.Event):
    """A panel of 2,000 D steps with `marks`, shown and drawn; its loss plot's marker lines."""
    store = RunData()
    store.add_batch(MetricsBatch([block("D", np.arange(1, 2001), ("d/k",))]))
    for e in marks:
        store.add_event(e)
    panel = panel_of(store)
    panel.show()
    qtbot.waitExposed(panel)
    panel.refresh()
    QtGui.QGuiApplication.processEvents()
    return panel, panel.marker_lines("loss")


def _rect(panel, line):
    return line.label.mapRectToItem(panel.loss_plot, line.label.boundingRect())


def test_marker_labels_sit_above_the_plot_in_full_and_repeats_merge(panel_of, qtbot):
    freeze = events.Freeze(step=300, scopes=["discriminator/dense_1", "generator/dense_2"])
    clicks = [events.Pause(step=s, reason="step") for s in range(1500, 1510)]  # ten Step clicks
    panel, lines = _labelled(panel_of, qtbot, freeze, *clicks)
    shown = [ln for ln in lines if ln.label.isVisible()]
    assert [ln.label.toPlainText() for ln in shown] == ["freeze: discriminator/dense_1, generator/dense_2",
                                                        "pause (step) ×10"]  # in full, and one for ten clicks
    vb_top = panel.loss_plot.vb.geometry().top()
    for ln in shown:  # in the band above the plot area, never over a curve
        rect = _rect(panel, ln)
        assert rect.bottom() <= vb_top + 1 and rect.left() >= panel.loss_plot.vb.geometry().left() - 1
        assert rect.right() <= panel.loss_plot.vb.geometry().right() + 1
    panel.loss_plot.vb.setXRange(900, 1600, padding=0)  # panned: the freeze is out of view, so is its label
    assert not lines[0].label.isVisible() and shown[1].label.isVisible()


def test_repeated_marker_labels_at_the_right_edge_stay_inside_the_plot(panel_of, qtbot):
    """The count of a repeated label was appended after the label had been placed: at the right edge
    "pause (step) ×2" lost its "×2" (and another label read "pause (st")."""
    stop = events.Stop(step=2000, reason="done")  # no room left after the last step
    panel, lines = _labelled(panel_of, qtbot, stop, *[events.Pause(step=s, reason="step") for s in (1996, 1997, 1998)])
    shown = [ln for ln in lines if ln.label.isVisible()]
    assert [ln.label.toPlainText() for ln in shown] == ["pause (step) ×3"]
    assert _rect(panel, shown[0]).right() <= panel.loss_plot.vb.geometry().right() + 1


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


def test_marker_labels_never_overprint_late_in_a_crowded_run(panel_of, qtbot):
    """Late in a run a freeze label read "freeze: discriminator/conv…" with a pause marker's "+" printed over
    it: a label with no room even for "+" was put in the first row anyway, its white box over its neighbour.
    No two shown labels overlap now; a marker with no room for a label keeps its line, and the nearest label
    to its left names it in its tooltip."""
    freeze = events.Freeze(step=1900, scopes=["discriminator/conv_1", "discriminator/conv_2"])
    reasons = ["user", "step", "nan", "leak", "samples", "checkpoint"]
    pauses = [events.Pause(step=1903 + 3 * i, reason=reasons[i % len(reasons)]) for i in range(24)]
    panel, lines = _labelled(panel_of, qtbot, freeze, *pauses)
    shown = [ln for ln in lines if ln.label.isVisible()]
    rects = [(_rect(panel, ln), ln.label.toPlainText()) for ln in shown]
    for i, (a, ta) in enumerate(rects):
        for b, tb in rects[i + 1:]:
            assert not a.intersects(b), (ta, tb)
    assert lines[0].label.isVisible() and lines[0].label.toPlainText().startswith("freeze")
    hidden = [ln for ln in lines if not ln.label.isVisible() and ln.repeats == 1]
    assert hidden  # crowded: some have no label of their own ...
    tips = " ".join(ln.label.toolTip() for ln in shown)
    assert all(f"step {ln.marker.step:,}: {ln.text}" in tips for ln in hidden)  # ... but are named


def test_a_leak_found_at_report_time_is_drawn_at_its_steps_time_when_aligned_by_time(panel_of):
    """A leak's event carries the time it was reported (here 30 s after its step 800 ran at 0.8 s): drawn at
    that time, the line stood far right of the step it marks. It stands at its step's time now; a freeze, at
    its own."""
    store = RunData()
    store.add_event(events.Start(time=1e9, phases=["D"]))
    store.add_batch(MetricsBatch([block("D", np.arange(1, 2001), ("d/k",))]))  # step k at 1e9 + k/1000 s
    store.add_event(events.Freeze(step=300, time=1e9 + 0.35, scopes=["d/k"]))
    store.add_event(events.Leak(step=1900, time=1e9 + 30.0, at_step=800, variable="d/k", phase="D"))
    panel = panel_of(store)
    panel.runs.set_option(align="time")
    panel.refresh()
    assert [round(ln.value(), 6) for ln in panel.marker_lines("loss")] == [0.35, 0.8]


def test_leaks_of_several_variables_at_one_step_share_one_label_on_each_plot(panel_of, qtbot):
    """A Keras `Monitor` run whose 4 discriminator variables leaked at step 112 (one event per variable,
    reported at step 117) showed four "leak …" labels stacked over the one line, the fourth pushed left of
    it, on both plots. One label names them all now, each variable in its tooltip, and no two labels overlap."""
    names = ["discriminator/h1/kernel", "discriminator/h1/bias", "discriminator/out/kernel", "discriminator/out/bias"]
    leaks = [events.Leak(step=117, at_step=112, variable=v, phase="D") for v in names]
    panel, _ = _labelled(panel_of, qtbot, *leaks, events.Freeze(step=114, scopes=["discriminator/h1"]))
    for plot in ("loss", "update"):
        lines = panel.marker_lines(plot)
        assert [ln.value() for ln in lines] == [112] * 4 + [114]
        shown = [ln for ln in lines if ln.label.isVisible()]
        texts = [ln.label.toPlainText() for ln in shown]
        assert texts[0] == "leak: discriminator (4 variables)" and len(texts) == 2, texts
        assert all(f"leak {v}" in shown[0].label.toolTip() for v in names)
        rects = [_rect(panel, ln) for ln in shown]
        assert not rects[0].intersects(rects[1])


def test_a_marker_label_at_the_left_never_prints_over_the_update_plots_title(panel_of, qtbot):
    """The update plot's title ("update magnitude per variable") sits in the row its marker labels use: a
    marker near the run's start printed its label over the title."""
    panel, _ = _labelled(panel_of, qtbot, events.Freeze(step=20, scopes=["d/k"]))
    plot = panel.update_plot
    line = panel.marker_lines("update")[0]
    assert line.label.isVisible() and plot.titleLabel.isVisible()
    title = plot.titleLabel.item.mapRectToItem(plot, plot.titleLabel.item.boundingRect())
    label = line.label.mapRectToItem(plot, line.label.boundingRect())
    assert not title.intersects(label), (title, label)
    assert label.bottom() <= plot.vb.geometry().top() + 1  # still above the plot area

"""The health plots (app/plots/health.py): a plot per measure, its `_std` a band around it, on a log axis
when its values span decades (or as the plot's menu chooses)."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pyqtgraph as pg  # noqa: E402
from PySide6 import QtWidgets  # noqa: E402

from app.plots.axes import label_rects  # noqa: E402
from app.plots.health import SCALE_TEXT  # noqa: E402

from tests.app.blocks import block  # noqa: E402
from training_core import MetricsBatch  # noqa: E402
from training_core.runs import RunData  # noqa: E402


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


def _quality_store(fid, kid, kid_std, steps=None) -> RunData:
    """A run as the shapes example records it: FID, KID and KID's spread at each measure."""
    steps = np.arange(len(fid)) * 100 if steps is None else np.asarray(steps)
    store = RunData()
    w = np.zeros(len(steps))
    store.add_batch(MetricsBatch([block("D", np.arange(1, 301), ("d/k",))],
                                 scalars={"metric/fid": (steps, w, np.asarray(fid, float)),
                                          "metric/kid": (steps, w, np.asarray(kid, float)),
                                          "metric/kid_std": (steps, w, np.asarray(kid_std, float))}))
    return store


FID = [300.0, 40.0, 12.0, 4.0, 2.5]  # an untrained generator's FID, then a run that learns: 2 decades
KID = [120.0, 3.0, 0.8, 0.2, 0.1]  # 3 decades
KID_STD = [0.6, 0.3, 0.1, 0.05, 0.02]


def test_a_metric_spanning_decades_gets_a_log_axis_so_the_late_run_is_not_a_flat_line(panel_of, qtbot):
    panel = panel_of(_quality_store(FID, KID, KID_STD))
    panel.show()
    qtbot.waitExposed(panel)
    panel.refresh()
    plot = panel.metrics.plots["metric/kid"]
    assert plot.getAxis("left").logMode is True
    np.testing.assert_allclose(panel.curves()["metric/kid"].yData, np.log10(KID))
    lo, hi = plot.vb.viewRange()[1]  # in log10 units: the 3 decades of the measure, the top of its band too
    assert lo <= np.log10(min(KID)) and np.log10(KID[0] + KID_STD[0]) <= hi < np.log10(KID[0]) + 1
    # the last two measures (0.2, 0.1) are a factor of 2 apart: a tenth of the plot's height at least, where a
    # linear axis up to 120 put them within a thousandth of it
    assert (np.log10(0.2) - np.log10(0.1)) / (hi - lo) > 0.08
    QtWidgets.QApplication.processEvents()  # the new plots laid out
    labels = [t for _, t in label_rects(plot.getAxis("left"))]
    assert "100" in labels and "0.1" in labels, labels  # plain numbers, not "10⁻¹" or "2·10²"


def test_kid_and_its_std_are_one_plot_with_the_std_a_band_around_kid(panel_of):
    panel = panel_of(_quality_store(FID, KID, KID_STD))
    panel.refresh()
    assert list(panel.metrics.plots) == ["metric/fid", "metric/kid"]  # two plots, not three
    curves = panel.curves()
    assert "metric/kid_std" not in curves
    np.testing.assert_allclose(curves["metric/kid_std/low"].yData, np.log10(np.subtract(KID, KID_STD)))
    np.testing.assert_allclose(curves["metric/kid_std/high"].yData, np.log10(np.add(KID, KID_STD)))
    plot = panel.metrics.plots["metric/kid"]
    fills = [i for i in plot.items if isinstance(i, pg.FillBetweenItem)]
    assert len(fills) == 1 and not fills[0].path().isEmpty()
    assert fills[0].zValue() < curves["metric/kid"].zValue()  # the band under the line
    assert "± kid std" in plot.titleLabel.text and not any(
        isinstance(i, pg.FillBetweenItem) for i in panel.metrics.plots["metric/fid"].items)


def test_the_legend_and_plots_stay_as_they_are_while_measures_arrive(panel_of):
    store = _quality_store(FID[:2], KID[:2], KID_STD[:2])
    panel = panel_of(store)
    panel.refresh()
    titles = {t: p.titleLabel.text for t, p in panel.metrics.plots.items()}
    created = panel.metrics.created
    for i in range(2, len(FID)):
        for tag, v in (("metric/fid", FID), ("metric/kid", KID), ("metric/kid_std", KID_STD)):
            store.add_scalar(tag, [i * 100], [0.0], [v[i]])
        panel.refresh()
    assert panel.metrics.created == created  # no plot made again
    assert {t: p.titleLabel.text for t, p in panel.metrics.plots.items()} == titles
    plot = panel.metrics.plots["metric/kid"]
    assert sum(isinstance(i, pg.FillBetweenItem) for i in plot.items) == 1
    assert sum(isinstance(i, pg.PlotDataItem) for i in plot.items) == 1
    assert len(panel.curves()["metric/kid"].yData) == len(KID)


def test_a_spread_recorded_before_its_measure_joins_it_when_the_measure_arrives(panel_of):
    store = RunData()
    store.add_batch(MetricsBatch([block("D", np.arange(1, 11), ("d/k",))],
                                 scalars={"metric/kid_std": (np.array([0]), np.zeros(1), np.array([0.5]))}))
    panel = panel_of(store)
    panel.refresh()
    assert list(panel.metrics.plots) == ["metric/kid_std"]  # alone: a measure of its own
    store.add_scalar("metric/kid", [0], [0.0], [2.0])
    panel.refresh()
    assert list(panel.metrics.plots) == ["metric/kid"]
    np.testing.assert_allclose(panel.curves()["metric/kid_std/high"].yData, [2.5])


def test_values_within_a_decade_or_not_all_positive_stay_linear(panel_of):
    store = _quality_store([30.0, 20.0, 10.0, 5.0], [0.3, 0.1, 0.01, -0.002], [0.1, 0.05, 0.01, 0.01])
    panel = panel_of(store)
    panel.refresh()
    for tag in ("metric/fid", "metric/kid"):  # fid spans 6x; an unbiased KID below 0 has no logarithm
        assert panel.metrics.plots[tag].getAxis("left").logMode is False
    np.testing.assert_array_equal(panel.curves()["metric/kid"].yData, [0.3, 0.1, 0.01, -0.002])
    lo, hi = panel.metrics.plots["metric/kid"].vb.viewRange()[1]
    assert lo <= -0.012 and hi >= 0.4  # the band's edges (kid ± std) in view too


def test_the_right_click_menu_chooses_log_or_linear_and_the_choice_outlives_a_redraw(panel_of):
    store = _quality_store(FID, KID, KID_STD)
    panel = panel_of(store)
    panel.refresh()
    plot = panel.metrics.plots["metric/fid"]
    texts = [a.text() for a in plot.vb.menu.actions()]
    assert texts[-3:] == [SCALE_TEXT["auto"], SCALE_TEXT["log"], SCALE_TEXT["linear"]]
    linear = plot.vb.menu.actions()[-1]
    linear.trigger()
    assert plot.getAxis("left").logMode is False and linear.isChecked()
    np.testing.assert_array_equal(panel.curves()["metric/fid"].yData, FID)
    assert panel.metrics.plots["metric/kid"].getAxis("left").logMode is True  # the other plot keeps its own
    panel.runs.set_option(colour_by="phase")  # what is shown changed: every plot is made again ...
    panel.refresh()
    plot = panel.metrics.plots["metric/fid"]
    assert plot.getAxis("left").logMode is False and plot.vb.menu.actions()[-1].isChecked()  # ... as chosen
    plot.vb.menu.actions()[-3].trigger()  # automatic: log again, by the rule
    assert plot.getAxis("left").logMode is True
    np.testing.assert_allclose(panel.curves()["metric/fid"].yData, np.log10(FID))


def test_a_band_reaching_below_the_log_axis_runs_along_its_bottom(panel_of):
    """KID ± its std below 0 has no logarithm: the band's edge is drawn at the plot's bottom there, not aimed at
    minus infinity (between two measures that cut the plot diagonally)."""
    std = [0.6, 0.3, 0.1, 0.05, 0.12]  # the last measure's spread reaches below 0
    panel = panel_of(_quality_store(FID, KID, std))
    panel.refresh()
    bottom = panel.metrics.plots["metric/kid"].vb.viewRange()[1][0]
    low = panel.curves()["metric/kid_std/low"].yData
    assert bottom < np.log10(0.1) and np.all(np.isfinite(low)) and np.all(low >= bottom)
    np.testing.assert_allclose(low[:4], np.log10(np.subtract(KID, std)[:4]))
    assert low[4] == bottom


def test_the_last_metric_plot_and_the_update_plot_read_as_two_plots(panel_of, qtbot):
    """The kid plot sat 2 px above the update plot with nothing between: its axis read as running on into
    ‖ΔW‖/‖W‖. Each metric plot is framed, and the update plot has a title row of its own between them."""
    from app.plots import tight
    store = RunData()
    store.add_batch(MetricsBatch([block("D", np.arange(1, 101), ("d/k",))],
                                 scalars={"metric/kid": (np.array([0, 50, 100]), np.zeros(3), np.array([.3, .2, .1]))}))
    panel = panel_of(store)
    panel.show()
    qtbot.waitExposed(panel)
    panel.refresh()
    QtWidgets.QApplication.processEvents()
    kid, updates = panel.metrics.plots["metric/kid"], panel.update_plot
    assert updates.titleLabel.isVisible() and updates.titleLabel.text == tight.UPDATE_TITLE
    assert kid.vb.border is not None and kid.vb.border.style() != 0  # a frame round the kid plot's data
    gap = updates.vb.sceneBoundingRect().top() - kid.vb.sceneBoundingRect().bottom()
    assert gap >= tight.TITLE_PX  # the update plot's title between them, not 2 px of nothing

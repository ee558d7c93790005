"""The health plots (app/plots/health.py): a plot per metric."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402

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

"""Which metrics share a plot and when a metric plot is logarithmic (training_core/figures/metric_groups.py):
the one rule the window's health plots and the exported figures follow."""
from __future__ import annotations

import numpy as np

from training_core.figures.metric_groups import MetricGroup, band_edges, metric_groups, wants_log


def test_a_std_joins_its_measure_and_every_other_metric_keeps_a_plot():
    tags = ["metric/fid", "metric/kid", "metric/kid_std", "metric/modes_covered", "metric/noise_std"]
    assert metric_groups(tags) == [MetricGroup("metric/fid"), MetricGroup("metric/kid", "metric/kid_std"),
                                   MetricGroup("metric/modes_covered"), MetricGroup("metric/noise_std")]
    # in the order the measures first appeared, whichever of the pair came first
    assert metric_groups(["metric/kid_std", "metric/pca_fd", "metric/kid"]) == [
        MetricGroup("metric/pca_fd"), MetricGroup("metric/kid", "metric/kid_std")]
    assert metric_groups(["metric/kid_std"]) == [MetricGroup("metric/kid_std")]  # alone: a measure of its own


def test_log_when_positive_and_spanning_more_than_a_decade():
    assert wants_log([np.array([145.0, 2.8, 2.3])])  # the shapes example's FID: step 0, then trained
    assert wants_log([np.array([5.0, 2.0]), np.array([np.nan, 0.4])])  # over every run's values, NaN aside
    assert not wants_log([np.array([30.0, 3.0])])  # exactly a decade: linear
    assert not wants_log([np.array([0.0, 3.0, 8.0])])  # modes covered: 0 has no logarithm
    assert not wants_log([np.array([0.3, 0.01, -0.002])])  # an unbiased KID below 0
    assert not wants_log([np.array([]), np.array([np.nan])])


def test_band_edges_on_the_steps_both_have():
    idx, lo, hi = band_edges(np.array([0, 10, 20]), np.array([5.0, 4.0, 3.0]), np.array([0, 20]),
                             np.array([1.0, -0.5]))
    np.testing.assert_array_equal(idx, [0, 2])  # the spread at step 10 was never recorded (a cut file)
    np.testing.assert_allclose(lo, [4.0, 2.5])
    np.testing.assert_allclose(hi, [6.0, 3.5])


def test_a_spread_around_a_measure_never_below_0_stops_at_0():
    """KID ± kid_std with KID near 0: the band's edge went below 0 in the figure and the window's health plot."""
    steps = np.array([0, 10])
    _, lo, hi = band_edges(steps, np.array([0.002, 0.05]), steps, np.array([0.01, 0.01]))
    assert lo[0] == 0.0 and np.allclose(lo[1:], [0.04]) and np.allclose(hi, [0.012, 0.06])
    _, lo, _ = band_edges(steps, np.array([-0.001, 0.05]), steps, np.array([0.01, 0.01]))
    assert lo[0] < 0  # a measure that was below 0 keeps its edge

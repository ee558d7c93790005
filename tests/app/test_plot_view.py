"""What a refresh draws from (app/plots/plot_view.py): a store refilled from scratch is drawn afresh. A window's
opened or attached run is followed by a `RunFollower`, which clears and refills the same `RunData` when a
resume cut the record back (training_core/runs/follow.py); the refilled store often holds more points than
before, so the plots, which otherwise only append what a store gained, cannot tell by its length."""
from __future__ import annotations

import numpy as np

from tests.app.blocks import block
from training_core import MetricsBatch, ema_smooth
from training_core.runs import RunData


def test_a_store_refilled_from_scratch_is_drawn_afresh(panel_of):
    store = RunData()
    panel = panel_of(store)
    store.add_batch(MetricsBatch([block("D", np.arange(1, 101), ("d/k",), loss=np.full(100, 5.0),
                                        ratio=np.full((100, 1), 1e-2))]))
    assert panel.refresh()
    store.clear()
    values, ratio = np.linspace(1.0, 2.0, 150), np.full((150, 1), 1e-3)
    store.add_batch(MetricsBatch([block("D", np.arange(1, 151), ("d/k",), loss=values, ratio=ratio)]))
    assert panel.refresh()
    curves = panel.curves()
    np.testing.assert_allclose(curves["loss/D/smoothed"].yData, ema_smooth(values, 0.6)[0], rtol=1e-12)
    np.testing.assert_array_equal(curves["loss/D"].yData, values)
    assert curves["loss/D"].shown()[1].max() == 2.0  # the drawn envelope too: none of the old 5.0
    np.testing.assert_allclose(curves["update/d/k"].yData, np.full(150, -3.0))

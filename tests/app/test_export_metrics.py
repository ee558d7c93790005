"""Metric panels of exported figures (training_core/figures/data.py, app/export/panel.py and curves.py): a
measure's `_std` as a band around it in its panel, and a log axis when its values span decades, as in the
window, read back from the SVG the figure writes."""
from __future__ import annotations

import math

import numpy as np

from app.export import Figure, csv_text, svg_bytes
from app.export.text import TextStyle
from tests.app import svg_shapes as svg
from tests.app.blocks import block
from training_core import MetricsBatch
from training_core.figures import FigureSpec
from training_core.runs import RunData

STEPS = np.array([0, 500, 1000, 2000, 3000])
FID = np.array([300.0, 40.0, 12.0, 4.0, 2.5])  # an untrained generator's FID at step 0, then a run that learns
KID = np.array([120.0, 3.0, 0.8, 0.2, 0.1])
KID_STD = np.array([0.6, 0.3, 0.1, 0.05, 0.12])  # the last measure's spread reaches below 0 (drawn to 0)


def quality_run() -> RunData:
    store = RunData()
    w = 1e9 + STEPS.astype(float)
    store.add_batch(MetricsBatch([block("D", np.arange(1, 3001, 10), ("d/k",))],
                                 scalars={"metric/fid": (STEPS, w, FID), "metric/kid": (STEPS, w, KID),
                                          "metric/kid_std": (STEPS, w, KID_STD)}))
    return store


def test_kid_and_its_std_are_one_log_panel_with_a_band_that_runs_off_the_bottom(qapp):
    fig = Figure(quality_run(), FigureSpec(plots=["metrics"], width_in=7.16, height_in=2.0))
    assert [p.name for p in fig.data.plots] == ["metric/fid", "metric/kid"]  # two panels, not three
    assert all(p.log_y for p in fig.data.plots)
    kid = fig.data.plots[1].curves[0]
    np.testing.assert_allclose(kid.low, np.maximum(KID - KID_STD, 0))  # KID never below 0: its edge stops at 0
    np.testing.assert_allclose(kid.high, KID + KID_STD)
    assert [(e.label, e.band) for e in fig.data.plots[1].legend] == [("kid ± kid_std", True)]
    texts, shapes = svg.read(svg_bytes(fig))
    fid_panel, kid_panel = fig.layout()
    for panel in (fid_panel, kid_panel):  # the two labelled decades a log axis has at least
        assert len([t for t in panel.yticks if t.text]) >= 2 and panel.yr[1] - panel.yr[0] < 3.5
    # the late run reads: 0.2 -> 0.1 is a factor of 2, a tenth of the kid panel's height (on a linear axis to
    # 120 it was a thousandth)
    a = kid_panel.area
    assert (kid_panel.Y(math.log10(0.1)) - kid_panel.Y(math.log10(0.2))) / a.height() > 0.08
    colour = fig.theme.colour(0).name()
    band = [s for s in shapes if s.fill == colour and s.fill_opacity < 1 and s.stroke in ("none", "")]
    assert len(band) == 1
    ys = band[0].ys
    assert abs(min(ys) - float(kid_panel.Y(math.log10(KID[0] + KID_STD[0])))) < 0.05  # its top edge as measured
    assert abs(max(ys) - a.bottom()) < 0.05  # 0.1 - 0.12 < 0: down to the axis, not dropped, not below it
    assert "kid ± kid_std" in [t.text for t in texts] and "kid_std" not in [t.text for t in texts]


def test_a_metric_within_a_decade_stays_linear_from_zero(qapp):
    store = RunData()
    s = np.array([0, 100, 200])
    store.add_batch(MetricsBatch([block("D", np.arange(1, 201), ("d/k",))],
                                 scalars={"metric/modes_covered": (s, s * 1.0, np.array([0.0, 3, 8])),
                                          "metric/relative_error": (s, s * 1.0, np.array([0.9, 0.02, 1e-4]))}))
    fig = Figure(store, FigureSpec(plots=["metrics"], width_in=7.16, height_in=2.0))
    modes, error = fig.data.plots
    assert not modes.log_y and modes.legend == []  # a count from 0 has no logarithm
    assert error.log_y  # factorization's error, 4 decades
    fig.layout()
    svg_bytes(fig)


def test_the_csv_gives_a_banded_metric_its_edges(qapp):
    text = csv_text(Figure(quality_run(), FigureSpec(plots=["metrics"])).data)
    lines = text.splitlines()
    assert lines[0] == "step,wall_time,tag,value,smoothed,run,low,high"
    kid = [r.split(",") for r in lines[1:] if ",metric/kid," in r]
    np.testing.assert_allclose([float(r[6]) for r in kid], np.maximum(KID - KID_STD, 0))
    np.testing.assert_allclose([float(r[7]) for r in kid], KID + KID_STD)
    assert all(r.split(",")[6:] == ["", ""] for r in lines[1:] if ",metric/fid," in r)


def test_a_metric_axis_labels_its_ticks_with_one_number_of_decimals(qapp):
    """A fraction's axis read "0, 0.2, 0.4, ..., 1.0" in the exported figure: zero was written without the
    decimals of the other labels. Read from the SVG: every label left of the panel has the same decimals."""
    store = RunData()
    s = np.array([0, 100, 200])
    store.add_batch(MetricsBatch([block("D", np.arange(1, 201), ("d/k",))],
                                 scalars={"metric/high_quality": (s, s * 1.0, np.array([0.0, 0.5, 1.0]))}))
    fig = Figure(store, FigureSpec(plots=["metrics"], width_in=3.5, height_in=2.5))
    (panel,) = fig.layout()
    assert not fig.data.plots[0].log_y
    a = panel.area
    texts, _ = svg.read(svg_bytes(fig))
    labels = [t.text for t in texts if not t.rotated and t.x + TextStyle(t.size).width(t.text) < a.left()
              and a.top() - 4 <= t.y <= a.bottom() + 4]
    assert len(labels) >= 3 and any(float(x) == 0 for x in labels), labels
    decimals = {len(x.partition(".")[2]) for x in labels}
    assert len(decimals) == 1 and decimals != {0}, labels  # 0.0, 0.5, 1.0 (or 0.0, 0.2, ...): not 0 beside 1.0

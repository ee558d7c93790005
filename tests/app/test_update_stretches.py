"""One variable's update curve split by frozen state (app/plots/update_stretches.py), on the window's real plots
panel: a freeze drawn as a step at its own step, a record's step too, and a curve that gains only gaps (a frozen
variable's trained stretches) not handed them, drawing what it would have drawn."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from app.plots.curves import LiveCurve  # noqa: E402
from tests.app.blocks import block  # noqa: E402
from tests.core.synthetic import SimulatedTrainer  # noqa: E402
from training_core import MetricsBatch, RunConfig  # noqa: E402
from training_core.base import commands as C, events  # noqa: E402
from training_core.base import protocol as P  # noqa: E402
from training_core.runs import RunData  # noqa: E402


def _lines(curve: LiveCurve) -> list[tuple[float, float]]:
    """The points the curve's stroke draws a line to (its gaps, NaN in the data, draw none), in order."""
    out = []
    for piece in curve.stroke.pieces:
        path = piece.path()
        out += [(e.x, e.y) for e in (path.elementAt(i) for i in range(path.elementCount())) if e.isLineTo()]
    return out


def _drawn_at(curve, x: float) -> float:
    """The height of the drawn polyline at `x` (between its points: the line joining them)."""
    return float(np.interp(x, curve.xData, curve.yData))


def test_a_freeze_at_a_record_step_drops_at_that_step_as_one_between_records_does(panel_of):
    """The simulated trainer's ring run, D and G alternating 1:1 (G's records at even steps): the generator frozen
    at step 10, after G's own step 10 (that record trained, the one at 12 the first frozen), was drawn dropping at
    12, the next record. It drops at 10, as the unfreeze at 21 (after D's step, between G's records) lifts at 21."""
    sim, store = SimulatedTrainer(), RunData()
    panel = panel_of(store)

    def feed(reports: list) -> None:
        for r in reports:
            if isinstance(r, P.Emitted):
                store.add_event(r.event)
            elif isinstance(r, P.Metrics):
                store.add_batch(r.batch)

    feed(sim.run(RunConfig(example="ring", steps=100)))
    feed(sim.train(10))
    panel.refresh()  # live: the freeze and its records come after the first refresh
    feed(sim.command(C.SetFreeze(["generator"])))
    feed(sim.train(11))
    feed(sim.command(C.SetFreeze([])))
    feed(sim.train(19))
    panel.refresh()
    path = "generator/dense_1/kernel"
    assert [m.step for m in store.markers if m.kind == "freeze"] == [10, 21]
    assert panel.updates.stretches(path) == [(2.0, 10.0, "trained"), (10.0, 21.0, "frozen"), (21.0, 40.0, "trained")]
    c, fz = panel.curves()[f"update/{path}"], panel.curves()[f"update/{path} (frozen)"]
    floor, level = panel.updates.floor, float(c.yData[0])
    assert level > floor + 1 and _drawn_at(c, 9.9) == pytest.approx(level)
    at = np.flatnonzero(fz.xData == 10)  # record 10 (trained: a gap here), then the drop, vertical: level, floor
    assert len(at) == 3 and np.isnan(fz.yData[at[0]]) and fz.yData[at[1]] == pytest.approx(level)
    assert fz.yData[at[2]] == floor
    assert _drawn_at(fz, 10.1) == floor and _drawn_at(fz, 20.9) == floor and _drawn_at(c, 21.1) == pytest.approx(level)
    assert (fz.xData[np.isfinite(fz.yData)] <= 21).all() and (fz.xData[np.isfinite(fz.yData)] >= 10).all()


def test_a_curve_that_gains_only_gaps_is_not_handed_them_and_draws_what_all_its_points_draw(panel_of):
    """A variable frozen for refresh after refresh: its trained curve gains NaN only, which draws nothing, so it
    is not handed them (each `setData` cost a 6-of-12-frozen tick 1.15x the all-training one: bench/
    frozen_window.py). As the panel widens its range to follow the run, the curve is still cut for the new range,
    and draws exactly what a curve handed all its points draws there."""
    paths = ("g/d1/kernel", "g/d1/bias")
    store = RunData()
    panel = panel_of(store)
    store.add_batch(MetricsBatch([block("G", np.arange(1, 101), paths)]))
    panel.refresh()
    store.add_event(events.Freeze(step=100, scopes=["g/d1/kernel"]))
    c = panel.curves()["update/g/d1/kernel"]
    handed, ranges = [], []
    for lo in range(101, 901, 100):  # eight refreshes of frozen records, the run growing out of its range
        steps = np.arange(lo, lo + 100)
        frozen = np.zeros((len(steps), 2), bool)
        frozen[:, 0] = True
        store.add_batch(MetricsBatch([block("G", steps, paths, ratio=np.where(frozen, 0.0, 1e-3), frozen=frozen)]))
        panel.refresh()
        handed.append(len(c.xData))
        ranges.append(tuple(panel.update_plot.vb.viewRange()[0]))
    # the first: its records to 100, the drop's two points and 100 gaps; after it, nothing more
    assert handed == [202] * 8
    assert len(set(ranges)) > 1  # the range moved meanwhile (following the run)
    vc = panel.updates.vars["g/d1/kernel"]
    assert len(vc.x) == 902 and np.isnan(vc.trained_y.view()[202:]).all()  # what it was not handed: gaps only
    ref = LiveCurve(pen=c.opts["pen"])  # the same points, every one handed
    panel.update_plot.addItem(ref)
    ref.setData(vc.x.view(), vc.trained_y.view())
    assert c.stroke._view == ref.stroke._view  # cut for the range shown now
    assert _lines(c) == _lines(ref) and len(_lines(c)) >= 100
    fz = panel.curves()["update/g/d1/kernel (frozen)"]  # its frozen curve gains floor points: handed each time
    assert len(fz.xData) == 902 and fz.yData[-1] == panel.updates.floor
    store.add_event(events.Freeze(step=900, scopes=[]))  # unfrozen: the trained curve is handed everything again
    store.add_batch(MetricsBatch([block("G", np.arange(901, 951), paths)]))
    panel.refresh()
    assert len(c.xData) == len(vc.x) == 954 and -3.4 < _drawn_at(c, 925) < -2.2
    assert panel.updates.stretches("g/d1/kernel") == [(1.0, 100.0, "trained"), (100.0, 900.0, "frozen"),
                                                      (900.0, 950.0, "trained")]

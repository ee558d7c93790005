"""The update plot's curves (app/plots/update_curves.py): log10 of ‖ΔW‖/‖W‖ or ‖ΔW‖ per variable, exact zeros on
a floor that reads "0 (frozen)" or "0 (no update)", a look per variable, a curve per phase of a shared
variable, a highlight, and a freeze drawn as a step at its step."""
from __future__ import annotations

import math
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PySide6 import QtCore, QtGui  # noqa: E402

from app.plots import palette  # noqa: E402
from tests.app.blocks import block  # noqa: E402
from tests.app.ring_run import FROZEN  # noqa: E402
from training_core import MetricsBatch  # noqa: E402
from training_core.base import events  # noqa: E402
from training_core.runs import RunData  # noqa: E402


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
        c = curves[f"update/{path} (frozen)"]  # frozen throughout: all on the frozen curve, the trained one empty
        np.testing.assert_array_equal(c.yData, np.full(len(ratio), ups.floor))
        assert np.isnan(curves[f"update/{path}"].yData).all()
        assert c.opts["pen"].style() == QtCore.Qt.PenStyle.DotLine
        assert c.opts["pen"].color().name() == palette.FROZEN_GREY
        assert panel.update_legend.getLabel(c).text == f"{path} (frozen)"
        assert ups.stretches(path) == [(float(c.xData[0]), float(c.xData[-1]), "frozen")]
    for path in others:  # kernels solid, biases dashed: a line style per kind of leaf
        assert f"update/{path} (frozen)" not in curves
        c = curves[f"update/{path}"]
        style = QtCore.Qt.PenStyle.SolidLine if path.endswith("kernel") else QtCore.Qt.PenStyle.CustomDashLine
        assert c.opts["pen"].style() == style and (c.yData > ups.floor).all()
    assert panel.updates.floor_line.label.format == "0 (frozen)"
    assert panel.update_axis.logTickStrings([ups.floor, -3.0], 1, 1) == ["0", "10⁻³"]
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
    fz = panel.curves()["update/g/d1/kernel (frozen)"]
    assert (c.yData[:101] > floor + 0.5).all() and np.isnan(c.yData[101:]).all()  # a step at 100: two points
    assert np.isnan(fz.yData[:100]).all() and (fz.yData[101:] == floor).all() and fz.yData[100] == c.yData[100]
    assert c.opts["pen"].style() == QtCore.Qt.PenStyle.SolidLine  # the trained stretch keeps its look
    assert fz.opts["pen"].style() == QtCore.Qt.PenStyle.DotLine
    # frozen at step 100, after its update: record 100 the last trained, the drop at 100
    assert panel.updates.stretches("g/d1/kernel") == [(1.0, 100.0, "trained"), (100.0, 200.0, "frozen")]
    assert panel.update_legend.getLabel(fz).text == "g/d1/kernel (frozen)"
    assert panel.update_axis.floor == floor and panel.marker_lines("update")[0].value() == 100
    assert panel.readout.show_at(panel.update_plot, 150, floor).count("0 (frozen)") == 1
    store.add_batch(MetricsBatch([block("G", np.arange(201, 251), paths)]))
    panel.refresh()
    assert c.opts["pen"].style() == QtCore.Qt.PenStyle.SolidLine and (c.yData[-50:] > floor).all()
    assert np.isnan(fz.yData[-50:]).all()
    assert panel.update_legend.getLabel(c).text == "g/d1/kernel"
    assert panel.updates.stretches("g/d1/kernel") == [(1.0, 100.0, "trained"), (100.0, 201.0, "frozen"),
                                                      (201.0, 250.0, "trained")]


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


def _drawn_at(curve, x: float) -> float:
    """The height of the drawn polyline at `x` (between its points: the line joining them)."""
    return float(np.interp(x, curve.xData, curve.yData))


def test_a_freeze_is_a_step_at_its_step_not_a_slope_from_the_record_before(panel_of):
    """Records every 50 steps, a freeze at step 235: the curve sloped from its record at step 200 down to the
    floor at 250, which read as a decay that began before the freeze. It holds its level to step 235 and drops
    there, on the log axis; an unfreeze at 385 lifts it at its step."""
    paths = ("g/d1/kernel", "g/d1/bias")
    store = RunData()
    panel = panel_of(store)
    level = np.full((4, 2), 1e-3)
    store.add_batch(MetricsBatch([block("G", np.arange(50, 201, 50), paths, ratio=level)]))
    panel.refresh()  # live: the freeze's records come in a later refresh
    store.add_event(events.Freeze(step=235, scopes=["g/d1/kernel"]))
    steps = np.arange(250, 501, 50)
    frozen = np.zeros((len(steps), 2), bool)
    frozen[steps < 385, 0] = True
    store.add_event(events.Freeze(step=385, scopes=[]))
    store.add_batch(MetricsBatch([block("G", steps, paths, ratio=np.full((len(steps), 2), 1e-3), frozen=frozen)]))
    panel.refresh()
    c = panel.curves()["update/g/d1/kernel"]
    fz = panel.curves()["update/g/d1/kernel (frozen)"]
    floor = panel.updates.floor
    level = pytest.approx(-3.0, abs=1e-6)  # log10 of float32 1e-3
    assert _drawn_at(c, 230) == level and _drawn_at(fz, 240) == floor  # level until the freeze, the floor after
    assert _drawn_at(fz, 380) == floor and _drawn_at(c, 390) == level  # and back up at the unfreeze
    assert list(c.xData).count(235) == 2 and list(c.xData).count(385) == 2  # vertical: two points at the step
    at = np.flatnonzero(fz.xData == 235)  # the drop and the lift are the frozen curve's, vertical at their step
    assert fz.yData[at[0]] == level and fz.yData[at[1]] == floor
    at = np.flatnonzero(fz.xData == 385)
    assert fz.yData[at[0]] == floor and fz.yData[at[1]] == level
    assert panel.updates.stretches("g/d1/kernel") == [(50.0, 235.0, "trained"), (235.0, 385.0, "frozen"),
                                                      (385.0, 500.0, "trained")]
    other = panel.curves()["update/g/d1/bias"]  # not frozen: its records alone
    np.testing.assert_array_equal(other.xData, np.arange(50, 501, 50))
    # the readout names the records, not the points the step added
    assert "0 (frozen)" in panel.readout.show_at(panel.update_plot, 300, floor)
    assert "step 300" in panel.readout.show_at(panel.update_plot, 300, floor)


def test_a_freeze_drawn_decimated_stays_a_step_at_its_step(panel_of, qtbot):
    """Two million steps, a record every 10, in ~1,000 pixels: the curve is drawn peak-decimated, and the
    freeze at step 1,234,567 is still a drop at its pixel, level before it and on the floor after."""
    paths = ("g/d1/kernel",)
    store = RunData()
    freeze = 1_234_567
    store.add_event(events.Freeze(step=freeze, scopes=["g/d1/kernel"]))
    steps = np.arange(10, 2_000_001, 10)
    frozen = (steps > freeze)[:, None]
    store.add_batch(MetricsBatch([block("G", steps, paths, ratio=np.full((len(steps), 1), 1e-3), frozen=frozen)]))
    panel = panel_of(store)
    panel.show()
    qtbot.waitExposed(panel)
    panel.refresh()
    QtGui.QGuiApplication.processEvents()
    c = panel.curves()["update/g/d1/kernel (frozen)"]  # it draws the drop, joined to the level before it
    xs, ys = c.shown()
    assert 0 < len(xs) < 10_000  # decimated
    vb = panel.update_plot.vb
    px = (vb.viewRange()[0][1] - vb.viewRange()[0][0]) / vb.width()
    floor, level = panel.updates.floor, float(panel.curves()["update/g/d1/kernel"].yData[0])
    tx, ty = panel.curves()["update/g/d1/kernel"].shown()
    assert (ty[np.isfinite(ty)] == level).all() and tx[np.isfinite(ty)].max() <= freeze + 2 * px
    keep = np.isfinite(ys)
    xs, ys = np.r_[tx[tx < freeze - 2 * px], xs[keep]], np.r_[ty[tx < freeze - 2 * px], ys[keep]]
    assert (ys[xs < freeze - 2 * px] == level).all() and (ys[xs > freeze + 2 * px] == floor).all()
    drop = [i for i in range(len(xs) - 1) if ys[i] == level and ys[i + 1] == floor]
    assert len(drop) == 1 and xs[drop[0]] == xs[drop[0] + 1] and abs(xs[drop[0]] - freeze) <= 2 * px


def _pens_by_stretch(panel, name: str) -> list[tuple[float, float, str, QtCore.Qt.PenStyle, str]]:
    """Each drawn stretch of `name` with the pen of the curve that draws it (style, colour)."""
    curves = panel.curves()
    out = []
    for x0, x1, kind in panel.updates.stretches(name):
        pen = curves[f"update/{name}" + (" (frozen)" if kind == "frozen" else "")].opts["pen"]
        out.append((x0, x1, kind, pen.style(), pen.color().name()))
    return out


def test_a_variable_frozen_mid_run_is_drawn_in_its_own_look_until_its_freeze_and_grey_dots_after(panel_of):
    """The tester's loop5: critic/h2 frozen at step 424 was drawn dotted '(frozen)' from step 0, in its colour mixed
    towards grey. Its trained stretch keeps its look; the frozen stretch alone is grey dots on the floor."""
    paths = ("critic/h2/kernel", "critic/h1/kernel")
    store = RunData()
    store.add_event(events.Freeze(step=420, scopes=["critic/h2/kernel"]))
    steps = np.arange(8, 801, 8)  # a record every 8 steps, the freeze between two
    frozen = np.zeros((len(steps), 2), bool)
    frozen[steps > 420, 0] = True
    ratio = np.where(frozen, 0.0, 2e-3)
    store.add_batch(MetricsBatch([block("D", steps, paths, ratio=ratio, frozen=frozen)]))
    panel = panel_of(store)
    panel.refresh()
    own = panel.curves()["update/critic/h1/kernel"].opts["pen"].color().name()  # not frozen, for comparison
    trained, drop = _pens_by_stretch(panel, "critic/h2/kernel")
    assert trained[:3] == (8.0, 420.0, "trained") and trained[3] == QtCore.Qt.PenStyle.SolidLine
    assert trained[4] not in (palette.FROZEN_GREY, own)  # its own colour, not grey (h1 has another)
    assert drop == (420.0, 800.0, "frozen", QtCore.Qt.PenStyle.DotLine, palette.FROZEN_GREY)
    fz = panel.curves()["update/critic/h2/kernel (frozen)"]
    assert (fz.yData[np.isfinite(fz.yData)][1:] == panel.updates.floor).all()  # after the drop: on the floor
    assert panel.update_legend.getLabel(fz).text == "critic/h2/kernel (frozen)"
    assert _pens_by_stretch(panel, "critic/h1/kernel") == [(8.0, 800.0, "trained", QtCore.Qt.PenStyle.SolidLine, own)]


def test_a_variable_unfrozen_mid_run_leaves_the_frozen_floor_in_its_own_look(panel_of):
    """The tester's loop2: critic/h1 frozen for steps 1–681 then unfrozen was drawn solid on the '0 (frozen)'
    floor; the frozen stretch is grey dots there, the lift at 681 vertical, the rest in its own look."""
    paths = ("critic/h1/kernel",)
    store = RunData()
    store.add_event(events.Freeze(step=0, scopes=["critic/h1/kernel"]))
    store.add_event(events.Freeze(step=681, scopes=[]))
    steps = np.arange(1, 1001)
    frozen = (steps < 681)[:, None]  # the records from 681 on trained
    store.add_batch(MetricsBatch([block("D", steps, paths, ratio=np.where(frozen, 0.0, 5e-3), frozen=frozen)]))
    panel = panel_of(store)
    panel.refresh()
    floor = panel.updates.floor
    stretches = _pens_by_stretch(panel, "critic/h1/kernel")
    assert [s[:3] for s in stretches] == [(1.0, 681.0, "frozen"), (681.0, 1000.0, "trained")]
    assert stretches[0][3:] == (QtCore.Qt.PenStyle.DotLine, palette.FROZEN_GREY)
    assert stretches[1][3] == QtCore.Qt.PenStyle.SolidLine and stretches[1][4] != palette.FROZEN_GREY
    c, fz = panel.curves()["update/critic/h1/kernel"], panel.curves()["update/critic/h1/kernel (frozen)"]
    assert (fz.yData[fz.xData < 681] == floor).all() and np.isnan(c.yData[c.xData < 681]).all()
    at = np.flatnonzero(fz.xData == 681)  # the lift: two points at its step, floor then level (then the record)
    assert len(at) == 3 and np.isnan(fz.yData[at[2]]) and fz.yData[at[0]] == floor and fz.yData[at[1]] > floor + 1
    assert (c.yData[c.xData > 681] > floor + 1).all()
    assert panel.update_legend.getLabel(c).text == "critic/h1/kernel"  # not frozen now: its own entry
    assert "0 (frozen)" in panel.readout.show_at(panel.update_plot, 300, floor)  # hover reads every record
    assert "step 300" in panel.readout.show_at(panel.update_plot, 300, floor)


def test_a_freeze_arriving_live_restyles_from_its_step_only(panel_of):
    """Curves append what the run gained each refresh: a freeze that arrives live leaves every point drawn before
    it as it was (the trained curve only grew), and draws grey dots from its step."""
    paths = ("g/d1/kernel", "g/d1/bias")
    store = RunData()
    panel = panel_of(store)
    store.add_batch(MetricsBatch([block("G", np.arange(10, 301, 10), paths)]))
    panel.refresh()
    c = panel.curves()["update/g/d1/kernel"]
    before_x, before_y = c.xData.copy(), c.yData.copy()
    assert "update/g/d1/kernel (frozen)" not in panel.curves()
    store.add_event(events.Freeze(step=305, scopes=["g/d1/kernel"]))
    for lo in (310, 410):  # two refreshes with frozen records
        steps = np.arange(lo, lo + 100, 10)
        frozen = np.zeros((len(steps), 2), bool)
        frozen[:, 0] = True
        store.add_batch(MetricsBatch([block("G", steps, paths, ratio=np.where(frozen, 0.0, 1e-3), frozen=frozen)]))
        panel.refresh()
    np.testing.assert_array_equal(c.xData[:len(before_x)], before_x)
    np.testing.assert_array_equal(c.yData[:len(before_y)], before_y)  # drawn before the freeze: unchanged
    assert np.isnan(c.yData[len(before_y) + 1:]).all()
    assert [s[:3] for s in _pens_by_stretch(panel, "g/d1/kernel")] == [(10.0, 305.0, "trained"),
                                                                       (305.0, 500.0, "frozen")]
    assert c.opts["pen"].style() == QtCore.Qt.PenStyle.SolidLine
    assert panel.curves()["update/g/d1/kernel (frozen)"].opts["pen"].style() == QtCore.Qt.PenStyle.DotLine


def test_a_gate_leak_keeps_the_trained_curves_a_usable_range(panel_of):
    """A frozen variable under the gate method leaks by decades a step (Adam's momentum decaying): the floor fell
    with it to 1e-15 and the trained curves (1e-3) kept two decades of fourteen. The floor stays two decades
    under the lowest trained value; the leak below it is drawn on the floor, which names it, not "0"."""
    from training_core import PhaseBlock
    paths = ("g/a/kernel", "g/b/kernel")
    store = RunData()
    panel = panel_of(store)
    n = 300
    steps = np.arange(1, n + 1, dtype=np.int64)
    leak = 1e-3 * 0.9 ** np.arange(n)  # down to ~1e-17
    ratio = np.column_stack([np.full(n, 1e-3), leak])
    frozen = np.zeros((n, 2), bool)
    frozen[:, 1] = True
    store.add_batch(MetricsBatch([PhaseBlock("G", paths, steps, 1e9 + steps * 1e-3, np.ones(n), ratio * 10, ratio,
                                             ratio * 100, frozen, np.ones(n, bool))]))
    panel.refresh()
    ups = panel.updates
    assert ups.floor == -3 - 2 - 1  # a decade under two decades below the lowest trained value: -6, not -15
    panel.update_plot.vb.autoRange()
    bottom, top = panel.update_plot.vb.viewRange()[1]
    assert top - bottom < 6  # the trained curve at -3 in a few decades, not squeezed into the top of fourteen
    fz = panel.curves()["update/g/b/kernel (frozen)"]
    assert np.nanmin(fz.yData) == ups.floor and fz.yData[0] == pytest.approx(-3)  # the leak's start at its value
    label = ups.floor_line.label.format
    assert ups.floor_line.isVisible() and "leak ≤ 1e-6" in label and "0 (" not in label  # nothing is exactly 0
    assert panel.update_axis.logTickStrings([ups.floor, -3.0], 1, 1) == ["≤1e-6", "10⁻³"]


def test_a_not_trainable_variable_that_moved_reads_as_the_export_says(panel_of):
    """A monitor (fit()) run: g/d1/kernel reads trainable = False and moved anyway. The window's legend called it
    "(frozen)", the export "not trainable (moved: a leak)": one wording now (figures/frozen.py)."""
    from training_core import PhaseBlock
    from training_core.figures import FigureData, FigureSpec

    paths, steps = ("g/d1/kernel", "g/d1/bias"), np.arange(1, 101, dtype=np.int64)
    store = RunData()
    store.monitor = "fit"
    frozen = np.zeros((100, 2), bool)
    frozen[:, 0] = True
    ratio = np.full((100, 2), 1e-3)  # the "frozen" kernel moved as much as the bias
    store.add_batch(MetricsBatch([PhaseBlock("G", paths, steps, 1e9 + steps * 1e-3, np.ones(100), ratio * 10, ratio,
                                             ratio * 100, frozen, np.ones(100, bool))]))
    panel = panel_of(store)
    panel.refresh()
    label = panel.update_legend.getLabel(panel.curves()["update/g/d1/kernel (frozen)"]).text
    export = [e.label for e in FigureData.from_store(store, FigureSpec(plots=["updates"])).plots[0].legend]
    assert "d1/kernel — not trainable (moved: a leak)" in export  # the scope tree's "g", then its variables
    assert label == "g/d1/kernel — not trainable (moved: a leak)" and "(frozen)" not in label
    assert panel.update_legend.getLabel(panel.curves()["update/g/d1/bias"]).text == "g/d1/bias"

"""The heat-map update view of wide models, in the real window on the stand-in service (a synthetic run
of 2 × 30 layers = 120 variables, whose numbers are known: tests/core/synthetic.py), and on hand-made
`RunData` where a test needs exact zeros of both kinds. Checked on the view's data and state, not on
pixels."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtCore, QtGui

from app.panels.scope_tree import EAGER_ROWS
from app.plots import PlotsPanel
from app.plots.heatmap import FROZEN_RGBA, NO_UPDATE_RGBA
from app.plots.update_plot import AUTO_LIMIT, TOP_K
from tests.app.blocks import block
from tests.app.fake_service import FakeTrainingService
from tests.core.synthetic import SimulatedTrainer
from training_core import MetricsBatch, PhaseBlock, SetFreeze, VarInfo
from training_core.runs import RunData
from training_core.runs.heat import ZERO_FREE, ZERO_FROZEN

LAYERS = 30
WIDE = [VarInfo(f"{model}/dense_{i}/{leaf}", (64, 64) if leaf == "kernel" else (64,), "float32", True)
        for model in ("generator", "discriminator") for i in range(LAYERS) for leaf in ("kernel", "bias")]


def wide_service(parent):
    service = FakeTrainingService(parent)
    service.sim = SimulatedTrainer(WIDE)
    return service


def phase_paths(model: str) -> list[str]:
    return [v.path for v in WIDE if v.path.startswith(model + "/")]


@pytest.fixture
def wide(ui, qtbot):
    """A window training the wide stand-in for 400 steps (D first: its variables come first)."""
    w = ui.make(service_factory=wide_service)
    w.start()
    qtbot.waitUntil(lambda: w.running, timeout=60_000)
    w.core.train(400)
    ui.flush(w)
    w.refresh()
    return w


def heat_pos(w, x: float, row: int) -> QtCore.QPoint:
    vb = w.plots.update_views.heat_plot.vb
    return w.plots.graphics.mapFromScene(vb.mapViewToScene(QtCore.QPointF(x, row + 0.5)))


def test_a_wide_run_shows_the_heat_map_rows_grouped_by_scope(wide):
    views, heat = wide.plots.update_views, wide.plots.heat
    assert len(WIDE) > AUTO_LIMIT and views.showing_heat and heat.plot.isVisible()
    assert views.heat_button.isChecked() and not views.curves_button.isChecked()
    # the D phase's model first (the order the run lists its variables), each model a block in build order
    expected = phase_paths("discriminator") + phase_paths("generator")
    assert [p for _, p in heat.rows] == expected
    assert [p.split("/")[1] for p in expected[:6]] == ["dense_0"] * 2 + ["dense_1"] * 2 + ["dense_2"] * 2
    assert [(name, a, b) for name, a, b in heat._blocks] == [("discriminator", 0, 60), ("generator", 60, 120)]
    assert [line.value() for line in heat._lines] == [60]
    assert ["discriminator" in lab.toPlainText() for lab in heat._labels] == [True, False]
    image = heat.image.image
    assert image.shape == (len(WIDE), heat.grid.n_columns) and 1 <= heat.grid.n_columns <= 512
    # each variable recorded every other step (1:1): bins at least that wide, so no empty cell in between
    assert heat.grid.width >= 2 and np.isfinite(image[:, 1:-1]).all()
    # the colours are log10 of the synthetic ratios (norm / 10, linspace(1e-2, 2e-2) over a phase's variables)
    assert heat.levels == (-3.0, -2.0)
    np.testing.assert_allclose(image[0, 1:-1], -3.0, atol=1e-6)
    # curves on demand only: the top movers
    assert sorted(views.curves.vars) == sorted(views.movers) and len(views.movers) == TOP_K


def test_frozen_cells_are_drawn_frozen_not_as_a_small_value(wide, ui, qtbot):
    target = "discriminator/dense_3"
    wide.controller.send(SetFreeze((target,)))
    wide.core.train(400)
    ui.flush(wide)
    wide.refresh()
    heat = wide.plots.heat
    rows = [i for i, (_, p) in enumerate(heat.rows) if p.startswith(target + "/")]
    assert len(rows) == 2
    at = heat.grid.column_at(401)  # the freeze applied from step 401 (a D step) on
    zeros = heat.grid.zero_state()
    # (the last column may hold a G step only: no record of D's variables)
    assert (zeros[rows, at:-1] == ZERO_FROZEN).all() and (zeros[rows, :at] == 0).all()
    assert np.isnan(heat.image.image[rows, at:-1]).all()  # no colour from the scale
    assert (heat.zero_image.image[rows[0], at] == FROZEN_RGBA).all()
    assert (heat.zero_image.image[rows[0], 0, 3] == 0)  # before the freeze: nothing over the colour
    assert "0 (frozen)" in heat.describe(700, rows[0] + 0.5)


def test_frozen_and_no_update_zeros_stay_apart_and_the_readout_says_which(qtbot):
    paths = tuple(f"net/layer_{i}/{leaf}" for i in range(30) for leaf in ("kernel", "bias"))
    n, v = 50, len(paths)
    steps = np.arange(1, n + 1)
    ratio = np.full((n, v), 1e-3)
    ratio[:, 0] = 0.0  # frozen
    ratio[:, 1] = 0.0  # not frozen, exactly 0: no update
    ratio[:, 2] = 1e-9  # tiny but real: a colour
    frozen = np.zeros((n, v), bool)
    frozen[:, 0] = True
    store = RunData()
    store.add_batch(MetricsBatch([PhaseBlock("D", paths, steps, 1e9 + steps, np.ones(n), ratio * 10, ratio,
                                             ratio, frozen, np.ones(n, bool))]))
    panel = PlotsPanel(store)
    qtbot.addWidget(panel)
    panel.refresh()
    heat = panel.heat
    assert panel.update_views.showing_heat
    zeros, image, over = heat.grid.zero_state(), heat.image.image, heat.zero_image.image
    assert (zeros[0] == ZERO_FROZEN).all() and (zeros[1] == ZERO_FREE).all() and (zeros[2:] == 0).all()
    assert (over[0, :] == FROZEN_RGBA).all() and (over[1, :] == NO_UPDATE_RGBA).all() and (over[2:, :, 3] == 0).all()
    np.testing.assert_allclose(image[2], -9.0, atol=1e-6)
    assert heat.levels == (-9.0, -3.0)
    assert heat.describe(10, 0.5).startswith("net/layer_0/kernel · steps ")
    assert heat.grid.width == 1 and heat.describe(10, 0.5).endswith("‖ΔW‖ / ‖W‖ 0 (frozen) (1 record)")
    assert "0 (no update)" in heat.describe(10, 1.5) and "0 (frozen)" not in heat.describe(10, 1.5)
    assert "1e-09" in heat.describe(10, 2.5)
    # absolute mode draws ‖ΔW‖ (here 10 × the ratio)
    panel.set_update_mode("absolute")
    np.testing.assert_allclose(heat.image.image[2], -8.0, atol=1e-6)


def test_the_toggle_switches_views_and_the_choice_holds(wide, ui):
    views = wide.plots.update_views
    views.curves_button.click()
    assert views.choice == "curves" and not views.showing_heat and not views.heat.plot.isVisible()
    assert len(views.curves.vars) == len(WIDE) and views.curves.only is None
    wide.core.train(50)
    ui.flush(wide)
    wide.refresh()
    assert not views.showing_heat  # the user's choice holds over the count
    views.heat_button.click()
    assert views.showing_heat and len(views.curves.vars) == TOP_K
    views.movers_box.click()  # no movers, nothing selected: the curve plot folds away
    assert not views.curves.vars and not views.plot.isVisible()


def test_top_movers_are_the_largest_recent_updates_and_a_freeze_drops_them(wide, ui):
    views = wide.plots.update_views
    # the stand-in's ratios rise along each phase's variables (equal in D and G): the last 4 of each
    top = set(phase_paths("discriminator")[-4:] + phase_paths("generator")[-4:])
    assert set(views.movers) == top
    assert set(views.curves.vars) == top
    # freeze the generator's last two layers: after 20+ records of zeros they are no movers any more
    wide.controller.send(SetFreeze((f"generator/dense_{LAYERS - 1}", f"generator/dense_{LAYERS - 2}")))
    wide.core.train(100)
    ui.flush(wide)
    wide.refresh()
    # next in line: D's dense_27 and G's dense_27 (equal values), not G's dense_26
    expected = set(phase_paths("discriminator")[-6:] + phase_paths("generator")[-6:-4])
    assert set(views.movers) == set(views.curves.vars) == expected
    assert all("dense_27" in p for p in views.movers[-4:])  # largest first


def test_hovering_the_heat_map_reads_out_variable_steps_and_value(wide, qtbot):
    panel = wide.plots
    heat = panel.heat
    row = 70  # generator/dense_5/kernel
    path = heat.rows[row][1]
    x = 201.0
    lo, hi = heat.grid.column_span(heat.grid.column_at(x))
    steps, _, ratio = wide.store.var_series(path)
    inside = ratio[(steps >= lo) & (steps < hi)]
    mean = 10 ** np.log10(inside).mean()
    text = panel.readout.show_at(heat.plot, x, row + 0.5)
    assert path in text and f"steps {int(lo):,}–{int(hi) - 1:,}" in text and f"{mean:.3g}" in text
    qtbot.waitExposed(wide)
    QtGui.QGuiApplication.processEvents()
    qtbot.mouseMove(panel.graphics.viewport(), heat_pos(wide, x, row))
    qtbot.waitUntil(lambda: path in panel.readout_label.text(), timeout=60_000)


def test_clicking_a_row_selects_its_variable_and_draws_its_curve(wide, qtbot):
    heat, views = wide.plots.heat, wide.plots.update_views
    qtbot.waitExposed(wide)
    QtGui.QGuiApplication.processEvents()
    row = 9
    path = heat.rows[row][1]
    assert path not in views.curves.vars
    qtbot.mouseClick(wide.plots.graphics.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=heat_pos(wide, 200, row))
    item = wide.scope_tree.tree.currentItem()
    assert item is not None and item.data(0, QtCore.Qt.ItemDataRole.UserRole) == path
    assert heat.highlighted == path and heat.highlight_band.isVisible()
    assert heat.highlight_band.getRegion() == (row, row + 1)
    assert path in views.curves.vars and views.curves.highlighted == path
    # selecting a scope in the tree draws the curves under it
    wide.scope_tree.tree.setCurrentItem(wide.scope_tree.item("generator/dense_7"))
    assert {"generator/dense_7/kernel", "generator/dense_7/bias"} <= set(views.curves.vars)


def test_a_narrow_updates_of_filter_brings_the_curves_back(wide):
    wide.plots.runs.set_option(scopes=["generator/dense_1"])
    wide.refresh()
    views = wide.plots.update_views
    assert not views.showing_heat and set(views.curves.vars) == {"generator/dense_1/kernel", "generator/dense_1/bias"}
    wide.plots.runs.set_option(scopes=[])
    wide.refresh()
    assert views.showing_heat


def test_a_wide_tree_draws_the_rows_on_screen_and_the_others_as_they_come_into_view(wide, qtbot):
    tree = wide.scope_tree
    assert len(tree._items) > EAGER_ROWS  # drawn lazily
    states = wide.session.variables.states
    last = "generator/dense_29"  # scopes of the last layer: far below the panel's bottom edge
    item = tree.item(last)
    assert item.text(1) == ""  # not drawn while off screen
    tree.tree.scrollToItem(item)
    qtbot.waitUntil(lambda: item.text(1) == f"{states[last].value:.2e}", timeout=60_000)
    item.setExpanded(True)
    kernel = tree.item(last + "/kernel")
    tree.tree.scrollToItem(kernel)
    qtbot.waitUntil(lambda: kernel.text(1) == f"{states[last + '/kernel'].value:.2e}", timeout=60_000)
    first = tree.tree.topLevelItem(0)
    assert first.text(1) == f"{states[first.data(0, QtCore.Qt.ItemDataRole.UserRole)].value:.2e}"


def test_a_variable_two_phases_train_has_a_row_per_phase_and_its_path_outlines_both(qtbot):
    """Each phase's records of a shared variable are a row of their own (the store kept the first phase's
    alone: the other phase's records were never drawn), and the variable selected by its path outlines both."""
    paths = tuple(f"encoder/layer_{i}/kernel" for i in range(30)) + tuple(f"decoder/layer_{i}/kernel"
                                                                          for i in range(30))
    shared = paths[:30]
    store = RunData()
    n = 20
    store.add_batch(MetricsBatch([
        PhaseBlock("rec", paths, np.arange(1, 2 * n, 2), np.zeros(n), np.ones(n), np.full((n, 60), 1e-2),
                   np.full((n, 60), 1e-3), np.ones((n, 60)), np.zeros((n, 60), bool), np.ones(n, bool)),
        PhaseBlock("reg", shared, np.arange(2, 2 * n + 1, 2), np.zeros(n), np.ones(n), np.full((n, 30), 1e-1),
                   np.full((n, 30), 1e-5), np.ones((n, 30)), np.zeros((n, 30), bool), np.ones(n, bool))]))
    panel = PlotsPanel(store)
    qtbot.addWidget(panel)
    panel.refresh()
    heat = panel.heat
    assert panel.update_views.showing_heat
    names = [p for _, p in heat.rows]
    assert len(names) == 90 and set(names) == {f"{p}@rec" for p in shared} | {f"{p}@reg" for p in shared} | \
        set(paths[30:])
    means = heat.grid.log_means()
    for i, name in enumerate(names):  # rec's records in the rec row, reg's in the reg row
        finite = means[i][np.isfinite(means[i])]
        np.testing.assert_allclose(finite, -5.0 if name.endswith("@reg") else -3.0, atol=1e-6)
    panel.highlight_variable("encoder/layer_3/kernel")
    lo, hi = heat.highlight_band.getRegion()
    assert heat.highlight_band.isVisible()
    assert {names[i] for i in range(int(lo), int(hi))} >= {"encoder/layer_3/kernel@rec", "encoder/layer_3/kernel@reg"}


def test_a_frozen_variable_is_no_mover_at_once_and_curves_after_the_heat_map_keep_the_legend_order(ui, qtbot):
    """Frozen a few records ago, a variable's recent mean was still its old size: it was listed among the "top 8
    movers" though it no longer moved. And after Heat map → Curves the legend listed the movers first, then the
    rest: scrambled. A frozen variable is never a mover; the legend keeps the run's order of its variables."""
    paths = tuple(f"net/layer_{i}/{leaf}" for i in range(10) for leaf in ("kernel", "bias"))  # 20: curves by count
    store = RunData()
    panel = PlotsPanel(store)
    qtbot.addWidget(panel)
    panel.resize(1100, 700)
    ratio = np.tile(np.linspace(1e-3, 2e-2, len(paths)), (200, 1))  # layer_9 moves most
    store.add_batch(MetricsBatch([block("D", np.arange(1, 201), paths, ratio=ratio)]))
    panel.refresh()
    views = panel.update_views
    order = [label.text for _, label in views.legend.items]
    assert order == list(paths)  # the run's order, curves by count
    views.heat_button.click()
    frozen = np.zeros((5, len(paths)), bool)
    frozen[:, -2:] = True  # net/layer_9 frozen: five records of zeros (the recent mean is still large)
    store.add_batch(MetricsBatch([block("D", np.arange(201, 206), paths, ratio=ratio[:5], frozen=frozen)]))
    panel.refresh()
    assert views.movers and not {"net/layer_9/kernel", "net/layer_9/bias"} & set(views.movers), views.movers
    assert len(views.movers) == TOP_K
    views.curves_button.click()
    assert len(views.curves.vars) == len(paths)
    assert [label.text.removesuffix(" (frozen)") for _, label in views.legend.items] == order


def test_a_live_tick_computes_its_new_columns_only_and_the_image_stays_the_whole_grid(qtbot, monkeypatch):
    """The image's columns are computed again only where the tick's records landed (counted: the columns the
    grid's means are asked for); after every tick, through a merge of the bins, the image and its zero cells
    are the whole grid's, as when it was computed whole; a tick of losses only computes nothing."""
    from training_core.runs.heat import HeatGrid
    asked = []
    means = HeatGrid.log_means

    def counted(self, lo=0, hi=None):
        asked.append((hi if hi is not None else self.n_columns) - lo)
        return means(self, lo, hi)
    monkeypatch.setattr(HeatGrid, "log_means", counted)
    paths = tuple(f"net/layer_{i}/{leaf}" for i in range(30) for leaf in ("kernel", "bias"))
    store = RunData()
    panel = PlotsPanel(store)
    qtbot.addWidget(panel)
    rng = np.random.default_rng(0)
    v, widths = len(paths), set()

    def tick(first: int, n: int, record_every: int = 5) -> None:
        steps = np.arange(first, first + n)
        ratio = 10.0 ** rng.uniform(-5, -2, (n, v))
        ratio[:, :3] = 0.0
        frozen = np.zeros((n, v), bool)
        frozen[:, 0] = True
        store.add_batch(MetricsBatch([PhaseBlock("D", paths, steps, 1e9 + steps, np.ones(n), ratio * 10, ratio,
                                                 ratio, frozen, steps % record_every == 0)]))
        asked.clear()
        panel.refresh()

    for k in range(120):  # 4,800 steps: more than 512 columns of 8
        tick(1 + 40 * k, 40)
        g = panel.heat.grid
        widths.add(g.width)
        image, over = panel.heat.image.image, panel.heat.zero_image.image
        np.testing.assert_array_equal(image, means(g).astype(np.float32))
        zeros = g.zero_state()
        assert (over[zeros == ZERO_FROZEN] == FROZEN_RGBA).all() and (over[zeros == ZERO_FREE] == NO_UPDATE_RGBA).all()
        assert (over[zeros == 0] == 0).all() and image.shape == zeros.shape == over.shape[:2]
    assert len(widths) > 1  # the bins merged on the way
    assert g.n_columns > 100 and sum(asked) <= 4  # 8 records, 40 steps: a few columns of 8 steps
    tick(4801, 40, record_every=1_000)  # losses only
    assert asked == []


def test_top_movers_box_is_ticked_only_where_it_applies_and_says_why_not(panel_of):
    """Curves mode (18 variables) showed "top 8 movers" ticked but greyed beside a legend of all 18 curves:
    a filter that seemed on and did nothing. Unticked there, its tooltip says it applies to the heat map;
    the heat map ticks it again and draws the 8."""
    paths = tuple(f"net/layer_{i}/kernel" for i in range(18))
    store = RunData()
    store.add_batch(MetricsBatch([block("D", np.arange(1, 201), paths)]))
    panel = panel_of(store)
    panel.refresh()
    views = panel.update_views
    box = views.movers_box
    assert not views.showing_heat and len(views.curves.vars) == 18
    assert not box.isEnabled() and not box.isChecked() and "heat map only" in box.toolTip()
    views.heat_button.click()
    assert box.isEnabled() and box.isChecked() and len(views.curves.vars) == TOP_K
    box.click()  # the user's choice holds through a switch of views
    views.curves_button.click()
    views.heat_button.click()
    assert not box.isChecked() and not views.curves.vars

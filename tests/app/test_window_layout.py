"""The window on a 1366x768 laptop screen (a real window, offscreen, at the size `fitting_size` gives it
there: the screen less 40 px): the update plot, the scope tree and their legends keep a usable height.
A user found the update plot ~150 px tall with a legend as tall, and the discriminator, what one usually
freezes, below the fold of the tree."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from app.sweep_dock import DOCK_MIN_PX, DOCK_SHARE, SHORT_PX

from tests.app.fake_service import FakeTrainingService
from tests.core.synthetic import SimulatedTrainer
from training_core import VarInfo

# the digits example's shape: a generator of 5 layers (two BatchNormalizations) and a discriminator of 3
LAYERS = [("generator", ["dense_1", "bn_1", "deconv_1", "bn_2", "conv_out"]), ("discriminator", ["conv_1", "conv_2", "out"])]
DIGITS = [VarInfo(f"{model}/{layer}/{leaf}", (8, 8) if leaf == "kernel" else (8,), "float32", True)
          for model, layers in LAYERS for layer in layers
          for leaf in (("gamma", "beta") if layer.startswith("bn") else ("kernel", "bias"))]


def digits_service(parent):
    service = FakeTrainingService(parent)
    service.sim = SimulatedTrainer(DIGITS)
    return service


def test_on_a_1366x768_screen_the_update_plot_and_the_tree_keep_a_usable_height(ui, qtbot):
    w = ui.make(service_factory=digits_service)
    w.resize(1366, 768 - 40)
    w.start()
    qtbot.waitUntil(lambda: w.running, timeout=60_000)
    w.core.train(300)
    ui.flush(w)
    w.refresh()
    QApplication.processEvents()
    assert (w.width(), w.height()) == (1366, 728)
    p = w.plots
    update, loss, legend = p.update_plot.vb.height(), p.loss_plot.vb.height(), p.update_legend.geometry().height()
    assert len(p.updates.vars) == len(DIGITS) and p.update_legend.isVisible()  # every variable in the legend ...
    assert update >= 180 and legend <= 0.6 * update, (update, legend)  # ... not as tall as the plot (146, 130)
    assert loss >= 120, loss
    tree = w.scope_tree.tree
    assert tree.verticalScrollBar().value() == 0
    bottom = tree.viewport().rect().bottom()

    def in_view(item) -> bool:  # its whole row, top to bottom (a row's rect spans every column)
        r = tree.visualItemRect(item)
        return r.height() > 0 and 0 <= r.top() and r.bottom() <= bottom

    for model in ("generator", "discriminator"):  # both models (and their layers) in view, no scrolling
        item = w.scope_tree.item(model)
        assert in_view(item), model
        assert all(in_view(item.child(i)) for i in range(item.childCount())), model


STEPS = 60


@pytest.fixture(scope="module")
def ablation(tmp_path_factory):
    """A real 2 ratios × 2 freeze settings × 2 seeds sweep of the ring (8 runs, a planned freeze at step 30 in
    half of them), made by the headless CLI, as the tester's was."""
    from tests.core.helpers import main_cmd, run_all
    d = tmp_path_factory.mktemp("sweep_layout") / "ablation"
    r = run_all({"sweep": main_cmd("--headless", "--sweep", "--example", "ring", "--steps", str(STEPS),
                                   "--no-tensorboard", "--grid", "ratio=1:1,2:1",
                                   "--grid", "freeze=none,discriminator/dense_1@30", "--grid", "seed=0,1",
                                   "--sweep-dir", str(d), "--quiet")}, timeout=900)["sweep"]
    assert r.returncode == 0, r.stderr
    return d


def _settle(w) -> None:
    for _ in range(3):
        w.refresh()
        QApplication.processEvents()


def _names_whole_in_tooltips(w) -> None:
    """Every run in the loss legend, its name cut or whole; a cut one says its whole name on hover."""
    labels = {e.label for e in w.review.runs.entries}
    legend = w.plots.loss_legend
    runs = [label for _, label in legend.items][:legend.run_count]
    assert len(runs) == len(labels) == 8
    for label in runs:
        if label.text in labels:
            assert label.toolTip() == ""
        else:
            assert label.toolTip() in labels and label.text.endswith(label.toolTip()[-6:])  # "… seed=0"


@pytest.mark.parametrize("width, height, usable", [(1250, 780, 120), (1366, 768 - 40, 120), (1440, 900, 120),
                                                   (1440, 1080, 120)])
def test_a_sweep_opened_leaves_the_plots_usable_and_no_legend_over_data(ui, qtbot, ablation, width, height, usable):
    """The tester's window: the Sweeps dock took 42% of the height, the loss and update plots were a line of ticks
    each (0 px of data), the loss legend's 8 columns ran off the right edge and the dock's legend lay over the
    bands without a background. Then, with a 27% dock, the 8 long run names (one legend column of 10 rows) and the
    ring's two metric plots still left them < 30 px at 1250x780 and 1366x728. Now a short window shows the sweep as
    a tab beside the plots, and the plots' column is packed (app/plots/tight.py, run_legend.py)."""
    w = ui.make(fake=True, wait=False, open_runs=[str(ablation)])
    left = w.splitter.sizes()[0]
    w.resize(width, height)
    sweeps = w.review.sweeps
    view = sweeps.views()[0]
    if height < SHORT_PX:  # beside the plots, in front (what was opened), the dock hidden, the left column as it was
        qtbot.waitUntil(lambda: sweeps.as_tabs, timeout=10_000)
        assert sweeps.host.currentWidget() is view and not sweeps.isVisible()
        assert w.splitter.widget(1) is sweeps.host and sweeps.host.widget(0) is w.plots
        assert w.splitter.sizes()[0] == left
        sweeps.show_plots()
    else:
        qtbot.waitUntil(lambda: abs(sweeps.height() - max(DOCK_MIN_PX, int(w.height() * DOCK_SHARE))) <= 30,
                        timeout=10_000)
        assert not sweeps.as_tabs and sweeps.height() <= (DOCK_SHARE + 0.03) * w.height()
    _settle(w)
    p = w.plots
    loss, update = p.loss_plot.vb.height(), p.update_plot.vb.height()
    assert loss >= usable and update >= usable, (loss, update)
    (x0, x1), _ = p.loss_plot.vb.viewRange()
    assert x0 <= 1 and x1 >= STEPS  # the runs' whole length (their first record is at step 1)
    for legend in (p.loss_legend, p.update_legend):  # within the plots' width: nothing cut on the right
        assert legend.sceneBoundingRect().right() <= p.graphics.viewport().width() + 1, legend
    assert p.loss_legend.rowCount <= 4  # was 10
    _names_whole_in_tooltips(w)
    if sweeps.as_tabs:
        sweeps.host.setCurrentWidget(view)
        QApplication.processEvents()
        assert view.plot.plotItem.vb.height() >= 300  # the whole height beside the plots (a 170 px dock: ~60)
    assert len(view.plot.drawn) == 4
    band_legend, data = view.plot.legend.sceneBoundingRect(), view.plot.plotItem.vb.sceneBoundingRect()
    assert band_legend.height() > 0 and not band_legend.intersects(data)  # above the data, not over it
    assert band_legend.right() <= view.plot.viewport().width() + 1


def test_a_window_resized_across_the_threshold_moves_the_sweep_between_tab_and_dock(ui, qtbot, ablation):
    """A short window's sweep tab goes to the dock when the window grows past SHORT_PX, and back; closing it
    beside the plots puts the plots back in their place, with no tab bar over them."""
    w = ui.make(fake=True, wait=False, open_runs=[str(ablation)])
    sweeps = w.review.sweeps
    w.resize(1366, 728)
    qtbot.waitUntil(lambda: sweeps.as_tabs, timeout=10_000)
    w.resize(1440, SHORT_PX + 40)
    qtbot.waitUntil(lambda: not sweeps.as_tabs and sweeps.isVisible(), timeout=10_000)
    assert w.splitter.widget(1) is w.plots and len(sweeps.views()) == 1 and sweeps.tabs.count() == 1
    w.resize(1366, 728)
    qtbot.waitUntil(lambda: sweeps.as_tabs, timeout=10_000)
    assert [sweeps.host.tabText(i) for i in range(sweeps.host.count())] == ["Plots", ablation.name]
    sweeps.host.tabCloseRequested.emit(0)  # the plots' tab does not close
    assert sweeps.host.count() == 2
    sweeps.host.tabCloseRequested.emit(1)
    assert sweeps.views() == [] and not sweeps.as_tabs and w.splitter.widget(1) is w.plots
    assert w.plots.isVisible() and not sweeps.isVisible()

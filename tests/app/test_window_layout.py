"""The window on a 1366x768 laptop screen (a real window, offscreen, at the size `fitting_size` gives it
there: the screen less 40 px): the update plot, the scope tree and their legends keep a usable height.
A user found the update plot ~150 px tall with a legend as tall, and the discriminator, what one usually
freezes, below the fold of the tree."""
from __future__ import annotations

from PySide6.QtWidgets import QApplication

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

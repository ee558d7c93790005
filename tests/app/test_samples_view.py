"""The samples view draws each kind an experiment's `sample(ctx)` returns: points, image grids (real above
generated), matrices (target, reconstruction, difference at one size on one colour scale), and says so
for a kind it cannot draw."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PySide6 import QtGui  # noqa: E402

from app.plots.samples import SamplesView, image_grid  # noqa: E402
from training_core.runs import RunData  # noqa: E402


def test_samples_view_shows_each_kind(panel_of):
    store = RunData()
    panel = panel_of(store)
    view = panel.samples_view
    panel.refresh()
    assert view.kind is None and "No samples yet" in view.placeholder.text()
    rng = np.random.default_rng(0)

    store.set_samples({"kind": "points2d", "step": 10, "real": rng.normal(size=(512, 2)),
                       "fake": rng.normal(size=(300, 2))})
    panel.refresh()
    assert view.kind == "points2d" and len(view.points.fake.data) == 300 and len(view.points.real.data) == 512
    assert view.points.getPlotItem().vb.viewRange()[0][0] <= -3 + 1e-9

    fake = np.tanh(rng.normal(size=(64, 8, 8, 1))).astype(np.float32)
    store.set_samples({"kind": "images", "step": 20, "real": fake, "fake": fake})
    panel.refresh()
    assert view.kind == "images" and view.images.image.image.shape == (71, 71)
    np.testing.assert_array_equal(view.images.image.image[:8, :8], fake[0, :, :, 0].T)
    assert tuple(view.images.image.levels) == (-1.0, 1.0)
    assert view.images.real_image.isVisible() and view.images.real_image.image.shape == (71, 17)  # 2 real rows
    assert view.images.real_image.pos().y() < view.images.image.pos().y()  # real digits above generated ones
    assert image_grid(fake[:3]).shape == (26, 8)  # 3 images: one row of 3

    target = rng.normal(size=(60, 40))
    store.set_samples({"kind": "matrix", "step": 30, "target": target, "reconstruction": target * 0.9,
                       "error": 0.0123})
    panel.refresh()
    assert view.kind == "matrix" and "RMS error 0.0123" in view.matrix.title.text
    assert [img.image.shape for img in view.matrix.images] == [(40, 60)] * 3  # target, reconstruction, difference
    np.testing.assert_allclose(view.matrix.images[2].image, (target - target * 0.9).T)
    assert tuple(view.matrix.bar.levels()) == pytest.approx((-np.abs(target).max(), np.abs(target).max()))
    boxes = [img.mapRectToScene(img.boundingRect()) for img in view.matrix.images]
    assert len({(round(b.width(), 6), round(b.height(), 6)) for b in boxes}) == 1  # drawn at the same size

    store.set_samples({"kind": "audio", "step": 40})
    panel.refresh()
    assert view.kind is None and "audio" in view.placeholder.text()


def _ring_column(qtbot) -> SamplesView:
    """The ring's samples in a column as tall and narrow as the window's."""
    view = SamplesView()
    qtbot.addWidget(view)
    view.resize(260, 900)
    view.show()
    rng = np.random.default_rng(0)
    view.show_samples({"kind": "points2d", "step": 1, "real": rng.normal(size=(50, 2)), "fake": rng.normal(size=(50, 2))})
    qtbot.waitUntil(lambda: view.points.isVisible())
    return view


def test_points_keep_their_square_in_a_tall_narrow_column(qtbot):
    """The window's samples column is tall and narrow: an aspect-locked scatter filling it showed y from -9
    to 9, the ring's points in its middle third. The view now sits at the top, about square."""
    view = _ring_column(qtbot)
    (x0, x1), (y0, y1) = view.points.getPlotItem().vb.viewRange()
    assert x0 <= -3 + 1e-9 and y0 <= -3 + 1e-9 and (y1 - y0) < 1.3 * (x1 - x0)


def test_the_points_last_x_label_stands_inside_the_window(qtbot):
    """The ring's samples in the window's column: the x axis' "3" sat on the view's right edge, against the window's
    edge (cut, or with the grid on dropped). The plot keeps a right margin and the label stands whole inside it."""
    view = _ring_column(qtbot)
    p = view.points.getPlotItem()
    assert p.layout.getContentsMargins()[2] > 4
    axis = p.getAxis("bottom")
    picture = QtGui.QPicture()
    painter = QtGui.QPainter(picture)
    texts = axis.generateDrawSpecs(painter)[2]
    painter.end()
    right = [axis.mapRectToScene(rect) for rect, _, text in texts if text == "3"]
    assert right, [t for _, _, t in texts]
    width = view.points.viewport().width()
    assert right[0].right() <= width - 1 and right[0].right() > p.vb.sceneBoundingRect().right()


def test_the_points_legend_names_only_what_is_drawn(panel_of):
    """Samples of generated points alone: the legend said "real" over no real points."""
    store = RunData()
    panel = panel_of(store)
    view = panel.samples_view
    rng = np.random.default_rng(1)
    store.set_samples({"kind": "points2d", "step": 10, "fake": rng.normal(size=(300, 2))})
    panel.refresh()
    names = lambda: [label.text for _, label in view.points.getPlotItem().legend.items]  # noqa: E731
    assert view.kind == "points2d" and names() == ["generated"]
    store.set_samples({"kind": "points2d", "step": 20, "real": rng.normal(size=(64, 2)),
                       "fake": rng.normal(size=(300, 2))})
    panel.refresh()
    assert names() == ["real", "generated"]


def test_images_sit_under_their_heading_in_a_tall_narrow_column(qtbot):
    """The shapes window's samples column had ~200 px of nothing between its "step 133" heading and the
    "real" grid: the aspect-locked view centred the grids in the column's height. They sit at its top now,
    the room left over below them."""
    view = SamplesView()
    qtbot.addWidget(view)
    view.resize(260, 900)
    view.show()
    rng = np.random.default_rng(0)
    shapes = np.tanh(rng.normal(size=(64, 28, 28, 1))).astype(np.float32)
    view.show_samples({"kind": "images", "step": 133, "real": shapes[:16], "fake": shapes})
    qtbot.waitUntil(lambda: view.images.isVisible())
    page = view.images
    page.resize(260, 900)  # (as the stack lays it out)
    QtGui.QGuiApplication.processEvents()

    def top_px(item) -> float:  # an item's top, in the page's pixels
        return page.mapFromScene(item.mapRectToScene(item.boundingRect()).topLeft()).y()

    heading_bottom = page.mapFromScene(page.title.mapRectToScene(page.title.boundingRect()).bottomLeft()).y()
    real_top, generated_bottom = top_px(page.real_image), page.mapFromScene(
        page.image.mapRectToScene(page.image.boundingRect()).bottomLeft()).y()
    assert real_top - heading_bottom < 50, (heading_bottom, real_top)  # room for the "real" caption, no more
    assert generated_bottom < 0.8 * page.height()  # the room left over is below the grids
    width = page.image.mapRectToScene(page.image.boundingRect()).width()
    assert width > 0.8 * page.width()  # as wide as the column: nothing shrunk to make it fit

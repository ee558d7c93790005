"""The plots are painted by Qt in C++, not from Python (so painting leaves the GIL to other Python
threads: measured, as a ratio against pyqtgraph's own view, in bench/paint_bench.py); the C++
strokes draw what the pens ask for; and a live curve's new points repaint only where they fall. Calls
and repainted regions are counted here, never timed."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from app.plots.canvas import SPLIT_AFTER, Canvas, Stroke, pixel_offsets
from bench.paint_bench import heavy_plot
from tests.app.blocks import block
from training_core import MetricsBatch
from training_core.runs import RunData


class PaintLog(QtCore.QObject):
    """Installed as an event filter on a viewport: the bounding rect of each paint event's region."""

    def __init__(self) -> None:
        super().__init__()
        self.regions: list[QtCore.QRect] = []

    def eventFilter(self, obj, event):  # noqa: N802
        if event.type() == QtCore.QEvent.Type.Paint:
            self.regions.append(event.region().boundingRect())
        return False


def _python_paints_per_repaint(qtbot, monkeypatch, view: QtWidgets.QGraphicsView, repaints: int = 5) -> tuple[int, int]:
    """Repaint `view` synchronously `repaints` times; count the viewport's paint events and the calls of
    pyqtgraph's curve item's Python `paint()` (what a PlotDataItem draws its line with)."""
    calls = [0]
    original = pg.PlotCurveItem.paint

    def counting_paint(self, *args, **kwargs):
        calls[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pg.PlotCurveItem, "paint", counting_paint)  # before any paint: Shiboken caches overrides
    qtbot.addWidget(view)
    view.resize(900, 500)
    heavy_plot(view)
    view.show()
    qtbot.waitExposed(view)
    QtWidgets.QApplication.processEvents()
    calls[0] = 0
    log = PaintLog()
    view.viewport().installEventFilter(log)
    for _ in range(repaints):
        view.viewport().repaint()
    view.viewport().removeEventFilter(log)
    monkeypatch.undo()
    return len(log.regions), calls[0]


def test_canvas_paints_its_curves_in_cpp(qtbot, monkeypatch):
    """Every repaint of a Canvas draws its six curves without one Python paint() call; the same plot in
    pyqtgraph's own view calls paint() for each curve on each repaint (which shows the count works)."""
    assert Canvas.paintEvent is QtWidgets.QGraphicsView.paintEvent  # the C++ method, no Python frame
    paints, calls = _python_paints_per_repaint(qtbot, monkeypatch, Canvas())
    assert paints == 5 and calls == 0
    paints, calls = _python_paints_per_repaint(qtbot, monkeypatch, pg.GraphicsLayoutWidget())
    assert paints == 5 and calls == 5 * 6


def _ink_rows(image: QtGui.QImage, column: int) -> int:
    return sum(1 for row in range(image.height()) if QtGui.QColor(image.pixel(column, row)).red() < 128)


def test_a_bold_stroke_is_as_wide_as_its_pen(qtbot):
    """A horizontal line: 1 pixel for the hairline, 2 for a 2.2 px pen (2×2 stamps), 4 for 3.5."""
    assert pixel_offsets(1.0) == [] and len(pixel_offsets(2.2)) == 4 and len(pixel_offsets(3.5)) == 16
    rows = {}
    for width in (1.0, 2.2, 3.5):
        scene = QtWidgets.QGraphicsScene(0, 0, 100, 40)
        stroke = Stroke()
        stroke.set_pen(pg.mkPen("k", width=width))
        path = QtGui.QPainterPath(QtCore.QPointF(10, 20))
        path.lineTo(90, 20)
        stroke.set_path(path, [(float(dx), float(dy)) for dx, dy in pixel_offsets(width)])
        scene.addItem(stroke)
        image = QtGui.QImage(100, 40, QtGui.QImage.Format.Format_ARGB32)
        image.fill(QtGui.QColor("white"))
        painter = QtGui.QPainter(image)
        scene.render(painter, QtCore.QRectF(0, 0, 100, 40), QtCore.QRectF(0, 0, 100, 40))
        painter.end()
        rows[width] = _ink_rows(image, 50)
        assert stroke.shape().isEmpty()  # hit tests never stroke the path
    assert rows == {1.0: 1, 2.2: 2, 3.5: 4}


def test_live_points_repaint_a_strip_at_the_end_not_the_plots(panel_of, qtbot):
    """While the view stays put, the points a refresh adds repaint only the pieces of the curves they fall in
    (canvas.SplitStroke): a strip at the right of the plots. A range change repaints them whole."""
    paths = ("d/l1/kernel", "d/l1/bias", "d/out/kernel")
    store = RunData()
    idx = np.arange(1, 100_001)
    store.add_batch(MetricsBatch([block("D", idx, paths, loss=np.sin(idx / 1e3), every=10)]))
    panel = panel_of(store)
    panel.show()
    qtbot.waitExposed(panel)
    panel.refresh()
    for _ in range(3):
        QtGui.QGuiApplication.processEvents()
    log = PaintLog()

    def repainted(steps) -> int:
        """Width in pixels of what the refresh after `steps` were added repainted."""
        n = len(steps)
        store.add_batch(MetricsBatch([block("D", steps, paths, loss=np.full(n, 0.5), ratio=np.full((n, 3), 2e-3))]))
        log.regions.clear()
        panel.refresh()
        for _ in range(3):  # flush: the scene's dirty items, then the viewport's update request, then its paint
            QtGui.QGuiApplication.processEvents()
        if not log.regions:
            return 0
        rect = log.regions[0]
        for r in log.regions[1:]:
            rect = rect.united(r)
        return rect.width()

    panel.graphics.viewport().installEventFilter(log)
    width = panel.loss_plot.vb.width()
    x0, x1 = panel.loss_plot.vb.viewRange()[0]
    for k in range(SPLIT_AFTER):  # the first paint since the panel was shown (whole), and the view staying put
        repainted(np.arange(100_001 + 200 * k, 100_201 + 200 * k))
    first = 100_001 + 200 * SPLIT_AFTER
    assert 0 < repainted(np.arange(first, first + 200)) < width / 4  # inside the follow room
    assert panel.loss_plot.vb.viewRange()[0] == [x0, x1]
    assert repainted(np.arange(first + 200, first + 400)) < width / 4
    assert repainted(np.arange(first + 400, 110_001)) >= width  # past the room: the range moved
    assert panel.loss_plot.vb.viewRange()[0][1] > x1
    panel.graphics.viewport().removeEventFilter(log)

"""The plots are painted by Qt in C++, not from Python (so painting leaves the GIL to other Python
threads: measured, as a ratio against pyqtgraph's own view, in bench/paint_bench.py); and the C++
strokes draw what the pens ask for. Calls are counted here, never timed."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from app.plots.canvas import Canvas, Stroke, pixel_offsets
from bench.paint_bench import heavy_plot

def _python_paints_per_repaint(qtbot, monkeypatch, view: QtWidgets.QGraphicsView, repaints: int = 5) -> tuple[int, int]:
    """Repaint `view` synchronously `repaints` times; count the viewport's paint events and the calls of
    pyqtgraph's curve item's Python `paint()` (what a PlotDataItem draws its line with)."""
    calls, paints = [0], [0]
    original = pg.PlotCurveItem.paint

    def counting_paint(self, *args, **kwargs):
        calls[0] += 1
        return original(self, *args, **kwargs)

    class PaintCounter(QtCore.QObject):
        def eventFilter(self, obj, event):  # noqa: N802
            if event.type() == QtCore.QEvent.Type.Paint:
                paints[0] += 1
            return False

    monkeypatch.setattr(pg.PlotCurveItem, "paint", counting_paint)  # before any paint: Shiboken caches overrides
    qtbot.addWidget(view)
    view.resize(900, 500)
    heavy_plot(view)
    view.show()
    qtbot.waitExposed(view)
    QtWidgets.QApplication.processEvents()
    calls[0] = 0
    counter = PaintCounter()
    view.viewport().installEventFilter(counter)
    for _ in range(repaints):
        view.viewport().repaint()
    view.viewport().removeEventFilter(counter)
    monkeypatch.undo()
    return paints[0], calls[0]


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

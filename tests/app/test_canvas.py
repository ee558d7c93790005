"""The plots are painted by Qt without the GIL, so a Python thread (training) keeps running meanwhile;
and the C++ strokes draw what the pens ask for."""
from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from app.plots.canvas import Canvas, Stroke, pixel_offsets
from app.plots.curves import LiveCurve


def _heavy_plot(view: pg.GraphicsLayoutWidget) -> list[pg.PlotDataItem]:
    plot = view.addPlot()
    x = np.linspace(0, 1000, 4000)
    curves = []
    for k in range(6):
        y = np.sin(x / 30 + k) + 0.3 * np.random.default_rng(k).normal(size=len(x))
        c = LiveCurve(pen=pg.mkPen("#1f77b4", width=2.2)) if isinstance(view, Canvas) \
            else pg.PlotDataItem(pen=pg.mkPen("#1f77b4", width=2.2))
        c.setData(x, y)
        plot.addItem(c)
        curves.append(c)
    plot.vb.disableAutoRange()
    plot.setRange(xRange=(0, 1000), yRange=(-2, 2), padding=0)
    return curves


def _python_progress_while_painting(view: QtWidgets.QWidget, seconds: float = 0.8) -> tuple[float, int]:
    """A spinning Python thread's progress while the event loop repaints `view` non-stop, relative to
    its progress with the GUI idle; and how many paints happened."""
    count, stop, paints = [0], [False], [0]

    def spin() -> None:
        while not stop[0]:
            count[0] += 1

    class PaintCounter(QtCore.QObject):
        def eventFilter(self, obj, event):  # noqa: N802
            if event.type() == QtCore.QEvent.Type.Paint:
                paints[0] += 1
            return False

    counter = PaintCounter()
    view.viewport().installEventFilter(counter)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)  # short waits for the GIL, so paints are not throttled by the spinner
    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    loop, timer = QtCore.QEventLoop(), QtCore.QTimer()
    try:
        time.sleep(0.1)
        c0, t0 = count[0], time.perf_counter()
        time.sleep(0.3)
        idle_rate = (count[0] - c0) / (time.perf_counter() - t0)
        timer.setInterval(1)
        timer.timeout.connect(lambda: view.viewport().update())
        timer.start()
        QtCore.QTimer.singleShot(int(seconds * 1000), loop.quit)
        c0, t0 = count[0], time.perf_counter()
        loop.exec()
        busy_rate = (count[0] - c0) / (time.perf_counter() - t0)
    finally:
        timer.stop()
        stop[0] = True
        thread.join()
        sys.setswitchinterval(interval)
        view.viewport().removeEventFilter(counter)
    return busy_rate / idle_rate, paints[0]


def test_canvas_paints_without_holding_the_gil(qtbot):
    canvas, python_painted = Canvas(), pg.GraphicsLayoutWidget()
    for view in (canvas, python_painted):
        qtbot.addWidget(view)
        view.resize(900, 500)
        _heavy_plot(view)
        view.show()
        qtbot.waitExposed(view)
    ours, ours_paints = _python_progress_while_painting(canvas)
    theirs, their_paints = _python_progress_while_painting(python_painted)
    print(f"\nPython thread progress while painting: Canvas {ours:.2f} ({ours_paints} paints), "
          f"pyqtgraph's view {theirs:.2f} ({their_paints} paints)")
    assert ours_paints >= 5 and their_paints >= 5
    assert ours > 0.5 and ours > 3 * theirs


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

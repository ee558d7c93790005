"""Painting without the GIL: how fast a Python thread (standing in for any Python work beside the GUI)
runs while the plots repaint non-stop, relative to its speed with the GUI idle; for the window's
`Canvas` (painted by Qt in C++) and, measured in the same run, pyqtgraph's own view (painted from
Python). Moved here from the tests: it is a timing ratio, which a busy machine does not give."""
from __future__ import annotations

import sys
import threading
import time

import numpy as np

from bench.window_bench import qapp


def heavy_plot(view) -> list:
    """Six noisy 4000-point curves with 2.2 px pens: LiveCurves on a Canvas, PlotDataItems otherwise."""
    import pyqtgraph as pg

    from app.plots.canvas import Canvas
    from app.plots.curves import LiveCurve
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


def python_progress_while_painting(view, seconds: float) -> tuple[float, int]:
    """A spinning Python thread's progress while the event loop repaints `view` non-stop, relative to
    its progress with the GUI idle; and how many paints happened."""
    from PySide6 import QtCore
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
        time.sleep(seconds / 2)
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


def measure_gil_free_painting(seconds: float, rounds: int) -> dict:
    """Median progress ratios over `rounds`, Canvas and pyqtgraph's view alternating."""
    import pyqtgraph as pg
    from PySide6.QtTest import QTest

    from app.plots.canvas import Canvas
    app = qapp()
    views = {"canvas": Canvas(), "pyqtgraph": pg.GraphicsLayoutWidget()}
    for view in views.values():
        view.resize(900, 500)
        heavy_plot(view)
        view.show()
        QTest.qWaitForWindowExposed(view)
    app.processEvents()
    ratios: dict[str, list[float]] = {k: [] for k in views}
    paints = {k: 0 for k in views}
    for _ in range(rounds):
        for k, view in views.items():
            r, n = python_progress_while_painting(view, seconds)
            ratios[k].append(r)
            paints[k] += n
    for view in views.values():
        view.close()
        view.deleteLater()
    app.processEvents()
    med = {k: sorted(v)[len(v) // 2] for k, v in ratios.items()}
    return {"canvas": med["canvas"], "pyqtgraph": med["pyqtgraph"], "paints": paints}

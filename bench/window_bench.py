"""Window-side measurements: the `window` throughput variant, GUI responsiveness with a million points
per loss curve, memory over 10^6 recorded steps, and start-up. All run the real MainWindow offscreen."""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def qapp():
    from PySide6.QtWidgets import QApplication
    return QApplication.instance() or QApplication([])


def _waker(fn):
    from PySide6.QtCore import QObject, Slot

    class Waker(QObject):
        @Slot(object)
        def poke(self, _arg) -> None:
            fn()
    return Waker()


def wait_for(cond, timeout: float = 120.0, signals: tuple = (), poll_ms: int = 5) -> None:
    """Run the Qt event loop (the window keeps drawing, idle in between) until `cond()` holds.

    A real event loop: spinning processEvents() instead would burn a core of this 2-core machine and
    slow exactly the training being measured. `cond()` is checked after each of `signals` (connected
    after the window's own slots, so it sees their effect) and by a timer every `poll_ms`: with
    signals, the timer is only a safety net, and the harness does not wake the GUI thread 200 times
    a second (its GIL hand-overs would be counted against the window)."""
    from PySide6.QtCore import QEventLoop, QTimer
    qapp()
    if cond():
        return
    loop, timer = QEventLoop(), QTimer()
    end = time.perf_counter() + timeout
    expired = []

    def check(*_args) -> None:
        if cond():
            loop.quit()
        elif time.perf_counter() > end:
            expired.append(True)
            loop.quit()

    waker = _waker(check)  # a receiver on this (GUI) thread: the slot runs here, queued after the window's
    for sig in signals:
        sig.connect(waker.poke)
    timer.setInterval(100 if signals else poll_ms)
    timer.timeout.connect(check)
    timer.start()
    try:
        loop.exec()
    finally:
        timer.stop()
        for sig in signals:
            sig.disconnect(waker.poke)
    if expired:
        raise TimeoutError("window benchmark: condition not reached")


def open_window(step_offset: int = 0, source: tuple = ("example", "ring"), timeout: float = 120.0):
    """A real MainWindow on `source` (the ring example by default), trained to a paused start; metrics can be
    shifted right by `step_offset` steps so that live data lands after a pre-filled store."""
    from app.main_window import MainWindow
    from training_core import Pause
    from training_core.base import protocol as P

    qapp()
    run_dir = str(Path(tempfile.mkdtemp(prefix="ff-bench-window-")) / "run")
    w = MainWindow(source, run_dir=run_dir)
    if step_offset:  # every report goes through the window's Session: shift the steps of metrics batches there
        handle = w.session.handle

        def shifted(report):
            if isinstance(report, P.Metrics):
                for b in report.batch.blocks:
                    b.steps = b.steps + step_offset
            handle(report)
        w.session.handle = shifted
    w.resize(1440, 900)
    w.show()
    wait_for(lambda: w.prepared is not None and not w.busy, timeout)
    w.start()
    w.core.send(Pause())
    wait_for(lambda: w.running and w.paused, timeout)
    return w


class Window:
    """Throughput inside the window: Step(n) commands, the window drawing live while they run (the ring, or
    `source`: bench/tfdata_window.py's shapes)."""

    clock_rate: float | None = None  # the last chunk's steps/s by the training process's clock

    def __init__(self, source: tuple = ("example", "ring"), name: str = "window", timeout: float = 120.0) -> None:
        self.name = name
        self.w = open_window(source=source, timeout=timeout)
        self.run(20)

    def run(self, n: int) -> None:
        from training_core import Step
        start = self.w.store.last_step
        self.w.core.send(Step(n))
        reports = self.w.core.reports
        wait_for(lambda: self.w.paused and self.w.store.last_step >= start + n, 600,
                 signals=(reports.metrics, reports.event))
        self.clock_rate = step_clock_rate(self.w.store, start, start + n)

    def close(self) -> None:
        close_window(self.w)


def step_clock_rate(store, after: int, upto: int) -> float | None:
    """Steps/s of steps `after`+1..`upto` by the training process's own clock (each step's recorded wall
    time, taken as its call returns), from the first to the last: what a bare loop's timer spans. It
    leaves out the two trips a Step(n) chunk makes and a run does not (the command to the training
    process, the last batch back to the window); the paint competing with the steps is all inside."""
    walls = []
    for phase in store.phases:
        steps, wall, _ = store.loss(phase)
        walls.append(wall[(steps > after) & (steps <= upto)])
    w = np.sort(np.concatenate(walls)) if walls else np.array([])
    return (len(w) - 1) / (w[-1] - w[0]) if len(w) > 1 and w[-1] > w[0] else None


def close_window(w) -> None:
    w.close()
    wait_for(lambda: not w.running, 30)


def synthetic_batches(n_steps: int, start: int = 1, per_batch: int = 200, var_every: int = 25):
    """Ring-shaped recorded metrics (phases D and G at 1:1, six variables each), as the core sends them."""
    from training_core import MetricsBatch, PhaseBlock
    paths = {p: tuple(f"{m}/{layer}/{k}" for layer in ("dense_1", "dense_2", "out") for k in ("kernel", "bias"))
             for p, m in (("D", "discriminator"), ("G", "generator"))}
    rng = np.random.default_rng(0)
    for first in range(start, start + n_steps, per_batch):
        blocks = []
        for off, phase in enumerate(("D", "G")):
            steps = np.arange(first + off, min(first + per_batch, start + n_steps), 2, dtype=np.int64)
            n = len(steps)
            upd = np.abs(rng.normal(1e-3, 3e-4, (n, 6)))
            blocks.append(PhaseBlock(phase, paths[phase], steps, time.time() + steps * 1e-3,
                                     1.0 + 0.1 * rng.normal(size=n), upd * 10, upd, upd * 100,
                                     np.zeros((n, 6), bool), (steps // 2) % var_every == 0))
        yield MetricsBatch(blocks)


def measure_responsiveness(points: int, seconds: float, source: tuple = ("example", "ring")) -> dict:
    """Lateness of a 10 ms QTimer while training runs at full speed in the window, with `points` points
    already in each loss curve (ring-shaped: give 0 for another `source`)."""
    from PySide6.QtCore import Qt, QTimer
    from training_core import Continue, Stop
    w = open_window(step_offset=2 * points + 10, source=source, timeout=600)
    for batch in synthetic_batches(2 * points, per_batch=100_000):
        w.store.add_batch(batch)
    qapp().processEvents()
    w.refresh()
    late, last = [], [time.perf_counter()]

    def tick():
        now = time.perf_counter()
        late.append(max(0.0, now - last[0] - 0.010))
        last[0] = now

    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.setInterval(10)
    timer.timeout.connect(tick)
    w.core.send(Continue())
    wait_for(lambda: not w.paused)
    timer.start()
    last[0] = time.perf_counter()
    end = time.perf_counter() + seconds
    wait_for(lambda: time.perf_counter() > end, seconds + 60)
    timer.stop()
    steps = w.store.last_step - (2 * points + 10)
    w.core.send(Stop())
    close_window(w)
    ms = np.array(late[1:]) * 1e3
    return {"points_per_loss_curve": points, "live_steps": int(steps), "ticks": len(ms),
            "p99_ms": float(np.percentile(ms, 99)), "max_ms": float(ms.max()), "median_ms": float(np.median(ms))}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def measure_memory(steps: int) -> dict:
    """Resident memory of the window process while `steps` steps of recorded metrics flow in through the
    window's own metrics slot, with its 25 Hz redraw running."""
    import gc

    from training_core.base import protocol as P
    w = open_window()
    gc.collect()
    before, peak = _rss_mb(), 0.0
    for i, batch in enumerate(synthetic_batches(steps, start=w.store.last_step + 1)):
        w.session.handle(P.Metrics(batch))
        if i % 5 == 0:  # 1000 steps per 25 Hz frame: 10^6 steps in ~40 s of wall time
            qapp().processEvents()
            w.refresh()
            peak = max(peak, _rss_mb())
    gc.collect()
    after = _rss_mb()
    close_window(w)
    return {"steps": steps, "rss_before_MB": before, "rss_after_MB": after, "peak_MB": max(peak, after),
            "growth_MB": after - before}

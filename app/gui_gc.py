"""Garbage collection on the GUI thread only, while a window is open.

Python's cyclic collector runs on whichever thread happens to allocate when a threshold is crossed.
With another thread allocating all the time (training used to run on one; the report reader unpickles
every batch), that is often that thread, and when the garbage holds Qt objects (a closed window, plot
items dropped by a reset) PySide destroys them there: off the GUI thread, against Qt's rules. We saw
it deadlock (the collector on the training thread waiting for the GIL inside ~QObject while the GUI
thread held the GIL and waited for the same signal-slot lock). So while a window is open the automatic collector is off and a GUI-thread timer
collects instead, generation by generation with the usual thresholds (as pyqtgraph's
GarbageCollector does).
"""
from __future__ import annotations

import gc

from PySide6.QtCore import QTimer

INTERVAL_MS = 500


class _GuiThreadCollector:
    def __init__(self) -> None:
        self._users = 0
        self._timer: QTimer | None = None
        self._was_enabled = True

    def acquire(self) -> None:
        """A window opened (call on the GUI thread)."""
        self._users += 1
        if self._users == 1:
            self._was_enabled = gc.isenabled()
            gc.disable()
            self._timer = QTimer()
            self._timer.setInterval(INTERVAL_MS)
            self._timer.timeout.connect(self.collect)
            self._timer.start()

    def release(self) -> None:
        """A window closed, after its training process ended: collect now, and hand back to Python
        once no window is left."""
        self._users = max(0, self._users - 1)
        if self._users == 0 and self._timer is not None:
            self._timer.stop()
            self._timer = None
            gc.collect()
            if self._was_enabled:
                gc.enable()

    def collect(self) -> None:
        (c0, c1, c2), (t0, t1, t2) = gc.get_count(), gc.get_threshold()
        if c0 > t0:
            gc.collect(0)
            if c1 > t1:
                gc.collect(1)
                if c2 > t2:
                    gc.collect(2)

    @property
    def active(self) -> bool:
        return self._users > 0


collector = _GuiThreadCollector()

"""Garbage collection on the GUI thread only, while a window is open.

Python's cyclic collector runs on whichever thread happens to allocate when a threshold is crossed.
The report reader thread (app/training_process.py) unpickles every batch, so that is often the reader, and when
the garbage holds Qt objects (a closed window, plot items dropped by a reset) PySide destroys them
there: off the GUI thread, against Qt's rules. We saw it deadlock (the collector on another thread
waiting for the GIL inside ~QObject while the GUI thread held the GIL and waited for the same
signal-slot lock). So while a window is open the automatic collector is off and pyqtgraph's
`GarbageCollector` collects from a GUI-thread timer instead, generation by generation with the usual
thresholds. `hold()` must be called on the GUI thread before the reader thread exists.

pyqtgraph's class switches the collector off for good; this adds only the scope: the last window to
close stops its timer, collects once and gives collection back to Python (tests open and close many
windows in one process, and core tests after them must not run without a collector).
"""
from __future__ import annotations

import gc

from pyqtgraph.util.garbage_collector import GarbageCollector

INTERVAL_S = 0.5

_holders = 0
_collector: GarbageCollector | None = None
_was_enabled = True


def hold() -> None:
    """A window opened (GUI thread): collect only on this thread from now on."""
    global _holders, _collector, _was_enabled
    _holders += 1
    if _collector is None:
        _was_enabled = gc.isenabled()
        _collector = GarbageCollector(interval=INTERVAL_S)  # disables the automatic collector, starts its timer


def release() -> None:
    """A window closed, after its training service ended; the last one hands collection back to Python."""
    global _holders, _collector
    _holders = max(0, _holders - 1)
    if _holders == 0 and _collector is not None:
        _collector.timer.stop()
        _collector = None
        gc.collect()
        if _was_enabled:
            gc.enable()

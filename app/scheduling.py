"""How the window's process shares the machine between the GUI thread and training.

Three measured causes of a late or stuttering window while training runs (bench/run.py):
- the GIL: between two TensorFlow ops the training thread needs it for ~0.1 ms, and Python hands it
  over only every 5 ms by default; the window switches every 0.5 ms;
- cores: TensorFlow on every core left none for the GUI; the window leaves it one;
- the scheduler: on two cores, the training thread and TensorFlow's pool kept the GUI thread waiting for
  a core in the middle of a paint (a 10 ms timer ran up to 22 ms late at p99). Training in the window
  therefore runs at a lower priority: on Linux its thread gets a higher nice value, which the threads
  TensorFlow starts from it inherit; elsewhere Qt's LowestPriority is used. With the GUI idle this
  changes nothing; when the GUI needs a core, it gets it first.
`FREEZEFRAME_TRAINING_NICE` sets the nice value (0 turns it off). The headless CLI is not affected.
"""
from __future__ import annotations

import os
import sys
import threading

GIL_SWITCH_INTERVAL_S = 0.0005
NICE_ENV = "FREEZEFRAME_TRAINING_NICE"
DEFAULT_TRAINING_NICE = 19


def gui_intra_op_threads() -> int:
    """TensorFlow's intra-op threads in the window's process: all cores but one (at least one)."""
    return max(1, (os.cpu_count() or 2) - 1)


def configure_gui_process() -> None:
    """Share the GIL finely between the GUI and training threads (see the module docstring)."""
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)


def training_nice() -> int:
    """The nice value for the training thread: FREEZEFRAME_TRAINING_NICE, else the default."""
    raw = os.environ.get(NICE_ENV, "").strip()
    if not raw:
        return DEFAULT_TRAINING_NICE
    try:
        return max(0, min(19, int(raw)))
    except ValueError:
        return DEFAULT_TRAINING_NICE


def lower_this_thread() -> bool:
    """Lower the calling thread's scheduling priority (for the training thread); True if it took.

    Linux: `setpriority` on the thread id sets that thread's nice value only, and threads it starts
    later inherit it. Never raises the priority of a thread already nicer than asked."""
    nice = training_nice()
    if nice <= 0:
        return False
    if sys.platform.startswith("linux"):
        tid = threading.get_native_id()
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
            return True
        except OSError:
            return False
    from PySide6.QtCore import QThread
    thread = QThread.currentThread()
    thread.setPriority(QThread.Priority.LowestPriority)
    return True


def thread_nice(native_id: int) -> int | None:
    """A thread's nice value (Linux; None elsewhere), for tests and the benchmark's report."""
    if not sys.platform.startswith("linux"):
        return None
    return os.getpriority(os.PRIO_PROCESS, native_id)

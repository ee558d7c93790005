"""SIGTERM in a `start_run` loop: a Stop at the next `boundary()`, so the run ends as after Ctrl-C, with its
final checkpoint and `stop` event, and the script goes on after its loop (exit code 0).

Why: Slurm (at a job's time limit or on `scancel`), docker and systemd stop a process with SIGTERM, and
Python's default for it is to die at once: a loop checkpointing every 500 steps lost up to 499 steps on resume,
and its record ended without a `stop` event. Freezeframe's own runs treat SIGTERM as Ctrl-C
(cli/train.py); a user's loop is the user's process, so this handler is installed only where the script left
SIGTERM at its default (a handler of the script's own is kept), only on the main thread (Python delivers
signals there), and put back when the run closes. A second SIGTERM before the loop reached its boundary (a step
that hangs) ends the process as the default would. A handler of an earlier monitored run in the same process (a
fit() that raised, which Keras ends without `on_train_end`) is not the script's: a new run takes SIGTERM over
from it, and gives it back at its end only if that run is still open (a suite's worker that ran such a test
before kept the stale handler, and the next run trained on through SIGTERM).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any, Callable


class StopOnTerm:
    """While installed, SIGTERM calls `stop()` once (a second one, or one once `open()` is False, a run closed
    without `remove` after an error, kills the process as SIG_DFL does)."""

    def __init__(self, stop: Callable[[], None], open: Callable[[], bool]) -> None:  # noqa: A002
        self._stop, self._open, self._installed, self._seen = stop, open, False, False
        self._before: StopOnTerm | None = None  # an earlier monitored run's handler this one took over from
        if threading.current_thread() is threading.main_thread():
            current = signal.getsignal(signal.SIGTERM)
            earlier = getattr(current, "__self__", None)
            self._before = earlier if isinstance(earlier, StopOnTerm) else None
            if current is signal.SIG_DFL or self._before is not None:
                signal.signal(signal.SIGTERM, self._on_term)
                self._installed = True

    def _on_term(self, signum: int, frame: Any) -> None:
        if self._seen or not self._open():  # a step that hangs, or no run to stop: end as the default does
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        self._seen = True
        print("freezeframe: SIGTERM: the run stops at its next step boundary, with its final checkpoint "
              "(a second SIGTERM ends the process at once)", file=sys.stderr, flush=True)
        # from a thread: the handler runs between two bytecodes of the main thread, which may hold the command
        # queue's lock right then (a paused loop waits in it); a thread waits for it, the handler must not
        threading.Thread(target=self._stop, name="freezeframe-sigterm", daemon=True).start()

    def remove(self) -> None:
        """Put SIGTERM's default back (or the handler of an earlier run still open), unless the script has set a
        handler of its own since."""
        if self._installed and threading.current_thread() is threading.main_thread():
            if signal.getsignal(signal.SIGTERM) == self._on_term:
                before = self._before
                signal.signal(signal.SIGTERM, before._on_term if before is not None and before._installed
                              and before._open() else signal.SIG_DFL)
            self._installed = False
            self._before = None

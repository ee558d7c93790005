"""How the window shares the machine with its training process.

Measured causes of a late or stuttering window, and of slower training, while training runs
(bench/run.py; the figures in README "Performance", the runs behind them in bench/PERFORMANCE.md):
- the GIL: training used to run on a thread of the window's process, and every bit of Python the GUI
  ran stopped it between TensorFlow ops. It now runs in a process of its own (`training_core.service`);
- cores: TensorFlow on every core left none for the GUI; the training process gets all cores but one;
- the scheduler: on two cores, TensorFlow's threads kept the GUI thread waiting for a core in the
  middle of a paint (a 10 ms timer ran ~20 ms late at p99). The training process used to run at nice 10
  for it, which cost the shapes DCGAN on tf.data a tenth of its speed. It now runs at nice 0 under Linux's
  SCHED_BATCH policy: measured at a quiet hour (2026-12-02 10:14-10:24, bench/PERFORMANCE.md) it trained at
  0.951 and 0.953 of the bare loop, against 0.861-0.893 at nice 10 and 0.877 at nice 0 under the default
  policy, with the 10 ms timer's p99 lateness 16.8 and 22.7 ms against nice 10's 12.8-19.4 and plain nice
  0's 21.7-25.3 (and no stall past 82 ms, against plain nice 0's 137). `FREEZEFRAME_TRAINING_NICE` and
  `FREEZEFRAME_TRAINING_POLICY` (`other`) set them (`=10` and `other` give the old default). Off Linux there is
  no SCHED_BATCH and nice 0 leaves the process as it is. The headless CLI is not affected.
"""
from __future__ import annotations

import os

NICE_ENV = "FREEZEFRAME_TRAINING_NICE"
DEFAULT_TRAINING_NICE = 0
THREADS_ENV = "FREEZEFRAME_TRAINING_THREADS"
POLICY_ENV = "FREEZEFRAME_TRAINING_POLICY"
DEFAULT_TRAINING_POLICY = "batch"


def gui_intra_op_threads() -> int:
    """TensorFlow's intra-op threads for training started from the window: FREEZEFRAME_TRAINING_THREADS (at
    least 1), else all cores but one (at least one)."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return max(1, (os.cpu_count() or 2) - 1)


def training_nice() -> int:
    """The nice value for the training process: FREEZEFRAME_TRAINING_NICE (0 to 19), else the default."""
    raw = os.environ.get(NICE_ENV, "").strip()
    if not raw:
        return DEFAULT_TRAINING_NICE
    try:
        return max(0, min(19, int(raw)))
    except ValueError:
        return DEFAULT_TRAINING_NICE


def training_policy() -> str:
    """The training process's scheduling policy: FREEZEFRAME_TRAINING_POLICY `batch` (Linux's SCHED_BATCH) or
    `other` (the default policy), else the default."""
    raw = os.environ.get(POLICY_ENV, "").strip().lower()
    return raw if raw in ("batch", "other") else DEFAULT_TRAINING_POLICY

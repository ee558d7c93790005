"""How the window shares the machine with its training process.

Measured causes of a late or stuttering window, and of slower training, while training runs
(bench/run.py; the figures in README "Performance", the runs behind them in bench/PERFORMANCE.md):
- the GIL: training used to run on a thread of the window's process, and every bit of Python the GUI
  ran stopped it between TensorFlow ops. It now runs in a process of its own (`training_core.service`);
- cores: TensorFlow on every core left none for the GUI; the training process gets all cores but one;
- the scheduler: on two cores, TensorFlow's threads kept the GUI thread waiting for a core in the
  middle of a paint (a 10 ms timer ran ~20 ms late at p99). The training process therefore runs at a
  higher nice value: with the GUI idle this changes nothing; when the GUI needs a core, it gets it
  first. `FREEZEFRAME_TRAINING_NICE` sets it (0 turns it off, for example when other jobs share the
  machine and training should not give way to them). The headless CLI is not affected.
"""
from __future__ import annotations

import os

NICE_ENV = "FREEZEFRAME_TRAINING_NICE"
DEFAULT_TRAINING_NICE = 10
THREADS_ENV = "FREEZEFRAME_TRAINING_THREADS"
POLICY_ENV = "FREEZEFRAME_TRAINING_POLICY"
DEFAULT_TRAINING_POLICY = "other"


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

"""Freezeframe in your own code: a monitor for Keras `fit()` and a run object for hand-written loops.

    from training_core.monitor import Monitor, start_run

`Monitor(run_dir, ...)` is a Keras callback (monitor/keras_callback.py); `start_run(...)` returns a `Run`
(monitor/own_loop.py). Both write a Freezeframe run directory that the window opens, attaches to and steers;
monitor/monitored.py says what they share. docs/monitor.md says what they can and cannot do compared with an
experiment file.
"""
from training_core.monitor.keras_callback import Monitor
from training_core.monitor.own_loop import Run, start_run

__all__ = ["Monitor", "Run", "start_run"]

"""What a run that `training_core.monitor` records cannot change, and why, in the words its refusals use.

Why here, at the bottom: the monitor's two front ends refuse these commands (monitor/keras_callback.py,
monitor/own_loop.py), and the window, which never imports the monitor (it would load TensorFlow into the window's
process), disables the same controls before the user tries them, with the same line as their tooltip. A fit()
run's ticks and method box used to look live and be refused at every use; one table keeps the two in step.
"""
from __future__ import annotations

#: fit() trains through its own compiled train_step: no freeze, and no freeze method, can enter it
FIT_FREEZE = ("fit() runs its own compiled train_step, which nothing outside it can freeze exactly; train in a "
              "loop of your own with run.apply_gradients (training_core.monitor.start_run) to freeze live")
FIT_RATIO = "fit()'s train_step decides which sub-models train in each batch; a ratio cannot change it"
LOOP_METHOD = ("run.apply_gradients freezes exactly; the gate method (frozen gradients zeroed, momentum and "
               "decay still moving them) is for experiment files")

_FIXED = {"fit": {"freeze": FIT_FREEZE, "method": FIT_FREEZE, "ratio": FIT_RATIO}, "loop": {"method": LOOP_METHOD}}


def fixed_controls(monitor: str | None) -> dict[str, str]:
    """For a run's `RunConfig.monitor` ("fit", "loop" or None): each control ("freeze", "method", "ratio") that
    such a run refuses whatever it is sent, with why. A loop's ratio is not here: it follows one when the loop
    asks the run for its next phase, which only the loop's running shows."""
    return dict(_FIXED.get(monitor or "", {}))

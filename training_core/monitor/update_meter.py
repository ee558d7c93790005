"""How much each variable moved in one step, measured on the device, at a sample of the steps.

Why sampled: a user's loop (a `fit()` batch, a hand-written step) is compiled by its author, and the monitor
cannot add outputs to it. Measuring ‖ΔW‖ every step would take a call of a compiled function of our own each
step, ~0.1-0.3 ms on this project's CPU, more than the 3% a ring-size step allows (bench/monitor_bench.py).
The record keeps per-variable rows for every `var_every`-th step anyway (the trainer's default is 25), so the
monitor measures only those: after step s-1 it copies the weights into shadow variables on the same device
(`snapshot`, one compiled call), after step s it computes every ‖W - W_before‖² and ‖W‖² in one more call
(`norms`), and the result stays a device tensor until the record fetches a batch of them. Nothing is copied
to the host but those numbers.

Which steps: `measured(step, every)` picks one step in each block of `every`, at a place that moves from
block to block, not every `every`-th: a loop that alternates phases step by step (D, D, D, D, G: 4:1) would
otherwise see one phase at every multiple of 25 and never the other. The choice depends on the step alone, so a resumed loop measures
the same steps as one never interrupted.
"""
from __future__ import annotations

from typing import Any, Sequence

from training_core.engine.phase_step import DirectCall

#: the monitor's default `var_every`: one step in 50 measured (the trainer's own loop: 25). Why sparser: a user's
#: loop gives the meter no place in its compiled step, so each measured step costs two compiled calls of its own
#: (~0.6 ms each right after a ring-size step, 2026-12-03), ~1% of a 4.5 ms step at one in 25; a 5,000-step run
#: still has 100 rows of every variable, and a leak is named at the first measured step after it
MONITOR_VAR_EVERY = 50

_PHI = 0.6180339887498949  # the golden ratio's fraction: its multiples spread evenly over [0, 1)


def measured(step: int, every: int) -> bool:
    """Whether `step` is one whose update is measured: one step in each block of `every` steps (every step
    when `every` <= 1), at a place in the block that moves by the golden ratio from block to block, so that
    no cycle of phases keeps one phase out and two measured steps are never more than 2 * every apart."""
    if every <= 1:
        return True
    block, place = divmod(step - 1, every)
    return place == int((block * _PHI) % 1.0 * every)


def next_measured(step: int, every: int) -> int:
    """The first step at or after `step` that `measured` picks (the loop tests one number a step, not this)."""
    if every <= 1:
        return step
    block = (step - 1) // every
    while True:
        first = block * every + 1 + int((block * _PHI) % 1.0 * every)
        if first >= step:
            return first
        block += 1


class UpdateMeter:
    """Shadow copies of `variables` on their devices, and the two compiled calls that use them."""

    def __init__(self, variables: Sequence[Any]) -> None:
        import tensorflow as tf
        self.variables = list(variables)
        with tf.init_scope():
            self._before = [tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False, name="monitor_before")
                            for v in self.variables]
        # called as their concrete functions, as the trainer calls its steps: a tf.function call looks its trace
        # up again every time, ~0.2 ms (engine/phase_step.py)
        self._snapshot = DirectCall(tf.function(self._copy, autograph=False))
        self._norms = DirectCall(tf.function(self._measure, autograph=False))
        self.armed = False  # a snapshot waits for the next `norms`

    def _copy(self) -> None:
        for b, v in zip(self._before, self.variables):
            b.assign(_value(v))

    def _measure(self) -> Any:
        import tensorflow as tf
        after = [tf.convert_to_tensor(_value(v)) for v in self.variables]
        d = [_l2(a - b.read_value()) for a, b in zip(after, self._before)]
        w = [_l2(a) for a in after]
        return 2.0 * tf.stack(d + w) if after else tf.zeros([0])

    def snapshot(self) -> None:
        """The weights as they are now: the next `norms()` measures what moved them since."""
        self._snapshot()
        self.armed = True

    def norms(self) -> Any:
        """[‖ΔW_i‖²..., ‖W_i‖²...] since the snapshot, as a device tensor (read it with the batch)."""
        self.armed = False
        return self._norms()


def _value(v: Any) -> Any:
    """The tf.Variable behind a Keras variable, or a tf.Variable itself."""
    import tensorflow as tf
    return v.value if hasattr(v, "value") and not isinstance(v, tf.Variable) else v


def _l2(x: Any) -> Any:
    import tensorflow as tf
    return tf.nn.l2_loss(x if x.dtype == tf.float32 else tf.cast(x, tf.float32))

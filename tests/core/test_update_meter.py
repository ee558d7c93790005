"""monitor/update_meter.py: which steps are measured, and what one step's update measures.

Why: the monitor measures ‖ΔW‖ on a sample of the steps (measuring every step would cost more than the user's
step allows). The sample must reach every phase of any alternation (a regular every-25th step would see one
phase of a 4:1 loop only), stay dense enough for the record, and depend on the step alone (a resumed loop
measures the same steps); the measure itself must be the real difference of the weights across the step.
"""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from training_core.monitor.update_meter import UpdateMeter, measured, next_measured


@pytest.mark.parametrize("every", [2, 10, 25])
def test_one_step_in_each_block_and_no_cycle_of_phases_left_out(every):
    steps = [s for s in range(1, 200 * every + 1) if measured(s, every)]
    assert len(steps) == 200  # one in each block of `every`
    assert max(b - a for a, b in zip(steps, steps[1:])) < 2 * every
    for cycle in range(2, 8):  # a loop of `cycle` phase steps (4:1 is 5): every position in it gets measured
        assert {s % cycle for s in steps} == set(range(cycle))
    assert steps == [s for s in range(1, 200 * every + 1) if measured(s, every)]  # the step alone decides


def test_every_step_is_measured_when_every_is_one():
    assert all(measured(s, 1) for s in range(1, 50))


@pytest.mark.parametrize("every", [1, 3, 25])
def test_the_next_measured_step_is_the_first_one_measured_from_there(every):
    # the monitor's per-step test is one comparison with next_measured: it must pick exactly measured's steps
    for step in range(1, 60 * every):
        first = next(s for s in range(step, step + 3 * every) if measured(s, every))
        assert next_measured(step, every) == first


def test_one_steps_update_and_the_weights_are_measured_on_the_device():
    a = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = tf.Variable(np.ones(4, dtype=np.float32))
    meter = UpdateMeter([a, b])
    meter.snapshot()
    assert meter.armed
    a.assign_add(np.full((2, 3), 0.5, np.float32))  # the step: a moves by 0.5 everywhere, b not at all
    got = meter.norms().numpy()
    assert not meter.armed
    np.testing.assert_allclose(got, [6 * 0.25, 0.0, float(np.sum((np.arange(6) + 0.5) ** 2)), 4.0], rtol=1e-6)
    meter.snapshot()
    assert meter.norms().numpy()[:2].tolist() == [0.0, 0.0]  # nothing moved since this snapshot

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


def test_a_loop_measures_one_step_in_each_block_of_the_monitors_default(tmp_path):
    # the monitor's default is sparser than the trainer's 25 (MONITOR_VAR_EVERY says why): a loop that names no
    # var_every has per-variable rows at exactly the steps `measured` picks for it, in every phase
    import keras

    from training_core.monitor import start_run
    from training_core.monitor.update_meter import MONITOR_VAR_EVERY
    from training_core.rundir.varstore import read_variables
    keras.utils.set_random_seed(0)
    g = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="h")], name="generator")
    d = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="out")], name="discriminator")
    g_opt, d_opt = keras.optimizers.SGD(0.01), keras.optimizers.SGD(0.01)
    run = start_run(tmp_path / "run", models={"generator": g, "discriminator": d},
                    phases={"D": (d_opt, d), "G": (g_opt, g)}, steps=130, tensorboard=False, quiet=True)
    z = tf.ones((4, 2))
    with run:
        for step in run.steps():
            losses = {}
            for name, opt, model in (("D", d_opt, d), ("G", g_opt, g)):
                with tf.GradientTape() as tape:
                    losses[name] = tf.reduce_mean(d(g(z)) ** 2)
                run.apply_gradients(name, opt, tape.gradient(losses[name], model.trainable_variables),
                                    model.trainable_variables)
            run.log(step, losses)
    want = [s for s in range(1, 131) if measured(s, MONITOR_VAR_EVERY)]
    assert MONITOR_VAR_EVERY > 25 and len(want) == 3
    got = read_variables(tmp_path / "run")
    assert len(got) == 2 and all(rows.steps.tolist() == want for rows in got)

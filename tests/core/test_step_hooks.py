"""observers/base.py `step_hooks`: an observer's `on_step_end` is called at the steps its `step_period` names.

Why: a Python call at every step costs microseconds a ring-size step cannot spare (the monitor's ~100 µs a
step in a user's loop, bench/PERFORMANCE.md 2026-12-03), and the checkpointer needs only every N-th step's end.
Both loops (the trainer's and a user's loop under the monitor) must call the hook at exactly those steps, and at
every step for an observer that says nothing, so a periodic observer sees the same steps it saw when it was
called at each one and tested the step itself.
"""
from __future__ import annotations

import keras
import tensorflow as tf

from training_core import Observer, Trainer
from training_core.monitor import start_run
from training_core.observers.base import step_hooks
from training_core.observers.checkpointing import Checkpointer

from .helpers import config, tiny_gan


class Seen(Observer):
    """The steps whose end it was called at."""

    def __init__(self, period: int | None = None) -> None:
        self.steps: list[int] = []
        if period is not None:
            self.step_period = period

    def on_step_end(self, run_) -> None:
        self.steps.append(run_.step)


def test_a_hook_is_listed_with_its_period_and_left_out_at_zero():
    every, third, never, silent = Seen(), Seen(3), Seen(0), Observer()
    got = step_hooks([every, third, never, silent, Checkpointer(0), Checkpointer(7)])
    assert [(type(o).__name__, p) for o, p in got] == [("Seen", 1), ("Seen", 3), ("Checkpointer", 7)]
    assert got[0][0] is every and got[1][0] is third


def test_the_trainer_calls_each_hook_at_its_period(tmp_path):
    every, third, never = Seen(), Seen(3), Seen(0)
    Trainer(config(tiny_gan(tmp_path), tmp_path / "run", steps=10), [every, third, never]).run()
    assert every.steps == list(range(1, 11))
    assert third.steps == [3, 6, 9] and never.steps == []


def test_a_monitored_loop_calls_each_hook_at_its_period_and_checkpoints_at_its_steps(tmp_path):
    from training_core.rundir.reading import read_events
    keras.utils.set_random_seed(0)
    d = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="h"), keras.layers.Dense(1, name="out")],
                         name="discriminator")
    opt = keras.optimizers.SGD(0.1)
    run_ = start_run(tmp_path / "run", models={"discriminator": d}, phases={"D": (opt, d)}, steps=12,
                     checkpoint_every=5, tensorboard=False, quiet=True)
    every, fourth = Seen(), Seen(4)
    core = run_._core
    core._step_observers = core._step_observers + step_hooks([every, fourth])
    x = tf.ones((4, 2))
    with run_:
        for step in run_.steps():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(d(x) ** 2)
            run_.apply_gradients("D", opt, tape.gradient(loss, d.trainable_variables), d.trainable_variables)
            run_.log(step, {"D": loss})
    assert every.steps == list(range(1, 13)) and fourth.steps == [4, 8, 12]
    saved = [e.step for e in read_events(tmp_path / "run") if e.kind == "checkpoint"]
    assert saved == [0, 5, 10, 12]  # at the start, every 5 steps (the checkpointer's period) and at the end

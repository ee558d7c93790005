"""monitor/monitored.py: a monitored loop takes the window's commands at its step boundaries, with the trainer's
own command table: pause blocks the loop until continue, Step(n) runs n steps, Stop ends it, a learning rate
reaches the optimizer, a ratio reaches `next_phase()`; what the loop cannot honour is refused with a reason;
commands appended to `commands.jsonl` (what an attached window writes) are applied too.

Why: the loop is the user's, so the only place these can act is `boundary()`; a pause that did not block, or a
command silently dropped, would make the window lie about the run. Absence (no step while paused) is checked
by flushing: a command sent while paused is applied at the paused step.
"""
from __future__ import annotations

import threading

import keras
import numpy as np
import pytest
import tensorflow as tf

from training_core import (Continue, Pause, Rollback, SampleNow, SetLearningRate, SetRatio, Step, Stop,
                           append_command, read_events)
from training_core.monitor import start_run

from .helpers import wait_for


def _run(tmp_path, **kw):
    keras.utils.set_random_seed(0)
    g = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="h")], name="generator")
    d = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="h")], name="discriminator")
    opts = {"D": keras.optimizers.SGD(0.1), "G": keras.optimizers.SGD(0.1)}
    run = start_run(tmp_path / "run", models={"generator": g, "discriminator": d},
                    phases={"D": (opts["D"], d), "G": (opts["G"], g)}, quiet=True, tensorboard=False,
                    sample=lambda m: {"fake": np.asarray(m.generator(np.ones((4, 2), np.float32)))}, **kw)
    x = tf.ones((4, 2))

    def step(name):
        model = d if name == "D" else g
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x)))
        run.apply_gradients(name, opts[name], tape.gradient(loss, model.trainable_variables),
                            model.trainable_variables)
        return loss
    return run, step, opts


def _loop(run, step, phases=None, ask=False):
    """The user's loop: on a thread of its own, as a loop runs while the window steers it."""
    done = threading.Event()

    def body():
        with run:
            for s in run.steps():
                name = run.next_phase() if ask else (phases or "DG")[s % len(phases or "DG")]
                run.log(s, {name: step(name)})
        done.set()
    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, done


def _drawn(run):
    from training_core.rundir.samples import list_samples
    return [step for step, _ in list_samples(run.run_dir)]


def _events(run, kind):
    return [e for e in read_events(run.run_dir) if e.kind == kind]


def test_pause_blocks_the_loop_until_continue_and_stop_ends_it(tmp_path):
    run, step, _ = _run(tmp_path)
    run.send(Pause())
    t, done = _loop(run, step)
    run.send(SampleNow())  # applied while paused: drawn at the step of the pause (a drawing, not an event)
    assert wait_for(lambda: 0 in _drawn(run))
    assert _events(run, "pause")[0].step == 0 and run.step == 0  # not one step ran while paused
    run.send(Step(5))
    assert wait_for(lambda: any(e.reason == "step" for e in _events(run, "pause")))
    run.send(SampleNow())
    assert wait_for(lambda: 5 in _drawn(run))
    assert run.step == 5 and max(_drawn(run)) == 5  # five steps, then paused again
    assert not _events(run, "sample")  # a request for a drawing is no event of the record
    run.send(Continue())
    run.send(Stop())
    t.join(120)
    assert done.is_set()
    stop = read_events(run.run_dir)[-1]
    assert stop.kind == "stop" and stop.reason == "stopped"


def test_a_learning_rate_reaches_the_optimizer_and_a_ratio_the_next_phase(tmp_path):
    run, step, opts = _run(tmp_path, steps=40)
    run.send(SetLearningRate(phase="G", value=0.5))
    run.send(SetRatio(policy={"ratio": [3, 1]}))  # refused: this loop does not ask which phase is next
    assert run.boundary()
    assert float(opts["G"].learning_rate.numpy()) == 0.5 and _events(run, "lr")[0].value == 0.5
    assert "run.next_phase()" in _events(run, "rejected")[0].message
    run, step, opts = _run(tmp_path / "asks", steps=40, schedule={"ratio": [1, 1]})  # a loop that follows it
    run.send(SetRatio(policy={"ratio": [3, 1]}))
    t, done = _loop(run, step, ask=True)
    t.join(120)
    assert done.is_set() and _events(run, "ratio")[0].policy == {"policy": "fixed", "ratio": [3, 1]}
    from training_core import read_scalars
    sc = read_scalars(run.run_dir)
    assert len(sc["loss/D"].steps) == 30 and len(sc["loss/G"].steps) == 10  # 3:1 from the first step


def test_what_a_monitored_loop_cannot_do_is_refused_with_a_reason(tmp_path):
    run, step, _ = _run(tmp_path, checkpoint_every=5)
    t, done = _loop(run, step)
    run.send(Pause())
    assert wait_for(lambda: bool(_events(run, "pause")))
    run.send(Rollback(step=0))
    run.send(Stop())
    t.join(120)
    assert done.is_set()
    assert "a monitored loop cannot" in _events(run, "rejected")[0].message


def test_commands_appended_to_the_commands_file_are_applied(tmp_path):
    run, step, _ = _run(tmp_path)
    run.send(Pause())
    t, done = _loop(run, step)
    append_command(run.run_dir, Step(3), id="from-a-window")
    assert wait_for(lambda: any(e.reason == "step" for e in _events(run, "pause")))
    append_command(run.run_dir, Stop(), id="stop-it")
    t.join(120)
    assert done.is_set()
    stepped = next(e for e in read_events(run.run_dir) if e.kind == "step")
    assert (stepped.id, stepped.n) == ("from-a-window", 3)
    stop = read_events(run.run_dir)[-1]
    assert (stop.kind, stop.id, stop.step) == ("stop", "stop-it", 3)


def test_frozen_means_frozen_and_the_gate_method_is_refused(tmp_path):
    """A freeze from the window holds a variable exactly still in a hand-written loop (its update reads 0 in
    the record, no leak) without a retrace; the gate method, which would let momentum move it, is refused."""
    from training_core import SetFreeze, SetFreezeMethod
    keras.utils.set_random_seed(0)
    d = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="h")], name="discriminator")
    opt = keras.optimizers.SGD(0.1, momentum=0.9)
    run = start_run(tmp_path / "run", models={"discriminator": d}, phases={"D": (opt, d)}, var_every=1,
                    quiet=True, tensorboard=False)

    @tf.function
    def train():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(d(tf.ones((4, 2))) - 1.0))
        run.apply_gradients("D", opt, tape.gradient(loss, d.trainable_variables), d.trainable_variables)
        return loss

    with run:
        for s in run.steps():
            if s == 4:  # applied after step 4: the kernel has momentum by then, which would move it on
                run.send(SetFreeze(("discriminator/h/kernel",)))
                run.send(SetFreezeMethod("gate"))
            run.log(s, {"D": train()})
            if s == 4:
                held = d.get_layer("h").kernel.numpy()
            if s == 8:
                break
    assert np.array_equal(d.get_layer("h").kernel.numpy(), held)
    assert "gate method" in _events(run, "rejected")[0].message and not _events(run, "leak")
    from training_core.rundir.varstore import read_variables
    (rows,) = read_variables(run.run_dir)
    assert rows.frozen[:, 0].tolist() == [False] * 4 + [True] * 4 and (rows.update_norm[4:, 0] == 0).all()
    assert (rows.update_norm[:, 1] > 0).all()  # the bias trains on
    assert train.experimental_get_tracing_count() == 1

"""monitor/control_replay.py: a monitored run's controls replayed by the user's script, `start_run(NEW, ...,
replay=OLD)` and `Monitor(NEW, replay=OLD)`.

Why: the command line cannot replay a run whose steps are the user's code's, so the script does, and the
replay is only worth its name if it is exact. The originals here are steered live as an attached window
steers (commands appended to `commands.jsonl` while the loop runs on a thread: a pause, then changes, then
continue), so the steps the changes land at are known only to the record. With TensorFlow's op determinism
on, the replay's losses must equal the original's (`np.array_equal`, on phases of 12 variables) and its
record must show the same commands at the same steps, with a `replay` event; bad use is one line, with
nothing written.
"""
from __future__ import annotations

import threading
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from training_core import (Continue, Pause, SampleNow, SetFreeze, SetLearningRate, SetRatio, Stop, append_command,
                           read_events, read_scalars)
from training_core.base import events as E
from training_core.base.errors import UserError
from training_core.monitor import Monitor, start_run
from training_core.rundir.replay_plan import plan_replay
from training_core.rundir.samples import list_samples
from training_core.rundir.varstore import read_variables

from .helpers import config, tiny_gan, wait_for
from .helpers import run as train_file
from .keras_gan import GAN, dataset, make_gan, points

CONTROLS = (E.Freeze, E.LearningRate, E.Ratio, E.Method)


@pytest.fixture(autouse=True, scope="module")
def _determinism():
    tf.config.experimental.enable_op_determinism()  # what the docs tell a script to do for an exact replay


def _mlp(name: str, out: int) -> keras.Model:
    """Six Dense layers: 12 variables."""
    return keras.Sequential([keras.Input((2,)), *[keras.layers.Dense(8, activation="tanh", name=f"h{i}")
                                                  for i in range(5)], keras.layers.Dense(out, name="out")], name=name)


def _gan_loop(run_dir, **kw):
    """A user's hand-written GradientTape GAN loop that asks the run which phase is next; built afresh (the same
    seed) for the original and for its replay, as a script run again would be."""
    keras.utils.set_random_seed(0)
    g, d = _mlp("generator", 2), _mlp("discriminator", 1)
    g_opt, d_opt = keras.optimizers.Adam(1e-3, beta_1=0.5), keras.optimizers.Adam(1e-3, beta_1=0.5)
    data = tf.constant(np.random.default_rng(0).normal(size=(512, 2)).astype("float32") + 1.0)
    run = start_run(run_dir, models={"generator": g, "discriminator": d}, phases={"D": (d_opt, d), "G": (g_opt, g)},
                    schedule={"ratio": [1, 1]}, var_every=5, quiet=True, tensorboard=False, **kw)

    @tf.function
    def d_step():
        real = tf.gather(data, run.rng.uniform([32], 0, 512, dtype=tf.int32))
        z = run.rng.normal([32, 2])
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.softplus(-d(real))) + tf.reduce_mean(tf.nn.softplus(d(g(z))))
        run.apply_gradients("D", d_opt, tape.gradient(loss, d.trainable_variables), d.trainable_variables)
        return loss

    @tf.function
    def g_step():
        z = run.rng.normal([32, 2])
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.softplus(-d(g(z))))
        run.apply_gradients("G", g_opt, tape.gradient(loss, g.trainable_variables), g.trainable_variables)
        return loss

    def loop():
        with run:
            for step in run.steps():
                phase = run.next_phase()
                run.log(step, {phase: d_step() if phase == "D" else g_step()})
    return run, loop, g_opt


def _kinds(run_dir, kind):
    return [e for e in read_events(run_dir) if e.kind == kind]


def _steer(run_dir, now, changes):
    """As a window attached to the run steers it: pause, the changes while paused, continue; then wait until
    the loop has run on a while (`now()` is its step)."""
    pauses = len(_kinds(run_dir, "pause"))
    append_command(run_dir, Pause(), id="window-pause")
    assert wait_for(lambda: len(_kinds(run_dir, "pause")) > pauses)
    at = _kinds(run_dir, "pause")[-1].step
    for i, change in enumerate(changes):
        append_command(run_dir, change, id=f"window-{at}-{i}")
    append_command(run_dir, Continue())
    assert wait_for(lambda: now() > at + 40)


def _steered(run_dir, train, now, *steerings) -> None:
    """`train()` on a thread, until stopped: after 20 steps, each of `steerings` as `_steer` does it, then Stop
    (sent on a failure too, so that no loop trains on behind the other tests)."""
    t = threading.Thread(target=train, daemon=True)
    t.start()
    try:
        assert wait_for(lambda: now() > 20)
        for changes in steerings:
            _steer(run_dir, now, changes)
    finally:
        if Path(run_dir).is_dir():
            append_command(run_dir, Stop())
        t.join(300)
    assert not t.is_alive()


def _controls(run_dir):
    return [(e.step, e.kind, e.command) for e in read_events(run_dir) if isinstance(e, CONTROLS)]


def test_a_loop_steered_live_replays_its_controls_and_its_losses_bit_for_bit(tmp_path):
    orig, again = tmp_path / "steered", tmp_path / "replay"
    run, loop, _ = _gan_loop(orig)  # until stopped
    _steered(orig, loop, lambda: run.step,
             [SetFreeze(("discriminator/h0", "discriminator/h1")), SetLearningRate(phase="G", value=4e-4)],
             [SetFreeze(("generator/h4",)), SetRatio(policy={"ratio": [2, 1]})])
    steered = _controls(orig)
    assert [kind for _, kind, _ in steered] == ["freeze", "lr", "freeze", "ratio"]
    stop = read_events(orig)[-1]

    _, loop, g_opt = _gan_loop(again, replay=orig)  # the same script run again, with replay= added
    loop()
    assert _controls(again) == steered  # the same commands, at the same steps
    (replay,) = _kinds(again, "replay")
    assert (replay.source, replay.commands, replay.stop_step) == (str(orig), 4, stop.step)
    assert read_events(again)[-1].step == stop.step  # it stopped where the original was stopped
    assert float(g_opt.learning_rate.numpy()) == np.float32(4e-4)
    _, loop, _ = _gan_loop(tmp_path / "replay-of-replay", replay=again)  # a replay's record replays as well
    loop()
    assert _controls(tmp_path / "replay-of-replay") == steered
    a, b, c = read_scalars(orig), read_scalars(again), read_scalars(tmp_path / "replay-of-replay")
    for tag in ("loss/D", "loss/G"):
        assert np.array_equal(a[tag].steps, b[tag].steps), tag  # the same phase at each step (the ratio)
        assert np.array_equal(a[tag].values, b[tag].values), tag
        assert np.array_equal(a[tag].steps, c[tag].steps) and np.array_equal(a[tag].values, c[tag].values), tag
    d_rows = next(r for r in read_variables(again) if r.phase == "D")
    kernel = d_rows.paths.index("discriminator/h0/kernel")
    first, second = steered[0][0], steered[2][0]  # the second freeze set replaced the first
    held = (d_rows.steps > first) & (d_rows.steps <= second)  # measured while the first one held
    assert held.any() and d_rows.frozen[held, kernel].all() and (d_rows.update_norm[held, kernel] == 0).all()
    assert not d_rows.frozen[~held, kernel].any() and (d_rows.update_norm[~held, kernel] > 0).all()


def _fit_gan() -> GAN:
    keras.utils.set_random_seed(0)
    gan = GAN(_mlp("discriminator", 1), _mlp("generator", 2))
    gan.compile(keras.optimizers.Adam(1e-3, beta_1=0.5), keras.optimizers.Adam(1e-3, beta_1=0.5))
    return gan


def test_fit_steered_live_replays_its_learning_rate_change_bit_for_bit(tmp_path):
    orig, again = tmp_path / "fit", tmp_path / "fit-replay"
    gan = _fit_gan()
    monitor = Monitor(orig, quiet=True, tensorboard=False)
    _steered(orig, lambda: gan.fit(dataset(), epochs=100_000, verbose=0, callbacks=[monitor]),
             lambda: 0 if monitor.core is None else monitor.core.state.step,
             [SetLearningRate(phase="generator", value=3e-4)])
    steered = _controls(orig)
    assert [kind for _, kind, _ in steered] == ["lr"]
    stop = read_events(orig)[-1]

    gan = _fit_gan()
    gan.fit(dataset(), epochs=100_000, verbose=0, callbacks=[Monitor(again, quiet=True, tensorboard=False,
                                                                     replay=orig)])
    assert _controls(again) == steered
    assert _kinds(again, "replay")[0].stop_step == stop.step == read_events(again)[-1].step
    assert float(gan.g_optimizer.learning_rate.numpy()) == np.float32(3e-4)
    a, b = read_scalars(orig), read_scalars(again)
    for tag in ("loss/discriminator", "loss/generator"):
        assert len(a[tag].steps) == stop.step and np.array_equal(a[tag].steps, b[tag].steps), tag
        assert np.array_equal(a[tag].values, b[tag].values), tag


def _small(run_dir, only_g: bool = False, **kw):
    keras.utils.set_random_seed(0)
    g = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, name="h")], name="generator")
    d = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="h")], name="discriminator")
    phases = {"G": (keras.optimizers.Adam(), g)} if only_g else {"D": (keras.optimizers.Adam(), d),
                                                                  "G": (keras.optimizers.Adam(), g)}
    return start_run(run_dir, models={"generator": g, "discriminator": d}, phases=phases, quiet=True,
                     tensorboard=False, **kw)


def _one_line(call) -> str:
    with pytest.raises(UserError) as e:
        call()
    assert "\n" not in str(e.value)
    return str(e.value)


def test_bad_replays_are_one_line_and_write_nothing(tmp_path):
    new = tmp_path / "new"
    said = _one_line(lambda: _small(new, replay=tmp_path / "nowhere"))
    assert said == f"run directory {tmp_path / 'nowhere'} does not exist; pass the directory of a recorded run to replay="
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("not a run")
    assert _one_line(lambda: _small(new, replay=tmp_path / "notes")) == (
        f"{tmp_path / 'notes'} has no config.toml; pass the run directory of a recorded run to replay=")

    plain = tmp_path / "plain"
    train_file(config(tiny_gan(tmp_path), plain, steps=3))  # an experiment file's run: the command line's to replay
    said = _one_line(lambda: _small(new, replay=plain))
    assert said.startswith(f"{plain} is a run of {tmp_path / 'tiny_gan_adam.py'}, not one training_core.monitor "
                           f"recorded, so start_run(NEW_DIR, ..., replay=DIR) in a hand-written loop cannot replay it")
    assert said.endswith(f"; replay it with: python main.py --replay {plain}")

    loop_run = tmp_path / "loop"
    with _small(loop_run) as run:
        run.log(1, {"D": 1.0})
    said = _one_line(lambda: Monitor(new, replay=loop_run))
    assert said == (f"{loop_run} was recorded from a hand-written loop, not fit(); replay it with "
                    f"start_run(NEW_DIR, ..., replay=DIR)")
    said = _one_line(lambda: _small(new, replay=loop_run, only_g=True))
    assert said == (f"{loop_run} trained the phases D, G, and this run G; a replay sends the old run's commands to its "
                    f"phases: give this run the same phases, in the same order")
    assert _one_line(lambda: _small(loop_run, replay=loop_run, resume=True)).startswith(
        f"run directory {loop_run} already holds a run, and a replay starts a record of its own")

    fit_run = tmp_path / "fit"
    make_gan().fit(dataset(2), epochs=1, verbose=0, callbacks=[Monitor(fit_run, quiet=True, tensorboard=False)])
    assert _one_line(lambda: _small(new, replay=fit_run)) == (
        f"{fit_run} was recorded from fit(), not a hand-written loop; replay it with Monitor(NEW_DIR, replay=DIR)")
    said = _one_line(lambda: plan_replay(fit_run, str(new)))  # the command line's --replay, and the window's
    assert said.endswith(f"so --replay cannot run it; run the script again with Monitor(NEW_DIR, replay='{fit_run}')")
    assert not new.exists()


def test_a_replay_from_other_starting_settings_says_so_in_its_record(tmp_path):
    with _small(tmp_path / "old") as run:
        run.send(SetLearningRate(phase="D", value=0.01))
        for step in run.steps():
            run.log(step, {"D": 1.0})
            if step == 3:
                break
    with _small(tmp_path / "new", replay=tmp_path / "old", seed=7) as run:
        for step in run.steps():
            run.log(step, {"D": 1.0})
    (warning,) = _kinds(tmp_path / "new", "warning")
    assert warning.message.startswith(f"this replay starts from other settings than {tmp_path / 'old'}: seed 7 (was 0);")
    assert [(e.step, e.value) for e in _kinds(tmp_path / "new", "lr")] == [(0, 0.01)]
    assert read_scalars(tmp_path / "new")["loss/D"].steps.tolist() == [1, 2, 3]


def _draws(models) -> dict:
    return {"fake": np.asarray(models["generator"](np.ones((4, 2), "float32"))), "real": np.ones((4, 2), "float32")}


def _sample_steps(run_dir) -> list[int]:
    return [step for step, _ in list_samples(run_dir)]


def test_a_loop_replay_draws_samples_at_the_old_runs_sample_steps_and_no_others(tmp_path):
    """The replay kept the script's own `sample_every` clock on, beside the plan's requests: it drew at steps
    the old run never drew at. Here the old run drew at a request (`run.send` after step 3) and at its end; the
    replay is given a clock that would draw after every step, and must still draw at exactly those steps."""
    orig, again = tmp_path / "orig", tmp_path / "replay"
    with _small(orig, sample=_draws, sample_every=0) as run:  # no clock: the request and the end
        for step in run.steps():
            run.log(step, {"D": 1.0, "G": 1.0})
            if step == 3:
                run.send(SampleNow())
            if step == 8:
                break
    assert _sample_steps(orig) == [3, 8]
    with _small(again, sample=_draws, sample_every=1e-9, replay=orig) as run:
        for step in run.steps():
            run.log(step, {"D": 1.0, "G": 1.0})
    assert _sample_steps(again) == _sample_steps(orig)
    assert "sample_every = 0.0" in (again / "config.toml").read_text()  # the record says its timer was off


def test_a_fit_replay_draws_samples_at_the_old_runs_sample_steps_and_no_others(tmp_path):
    orig, again = tmp_path / "fit", tmp_path / "fit-replay"
    monitor = Monitor(orig, sample=points, sample_every=0, quiet=True, tensorboard=False)

    class Ask(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 2:  # after step 3
                monitor.core.send(SampleNow())

    make_gan().fit(dataset(8), epochs=1, verbose=0, callbacks=[monitor, Ask()])
    assert _sample_steps(orig) == [4, 8]  # asked after the Monitor's boundary of step 3: drawn at the next one
    make_gan().fit(dataset(8), epochs=1, verbose=0, callbacks=[Monitor(again, sample=points, sample_every=1e-9,
                                                                       quiet=True, tensorboard=False, replay=orig)])
    assert _sample_steps(again) == _sample_steps(orig)

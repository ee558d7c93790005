"""The throughput variants, each exposing `run(n)`: train n alternating steps (1:1) and return when
they are done (results on the host), so that one timer around `run` measures them all alike.

bare      a plain tf.function loop, no monitoring: the floor.
bare_again  the same bare loop again: the harness's A/A check.
bare_norms  the same loop also returning what Freezeframe's step measures every step: ||dW||^2,
          ||W||^2 and ||g||^2 of each variable (the price of measuring, before any monitoring).
fit_tb    the keras.io pattern: Model subclass with train_step (one D and one G step), fit(), and
          keras.callbacks.TensorBoard(histogram_freq=1, update_freq="batch").
headless  Freezeframe's Trainer with full monitoring and the run record, driven by Step(n) commands;
          its RUN_DIR/commands.jsonl is polled (every 0.25 s) and has had a command appended.
headless_nocmd  the same without the commands.jsonl reader (`command_file=False`): the reader's cost.
window    the same inside the window (offscreen), plotting live; see bench/window_variant.py.
"""
from __future__ import annotations

import tempfile
import threading
from typing import Any
from pathlib import Path

from .ring_models import ring_parts


class Bare:
    name = "bare"
    norms = False

    def __init__(self) -> None:
        import keras
        import tensorflow as tf
        p = ring_parts()
        rng = tf.random.Generator.from_seed(0)
        n_data = int(p.data.shape[0])

        def batch():
            return tf.gather(p.data, rng.uniform([p.batch], 0, n_data, dtype=tf.int32))

        def d_loss():
            z = rng.normal([p.batch, p.noise_dim])
            real, fake = p.d(batch(), training=True), p.d(p.g(z, training=True), training=True)
            return tf.reduce_mean(tf.nn.softplus(-real)) + tf.reduce_mean(tf.nn.softplus(fake))

        def g_loss():
            z = rng.normal([p.batch, p.noise_dim])
            return tf.reduce_mean(tf.nn.softplus(-p.d(p.g(z, training=True), training=True)))

        def make(loss_fn, model, opt):
            vs = model.trainable_variables
            opt.build(vs)
            norms = self.norms

            @tf.function(autograph=False)
            def step():
                before = [tf.convert_to_tensor(v.value) for v in vs] if norms else []
                with tf.GradientTape() as tape:
                    loss = loss_fn()
                grads = tape.gradient(loss, vs)
                opt.apply(grads, vs)
                if not norms:
                    return loss
                after = [tf.convert_to_tensor(v.value) for v in vs]  # as engine/phase_step.py: one packed vector
                return tf.stack([loss] + [tf.nn.l2_loss(a - b) for a, b in zip(after, before)]
                                + [tf.nn.l2_loss(a) for a in after] + [tf.nn.l2_loss(g) for g in grads])
            return step

        self.steps = (make(d_loss, p.d, p.opt_d), make(g_loss, p.g, p.opt_g))
        self.run(20)
        del keras

    def run(self, n: int) -> None:
        out = None
        for i in range(n):
            out = self.steps[i % 2]()
        out.numpy()

    def close(self) -> None: ...


class BareAgain(Bare):
    """The bare loop a second time, interleaved like the others: bare_again/bare would be 1.000 on a quiet
    machine, so its distance from 1 is this harness's own spread in that run (an A/A test)."""
    name = "bare_again"


class BareNorms(Bare):
    name = "bare_norms"
    norms = True


class FitTensorBoard:
    name = "fit_tb"

    def __init__(self) -> None:
        import keras
        import tensorflow as tf
        p = ring_parts()
        self.logdir = tempfile.mkdtemp(prefix="ff-bench-fit-")

        class GAN(keras.Model):
            def __init__(self, g, d):
                super().__init__()
                self.g, self.d = g, d

            def compile(self, d_opt, g_opt):
                super().compile()
                self.d_opt, self.g_opt = d_opt, g_opt

            def train_step(self, real):
                z = tf.random.normal([p.batch, p.noise_dim])
                with tf.GradientTape() as tape:
                    fake = self.g(z, training=True)
                    d_loss = (tf.reduce_mean(tf.nn.softplus(-self.d(real, training=True)))
                              + tf.reduce_mean(tf.nn.softplus(self.d(fake, training=True))))
                self.d_opt.apply_gradients(zip(tape.gradient(d_loss, self.d.trainable_weights),
                                               self.d.trainable_weights))
                z = tf.random.normal([p.batch, p.noise_dim])
                with tf.GradientTape() as tape:
                    g_loss = tf.reduce_mean(tf.nn.softplus(-self.d(self.g(z, training=True), training=True)))
                self.g_opt.apply_gradients(zip(tape.gradient(g_loss, self.g.trainable_weights),
                                               self.g.trainable_weights))
                return {"d_loss": d_loss, "g_loss": g_loss}

        self.model = GAN(p.g, p.d)
        self.model.compile(p.opt_d, p.opt_g)
        self.ds = (tf.data.Dataset.from_tensor_slices(p.data.numpy()).shuffle(4096, seed=0).repeat()
                   .batch(p.batch, drop_remainder=True).prefetch(2))
        self.tb = keras.callbacks.TensorBoard(self.logdir, histogram_freq=1, update_freq="batch")
        self.run(20)

    def run(self, n: int) -> None:  # one train_step is one D and one G step
        self.model.fit(self.ds, epochs=1, steps_per_epoch=max(1, n // 2), callbacks=[self.tb], verbose=0)

    def close(self) -> None: ...


class StepDriver:
    """Drives a Trainer running on its own thread with Step(n) commands; `run(n)` returns when it paused."""

    def __init__(self, send, paused: threading.Event) -> None:
        self.send, self.paused = send, paused

    def run(self, n: int) -> None:
        from training_core import Step
        self.paused.clear()
        self.send(Step(n))
        if not self.paused.wait(600):
            raise RuntimeError("trainer did not pause after Step(n)")


class Driven:
    """Freezeframe's Trainer on its own thread (the ring, `overrides` on its RunConfig), paused, stepped by
    Step(n) commands: the CLI's loop with full monitoring and the run record."""

    name = ""
    overrides: dict = {}

    def __init__(self) -> None:
        from training_core import Observer, Pause, RunConfig, Stop, Trainer
        paused = threading.Event()

        class Obs(Observer):
            def on_event(self, e):
                if e.kind == "pause":
                    paused.set()

        self.dir = Path(tempfile.mkdtemp(prefix=f"ff-bench-{self.name}-")) / "run"
        self.trainer = Trainer(RunConfig(example="ring", run_dir=str(self.dir), **self.overrides), Obs())
        self.trainer.prepare()
        self.trainer.send(Pause())
        self.thread = threading.Thread(target=self.trainer.run, daemon=True)
        self.thread.start()
        if not paused.wait(120):
            raise RuntimeError(f"{self.name}: the trainer did not start")
        self.started()
        self.driver = StepDriver(self.trainer.send, paused)
        self._stop = Stop
        self.run(20)

    def started(self) -> None:
        """Called once the trainer waits paused at step 0."""

    def run(self, n: int) -> None:
        self.driver.run(n)

    def close(self) -> None:
        self.trainer.send(self._stop())
        self.thread.join(60)


class FileDriven:
    """A Trainer of an experiment file on its own thread, paused, stepped by Step(n) commands: what the
    benchmarks of one experiment's variants (bench/metrics_bench.py, datasets_bench.py, tfdata_bench.py) step
    in turn. `preparing` is a context manager the preparing runs in (a module setting changed for it alone)."""

    def __init__(self, name: str, experiment: Path, warm: int = 20, start_timeout: float = 120,
                 preparing: Any = None) -> None:
        import contextlib

        from training_core import Observer, Pause, RunConfig, Stop, Trainer
        paused = threading.Event()

        class Obs(Observer):
            def on_event(self, e):
                if e.kind == "pause":
                    paused.set()

        self.name, self._stop = name, Stop
        cfg = RunConfig(experiment_file=str(experiment), seed=0,
                        run_dir=str(Path(tempfile.mkdtemp(prefix=f"ff-bench-{name}-")) / "run"))
        self.trainer = Trainer(cfg, Obs())
        with preparing if preparing is not None else contextlib.nullcontext():
            self.trainer.prepare()
        self.trainer.send(Pause())
        self.thread = threading.Thread(target=self.trainer.run, daemon=True)
        self.thread.start()
        if not paused.wait(start_timeout):
            raise RuntimeError(f"{name}: the trainer did not start")
        self.driver = StepDriver(self.trainer.send, paused)
        self.run(warm)

    def run(self, n: int) -> None:
        self.driver.run(n)

    def close(self) -> None:
        self.trainer.send(self._stop())
        self.thread.join(120)


class Headless(Driven):
    name = "headless"
    overrides = {"command_file": True}

    def started(self) -> None:
        if self.overrides["command_file"]:
            from training_core import SetFreezeMethod, append_command
            append_command(self.dir, SetFreezeMethod(method="exact"), "bench")


class HeadlessNoCommandFile(Headless):
    name = "headless_nocmd"
    overrides = {"command_file": False}

"""What the monitor costs a user's step (issue 25: at most 3%), side by side: the same training with and without
it, on the ring's models and on the keras.io DCGAN's, in a hand-written loop (`start_run`, `run.apply_gradients`,
`run.log`, `boundary()`) and in `fit()` (`Monitor`).

Each pair is two copies of one training, built alike (same models, optimizers, data and seed); their chunks of
steps alternate in one process, and the median over back-to-back pairs of chunks of B's (monitored) seconds per
step over A's (bare) is reported, so that a busy, shared machine slows both alike (`compare`). An A/A pair (the bare loop against a second
bare loop) is the harness's own spread in the same run.

`python -m bench.monitor_bench [--quick]` prints one JSON line; bench/run.py runs it in a child process.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

from bench.child import run_child

ROOT = Path(__file__).resolve().parent.parent


def dcgan_parts(size: int, seed: int = 0) -> SimpleNamespace:
    """The keras.io DCGAN's models (generator Dense -> Conv2DTranspose 128, 256, 512 -> Conv2D 3; discriminator
    Conv2D 64, 128, 128 -> Dense), at `size` x `size` pixels (64 as on keras.io), batch 32, latent 128."""
    import keras
    import numpy as np
    from keras import layers
    keras.utils.set_random_seed(seed)
    d = keras.Sequential([keras.Input((size, size, 3)),
                          layers.Conv2D(64, 4, strides=2, padding="same"), layers.LeakyReLU(0.2),
                          layers.Conv2D(128, 4, strides=2, padding="same"), layers.LeakyReLU(0.2),
                          layers.Conv2D(128, 4, strides=2, padding="same"), layers.LeakyReLU(0.2),
                          layers.Flatten(), layers.Dropout(0.2), layers.Dense(1)], name="discriminator")
    s = size // 8
    g = keras.Sequential([keras.Input((128,)), layers.Dense(s * s * 128), layers.Reshape((s, s, 128)),
                          layers.Conv2DTranspose(128, 4, strides=2, padding="same"), layers.LeakyReLU(0.2),
                          layers.Conv2DTranspose(256, 4, strides=2, padding="same"), layers.LeakyReLU(0.2),
                          layers.Conv2DTranspose(512, 4, strides=2, padding="same"), layers.LeakyReLU(0.2),
                          layers.Conv2D(3, 5, padding="same", activation="sigmoid")], name="generator")
    data = np.random.default_rng(seed).uniform(size=(256, size, size, 3)).astype("float32")
    return SimpleNamespace(g=g, d=d, data=data, batch=32, noise_dim=128,
                           opt_d=keras.optimizers.Adam(1e-4), opt_g=keras.optimizers.Adam(1e-4))


def ring(seed: int = 0) -> SimpleNamespace:
    from bench.ring_models import ring_parts
    p = ring_parts(seed)
    p.data = p.data.numpy()
    return p


class Loop:
    """A hand-written GradientTape loop of one D and one G step a step; `monitored`: with the run object's lines
    (`live_freeze=False`: the run's freeze set fixed at its start, monitor/fixed_update.py)."""

    def __init__(self, parts: Callable[[], SimpleNamespace], monitored: bool, live_freeze: bool = True) -> None:
        import tensorflow as tf
        p = parts()
        data = tf.constant(p.data)
        n, rng = int(p.data.shape[0]), tf.random.Generator.from_seed(0)
        self.run = None
        if monitored:
            from training_core.monitor import start_run
            self.run = start_run(Path(tempfile.mkdtemp(prefix="ff-bench-mon-")) / "run", quiet=True,
                                 models={"generator": p.g, "discriminator": p.d},
                                 phases={"D": (p.opt_d, p.d), "G": (p.opt_g, p.g)}, live_freeze=live_freeze)
        else:
            p.opt_d.build(p.d.trainable_variables)
            p.opt_g.build(p.g.trainable_variables)
        run = self.run

        def apply(name: str, opt: Any, grads: Any, vs: Any) -> None:
            if run is not None:
                run.apply_gradients(name, opt, grads, vs)  # the added line
            else:
                opt.apply(grads, vs)

        @tf.function
        def train_step() -> Any:
            real = tf.gather(data, rng.uniform([p.batch], 0, n, dtype=tf.int32))
            z = rng.normal([p.batch, p.noise_dim])
            with tf.GradientTape() as tape:
                d_loss = (tf.reduce_mean(tf.nn.softplus(-p.d(real, training=True)))
                          + tf.reduce_mean(tf.nn.softplus(p.d(p.g(z, training=True), training=True))))
            apply("D", p.opt_d, tape.gradient(d_loss, p.d.trainable_variables), p.d.trainable_variables)
            z = rng.normal([p.batch, p.noise_dim])
            with tf.GradientTape() as tape:
                g_loss = tf.reduce_mean(tf.nn.softplus(-p.d(p.g(z, training=True), training=True)))
            apply("G", p.opt_g, tape.gradient(g_loss, p.g.trainable_variables), p.g.trainable_variables)
            return d_loss, g_loss

        self.step_fn, self.step = train_step, 0
        self.run_steps(2)

    def run_steps(self, k: int) -> None:
        out, run = None, self.run
        for _ in range(k):
            self.step += 1
            out = self.step_fn()
            if run is not None:
                run.log(self.step, {"D": out[0], "G": out[1]})  # the added lines
                run.boundary()
        out[0].numpy()

    def close(self) -> None:
        if self.run is not None:
            self.run.close()


class Fit:
    """The keras.io pattern: a Model subclass whose train_step takes one D and one G step, trained by fit();
    `monitored`: with `Monitor(...)` among its callbacks (one run over every chunk: keep_open)."""

    def __init__(self, parts: Callable[[], SimpleNamespace], monitored: bool) -> None:
        import keras
        import tensorflow as tf
        p = parts()

        class GAN(keras.Model):
            def __init__(self) -> None:
                super().__init__()
                self.discriminator, self.generator = p.d, p.g

            def compile(self) -> None:
                super().compile()
                self.d_optimizer, self.g_optimizer = p.opt_d, p.opt_g

            def train_step(self, real: Any) -> dict:
                z = tf.random.normal([p.batch, p.noise_dim])
                with tf.GradientTape() as tape:
                    d_loss = (tf.reduce_mean(tf.nn.softplus(-self.discriminator(real, training=True)))
                              + tf.reduce_mean(tf.nn.softplus(self.discriminator(self.generator(z, training=True),
                                                                                 training=True))))
                vs = self.discriminator.trainable_weights
                self.d_optimizer.apply_gradients(zip(tape.gradient(d_loss, vs), vs))
                z = tf.random.normal([p.batch, p.noise_dim])
                with tf.GradientTape() as tape:
                    g_loss = tf.reduce_mean(tf.nn.softplus(-self.discriminator(self.generator(z, training=True),
                                                                                training=True)))
                vs = self.generator.trainable_weights
                self.g_optimizer.apply_gradients(zip(tape.gradient(g_loss, vs), vs))
                return {"d_loss": d_loss, "g_loss": g_loss}

        self.model = GAN()
        self.model.compile()
        self.ds = (tf.data.Dataset.from_tensor_slices(p.data).shuffle(256, seed=0).repeat()
                   .batch(p.batch, drop_remainder=True).prefetch(2))
        self.callbacks = []
        if monitored:
            from training_core.monitor import Monitor
            self.monitor = Monitor(Path(tempfile.mkdtemp(prefix="ff-bench-fit-")) / "run", quiet=True, keep_open=True)
            self.callbacks = [self.monitor]
        self.run_steps(2)

    def run_steps(self, k: int) -> None:
        self.model.fit(self.ds, epochs=1, steps_per_epoch=k, callbacks=self.callbacks, verbose=0)

    def close(self) -> None:
        if self.callbacks:
            self.monitor.close()


def compare(make_a: Callable[[], Any], make_b: Callable[[], Any], chunk: int, rounds: int,
            instances: int = 1) -> dict[str, float]:
    """A and B in chunks of `chunk` steps, alternating, `rounds` times over `instances` copies of each.

    Why several copies: two copies of one bare loop, built alike, run at different speeds for as long as they
    live (4 bare ring loops in one process, round robin: 0.917-1.057 of the first, 2026-12-03 08:52 and 08:55),
    a layout effect of where each copy's tensors landed. With one copy a side that effect is the whole A/A
    spread and is added to B/A; with several, built in the order A B B A A B ..., each round compares the mean
    of A's copies with the mean of B's, and the per-copy effect averages out. Within a round the copies run in
    a rotated order (reversed every other round), so a machine whose speed drifts moves both sides alike.
    The ratio reported is the median over the rounds, for the wall-clock time per step (`ratio`) and for the
    process's CPU time per step (`cpu_ratio`: every thread of it, the record's writer included; less moved by
    other processes on the machine than the wall clock)."""
    side: list[tuple[str, Any]] = []
    for k in range(instances):
        pair = (("a", make_a), ("b", make_b)) if k % 2 == 0 else (("b", make_b), ("a", make_a))
        side.extend((name, make()) for name, make in pair)
    wall: dict[str, list[float]] = {"a": [], "b": []}
    cpu: dict[str, list[float]] = {"a": [], "b": []}
    for r in range(rounds):
        order = side[r % len(side):] + side[:r % len(side)]
        if r % 2:
            order.reverse()
        per: dict[str, list[tuple[float, float]]] = {"a": [], "b": []}
        for name, v in order:
            t, c = time.perf_counter(), time.process_time()
            v.run_steps(chunk)
            per[name].append(((time.perf_counter() - t) / chunk, (time.process_time() - c) / chunk))
        for name, got in per.items():
            wall[name].append(statistics.fmean(w for w, _ in got))
            cpu[name].append(statistics.fmean(c for _, c in got))
    for _, v in side:
        v.close()
    med = statistics.median
    return {"a_ms": 1e3 * med(wall["a"]), "b_ms": 1e3 * med(wall["b"]),
            "ratio": med([tb / ta for ta, tb in zip(wall["a"], wall["b"])]),
            "cpu_ratio": med([tb / ta for ta, tb in zip(cpu["a"], cpu["b"])]), "pairs": rounds,
            "instances": instances}


def compare_fresh(make_a: Callable[[], Any], make_b: Callable[[], Any], chunk: int, rounds: int, instances: int,
                  generations: int) -> dict[str, Any]:
    """`compare` `generations` times, each with copies built anew; the mean of the generations' ratios and its
    standard error.

    Why: the copies of one generation keep their speeds for as long as they live, so its rounds share their
    bias and a median over them cannot shrink it (one generation of 3 copies a side gave A/A 0.983-1.010 and
    B/A 1.006-1.072 from run to run, 2026-12-03). Fresh copies draw a fresh bias; over generations it averages
    out like any noise (A/A sd 0.037 a generation of 2 copies a side × 8 rounds of 100 steps, 2026-12-03 17:31)."""
    runs = [compare(make_a, make_b, chunk, rounds, instances) for _ in range(generations)]
    ratios = [r["ratio"] for r in runs]
    se = statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else float("nan")
    return {"a_ms": statistics.fmean(r["a_ms"] for r in runs), "b_ms": statistics.fmean(r["b_ms"] for r in runs),
            "ratio": statistics.fmean(ratios), "ratio_se": se, "generations": ratios,
            "cpu_ratio": statistics.fmean(r["cpu_ratio"] for r in runs), "pairs": rounds, "instances": instances}


class GraphOnly(Loop):
    """The monitored loop without its `run.log` and `boundary()`: what `run.apply_gradients` costs inside the
    step's graph alone (a split of the monitor's cost, not a way to use it: nothing is recorded)."""

    def run_steps(self, k: int) -> None:
        out = None
        for _ in range(k):
            self.step += 1
            out = self.step_fn()
        out[0].numpy()


def measure(quick: bool) -> dict[str, dict[str, float]]:
    """Every pair; `quick` (CI): small sizes and few rounds, to check that it runs (no timing asserted)."""
    from functools import partial
    size = 16 if quick else 64
    ring_chunk, ring_rounds = (50, 2) if quick else (200, 20)  # (fit() on the ring)
    dc_chunk, dc_rounds = (1, 2) if quick else (1, 12)
    copies = 2 if quick else 3  # copies of each side (see `compare`); the quick run checks the rotation too
    dc = partial(dcgan_parts, size)
    ring_loop, ring_fit = (partial(Loop, ring, False), partial(Loop, ring, True)), (partial(Fit, ring, False),
                                                                                   partial(Fit, ring, True))
    dc_loop, dc_fit = (partial(Loop, dc, False), partial(Loop, dc, True)), (partial(Fit, dc, False),
                                                                         partial(Fit, dc, True))
    # the ring loop: generations of fresh copies (`compare_fresh`), 2 a side, 8 rounds of 100 steps each
    fresh = (50, 2, 2, 2) if quick else (100, 8, 2, 10)
    return {
        "loop_ring": compare_fresh(*ring_loop, *fresh),
        "loop_ring_aa": compare_fresh(ring_loop[0], ring_loop[0], *fresh),
        "loop_ring_graph": compare_fresh(ring_loop[0], partial(GraphOnly, ring, True), *fresh),
        "loop_ring_fixed": compare_fresh(ring_loop[0], partial(Loop, ring, True, False), *fresh),
        "fit_ring": compare(*ring_fit, ring_chunk, ring_rounds, copies),
        "loop_dcgan": compare(*dc_loop, dc_chunk, dc_rounds, copies),
        "fit_dcgan": compare(*dc_fit, dc_chunk, dc_rounds, copies),
        "dcgan_size": {"pixels": size},
    }


def in_child(quick: bool) -> dict[str, dict[str, float]]:
    return run_child("bench.monitor_bench", ["--quick"] if quick else [], "monitor bench", timeout=5400)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    from training_core.engine.tf_quiet import import_tensorflow
    import_tensorflow()
    print(json.dumps(measure("--quick" in sys.argv)), flush=True)
    os._exit(0)  # TensorFlow's threads need no orderly teardown here

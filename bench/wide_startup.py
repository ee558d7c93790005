"""Start-up of a wide model (bench/wide_gan.py: 500 variables), in a fresh process so that importing
TensorFlow counts: seconds from the start of preparing to the first step's metrics, by stage (import,
build, optimizers, each trace or loss check made while preparing, the first call), and to the first
metrics after every phase stepped once (the other phase's trace and first call come in between), and, for scale, the same model's plain tf.function loop
measured after it in the same process (build, trace, first call of one phase's step).

`python -m bench.wide_startup LAYERS` prints one JSON line.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.child import run_child

ROOT = Path(__file__).resolve().parent.parent


def measure(layers: int) -> dict:
    return run_child("bench.wide_startup", [str(layers)],
                     "wide start-up child", timeout=3000, env={"FF_WIDE_LAYERS": str(layers)})


def _child() -> None:
    sys.path.insert(0, str(ROOT))
    from training_core import Observer, RunConfig, Trainer
    first: list[float] = []
    every: list[float] = []  # the first metrics after every phase stepped once
    begun: list[float] = []

    class FirstStep(Observer):
        def on_prepared(self, trainer):
            self.trainer = trainer

        def on_metrics(self, batch):
            if not first:
                first.append(time.perf_counter())
            if not every and all(self.trainer.phase_counts):
                every.append(time.perf_counter())

        def on_run_begin(self, trainer):  # after the run directory and the step-0 checkpoint
            begun.append(time.perf_counter())

    run_dir = Path(tempfile.mkdtemp(prefix="ff-bench-wide-")) / "run"
    trainer = Trainer(RunConfig(experiment_file=str(ROOT / "bench" / "wide_gan.py"), example=None, steps=4,
                                run_dir=str(run_dir), fetch_every=1, checkpoint_every=0), FirstStep())
    t0 = time.perf_counter()
    trainer.prepare()
    prepared = time.perf_counter() - t0
    trainer.run()
    stages = dict(trainer.prepared.timings)
    result = {"variables": len(trainer.prepared.variables), "prepare_s": prepared, "first_step_s": first[0] - t0,
              "every_phase_s": every[0] - t0, "traces": trainer.traces, "retraces": trainer.retraces,
              "stages": stages, "run_setup_s": begun[0] - t0 - prepared, "first_call_s": first[0] - begun[0],
              "bare": _bare()}
    print(json.dumps(result), flush=True)
    os._exit(0)


def _bare() -> dict:
    """One phase (D) of the same model as a plain loop: build, trace, first call."""
    import keras
    import tensorflow as tf

    from training_core.experiment.loading import load_module
    t = time.perf_counter()
    m = load_module(ROOT / "bench" / "wide_gan.py")
    g, d = m.generator(), m.discriminator()
    data = tf.Variable(m.real_data())
    rng = tf.random.Generator.from_seed(0)
    opt = keras.optimizers.Adam(2e-4, beta_1=0.5)
    opt.build(d.trainable_variables)
    build = time.perf_counter() - t

    @tf.function(autograph=False)
    def step():
        with tf.GradientTape() as tape:
            real = tf.gather(data, rng.uniform([m.batch_size], 0, int(data.shape[0]), dtype=tf.int32))
            fake = g(rng.normal([m.batch_size, m.noise_dim]), training=True)
            loss = (tf.reduce_mean(tf.nn.softplus(-d(real, training=True)))
                    + tf.reduce_mean(tf.nn.softplus(d(fake, training=True))))
        opt.apply(tape.gradient(loss, d.trainable_variables), d.trainable_variables)
        return loss
    t = time.perf_counter()
    step.get_concrete_function()
    trace = time.perf_counter() - t
    t = time.perf_counter()
    step().numpy()
    return {"build_s": build, "trace_s": trace, "first_call_s": time.perf_counter() - t}


if __name__ == "__main__":
    _child()

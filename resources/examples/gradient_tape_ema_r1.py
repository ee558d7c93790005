"""A hand-written GradientTape GAN loop with two common tricks, an exponential moving average of the
generator's weights (what is sampled and kept) and a lazy R1 penalty on the discriminator every 16 steps, on
the 8x8 digits shipped in resources/data, with Freezeframe's run object added: the lines marked
`# + freezeframe` (and `# was ...` where one replaced a line).

    python resources/examples/gradient_tape_ema_r1.py --run-dir runs/tape-gan --steps 3000
    python main.py --attach runs/tape-gan     # watch it; tick a scope to freeze it, exactly, live; pause; stop
    (kill it, then run the same command again: it continues the same record from its last checkpoint)
    python resources/examples/gradient_tape_ema_r1.py --run-dir runs/tape-gan-2 --replay runs/tape-gan --deterministic
    (the freeze and learning-rate changes made to runs/tape-gan, applied again at the same steps: with
    --deterministic on both, the same losses bit for bit)

What the run object does here: `run.apply_gradients` replaces `optimizer.apply` and honours the window's freeze
set exactly (bit for bit `apply` on the unfrozen variables, no retrace when it changes); `run.log` records each
step; `run.steps()` applies the window's commands between steps and blocks while paused; `run.rng` draws the
batches and the noise, and is checkpointed with the models and optimizers, so a resumed loop draws what the
uninterrupted one would have. The EMA generator is a model of the run too: checkpointed and shown, trained by
no phase (its weights move by the loop's own assign, which is no freeze's business).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # + freezeframe: training_core from this checkout (not needed once installed)
from training_core.monitor import start_run  # + freezeframe  # noqa: E402

LATENT, BATCH, R1_EVERY, R1_GAMMA, EMA_DECAY = 32, 64, 16, 1.0, 0.99


def digits() -> np.ndarray:
    images = np.load(ROOT / "resources" / "data" / "digits.npz")["images"].astype("float32")
    return (images / 8.0 - 1.0)[..., None]


def generator(name: str) -> keras.Model:
    return keras.Sequential([
        keras.Input((LATENT,)),
        keras.layers.Dense(4 * 4 * 32, name="dense"), keras.layers.LeakyReLU(0.2), keras.layers.Reshape((4, 4, 32)),
        keras.layers.Conv2DTranspose(16, 3, strides=2, padding="same", name="deconv"), keras.layers.LeakyReLU(0.2),
        keras.layers.Conv2D(1, 3, padding="same", activation="tanh", name="out"),
    ], name=name)


def discriminator() -> keras.Model:
    return keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(16, 3, strides=2, padding="same", name="conv_1"), keras.layers.LeakyReLU(0.2),
        keras.layers.Conv2D(32, 3, strides=2, padding="same", name="conv_2"), keras.layers.LeakyReLU(0.2),
        keras.layers.Flatten(), keras.layers.Dense(1, name="out"),
    ], name="discriminator")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", default="runs/tape-gan")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--replay", metavar="OLD_RUN_DIR", help="apply the controls a run of this script "  # + freezeframe
                    "recorded at the steps they took effect there, into a new --run-dir")  # + freezeframe
    ap.add_argument("--deterministic", action="store_true", help="TensorFlow op determinism, for an exact replay")
    a = ap.parse_args(argv)
    if a.deterministic:
        tf.config.experimental.enable_op_determinism()
    keras.utils.set_random_seed(0)
    g, g_ema, d = generator("generator"), generator("generator_ema"), discriminator()
    g_ema.set_weights(g.get_weights())
    g_opt = keras.optimizers.Adam(2e-4, beta_1=0.5)
    d_opt = keras.optimizers.Adam(2e-4, beta_1=0.5)
    data = tf.constant(digits())

    def sample(models) -> dict:  # + freezeframe: the EMA generator's pictures
        z = np.random.default_rng(0).normal(size=(64, LATENT)).astype("float32")  # + freezeframe
        return {"kind": "images", "fake": np.asarray(models["generator_ema"](z)), "real": digits()[:16]}  # + freezeframe

    run = start_run(a.run_dir, models={"generator": g, "generator_ema": g_ema, "discriminator": d},  # + freezeframe
                    phases={"D": (d_opt, d), "G": (g_opt, g)}, steps=a.steps, resume=True,  # + freezeframe
                    checkpoint_every=500, sample=sample, replay=a.replay)  # + freezeframe
    rng = run.rng  # + freezeframe  (was: rng = tf.random.Generator.from_seed(0))

    def d_loss_of(real, fake):
        return tf.reduce_mean(tf.nn.softplus(d(fake))) + tf.reduce_mean(tf.nn.softplus(-d(real)))

    def d_update(with_r1: bool):
        @tf.function
        def step():
            real = tf.gather(data, rng.uniform([BATCH], 0, data.shape[0], dtype=tf.int32))
            fake = g(rng.normal([BATCH, LATENT]))
            with tf.GradientTape() as tape:
                loss = d_loss_of(real, fake)
                r1 = tf.constant(0.0)
                if with_r1:  # lazy R1: the penalty every R1_EVERY steps, weighted by R1_EVERY
                    with tf.GradientTape() as inner:
                        inner.watch(real)
                        scores = tf.reduce_sum(d(real))
                    r1 = tf.reduce_mean(tf.reduce_sum(tf.square(inner.gradient(scores, real)), [1, 2, 3]))
                    loss += 0.5 * R1_GAMMA * R1_EVERY * r1
            grads = tape.gradient(loss, d.trainable_variables)
            run.apply_gradients("D", d_opt, grads, d.trainable_variables)  # + freezeframe (was d_opt.apply(...))
            return loss, r1
        return step

    @tf.function
    def g_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.softplus(-d(g(rng.normal([BATCH, LATENT])))))
        grads = tape.gradient(loss, g.trainable_variables)
        run.apply_gradients("G", g_opt, grads, g.trainable_variables)  # + freezeframe (was g_opt.apply(...))
        for w, w_ema in zip(g.weights, g_ema.weights):  # the EMA of G's weights
            w_ema.assign(EMA_DECAY * w_ema + (1.0 - EMA_DECAY) * w)
        return loss

    d_plain, d_r1 = d_update(False), d_update(True)
    with run:  # + freezeframe: a final checkpoint and the record's end, however the loop ends
        for step in run.steps():  # + freezeframe (was: for step in range(1, steps + 1))
            d_loss, r1 = (d_r1 if step % R1_EVERY == 0 else d_plain)()
            g_loss = g_step()
            run.log(step, {"D": d_loss, "G": g_loss}, {"r1": r1} if step % R1_EVERY == 0 else {})  # + freezeframe


if __name__ == "__main__":
    main()

"""A keras.io-style DCGAN (a `keras.Model` with its own `train_step`, trained by `fit()`), on the 1,797 8x8
digits shipped in resources/data, with Freezeframe's `Monitor` added: the lines marked `# + freezeframe`.

    python resources/examples/keras_dcgan_fit.py --run-dir runs/dcgan-fit --epochs 20
    python main.py --attach runs/dcgan-fit          # in another terminal: watch it, pause it, set a rate, stop it
    python resources/examples/keras_dcgan_fit.py --run-dir runs/dcgan-bug --epochs 4 --bug

`--bug` does what many GAN scripts do: after the first epoch it sets `discriminator.trainable = False`, believing
the discriminator frozen from then on. The compiled train_step still trains it; the Monitor says so, on the
terminal and in the window (a `leak` for each of its weights).

Runs offline in a minute or two on a CPU (model sizes as keras.io's DCGAN, scaled to 8x8 pictures).
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
from training_core.monitor import Monitor  # + freezeframe  # noqa: E402

LATENT = 32


def digits() -> np.ndarray:
    images = np.load(ROOT / "resources" / "data" / "digits.npz")["images"].astype("float32")
    return (images / 8.0 - 1.0)[..., None]  # 0..16 -> -1..1, (1797, 8, 8, 1)


def discriminator() -> keras.Model:
    return keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(32, 3, strides=2, padding="same", name="conv_1"), keras.layers.LeakyReLU(0.2),
        keras.layers.Conv2D(64, 3, strides=2, padding="same", name="conv_2"), keras.layers.LeakyReLU(0.2),
        keras.layers.Flatten(), keras.layers.Dropout(0.2), keras.layers.Dense(1, name="out"),
    ], name="discriminator")


def generator() -> keras.Model:
    return keras.Sequential([
        keras.Input((LATENT,)),
        keras.layers.Dense(2 * 2 * 64, name="dense"), keras.layers.Reshape((2, 2, 64)),
        keras.layers.Conv2DTranspose(64, 4, strides=2, padding="same", name="deconv_1"), keras.layers.LeakyReLU(0.2),
        keras.layers.Conv2DTranspose(32, 4, strides=2, padding="same", name="deconv_2"), keras.layers.LeakyReLU(0.2),
        keras.layers.Conv2D(1, 3, padding="same", activation="tanh", name="out"),
    ], name="generator")


class GAN(keras.Model):
    """As keras.io's DCGAN: one discriminator step, then one generator step, in `train_step`."""

    def __init__(self, discriminator: keras.Model, generator: keras.Model) -> None:
        super().__init__()
        self.discriminator, self.generator = discriminator, generator
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    def compile(self, d_optimizer: keras.optimizers.Optimizer, g_optimizer: keras.optimizers.Optimizer) -> None:
        super().compile()
        self.d_optimizer, self.g_optimizer = d_optimizer, g_optimizer

    def train_step(self, real):
        n = tf.shape(real)[0]
        fake = self.generator(tf.random.normal([n, LATENT]))
        images = tf.concat([fake, real], 0)
        labels = tf.concat([tf.ones([n, 1]), tf.zeros([n, 1])], 0)
        labels += 0.05 * tf.random.uniform(tf.shape(labels))  # keras.io's label noise
        with tf.GradientTape() as tape:
            d_loss = self.loss_fn(labels, self.discriminator(images))
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        with tf.GradientTape() as tape:
            g_loss = self.loss_fn(tf.zeros([n, 1]), self.discriminator(self.generator(tf.random.normal([n, LATENT]))))
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        return {"d_loss": d_loss, "g_loss": g_loss}


def samples(gan: GAN) -> dict:  # + freezeframe: what the samples view shows
    z = np.random.default_rng(0).normal(size=(64, LATENT)).astype("float32")  # + freezeframe
    return {"kind": "images", "fake": np.asarray(gan.generator(z, training=False)), "real": digits()[:16]}  # + freezeframe


class FreezeDiscriminatorLater(keras.callbacks.Callback):
    """The bug (`--bug`): the flag is set after the step was compiled, so nothing in the step changes."""

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if epoch == 0:
            self.model.discriminator.trainable = False


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", default="runs/dcgan-fit")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batches", type=int, default=0, help="batches per epoch (0: all the digits)")
    ap.add_argument("--bug", action="store_true", help="set discriminator.trainable = False after the first epoch")
    a = ap.parse_args(argv)
    keras.utils.set_random_seed(0)
    gan = GAN(discriminator(), generator())
    gan.compile(keras.optimizers.Adam(2e-4, beta_1=0.5), keras.optimizers.Adam(2e-4, beta_1=0.5))
    data = tf.data.Dataset.from_tensor_slices(digits()).shuffle(2048, seed=0).batch(32, drop_remainder=True)
    if a.batches:
        data = data.take(a.batches)
    callbacks = [Monitor(a.run_dir, sample=samples)]  # + freezeframe
    if a.bug:
        callbacks.insert(0, FreezeDiscriminatorLater())
    gan.fit(data, epochs=a.epochs, callbacks=callbacks, verbose=0)


if __name__ == "__main__":
    main()

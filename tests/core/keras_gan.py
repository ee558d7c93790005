"""A keras.io-style GAN for the monitor's tests: a `keras.Model` subclass whose own `train_step` trains the
discriminator then the generator, each with its own optimizer, trained by `fit()` (the pattern of the keras.io
GAN, DCGAN and WGAN-GP examples, on 2-D points so that a test runs in seconds). `python -m tests.core.keras_gan
RUN_DIR EPOCHS` trains it under `Monitor(RUN_DIR)` in a process of its own (the window's attach test); with `--leak`
after a first epoch unrecorded and `discriminator.trainable = False` (the keras.io bug: fit()'s compiled step trains it
on), a monitor run whose discriminator leaks (the export's default markers)."""
from __future__ import annotations

import sys

import keras
import numpy as np
import tensorflow as tf


class GAN(keras.Model):
    def __init__(self, discriminator: keras.Model, generator: keras.Model, latent_dim: int = 2) -> None:
        super().__init__()
        self.discriminator, self.generator, self.latent_dim = discriminator, generator, latent_dim

    def compile(self, d_optimizer: keras.optimizers.Optimizer, g_optimizer: keras.optimizers.Optimizer) -> None:
        super().compile()
        self.d_optimizer, self.g_optimizer = d_optimizer, g_optimizer

    def train_step(self, real):
        z = tf.random.normal([tf.shape(real)[0], self.latent_dim])
        with tf.GradientTape() as tape:
            fake = self.generator(z, training=True)
            d_loss = (tf.reduce_mean(tf.nn.softplus(-self.discriminator(real, training=True)))
                      + tf.reduce_mean(tf.nn.softplus(self.discriminator(fake, training=True))))
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        z = tf.random.normal([tf.shape(real)[0], self.latent_dim])
        with tf.GradientTape() as tape:
            g_loss = tf.reduce_mean(tf.nn.softplus(-self.discriminator(self.generator(z, training=True),
                                                                          training=True)))
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        return {"d_loss": d_loss, "g_loss": g_loss}


class EMAGAN(GAN):
    """The keras.io data-efficient GAN's pattern: an exponential moving average of the generator's weights,
    kept in a third sub-model that `train_step` updates by `assign` after each step, trained by no optimizer."""

    def __init__(self, discriminator: keras.Model, generator: keras.Model, ema_generator: keras.Model) -> None:
        super().__init__(discriminator, generator)
        self.ema_generator = ema_generator

    def train_step(self, real):
        out = super().train_step(real)
        for weight, ema_weight in zip(self.generator.weights, self.ema_generator.weights):
            ema_weight.assign(0.99 * ema_weight + 0.01 * weight)
        return out


def make_generator(name: str = "generator") -> keras.Sequential:
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(16, name="dense_1"),
                             keras.layers.BatchNormalization(name="bn"), keras.layers.Activation("tanh"),
                             keras.layers.Dense(2, name="out")], name=name)


def make_ema_gan(ema_name: str | None = None) -> EMAGAN:
    """A `make_gan()` GAN with an EMA generator: `keras.models.clone_model` (the keras.io code: it keeps the
    name `generator` and its variable paths), or one built under `ema_name`."""
    base = make_gan()
    ema = keras.models.clone_model(base.generator) if ema_name is None else make_generator(ema_name)
    gan = EMAGAN(base.discriminator, base.generator, ema)
    gan.compile(keras.optimizers.Adam(1e-3, beta_1=0.5), keras.optimizers.Adam(1e-3, beta_1=0.5))
    return gan


def make_gan(seed: int = 0) -> GAN:
    keras.utils.set_random_seed(seed)
    g = make_generator()
    d = keras.Sequential([keras.Input((2,)), keras.layers.Dense(16, activation="tanh", name="dense_1"),
                          keras.layers.Dense(1, name="out")], name="discriminator")
    gan = GAN(d, g)
    gan.compile(keras.optimizers.Adam(1e-3, beta_1=0.5), keras.optimizers.Adam(1e-3, beta_1=0.5))
    return gan


def dataset(batches: int = 16) -> tf.data.Dataset:
    points = (np.random.default_rng(0).normal(size=(32 * batches, 2)) * 0.5 + 1.0).astype("float32")
    return tf.data.Dataset.from_tensor_slices(points).batch(32, drop_remainder=True)


def points(gan: GAN) -> dict:
    """`sample(model)` for the Monitor: generated points, and real ones under them."""
    z = np.random.default_rng(1).normal(size=(256, 2)).astype("float32")
    return {"fake": np.asarray(gan.generator(z, training=False)), "real": next(iter(dataset().unbatch().batch(256)))}


if __name__ == "__main__":
    from training_core.monitor import Monitor
    run_dir, epochs = sys.argv[1], int(sys.argv[2])
    gan = make_gan()
    leak = sys.argv[3:] == ["--leak"]
    if leak:
        gan.fit(dataset(), epochs=1, verbose=0)  # the step is traced and compiled
        gan.discriminator.trainable = False  # the bug: the compiled step still updates it
    gan.fit(dataset(), epochs=epochs, verbose=0,
            callbacks=[Monitor(run_dir, sample=points, quiet=True, **({"var_every": 4} if leak else {}))])

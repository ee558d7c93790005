"""A DCGAN on the shapes (resources/data/shapes.npz) whose `metrics(ctx)` are FID and KID in a feature space trained
on the shapes at the start: what bench/quality_bench.py runs to see that a DCGAN learns them in minutes on two
cores and that the distances fall as it does (and what a measure costs beside training). A GAN-shortcut file.
"""
from pathlib import Path

import keras
import numpy as np

from training_core import quality

noise_dim = 64
batch_size = 64
learning_rate = 2e-4
ratio = "1:1"
sample_kind = "images"

_z = np.load(Path(__file__).resolve().parent.parent / "resources" / "data" / "shapes.npz")
IMAGES = (_z["images"].astype(np.float32) / 127.5 - 1.0)[..., None]  # 0..255 -> -1..1, (6400, 28, 28, 1)
LABELS = _z["labels"]

# Once, at the start: trained the first time (seconds), loaded from the cache afterwards (resumed runs too).
space = quality.trained_features(IMAGES, LABELS)
reference = space.reference(IMAGES)


def optimizer(phase):
    return keras.optimizers.Adam(learning_rate, beta_1=0.5)


def generator():
    return keras.Sequential([
        keras.Input((noise_dim,)),
        keras.layers.Dense(7 * 7 * 64, name="dense"),
        keras.layers.BatchNormalization(name="bn_1"),
        keras.layers.LeakyReLU(0.2, name="act_1"),
        keras.layers.Reshape((7, 7, 64), name="reshape"),
        keras.layers.Conv2DTranspose(32, 4, strides=2, padding="same", name="deconv_1"),  # 14x14
        keras.layers.BatchNormalization(name="bn_2"),
        keras.layers.LeakyReLU(0.2, name="act_2"),
        keras.layers.Conv2DTranspose(1, 4, strides=2, padding="same", activation="tanh", name="deconv_2"),  # 28x28
    ], name="generator")


def discriminator():
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        keras.layers.Conv2D(32, 4, strides=2, padding="same", name="conv_1"),
        keras.layers.LeakyReLU(0.2, name="act_1"),
        keras.layers.Conv2D(64, 4, strides=2, padding="same", name="conv_2"),
        keras.layers.LeakyReLU(0.2, name="act_2"),
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(1, name="out"),
    ], name="discriminator")


def real_data():
    return IMAGES


def metrics(ctx):
    fake = ctx.models.generator(ctx.normal((ctx.n, noise_dim)), training=False)
    return quality.scores(space, reference, fake)

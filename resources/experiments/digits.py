"""A small convolutional GAN on the 1,797 8x8 UCI handwritten digits (shipped in resources/data).

The generator has BatchNormalization, so freezing `generator/bn_1` shows that its moving statistics
stay put too.
"""
from pathlib import Path

import keras
import numpy as np

noise_dim = 32
batch_size = 64
learning_rate = 2e-4
ratio = "1:1"
sample_kind = "images"


def optimizer(phase):
    return keras.optimizers.Adam(learning_rate, beta_1=0.5)


def generator():
    return keras.Sequential([
        keras.Input((noise_dim,)),
        keras.layers.Dense(4 * 4 * 32, name="dense_1"),
        keras.layers.BatchNormalization(name="bn_1"),
        keras.layers.LeakyReLU(0.2, name="act_1"),
        keras.layers.Reshape((4, 4, 32), name="reshape"),
        keras.layers.Conv2DTranspose(16, 3, strides=2, padding="same", name="deconv_1"),
        keras.layers.BatchNormalization(name="bn_2"),
        keras.layers.LeakyReLU(0.2, name="act_2"),
        keras.layers.Conv2D(1, 3, padding="same", activation="tanh", name="conv_out"),
    ], name="generator")


def discriminator():
    return keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(16, 3, strides=2, padding="same", name="conv_1"),
        keras.layers.LeakyReLU(0.2, name="act_1"),
        keras.layers.Conv2D(32, 3, strides=2, padding="same", name="conv_2"),
        keras.layers.LeakyReLU(0.2, name="act_2"),
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(1, name="out"),
    ], name="discriminator")


def real_data():
    path = Path(__file__).resolve().parent.parent / "data" / "digits.npz"
    images = np.load(path)["images"].astype(np.float32)
    return (images / 8.0 - 1.0)[..., None]  # 0..16 -> -1..1, shape (1797, 8, 8, 1)

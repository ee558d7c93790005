"""A wide GAN for the start-up benchmark: generator and discriminator are 125-layer MLPs (width 64), so the
experiment has 500 variables, like a DCGAN/ResNet-sized model, while each step stays cheap on a CPU."""
import os

import keras
import numpy as np

noise_dim = 16
batch_size = 64
LAYERS, WIDTH = int(os.environ.get("FF_WIDE_LAYERS", 125)), 64  # bench --quick: fewer layers


def _mlp(name, inputs, outputs):
    layers = [keras.layers.Dense(WIDTH, activation="relu", name=f"dense_{i}") for i in range(LAYERS - 1)]
    return keras.Sequential([keras.Input((inputs,)), *layers, keras.layers.Dense(outputs, name="out")], name=name)


def generator():
    return _mlp("generator", noise_dim, 2)


def discriminator():
    return _mlp("discriminator", 2, 1)


def real_data():
    rng = np.random.default_rng(0)
    angle = rng.integers(0, 8, 4096) * np.pi / 4
    return (2 * np.stack([np.cos(angle), np.sin(angle)], 1) + rng.normal(0, 0.05, (4096, 2))).astype("float32")

"""8 Gaussians on a ring: the classic mode-collapse demo (Metz et al. 2017, "Unrolled GANs").

A GAN-shortcut experiment file: it defines generator, discriminator, real_data and noise_dim, and
gets the standard non-saturating GAN losses with phases D and G.
"""
import keras
import numpy as np

noise_dim = 2
batch_size = 256
learning_rate = 1e-4
ratio = "1:1"


def optimizer(phase):
    return keras.optimizers.Adam(learning_rate, beta_1=0.5)


def _mlp(name, out):
    return keras.Sequential([
        keras.Input((2,)),
        keras.layers.Dense(256, activation="relu", name="dense_1"),
        keras.layers.Dense(256, activation="relu", name="dense_2"),
        keras.layers.Dense(out, name="out"),
    ], name=name)


def generator():
    return _mlp("generator", 2)


def discriminator():
    return _mlp("discriminator", 1)


def real_data(n=65536, modes=8, radius=2.0, std=0.02, seed=1234):
    rng = np.random.default_rng(seed)
    k = rng.integers(0, modes, n)
    angle = 2 * np.pi * k / modes
    centres = np.stack([np.cos(angle), np.sin(angle)], 1) * radius
    return (centres + rng.normal(0, std, (n, 2))).astype(np.float32)

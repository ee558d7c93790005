"""8 Gaussians on a ring: the classic mode-collapse demo (Metz et al. 2017, "Unrolled GANs").

A GAN-shortcut experiment file: it defines generator, discriminator, real_data and noise_dim, and
gets the standard non-saturating GAN losses with phases D and G. `metrics` reports the measures of
the Unrolled GAN paper on 2,048 generated points: a point within 3 standard deviations of a mode is
high quality, and a mode is covered when at least 20 high-quality points (1%) land on it.
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


MODES, RADIUS, STD = 8, 2.0, 0.02
MIN_PER_MODE = 20  # high-quality points a mode needs to count as covered (1% of 2,048)


def centres():
    angle = 2 * np.pi * np.arange(MODES) / MODES
    return np.stack([np.cos(angle), np.sin(angle)], 1) * RADIUS


def real_data(n=65536, seed=1234):
    rng = np.random.default_rng(seed)
    k = rng.integers(0, MODES, n)
    return (centres()[k] + rng.normal(0, STD, (n, 2))).astype(np.float32)


def metrics(ctx):
    fake = np.asarray(ctx.models.generator(ctx.normal((ctx.n, noise_dim)), training=False))
    dist = np.linalg.norm(fake[:, None, :] - centres()[None], axis=2)  # (n, MODES)
    high = dist.min(axis=1) <= 3 * STD
    per_mode = np.bincount(dist.argmin(axis=1)[high], minlength=MODES)
    return {"modes_covered": int((per_mode >= MIN_PER_MODE).sum()), "high_quality": float(high.mean())}

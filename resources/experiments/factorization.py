"""Alternating matrix factorisation: data ~ W @ C, with phase W training W and phase C training C.

A `build()` experiment file: the general form, with its own phases, losses and sample view.
"""
import keras
import numpy as np

from training_core import Experiment, Phase

ROWS, COLS, RANK = 60, 40, 5
LEARNING_RATE = 0.3


class Factor(keras.layers.Layer):
    """One factor matrix as a layer, so its variable path reads `W/kernel`."""

    def __init__(self, shape, **kwargs):
        super().__init__(**kwargs)
        self.kernel = self.add_weight(shape=shape, initializer=keras.initializers.RandomNormal(0.0, 0.3),
                                      name="kernel")

    def call(self, x=None):
        return self.kernel


def target(seed=7):
    rng = np.random.default_rng(seed)
    w, c = rng.normal(size=(ROWS, RANK)), rng.normal(size=(RANK, COLS))
    return (w @ c / np.sqrt(RANK) + rng.normal(0, 0.05, (ROWS, COLS))).astype(np.float32)


def loss(ctx):
    m = ctx.models
    return keras.ops.mean(keras.ops.square(ctx.data - keras.ops.matmul(m.W(), m.C())))


def sample(ctx):
    x = np.asarray(ctx.data)
    rec = np.asarray(keras.ops.matmul(ctx.models.W(), ctx.models.C()))
    return {"target": x, "reconstruction": rec, "error": float(np.sqrt(np.mean((x - rec) ** 2)))}


def metrics(ctx):
    """Relative reconstruction error ||X - W C|| / ||X|| (Frobenius): 0 is perfect, 1 is no better than 0."""
    x = np.asarray(ctx.data)
    rec = np.asarray(keras.ops.matmul(ctx.models.W(), ctx.models.C()))
    return {"relative_error": float(np.linalg.norm(x - rec) / np.linalg.norm(x))}


def build():
    models = {"W": Factor((ROWS, RANK), name="W"), "C": Factor((RANK, COLS), name="C")}

    def opt(phase):
        return keras.optimizers.SGD(LEARNING_RATE, momentum=0.9)

    return Experiment(
        name="factorization", models=models, data=target(), batch_size=None,
        phases=[Phase("W", loss, trains=["W"], optimizer=opt("W"), learning_rate=LEARNING_RATE),
                Phase("C", loss, trains=["C"], optimizer=opt("C"), learning_rate=LEARNING_RATE)],
        sample=sample, sample_kind="matrix", metrics=metrics, default_ratio=[1, 1],
        description="data ~ W @ C, alternating W and C")

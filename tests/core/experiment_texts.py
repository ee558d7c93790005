"""Pieces of experiment files that several core test files write (helpers.py holds the whole tiny files and
`write_file`): one net fitted by a loss given as text, a GAN shortcut whose models do not fit, a layer that draws at every call,
a GAN's metrics(ctx).

Why a module: each was copied into the test files that wrote it."""
from __future__ import annotations

#: an experiment of one net (2 inputs, 1 output) and one phase "fit" that trains it, on 8 rows of 3 columns, batch 4;
#: `ONE_NET.format(loss="...")` is the file with that expression as the loss (its doubled braces are the file's)
ONE_NET = '''
import keras
import numpy as np
from training_core import Experiment, Phase

def net():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")], name="net")

def loss(ctx):
    return {loss}

def build():
    return Experiment(name="x", models={{"net": net()}}, data=np.ones((8, 3), "float32"), batch_size=4,
                      phases=[Phase("fit", loss, trains=["net"])])
'''

#: a GAN shortcut whose models do not fit together: the generator takes 4 inputs, noise_dim is 3
MISFIT_GAN = '''
import keras, numpy as np
noise_dim = 3
def generator():
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="out")], name="generator")
def discriminator():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")], name="discriminator")
real_data = np.zeros((10, 2), "float32")
'''

#: a layer that adds noise at every call, training or not, from a SeedGenerator of its own (as the Keras VAE
#: example's Sampling layer draws its epsilon), for experiment files that import keras
NOISE_LAYER = '''
class Noise(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seeds = keras.random.SeedGenerator(1)

    def call(self, x):
        return x + 0.1 * keras.random.normal(keras.ops.shape(x), seed=self.seeds)
'''

#: a metrics(ctx) for a GAN shortcut's file: the spread of the generator's points
SPREAD_METRICS = '''
def metrics(ctx):
    return {"spread": float(np.std(np.asarray(ctx.models.generator(ctx.normal((ctx.n, noise_dim))))))}
'''

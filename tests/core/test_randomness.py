"""Random draws that escape the run's seeded generators (engine/randomness.py): a loss that draws from `tf.random`
(the global state, or a `tf.random.Generator` of its own) is warned of, since a checkpoint does not save that
state; `ctx.normal` and the batch the run draws are not.

The experiment files are prepared for real (`prepare`, as a run would)."""
from __future__ import annotations

from training_core import RunConfig
from training_core.engine.prepare import prepare

from .helpers import tiny_gan, write_file


_RANDOM_LOSS = '''
import keras
import numpy as np
import tensorflow as tf
from training_core import Experiment, Phase

own = tf.random.Generator.from_seed(3)

def net():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")], name="net")

def seeded(ctx):
    return keras.ops.mean(ctx.models.net(ctx.batch + ctx.normal((4, 2))) ** 2)

def escapes(ctx):
    return keras.ops.mean(ctx.models.net(ctx.batch + tf.random.normal((4, 2))) ** 2)

def own_generator(ctx):
    return keras.ops.mean(ctx.models.net(ctx.batch + own.uniform((4, 2))) ** 2)

def build():
    return Experiment(name="r", models={"net": net()}, data=np.ones((8, 2), "float32"), batch_size=4,
                      phases=[Phase("S", seeded, trains=["net"]), Phase("D", escapes, trains=["net"]),
                              Phase("O", own_generator, trains=["net"])])
'''


def test_a_loss_drawing_from_tf_random_is_warned_about(tmp_path):
    path = write_file(tmp_path, "random_loss.py", _RANDOM_LOSS)
    p = prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert p.warnings == [
        "phase D's loss draws from tf.random (RandomStandardNormal), whose state the run's checkpoints do not "
        "save; use ctx.normal/ctx.uniform",
        "phase O's loss draws from tf.random (RngReadAndSkip), whose state the run's checkpoints do not "
        "save; use ctx.normal/ctx.uniform"]
    gan = prepare(RunConfig(experiment_file=str(tiny_gan(tmp_path))), lambda *_: None)
    assert gan.warnings == []  # ctx.normal, and the batch drawn by the run's generator, are covered

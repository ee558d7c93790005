"""engine/beside.py on its own: a snapshot keeps the values of its step while the training writes on, a failing
measure comes back as its error, and the models that cannot have a shadow say why. Real runs with measures
beside training are in test_health.py."""
from __future__ import annotations

import queue
from types import SimpleNamespace

import keras
import numpy as np

from training_core.engine.beside import MetricsBeside
from training_core.experiment.api import Models


def _prepared(models: dict, metrics) -> SimpleNamespace:
    """The parts of `engine.prepare.Prepared` a measure uses."""
    exp = SimpleNamespace(models=Models(models), metrics=metrics, extra={})
    return SimpleNamespace(experiment=exp, device="/CPU:0", config=SimpleNamespace(seed=0), data=None, sample_rng=None)


def _net(name: str = "net") -> keras.Model:
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="dense"),
                             keras.layers.BatchNormalization(name="bn")], name=name)


def _total(model) -> float:
    return float(sum(np.sum(v.numpy(), dtype=np.float64) for v in model.variables))


def test_a_snapshot_keeps_the_values_of_its_step_while_the_training_writes_on():
    net = _net()
    b = MetricsBeside.create(_prepared({"net": net}, lambda ctx: {"total": _total(ctx.models.net)}))
    assert isinstance(b, MetricsBeside)
    want = _total(net)
    real, b._jobs = b._jobs, queue.Queue()  # the thread waits on the real queue: the job is handed over below
    b.start(7)
    for v in net.variables:  # the training's next step, before the metrics thread has read anything
        v.assign(v.value + 1.0)
    real.put(b._jobs.get())
    b._jobs = real
    got = b.result(wait=True)
    assert got.step == 7 and got.error is None and got.values["total"] == want != _total(net)
    assert b.result() is None  # taken once
    b.close()


def test_a_failing_measure_comes_back_as_its_error():
    def broken(ctx):
        raise ZeroDivisionError("no")

    b = MetricsBeside.create(_prepared({"net": _net()}, broken))
    b.start(1)
    got = b.result(wait=True)
    assert got.step == 1 and got.values is None and isinstance(got.error, ZeroDivisionError)
    b.close()


class _Sub(keras.Model):
    def __init__(self):
        super().__init__(name="sub")
        self.dense = keras.layers.Dense(2)

    def call(self, x):
        return self.dense(x)


class _Scaled(keras.layers.Layer):
    """A layer whose config does not hold what it computes with (set after it was made): Keras rebuilds it as
    another layer. (Keras 3 keeps a layer's constructor arguments in its config by itself.)"""

    scale = 1.0

    def call(self, x):
        return x * self.scale


def test_models_without_a_faithful_clone_say_why():
    sub = _Sub()
    sub(np.zeros((1, 2), "float32"))
    tripled = _Scaled()
    tripled.scale = 3.0
    scaled = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2), tripled], name="scaled")
    module = SimpleNamespace(variables=[keras.Variable(np.zeros(2))])
    why = {name: MetricsBeside.create(_prepared({name: m}, None)) for name, m in
           (("sub", sub), ("scaled", scaled), ("module", module))}
    assert "subclassed keras.Model (_Sub)" in why["sub"]
    assert "computes something else than the model" in why["scaled"]
    assert "not a Keras model or layer" in why["module"]


def test_sequential_functional_and_layer_models_have_shadows_that_compute_alike():
    """A layer as a model (as the factorisation's factors) is remade from its config, as clone_model remakes
    each layer of a model; each shadow is made with the model's values and checked by a probe."""
    functional_in = keras.Input((2,))
    functional = keras.Model(functional_in, keras.layers.Dense(1)(functional_in), name="functional")
    layer = keras.layers.Dense(2, name="layer")
    layer.build((None, 3))
    got = MetricsBeside.create(_prepared({"functional": functional, "net": _net(), "layer": layer}, None))
    assert isinstance(got, MetricsBeside)
    x = np.ones((4, 3), "float32")
    np.testing.assert_array_equal(np.asarray(got.models.layer(x)), np.asarray(layer(x)))
    assert got.models.layer is not layer and got.models.layer.kernel is not layer.kernel
    got.close()


class _Noise(keras.layers.Layer):
    """Adds noise at every call, training or not, from a SeedGenerator of its own (as the Keras VAE example's
    Sampling layer draws its epsilon)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seeds = keras.random.SeedGenerator(1)

    def call(self, x):
        return x + 0.1 * keras.random.normal(keras.ops.shape(x), seed=self.seeds)


def test_making_the_shadows_leaves_every_variable_of_the_models_as_it_was():
    """The shadow is checked by calling the model and its shadow on one probe input: a layer that draws in
    call() advanced the training model's seed state, so a run with metrics trained on other noise than without."""
    net = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="dense"), _Noise(name="noise")], name="net")
    before = [np.array(v.numpy(), copy=True) for v in net.variables]
    assert any("seed" in v.path for v in net.variables)
    got = MetricsBeside.create(_prepared({"net": net}, None))
    assert isinstance(got, MetricsBeside), got  # the shadow draws as the model does: it is checked and made
    after = [v.numpy() for v in net.variables]
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True)), [v.path for v in net.variables]
    got.close()


def test_the_sample_generator_never_replays_the_training_stream():
    """The training draws from `Generator.from_seed(seed)`; a `from_seed(seed + 1)` would be the same stream one
    counter block on (its numbers equal the training's from the fifth on). The sample generator is keyed apart."""
    import tensorflow as tf
    from training_core.engine.measuring import sample_generator
    train = tf.random.Generator.from_seed(0).uniform([64]).numpy()
    shifted = tf.random.Generator.from_seed(1).uniform([60]).numpy()
    assert np.array_equal(train[4:], shifted)  # the overlap the keyed generator avoids
    samples = sample_generator(0).uniform([64]).numpy()
    assert not np.isin(samples, train).any()
    assert np.array_equal(sample_generator(0).uniform([8]).numpy(), samples[:8])  # and it is seeded

"""engine/beside.py: metrics(ctx) beside training, on shadows of the models and a snapshot of one step's weights.
On its own: a snapshot keeps the values of its step while the training writes on, a failing measure comes back as
its error, a measure beside training equals the end's on the training thread (same step, same weights), and the
models that cannot have a shadow say why. In real runs: each measure equals the weights of the
step it is recorded at (BatchNormalization's statistics too), making the shadows leaves the training's noise as it
was, and a model Keras cannot clone is measured on the training thread with a warning saying why."""
from __future__ import annotations

import queue
from types import SimpleNamespace

import keras
import numpy as np

from training_core import RunConfig, read_events, read_scalars
from training_core.engine.beside import MetricsBeside
from training_core.experiment.api import Models
from training_core.experiment.loading import load_module
from training_core.observers import health

from .experiment_texts import NOISE_LAYER, SPREAD_METRICS
from .helpers import config, run, tiny_gan, write_file
from .measure_watch import Watch, assert_measured_at_their_steps, assert_one_ordered_record


def _prepared(models: dict, metrics) -> SimpleNamespace:
    """The parts of `engine.prepare.Prepared` a measure uses."""
    exp = SimpleNamespace(models=Models(models), metrics=metrics, extra={})
    return SimpleNamespace(experiment=exp, device="/CPU:0", config=SimpleNamespace(seed=0), data=None, sample_rng=None)


_NOISY = '''
"""A tiny GAN whose generator adds noise at every call, training or not, from a SeedGenerator of its own (as
the Keras VAE example's Sampling layer draws its epsilon)."""
import keras
import numpy as np

noise_dim = 2
batch_size = 16

''' + NOISE_LAYER + '''

def generator():
    return keras.Sequential([keras.Input((noise_dim,)), keras.layers.Dense(4, activation="tanh", name="dense_1"),
                             Noise(name="noise"), keras.layers.Dense(2, name="out")], name="generator")


def discriminator():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(4, activation="tanh", name="dense_1"),
                             keras.layers.Dense(1, name="out")], name="discriminator")


def real_data():
    return (np.random.default_rng(0).normal(size=(256, 2)) * 0.5 + 1.0).astype("float32")
'''


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



def test_the_ends_measure_on_the_training_thread_equals_one_beside_training_of_the_same_step():
    """Issue 24's last KID ten times the one before: the end's measure (on the models themselves, the training
    thread's `compute_metrics`) and a measure beside training (on the shadows) of the same weights at the same step
    are one value, bit for bit: the same noise (keyed by the seed and the step, which does change it), the same
    BatchNormalization statistics (moved after the shadows were made), inference mode in both."""
    from training_core.engine.measuring import compute_metrics
    net = _net()

    def metrics(ctx):
        y = np.asarray(ctx.models.net(ctx.normal((ctx.n, 2)), training=False), np.float64)
        return {"mean": float(y.mean()), "sq": float((y ** 2).mean())}

    prepared = _prepared({"net": net}, metrics)
    b = MetricsBeside.create(prepared)
    assert isinstance(b, MetricsBeside)
    net(np.random.default_rng(1).normal(3.0, 2.0, (64, 2)).astype("float32"), training=True)  # moves bn's stats
    net.get_layer("dense").kernel.assign_add(np.ones((2, 3), "float32"))  # and a weight: the shadows' are older
    b.start(7)
    beside = b.result(wait=True)
    b.close()
    assert beside.error is None and beside.values == compute_metrics(prepared, 7)
    assert compute_metrics(prepared, 8) != beside.values  # another step, other noise: the test can tell them apart

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


def test_making_the_shadows_leaves_every_variable_of_the_models_as_it_was(tmp_path):
    """The shadow is checked by calling the model and its shadow on one probe input: a layer that draws in
    call() advanced the training model's seed state, so a run with metrics trained on other noise than without."""
    noise = load_module(write_file(tmp_path, "noisy.py", _NOISY)).Noise  # (a layer of the user's file)
    net = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="dense"), noise(name="noise")], name="net")
    before = [np.array(v.numpy(), copy=True) for v in net.variables]
    assert any("seed" in v.path for v in net.variables)
    got = MetricsBeside.create(_prepared({"net": net}, None))
    assert isinstance(got, MetricsBeside), got  # the shadow draws as the model does: it is checked and made
    after = [v.numpy() for v in net.variables]
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True)), [v.path for v in net.variables]
    got.close()


# -- real runs with measures beside training ---------------------------------------------------------------------
def test_measures_beside_training_are_recorded_at_the_step_whose_weights_they_measured(run_dir, monkeypatch):
    """The ring's metrics every 0.05 s for 500 steps (SHARE raised: measures as often as half their cost allows):
    each measure but the end's ran on the metrics thread, on the shadows; each value equals the training's own
    weights at the step it is recorded at (every step changes them: the sums of D's and G's weights), and the
    record is one, in step order."""
    monkeypatch.setattr(health, "SHARE", 0.5)
    watch = Watch()
    run(RunConfig(example="ring", steps=500, seed=0, run_dir=str(run_dir), metrics_seconds=0.05, fetch_every=50,
                  checkpoint_every=100), watch)
    sc = assert_one_ordered_record(run_dir, 500)
    assert_measured_at_their_steps(sc, watch)
    assert sc["metric/weights"].steps[0] == 0 and sc["metric/weights"].steps[-1] == 500
    np.testing.assert_array_equal(sc["metric/modes_covered"].steps, sc["metric/weights"].steps)
    # every measure ran on the metrics thread, but the end's (on the training thread: the run is over), which a
    # measure that happened to begin at the last step makes unneeded
    assert len(watch.beside()) >= len(watch.calls) - 1 and len(watch.beside()) >= 2
    # (a warning that a measure took longer than 0.05 s may come, on a loaded machine; nothing else)
    assert not [e for e in read_events(run_dir) if e.kind == "warning" and "more than its interval" not in e.message]


def test_batch_normalization_statistics_are_in_the_snapshot(tmp_path, monkeypatch):
    """A generator with BatchNormalization, whose moving statistics change at every step: each measure's sum of
    the shadows' non-trainable variables equals the training's at the step it is recorded at."""
    monkeypatch.setattr(health, "SHARE", 0.5)
    watch = Watch()
    run(config(tiny_gan(tmp_path, bn=True), tmp_path / "run", steps=300, metrics_seconds=0.05, fetch_every=20,
               checkpoint_every=100), watch)
    sc = assert_one_ordered_record(tmp_path / "run", 300)
    assert_measured_at_their_steps(sc, watch)
    assert len(set(sc["metric/stats"].values.tolist())) > 2  # the statistics moved, and were measured moving
    assert watch.beside()


def test_a_run_with_metrics_trains_on_the_noise_of_the_run_without(tmp_path):
    """A generator layer that draws from its own SeedGenerator at every call: the shadows are checked by calling
    the model once, which moved its seed state; now the losses are those of the run without metrics, bit for
    bit, and the measures ran beside training."""
    plain = write_file(tmp_path, "noisy.py", _NOISY)
    measured = write_file(tmp_path, "noisy_measured.py", _NOISY + "\n" + SPREAD_METRICS)
    run(config(plain, tmp_path / "plain", steps=40))
    run(config(measured, tmp_path / "measured", steps=40, metrics_seconds=0.05))
    a, b = read_scalars(tmp_path / "plain"), read_scalars(tmp_path / "measured")
    assert "metric/spread" in b and not [t for t in a if t.startswith("metric/")]
    for tag in ("loss/D", "loss/G"):
        np.testing.assert_array_equal(a[tag].steps, b[tag].steps)
        assert np.array_equal(a[tag].values, b[tag].values), tag
    assert not [e for e in read_events(tmp_path / "measured") if e.kind == "warning"
                and "more than its interval" not in e.message]


_SUBCLASSED = '''
"""A GAN shortcut whose generator is a subclassed keras.Model: Keras cannot clone it."""
import threading

import keras
import numpy as np

noise_dim = 2
batch_size = 16


class Generator(keras.Model):
    def __init__(self):
        super().__init__(name="generator")
        self.hidden = keras.layers.Dense(4, activation="tanh", name="dense_1")
        self.out = keras.layers.Dense(2, name="out")

    def call(self, z, training=False):
        return self.out(self.hidden(z))


def generator():
    g = Generator()
    g(np.zeros((1, noise_dim), "float32"))
    return g


def discriminator():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(4, activation="tanh", name="dense_1"),
                             keras.layers.Dense(1, name="out")], name="discriminator")


def real_data():
    return (np.random.default_rng(0).normal(size=(256, 2)) * 0.5 + 1.0).astype("float32")


def metrics(ctx):
    z = ctx.normal((ctx.n, noise_dim))
    return {"spread": float(np.std(np.asarray(ctx.models.generator(z)))),
            "beside": float(threading.current_thread().name == "freezeframe-metrics")}
'''


def test_a_subclassed_model_is_measured_on_the_training_thread_with_a_warning(tmp_path):
    exp = write_file(tmp_path, "subclassed.py", _SUBCLASSED)
    run(config(exp, tmp_path / "run", steps=200, metrics_seconds=0.02, fetch_every=20))
    warnings = [e.message for e in read_events(tmp_path / "run") if e.kind == "warning"
                and "more than its interval" not in e.message]  # (a loaded machine: a measure slower than 0.02 s)
    assert len(warnings) == 1 and "metrics() runs on the training thread" in warnings[0], warnings
    assert "subclassed keras.Model (Generator)" in warnings[0]
    sc = assert_one_ordered_record(tmp_path / "run", 200)
    assert len(sc["metric/beside"].steps) >= 2 and not sc["metric/beside"].values.any()
    assert np.all(sc["metric/spread"].values > 0)

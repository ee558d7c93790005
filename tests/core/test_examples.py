"""The four built-in examples train without a window, give finite losses and the samples the
window draws; the factorisation really learns; freezing on the shapes' pipeline is exact."""
from __future__ import annotations

import numpy as np
import pytest

import tensorflow as tf

from training_core import RunConfig, SetFreeze, read_events, read_scalars
from training_core.experiment.loading import example_path, load_module

from .helpers import Script, assert_bitwise_equal, run, snapshot


class Samples(Script):
    def __init__(self, at=None) -> None:
        super().__init__(at)
        self.samples: list[dict] = []

    def on_samples(self, samples: dict) -> None:
        self.samples.append(samples)


def example(name: str, run_dir, steps: int, at=None, **kw) -> tuple:
    """Run a built-in example with samples after every step, as a watching window would get them."""
    obs = Samples(at)
    trainer = run(RunConfig(example=name, steps=steps, seed=0, run_dir=str(run_dir), sample_seconds=0.0,
                            checkpoint_every=0, **kw), obs)
    sc = read_scalars(run_dir)
    losses = {t: s for t, s in sc.items() if t.startswith("loss/")}
    assert sum(len(s.steps) for s in losses.values()) == steps
    assert all(np.isfinite(s.values).all() for s in sc.values())
    assert not [e for e in read_events(run_dir) if e.kind in ("error", "nan", "retrace", "warning")]
    return trainer, obs, losses


def test_ring(run_dir):
    trainer, obs, losses = example("ring", run_dir, 40)
    assert set(losses) == {"loss/D", "loss/G"} and trainer.prepared.experiment.sample_kind == "points2d"
    s = obs.samples[-1]
    assert s["kind"] == "points2d" and s["real"].shape == (512, 2) and s["fake"].shape == (512, 2)
    assert np.isfinite(s["fake"]).all() and np.abs(np.linalg.norm(s["real"], axis=1) - 2).max() < 0.2


def test_digits_with_a_frozen_batchnorm(run_dir):
    before = {}
    trainer, obs, losses = example("digits", run_dir, 12, at={0: [lambda t: before.update(snapshot(t))]},
                                   freeze=["generator/bn_1"])
    after = snapshot(trainer)
    assert set(losses) == {"loss/D", "loss/G"}
    bn = [p for p in after if p.startswith("generator/bn_1/")]
    assert len(bn) == 4 and all(after[p].tobytes() == before[p].tobytes() for p in bn)
    assert after["generator/bn_2/moving_mean"].tobytes() != before["generator/bn_2/moving_mean"].tobytes()
    s = obs.samples[-1]
    assert s["kind"] == "images" and s["fake"].shape == (64, 8, 8, 1) and s["real"].shape == (64, 8, 8, 1)
    assert np.abs(s["fake"]).max() <= 1 and np.abs(s["real"]).max() <= 1


def test_factorization_error_decreases(run_dir):
    trainer, obs, losses = example("factorization", run_dir, 300)
    assert set(losses) == {"loss/W", "loss/C"}
    mse = np.concatenate([losses["loss/W"].values, losses["loss/C"].values])[
        np.argsort(np.concatenate([losses["loss/W"].steps, losses["loss/C"].steps]))]
    assert mse[-1] < 0.2 * mse[0], (mse[0], mse[-1])
    assert np.mean(mse[-20:]) < np.mean(mse[100:120]) < np.mean(mse[:20])
    first, last = obs.samples[0], obs.samples[-1]
    assert first["kind"] == last["kind"] == "matrix" and last["reconstruction"].shape == last["target"].shape == (60, 40)
    assert last["error"] < 0.5 * first["error"]
    np.testing.assert_allclose(last["error"], np.sqrt(np.mean((last["target"] - last["reconstruction"]) ** 2)),
                               rtol=1e-5)
    assert last["error"] ** 2 == pytest.approx(mse[-1], rel=0.2)  # the sample is drawn after the last step


def test_shapes_trains_through_tf_data_with_samples_by_class_and_its_kid(run_dir):
    """The conditional DCGAN on the shipped shapes: a pipeline run, samples laid out a column per class (the real
    rows on top are of the column's class), FID and KID recorded from the built-in feature space."""
    trainer, obs, losses = example("shapes", run_dir, 6, metrics_seconds=0.0)
    assert set(losses) == {"loss/D", "loss/G"} and trainer.prepared.data.kind == "pipeline"
    assert trainer.retraces == 0
    s = obs.samples[-1]
    assert s["kind"] == "images" and s["fake"].shape == (64, 28, 28, 1) and s["real"].shape == (16, 28, 28, 1)
    assert np.abs(s["fake"]).max() <= 1 and np.abs(s["real"]).max() <= 1
    pool_x, pool_y = (np.asarray(a) for a in trainer.prepared.data.pool)
    for i, img in enumerate(s["real"]):  # each real is a row of the pool of the column's class
        match = np.flatnonzero((pool_x == img).all(axis=(1, 2, 3)))
        assert len(match) and (pool_y[match] == i % 8).all(), i
    sc = read_scalars(run_dir)
    for name in ("fid", "kid", "kid_std"):
        m = sc[f"metric/{name}"]
        assert len(m.steps) >= 2 and m.steps[0] == 0 and m.steps[-1] == 6 and np.isfinite(m.values).all()
    assert sc["metric/fid"].values[0] > 10  # an untrained generator is far from the shapes


#: the shapes' phases: D has 7 trainable variables and G 11; G's first layers frozen from the start, D's first
#: convolution from step 4 on, the G freeze lifted at step 6
SHAPES_STEPS = 8
SHAPES_FREEZES = {0: ["generator/label_emb", "generator/dense"], 4: ["discriminator/conv_1"], 6: []}


def _frozen_at(step: int) -> list[str]:
    return SHAPES_FREEZES[max(s for s in SHAPES_FREEZES if s < step)]


def _shapes_reference(initial: dict, seed: int) -> tuple[dict, list[float]]:
    """A plain Keras loop over the example's own pipeline: the standard GAN losses with labels, the noise from a
    generator seeded as the run's, and per step the gradients of the unfrozen variables applied to them."""
    import keras
    mod = load_module(example_path("shapes"))
    keras.utils.set_random_seed(seed)
    g, d = mod.generator(), mod.discriminator()
    for v in g.variables + d.variables:
        v.assign(initial[v.path])
    keras.utils.set_random_seed(seed)  # as the run sets it before the data: the shuffle's seed pair
    batches = iter(mod.real_data())
    rng = tf.random.Generator.from_seed(seed)
    opts = {"D": mod.optimizer("D"), "G": mod.optimizer("G")}
    trains = {"D": d.trainable_variables, "G": g.trainable_variables}
    assert (len(trains["D"]), len(trains["G"])) == (7, 11)
    for name in opts:
        opts[name].build(trains[name])

    def d_loss(x, y):
        fake = g([rng.normal((mod.batch_size, mod.noise_dim)), y], training=True)
        return (tf.reduce_mean(tf.nn.softplus(-tf.reshape(d([x, y], training=True), [-1])))
                + tf.reduce_mean(tf.nn.softplus(tf.reshape(d([fake, y], training=True), [-1]))))

    def g_loss(x, y):
        fake = g([rng.normal((mod.batch_size, mod.noise_dim)), y], training=True)
        return tf.reduce_mean(tf.nn.softplus(-tf.reshape(d([fake, y], training=True), [-1])))

    compiled, losses = {}, []

    def make(name: str, frozen: frozenset):
        live = [v for v in trains[name] if not any(v.path.startswith(f + "/") for f in frozen)]

        @tf.function(autograph=False)
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = (d_loss if name == "D" else g_loss)(x, y)
            opts[name].apply(tape.gradient(loss, live), live)
            return loss
        return step

    for s in range(1, SHAPES_STEPS + 1):
        name, frozen = ("D" if s % 2 else "G"), frozenset(_frozen_at(s))
        if (name, frozen) not in compiled:
            compiled[name, frozen] = make(name, frozen)
        losses.append(float(compiled[name, frozen](*next(batches)).numpy()))
    return {v.path: v.numpy() for v in g.variables + d.variables}, losses


def test_freezing_on_the_shapes_pipeline_equals_a_plain_keras_loop_bit_for_bit(run_dir):
    initial = {}
    script = Script({0: [lambda t: initial.update(snapshot(t))], 4: [SetFreeze(SHAPES_FREEZES[4])],
                     6: [SetFreeze(SHAPES_FREEZES[6])]})
    trainer = run(RunConfig(example="shapes", steps=SHAPES_STEPS, seed=3, run_dir=str(run_dir), checkpoint_every=0,
                            freeze=SHAPES_FREEZES[0], deterministic=True, metrics_seconds=0.0), script)
    weights, losses = _shapes_reference(initial, trainer.config.seed)
    after = snapshot(trainer)
    assert_bitwise_equal(after, weights, "model variables")
    assert after["generator/dense/kernel"].tobytes() != initial["generator/dense/kernel"].tobytes()  # trained after 6
    sc = read_scalars(run_dir)
    recorded = sorted((s, v) for tag in ("loss/D", "loss/G") for s, v in zip(sc[tag].steps, sc[tag].values))
    assert np.array_equal(np.float32([v for _, v in recorded]), np.float32(losses))

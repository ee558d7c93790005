"""quality/builtin.py: the feature space trained on the real data. The same seed trains the same weights bit for bit,
another seed others; the cache file is loaded instead of training again (a damaged one, or one of other data, is
replaced; one another run wrote first wins); training it leaves the caller's random state, Keras' name counters and
the run's distribution scope alone; in its features, FID and KID grow as samples degrade; and a run resumed from
its checkpoint measures in the very feature space it started with, beside training."""
from __future__ import annotations

import random
from dataclasses import replace

import keras
import numpy as np
import pytest
import tensorflow as tf

from training_core import Trainer, read_scalars
from training_core.base.errors import UserError
from training_core.quality import builtin, scores, trained_features

from .helpers import REPO, config, write_file

STEPS = 60  # training steps of the tests' feature spaces: enough to move every weight, quick on two cores


def _digits(n: int = 600) -> tuple[np.ndarray, np.ndarray]:
    z = np.load(REPO / "resources" / "data" / "digits.npz")
    return (z["images"][:n].astype(np.float32) / 8 - 1), z["labels"][:n]


def _shapes() -> tuple[np.ndarray, np.ndarray]:
    z = np.load(REPO / "resources" / "data" / "shapes.npz")
    return z["images"].astype(np.float32) / 127.5 - 1, z["labels"]


def _weights(space) -> list[np.ndarray]:
    return [np.asarray(w.numpy()) for w in space.net.weights]


def test_the_same_seed_trains_the_same_feature_space_bit_for_bit():
    x, y = _digits()
    a = trained_features(x, y, seed=3, steps=STEPS, cache=False)
    b = trained_features(x, y, seed=3, steps=STEPS, cache=False)
    assert a.trained and b.trained and a.path is None and a.kind == "classifier"
    for u, v in zip(_weights(a), _weights(b)):
        assert np.array_equal(u, v)
    assert a.fingerprint == b.fingerprint and np.array_equal(a.features(x), b.features(x))
    c = trained_features(x, y, seed=4, steps=STEPS, cache=False)
    assert c.fingerprint != a.fingerprint and c.key != a.key
    auto = trained_features(x, None, seed=3, steps=STEPS, cache=False)
    assert auto.kind == "autoencoder" and auto.features(x[:10]).shape == (10, builtin.FEATURES)


def test_the_cache_file_is_loaded_instead_of_training_again(tmp_path, monkeypatch):
    monkeypatch.setenv("FREEZEFRAME_CACHE_DIR", str(tmp_path / "cache"))
    x, y = _digits()
    first = trained_features(x, y, steps=STEPS)
    assert first.trained and first.path == tmp_path / "cache" / "features" / f"{first.key}.npz"
    assert first.path.is_file()
    monkeypatch.setattr(builtin, "_train", lambda *a: pytest.fail("trained again"))
    again = trained_features(x, y, steps=STEPS)
    assert not again.trained and again.fingerprint == first.fingerprint and again.loss == first.loss
    np.testing.assert_array_equal(again.features(x), first.features(x))
    assert [p.name for p in first.path.parent.iterdir()] == [first.path.name]  # no temporary file left


def test_a_damaged_cache_file_or_one_of_other_data_is_replaced(tmp_path):
    x, y = _digits()
    path = tmp_path / "mine.npz"
    good = trained_features(x, y, steps=STEPS, cache=path)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # cut short
    again = trained_features(x, y, steps=STEPS, cache=path)
    assert again.trained and again.fingerprint == good.fingerprint and path.read_bytes() == whole
    other = trained_features(x[:300], y[:300], steps=STEPS, cache=path)  # the same file named for other data
    assert other.trained and other.path == path and builtin._key_of(path) == other.key
    directory = tmp_path / "dir"  # cache= a directory: the key's file in it
    directory.mkdir()
    (directory / f"{good.key}.npz").write_bytes(whole)
    loaded = trained_features(x, y, steps=STEPS, cache=directory)
    assert not loaded.trained and loaded.fingerprint == good.fingerprint


def test_the_first_run_to_write_the_cache_wins(tmp_path, monkeypatch):
    """Two runs training the same feature space at once: the one that saves second loads the first's weights."""
    x, y = _digits()
    theirs = trained_features(x, y, seed=0, steps=STEPS, cache=False)
    path = tmp_path / "shared.npz"
    train = builtin._train

    def meanwhile(net, *args):
        loss = train(net, *args)
        builtin._save(path, theirs.net, theirs.key, 123.0, theirs.scale)  # the other run, done first
        return loss

    monkeypatch.setattr(builtin, "_train", meanwhile)
    ours = trained_features(x, y, seed=0, steps=STEPS, cache=path)
    assert ours.loss == 123.0 and ours.fingerprint == theirs.fingerprint


def test_an_unwritable_cache_is_only_no_cache(tmp_path):
    x, y = _digits()
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    space = trained_features(x, y, steps=STEPS, cache=blocker / "sub" / "f.npz")
    assert space.trained and space.path is None and space.features(x[:4]).shape == (4, builtin.FEATURES)


def test_training_it_leaves_random_state_names_and_the_runs_scope_alone():
    x, y = _digits()

    def user_model():
        return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dropout(0.5),
                                 keras.layers.Dense(2)])

    keras.utils.set_random_seed(11)
    want = [w.numpy() for w in user_model().weights]
    keras.utils.set_random_seed(11)
    before = random.getstate(), np.random.get_state()[1].copy()
    uids = {p: keras.backend.get_uid(p) for p in ("dense", "conv2d", "rescaling", "flatten", "functional",
                                                  "input_layer", "keras_tensor", "seed_generator", "adam")}
    trained_features(x, y, steps=STEPS, cache=False)
    assert random.getstate() == before[0] and np.array_equal(np.random.get_state()[1], before[1])
    assert {p: keras.backend.get_uid(p) for p in uids} == {p: n + 1 for p, n in uids.items()}
    got = [w.numpy() for w in user_model().weights]
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])  # (tests/core/conftest.py made two CPUs)
    with strategy.scope():
        space = trained_features(x, y, steps=STEPS, cache=False)
    assert not any(isinstance(v, tf.distribute.DistributedValues) for v in space.net.variables)


def test_in_its_features_fid_and_kid_grow_as_samples_degrade():
    """Shapes: the classifier's space ranks clean held-out drawings, drawings with more and more noise, and drawings
    of two classes only (a collapse to two modes) as a person would."""
    x, y = _shapes()
    order = np.random.default_rng(0).permutation(len(x))
    train, held = order[:4000], order[4000:]
    space = trained_features(x[train], y[train], steps=200, cache=False)
    ref = space.reference(x[train], n=2048)
    rng = np.random.default_rng(1)
    got = [scores(space, ref, np.clip(x[held] + rng.normal(0, s, x[held].shape), -1, 1).astype(np.float32))
           for s in (0.0, 0.4, 0.8, 1.6)]
    fids, kids = [g["fid"] for g in got], [g["kid"] for g in got]
    assert fids == sorted(fids) and kids == sorted(kids)
    assert abs(kids[0]) < 3 * got[0]["kid_std"] and kids[-1] > 30 * got[-1]["kid_std"]
    collapsed = scores(space, ref, x[held][np.isin(y[held], [0, 1])])
    assert collapsed["fid"] > 10 * fids[0] and collapsed["kid"] > 10 * got[0]["kid_std"]


def test_samples_shaped_otherwise_are_reshaped_and_bad_input_is_one_line():
    x, y = _digits()
    space = trained_features(x, y, steps=STEPS, cache=False)
    np.testing.assert_array_equal(space.features(x[:5, :, :, None]), space.features(x[:5]))
    for call, words in [
        (lambda: space.features(np.zeros((3, 9, 9))), "trained on samples of shape (8, 8), got (9, 9)"),
        (lambda: trained_features(x, y[:10]), "labels must be 600 whole numbers"),
        (lambda: trained_features(x, np.zeros(600, int)), "a single class"),
        (lambda: trained_features(x[:, :, :, None, None]), "shape (n, d), (n, h, w) or (n, h, w, c)"),
        (lambda: trained_features(np.full((4, 3), np.nan)), "NaN or Inf"),
    ]:
        with pytest.raises(UserError) as e:
            call()
        assert words in str(e.value) and "\n" not in str(e.value), str(e.value)


_EXPERIMENT = '''
"""A tiny GAN on the 8x8 digits whose metrics() measure in a feature space trained on them at the start."""
from pathlib import Path

import keras
import numpy as np

from training_core import quality

noise_dim, batch_size = 8, 32
z = np.load({digits!r})
images = (z["images"][:600].astype("float32") / 8 - 1)[..., None]
space = quality.trained_features(images, z["labels"][:600], steps={steps}, cache=Path(__file__).parent / "space.npz")
reference = space.reference(images)


def generator():
    return keras.Sequential([keras.Input((noise_dim,)), keras.layers.Dense(64, activation="tanh", name="dense"),
                             keras.layers.Reshape((8, 8, 1), name="image")], name="generator")


def discriminator():
    return keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(name="flat"),
                             keras.layers.Dense(1, name="out")], name="discriminator")


def real_data():
    return images


def metrics(ctx):
    fake = ctx.models.generator(ctx.normal((ctx.n, noise_dim)), training=False)
    return {{**quality.scores(space, reference, fake, kid_subsets=10), "space": int(space.fingerprint[:6], 16),
             "trained": float(space.trained)}}
'''


def test_a_resumed_run_measures_in_the_feature_space_it_started_with(tmp_path):
    exp = write_file(tmp_path, "digits_quality.py", _EXPERIMENT.format(
        digits=str(REPO / "resources" / "data" / "digits.npz"), steps=STEPS))
    d = tmp_path / "run"
    cfg = config(exp, d, steps=30, fetch_every=10, var_every=10, metrics_seconds=0.05)
    Trainer(cfg).run()
    assert (tmp_path / "space.npz").is_file()
    Trainer(replace(cfg, steps=60), resume=True).run()
    s = read_scalars(d)
    space, trained, fid = s["metric/space"], s["metric/trained"], s["metric/fid"]
    before, after = trained.steps <= 30, trained.steps > 30
    assert before.any() and after.any() and len(set(space.values)) == 1
    assert set(trained.values[before]) == {1.0} and set(trained.values[after]) == {0.0}  # loaded, not trained
    assert np.isfinite(fid.values).all() and (fid.values > 0).all() and np.isfinite(s["metric/kid"].values).all()

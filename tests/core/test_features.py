"""quality/features.py: a feature space from a user's Keras model (its output, or one layer's by name or index),
computed in batches, as the model computes them; `scores` is FID and KID of those features; the fingerprint tells
two spaces apart and a reference from another space is refused."""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from training_core.base.errors import UserError
from training_core.quality import FeatureSpace, frechet_distance, kernel_distance, scores


def _model() -> keras.Model:
    return keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(4, 3, strides=2, padding="same", activation="relu", name="conv"),
        keras.layers.Flatten(name="flat"),
        keras.layers.Dense(6, activation="tanh", name="hidden"),
        keras.layers.Dense(3, name="out"),
    ], name="user_net")


def _images(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, 8, 8, 1)).astype(np.float32)


def test_features_are_the_models_output_or_a_layers_in_batches():
    model, x = _model(), _images(300)
    whole = FeatureSpace(model, batch_size=64).features(x)
    assert whole.dtype == np.float64 and whole.shape == (300, 3)
    np.testing.assert_allclose(whole, model(x, training=False).numpy(), rtol=1e-6, atol=1e-6)
    hidden = keras.Model(model.inputs[0], model.get_layer("hidden").output)(x).numpy()
    by_name = FeatureSpace(model, layer="hidden", batch_size=64).features(x)
    np.testing.assert_allclose(by_name, hidden, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(FeatureSpace(model, layer=2, batch_size=64).features(x), by_name)
    conv = FeatureSpace(model, layer="conv").features(tf.constant(x))  # a tensor in, each sample flattened
    assert conv.shape == (300, 4 * 4 * 4)
    # batch boundaries change nothing (300 = 4 × 64 + 44)
    np.testing.assert_allclose(FeatureSpace(model, layer="hidden", batch_size=300).features(x), by_name,
                               rtol=1e-6, atol=1e-7)


def test_preprocess_maps_samples_to_the_models_inputs():
    model, x = _model(), _images(50)
    space = FeatureSpace(model, preprocess=lambda b: b * 2.0 - 1.0, name="user_net_scaled")
    np.testing.assert_allclose(space.features(x), model(x * 2.0 - 1.0).numpy(), rtol=1e-6, atol=1e-6)


def test_scores_are_fid_and_kid_of_the_features():
    model = _model()
    space = FeatureSpace(model, layer="hidden")
    real, fake = _images(400, 1), _images(300, 2) * 1.5 + 0.3
    fr, fg = space.features(real), space.features(fake)
    got = scores(space, real, fake)
    kid = kernel_distance(fr, fg)
    assert got == {"fid": frechet_distance(fr, fg), "kid": kid.mean, "kid_std": kid.std}
    ref = space.reference(real)  # the real half once: the same numbers
    assert ref.gaussian._root is not None and len(ref.kid_sums) == 1  # (made with it, before any measure)
    assert scores(space, ref, fake) == got
    some = space.reference(real, n=100, seed=3)
    assert some.features.shape == (100, 6) and scores(space, some, fake)["fid"] != got["fid"]


def test_the_fingerprint_tells_two_feature_spaces_apart():
    model = _model()
    a, b = FeatureSpace(model, layer="hidden"), FeatureSpace(model, layer="hidden")
    assert a.fingerprint == b.fingerprint and len(a.fingerprint) == 12
    assert FeatureSpace(model, layer="out").fingerprint != a.fingerprint
    ref = a.reference(_images(64))
    w = model.get_layer("hidden").kernel
    w.assign(w.value + 0.01)  # the same model, trained on: another feature space
    assert b.fingerprint != ref.fingerprint
    with pytest.raises(UserError, match="the reference was made in feature space"):
        scores(b, ref, _images(64))


class _Subclassed(keras.Model):
    def __init__(self):
        super().__init__(name="sub")
        self.dense = keras.layers.Dense(2, name="d")

    def call(self, x):
        return self.dense(x)


def test_a_subclassed_model_gives_its_output_and_no_layer():
    sub = _Subclassed()
    x = np.ones((5, 3), np.float32)
    assert FeatureSpace(sub).features(x).shape == (5, 2)
    with pytest.raises(UserError, match="needs a Sequential or functional keras.Model") as e:
        FeatureSpace(sub, layer="d")
    assert "\n" not in str(e.value)


def test_an_unknown_layer_and_no_samples_are_one_line_each():
    with pytest.raises(UserError, match=r"model 'user_net' has no layer 'pool'; its layers are conv, flat, hidden"):
        FeatureSpace(_model(), layer="pool")
    with pytest.raises(UserError, match="got no samples"):
        FeatureSpace(_model()).features(np.zeros((0, 8, 8, 1), np.float32))
    with pytest.raises(UserError, match="needs a Keras model"):
        FeatureSpace("inception")

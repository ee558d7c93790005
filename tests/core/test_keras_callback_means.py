"""monitor/keras_callback.py's `BatchMeans`: a fit() GAN in the keras.io style keeps its losses in
`keras.metrics.Mean` trackers and returns their `result()`, the mean since the epoch began (fit() resets metrics
at every epoch). Why this matters: recorded as logged, the curves are running means that flatten through an
epoch and kink at each boundary; the Monitor must record each batch's own loss, the one train_step computed.
"""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from training_core import read_scalars
from training_core.monitor import Monitor

from .keras_gan import GAN, dataset, make_gan


class TrackedGAN(GAN):
    """keras.io's pattern: Mean trackers named as the logs keys, `metrics` listing them; `seen` gets the losses
    train_step computed, batch by batch (a side output the test compares the record with). `d_gap` is a custom
    metric that is not a Mean: it is recorded as logged."""

    def __init__(self, discriminator, generator, seen: list) -> None:
        super().__init__(discriminator, generator)
        self.d_tracker = keras.metrics.Mean(name="d_loss")
        self.g_tracker = keras.metrics.Mean(name="g_loss")
        self._note = seen.append  # (a list set on a Model would be tracked: a copy of it)

    @property
    def metrics(self):
        return [self.d_tracker, self.g_tracker]

    def train_step(self, real):
        out = super().train_step(real)
        d_loss, g_loss = out["d_loss"], out["g_loss"]
        tf.py_function(lambda d, g: self._note((float(d), float(g))) or 0.0, [d_loss, g_loss], tf.float32)
        self.d_tracker.update_state(d_loss)
        self.g_tracker.update_state(g_loss)
        return {"d_loss": self.d_tracker.result(), "g_loss": self.g_tracker.result(), "d_gap": d_loss - g_loss}


def test_mean_trackers_are_recorded_as_each_batchs_own_loss_across_epochs(tmp_path):
    seen: list = []
    base = make_gan()
    gan = TrackedGAN(base.discriminator, base.generator, seen)
    gan.compile(keras.optimizers.Adam(1e-3, beta_1=0.5), keras.optimizers.Adam(1e-3, beta_1=0.5))
    history = gan.fit(dataset(), epochs=3, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True)])
    computed = np.array(seen)
    assert computed.shape == (48, 2)  # 3 epochs of 16 batches, two epoch boundaries
    sc = read_scalars(tmp_path / "run")
    d, g = sc["loss/discriminator"], sc["loss/generator"]
    assert d.steps.tolist() == g.steps.tolist() == list(range(1, 49))
    # float32 totals: the change of a total of ~16 losses is exact to a few of its ulps
    np.testing.assert_allclose(d.values, computed[:, 0], rtol=0, atol=2e-5)
    np.testing.assert_allclose(g.values, computed[:, 1], rtol=0, atol=2e-5)
    # what the logs held, the running mean, is not what was recorded (it would have passed before)
    running = np.concatenate([np.cumsum(computed[i:i + 16, 0]) / np.arange(1, 17) for i in (0, 16, 32)])
    assert np.abs(d.values - running).max() > 1e-3
    np.testing.assert_allclose(history.history["d_loss"], running[[15, 31, 47]], atol=2e-5)  # fit()'s own mean
    gap = sc["metric/d_gap"]  # not a Mean: the logs value, the batch's own here
    np.testing.assert_allclose(gap.values, computed[:, 0] - computed[:, 1], rtol=0, atol=1e-5)


def test_a_model_without_trackers_keeps_the_logs_values(tmp_path):
    """The tests' plain GAN returns its losses themselves: nothing to undo, the logs values are recorded."""
    seen: list = []

    class Plain(GAN):
        def train_step(self, real):
            out = super().train_step(real)
            tf.py_function(lambda d: seen.append(float(d)) or 0.0, [out["d_loss"]], tf.float32)
            return out

    base = make_gan()
    gan = Plain(base.discriminator, base.generator)
    gan.compile(keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3))
    gan.fit(dataset(), epochs=2, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True)])
    np.testing.assert_allclose(read_scalars(tmp_path / "run")["loss/discriminator"].values, seen, rtol=1e-6)

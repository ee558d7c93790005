"""engine/measuring.py: the samples' generator is keyed apart from the training's, so it never replays the
training's random numbers. metrics(ctx) measured in real runs is tested in test_health.py and test_beside.py."""
from __future__ import annotations

import numpy as np


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

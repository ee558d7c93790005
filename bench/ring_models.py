"""The ring GAN's models and data, loaded from the built-in example file, so every benchmark variant
trains exactly what Freezeframe's `ring` example trains (MLPs 2->256->256->out, batch 256, Adam)."""
from __future__ import annotations

from types import SimpleNamespace

from training_core.experiment.loading import example_path, load_module


def ring_parts(seed: int = 0) -> SimpleNamespace:
    import keras
    import numpy as np
    import tensorflow as tf
    keras.utils.set_random_seed(seed)
    m = load_module(example_path("ring"))
    g, d = m.generator(), m.discriminator()
    data = tf.Variable(np.asarray(m.real_data(), dtype=np.float32), trainable=False)
    return SimpleNamespace(g=g, d=d, data=data, batch=m.batch_size, noise_dim=m.noise_dim,
                           opt_d=m.optimizer("D"), opt_g=m.optimizer("G"), lr=m.learning_rate)

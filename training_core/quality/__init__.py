"""Sample quality offline: FID- and KID-style distances between real and generated samples, in a feature space
the experiment names (docs/quality.md). No download, ever: the feature network is the user's own Keras model,
or a small one trained on the real data.

  frechet_distance, gaussian, Gaussian               FID's distance between two sets of features    distances.py
  kernel_distance, KernelDistance, polynomial_kernel KID's unbiased MMD² (cubic kernel), on subsets    distances.py
  FeatureSpace, Reference, scores                    features from a Keras model; {"fid", "kid", ...}  features.py
  trained_features, TrainedFeatures, cache_dir       a feature space trained on the real data, cached  builtin.py

From an experiment's `metrics(ctx)`:

    space = quality.trained_features(images, labels)   # once, at the start: seconds the first time
    reference = space.reference(images)                # the real data's features, once

    def metrics(ctx):
        fake = ctx.models.generator(ctx.normal((ctx.n, noise_dim)), training=False)
        return quality.scores(space, reference, fake)  # {"fid": ..., "kid": ..., "kid_std": ...}

The caveat: the numbers are comparable only within one feature space (and FID only at one sample size).
This room imports TensorFlow and Keras (lazily, when a feature space is made) and, of training_core, only base.
"""
from training_core.quality.builtin import TrainedFeatures, cache_dir, trained_features
from training_core.quality.distances import (
    Gaussian,
    KernelDistance,
    frechet_distance,
    gaussian,
    kernel_distance,
    polynomial_kernel,
)
from training_core.quality.features import FeatureSpace, Reference, scores

__all__ = ["FeatureSpace", "Gaussian", "KernelDistance", "Reference", "TrainedFeatures", "cache_dir",
           "frechet_distance", "gaussian", "kernel_distance", "polynomial_kernel", "scores", "trained_features"]

"""A feature space from a Keras model, and FID/KID between real and generated samples in it.

Why a feature space at all: a distance between raw pixels says little about what people see, so FID and KID
compare samples in the features of a network that knows the data (Inception-v3's pool layer, in the papers).
That network needs a download Freezeframe never makes, and Inception's features are made for ImageNet photos,
not for 28×28 glyphs or the points of a ring. So the experiment names the network: one of the user's own
(`FeatureSpace(model, layer=...)`), or one trained on the real data at the start of the run
(`quality.trained_features`, builtin.py).

The caveat that comes with it: a distance is comparable only with distances measured in the same feature space
(the same network, the same weights, the same layer, the same input scaling), at the same sample size. A
`FeatureSpace` has a `fingerprint` (a hash of its weights and layer) to tell two apart, and a `Reference` made in
one refuses to be measured against another's features.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from training_core.base.errors import UserError
from training_core.quality.distances import (
    KID_SUBSET_SIZE,
    KID_SUBSETS,
    Gaussian,
    as_features,
    frechet_distance,
    gaussian,
    kernel_distance,
    real_subset_sums,
)

__all__ = ["FeatureSpace", "Reference", "scores"]

#: rows through the feature network per call: large enough to keep its matrix products efficient, small enough
#: that 2,048 images of 32×32 never hold more than a few MB of activations at once
BATCH_SIZE = 256


def _numpy(x: Any) -> np.ndarray:
    if hasattr(x, "numpy") and callable(x.numpy):
        return np.asarray(x.numpy())
    return np.asarray(x)


def _submodel(model: Any, layer: str | int | None) -> Any:
    """The model itself, or a model from its inputs to one layer's output (a name or an index)."""
    import keras
    if not isinstance(model, keras.layers.Layer):
        raise UserError(f"a feature space needs a Keras model, got {type(model).__name__}; pass a keras.Model")
    if layer is None:
        return model
    try:
        inputs = model.inputs
    except AttributeError:
        inputs = None
    if not isinstance(model, keras.Model) or not inputs:
        raise UserError(f"layer={layer!r} needs a Sequential or functional keras.Model with known inputs, got "
                        f"{type(model).__name__}; build it with keras.Input, or pass layer=None for its output")
    try:
        picked = model.get_layer(index=layer) if isinstance(layer, int) else model.get_layer(name=layer)
    except ValueError:
        names = ", ".join(lay.name for lay in model.layers)
        raise UserError(f"model {model.name!r} has no layer {layer!r}; its layers are {names}") from None
    inputs = inputs[0] if len(inputs) == 1 else inputs  # (a list of one would want its input as a list of one)
    return keras.Model(inputs, picked.output, name=f"{model.name}_to_{picked.name}")


class FeatureSpace:
    """Features of samples: a Keras model's output, or one of its layers' (`layer`, a name or an index).

    `preprocess`, when given, maps a batch of samples to the model's inputs (say, a generator's -1..1 to the
    0..255 a model of yours was trained on); it is part of what the space is, so name it in `name`.
    `features(x)` is safe on any thread (the metrics thread calls it) as long as one thread calls it at a time,
    which is how Freezeframe calls `metrics(ctx)`."""

    def __init__(self, model: Any, layer: str | int | None = None, preprocess: Callable[[Any], Any] | None = None,
                 name: str | None = None, batch_size: int = BATCH_SIZE) -> None:
        self.model = _submodel(model, layer)
        self.layer = layer
        self.preprocess = preprocess
        self.name = name or getattr(self.model, "name", type(model).__name__)
        self.batch_size = int(batch_size)

    def features(self, x: Any) -> np.ndarray:
        """`(n, d)` float64 features of `n` samples (a NumPy array or a tensor, one sample per row), each
        sample's output flattened, computed `batch_size` rows at a time."""
        x = _numpy(x)
        if x.ndim == 0 or x.shape[0] == 0:
            raise UserError(f"feature space {self.name!r} got no samples (shape {x.shape}); pass one sample per row")
        out = []
        for i in range(0, x.shape[0], self.batch_size):
            batch = x[i:i + self.batch_size]
            if self.preprocess is not None:
                batch = self.preprocess(batch)
            got = _numpy(self.model(batch, training=False))
            out.append(got.reshape(got.shape[0], -1))
        return as_features(np.concatenate(out), f"the features of feature space {self.name!r}")

    @property
    def fingerprint(self) -> str:
        """12 hex digits that change with any weight of the feature network, its layer or its name: two spaces
        with the same fingerprint give comparable numbers (given the same `preprocess`, which is code)."""
        h = hashlib.sha256(f"{self.name}|{self.layer!r}".encode())
        for w in self.model.weights:
            v = _numpy(w.value if hasattr(w, "value") else w)
            h.update(f"{v.shape}{v.dtype}".encode())
            h.update(np.ascontiguousarray(v).tobytes())
        return h.hexdigest()[:12]

    def reference(self, real: Any, n: int | None = None, seed: int = 0, kid_subsets: int = KID_SUBSETS,
                  kid_subset_size: int = KID_SUBSET_SIZE) -> "Reference":
        """The real data's features, once: all rows of `real`, or `n` of them drawn without replacement with
        `seed`. Measure every generated set against it (`scores(space, reference, fake)`): the real half of
        the work (its features, its covariance's square root, KID's sums within its subsets of these sizes) is
        then done once, when the run starts, not at each measure."""
        real = _numpy(real)
        if n is not None and n < real.shape[0]:
            real = real[np.sort(np.random.default_rng(seed).choice(real.shape[0], int(n), replace=False))]
        f = self.features(real)
        g = gaussian(f)
        g.sqrt_cov()
        return Reference(f, g, self.fingerprint, self.name,
                         real_subset_sums(f, kid_subsets, kid_subset_size, seed=0))

    def __repr__(self) -> str:
        return f"FeatureSpace({self.name!r}, layer={self.layer!r}, fingerprint={self.fingerprint})"


@dataclass
class Reference:
    """The real data's features in one feature space, and the Gaussian fitted to them."""

    features: np.ndarray  # (n, d)
    gaussian: Gaussian
    fingerprint: str  # of the feature space that made them
    space: str  # its name, for messages
    #: KID's kernel sums within the real subsets, by (rows, subsets, subset size, seed): computed at the first
    #: measure, then reused (they do not depend on the generated samples)
    kid_sums: dict = field(default_factory=dict, repr=False)


def scores(space: FeatureSpace, real: Any, fake: Any, kid_subsets: int = KID_SUBSETS,
           kid_subset_size: int = KID_SUBSET_SIZE, seed: int = 0) -> dict[str, float]:
    """`{"fid": ..., "kid": ..., "kid_std": ...}` between real samples (a `Reference` made in `space`, or the
    samples themselves) and generated ones, in `space`. What `metrics(ctx)` returns, as it is, or merged."""
    if isinstance(real, Reference):
        if real.fingerprint != space.fingerprint:
            raise UserError(f"the reference was made in feature space {real.space!r} ({real.fingerprint}), not in "
                            f"{space.name!r} ({space.fingerprint}); make it with space.reference(real_data)")
        ref = real
    else:
        f = space.features(real)
        ref = Reference(f, gaussian(f), space.fingerprint, space.name)
    g = space.features(fake)
    kid = kernel_distance(ref.features, g, kid_subsets, kid_subset_size, seed, ref.kid_sums)
    return {"fid": frechet_distance(ref.gaussian, g), "kid": kid.mean, "kid_std": kid.std}

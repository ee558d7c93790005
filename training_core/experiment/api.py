"""The experiment-file API, types only: named Keras models plus the phases that train them.

A phase has a name, a loss, the scopes it trains and its own optimizer. Loading a file into these types
is `experiment/loading.py`'s job (and the GAN shortcut's, `experiment/gan.py`), so that this module, which the compiled step and
the trainer import, depends on nothing else of the core and no cycle can form through it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

SAMPLE_KINDS = ("none", "points2d", "images", "matrix")


class Models(dict):
    """Models by name, reachable as `ctx.models.generator` or `ctx.models["generator"]`."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no model named {name!r}; models are {', '.join(self)}") from None


@dataclass
class Phase:
    name: str
    #: `loss(ctx) -> scalar tensor`, traced into the compiled step; see `StepContext`
    loss: Callable[["StepContext"], Any]
    #: scope prefixes whose trainable variables this phase updates, e.g. ["discriminator"]
    trains: Sequence[str]
    #: a Keras 3 optimizer; default Adam(learning_rate, beta_1=0.5)
    optimizer: Any = None
    #: the default optimizer's rate; with an optimizer of your own, its rate is used (and shown) instead
    learning_rate: float = 2e-4


@dataclass
class Experiment:
    name: str
    models: Mapping[str, Any]
    phases: list[Phase]
    #: real data (experiment/data.py): an array, a tuple or dict of arrays (each step draws `batch_size` rows at
    #: random, on the device, the same rows of every member), or a tf.data.Dataset (batched to `batch_size`,
    #: repeated, prefetched); `ctx.batch` has its structure
    data: Any = None
    batch_size: int | None = 64  # None: the whole of `data` every step
    #: `sample(ctx) -> dict` for the samples view; kind says how to draw it
    sample: Callable[["SampleContext"], dict] | None = None
    sample_kind: str = "none"
    #: `metrics(ctx) -> {name: number}`: quality measures recorded as `metric/<name>` every 2 s
    #: (training_core/observers/health.py); `ctx` is a `SampleContext` with `n` = 2,048
    metrics: Callable[["SampleContext"], dict] | None = None
    default_ratio: Sequence[int] | None = None
    description: str = ""
    extra: dict = field(default_factory=dict)


class StepContext:
    """What a loss function sees inside the compiled step.

    `models`, `batch` (a batch of the real data in its structure: a tensor, or a tuple or dict of them),
    `data` (all of in-memory data; None for a Dataset), `batch_size`, and random draws from the run's seeded generator (`normal`, `uniform`), which a checkpoint saves, so
    that a resumed run draws the same numbers.
    """

    def __init__(self, models: Models, rng: Any, batch: Any, data: Any, batch_size: int, training: bool = True):
        self.models, self.rng, self.batch, self.data = models, rng, batch, data
        self.batch_size, self.training = batch_size, training

    def normal(self, shape: Sequence[int], stddev: float = 1.0) -> Any:
        return self.rng.normal(shape, stddev=stddev)

    def uniform(self, shape: Sequence[int], minval: float = 0.0, maxval: float = 1.0) -> Any:
        return self.rng.uniform(shape, minval=minval, maxval=maxval)


class SampleContext(StepContext):
    """What `sample(ctx)` sees: the same, with `training=False` and `n` samples wanted."""

    def __init__(self, models: Models, rng: Any, batch: Any, data: Any, n: int):
        super().__init__(models, rng, batch, data, n, training=False)
        self.n = n

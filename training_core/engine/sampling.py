"""Drawing samples for the samples view and the record, and measuring: the experiment's `sample(ctx)`
and `metrics(ctx)` off the step.

`sample(ctx)` runs eagerly on the host side of the training thread, between steps. Its context has
`n` real rows of the data as NumPy, in the data's structure (`ctx.batch`: an array, or a tuple or dict of
them, labels included, drawn with a generator seeded by the step, so the same step shows the same real rows;
for a Dataset, from the rows engine/datasets.py took once while preparing), all of the data in memory (None
for a Dataset), and `ctx.normal`/`ctx.uniform` from a
generator of its own (seeded from the run's seed + 1 and checkpointed), so drawing samples never
changes the training's random numbers.

`metrics(ctx)` usually runs on another thread, on shadow copies of the models (engine/beside.py), at a time
only the clock decides. So its `ctx.normal`/`ctx.uniform` come from a generator made for that one measure,
keyed by the run's seed and the step (`metrics_generator`): it shares no state with the training's or the
samples' generators (which a thread of its own could not touch without racing them, and whose draws would then
depend on when a measure happened to run), a checkpoint need not save it, and a measure of the same weights at
the same step gives the same value wherever it runs, beside training or on the training thread.
"""
from __future__ import annotations

from typing import Any

import numpy as np

#: samples drawn per call: images are shown as a grid, points as a scatter
N_IMAGES, N_POINTS = 64, 512


def sample_context(prepared: Any, step: int, n: int, models: Any = None, rng: Any = None) -> Any:
    """The `SampleContext` for `sample(ctx)` and `metrics(ctx)` at `step`: `n` real rows in the data's structure
    (the same rows for the same step), all of the data, the generator `rng` (default: the sample generator), the `models`
    (default: the experiment's own) and the experiment's extra attributes."""
    from training_core.experiment.api import SampleContext
    exp = prepared.experiment
    src = prepared.data  # engine/datasets.py: rows of the data in memory, or of the pipeline's pool
    batch = None if src is None else src.sample_rows(step, n)
    data = None if src is None else src.whole()
    ctx = SampleContext(exp.models if models is None else models, prepared.sample_rng if rng is None else rng,
                        batch, data, n)
    for k, v in exp.extra.items():
        setattr(ctx, k, v)
    return ctx


def draw_samples(prepared: Any, step: int) -> dict[str, Any] | None:
    """`{"kind": ..., "step": ..., **sample(ctx)}`, or None when the experiment has no sample view."""
    exp = prepared.experiment
    if exp.sample is None or exp.sample_kind == "none":
        return None
    ctx = sample_context(prepared, step, N_IMAGES if exp.sample_kind == "images" else N_POINTS)
    return {"kind": exp.sample_kind, "step": step, **exp.sample(ctx)}


METRIC_SAMPLES = 2048  # `ctx.n` for metrics(): enough that a mode with 1% of the mass gets ~20 samples
_METRICS_STREAM = 0x6D657472  # ("metr"): keeps the metrics' keys apart from any other use of (seed, step)


def metrics_generator(seed: int, step: int) -> Any:
    """The `tf.random.Generator` of the measure at `step`: Philox keyed by a hash of (run seed, step), counter 0.
    Keyed, not seeded: `Generator.from_seed(s)` makes `s` the counter of key 0, so the generators of two nearby
    seeds are one stream shifted by a block; distinct keys are independent streams."""
    import tensorflow as tf
    key = int(np.random.SeedSequence([int(seed), int(step), _METRICS_STREAM]).generate_state(1, np.uint64)[0])
    return tf.random.Generator.from_key_counter(key=key - (1 << 64) if key >= 1 << 63 else key, counter=[0, 0],
                                                alg="philox")


def compute_metrics(prepared: Any, step: int, models: Any = None) -> dict[str, float] | None:
    """`{name: value}` from the experiment's `metrics(ctx)` on `models` (default: the experiment's own), or None
    when it has none. Raises what the experiment's code raises, and `TypeError` for a result that is not a
    dict of finite-or-NaN numbers. Safe on any thread: it reads `prepared` and draws from a generator of its own."""
    exp = prepared.experiment
    metrics = exp.metrics
    if metrics is None:
        return None
    ctx = sample_context(prepared, step, METRIC_SAMPLES, models, metrics_generator(prepared.config.seed, step))
    got = metrics(ctx)
    if not isinstance(got, dict):
        raise TypeError(f"metrics() must return a dict of name -> number, got {type(got).__name__}")
    out = {}
    for name, value in got.items():
        try:
            out[str(name)] = float(np.asarray(value).reshape(()))
        except (TypeError, ValueError):
            raise TypeError(f"metrics() returned {value!r} for {name!r}; return one number per name") from None
    return out

"""Measuring: the experiment's `metrics(ctx)` on the models it is given, with a generator of the measure's own.

`metrics(ctx)` usually runs on another thread, on shadow copies of the models (engine/beside.py), at a time
only the clock decides. So its `ctx.normal`/`ctx.uniform` come from a generator made for that one measure,
keyed by the run's seed and the step (`metrics_generator`): it shares no state with the training's or the
samples' generators (which a thread of its own could not touch without racing them, and whose draws would then
depend on when a measure happened to run), a checkpoint need not save it, and a measure of the same weights at
the same step gives the same value wherever it runs, beside training or on the training thread. Its context is
the one `sample(ctx)` gets (engine/sampling.py), with `METRIC_SAMPLES` rows.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from training_core.engine.sampling import sample_context

METRIC_SAMPLES = 2048  # `ctx.n` for metrics(): enough that a mode with 1% of the mass gets ~20 samples
_METRICS_STREAM = 0x6D657472  # ("metr"): keeps the metrics' keys apart from any other use of (seed, step)


_SAMPLES_STREAM = 0x73616D70  # ("samp"): the sample generator's key, apart from the training's and the measures'


def keyed_generator(*words: int) -> Any:
    """A Philox `tf.random.Generator` keyed by a hash of `words`, counter 0.
    Keyed, not seeded: `Generator.from_seed(s)` makes `s` the counter of key 0, so the generators of two nearby
    seeds are one stream shifted by a block (the training's `from_seed(seed)` and a `from_seed(seed + 1)` would
    share all but 4 of their numbers); distinct keys are independent streams."""
    import tensorflow as tf
    key = int(np.random.SeedSequence([int(w) for w in words]).generate_state(1, np.uint64)[0])
    return tf.random.Generator.from_key_counter(key=key - (1 << 64) if key >= 1 << 63 else key, counter=[0, 0],
                                                alg="philox")


def metrics_generator(seed: int, step: int) -> Any:
    """The `tf.random.Generator` of the measure at `step`: keyed by (run seed, step)."""
    return keyed_generator(seed, step, _METRICS_STREAM)


def sample_generator(seed: int) -> Any:
    """The generator `sample(ctx)` draws from (checkpointed): keyed by the run's seed, so it never replays the
    training's stream, which is `from_seed(seed)`."""
    return keyed_generator(seed, _SAMPLES_STREAM)


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

"""Drawing samples for the samples view and the record: the experiment's `sample(ctx)` off the step.

`sample(ctx)` runs eagerly on the host side of the training thread, between steps. Its context has
`n` real rows of the data as a NumPy array (`ctx.batch`, drawn with a generator seeded by the step,
so the same step shows the same real rows), all of the data, and `ctx.normal`/`ctx.uniform` from a
generator of its own (seeded from the run's seed + 1 and checkpointed), so drawing samples never
changes the training's random numbers.
"""
from __future__ import annotations

from typing import Any

import numpy as np

#: samples drawn per call: images are shown as a grid, points as a scatter
N_IMAGES, N_POINTS = 64, 512


def sample_context(prepared: Any, step: int, n: int) -> Any:
    """The `SampleContext` for `sample(ctx)` and `metrics(ctx)` at `step`: `n` real rows (the same rows for
    the same step), all of the data, the sample generator and the experiment's extra attributes."""
    from training_core.experiment.api import SampleContext
    exp = prepared.experiment
    data = None if prepared.data is None else prepared.data.read_value()
    batch = None
    if data is not None:
        idx = np.random.default_rng(step).integers(0, int(data.shape[0]), n)
        batch = np.asarray(data)[idx]
    ctx = SampleContext(exp.models, prepared.sample_rng, batch, data, n)
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


def compute_metrics(prepared: Any, step: int) -> dict[str, float] | None:
    """`{name: value}` from the experiment's `metrics(ctx)`, or None when it has none. Raises what the
    experiment's code raises, and `TypeError` for a result that is not a dict of finite-or-NaN numbers."""
    import numpy as np

    exp = prepared.experiment
    if exp.metrics is None:
        return None
    ctx = sample_context(prepared, step, METRIC_SAMPLES)
    got = exp.metrics(ctx)
    if not isinstance(got, dict):
        raise TypeError(f"metrics() must return a dict of name -> number, got {type(got).__name__}")
    out = {}
    for name, value in got.items():
        try:
            out[str(name)] = float(np.asarray(value).reshape(()))
        except (TypeError, ValueError):
            raise TypeError(f"metrics() returned {value!r} for {name!r}; return one number per name") from None
    return out

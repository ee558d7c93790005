"""Drawing samples for the samples view and the record: the experiment's `sample(ctx)` off the step, and the
context `sample(ctx)` and `metrics(ctx)` share (measuring itself is engine/measuring.py).

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


def sample_context(prepared: Any, step: int, n: int, models: Any = None, rng: Any = None) -> Any:
    """The `SampleContext` for `sample(ctx)` and `metrics(ctx)` at `step`: `n` real rows (the same rows for
    the same step), all of the data, the generator `rng` (default: the sample generator), the `models`
    (default: the experiment's own) and the experiment's extra attributes."""
    from training_core.experiment.api import SampleContext
    exp = prepared.experiment
    data = None if prepared.data is None else prepared.data.read_value()
    batch = None
    if data is not None:
        idx = np.random.default_rng(step).integers(0, int(data.shape[0]), n)
        batch = np.asarray(data)[idx]
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

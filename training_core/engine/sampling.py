"""Drawing samples for the samples view and the record: the experiment's `sample(ctx)` off the step, and the
context `sample(ctx)` and `metrics(ctx)` share (measuring itself is engine/measuring.py).

`sample(ctx)` runs eagerly on the host side of the training thread, between steps. Its context has
`n` real rows of the data as NumPy, in the data's structure (`ctx.batch`: an array, or a tuple or dict of
them, labels included, drawn with a generator seeded by the step, so the same step shows the same real rows;
for a Dataset, from the rows engine/datasets.py took once while preparing), all of the data in memory (None
for a Dataset), and `ctx.normal`/`ctx.uniform` from a
generator of its own (keyed by the run's seed apart from the training's stream, and checkpointed), so drawing samples never
changes the training's random numbers.
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

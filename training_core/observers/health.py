"""GAN health: the experiment's own quality measures (`metrics(ctx)`), recorded as `metric/<name>` rows.

Why: a GAN's losses say little about whether it works (they hover while the generator collapses to
one mode); the measures researchers trust are computed from samples, like the ring's modes covered.
An experiment may define `metrics(ctx) -> {name: number}`. It is called off the compiled step, on the
training thread between two steps, at the start (step 0), every `metrics_seconds` (2 s; the first ones
0.25, 0.5 and 1 s apart, so a run of a few seconds gets a curve too) and at the end, with
a `SampleContext` of `engine.sampling.METRIC_SAMPLES` rows and the sample generator, so it never shifts the
training's random numbers. Its values go out with the next metrics batch (`MetricsBatch.scalars`),
so the record writes them in step order beside the losses and the window plots them live.

A `metrics()` that raises or returns something that is not a dict of numbers is turned off for the
rest of the run, with a `warning` event: a broken measure must not end a long run.
"""
from __future__ import annotations

import math
import time

from training_core.base import events as E
from training_core.observers.base import Observer, RunHandle

METRIC_PREFIX = "metric/"
FIRST_INTERVAL_S = 0.25  # the first measures come faster: a short run's curve is not two points
# Cost: the ring's measure (2,048 generator points, nearest modes) takes ~10 ms on this project's CPU,
# 0.5% of a run at one every 2 s.


class HealthMetrics(Observer):
    """Calls the experiment's `metrics(ctx)` at the start, every `seconds` and at the end of a run."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._run: RunHandle | None = None
        self._next = math.inf
        self._interval = seconds
        self._last_step = -1

    def on_run_begin(self, run: RunHandle) -> None:
        self._run = run
        if not run.has_metrics:
            return
        if not run.resumed:  # a resumed run's record keeps the measures up to its checkpoint, at its step too
            self._measure()
        self._interval = min(FIRST_INTERVAL_S, self.seconds)
        self._next = time.perf_counter() + self._interval

    def on_step_end(self, run: RunHandle) -> None:
        if time.perf_counter() >= self._next:
            self._measure()
            self._interval = min(2 * self._interval, self.seconds)  # 0.25, 0.5, 1, 2, 2, ... s
            self._next = time.perf_counter() + self._interval

    def on_run_end(self, run: RunHandle, reason: str) -> None:
        if reason != "error" and self._next < math.inf:
            self._measure()

    def _measure(self) -> None:
        t = self._run
        if t is None or t.step == self._last_step:
            return
        self._last_step = t.step
        try:
            values = t.measure()
        except Exception as e:  # noqa: BLE001 - a broken measure must not stop training
            t.drop_metrics()
            self._next = math.inf
            t.emit(E.Warning(message=f"metrics() failed and is turned off: {type(e).__name__}: {e}"))
            return
        if values:
            t.record_scalars({METRIC_PREFIX + k: v for k, v in values.items()})

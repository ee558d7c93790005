"""When samples are drawn: live while someone shows them, at a slower pace for the record alone."""
from __future__ import annotations

import time

from training_core.observers.base import Observer, RunHandle


class Sampler(Observer):
    """Draws samples every `seconds` while another observer shows them (the window), else every
    `record_seconds` for the record alone (headless; 0: none between), and once at the end, so the
    samples view and the record end on the final state. Who takes samples is the handle's to say
    (`wants_samples`): the record's sample writer takes what is drawn but does not ask for the live cadence."""

    def __init__(self, seconds: float, record_seconds: float = 0.0) -> None:
        self.seconds = seconds
        self.record_seconds = record_seconds
        self._next = 0.0
        self._period: float | None = None  # None: nobody wants samples
        self._wanted = False

    def on_run_begin(self, run: RunHandle) -> None:
        takers = run.wants_samples
        self._wanted = bool(takers)
        self._period = self.seconds if takers == "live" else (self.record_seconds or None) if takers else None
        self._next = time.perf_counter()

    def on_step_end(self, run: RunHandle) -> None:
        if self._period is not None and time.perf_counter() >= self._next:
            self._next = time.perf_counter() + self._period
            run.sample()

    def on_run_end(self, run: RunHandle, reason: str) -> None:
        if self._wanted and reason != "error":
            run.sample()

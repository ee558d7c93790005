"""The numbers of steps still on the device, brought to the host in batches, and the rate of steps.

Why batches: each step's loss and norms stay on the device as one packed tensor; fetching every step would
sync the device every step. One `tf.stack` per batch (every `fetch_every` steps or `fetch_seconds`) is the
only sync, and what it brings is one `MetricsBatch` for every observer.

Holding back: while a measure runs beside training on the weights of step S (engine/beside.py), its values
will be recorded at S, after the steps that ran meanwhile. The record's readers take scalars.csv as being in
step order (cutting it back to a checkpoint scans it from the end for the last row at or before a step:
rundir/trim.py; a resume starts from the last step it holds), so the rows of steps after S wait here
(`hold(S)`) until the measure's values are in (`release()`), and every batch stays in step order with the
file. What waits is device tensors, as always between fetches; batches still go out meanwhile (with the
steps up to S, or none: the status, steps/s, moves on). The trainer bounds how long (loop/trainer.py).
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from training_core.base.metrics import MetricsBatch, PendingStep, PhaseBlock, Status, scalar_columns


class Fetcher:
    """Pending steps and scalars, and the steps/s estimate (a half-life smoothing over ~0.5 s windows)."""

    def __init__(self) -> None:
        self.pending: list[PendingStep] = []
        self.scalars: list[tuple[str, int, float, float]] = []  # (tag, step, wall, value)
        self.hold_after: int | None = None  # steps after this one wait in `held` (a measure in flight)
        self.held: list[PendingStep] = []
        self._held_scalars: list[tuple[str, int, float, float]] = []
        self._rate = (0.0, 0, 0.0)  # (time, step, steps/s)

    def start(self, step: int) -> None:
        self._rate = (time.perf_counter(), step, 0.0)

    @property
    def steps_per_s(self) -> float:
        return self._rate[2]

    def add(self, step: PendingStep) -> int:
        """A step's numbers, still on the device; returns how many steps are ready to fetch."""
        (self.pending if self.hold_after is None else self.held).append(step)
        return len(self.pending)

    def add_scalars(self, step: int, values: dict[str, float]) -> None:
        rows = [(tag, step, time.time(), float(v)) for tag, v in values.items()]
        if self.hold_after is not None and step > self.hold_after:
            self._held_scalars += rows
        else:
            self.scalars += rows

    def hold(self, step: int) -> None:
        """Steps after `step` wait for `release()` (everything pending now is of `step` or before)."""
        self.release()
        self.hold_after = step

    def release(self) -> None:
        self.pending += self.held
        self.scalars += self._held_scalars
        self.held, self._held_scalars, self.hold_after = [], [], None

    def fetch(self, phase_names: list[str], phase_paths: list[tuple[str, ...]], step: int,
              status: Any) -> MetricsBatch | None:
        """The batch of everything pending, without the steps that wait (None when nothing is pending or
        waits); `status()` is called after the rate moved."""
        if not self.pending and not self.scalars and not self.held:
            return None
        import tensorflow as tf
        pending, self.pending = self.pending, []
        scalars, self.scalars = scalar_columns(self.scalars), []
        blocks = []
        for i in sorted({s.phase for s in pending}):
            items = [s for s in pending if s.phase == i]
            packed = tf.stack([s.packed for s in items]).numpy()  # the one device sync for these steps
            blocks.append(PhaseBlock.from_packed(phase_names[i], phase_paths[i], [s.step for s in items],
                                                 [s.wall for s in items], packed, np.stack([s.frozen for s in items]),
                                                 np.array([s.record for s in items], dtype=bool)))
        now = time.perf_counter()
        t, s, r = self._rate
        if now - t >= 0.5:
            inst = (step - s) / (now - t)
            self._rate = (now, step, inst if r == 0 else 0.5 * r + 0.5 * inst)
        current: Status = status()
        return MetricsBatch(blocks, current, scalars)

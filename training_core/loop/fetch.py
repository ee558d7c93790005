"""The numbers of steps still on the device, brought to the host in batches, and the rate of steps.

Why batches: each step's loss and norms stay on the device as one packed tensor; fetching every step would
sync the device every step. One `tf.stack` per batch (every `fetch_every` steps or `fetch_seconds`) is the
only sync, and what it brings is one `MetricsBatch` for every observer: every step as it is fetched, the alarms'
and the live views' alike. (A measure beside training is recorded at the step it measured, after the steps that
ran meanwhile: only the record holds those back, observers/record.py.)
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
        self._rate = (0.0, 0, 0.0)  # (time, step, steps/s)

    def start(self, step: int) -> None:
        self._rate = (time.perf_counter(), step, 0.0)

    @property
    def steps_per_s(self) -> float:
        return self._rate[2]

    def add(self, step: PendingStep) -> int:
        """A step's numbers, still on the device; returns how many steps are ready to fetch."""
        self.pending.append(step)
        return len(self.pending)

    def add_scalars(self, step: int, values: dict[str, float], wall: float | None = None) -> None:
        """Scalars at `step`, stamped `wall` (default: now; a measure's is when its snapshot was taken)."""
        wall = time.time() if wall is None else wall
        self.scalars += [(tag, step, wall, float(v)) for tag, v in values.items()]

    def fetch(self, phase_names: list[str], phase_paths: list[tuple[str, ...]], step: int,
              status: Any) -> MetricsBatch | None:
        """The batch of everything pending (None when nothing is); `status()` is called after the rate moved."""
        if not self.pending and not self.scalars:
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

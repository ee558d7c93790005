"""Synthetic metrics for the plot tests: one phase's block of per-step records, as the core sends them."""
from __future__ import annotations

import numpy as np

from training_core import PhaseBlock


def block(phase: str, steps, paths: tuple[str, ...], loss=None, ratio=None, frozen=None, every: int = 1):
    """`steps` of `phase` with per-variable records for `paths` (every `every`-th row kept for the variable
    plots); loss and ‖ΔW‖/‖W‖ random from a seed of the first step unless given, 0 where `frozen`."""
    steps = np.asarray(steps, dtype=np.int64)
    n, v = len(steps), len(paths)
    rng = np.random.default_rng(int(steps[0]) if n else 0)
    ratio = rng.uniform(5e-4, 5e-3, (n, v)) if ratio is None else np.asarray(ratio, dtype=np.float64)
    frozen = np.zeros((n, v), bool) if frozen is None else np.asarray(frozen, dtype=bool)
    ratio = np.where(frozen, 0.0, ratio)
    loss = rng.normal(1.0, 0.1, n) if loss is None else np.asarray(loss, dtype=np.float64)
    return PhaseBlock(phase, paths, steps, 1e9 + steps * 1e-3, loss, ratio * 10, ratio, ratio * 100, frozen,
                      (np.arange(n) % every) == 0)

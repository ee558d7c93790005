"""TensorBoard's debiased exponential moving average, shared by the plots and the CSV export.

One implementation so that the smoothed curve on screen, in an exported figure and in an exported
CSV are the same numbers. Incremental: a live plot smooths only the points that arrived, carrying
a small state, and gets exactly what a full recomputation would give.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class EmaState:
    """Filter memory after the last point seen: the undebiased average and how many finite points fed it."""

    last: float = 0.0
    count: int = 0


def ema_smooth(values: np.ndarray, weight: float, state: EmaState | None = None) -> tuple[np.ndarray, EmaState]:
    """Smooth `values` as TensorBoard does: EMA with weight `weight`, divided by (1 - weight**n).

    Non-finite values pass through unsmoothed and do not feed the average (as in TensorBoard).
    Returns the smoothed values and the state to continue from.
    """
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    values = np.asarray(values, dtype=np.float64)
    state = EmaState() if state is None else EmaState(state.last, state.count)
    out = values.copy()
    finite = np.isfinite(values)
    x = values[finite]
    if x.size == 0 or weight == 0.0:
        if x.size:
            state = EmaState(float(x[-1]), state.count + int(x.size))
        return out, state
    from scipy.signal import lfilter  # imported here: scipy costs ~0.5 s of window start-up

    zi = np.array([weight * state.last])
    ema, _ = lfilter([1.0 - weight], [1.0, -weight], x, zi=zi)
    n = state.count + np.arange(1, x.size + 1, dtype=np.float64)
    out[finite] = ema / (1.0 - weight**n)
    return out, EmaState(float(ema[-1]), state.count + int(x.size))

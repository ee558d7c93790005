"""Which metrics share a plot, and when a metric plot gets a log axis: one rule for the window's health plots
(app/plots/health.py) and the exported figures (figures/data.py), so a metric reads the same in both.

Why a band: an experiment that reports a measure with its spread names the spread `<name>_std` (the quality
module's `kid` and `kid_std`); drawn as a plot of its own it read as a third measure, on a scale of its own.
It is drawn as the band `<name>` ± `<name>_std` around its measure instead, in the measure's plot. Other
metrics keep a plot each: their scales differ (modes covered 0-8, a fraction 0-1, FID in the hundreds), and
one plot for them all would flatten all but the largest.

Why a log axis: a measure of an untrained generator can be a hundred times its value later (the shapes
example's FID: ~145 at step 0, ~1 at step 3,000); on a linear axis that first point squashed the rest of the
run into a flat line at the bottom. A plot whose values are all positive and span more than a decade (largest / smallest > 10) is drawn on
a log axis, where a halving is the same height anywhere. The values only gain points, so a plot turns to log
once, and back only if a value <= 0 arrives (an unbiased KID can dip below 0), which a log axis cannot show.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from training_core.runs.groups import floor_at_zero

STD_SUFFIX = "_std"
LOG_SPAN = 10.0  # largest / smallest of a plot's positive values above which it is drawn on a log axis


@dataclass(frozen=True)
class MetricGroup:
    """One metric plot: the measure's tag (`metric/kid`) and, when the runs recorded its spread, the tag of
    that (`metric/kid_std`), drawn as a band around it."""

    tag: str
    std: str | None = None

    @property
    def tags(self) -> tuple[str, ...]:
        return (self.tag,) if self.std is None else (self.tag, self.std)


def metric_groups(tags: Iterable[str]) -> list[MetricGroup]:
    """The plots `tags` (metric/<name>, in order of first appearance) make: `<name>_std` joins `<name>` when
    both are there; alone it is a measure of its own. In the order of the measures' first appearance."""
    tags = list(dict.fromkeys(tags))
    have = set(tags)
    out = []
    for tag in tags:
        if tag.endswith(STD_SUFFIX) and tag.removesuffix(STD_SUFFIX) in have:
            continue
        std = tag + STD_SUFFIX
        out.append(MetricGroup(tag, std if std in have else None))
    return out


def wants_log(values: Iterable[np.ndarray]) -> bool:
    """Whether a plot of these measured values is best read on a log axis: all finite ones positive, and the
    largest more than `LOG_SPAN` times the smallest."""
    finite = [v[np.isfinite(v)] for v in (np.asarray(a, dtype=np.float64) for a in values)]
    finite = [v for v in finite if v.size]
    if not finite:
        return False
    lo = min(float(v.min()) for v in finite)
    hi = max(float(v.max()) for v in finite)
    return lo > 0 and hi > LOG_SPAN * lo


def band_edges(steps: np.ndarray, values: np.ndarray, std_steps: np.ndarray,
               std: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(index, low, high): the band values ∓ std on the steps both have, `index` into `values` (a reader can
    meet a measure whose spread is not in yet, or a file cut between the two); its low edge stops at 0 when every
    value is >= 0 (runs/groups.py `floor_at_zero`: KID ± its std went below 0)."""
    steps, std_steps = np.asarray(steps), np.asarray(std_steps)
    at = {int(s): i for i, s in enumerate(std_steps.tolist())}
    idx = np.array([i for i, s in enumerate(steps.tolist()) if int(s) in at], dtype=np.int64)
    if not idx.size:
        empty = np.zeros(0)
        return idx, empty, empty
    v = np.asarray(values, dtype=np.float64)[idx]
    s = np.abs(np.asarray(std, dtype=np.float64)[[at[int(steps[i])] for i in idx]])
    return idx, floor_at_zero(v - s, np.asarray(values, dtype=np.float64)), v + s

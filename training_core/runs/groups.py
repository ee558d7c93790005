"""Runs grouped by setting, seeds drawn as one line with a band, and a setting's value at a step.

Why a module of its own: an ablation is a grid of settings (ratio, learning rates, freeze set, method)
run over several seeds, and a paper reports each setting once: a mean line with a band, and a number
± its spread. The window's comparison, the sweep table and the exported figures must agree on what a
"setting" is and on how seeds are combined, so the three read it from here. Qt-free and TensorFlow-free
(the `plain-readers` contract), like the rest of `runs`.

A setting is what the run was asked to do (`SETTING_KEYS` of its `config.toml`), not how it was
recorded (fetch intervals, TensorBoard, threads) nor its seed. A sweep may give each run its grid point
instead (`group_runs(..., settings=...)`), which also covers settings the configuration cannot hold
(e.g. "freeze X from step N").
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from training_core.base.smoothing import ema_smooth

#: the configuration keys that make a setting; everything else (seed, run_dir, fetch and sample
#: intervals, TensorBoard, threads, the device) does not change what is compared
SETTING_KEYS = ("example", "experiment_file", "schedule", "lr", "freeze", "freeze_method", "update_frozen_stats",
                "batch_size", "steps", "count", "strategy", "jit", "planned")
SPREADS = ("minmax", "sd")  # a band from the lowest to the highest seed, or mean ± one standard deviation


def _text(value: Any) -> str:
    """One canonical text per value, so that equal settings written differently (dict order, 5e-05 and
    5.0e-5) fall in one group."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_text(value[k])}" for k in sorted(value)) + "}"
    return json.dumps(value) if isinstance(value, str) else str(value)


def setting_of(config: Mapping[str, Any]) -> dict[str, str]:
    """The setting a configuration asks for, as {key: canonical text} over `SETTING_KEYS` it holds."""
    return {k: _text(config[k]) for k in SETTING_KEYS if k in config}


@dataclass(frozen=True)
class Group:
    """The runs of one setting. `differs` holds only the keys whose values differ between groups (what a
    legend or a table row must say); `label` says it in one line ("schedule={D=5, G=1} lr={G=0.0001}")."""

    differs: tuple[tuple[str, str], ...]
    members: tuple[str, ...]  # run keys, in the order given
    seeds: tuple[int | None, ...]  # each member's seed, None where unknown

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.differs) or "all runs"


def group_runs(configs: Mapping[str, Mapping[str, Any]],
               settings: Mapping[str, Mapping[str, Any]] | None = None) -> list[Group]:
    """Runs (key -> config dict) grouped by setting, groups in the order their first run was given.

    `settings` (key -> {name: value}) replaces a run's setting where given, e.g. a sweep's grid point."""
    seen: dict[tuple[tuple[str, str], ...], list[str]] = {}
    of: dict[str, dict[str, str]] = {}
    for key, config in configs.items():
        s = {k: _text(v) for k, v in settings[key].items()} if settings and key in settings else setting_of(config)
        of[key] = s
        seen.setdefault(tuple(sorted(s.items())), []).append(key)
    names = sorted({k for s in of.values() for k in s})
    varying = [k for k in names if len({of[m].get(k) for m in of}) > 1]
    groups = []
    for members in seen.values():
        first = of[members[0]]
        differs = tuple((k, first.get(k, "-")) for k in varying)
        seeds = tuple(_seed(configs[m]) for m in members)
        groups.append(Group(differs, tuple(members), seeds))
    return groups


def _seed(config: Mapping[str, Any]) -> int | None:
    s = config.get("seed")
    return int(s) if isinstance(s, (int, np.integer)) and not isinstance(s, bool) else None


@dataclass(frozen=True)
class Band:
    """Seeds combined on one step grid: the mean line, the band's low and high edges, and `n`, how many
    seeds each point combines (the grid is where every seed has a record, so `n` is constant)."""

    steps: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n: int


def band(curves: Sequence[tuple[np.ndarray, np.ndarray]], spread: str = "minmax", smoothing: float = 0.0) -> Band:
    """One band from (steps, values) curves of the same setting; with `smoothing` (TensorBoard's EMA weight, as
    the plots and figures smooth) each seed's curve is smoothed first, then the seeds are combined.

    Runs of different seeds record at the same steps when they ran the same configuration; where they do
    not (a run cut short, records thinned), every curve is read on the steps where all of them have a
    record, by linear interpolation between a curve's own records, never extrapolated: the band is only as
    long as the shortest seed, so its right end never averages fewer seeds than its left. A ± sd band of a
    measure never below 0 stops at 0 (`floor_at_zero`)."""
    if spread not in SPREADS:
        raise ValueError(f"spread must be one of {', '.join(SPREADS)}, not {spread!r}")
    curves = [(np.asarray(s, dtype=np.float64), np.asarray(v, dtype=np.float64)) for s, v in curves if len(s)]
    signs = [v for _, v in curves]  # the values as recorded: whether the measure is never below 0
    curves = [(s, smooth(v, smoothing)) for s, v in curves]
    if not curves:
        e = np.zeros(0)
        return Band(e, e, e, e, 0)
    lo, hi = max(float(s[0]) for s, _ in curves), min(float(s[-1]) for s, _ in curves)
    grid = np.unique(np.concatenate([s[(s >= lo) & (s <= hi)] for s, _ in curves]))
    stack = np.stack([np.interp(grid, s, v) for s, v in curves])
    mean = stack.mean(axis=0)
    if spread == "minmax":
        low, high = stack.min(axis=0), stack.max(axis=0)
    else:
        sd = stack.std(axis=0, ddof=1) if len(curves) > 1 else np.zeros_like(mean)
        low, high = floor_at_zero(mean - sd, *signs), mean + sd
    return Band(grid, mean, low, high, len(curves))


def floor_at_zero(low: np.ndarray, *values: np.ndarray) -> np.ndarray:
    """A ± sd band's lower edge, clipped at 0 when every one of the measure's `values` is >= 0 (a softplus loss,
    FID, KID, ‖ΔW‖): mean - sd of such a measure went below 0, an edge no run could reach, and a linear axis
    stretched to a negative value the measure cannot take. A measure that can be negative keeps its edge."""
    finite = [v[np.isfinite(v)] for v in (np.asarray(v, dtype=np.float64) for v in values)]
    if any(len(v) for v in finite) and all(not len(v) or v.min() >= 0 for v in finite):
        return np.maximum(low, 0.0)
    return low


def smooth(values: Sequence[float] | np.ndarray, smoothing: float = 0.0) -> np.ndarray:
    """One seed's values smoothed by TensorBoard's debiased EMA (base/smoothing.py; 0: as recorded)."""
    values = np.asarray(values, dtype=np.float64)
    return ema_smooth(values, smoothing)[0] if smoothing else values


def value_at(steps: np.ndarray, values: np.ndarray, step: int | None = None) -> float:
    """A curve's value at `step`: its last record at or before it (None: its last record); NaN when it has
    none by then (a seed that never got there is missing, not zero)."""
    steps, values = np.asarray(steps), np.asarray(values)
    if step is not None:
        keep = steps <= step
        steps, values = steps[keep], values[keep]
    return float(values[-1]) if len(values) else math.nan


@dataclass(frozen=True)
class Summary:
    """Seeds' values of one setting at one step: mean, sample standard deviation (0 for one seed), and how
    many seeds had a value (seeds without one are left out, and `n` says so)."""

    mean: float
    sd: float
    n: int  # (its text, in the window's table as in LaTeX: runs/sweep_table.cell_text, one rule for both)


def summarise(values: Sequence[float]) -> Summary:
    """Mean ± sample standard deviation (ddof=1) of the seeds' finite values."""
    a = np.asarray([v for v in values if math.isfinite(v)], dtype=np.float64)
    if not len(a):
        return Summary(math.nan, math.nan, 0)
    return Summary(float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0, len(a))

"""Seeds as bands in a figure: the runs of one setting (runs/groups.py decides what a setting is) drawn as one
mean line with a band, named once in the legend.

Why the band is made of the smoothed curves: a paper's band shows how far the seeds' runs lie apart, not the
step-to-step noise of each (a min-max band of raw losses is as wide as the noise). The figure's smoothing
is applied to each seed's curve first; the mean of those is the line (the EMA is linear, so it is also the
smoothed mean of the raw curves), and the band is their minimum to maximum, or the mean ± one standard
deviation, whose lower edge stops at 0 for a measure never below 0 (a softplus loss, FID, KID, ‖ΔW‖:
runs/groups.py `floor_at_zero`; mean - sd went below 0, where no seed ever was). Metrics are drawn as measured, so their band is of the measured values. All seeds are read on the
steps where every one of them has a record (`runs.groups.band`), so the band never averages fewer seeds at its
end than at its start.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from training_core.base.errors import UserError
from training_core.base.smoothing import ema_smooth
from training_core.figures.curves import Curve
from training_core.figures.frozen import step_x
from training_core.runs.groups import band, group_runs
from training_core.rundir.reading import read_config

if TYPE_CHECKING:
    from training_core.runs import RunData

SPREAD_TEXT = {"minmax": "min–max", "sd": "mean ± 1 sd"}


@dataclass
class Entity:
    """What the legend names: one run, or a group of runs that differ only by seed."""

    label: str
    members: list[tuple[str, "RunData"]]

    @property
    def store(self) -> "RunData":
        return self.members[0][1]


def seed_groups(runs: Sequence[tuple[str, "RunData"]]) -> list[list[int]]:
    """Indices of `runs` grouped by setting (their `config.toml`s), groups in the order of their first run. A
    run without a readable configuration (drawn from memory, or its file damaged) is a group of its own."""
    configs, alone = {}, []
    for i, (_, store) in enumerate(runs):
        try:
            configs[i] = read_config(store.run_dir) if store.run_dir is not None else None
        except (UserError, OSError, ValueError):
            configs[i] = None
        if configs[i] is None:
            alone.append(i)
    known = {i: c for i, c in configs.items() if c is not None}
    groups = [list(g.members) for g in group_runs(known)] if known else []
    groups += [[i] for i in alone]
    return sorted(groups, key=lambda g: g[0])


def group_name(labels: Sequence[str]) -> str:
    """A group's name from its members' labels: what they share ("ratio-1to1-seed1", "ratio-1to1-seed2" ->
    "ratio-1to1"), without a word cut in two or a trailing "seed"; the first label when they share nothing."""
    if len(labels) == 1:
        return labels[0]
    prefix = os.path.commonprefix(list(labels))
    if any(len(s) > len(prefix) and s[len(prefix)].isalnum() for s in labels) and prefix[-1:].isalnum():
        prefix = re.sub(r"[A-Za-z0-9]+$", "", prefix)  # a word cut in two: back to where it began
    name = re.sub(r"[\s_\-=.:,/(]*(seed|s)?[\s_\-=.:,/(]*$", "", prefix, flags=re.IGNORECASE)
    return name if len(name) >= 2 else labels[0]


def entities(runs: Sequence[tuple[str, "RunData"]], groups: Sequence[Sequence[int]] | None,
             names: Sequence[str] | None = None) -> list[Entity]:
    """The runs as the figure draws them: each alone (`groups` None), or by group, named by `names` when given,
    else by what their members' labels share (made unique)."""
    runs = list(runs)
    if groups is None:
        return [Entity(label, [(label, store)]) for label, store in runs]
    out, used = [], set()
    for k, g in enumerate(groups):
        members = [runs[i] for i in g]
        name = names[k] if names is not None else group_name([label for label, _ in members])
        base, n = name, 2
        while name in used:
            name, n = f"{base} ({n})", n + 1
        used.add(name)
        out.append(Entity(name, members))
    return out


def band_curve(curve: Curve, entity: Entity, spread: str, weight: float, x_of) -> Curve:
    """`curve` (drawn from the entity's first member) as the mean and band of every member's same tag;
    `x_of(store, steps, wall)` places points on the x axis. Members without that tag are left out."""
    raw, smooth, walls, xs, frozen = [], [], [], [], []
    for _, store in entity.members:
        try:
            steps, wall, values = (np.asarray(a) for a in store.series(curve.tag))
        except KeyError:
            continue
        values = values.astype(np.float64)
        raw.append((steps, values))
        smooth.append((steps, ema_smooth(values, weight)[0]))
        walls.append((steps, np.asarray(wall, np.float64)))
        xs.append((steps, np.asarray(x_of(store, steps, wall), np.float64)))
        if curve.frozen is not None:
            path = curve.tag.partition("/")[2]
            frozen.append((steps, np.asarray(store.frozen_series(path), np.float64)))
    if len(raw) < 2:
        return curve
    mean_raw, b = band(raw, spread), band(smooth, spread)
    grid = b.steps

    def on_grid(pairs: list) -> np.ndarray:
        return np.mean([np.interp(grid, s, v) for s, v in pairs], axis=0)

    frozen_on = (on_grid(frozen) >= 0.5) if frozen else None  # frozen where most seeds were
    low, high = b.low, b.high
    if frozen_on is not None:  # a frozen stretch is drawn as recorded (dotted, grey), not as seeds' EMAs decaying
        low, high = np.where(frozen_on, np.nan, low), np.where(frozen_on, np.nan, high)
    walls_on = on_grid(walls)
    first = entity.members[0][1]  # a setting's seeds freeze at its planned step: the step drawn at the first's
    return Curve(curve.tag, grid.astype(np.int64), walls_on, mean_raw.mean, b.mean, curve.colour, curve.dash,
                 frozen_on, entity.label, on_grid(xs), low=low, high=high, seeds=b.n,
                 step_x=step_x(first, grid, walls_on, frozen_on, x_of))

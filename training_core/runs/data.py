"""One run's numbers in memory: `RunData`, the model the plots, the tree and the exporter read.

Plain Python and numpy. Losses (and other per-step scalars such as `metric/<name>`) are kept for
every step; per-variable series for the steps the trainer records (every `var_every`-th step of each
phase, as on disk), so memory stays flat over long runs. A variable's series is named by its path, or by
`path@phase` for each phase of a variable several phases train (rundir/varstore.py `var_keys`): every
phase's rows are kept. `version` bumps on every change: a view redraws only when it moved
(`var_version` only when the per-variable rows do: the scope tree's states stand still on a tick of losses).
The same object is filled live (`add_batch`, `add_event`) or from a run directory (`RunFollower`), so what
the window shows while training and what a review shows later are the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from training_core.base import events as E
from training_core.base.metrics import MetricsBatch
from training_core.rundir.trim import checkpoint_cut
from training_core.rundir.varstore import KINDS as VAR_KINDS
from training_core.rundir.varstore import VarRows, var_keys


class GrowArray:
    """Amortised O(1) append of rows; `view()` is a no-copy slice."""

    def __init__(self, dtype: Any, width: int | None = None, capacity: int = 1024) -> None:
        shape = (capacity,) if width is None else (capacity, width)
        self._a = np.empty(shape, dtype=dtype)
        self._n = 0

    def extend(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=self._a.dtype)
        need = self._n + len(rows)
        if need > len(self._a):
            cap = max(need, 2 * len(self._a))
            grown = np.empty((cap,) + self._a.shape[1:], dtype=self._a.dtype)
            grown[: self._n] = self._a[: self._n]
            self._a = grown
        self._a[self._n:need] = rows
        self._n = need

    def view(self) -> np.ndarray:
        return self._a[: self._n]

    def truncate(self, n: int) -> None:
        self._n = min(self._n, max(0, n))

    def __len__(self) -> int:
        return self._n


@dataclass
class Marker:
    step: int
    kind: str
    label: str
    time: float = 0.0  # when it happened (seconds since the epoch): figures aligned by wall time
    #: found after its step (a leak, a NaN: reported once the step's numbers were fetched, `at_step` earlier),
    #: so `time` is the report's; `RunData.marker_time` places it at its step's time instead
    late: bool = False

    @classmethod
    def of(cls, event: E.Event, label: str) -> "Marker":
        return cls(event.marker_step, event.kind, label, event.time, event.marker_step != event.step)


def _nonfinite(value: str) -> str:
    """"NaN", "Inf" or "-Inf": what a `nan` event's loss became (the event kind says NaN for all three)."""
    v = value.strip().lower()
    return "NaN" if v in ("nan", "-nan", "") else ("-Inf" if v.startswith("-") else "Inf")


def _ratio_label(e: E.Ratio) -> str:
    p = e.policy
    if p.get("policy") == "adaptive":
        return "adaptive " + "/".join(f"{t:g}" for t in p.get("thresholds", []))
    return "ratio " + ":".join(str(c) for c in p.get("ratio", []))


_LABELS: dict[type, Callable[[Any], str]] = {
    E.Freeze: lambda e: "freeze: " + (", ".join(e.scopes) if e.scopes else "none"),
    E.Ratio: _ratio_label,
    E.LearningRate: lambda e: f"lr {e.phase}={e.value:g}",
    E.Method: lambda e: f"method {e.method}",
    E.Pause: lambda e: "pause" if e.reason == "user" else f"pause ({e.reason})",
    E.Nan: lambda e: f"{_nonfinite(e.value)} in {e.phase}",
    E.Leak: lambda e: f"leak {e.variable}",
    E.Rollback: lambda e: f"rolled back from {e.from_step}",
    E.Resumed: lambda e: "resumed",
}


def marker_label(e: E.Event) -> str | None:
    """A short label for a control or alarm event, or None if the event is not marked on plots."""
    label = _LABELS.get(type(e))
    return None if label is None else label(e)


class _Series:
    """A per-step scalar (a phase's loss, a metric): steps, wall times, values."""

    def __init__(self) -> None:
        self.steps = GrowArray(np.int64)
        self.wall = GrowArray(np.float64)
        self.values = GrowArray(np.float64)

    def extend(self, steps: Any, wall: Any, values: Any) -> None:
        self.steps.extend(steps)
        self.wall.extend(wall)
        self.values.extend(values)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.steps.view(), self.wall.view(), self.values.view()

    def truncate(self, step: int) -> None:
        n = int(np.searchsorted(self.steps.view(), step, side="right"))
        for a in (self.steps, self.wall, self.values):
            a.truncate(n)


class _PhaseVars:
    """Per-variable rows of one phase, in the order of the phase's variables."""

    def __init__(self, var_paths: tuple[str, ...]) -> None:
        self.var_paths = var_paths
        self.keys = var_paths  # the series' names (`RunData._index`): path, or path@phase if shared
        self.steps = GrowArray(np.int64)
        self.wall = GrowArray(np.float64)
        w = len(var_paths)
        self.vars = {k: GrowArray(np.float32 if k != "update_norm" else np.float64, w) for k in VAR_KINDS}
        self.frozen = GrowArray(bool, w)

    def extend(self, steps: Any, wall: Any, values: dict[str, Any], frozen: Any) -> None:
        self.steps.extend(steps)
        self.wall.extend(wall)
        for k in VAR_KINDS:
            self.vars[k].extend(values[k])
        self.frozen.extend(frozen)

    def truncate(self, step: int) -> None:
        n = int(np.searchsorted(self.steps.view(), step, side="right"))
        for a in (self.steps, self.wall, self.frozen, *self.vars.values()):
            a.truncate(n)


class RunData:
    """The metrics, events, markers and latest samples of one run."""

    def __init__(self, run_dir: str | Path | None = None) -> None:
        self.run_dir = None if run_dir is None else Path(run_dir)
        self.version = -1  # bumps on every change; views redraw when it moved
        self.generation = -1  # bumps on every `clear`: what was derived from the events before is void
        self.var_version = -1  # bumps when the per-variable rows change (not the losses): the tree's states
        self.clear()

    def clear(self) -> None:
        """Forget everything (a new run, or a followed record read again from the start). `version` and
        `generation` go on counting, so a view that remembers either never mistakes a refilled model for
        the one it saw (a rebuilt record may well reach the same count of changes or events)."""
        self._scalars: dict[str, _Series] = {}  # "loss/D", "metric/modes_covered", ...
        self._phases: dict[str, _PhaseVars] = {}
        self._var_index: dict[str, tuple[str, int]] = {}  # a series' name (path, path@phase) -> (phase, column)
        self.events: list[E.Event] = []
        self.markers: list[Marker] = []
        self.samples: dict[str, Any] | None = None
        self.start: E.Start | None = None
        self.stop: E.Stop | None = None
        #: "fit" or "loop" when training_core.monitor recorded the run (config.toml's `monitor`, read by
        #: `RunFollower`), "" for a run Freezeframe trains: a figure says what a frozen mark meant (figures/frozen.py)
        self.monitor = ""
        self.last_step = 0
        self.version += 1
        self.generation += 1
        self.var_version += 1

    # -- feeding ---------------------------------------------------------------------------------------------
    def add_batch(self, batch: MetricsBatch) -> None:
        """A live batch from the trainer (every step's loss; per-variable numbers of the recorded steps)."""
        for b in batch.blocks:
            self.add_scalar(f"loss/{b.phase}", b.steps, b.wall_time, b.loss, bump=False)
            keep = b.record
            if keep.any():
                self._phase_vars(b.phase, b.var_paths).extend(
                    b.steps[keep], b.wall_time[keep],
                    {"update_norm": b.update_norm[keep], "update_ratio": b.update_ratio[keep],
                     "grad_norm": b.grad_norm[keep]}, b.frozen[keep])
                self.var_version += 1
        for tag, (steps, wall, values) in batch.scalars.items():
            self.add_scalar(tag, steps, wall, values, bump=False)
        self.version += 1

    def add_var_rows(self, rows: VarRows) -> None:
        """Per-variable rows read from the record."""
        if len(rows):
            self._phase_vars(rows.phase, rows.paths).extend(
                rows.steps, rows.wall, {k: getattr(rows, k) for k in VAR_KINDS}, rows.frozen)
            self.last_step = max(self.last_step, int(rows.steps[-1]))
            self.version += 1
            self.var_version += 1

    def add_scalar(self, tag: str, steps: Any, wall: Any, values: Any, bump: bool = True) -> None:
        s = self._scalars.get(tag)
        if s is None:
            s = self._scalars[tag] = _Series()
        s.extend(steps, wall, values)
        if len(steps):
            self.last_step = max(self.last_step, int(np.max(steps)))
        if bump:
            self.version += 1

    def add_event(self, event: E.Event) -> None:
        if isinstance(event, E.Rollback):  # the run went back: so does its record (rundir/trim.py), and so do we
            self.cut_back(event.step)
        self.events.append(event)
        if isinstance(event, E.Start):
            self.start = event
            for phase, paths in event.phase_variables.items():
                self._phase_vars(phase, tuple(paths))
        elif isinstance(event, E.Stop):
            self.stop = event
        label = marker_label(event)
        if label is not None:
            self.markers.append(Marker.of(event, label))
        self.version += 1

    def cut_back(self, step: int, through: E.Event | None = None) -> None:
        """Forget what came after the checkpoint at `step`, as the record on disk is cut (rundir/trim.py): rows after
        `step`, and the events after the checkpoint's own (or after `through`, the last event kept)."""
        for s in self._scalars.values():
            s.truncate(step)
        self._scalars = {tag: s for tag, s in self._scalars.items() if len(s.steps)}
        for pv in self._phases.values():
            pv.truncate(step)
        if through is not None:
            keep = max((i + 1 for i, e in enumerate(self.events) if e == through), default=len(self.events))
        else:
            keep = checkpoint_cut(((e.step, e.kind, i + 1) for i, e in reversed(list(enumerate(self.events)))),
                                  step) or 0
        self.events = self.events[:keep]
        self.markers = [Marker.of(e, label) for e in self.events
                        if (label := marker_label(e)) is not None]
        if self.stop is not None and self.stop not in self.events:
            self.stop = None
        if self.samples is not None and int(self.samples.get("step", 0)) > step:
            self.samples = None  # drawn after the checkpoint, by weights the run went back from (a NaN's)
        self.last_step = min(self.last_step, step)
        self.version += 1
        self.var_version += 1

    def set_samples(self, samples: dict[str, Any]) -> None:
        self.samples = samples
        self.version += 1

    def _phase_vars(self, phase: str, paths: tuple[str, ...]) -> _PhaseVars:
        pv = self._phases.get(phase)
        if pv is None:
            pv = self._phases[phase] = _PhaseVars(tuple(paths))
            self._index()
            self.var_version += 1
        return pv

    def _index(self) -> None:
        """Name every phase's variables again: a phase that trains a variable another phase trains too makes
        both `path@phase` (as `read_scalars` names them, the phases known so far)."""
        phases = list(self._phases.items())
        self._var_index = {}
        for (phase, pv), keys in zip(phases, var_keys([(ph, pv.var_paths) for ph, pv in phases])):
            pv.keys = keys
            for j, key in enumerate(keys):
                self._var_index.setdefault(key, (phase, j))

    # -- reading ---------------------------------------------------------------------------------------------
    @property
    def phases(self) -> list[str]:
        """Phases with a loss series, in the order they first ran (or as the `start` event lists them)."""
        started = list(self.start.phases) if self.start is not None else []
        seen = [t[5:] for t in self._scalars if t.startswith("loss/")]
        return [p for p in started if p in seen] + [p for p in seen if p not in started]

    @property
    def var_paths(self) -> list[str]:
        """The names of the per-variable series, in phase order: a variable's path, or `path@phase` for each
        phase of a variable several phases train. The methods below that take a `path` take these names."""
        return list(self._var_index)

    def var_path(self, key: str) -> str:
        """The variable a series name stands for: `encoder/dense/kernel` for `encoder/dense/kernel@rec`."""
        phase, j = self._var_index[key]
        return self._phases[phase].var_paths[j]

    @property
    def scalar_tags(self) -> list[str]:
        return list(self._scalars)

    def phase_of(self, path: str) -> str:
        return self._var_index[path][0]

    def loss(self, phase: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(steps, wall_time, values) of one phase's loss, every step it ran."""
        return self._scalars[f"loss/{phase}"].arrays()

    def scalar(self, tag: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._scalars[tag].arrays()

    def var_series(self, path: str, kind: str = "update_ratio") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(steps, wall_time, values) of one variable's metric, at the recorded steps."""
        phase, j = self._var_index[path]
        pv = self._phases[phase]
        return pv.steps.view(), pv.wall.view(), pv.vars[kind].view()[:, j]

    def var_block(self, phase: str, kind: str = "update_ratio") -> tuple[tuple[str, ...], np.ndarray, np.ndarray,
                                                                      np.ndarray, np.ndarray]:
        """(names, steps, wall_time, values, frozen) of one phase's per-variable records at once (values and
        frozen: records × variables; names as `var_paths` gives them), for views of hundreds of variables (a
        column each would be a call each)."""
        pv = self._phases[phase]
        return pv.keys, pv.steps.view(), pv.wall.view(), pv.vars[kind].view(), pv.frozen.view()

    @property
    def var_phases(self) -> list[str]:
        """The phases that have per-variable records (or were announced with variables)."""
        return list(self._phases)

    def frozen_series(self, path: str) -> np.ndarray:
        phase, j = self._var_index[path]
        return self._phases[phase].frozen.view()[:, j]

    def frozen_now(self, path: str) -> bool:
        f = self.frozen_series(path)
        return bool(f[-1]) if len(f) else False

    def latest(self, path: str, kind: str = "update_ratio") -> float | None:
        _, _, v = self.var_series(path, kind)
        return float(v[-1]) if len(v) else None

    def start_time(self) -> float:
        """When the run began (seconds since the epoch): its `start` event, else its first recorded wall
        time; what "time since start" counts from when runs are aligned by wall time."""
        if self.start is not None and self.start.time:
            return float(self.start.time)
        firsts = [s.wall.view()[:1] for s in self._scalars.values()]
        firsts += [pv.wall.view()[:1] for pv in self._phases.values()]
        firsts = [float(f[0]) for f in firsts if len(f)]
        return min(firsts) if firsts else 0.0

    def step_time(self, step: int) -> float | None:
        """When `step` ran (seconds since the epoch), interpolated from the loss rows' (step, time); None after
        the last row (or with none)."""
        rows = [self._scalars[t].arrays()[:2] for t in self._scalars if t.startswith("loss/")]
        steps = np.concatenate([r[0] for r in rows]) if rows else np.zeros(0)
        if not len(steps) or step > steps.max():
            return None
        order = np.argsort(steps, kind="stable")
        return float(np.interp(step, steps[order], np.concatenate([r[1] for r in rows])[order]))

    def marker_time(self, m: Marker) -> float:
        """Where `m` goes on a wall-time axis: its step's time for a marker found after its step (a leak found
        at report time would otherwise sit seconds to the right of its step), else its own time."""
        t = self.step_time(m.step) if m.late else None
        return m.time if t is None else t

    def tags(self) -> list[str]:
        out = list(self._scalars)
        for kind in VAR_KINDS:
            out += [f"{kind}/{p}" for p in self._var_index]
        return out

    def series(self, tag: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """By record tag: `loss/D`, `metric/x`, `update_ratio/generator/dense_1/kernel`, ..."""
        if tag in self._scalars:
            return self._scalars[tag].arrays()
        kind, _, rest = tag.partition("/")
        if kind in VAR_KINDS:
            return self.var_series(rest, kind)
        raise KeyError(tag)

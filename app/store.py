"""The window's in-memory copy of the metrics: what the plots draw and the exporter writes.

Plain Python and numpy (no Qt), napari-style: the store is the model, plots are views that read it
when its `version` moved. Losses are kept for every step; per-variable series for the steps the
trainer marks for the record (every `var_every`-th step of each phase, as on disk), so memory stays flat over long runs while the full record stays in the run
directory. A store can also be filled from a finished run directory, for the headless exporter.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from training_core import MetricsBatch, in_scope, read_events, read_scalars

VAR_KINDS = ("update_norm", "update_ratio", "grad_norm")
MARKER_KINDS = ("freeze", "ratio", "lr", "method", "pause", "nan", "leak", "step")


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

    def __len__(self) -> int:
        return self._n


@dataclass
class Marker:
    step: int
    kind: str
    label: str


def marker_label(e: dict[str, Any]) -> str | None:
    """A short label for a control or alarm event, or None if the event is not marked on plots."""
    k = e.get("kind")
    if k == "freeze":
        scopes = e.get("scopes") or []
        return "freeze: " + (", ".join(scopes) if scopes else "none")
    if k == "ratio":
        p = e.get("policy", {})
        if p.get("policy") == "adaptive":
            return "adaptive " + "/".join(f"{t:g}" for t in p.get("thresholds", []))
        return "ratio " + ":".join(str(c) for c in p.get("ratio", []))
    if k == "lr":
        c = e.get("command", {})
        return f"lr {c.get('phase')}={c.get('value'):g}"
    if k == "method":
        return "method " + str(e.get("command", {}).get("method"))
    if k == "pause":
        return "pause" if e.get("reason") in (None, "user") else f"pause ({e.get('reason')})"
    if k == "nan":
        return f"NaN in {e.get('phase')}"
    if k == "leak":
        return f"leak {e.get('variable')}"
    return None


class _PhaseData:
    def __init__(self, var_paths: tuple[str, ...]) -> None:
        self.var_paths = var_paths
        self.steps = GrowArray(np.int64)
        self.wall = GrowArray(np.float64)
        self.loss = GrowArray(np.float64)
        self.var_steps = GrowArray(np.int64)
        self.var_wall = GrowArray(np.float64)
        w = len(var_paths)
        self.vars = {k: GrowArray(np.float32 if k != "update_norm" else np.float64, w) for k in VAR_KINDS}
        self.frozen = GrowArray(bool, w)


class MetricsStore:
    def __init__(self, var_every: int = 10) -> None:
        self.var_every = var_every
        self.clear()

    def clear(self) -> None:
        self._phases: dict[str, _PhaseData] = {}
        self._var_index: dict[str, tuple[str, int]] = {}
        self.events: list[dict[str, Any]] = []
        self.markers: list[Marker] = []
        self.samples: dict[str, Any] | None = None
        self.last_step = 0
        self.version = 0  # bumps on every change; views redraw when it moved

    # -- feeding ---------------------------------------------------------------------------------------
    def add_batch(self, batch: MetricsBatch) -> None:
        for b in batch.blocks:
            pd = self._phases.get(b.phase)
            if pd is None:
                pd = self._phases[b.phase] = _PhaseData(b.var_paths)
                for j, path in enumerate(b.var_paths):
                    self._var_index.setdefault(path, (b.phase, j))
            pd.steps.extend(b.steps)
            pd.wall.extend(b.wall_time)
            pd.loss.extend(b.loss)
            keep = b.record
            if keep.any():
                pd.var_steps.extend(b.steps[keep])
                pd.var_wall.extend(b.wall_time[keep])
                pd.vars["update_norm"].extend(b.update_norm[keep])
                pd.vars["update_ratio"].extend(b.update_ratio[keep])
                pd.vars["grad_norm"].extend(b.grad_norm[keep])
                pd.frozen.extend(b.frozen[keep])
            if len(b.steps):
                self.last_step = max(self.last_step, int(b.steps[-1]))
        self.version += 1

    def add_event(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        label = marker_label(event)
        if label is not None:
            self.markers.append(Marker(int(event.get("at_step", event.get("step", 0))), event["kind"], label))
        self.version += 1

    def set_samples(self, samples: dict[str, Any]) -> None:
        self.samples = samples
        self.version += 1

    # -- reading ---------------------------------------------------------------------------------------
    @property
    def phases(self) -> list[str]:
        return list(self._phases)

    @property
    def var_paths(self) -> list[str]:
        return list(self._var_index)

    def phase_of(self, path: str) -> str:
        return self._var_index[path][0]

    def loss(self, phase: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(steps, wall_time, values) of one phase's loss, every step it ran."""
        pd = self._phases[phase]
        return pd.steps.view(), pd.wall.view(), pd.loss.view()

    def var_series(self, path: str, kind: str = "update_ratio") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(steps, wall_time, values) of one variable's metric, every `var_every` steps."""
        phase, j = self._var_index[path]
        pd = self._phases[phase]
        return pd.var_steps.view(), pd.var_wall.view(), pd.vars[kind].view()[:, j]

    def frozen_series(self, path: str) -> np.ndarray:
        phase, j = self._var_index[path]
        return self._phases[phase].frozen.view()[:, j]

    def frozen_now(self, path: str) -> bool:
        f = self.frozen_series(path)
        return bool(f[-1]) if len(f) else False

    def latest(self, path: str, kind: str = "update_ratio") -> float | None:
        _, _, v = self.var_series(path, kind)
        return float(v[-1]) if len(v) else None

    def tags(self) -> list[str]:
        out = [f"loss/{p}" for p in self._phases]
        for kind in VAR_KINDS:
            out += [f"{kind}/{p}" for p in self._var_index]
        return out

    def series(self, tag: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """By `scalars.csv` tag: `loss/D`, `update_ratio/generator/dense_1/kernel`, ..."""
        kind, _, rest = tag.partition("/")
        if kind == "loss":
            return self.loss(rest)
        if kind in VAR_KINDS:
            return self.var_series(rest, kind)
        raise KeyError(tag)

    # -- from disk -------------------------------------------------------------------------------------
    @classmethod
    def from_run_dir(cls, run_dir: str | Path) -> "MetricsStore":
        """Rebuild a store from a run directory (var_every from its config; frozen from freeze events)."""
        from training_core import read_config
        cfg = read_config(run_dir)
        store = cls(var_every=int(cfg.get("var_every", 10)))
        scalars = read_scalars(run_dir)
        events = read_events(run_dir)
        for e in events:
            store.add_event(e)
        freeze_changes = [(int(e["step"]), e.get("freeze") if e["kind"] == "start" else e.get("scopes", []))
                          for e in events if e["kind"] in ("start", "freeze")]
        phases = [t.split("/", 1)[1] for t in scalars if t.startswith("loss/")]
        for phase in phases:
            s = scalars[f"loss/{phase}"]
            pd = store._phases[phase] = _PhaseData(())
            pd.steps.extend(s.steps)
            pd.wall.extend(s.wall_time)
            pd.loss.extend(s.values)
            store.last_step = max(store.last_step, int(s.steps[-1]) if len(s.steps) else 0)
        # per-variable: group by the phase whose loss rows share the step
        step_phase = {}
        for phase in phases:
            for st in store._phases[phase].steps.view().tolist():
                step_phase[st] = phase
        by_phase: dict[str, list[str]] = {}
        for tag in scalars:
            kind, _, path = tag.partition("/")
            if kind == "update_norm" and len(scalars[tag].steps):
                by_phase.setdefault(step_phase.get(int(scalars[tag].steps[0]), phases[0]), []).append(path)
        for phase, paths in by_phase.items():
            pd = _PhaseData(tuple(paths))
            steps = scalars[f"update_norm/{paths[0]}"].steps
            pd.steps, pd.wall, pd.loss = store._phases[phase].steps, store._phases[phase].wall, store._phases[phase].loss
            pd.var_steps.extend(steps)
            pd.var_wall.extend(scalars[f"update_norm/{paths[0]}"].wall_time)
            for kind in VAR_KINDS:
                pd.vars[kind].extend(np.stack([scalars[f"{kind}/{p}"].values for p in paths], 1))
            scopes_at = [next((sc for s0, sc in reversed(freeze_changes) if s0 < st), []) for st in steps.tolist()]
            pd.frozen.extend(np.array([[any(in_scope(p, sc) for sc in scopes) for p in paths]
                                       for scopes in scopes_at], dtype=bool).reshape(len(steps), len(paths)))
            store._phases[phase] = pd
            for j, p in enumerate(paths):
                store._var_index[p] = (phase, j)
        store.version += 1
        return store

"""Each variable's and each scope's state, derived from a `RunData`: the scope tree's value and state
columns, computed without Qt so the window, a review of a finished run and a future attach show the
same words for the same numbers.

A variable reads "frozen" once the core *reports* it frozen (what was measured, not what was asked),
"LEAK" while a frozen variable still moves (the gate method: optimizer momentum or weight decay),
"leaked" once it has stopped moving again, and "no update" when it is not frozen but its latest
update was exactly 0 (converged below float32 resolution, or a zero gradient): a zero is not a
freeze. A scope reads "frozen" when every variable under it is, "partly" when some are, and
LEAK/leaked when any variable under it did. Leaks are forgotten when the
freeze set or the method changes (the `leak` events before that describe another configuration).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from training_core.base import events as E
from training_core.base.scopes import ScopeNode
from training_core.runs.data import RunData

#: every state a row can show, widest first (the tree sizes its column once for these)
STATES = ("no update", "leaked", "frozen", "partly", "LEAK", "")
FROZEN_STATES = ("frozen", "LEAK", "leaked")


@dataclass(frozen=True)
class VarState:
    value: float | None  # latest ‖ΔW‖/‖W‖ (a scope: the largest under it); None before any was recorded
    state: str  # one of STATES
    tip: str = ""  # why, in words (which step leaked, how many variables are frozen)

    @property
    def alarm(self) -> bool:
        return self.state in ("LEAK", "leaked")


class VariableStates:
    """`update(data)` recomputes `states` (path -> VarState, variables and scopes) when `data` changed.

    Cost is proportional to the tree, not to the run's length (one latest value per variable), and
    nothing is recomputed while the data's `version` stands still, so a 25 Hz view can call it freely.
    """

    def __init__(self, tree: ScopeNode | None = None) -> None:
        self.states: dict[str, VarState] = {}
        self.set_tree(tree)

    def set_tree(self, tree: ScopeNode | None) -> None:
        """The variables and scopes to report on (the prepared experiment's tree)."""
        nodes = [n for n in tree.walk() if n.path] if tree is not None else []
        self._vars = [v.path for v in tree.all_variables()] if tree is not None else []
        self._scopes = {n.path: [v.path for v in n.all_variables()] for n in nodes}
        self._rollup = _Rollup(self._vars, self._scopes)
        self.reset()

    def reset(self) -> None:
        """Forget what was computed: the data was cleared for a new run (its version starts over)."""
        self._version = -1
        self._events_seen = 0
        self._reset_step = -1  # the step of the last freeze-set or method change
        self._leaks: dict[str, E.Leak] = {}
        self._data: RunData | None = None
        self._generation = -1
        self.states = {}

    def update(self, data: RunData) -> bool:
        """Recompute if `data` moved since the last call (or is another `RunData`); True if it did."""
        if data is self._data and data.version == self._version:
            return False
        if data is not self._data or data.generation != self._generation:  # another run, or read afresh
            self._events_seen, self._leaks, self._reset_step = 0, {}, -1
        self._data, self._version, self._generation = data, data.version, data.generation
        self._collect_leaks(data)
        latest = _latest(data)
        states: dict[str, VarState] = {}
        for path in self._vars:
            states[path] = self._variable(path, *latest[path]) if path in latest else VarState(None, "")
        states.update(self._rollup.scopes([states[p] for p in self._vars], [p in latest for p in self._vars]))
        self.states = states
        return True

    def _variable(self, path: str, value: float | None, norm: float | None, frozen: bool) -> VarState:
        leak = self._leaks.get(path) if frozen else None
        if leak is None:
            if not frozen and value == 0:
                return VarState(value, "no update", "not frozen, but its latest update was exactly 0: converged "
                                                    "below float32 resolution, or a zero gradient")
            return VarState(value, "frozen" if frozen else "")
        moving = (norm or 0.0) > 0
        tip = (f"frozen, but moved at step {leak.at_step} (||ΔW|| = {leak.update_norm:.3g}) with the "
               f"{leak.method} method: optimizer momentum {'still moves it' if moving else 'moved it for a while'}")
        if leak.method == "fit":  # a run training_core.monitor.Monitor records: nobody freezes fit()'s step
            tip = (f"marked frozen, but moved at step {leak.at_step} (||ΔW|| = {leak.update_norm:.3g}): fit()'s "
                   f"compiled train_step still updates it (trainable = False after compile does not reach it)")
        return VarState(value, "LEAK" if moving else "leaked", tip)

    def _collect_leaks(self, data: RunData) -> None:
        events = data.events
        if len(events) < self._events_seen:  # the data was cleared: a new run
            self._events_seen, self._leaks, self._reset_step = 0, {}, -1
        for e in events[self._events_seen:]:
            if isinstance(e, E.Leak) and e.at_step > self._reset_step:  # not a step of an earlier configuration
                self._leaks[e.variable] = e
            elif isinstance(e, (E.Freeze, E.Method)):
                self._leaks, self._reset_step = {}, e.step
        self._events_seen = len(events)


def _latest(data: RunData) -> dict[str, tuple[float | None, float | None, bool]]:
    """path -> (latest ‖ΔW‖/‖W‖, latest ‖ΔW‖, frozen now) of every variable, read a phase at a time (a
    call per variable took 2.7 ms a refresh at 500 variables). A variable several phases train is there by
    each of its series' names (path@phase: the Runs tab's tree lists those) and by its path, with the newest
    record of any of its phases (the scope tree lists paths)."""
    out: dict[str, tuple[float | None, float | None, bool]] = {}
    newest: dict[str, int] = {}
    for phase in data.var_phases:
        keys, steps, _, ratio, frozen = data.var_block(phase, "update_ratio")
        if not len(steps):
            row: list = [(None, None, False)] * len(keys)
        else:
            norm = data.var_block(phase, "update_norm")[3][-1].tolist()
            row = list(zip(ratio[-1].tolist(), norm, frozen[-1].tolist()))
        last = int(steps[-1]) if len(steps) else -1
        for key, r in zip(keys, row):
            out[key] = r
            path = data.var_path(key)
            if path != key and (path not in newest or last > newest[path]):
                out[path], newest[path] = r, last
    return out


_ALARM = {"LEAK": 2, "leaked": 1}  # a scope shows the worse of its variables' alarms


class _Rollup:
    """Every scope's state from its variables' at once, with numpy: the variables under each scope, listed
    one scope after another, are one index array, so a scope's largest value, frozen count and worst alarm
    are one `reduceat` each. Why: a scope at a time in Python took ~3 ms a refresh at 500 variables (252
    scopes, 1,000 scope-variable pairs), 35x the 12-variable tree's cost.

    A scope's value is the largest value under it, ignoring NaN (NaN only if every recorded value is
    NaN; None before any was recorded)."""

    def __init__(self, paths: list[str], scopes: dict[str, list[str]]) -> None:
        self.index = index = {p: i for i, p in enumerate(paths)}
        self.names = [s for s, under in scopes.items() if under]
        self.empty = [s for s, under in scopes.items() if not under]
        self.under = [scopes[s] for s in self.names]
        self.flat = np.array([index[p] for s in self.names for p in scopes[s]], dtype=np.intp)
        self.starts = np.cumsum([0] + [len(u) for u in self.under[:-1]], dtype=np.intp)

    def scopes(self, states: list[VarState], tracked: list[bool]) -> dict[str, VarState]:
        """`states` are the variables', in the order given at construction; `tracked`, whether each is one a
        phase trains (it has update records). Only those count towards "frozen": a frozen BatchNormalization
        layer's moving statistics have no records, and made it read "partly"."""
        out = {s: VarState(None, "") for s in self.empty}
        if not self.names:
            return out
        value = np.array([np.nan if s.value is None else s.value for s in states], dtype=np.float64)
        has = np.array([s.value is not None for s in states])
        frozen = np.array([s.state in FROZEN_STATES for s in states], dtype=np.int64)
        alarm = np.array([_ALARM.get(s.state, 0) for s in states], dtype=np.int64)
        flat, starts = self.flat, self.starts
        with np.errstate(invalid="ignore"):
            top = np.fmax.reduceat(value[flat], starts).tolist()
        any_value = np.logical_or.reduceat(has[flat], starts).tolist()
        worst = np.maximum.reduceat(alarm[flat], starts).tolist()
        counted = np.asarray(tracked, dtype=np.int64)
        sizes = np.add.reduceat(counted[flat], starts).tolist()
        n_frozen = np.add.reduceat((frozen * counted)[flat], starts).tolist()
        for name, under, size, v, got, n, w in zip(self.names, self.under, sizes, top, any_value, n_frozen, worst):
            if w:
                state = "LEAK" if w == 2 else "leaked"
                tip = "leaked: " + ", ".join(p for p in under if states[self.index[p]].alarm)
            else:
                state = "frozen" if n and n == size else "partly" if n else ""
                tip = f"{n} of {size} variables frozen" if n else ""
            out[name] = VarState(v if got else None, state, tip)
        return out


def frozen_spans(data: RunData, path: str) -> list[tuple[int, int]]:
    """(first, last) recorded step of each stretch in which `path` was frozen, in order: a variable's
    frozen history, as the record holds it (per-variable rows, every `var_every`-th step of its phase).
    Vectorised: the Runs tab asks for every variable of the run it shows, 10^5 rows each in a long run."""
    steps, _, _ = data.var_series(path)
    frozen = np.asarray(data.frozen_series(path), dtype=bool)
    n = min(len(steps), len(frozen))
    edges = np.diff(np.concatenate(([False], frozen[:n], [False])).astype(np.int8))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    return [(int(steps[a]), int(steps[b])) for a, b in zip(starts, ends)]


def spans_text(spans: list[tuple[int, int]]) -> str:
    return ", ".join(f"{a:,}" if a == b else f"{a:,}–{b:,}" for a, b in spans)

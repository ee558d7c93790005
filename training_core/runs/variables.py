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

from collections.abc import Mapping
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
    nothing is recomputed while the per-variable rows and the leaks stand still (a tick of losses only), so
    a 25 Hz view can call it freely. What is recomputed is numpy arrays, a pass per phase and one for the
    scopes; `states` builds a row's `VarState` when it is read (the tree reads the rows on screen): 500
    variables' and 252 scopes' objects a tick were most of a wide refresh's states (~1 ms against 0.1).
    """

    def __init__(self, tree: ScopeNode | None = None) -> None:
        self.states: Mapping[str, VarState] = {}
        self.set_tree(tree)

    def set_tree(self, tree: ScopeNode | None) -> None:
        """The variables and scopes to report on (the prepared experiment's tree)."""
        nodes = [n for n in tree.walk() if n.path] if tree is not None else []
        self._vars = [v.path for v in tree.all_variables()] if tree is not None else []
        self._scopes = {n.path: [v.path for v in n.all_variables()] for n in nodes}
        self._rollup = _Rollup(self._vars, self._scopes)
        where: dict[str, int] = {p: i for i, p in enumerate(self._vars)}  # a variable: i; a scope: -1 - j
        where.update({s: -1 - j for j, s in enumerate(self._rollup.empty + self._rollup.names)})
        self._where = where
        self.reset()

    def reset(self) -> None:
        """Forget what was computed: the data was cleared for a new run (its version starts over)."""
        self._version = -1
        self._events_seen = 0
        self._reset_step = -1  # the step of the last freeze-set or method change
        self._leaks: dict[str, E.Leak] = {}
        self._leak_changes = 0  # bumps when `_leaks` changes
        self._data: RunData | None = None
        self._generation = -1
        self._inputs: tuple | None = None  # what the states were computed from (`update`)
        self._plans: dict[str, tuple] = {}  # phase -> (its keys, where its columns go) (`_plan`)
        self.states = {}

    def update(self, data: RunData) -> bool:
        """Recompute if what the states read in `data` moved since the last call (or it is another `RunData`);
        True if it did."""
        if data is self._data and data.version == self._version:
            return False
        if data is not self._data or data.generation != self._generation:  # another run, or read afresh
            self._events_seen, self._leaks, self._reset_step = 0, {}, -1
            self._leak_changes += 1
            self._plans = {}
        self._data, self._version, self._generation = data, data.version, data.generation
        self._collect_leaks(data)
        inputs = (id(data), data.generation, data.var_version, self._leak_changes)
        if inputs == self._inputs:  # losses, samples, other events: nothing a row shows
            return False
        self._inputs = inputs
        self.states = _States(self._where, self._vars, self._rollup, self._leaks, *self._arrays(data))
        return True

    def _arrays(self, data: RunData) -> tuple[np.ndarray, ...]:
        """Every variable's latest (‖ΔW‖/‖W‖, ‖ΔW‖, frozen), whether it has a record and whether a phase trains
        it, read a phase at a time. A variable several phases train is there by each of its series' names
        (path@phase: the Runs tab's tree lists those) and by its path, with the newest record of any of its
        phases (the scope tree lists paths)."""
        n = len(self._vars)
        value, norm = np.full(n, np.nan), np.zeros(n)
        frozen, recorded, tracked = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
        newest = np.full(n, -np.inf)
        for phase in data.var_phases:
            keys, steps, _, ratio, fr = data.var_block(phase, "update_ratio")
            (d_cols, d_rows), (s_cols, s_rows) = self._plan(data, phase, keys)
            last = float(steps[-1]) if len(steps) else -1.0
            take = newest[s_rows] < last  # the newest record of a variable several phases train
            cols, rows = np.concatenate([d_cols, s_cols[take]]), np.concatenate([d_rows, s_rows[take]])
            newest[s_rows[take]] = last
            tracked[rows] = True
            if len(steps):
                value[rows] = ratio[-1][cols]
                norm[rows] = data.var_block(phase, "update_norm")[3][-1][cols]
                frozen[rows], recorded[rows] = fr[-1][cols], True
            else:
                value[rows], norm[rows], frozen[rows], recorded[rows] = np.nan, 0.0, False, False
        code = np.where(frozen, _FROZEN, np.where(recorded & (value == 0), _NO_UPDATE, _NONE))
        for path in self._leaks:
            i = self._where.get(path, -1)
            if i >= 0 and frozen[i]:
                code[i] = _LEAK if norm[i] > 0 else _LEAKED
        return value, recorded, tracked, code

    def _plan(self, data: RunData, phase: str, keys: tuple[str, ...]) -> tuple:
        """Where a phase's columns go: ((columns, rows) of the names that are rows, (columns, rows) of the
        paths of variables several phases train that are rows), kept while the phase's names stand."""
        got = self._plans.get(phase)
        if got is None or got[0] is not keys:
            index = {p: i for i, p in enumerate(self._vars)}
            direct = [(j, index[k]) for j, k in enumerate(keys) if k in index]
            shared = [(j, index[p]) for j, k in enumerate(keys) if (p := data.var_path(k)) != k and p in index]
            got = self._plans[phase] = (keys, tuple(np.array(c, dtype=np.intp).reshape(-1, 2).T
                                                    for c in (direct, shared)))
        return got[1]

    def _collect_leaks(self, data: RunData) -> None:
        events = data.events
        if len(events) < self._events_seen:  # the data was cleared: a new run
            self._events_seen, self._leaks, self._reset_step = 0, {}, -1
            self._leak_changes += 1
        for e in events[self._events_seen:]:
            if isinstance(e, E.Leak) and e.at_step > self._reset_step:  # not a step of an earlier configuration
                self._leaks[e.variable] = e
                self._leak_changes += 1
            elif isinstance(e, (E.Freeze, E.Method)):
                self._leaks, self._reset_step = {}, e.step
                self._leak_changes += 1
        self._events_seen = len(events)


_NONE, _FROZEN, _NO_UPDATE, _LEAK, _LEAKED = range(5)  # a variable's state, as `_arrays` codes it
_CODE_STATE = ("", "frozen", "no update", "LEAK", "leaked")
_FROZEN_CODES = np.array([_FROZEN, _LEAK, _LEAKED])
_ALARM_OF_CODE = np.array([0, 0, 0, 2, 1], dtype=np.int64)  # LEAK 2, leaked 1: a scope shows the worse
NO_UPDATE_TIP = ("not frozen, but its latest update was exactly 0: converged below float32 resolution, or a "
                 "zero gradient")


def leak_tip(leak: E.Leak, moving: bool) -> str:
    """Why a frozen variable reads LEAK (it still moves) or leaked (it moved for a while)."""
    if leak.method in E.FIT_LEAK_CAUSES:  # a run training_core.monitor.Monitor records: nobody freezes fit()'s step
        return (f"marked frozen, but moved at step {leak.at_step} (||ΔW|| = {leak.update_norm:.3g}): "
                f"{E.FIT_LEAK_CAUSES[leak.method]}")
    return (f"frozen, but moved at step {leak.at_step} (||ΔW|| = {leak.update_norm:.3g}) with the "
            f"{leak.method} method: optimizer momentum {'still moves it' if moving else 'moved it for a while'}")


class _States(Mapping):
    """path -> VarState of the variables and scopes, from `VariableStates._arrays`' numbers and their scopes'
    rollup; a row's VarState is made when it is first read."""

    def __init__(self, where: dict[str, int], paths: list[str], rollup: "_Rollup", leaks: dict[str, E.Leak],
                 value: np.ndarray, recorded: np.ndarray, tracked: np.ndarray, code: np.ndarray) -> None:
        self._where, self._paths, self._leaks = where, paths, dict(leaks)
        self._value, self._recorded, self._code = value, recorded, code
        self._scopes = rollup.arrays(value, recorded, np.isin(code, _FROZEN_CODES), _ALARM_OF_CODE[code], tracked)
        self._rollup = rollup
        self._made: dict[str, VarState] = {}

    def __getitem__(self, path: str) -> VarState:
        got = self._made.get(path)
        if got is None:
            i = self._where[path]
            got = self._made[path] = self._variable(i) if i >= 0 else self._scope(-1 - i)
        return got

    def __iter__(self):
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, path: object) -> bool:
        return path in self._where

    def _variable(self, i: int) -> VarState:
        value = float(self._value[i]) if self._recorded[i] else None
        code = int(self._code[i])
        if code in (_LEAK, _LEAKED):
            return VarState(value, _CODE_STATE[code], leak_tip(self._leaks[self._paths[i]], code == _LEAK))
        return VarState(value, _CODE_STATE[code], NO_UPDATE_TIP if code == _NO_UPDATE else "")

    def _scope(self, j: int) -> VarState:
        r = self._rollup
        if j < len(r.empty):
            return VarState(None, "")
        return r.scope_state(j - len(r.empty), self._scopes, lambda p: self._code[r.index[p]] in (_LEAK, _LEAKED))


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
        value = np.array([np.nan if s.value is None else s.value for s in states], dtype=np.float64)
        has = np.array([s.value is not None for s in states], dtype=bool)
        frozen = np.array([s.state in FROZEN_STATES for s in states], dtype=bool)
        alarm = np.array([_ALARM.get(s.state, 0) for s in states], dtype=np.int64)
        got = self.arrays(value, has, frozen, alarm, np.asarray(tracked, dtype=bool))
        for j, name in enumerate(self.names):
            out[name] = self.scope_state(j, got, lambda p: states[self.index[p]].alarm)
        return out

    def arrays(self, value: np.ndarray, has: np.ndarray, frozen: np.ndarray, alarm: np.ndarray,
               tracked: np.ndarray) -> tuple[np.ndarray, ...] | None:
        """Per scope (of `names`): largest value, whether any has one, variables tracked, frozen among them,
        worst alarm; from the variables' arrays in the order given at construction."""
        if not self.names:
            return None
        flat, starts = self.flat, self.starts
        with np.errstate(invalid="ignore"):
            top = np.fmax.reduceat(value[flat], starts)
        counted = tracked.astype(np.int64)
        return (top, np.logical_or.reduceat(has[flat], starts), np.add.reduceat(counted[flat], starts),
                np.add.reduceat((frozen * counted)[flat], starts), np.maximum.reduceat(alarm[flat], starts))

    def scope_state(self, j: int, got: tuple[np.ndarray, ...], alarmed) -> VarState:
        """Scope `names[j]`'s VarState from `arrays`' output; `alarmed(path)`: whether a variable leaked."""
        top, any_value, sizes, n_frozen, worst = got
        size, n, w = int(sizes[j]), int(n_frozen[j]), int(worst[j])
        if w:
            state = "LEAK" if w == 2 else "leaked"
            tip = "leaked: " + ", ".join(p for p in self.under[j] if alarmed(p))
        else:
            state = "frozen" if n and n == size else "partly" if n else ""
            tip = f"{n} of {size} variables frozen" if n else ""
        return VarState(float(top[j]) if any_value[j] else None, state, tip)


_ALARM = {"LEAK": 2, "leaked": 1}  # a scope shows the worse of its variables' alarms


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


def unrecorded_paths(data: RunData) -> list[str]:
    """The variables the run's `start` event lists that have no ‖ΔW‖ column: no phase trains them (a loop's EMA
    copy, a layer's statistics). A review lists them as the attached window's tree does, or a run opened with
    `--open` looked as if its model had no EMA copy at all (damaged entries of the event are skipped)."""
    from training_core.base.scopes import VarInfo
    recorded = {p.split("@")[0] for p in data.var_paths}
    out = []
    for d in data.start.variables if data.start is not None else ():
        try:
            path = VarInfo.from_dict(d).path
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
        if path not in recorded and path not in out:
            out.append(path)
    return out

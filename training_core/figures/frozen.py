"""What the update plot's legend calls a frozen (grey, dotted) stretch: the words say what happened in that run.

Why by the run: a record's `frozen` column means different things. In a run Freezeframe trains, a variable was
frozen by the freeze set, and it stayed still (the exact method: ΔW = 0) or the gate method left it to the
optimizer's momentum and decay (ΔW ≠ 0, the gate's known leak). In a run `training_core.monitor` records (the
user's `fit()` or own loop: config.toml's `monitor`), a variable counts as frozen when its `trainable` flag reads
False (or a scope over it was declared frozen), and one that moved was trained anyway: a leak of the user's code,
not of any gate. The legend said "frozen (gate: ΔW ≠ 0, the leak)" of a `fit()` run that never had a gate.

Also where a change of frozen state is drawn (`freeze_at`, `state_changes`): at the freeze's own step, as a
step, in the window (app/plots/update_stretches.py) and the export (app/export/curves.py) alike.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from training_core.base import events as E
from training_core.figures.curves import Curve, LegendEntry

if TYPE_CHECKING:
    from training_core.runs import RunData

FROZEN_EXACT = "frozen (ΔW = 0)"
FROZEN_LEAKING = "frozen (gate: ΔW ≠ 0, the leak)"  # the gate method: momentum and decay still move it
FROZEN_MOVED = "frozen (moved: a leak)"  # frozen by a scope, moved without a gate: the code trained it anyway
NOT_TRAINABLE_EXACT = "not trainable (ΔW = 0)"
NOT_TRAINABLE_MOVED = "not trainable (moved: a leak)"  # a monitor run's `trainable = False` that fit() ignored
FROZEN_MIXED = "frozen (ΔW ≠ 0: a leak)"  # overlaid runs whose moves have different causes


def frozen_word(store: "RunData | None") -> str:
    """"not trainable" for a run the monitor recorded whose frozen marks can only be `trainable = False` flags
    (no scope was ever declared frozen in it), else "frozen"."""
    if store is None or not store.monitor:
        return "frozen"
    declared = bool(store.start is not None and store.start.freeze) or any(
        isinstance(e, E.Freeze) and e.scopes for e in store.events)
    return "frozen" if declared else "not trainable"


def used_gate(store: "RunData | None") -> bool:
    """Whether the run froze with the gate method at some time (a record without a start event: assumed, as a
    frozen variable that moved in a Freezeframe run can only have moved through the gate)."""
    if store is None or store.start is None:
        return True
    return store.start.method == "gate" or any(isinstance(e, E.Method) and e.method == "gate" for e in store.events)


def moved_while_frozen(c: Curve) -> bool:
    """Whether a frozen record of `c` is not exactly 0."""
    return c.frozen is not None and bool(np.any(c.values[np.asarray(c.frozen, bool)[:len(c.values)]] != 0))


def frozen_text(store: "RunData | None", moved: bool) -> str:
    """The legend's words for one run's frozen stretches, `moved` if any frozen record is not exactly 0."""
    word = frozen_word(store)
    if not moved:
        return NOT_TRAINABLE_EXACT if word == "not trainable" else FROZEN_EXACT
    if word == "not trainable":
        return NOT_TRAINABLE_MOVED
    if store is not None and store.monitor:
        return FROZEN_MOVED
    return FROZEN_LEAKING if used_gate(store) else FROZEN_MOVED


def frozen_label(name: str, store: "RunData | None", moved: bool) -> str:
    """A frozen variable's name in a legend: "name (frozen)" or "name (not trainable)" (the run's word) while it
    stayed still, and with the words of `frozen_text` once a frozen record moved, "name — not trainable (moved: a
    leak)". The export's scope tree and the window's update legend both name a variable by this, so the window no
    longer called a `trainable = False` variable that fit() trained anyway just "(frozen)"."""
    if not moved:
        return f"{name} ({frozen_word(store)})"
    return f"{name} — {frozen_text(store, True)}"


def frozen_entry(curves: Sequence[Curve], stores: dict[str, "RunData"] | None = None) -> LegendEntry:
    """The legend's entry for frozen stretches, by what happened in the runs (`stores`: run label -> RunData).
    "ΔW = 0" only when every frozen record is exactly 0; a move is called by its cause (module docstring)."""
    stores = stores or {}
    frozen = [c for c in curves if c.frozen is not None and np.asarray(c.frozen, bool).any()]
    moved = [c for c in frozen if moved_while_frozen(c)]
    if moved:
        texts = {frozen_text(stores.get(c.run), True) for c in moved}
    else:
        texts = {frozen_text(stores.get(c.run), False) for c in frozen} or {FROZEN_EXACT}
    if len(texts) == 1:
        text = texts.pop()
    else:
        text = FROZEN_MIXED if moved else FROZEN_EXACT
    return LegendEntry(text, "muted", frozen=True)


def freeze_at(data: "RunData", after: int, upto: int, wall: float) -> tuple[int, float]:
    """(step, time) of the freeze change between records at steps `after` and `upto`: the last `freeze` event
    in [after, upto), else the later record itself.

    Why `after` is in and `upto` out: a freeze's step is the steps done when it took effect, so the record at
    its step is the last one trained (its update ran first) and the next record is the first frozen. A freeze
    at a record step was searched in (after, upto], missed, and drawn as a drop at the next record; one at the
    later record's step cannot have changed that record (and drawing at `upto` is the fallback anyway)."""
    for e in reversed(data.markers):
        if e.kind == "freeze" and after <= e.step < upto:
            return e.step, e.time or wall
        if e.step < after:
            break
    return upto, wall


def state_changes(data: "RunData", steps: np.ndarray, wall: np.ndarray,
                  frozen: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(record indices, steps, times) of each change of frozen state in a series: the first record of the new
    state, and the step and time it changed at (`freeze_at`), where a figure draws the step. Joined straight,
    the records around a freeze sloped from the last trained level down to the "0" floor, crossing the
    freeze's marker mid-slope."""
    f = np.asarray(frozen[:len(steps)], dtype=bool)
    idx = np.flatnonzero(f[1:] != f[:-1]) + 1
    at = [freeze_at(data, int(steps[i - 1]), int(steps[i]), float(wall[i])) for i in idx.tolist()]
    return idx, np.array([a[0] for a in at], dtype=np.int64), np.array([a[1] for a in at], dtype=np.float64)


def step_x(data: "RunData", steps: np.ndarray, wall: np.ndarray, frozen: np.ndarray | None,
           x_of) -> np.ndarray | None:
    """`Curve.step_x` of a series: per record, the x (`x_of(data, steps, wall)`) its frozen state changed at
    since the record before, NaN where it did not; None if it never changed."""
    if frozen is None:
        return None
    idx, at, t = state_changes(data, steps, wall, frozen)
    if not len(idx):
        return None
    out = np.full(len(steps), np.nan)
    out[idx] = np.asarray(x_of(data, at, t), dtype=np.float64)
    return out

"""What the update plot's legend calls a frozen (grey, dotted) stretch: the words say what happened in that run.

Why by the run: a record's `frozen` column means different things. In a run Freezeframe trains, a variable was
frozen by the freeze set, and it stayed still (the exact method: ΔW = 0) or the gate method left it to the
optimizer's momentum and decay (ΔW ≠ 0, the gate's known leak). In a run `training_core.monitor` records (the
user's `fit()` or own loop: config.toml's `monitor`), a variable counts as frozen when its `trainable` flag reads
False (or a scope over it was declared frozen), and one that moved was trained anyway: a leak of the user's code,
not of any gate. The legend said "frozen (gate: ΔW ≠ 0, the leak)" of a `fit()` run that never had a gate.
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

"""The panels following a run's controls: set afresh from a prepared experiment or a run's record, then,
when another process changed them (an attached run's commands
from elsewhere, or the window's own run steered through its commands.jsonl): only the part that changed is
set. Setting every panel on each change wiped a learning rate the user was typing (and its pending,
debounced send) when an unrelated freeze came in from a shell."""
from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QGroupBox, QSpinBox

from training_core.base.monitored_controls import fixed_controls


TICK_TITLE, FIXED_TITLE = "Scopes — tick to freeze", "Scopes — this run cannot freeze (hover a row for why)"


class ControlsFollower:
    def __init__(self, tree: Any, schedule: Any, steps_spin: QSpinBox) -> None:
        self.tree, self.schedule, self.steps_spin = tree, schedule, steps_spin
        self._shown: tuple | None = None  # what the panels were last set to from a run's controls

    def set_prepared(self, info: Any, states: Any) -> None:
        """Set the tree and the schedule panel afresh from a prepared experiment (or a run's record: `info` a
        `PreparedInfo`), with what such a run refuses disabled (a fit() run: no box to tick, no method, no ratio)."""
        self.forget()
        c, fixed = info.config, fixed_controls(info.config.monitor)
        self.tree.set_tree(info.tree, c.freeze, info.phase_paths, info.stat_paths,
                           stats_freezable=c.monitor != "loop", fixed=fixed.get("freeze", ""))  # (a loop refuses them)
        self.tree.show_states(states)
        box = self.tree.parentWidget()  # (the window's column: its title said "tick" over a tree with no box)
        if isinstance(box, QGroupBox):
            box.setTitle(FIXED_TITLE if "freeze" in fixed else TICK_TITLE)
        self.schedule.set_config(info.phase_names, c.schedule, c.lr, c.freeze_method, c.update_frozen_stats,
                                 has_stats=bool(info.stat_paths))
        self.schedule.set_fixed(fixed)

    def forget(self) -> None:
        """The panels were set afresh (a prepared experiment, a new run): the next change sets them all."""
        self._shown = None

    def rejected(self, kind: str) -> None:
        """A command of `kind` the window sent was refused: the panel it came from shows the refused edit, not
        the run, so its part is set again at the next `show` (a paused run's refusal changed nothing else, and
        without this the combo kept the refused method)."""
        if self._shown is not None:
            part = {"freeze": 0, "steps": 1}.get(kind, 2)  # (ratio, lr, method: the schedule panel)
            self._shown = tuple(None if i == part else x for i, x in enumerate(self._shown))

    def show(self, c: Any) -> None:
        """Show the run's `Controls` `c` where they differ from what was last shown."""
        now = (tuple(c.freeze), c.steps, (repr(c.schedule), repr(sorted(c.lr.items())), c.method,
                                          c.update_frozen_stats))
        last = self._shown or (None, None, None)
        if now[0] != last[0]:
            self.tree.set_frozen(c.freeze)
        if now[1] != last[1]:
            self.steps_spin.setValue(c.steps or 0)  # a resume's new target
        if now[2] != last[2]:
            self.schedule.set_config(self.schedule.phase_names, c.schedule, c.lr, c.method, c.update_frozen_stats)
        self._shown = now

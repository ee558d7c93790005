"""The panels following a run's controls when another process changed them (an attached run's commands
from elsewhere, or the window's own run steered through its commands.jsonl): only the part that changed is
set. Setting every panel on each change wiped a learning rate the user was typing (and its pending,
debounced send) when an unrelated freeze came in from a shell."""
from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QSpinBox


class ControlsFollower:
    def __init__(self, tree: Any, schedule: Any, steps_spin: QSpinBox) -> None:
        self.tree, self.schedule, self.steps_spin = tree, schedule, steps_spin
        self._shown: tuple | None = None  # what the panels were last set to from a run's controls

    def forget(self) -> None:
        """The panels were set afresh (a prepared experiment, a new run): the next change sets them all."""
        self._shown = None

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

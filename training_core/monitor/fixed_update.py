"""`run.apply_gradients` in a loop started with `start_run(..., live_freeze=False)`: `optimizer.apply` on the
variables the run does not freeze, a subset chosen when the step is traced and kept for the run.

Why a second update: exact *live* freezing (monitor/exact_update.py) must put frozen variables back after each
phase's update, inside the user's `tf.function`, and that restore point sits on the step's critical path: on a
ring-size step (3-6 ms) it alone costs 2-5%, more than the monitor's 3% (docs/monitor.md, Cost). A loop whose
freeze set never changes during the run (an ablation's static freeze, a frozen backbone) does not need it: the
set is known before the step is first traced, so the update is what the user's own loop would write, `apply` on
the unfrozen variables, and it is equal to it bit for bit because it is it. What is given up is changing the set
while the loop runs: the window's ticks, `run.send(SetFreeze(...))` and a replay of freeze changes are refused in
one line (own_loop.py), and a change that reached this object after a trace would be a `UserError`, never a
silent no-op (the `trainable = False`-after-compile bug this monitor exists to report).
"""
from __future__ import annotations

from typing import Any, Sequence

from training_core.base.errors import UserError
from training_core.engine.experiment_checks import check_optimizer
from training_core.monitor.exact_update import checked_call


class FixedUpdate:
    """One phase's update with the freeze set fixed once its step is traced (same interface as `ExactUpdate`)."""

    def __init__(self, name: str, optimizer: Any, variables: Sequence[Any]) -> None:
        check_optimizer(name, optimizer)
        self.name, self.opt, self.vars = name, optimizer, list(variables)
        if not optimizer.built:
            optimizer.build(self.vars)
        self._index = {id(v): i for i, v in enumerate(self.vars)}
        self._frozen = [False] * len(self.vars)
        self.traces = 0  # how often a step calling `apply` was traced (or called eagerly)

    def apply(self, grads: Sequence[Any], variables: Sequence[Any]) -> None:
        """`optimizer.apply` on the pairs whose variable is not frozen (a None gradient skipped, as Keras does)."""
        grads, pos = checked_call(self.name, self.vars, self._index, grads, variables)
        variables = list(variables)
        self.traces += 1
        live = [(g, v) for i, g, v in zip(pos, grads, variables) if g is not None and not self._frozen[i]]
        if live:  # (all frozen: the plain loop skips its apply, and Keras' apply([], []) is a no-op too)
            self.opt.apply([g for g, _ in live], [v for _, v in live])

    def all_frozen(self) -> bool:
        return bool(self._frozen) and all(self._frozen)

    def set_frozen(self, mask: Sequence[bool]) -> None:
        """The freeze set, before the step is first traced (the run's start or resume); after it, only the same."""
        mask = [bool(m) for m in mask]
        if mask != self._frozen and self.traces:
            raise UserError(f"phase {self.name!r}: the freeze set cannot change in a loop started with "
                            f"start_run(..., live_freeze=False), its step being traced with the set it started with; "
                            f"leave live_freeze at its default (True) to freeze live")
        self._frozen = mask

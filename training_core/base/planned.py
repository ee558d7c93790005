"""Planned changes: commands a run sends itself at given steps ("freeze the discriminator from step 300").

Why in the configuration and not only in the command line of the process that trains: an ablation
compares "freeze X from the start" with "freeze X from step N", and both must be the same kind of thing,
a setting of the run, that a resume, a rerun (`--config`), a replay and a sweep's table all know. A
planned change is written into `config.toml` as `[[planned]]` tables (`step` plus the command's own
dictionary form: `kind` and its fields), and the run sends it to itself at that step through the same
command path as the window's and `commands.jsonl`'s (observers/planned.py), so it is applied at that
step boundary and logged as its ordinary event (`freeze`, `ratio`, `lr`, `method`), with an id that says
it was planned (`planned-K`).

Only the commands that change what is computed can be planned: freeze, ratio, lr and method.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from training_core.base import commands as C
from training_core.base.alternation import policy_from_dict
from training_core.base.errors import UserError
from training_core.base.scopes import resolve_scopes

#: what may be planned: the commands that change the numbers a run computes
PLANNED_KINDS = (C.SetFreeze.kind, C.SetRatio.kind, C.SetLearningRate.kind, C.SetFreezeMethod.kind)
#: the id of a planned command's event begins with this (a replay leaves those events to the plan)
PLANNED_ID = "planned-"


def planned_id(index: int) -> str:
    """The id the `index`-th planned change is sent with, which its event in `events.jsonl` carries."""
    return f"{PLANNED_ID}{index}"


def is_planned_id(cid: str | None) -> bool:
    return isinstance(cid, str) and cid.startswith(PLANNED_ID)


def planned_commands(entries: Sequence[Mapping[str, Any]]) -> list[tuple[int, C.Command]]:
    """`[[planned]]` entries as (step, command), in the order given; a malformed one is a `UserError`
    naming it (`[[planned]] #2`, as the TOML file writes it, counted from 1) and the fix. Steps need not be sorted: equal or later steps keep their order."""
    out = []
    for i, entry in enumerate(entries):
        where = planned_place(i)
        if not isinstance(entry, Mapping):
            raise UserError(f"{where} must be a table with a step and a command, e.g. "
                            f"{{step = 300, kind = \"freeze\", scopes = [\"discriminator\"]}}")
        d = dict(entry)
        step = d.pop("step", None)
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise UserError(f"{where} needs step = a whole number >= 0 (the step after which it applies), "
                            f"got {step!r}")
        kind = d.get("kind")
        if kind not in PLANNED_KINDS:
            raise UserError(f"{where}: kind {kind!r} cannot be planned; use one of {', '.join(PLANNED_KINDS)}")
        try:
            command = C.command_from_dict(d)
        except UserError as e:
            raise UserError(f"{where}: {e}") from None
        if isinstance(command, C.SetFreezeMethod) and command.method not in C.FREEZE_METHODS:
            raise UserError(f"{where}: freeze method {command.method!r} is unknown; use 'exact' or 'gate'")
        out.append((step, command))
    return out


def planned_place(index: int) -> str:
    """How a message names the `index`-th (0-based) planned change: as the user wrote it, the TOML file's
    `[[planned]]` tables counted from 1 (not the list index `planned[0]`, which nobody typed)."""
    return f"[[planned]] #{index + 1}"


def check_planned(entries: Sequence[Mapping[str, Any]], phase_names: Sequence[str], variables: Sequence[Any]) -> None:
    """The planned changes checked against the prepared experiment, as a new run's own settings are (a
    scope that covers no variable, a phase that does not exist, a ratio of the wrong length), so that a bad
    plan is refused before anything is written rather than `rejected` at its step, hours in. (A planned
    learning rate's value is checked with the configuration, `RunConfig.validate`.)"""
    for i, (step, command) in enumerate(planned_commands(entries)):
        try:
            check_planned_command(command, phase_names, variables)
        except UserError as e:
            raise UserError(f"{planned_place(i)} (the {command.kind} at step {step}): {e}") from None


def check_planned_command(command: C.Command, phase_names: Sequence[str], variables: Sequence[Any]) -> None:
    """One planned command against the experiment (`check_planned`); a sweep's axis checks its own this way."""
    if isinstance(command, C.SetFreeze):
        resolve_scopes(command.scopes, variables)
    elif isinstance(command, C.SetRatio):
        policy_from_dict(command.policy, phase_names)
    elif isinstance(command, C.SetLearningRate) and command.phase not in phase_names:
        raise UserError(f"unknown phase {command.phase!r}; phases are {', '.join(phase_names)}")

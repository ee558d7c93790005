"""The commands that change what trains: freeze set, schedule, learning rate, method, and the ones that
ask for something (samples, a checkpoint, a rollback). Each is a function of the trainer, the command
and its id, applied at a step boundary on the training thread, and logs the event that acknowledges
it; the trainer dispatches them by the table `HANDLERS` (the loop's own commands, pause, resume, step
and stop, stay in trainer.py). A bad value raises `UserError`, which the trainer turns into a
`rejected` event: a typo in a remote command must not end a long run.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from . import commands as C
from . import events as E
from .errors import UserError
from .prepare import set_learning_rate
from .schedule import policy_from_dict
from .scopes import resolve_scopes

if TYPE_CHECKING:
    from .trainer import Trainer


def set_freeze(tr: "Trainer", cmd: C.SetFreeze, cid: str | None) -> None:
    scopes = resolve_scopes(cmd.scopes, tr.prepared.var_infos)
    warnings = tr.set_freeze(scopes, bool(cmd.update_frozen_stats))
    tr.emit(E.Freeze(scopes=list(scopes), update_frozen_stats=bool(cmd.update_frozen_stats),
                     command=cmd.to_dict(), id=cid))
    for w in warnings:  # after the freeze that caused them
        tr.emit(w)


def set_schedule(tr: "Trainer", cmd: C.SetSchedule, cid: str | None) -> None:
    if not isinstance(cmd.policy, dict):
        raise UserError(f"a ratio command needs a policy dictionary, got {cmd.policy!r}")
    new = policy_from_dict(cmd.policy, tr.prepared.phase_names).continue_from(tr.prepared.policy)
    tr.prepared.policy = new
    tr.emit(E.Ratio(policy=new.to_dict(), command=cmd.to_dict(), id=cid))


def set_lr(tr: "Trainer", cmd: C.SetLearningRate, cid: str | None) -> None:
    names = tr.prepared.phase_names
    if cmd.phase not in names:
        raise UserError(f"unknown phase {cmd.phase!r}; phases are {', '.join(names)}")
    set_learning_rate(tr.prepared.optimizers[names.index(cmd.phase)], cmd.phase, cmd.value)
    tr.config.lr[cmd.phase] = float(cmd.value)
    tr.emit(E.LearningRate(phase=cmd.phase, value=float(cmd.value), command=cmd.to_dict(), id=cid))


def set_method(tr: "Trainer", cmd: C.SetFreezeMethod, cid: str | None) -> None:
    tr.set_method(cmd.method)
    tr.emit(E.Method(method=cmd.method, command=cmd.to_dict(), id=cid))


def sample_now(tr: "Trainer", cmd: C.SampleNow, cid: str | None) -> None:
    tr.emit(E.SampleRequested(command=cmd.to_dict(), id=cid))
    tr.sample()


def save_checkpoint(tr: "Trainer", cmd: C.SaveCheckpoint, cid: str | None) -> None:
    tr.emit(E.CheckpointRequested(command=cmd.to_dict(), id=cid))
    tr.save_checkpoint()


def roll_back(tr: "Trainer", cmd: C.RollBack, cid: str | None) -> None:
    from .resume import rollback
    rollback(tr, cmd, cid)
    tr.report_status()  # the step went back


HANDLERS: dict[type[C.Command], Callable[["Trainer", Any, str | None], None]] = {
    C.SetFreeze: set_freeze, C.SetSchedule: set_schedule, C.SetLearningRate: set_lr, C.SetFreezeMethod: set_method,
    C.SampleNow: sample_now, C.SaveCheckpoint: save_checkpoint, C.RollBack: roll_back,
}

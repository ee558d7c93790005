"""The one command table: every command a run takes, each a function of the trainer, the command and its id,
applied at a step boundary on the training thread, logging the event that acknowledges it (with the id).
One device and several workers use the same table and the same paused loop (loop/trainer.py); only where
the commands come from differs (loop/multiworker.py).

A bad value raises `UserError`, which the trainer turns into a `rejected` event: a typo in a remote command
must not end a long run. A command that has nothing to do (Pause while paused) is refused too, not dropped:
an event with its id is a remote sender's acknowledgement.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from training_core.base import commands as C
from training_core.base import events as E
from training_core.base.alternation import policy_from_dict
from training_core.base.config import check_learning_rate
from training_core.base.errors import UserError
from training_core.base.scopes import LIST_SCOPES, resolve_scopes
from training_core.engine.prepare import set_learning_rate

if TYPE_CHECKING:
    from training_core.loop.trainer import Trainer


# -- the loop's own: pause, continue, step, stop ---------------------------------------------------------------
def pause(tr: "Trainer", cmd: C.Pause, cid: str | None) -> None:
    if tr.flow.paused:
        raise UserError("already paused: Pause has nothing to do (send continue to go on)")
    tr.pause("user", cmd, cid, decided=True)


def continue_(tr: "Trainer", cmd: C.Continue, cid: str | None) -> None:
    stepping, tr.flow.steps_left = tr.flow.steps_left is not None, None
    if not (tr.flow.paused or stepping):
        raise UserError("not paused: Continue has nothing to do")
    tr.flow.paused = False  # (a Step count running out would have paused: it trains on now)
    tr.emit(E.Continue(command=cmd.to_dict(), id=cid))
    tr.report_status()


def step(tr: "Trainer", cmd: C.Step, cid: str | None) -> None:
    n = int(cmd.n)
    if n < 1:
        raise UserError(f"step count must be >= 1, got {cmd.n!r}")
    tr.flow.steps_left = n
    tr.emit(E.Step(n=n, command=cmd.to_dict(), id=cid))
    tr.flow.paused = False


def stop(tr: "Trainer", cmd: C.Stop, cid: str | None) -> None:
    tr.flow.stopping = True
    tr.flow.stop_command = C.Envelope(cmd, cid)


# -- what trains: freeze set, ratio, learning rate, method ---------------------------------------------------
def set_freeze(tr: "Trainer", cmd: C.SetFreeze, cid: str | None) -> None:
    # (where the sender sees every scope: the CLI's --list-scopes, or, in a monitored script, its models' paths)
    scopes = resolve_scopes(cmd.scopes, tr.prepared.var_infos, getattr(tr, "scope_hint", LIST_SCOPES))
    warnings = tr.set_freeze(scopes, bool(cmd.update_frozen_stats))
    tr.emit(E.Freeze(scopes=list(scopes), update_frozen_stats=bool(cmd.update_frozen_stats),
                     command=cmd.to_dict(), id=cid))
    for w in warnings:  # after the freeze that caused them
        tr.emit(w)


def set_ratio(tr: "Trainer", cmd: C.SetRatio, cid: str | None) -> None:
    if not isinstance(cmd.policy, dict):
        raise UserError(f"a ratio command needs a policy dictionary, got {cmd.policy!r}")
    owner = "the run" if tr.config.monitor else "the experiment"  # a script's run has no experiment file
    new = policy_from_dict(cmd.policy, tr.prepared.phase_names, owner).continue_from(tr.prepared.policy)
    tr.prepared.policy = new
    tr.emit(E.Ratio(policy=new.to_dict(), command=cmd.to_dict(), id=cid))


def set_lr(tr: "Trainer", cmd: C.SetLearningRate, cid: str | None) -> None:
    names = tr.prepared.phase_names
    if cmd.phase not in names:
        raise UserError(f"unknown phase {cmd.phase!r}; phases are {', '.join(names)}")
    check_learning_rate(cmd.value, f"learning rate for {cmd.phase}")  # as --lr is checked (a rate float32 holds)
    set_learning_rate(tr.prepared.optimizers[names.index(cmd.phase)], cmd.phase, cmd.value)
    tr.config.lr[cmd.phase] = float(cmd.value)
    tr.emit(E.LearningRate(phase=cmd.phase, value=float(cmd.value), command=cmd.to_dict(), id=cid))


def set_method(tr: "Trainer", cmd: C.SetFreezeMethod, cid: str | None) -> None:
    tr.set_method(cmd.method)
    tr.emit(E.Method(method=cmd.method, command=cmd.to_dict(), id=cid))


# -- what it asks for: samples, a checkpoint, a rollback -----------------------------------------------------
def sample_now(tr: "Trainer", cmd: C.SampleNow, cid: str | None) -> None:
    tr.emit(E.SampleRequested(command=cmd.to_dict(), id=cid))
    tr.sample()


def save_checkpoint(tr: "Trainer", cmd: C.SaveCheckpoint, cid: str | None) -> None:
    tr.emit(E.CheckpointRequested(command=cmd.to_dict(), id=cid))
    tr.save_checkpoint()


def rollback(tr: "Trainer", cmd: C.Rollback, cid: str | None) -> None:
    from training_core.loop.restore import rollback as roll
    roll(tr, cmd, cid)
    tr.report_status()  # the step went back


HANDLERS: dict[type[C.Command], Callable[["Trainer", Any, str | None], None]] = {
    C.Pause: pause, C.Continue: continue_, C.Step: step, C.Stop: stop,
    C.SetFreeze: set_freeze, C.SetRatio: set_ratio, C.SetLearningRate: set_lr, C.SetFreezeMethod: set_method,
    C.SampleNow: sample_now, C.SaveCheckpoint: save_checkpoint, C.Rollback: rollback,
}


def apply(tr: "Trainer", env: C.Envelope) -> None:
    """Apply one command; a refused one becomes a `rejected` event with its id."""
    cmd, cid = env
    try:
        handler = HANDLERS.get(type(cmd))
        if handler is None:
            raise UserError(f"unsupported command {cmd!r}")
        handler(tr, cmd, cid)
    except (UserError, TypeError, ValueError) as e:
        message = str(e) if isinstance(e, UserError) else f"{type(e).__name__}: {' '.join(str(e).split())}"
        tr.emit(E.Rejected(message=message, command=cmd.to_dict(), id=cid))

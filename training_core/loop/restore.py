"""Resuming a run in its own directory, and rolling a running one back to a checkpoint.

Both restore a checkpoint and continue from it as if nothing had happened after it, which needs more
than TensorFlow's variables: the host-side state the loop decides with (`host_state`, from the loop's declared `LoopState`): the freeze set
and the method, the schedule with its position in the cycle (and the adaptive policy's pending
switch), each phase's step count (which steps go to the per-variable record: `count % var_every`).
The learning rates are optimizer variables, so the checkpoint restores them; the random generators
are in it too. With that, a run killed at any moment and resumed draws the same batches, takes the
same phases and computes the same losses as the run never interrupted (on the CPU with
`--deterministic`: tests/core/test_resume.py).

Then the record is cut back to the checkpoint (rundir/trim.py), so there is one timeline, and a `resumed`
or `rollback` event says what happened and where the dropped rows went.

What this module uses of the trainer is declared in `Restorable`: the loop's two state records, its
configuration and prepared experiment, the few fields a begun run fills in, and three of its methods.
Where a resume would start, read from the directory alone, is rundir/resume_point.py.
"""
from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any, Protocol, Sequence

from training_core.base import commands as C
from training_core.base import events as E
from training_core.base.alternation import policy_from_dict
from training_core.base.config import RunConfig
from training_core.base.errors import UserError
from training_core.experiment.usercode import first_line
from training_core.loop.state import LoopState
from training_core.rundir.layout import COMMANDS_FILE, CONFIG_FILE, checkpoint_prefix, checkpoint_steps
from training_core.rundir.resume_point import check_target, recorded_sha256
from training_core.rundir.trim import dropped_dir, trim_record


class Restorable(Protocol):
    """What beginning, resuming and rolling back use of a trainer (loop/trainer.py), and nothing else."""

    config: RunConfig
    prepared: Any  # engine.prepare.Prepared
    state: LoopState
    resuming: bool
    run_dir: Path | None  # set here: the run's directory once it begins (a non-chief worker: its scratch)
    lock: Any  # set here: rundir.lock.RunLock
    checkpoints: Any  # set here: engine.checkpoints.CheckpointStore
    scratch_dir: Path | None
    command_file_start: int | None  # set here

    def set_freeze(self, scopes: tuple[str, ...], update_stats: bool) -> list[E.Warning]: ...

    def set_method(self, method: str) -> None: ...

    def emit(self, event: E.Event) -> None: ...

    def sync(self) -> None: ...


HOST_STATE_VERSION = 1


def host_state(tr: Restorable) -> dict[str, Any]:
    """What the loop needs besides TensorFlow's variables to continue exactly (JSON-able)."""
    p, st = tr.prepared, tr.state
    return {"version": HOST_STATE_VERSION, "step": st.step, "steps": tr.config.steps, "freeze": list(st.freeze),
            "update_frozen_stats": bool(tr.config.update_frozen_stats), "method": st.method,
            "policy": p.policy.to_dict(), "policy_state": p.policy.state(), "phase_counts": list(st.phase_counts),
            "lr": dict(tr.config.lr), "rollbacks": st.rollbacks}


def apply_host_state(tr: Restorable, host: dict[str, Any]) -> None:
    """Put the loop back where a checkpoint's host state says (after TensorFlow restored the variables)."""
    p, cfg, st = tr.prepared, tr.config, tr.state
    st.step = int(host["step"])
    for w in tr.set_freeze(tuple(host["freeze"]), bool(host["update_frozen_stats"])):
        tr.emit(w)
    tr.set_method(str(host["method"]))
    p.policy = policy_from_dict(host["policy"], p.phase_names).set_state(host["policy_state"])
    st.phase_counts = [int(c) for c in host["phase_counts"]]
    cfg.freeze, cfg.freeze_method, cfg.schedule = list(st.freeze), st.method, p.policy.to_dict()
    cfg.lr.update({k: float(v) for k, v in host["lr"].items()})


def check_resume_commands(p: Any, commands: Sequence[C.Command]) -> None:
    """The settings given with `--resume` (commands it sends before the run goes on), checked against the
    prepared experiment `p` as a new run's are (prepare.check_controls): sent unchecked, a bad one was only
    `rejected` at the first step boundary, after the record had been cut back and new checkpoints written,
    and the run trained on without it and exited 0. A `UserError` here comes before anything is written."""
    from training_core.engine.prepare import check_controls, set_learning_rate
    rates = [c for c in commands if isinstance(c, C.SetLearningRate)]
    freeze = [s for c in commands if isinstance(c, C.SetFreeze) for s in c.scopes]
    schedule = next((c.policy for c in commands if isinstance(c, C.SetRatio)), None)
    check_controls([c.phase for c in rates], freeze, schedule, p.phase_names, p.var_infos)
    # a bad value, or an optimizer on a learning-rate schedule, as at a new run's start. Setting the rate now is
    # harmless: the checkpoint restores the one it holds, then the command sets this one again.
    for c in rates:
        set_learning_rate(p.optimizers[p.phase_names.index(c.phase)], c.phase, c.value)


def begin(tr: Restorable) -> E.Event:
    """Where a run begins: a new run directory and the `start` event, or (`tr.resuming`) the run's own
    directory, its checkpoint restored and its record cut back to it, and the `resumed` event."""
    from training_core.engine.checkpoints import CheckpointStore
    from training_core.rundir.writer import default_run_dir, prepare_run_dir
    if tr.resuming:
        # commands.jsonl from here on is this process's to apply: the reader starts at this size, not at its
        # size when it starts looking, which comes after the `resumed` event a watcher may already answer
        tr.command_file_start = _size(Path(tr.config.run_dir) / COMMANDS_FILE)
        return resume(tr)
    tr.command_file_start = 0  # a new directory: whatever commands.jsonl holds was written for this run
    p, cfg = tr.prepared, tr.config
    tr.run_dir = prepare_run_dir(cfg.run_dir or default_run_dir(cfg))
    cfg.run_dir = str(tr.run_dir)
    _lock(tr, tr.run_dir)
    tr.checkpoints = CheckpointStore(p, tr.run_dir)
    return E.Start(device=p.device_name, experiment=cfg.experiment_file or cfg.example or "",
                   phases=list(p.phase_names),
                   phase_variables={n: list(paths) for n, paths in zip(p.phase_names, p.phase_paths)},
                   freeze=list(tr.state.freeze), update_frozen_stats=bool(cfg.update_frozen_stats),
                   schedule=p.policy.to_dict(), lr=dict(cfg.lr), method=tr.state.method, run_dir=str(tr.run_dir),
                   steps=cfg.steps, variables=[v.to_dict() for v in p.var_infos],
                   strategy=p.placement.kind, replicas=p.placement.replicas)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _lock(tr: Restorable, run_dir: Path) -> None:
    """One writer per run directory (rundir/lock.py), taken before anything in it is written or cut; the trainer
    releases it after the `stop` event."""
    from training_core.rundir import lock as runlock
    tr.lock = runlock.acquire(run_dir, on_takeover=lambda m: tr.emit(E.Warning(message=m)))


def resume(tr: Restorable) -> E.Resumed:
    """Restore the run directory's checkpoint into a prepared trainer and cut the record back to it."""
    from training_core.engine.checkpoints import CheckpointStore
    cfg = tr.config
    d = Path(cfg.run_dir)
    fix = "give start_run(..., steps=N)" if cfg.monitor == "loop" else "pass --steps N"  # a script has no --steps
    step = check_target(d, cfg.steps, cfg.count, fix)
    started = recorded_sha256(d)
    edited = bool(cfg.experiment_file and cfg.experiment_sha256 and started and cfg.experiment_sha256 != started)
    chief = tr.prepared.placement.chief
    tr.state.step = step  # what happens from here (a lock taken over: a warning) happens at the checkpoint's step
    if chief:  # a non-chief worker only reads the run directory: the chief's checkpoint, its record untouched
        _lock(tr, d)
    tr.checkpoints = CheckpointStore(tr.prepared, d)
    try:
        state = tr.checkpoints.restore(step)
    except Exception as e:  # noqa: BLE001 - TensorFlow's and Keras' errors for a checkpoint that does not fit
        import tensorflow as tf
        # the half-done restore warns about "unrestored values" when its objects are deleted (at exit), on top
        # of the one line below
        tf.get_logger().setLevel("ERROR")
        if _damaged(e):  # the file itself is bad: the experiment is not to blame, and an earlier one may do
            earlier = [s for s in checkpoint_steps(d) if s < step]
            fix = (f"move {checkpoint_prefix(d, step)}.* out of the way to resume from the checkpoint at step "
                   f"{earlier[-1]}" if earlier else f"start the run again with --config {d / CONFIG_FILE}")
            raise UserError(f"the checkpoint at step {step} of {d} is damaged ({first_line(e)}); {fix}",
                            detail=traceback.format_exc()) from None
        raise UserError(f"the checkpoint at step {step} of {d} does not fit the experiment as it is now "
                        f"({first_line(e)}); resume with the experiment file the run started with",
                        detail=traceback.format_exc()) from None
    if edited:  # said once the checkpoint fits it (one that does not is refused with one line, above)
        tr.emit(E.Warning(message=f"{Path(cfg.experiment_file).name} changed since the run started (sha256 "
                                  f"differs); the run continues with the file as it is now"))
    if chief:
        tr.run_dir = d  # from here on the run directory is written to
        apply_host_state(tr, state)
        dropped = _cut_back(tr, step, "resume")
        checkpoint = _rel(tr, checkpoint_prefix(d, step))
    else:  # it goes on checkpointing with the others into its scratch directory (saving is collective)
        tr.run_dir = tr.scratch_dir
        tr.checkpoints = CheckpointStore(tr.prepared, tr.run_dir)
        tr.checkpoints.read_from = d  # a rollback to a checkpoint from before the resume, on every worker
        apply_host_state(tr, state)
        dropped, checkpoint = {}, str(checkpoint_prefix(d, step))
    p = tr.prepared
    return E.Resumed(checkpoint=checkpoint, device=p.device_name, freeze=list(tr.state.freeze),
                     update_frozen_stats=bool(cfg.update_frozen_stats), schedule=p.policy.to_dict(),
                     lr=dict(cfg.lr), method=tr.state.method, steps=cfg.steps, dropped=dropped, strategy=p.placement.kind,
                     replicas=p.placement.replicas)


def rollback(tr: Restorable, cmd: C.Rollback, cid: str | None) -> None:
    """Apply a `Rollback` command at a step boundary (the training thread)."""
    from training_core.engine.prepare import set_learning_rate
    names = tr.prepared.phase_names
    steps = tr.checkpoints.steps()
    if not isinstance(cmd.step, int) or cmd.step not in steps:
        raise UserError(f"there is no checkpoint at step {cmd.step!r}; checkpoints are at steps "
                        f"{', '.join(map(str, steps))}")
    if cmd.phase is not None and cmd.phase not in names:
        raise UserError(f"unknown phase {cmd.phase!r}; phases are {', '.join(names)}")
    factor = float(cmd.lr_factor)
    if not 0 < factor <= 1:
        raise UserError(f"lr_factor must be in (0, 1], got {cmd.lr_factor!r}")
    import keras
    opt = tr.prepared.optimizers[names.index(cmd.phase)] if cmd.phase is not None else None
    # the rate in use when the NaN came, lowered: rolling back to the same checkpoint again lowers it again
    lr = None if opt is None else float(keras.ops.convert_to_numpy(opt.learning_rate)) * factor
    from_step, rollbacks = tr.state.step, tr.state.rollbacks
    tr.sync()  # everything up to now is in the record before it is cut
    apply_host_state(tr, tr.checkpoints.restore(cmd.step))
    tr.state.rollbacks = rollbacks + 1
    tr.state.nan_at = None
    dropped = _cut_back(tr, cmd.step, "rollback")
    tr.emit(E.Rollback(from_step=from_step, checkpoint=_rel(tr, checkpoint_prefix(tr.run_dir, cmd.step)),
                       reason=str(cmd.reason), count=tr.state.rollbacks, dropped=dropped, command=cmd.to_dict(), id=cid))
    if opt is not None and lr is not None and factor != 1.0:
        set_learning_rate(opt, cmd.phase, lr)
        tr.config.lr[cmd.phase] = lr
        tr.emit(E.LearningRate(phase=cmd.phase, value=lr))


def _damaged(e: BaseException) -> bool:
    """Whether restoring failed because the checkpoint's files are cut or corrupt (not because the
    experiment's variables no longer match it): TensorFlow's DataLossError (a bad checksum, an index that
    is not an sstable) and the reader's IndexError for a data file cut short."""
    import tensorflow as tf
    if isinstance(e, (tf.errors.DataLossError, IndexError)):
        return True
    text = str(e)
    return any(s in text for s in ("Read less bytes", "sstable", "Checksum does not match", "truncated"))


def _cut_back(tr: Restorable, step: int, label: str) -> dict[str, Any]:
    keep = dropped_dir(tr.run_dir, label)
    counts: dict[str, Any] = trim_record(tr.run_dir, step, keep)
    counts["checkpoints"] = tr.checkpoints.drop_after(step, keep / "checkpoints")
    counts["dir"] = _rel(tr, keep) if keep.exists() else ""
    return counts


def _rel(tr: Restorable, path: Path) -> str:
    return str(Path(path).relative_to(tr.run_dir))

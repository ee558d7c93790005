"""Resuming a run in its own directory, and rolling a running one back to a checkpoint.

Both restore a checkpoint and continue from it as if nothing had happened after it, which needs more
than TensorFlow's variables: the host-side state the loop decides with (`host_state`): the freeze set
and the method, the schedule with its position in the cycle (and the adaptive policy's pending
switch), each phase's step count (which steps go to the per-variable record: `count % var_every`).
The learning rates are optimizer variables, so the checkpoint restores them; the random generators
are in it too. With that, a run killed at any moment and resumed draws the same batches, takes the
same phases and computes the same losses as the run never interrupted (on the CPU with
`--deterministic`: tests/core/test_resume.py).

Then the record is cut back to the checkpoint (trim.py), so there is one timeline, and a `resumed` or
`rollback` event says what happened and where the dropped rows went.
"""
from __future__ import annotations

import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from . import commands as C
from . import events as E
from .checkpoints import checkpoint_prefix, checkpoint_steps
from .config import RunConfig
from .errors import UserError
from .runlog import CONFIG_FILE, SCALARS_FILE
from .schedule import policy_from_dict
from .trim import dropped_dir, last_scalar_step, trim_record
from .usercode import first_line

if TYPE_CHECKING:
    from .trainer import Trainer

HOST_STATE_VERSION = 1


def host_state(tr: "Trainer") -> dict[str, Any]:
    """What the loop needs besides TensorFlow's variables to continue exactly (JSON-able)."""
    p = tr.prepared
    return {"version": HOST_STATE_VERSION, "step": tr.step, "steps": tr.config.steps, "freeze": list(tr.freeze),
            "update_frozen_stats": bool(tr.config.update_frozen_stats), "method": tr.method,
            "policy": p.policy.to_dict(), "policy_state": p.policy.state(), "phase_counts": list(tr.phase_counts),
            "lr": dict(tr.config.lr), "rollbacks": tr.rollbacks}


def apply_host_state(tr: "Trainer", st: dict[str, Any]) -> None:
    p, cfg = tr.prepared, tr.config
    tr.step = int(st["step"])
    for w in tr.set_freeze(tuple(st["freeze"]), bool(st["update_frozen_stats"])):
        tr.emit(w)
    tr.set_method(str(st["method"]))
    p.policy = policy_from_dict(st["policy"], p.phase_names).set_state(st["policy_state"])
    tr.phase_counts = [int(c) for c in st["phase_counts"]]
    cfg.freeze, cfg.freeze_method, cfg.schedule = list(tr.freeze), tr.method, p.policy.to_dict()
    cfg.lr.update({k: float(v) for k, v in st["lr"].items()})


def resume_config(run_dir: str | Path) -> RunConfig:
    """The configuration of the run in `run_dir`, to be continued there. No TensorFlow: bad input (not a
    run directory, no checkpoint) answers at once and writes nothing."""
    d = Path(run_dir)
    if d.is_file():
        raise UserError(f"{d} is a file; --resume takes the run's directory: pass {d.parent}")
    if not d.is_dir():
        raise UserError(f"run directory {d} does not exist; pass the directory of the run to resume")
    if not (d / CONFIG_FILE).is_file():
        raise UserError(f"{d} holds no {CONFIG_FILE}, so it is not a Freezeframe run directory; pass one to --resume")
    cfg = RunConfig.read_toml(d / CONFIG_FILE)
    if not checkpoint_steps(d):
        raise UserError(f"run {d} has no complete checkpoint to resume from; start it again with --config "
                        f"{d / CONFIG_FILE}")
    cfg.run_dir = str(d)
    return cfg


def resume_point(run_dir: str | Path) -> int:
    """The checkpoint a resume starts from: the latest one the record reaches (a checkpoint is written after
    the record holds its steps; after a write failure the record may end before the newest one)."""
    steps = checkpoint_steps(run_dir)
    last = last_scalar_step(Path(run_dir) / SCALARS_FILE)
    if not steps:  # (resume_config says so first; a RunConfig made by hand may name any directory)
        raise UserError(f"run {run_dir} has no complete checkpoint to resume from; is it the run's own directory?")
    usable = [s for s in steps if s <= last]
    return usable[-1] if usable else steps[0]


def check_target(run_dir: str | Path, target: int | None) -> int:
    """The resume step, refusing a step target the run has already reached (before anything is written)."""
    step = resume_point(run_dir)
    if target is not None and target <= step:
        raise UserError(f"run {run_dir} is at step {step} and its step target is {target}; pass --steps N with "
                        f"N > {step} to continue it")
    return step


def check_resume_commands(p: Any, commands: Sequence[C.Command]) -> None:
    """The settings given with `--resume` (commands it sends before the run goes on), checked against the
    prepared experiment `p` as a new run's are (prepare.check_controls): sent unchecked, a bad one was only
    `rejected` at the first step boundary, after the record had been cut back and new checkpoints written,
    and the run trained on without it and exited 0. A `UserError` here comes before anything is written."""
    from .prepare import check_controls, set_learning_rate
    rates = [c for c in commands if isinstance(c, C.SetLearningRate)]
    freeze = [s for c in commands if isinstance(c, C.SetFreeze) for s in c.scopes]
    schedule = next((c.policy for c in commands if isinstance(c, C.SetSchedule)), None)
    check_controls([c.phase for c in rates], freeze, schedule, p.phase_names, p.var_infos)
    # a bad value, or an optimizer on a learning-rate schedule, as at a new run's start. Setting the rate now is
    # harmless: the checkpoint restores the one it holds, then the command sets this one again.
    for c in rates:
        set_learning_rate(p.optimizers[p.phase_names.index(c.phase)], c.phase, c.value)


def recorded_sha256(run_dir: str | Path) -> str | None:
    """The experiment file's sha256 when the run started, from its `config.toml`. The trainer's own config
    holds the hash of the file as it was loaded now (prepare.py), which is what the two are compared with."""
    try:
        return RunConfig.read_toml(Path(run_dir) / CONFIG_FILE).experiment_sha256
    except UserError:  # read at the start of the resume; if it has gone bad since, there is nothing to compare
        return None


def begin(tr: "Trainer") -> E.Event:
    """Where a run begins: a new run directory and the `start` event, or (`tr.resume`) the run's own
    directory, its checkpoint restored and its record cut back to it, and the `resumed` event."""
    from .checkpoints import CheckpointStore
    from .recorder import default_run_dir, prepare_run_dir
    from .remote import COMMANDS_FILE
    if tr.resume:
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
                   freeze=list(tr.freeze), update_frozen_stats=bool(cfg.update_frozen_stats),
                   schedule=p.policy.to_dict(), lr=dict(cfg.lr), method=tr.method, run_dir=str(tr.run_dir),
                   steps=cfg.steps, variables=[v.to_dict() for v in p.var_infos],
                   strategy=p.placement.kind, replicas=p.placement.replicas)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _lock(tr: "Trainer", run_dir: Path) -> None:
    """One writer per run directory (runlock.py), taken before anything in it is written or cut; the trainer
    releases it after the `stop` event."""
    from . import runlock
    tr.lock = runlock.acquire(run_dir, on_takeover=lambda m: tr.emit(E.Warning(message=m)))


def resume(tr: "Trainer") -> E.Resumed:
    """Restore the run directory's checkpoint into a prepared trainer and cut the record back to it."""
    from .checkpoints import CheckpointStore
    cfg = tr.config
    d = Path(cfg.run_dir)
    step = check_target(d, cfg.steps)
    started = recorded_sha256(d)
    edited = bool(cfg.experiment_file and cfg.experiment_sha256 and started and cfg.experiment_sha256 != started)
    chief = tr.prepared.placement.chief
    tr.step = step  # what happens from here (a lock taken over: a warning) happens at the checkpoint's step
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
    return E.Resumed(checkpoint=checkpoint, device=p.device_name, freeze=list(tr.freeze),
                     update_frozen_stats=bool(cfg.update_frozen_stats), schedule=p.policy.to_dict(),
                     lr=dict(cfg.lr), method=tr.method, steps=cfg.steps, dropped=dropped, strategy=p.placement.kind,
                     replicas=p.placement.replicas)


def rollback(tr: "Trainer", cmd: C.RollBack, cid: str | None) -> None:
    """Apply a `RollBack` command at a step boundary (the training thread)."""
    from .prepare import set_learning_rate
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
    from_step, rollbacks = tr.step, tr.rollbacks
    tr.sync()  # everything up to now is in the record before it is cut
    apply_host_state(tr, tr.checkpoints.restore(cmd.step))
    tr.rollbacks = rollbacks + 1
    tr.nan_at = None
    dropped = _cut_back(tr, cmd.step, "rollback")
    tr.emit(E.Rollback(from_step=from_step, checkpoint=_rel(tr, checkpoint_prefix(tr.run_dir, cmd.step)),
                       reason=str(cmd.reason), count=tr.rollbacks, dropped=dropped, command=cmd.to_dict(), id=cid))
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


def _cut_back(tr: "Trainer", step: int, label: str) -> dict[str, Any]:
    keep = dropped_dir(tr.run_dir, label)
    counts: dict[str, Any] = trim_record(tr.run_dir, step, keep)
    counts["checkpoints"] = tr.checkpoints.drop_after(step, keep / "checkpoints")
    counts["dir"] = _rel(tr, keep) if keep.exists() else ""
    return counts


def _rel(tr: "Trainer", path: Path) -> str:
    return str(Path(path).relative_to(tr.run_dir))

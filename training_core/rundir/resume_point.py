"""Where a resume would start, read from the run directory alone (no TensorFlow): bad input (not a run
directory, no checkpoint, a step target already reached) answers at once and writes nothing. The window asks
the same before it offers File -> Resume Run, and the CLI before TensorFlow loads.
"""
from __future__ import annotations

from pathlib import Path

from training_core.base.config import RunConfig, file_not_dir
from training_core.base.errors import UserError
from training_core.rundir.layout import CONFIG_FILE, SCALARS_FILE, checkpoint_steps
from training_core.rundir.trim import last_scalar_step


def resume_config(run_dir: str | Path) -> RunConfig:
    """The configuration of the run in `run_dir`, to be continued there. No TensorFlow: bad input (not a
    run directory, no checkpoint) answers at once and writes nothing."""
    d = Path(run_dir)
    if d.is_file():
        raise UserError(file_not_dir(d, "--resume"))
    if not d.is_dir():
        raise UserError(f"run directory {d} does not exist; pass the directory of the run to resume")
    if not (d / CONFIG_FILE).is_file():
        raise UserError(f"{d} holds no {CONFIG_FILE}, so it is not a Freezeframe run directory; pass one to --resume")
    cfg = RunConfig.read_toml(d / CONFIG_FILE)
    cfg.refuse_monitored(d, "--resume")
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


def check_target(run_dir: str | Path, target: int | None, count: str | None = None,
                 fix: str = "pass --steps N") -> int:
    """The resume step, refusing a step target the run has already reached (before anything is written).
    With `count` (the run's `--count PHASE`) the target counts that phase's steps: how many it had run by the
    resume step is read from the losses it recorded. `fix` says how to raise the target where the run came
    from: a script's `start_run` has no --steps option (its `steps=` is the script's own)."""
    step = resume_point(run_dir)
    if target is None:
        return step
    done = step if count is None else phase_steps(run_dir, count, step)
    if target <= done:
        what = "step" if count is None else f"{count} step"
        raise UserError(f"run {run_dir} is at {what} {done} and its step target is {target}; {fix} with "
                        f"N > {done} to continue it")
    return step


def phase_steps(run_dir: str | Path, phase: str, up_to: int) -> int:
    """How many steps `phase` ran up to step `up_to`: its `loss/<phase>` rows in scalars.csv (every step of a
    phase records its loss)."""
    tag, n = f",loss/{phase},".encode(), 0
    try:
        with open(Path(run_dir) / SCALARS_FILE, "rb") as f:
            for line in f:
                if tag in line and line.endswith(b"\n"):
                    try:
                        if int(line.split(b",", 1)[0]) <= up_to:
                            n += 1
                    except ValueError:
                        continue
    except FileNotFoundError:
        pass
    return n


def recorded_sha256(run_dir: str | Path) -> str | None:
    """The experiment file's sha256 when the run started, from its `config.toml`. The trainer's own config
    holds the hash of the file as it was loaded now (engine/prepare.py), which is what the two are compared with."""
    try:
        return RunConfig.read_toml(Path(run_dir) / CONFIG_FILE).experiment_sha256
    except UserError:  # read at the start of the resume; if it has gone bad since, there is nothing to compare
        return None

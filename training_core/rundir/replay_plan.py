"""The plan of a replay, read from a run directory (no TensorFlow): replaying a run is its `config.toml` plus its recorded control changes, each applied at the step
boundary where it took effect, up to the step where the original stopped.

Why it works: a run's starting state is all in `config.toml`, and every later change, whoever made it
(the window, code, `commands.jsonl`), is a control event in `events.jsonl` holding the command itself
and the step count when it was applied. A command logged at step N was applied after step N, so the
`Replayer` sends it from `on_step_end` after step N of the replay (or from `on_run_begin` for N = 0),
and the trainer applies it at the same boundary. Only the changes that move the numbers are replayed:
`freeze`, `ratio`, `lr` and `method`. Pauses, continues, single steps, sample and checkpoint requests
change no number, and a `rejected` command changed nothing; a replay runs straight through.

A planned change (`config.planned`, base/planned.py) is in the configuration the replay runs, which sends
it again at its step: its event (id `planned-K`) is not replayed as well, or it would apply twice.

A NaN pause is not replayed either: the original paused wherever its batch of metrics happened to be
fetched (a matter of wall time), and whatever the user changed then is logged at that step and
replayed there, so the replay does not pause on NaN (`on_nan = "continue"`).

With `deterministic` on (TensorFlow op determinism) the replay's losses on the CPU equal the
original's exactly, and a replay of a replay equals both (tests/core/test_replay.py). Without it,
TensorFlow may reorder floating-point reductions between runs, and the curves agree only closely.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from training_core.base import events as E
from training_core.base.commands import Command, command_from_dict
from training_core.base.config import RunConfig, file_sha256
from training_core.base.errors import UserError
from training_core.base.planned import is_planned_id
from training_core.rundir.layout import CONFIG_FILE
from training_core.rundir.reading import read_events, read_scalars

#: control events whose command changes the numbers a run computes
REPLAYED = (E.Freeze, E.Ratio, E.LearningRate, E.Method)


@dataclass
class ReplayPlan:
    source: Path
    config: RunConfig  # the original's, for a new run directory, stopping where it stopped
    commands: list[tuple[int, Command]] = field(default_factory=list)  # (step logged at, command), in order
    stop_step: int = 0
    stopped_cleanly: bool = True  # False: the original has no `stop` event (killed); stop_step is its last step


def plan_replay(run_dir: str | Path, new_run_dir: str | None = None, deterministic: bool = False) -> ReplayPlan:
    """Read what a replay of `run_dir` needs; a directory that is not a replayable run is a `UserError`."""
    src = Path(run_dir)
    if src.is_file():
        raise UserError(f"{src} is a file; --replay takes the run's directory: pass {src.parent}")
    if not src.is_dir():
        raise UserError(f"run directory {src} does not exist; pass the directory of a recorded run to --replay")
    if not (src / CONFIG_FILE).is_file():
        raise UserError(f"{src} has no {CONFIG_FILE}; pass the run directory of a recorded run to --replay")
    cfg = RunConfig.read_toml(src / CONFIG_FILE)
    cfg.refuse_monitored(src, "--replay")
    events = read_events(src)
    if not any(isinstance(e, E.Start) for e in events):
        raise UserError(f"{src} has no recorded start in events.jsonl; a run that never started cannot be replayed")
    if cfg.experiment_file and cfg.experiment_sha256 and Path(cfg.experiment_file).is_file() \
            and file_sha256(cfg.experiment_file) != cfg.experiment_sha256:
        raise UserError(f"the experiment file {cfg.experiment_file} changed since {src} ran, so a replay would run "
                        f"other code; restore it, or run the new file with the same settings: "
                        f"--config {src / CONFIG_FILE}")
    commands = []
    for e in events:
        if isinstance(e, REPLAYED) and e.command is not None and not is_planned_id(e.id):
            try:
                commands.append((e.step, command_from_dict(e.command)))
            except UserError as err:
                raise UserError(f"{src}/events.jsonl: the {e.kind} at step {e.step} cannot be read ({err}); "
                                f"it was written by another version of Freezeframe") from None
    stops = [e for e in events if isinstance(e, E.Stop)]
    if stops:
        stop_step = stops[-1].step
    else:
        steps = [int(s.steps[-1]) for tag, s in read_scalars(src).items() if tag.startswith("loss/") and len(s.steps)]
        stop_step = max(steps + [e.step for e in events])
    if stop_step == 0:  # killed before its first step: a replay would write a whole run directory of nothing
        raise UserError(f"{src} recorded no step (it ended before its first); there is nothing to replay: train it "
                        f"again instead")
    cfg.run_dir = new_run_dir
    cfg.steps = stop_step
    cfg.on_nan = "continue"
    cfg.deterministic = cfg.deterministic or deterministic
    return ReplayPlan(src, cfg.validate(), commands, stop_step, bool(stops))

"""The plan of a replay, read from a run directory (no TensorFlow): replaying a run is its `config.toml` plus its recorded control changes, each applied at the step
boundary where it took effect, up to the step where the original stopped.

Why it works: a run's starting state is all in `config.toml`, and every later change, whoever made it
(the window, code, `commands.jsonl`), is a control event in `events.jsonl` holding the command itself
and the step count when it was applied. A command logged at step N was applied after step N, so the
`Replayer` sends it from `on_step_end` after step N of the replay (or from `on_run_begin` for N = 0),
and the trainer applies it at the same boundary. Only the changes that move the numbers are replayed:
`freeze`, `ratio`, `lr` and `method`. Pauses, continues, single steps and checkpoint requests change no
number, and a `rejected` command changed nothing; a replay runs straight through.

Samples change no number either, but they are what a user looked at: the replay draws them at every step
the original drew them (its `samples/` files, whoever asked: a sample request, a watching window, the
timer), and its own timer is off (`sample_every = 0`), so the replay's samples are at the original's steps.
A sample request is no event in `events.jsonl` (a watching window asks every 2 s), so the files are
the record of them.

A planned change (`config.planned`, base/planned.py) is in the configuration the replay runs, which sends
it again at its step: its event (id `planned-K`) is not replayed as well, or it would apply twice.

A NaN pause is not replayed either: the original paused wherever its batch of metrics happened to be
fetched (a matter of wall time), and whatever the user changed then is logged at that step and
replayed there, so the replay does not pause on NaN (`on_nan = "continue"`).

With `deterministic` on (TensorFlow op determinism) the replay's losses on the CPU equal the
original's exactly, and a replay of a replay equals both (tests/core/test_replay.py). Without it,
TensorFlow may reorder floating-point reductions between runs, and the curves agree only closely.

A run the monitor recorded (`monitor` in its config) is the user's script's, which Freezeframe cannot run:
the command line refuses it, and the script replays it itself (`start_run(..., replay=DIR)`,
`Monitor(..., replay=DIR)`, monitor/control_replay.py) with this same plan, `monitor` naming its kind. That
replay skips the script's sha256 check: the script is edited by the very line that adds `replay=`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from training_core.base import events as E
from training_core.base.commands import Command, command_from_dict
from training_core.base.config import RunConfig, file_not_dir, file_sha256
from training_core.base.errors import UserError
from training_core.base.planned import is_planned_id
from training_core.rundir.layout import CONFIG_FILE
from training_core.rundir.reading import read_events, read_scalars
from training_core.rundir.samples import list_samples

#: control events whose command changes the numbers a run computes
REPLAYED = (E.Freeze, E.Ratio, E.LearningRate, E.Method)


@dataclass
class ReplayPlan:
    source: Path
    config: RunConfig  # the original's, for a new run directory, stopping where it stopped
    commands: list[tuple[int, Command]] = field(default_factory=list)  # (step logged at, command), in order
    stop_step: int = 0
    stopped_cleanly: bool = True  # False: the original has no `stop` event (killed); stop_step is its last step
    phases: list[str] = field(default_factory=list)  # the original's, as its `start` event names them
    sample_steps: list[int] = field(default_factory=list)  # where the original drew samples, before its end


def plan_replay(run_dir: str | Path, new_run_dir: str | None = None, deterministic: bool = False,
                monitor: str | None = None) -> ReplayPlan:
    """Read what a replay of `run_dir` needs; a directory that is not a replayable run is a `UserError`.
    `monitor`: the replay is the user's script's (`"loop"`: `start_run(replay=)`, `"fit"`: `Monitor(replay=)`),
    and `run_dir` must be a run the monitor recorded of that kind; None: the command line's `--replay`."""
    src = Path(run_dir)
    what = "--replay" if monitor is None else "replay="
    if src.is_file():
        raise UserError(file_not_dir(src, what) if monitor is None else
                        f"{src} is a file; {what} takes the run's directory: pass {src.parent}")
    if not src.is_dir():
        raise UserError(f"run directory {src} does not exist; pass the directory of a recorded run to {what}")
    if not (src / CONFIG_FILE).is_file():
        raise UserError(f"{src} has no {CONFIG_FILE}; pass the run directory of a recorded run to {what}")
    cfg = RunConfig.read_toml(src / CONFIG_FILE)
    if monitor is None:
        cfg.refuse_monitored(src, "--replay")
    else:
        _refuse_other_kind(src, cfg, monitor)
    events = read_events(src)
    start = next((e for e in events if isinstance(e, E.Start)), None)
    if start is None:
        raise UserError(f"{src} has no recorded start in events.jsonl; a run that never started cannot be replayed")
    if monitor is None and cfg.experiment_file and cfg.experiment_sha256 and Path(cfg.experiment_file).is_file() \
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
    cfg.sample_every = 0.0  # the replay draws at the original's steps (and at its end), not by the clock
    cfg.deterministic = cfg.deterministic or deterministic
    sample_steps = [step for step, _ in list_samples(src) if step < stop_step]  # the end draws anyway
    return ReplayPlan(src, cfg.validate(), commands, stop_step, bool(stops), list(start.phases), sample_steps)


#: each kind of monitored run: the code that trains it, and the call that replays it
_KINDS = {"loop": ("a hand-written loop", "start_run(NEW_DIR, ..., replay=DIR)"),
          "fit": ("fit()", "Monitor(NEW_DIR, replay=DIR)")}


def _refuse_other_kind(src: Path, cfg: RunConfig, monitor: str) -> None:
    """A script replays only a run the monitor recorded of its own kind: an experiment file's run is the
    command line's to replay, and a `fit()` record's commands are not a hand-written loop's (nor back)."""
    trains, call = _KINDS[monitor]
    if not cfg.monitor:
        source = cfg.experiment_file or f"the example {cfg.example}"
        raise UserError(f"{src} is a run of {source}, not one training_core.monitor recorded, so {call} in "
                        f"{trains} cannot replay it; replay it with: python main.py --replay {src}")
    if cfg.monitor != monitor:
        other, other_call = _KINDS.get(cfg.monitor, (cfg.monitor, "its own kind of monitor"))
        raise UserError(f"{src} was recorded from {other}, not {trains}; replay it with {other_call}")

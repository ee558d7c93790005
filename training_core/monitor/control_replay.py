"""Replaying a monitored run's controls in the user's own script: `start_run(NEW_DIR, ..., replay=OLD_DIR)`,
`Monitor(NEW_DIR, replay=OLD_DIR)`.

Why in the script: a monitored run's steps are the user's code's, which Freezeframe cannot run
(`python main.py --replay` refuses such a run, and says to do this), but that code can run again. What
made the old run differ from a plain run of the script is what the window (or `commands.jsonl`, or
`run.send`) changed while it trained; those changes are all in its `events.jsonl`, each at the step
boundary where it took effect. So the replay is the same script with the same plan as the command line's
replay (rundir/replay_plan.py, read with `monitor` naming the kind of run) and the same observer
(loop/replay.py's `Replayer`): it sends each number-changing command (freeze, learning rate, ratio,
method) after the step it was logged at, the run applies it at the next `boundary()`, and the loop stops
where the old one stopped. With TensorFlow's op determinism on in the script, its losses on the CPU equal
the old run's bit for bit, and a replay of the replay equals both (tests/core/test_control_replay.py).

The new record is a run of its own with a `replay` event naming its source, as a command-line replay's.
What the script passes at the start (its seed, learning rates, freeze set, ratio) is its own again; when
it differs from the old run's, a warning in the new record names each difference, since the same
controls on another start compute other numbers (a deliberate use: the same steering on another seed).
"""
from __future__ import annotations

from pathlib import Path

from training_core.base import events as E
from training_core.base.config import RunConfig
from training_core.base.errors import UserError
from training_core.loop.replay import Replayer
from training_core.observers.base import RunHandle
from training_core.rundir.replay_plan import ReplayPlan, plan_replay

#: the starting settings a replay compares with the old run's
STARTING = ("seed", "lr", "freeze", "freeze_method", "update_frozen_stats", "schedule")


def plan_control_replay(source: str | Path, run_dir: Path, kind: str, resuming: bool) -> ReplayPlan:
    """The plan of replaying `source` into the new `run_dir` (`kind`: "loop" or "fit"); bad use is one line,
    before anything is written."""
    if resuming:
        raise UserError(f"run directory {run_dir} already holds a run, and a replay starts a record of its own; "
                        f"give replay= a new run_dir")
    if Path(source).resolve() == Path(run_dir).resolve():
        raise UserError(f"replay={str(source)!r} is the run directory itself; give the replay a new run_dir")
    return plan_replay(source, str(run_dir), monitor=kind)


class ControlReplayer(Replayer):
    """The `Replayer`, fitted to a run the user's code takes: its phases checked against the old run's, its step
    target the old run's last step, its record's sample timer off, and a warning when it starts from other
    settings. The timer is off as in the command line's replay (rundir/replay_plan.py): the `Replayer` asks for
    samples at each step the old run drew them, and the script's own `sample_every` clock drew others between,
    so a replay's samples were not at the old run's steps. The run's `Sampler` reads `config.sample_every`,
    which this sets to the plan's (0) before the run begins."""

    def __init__(self, plan: ReplayPlan, phase_names: list[str], config: RunConfig) -> None:
        if list(phase_names) != plan.phases:
            raise UserError(f"{plan.source} trained the phases {', '.join(plan.phases)}, and this run "
                            f"{', '.join(phase_names)}; a replay sends the old run's commands to its phases: give "
                            f"this run the same phases, in the same order")
        super().__init__(plan)
        config.steps = plan.stop_step
        config.sample_every = plan.config.sample_every  # 0: the plan's (rundir/replay_plan.py) decides it
        self._differences = [f"{name} {getattr(config, name)!r} (was {getattr(plan.config, name)!r})"
                             for name in STARTING if getattr(config, name) != getattr(plan.config, name)]

    def on_run_begin(self, run: RunHandle) -> None:
        super().on_run_begin(run)
        if self._differences:
            run.emit(E.Warning(message=f"this replay starts from other settings than {self.plan.source}: "
                                       f"{', '.join(self._differences)}; the same controls at the same steps then "
                                       f"compute other numbers"))

"""From what the panels show to the `RunConfig` a Start hands to the core."""
from __future__ import annotations

from training_core import RunConfig, UserError
from training_core.runs import Source

from .panels import ExperimentPanel, SchedulePanel, ScopeTree
from .scheduling import gui_intra_op_threads


def run_config(source: Source, experiment: ExperimentPanel, schedule: SchedulePanel,
               tree: ScopeTree | None = None) -> RunConfig:
    """`tree=None`: the experiment's own schedule, rates and no freeze (the panels show another one)."""
    kind, value = source
    cfg = RunConfig(example=value if kind == "example" else None, experiment_file=value if kind == "file" else None,
                    steps=experiment.steps(), count=experiment.count(), seed=experiment.seed(),
                    device=experiment.device(),
                    freeze_method=schedule.method(), update_frozen_stats=schedule.update_frozen_stats(),
                    intra_op_threads=gui_intra_op_threads())
    if tree is not None:
        cfg.schedule = schedule.schedule()
        cfg.lr = schedule.learning_rates()
        cfg.freeze = list(tree.frozen_scopes())
    return cfg


def resume_run_config(run_dir: str, experiment: ExperimentPanel) -> tuple[RunConfig, Source]:
    """The configuration to continue the run in `run_dir` (File → Resume Run…), up to its own step target or
    the panel's when that is larger, and its experiment. Bad input (not a run, nothing left to do) is a
    one-line `UserError`; nothing is read but the run's own files, and nothing is written."""
    from training_core.rundir.resume_point import check_target, resume_config
    cfg = resume_config(run_dir)
    panel = experiment.steps()
    if cfg.steps is not None and panel and panel > cfg.steps:
        cfg.steps = panel
    cfg.intra_op_threads = gui_intra_op_threads()
    try:
        check_target(cfg.run_dir, cfg.steps, cfg.count)
    except UserError as e:
        raise UserError(str(e).replace("pass --steps N with", "set a step target in the Experiment panel with"))
    return cfg, ("file", cfg.experiment_file) if cfg.experiment_file else ("example", cfg.example)

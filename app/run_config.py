"""From what the panels show to the `RunConfig` a Start hands to the core."""
from __future__ import annotations

from training_core import RunConfig
from training_core.runs import Source

from .panels import ExperimentPanel, SchedulePanel, ScopeTree
from .scheduling import gui_intra_op_threads


def run_config(source: Source, experiment: ExperimentPanel, schedule: SchedulePanel,
               tree: ScopeTree | None = None) -> RunConfig:
    """`tree=None`: the experiment's own schedule, rates and no freeze (the panels show another one)."""
    kind, value = source
    cfg = RunConfig(example=value if kind == "example" else None, experiment_file=value if kind == "file" else None,
                    steps=experiment.steps(), seed=experiment.seed(), device=experiment.device(),
                    freeze_method=schedule.method(), update_frozen_stats=schedule.update_frozen_stats(),
                    intra_op_threads=gui_intra_op_threads())
    if tree is not None:
        cfg.schedule = schedule.schedule()
        cfg.lr = schedule.learning_rates()
        cfg.freeze = list(tree.frozen_scopes())
    return cfg

"""From what the panels show to the `RunConfig` a Start hands to the core, and where the run goes."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

from training_core import RunConfig

from .panels import ExperimentPanel, SchedulePanel, ScopeTree
from .panels.experiment import Source
from .worker import gui_intra_op_threads


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


def next_run_dir(folder: str, source: Source) -> str | None:
    """FOLDER/NAME-TIME (like the core's default under runs/), or None for the core's default."""
    if not folder:
        return None
    kind, value = source
    base = Path(folder) / f"{Path(value).stem if kind == 'file' else value}-{datetime.now():%Y%m%d-%H%M%S}"
    p, k = base, 1
    while p.exists():
        k += 1
        p = base.with_name(f"{base.name}-{k}")
    return str(p)

"""Freezeframe's training core: alternating-phase training with exact scope freezing.

No Qt here, ever. Importing this package imports nothing else: each name below is loaded when first used
(PEP 562), so `import training_core.base` (what the window reads) does not bring in the training loop, and
nothing here imports TensorFlow until a `Trainer` prepares.

The rooms, top to bottom (each imports only those below it; `.importlinter` enforces it):
  service | cli        the training process (python -m training_core.service) and the headless CLI
  | monitor            ... and Freezeframe in the user's own code (`fit()`, a hand-written loop)
  loop                 the trainer, its command table, warm-up, restore (resume, rollback), replay, workers
  observers            what a run does besides training, each seeing the run through a `RunHandle`
  engine | figures | quality   TensorFlow and Keras (prepare, compiled steps, checkpoints, ...) | figure data |
                       FID and KID of samples in a feature space the experiment names (`training_core.quality`)
  runs                 the Qt-free models of runs the window shows
  experiment | rundir  the experiment-file API and loading | the run directory: layout, writer, readers
  base                 plain types: errors, config, commands, events, metrics, scopes, alternation

The public names:
  Trainer, Observer, RunHandle         run training, receive reports (observers/: the built-in ones)
  events                               what a run reports: typed events (`events.Freeze`, ...)
  RunConfig                            what to run (and what `config.toml` holds)
  commands: Pause, Continue, Step, Stop, SetFreeze, SetRatio, SetLearningRate, SetFreezeMethod,
            SampleNow, SaveCheckpoint, Rollback, command_from_dict
  Experiment, Phase, StepContext, SampleContext, Models   the experiment-file API
  builtin_examples, example_path       the built-in examples (experiment/loading.py loads any file)
  MetricsBatch, PhaseBlock, Status     what observers receive
  VarInfo, ScopeNode, build_scope_tree, in_scope, format_tree
  read_scalars, read_events, read_config, read_variables, is_run_dir, Series   reading a run directory
  RecordWriter                         writing a run directory without a Trainer
  ema_smooth, EmaState                 the smoothing the plots and exports share
  UserError                            bad input, with a one-line message
  append_command, COMMANDS_FILE        steer a run through RUN_DIR/commands.jsonl
  plan_replay, Replayer                replay a recorded run

`Resume` still imports, as a deprecated alias of `Continue` (the un-pause; "resume" now means only
continuing a run from disk): see base/commands.py. It warns, and is not in `__all__`.
"""
from __future__ import annotations

import importlib
import warnings
from typing import Any

_NAMES = {
    "training_core.base": ["events"],
    "training_core.base.commands": ["Command", "Continue", "Pause", "Rollback", "SampleNow", "SaveCheckpoint",
                                    "SetFreeze", "SetFreezeMethod", "SetLearningRate", "SetRatio", "Step", "Stop",
                                    "command_from_dict", "FREEZE_METHODS"],
    "training_core.base.config": ["RunConfig"],
    "training_core.base.errors": ["UserError"],
    "training_core.base.metrics": ["MetricsBatch", "PhaseBlock", "Status"],
    "training_core.base.alternation": ["parse_ratio"],
    "training_core.base.scopes": ["ScopeNode", "VarInfo", "build_scope_tree", "format_tree", "in_scope"],
    "training_core.base.smoothing": ["EmaState", "ema_smooth"],
    "training_core.experiment.api": ["Experiment", "Models", "Phase", "SampleContext", "StepContext"],
    "training_core.experiment.loading": ["builtin_examples", "example_path"],
    "training_core.rundir.layout": ["COMMANDS_FILE", "is_run_dir"],
    "training_core.rundir.commands_file": ["append_command"],
    "training_core.rundir.reading": ["Series", "read_config", "read_events", "read_scalars"],
    "training_core.rundir.varstore": ["read_variables"],
    "training_core.rundir.writer": ["RecordWriter"],
    "training_core.rundir.replay_plan": ["plan_replay"],
    "training_core.observers.base": ["Observer", "RunHandle"],
    "training_core.loop.replay": ["Replayer"],
    "training_core.loop.trainer": ["Trainer"],
}
_WHERE = {name: module for module, names in _NAMES.items() for name in names}
#: old name -> (module, new name, why), resolved with a DeprecationWarning and kept out of `__all__`
_DEPRECATED = {"Resume": ("training_core.base.commands", "Continue",
                          "'resume' now means only continuing a run from disk")}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:  # not cached: it warns at each new place that uses it
        module, new, why = _DEPRECATED[name]
        warnings.warn(f"training_core.{name} is now {new}: {why}", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(module), new)
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'training_core' has no attribute {name!r}")
    value = importlib.import_module(module) if name == "events" and module == "training_core.base" else None
    value = getattr(importlib.import_module(module), name) if value is None else value.events
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__

"""Freezeframe's training core: alternating-phase training with exact scope freezing.

No Qt here, ever. Importing this package does not import TensorFlow either (the window imports it off
the GUI thread); TensorFlow loads when a `Trainer` prepares.

Public interface:
  Trainer, Observer                      run training, receive reports (observers.py: the policies)
  events                                 what a run reports: typed events (`events.Freeze`, ...)
  RunConfig                              what to run (and what `config.toml` holds)
  commands: Pause, Resume, Step, Stop, SetFreeze, SetSchedule, SetLearningRate, SetFreezeMethod,
            SampleNow, SaveCheckpoint, RollBack, command_from_dict
  Experiment, Phase, StepContext, SampleContext, Models   the experiment-file API
  builtin_examples, example_path         the built-in examples (loading.py loads any file)
  MetricsBatch, PhaseBlock, Status       what observers receive
  VarInfo, ScopeNode, build_scope_tree, in_scope, format_tree
  read_scalars, read_events, read_config, read_variables, Series   reading a run directory
  ema_smooth, EmaState                   the smoothing the plots and exports share
  UserError                              bad input, with a one-line message
  append_command, COMMANDS_FILE          steer a run through RUN_DIR/commands.jsonl (remote.py)
  plan_replay, Replayer                  replay a recorded run (replay.py)
"""
from . import events
from .remote import COMMANDS_FILE, append_command
from .commands import (Command, Pause, Resume, RollBack, SampleNow, SaveCheckpoint, SetFreeze, SetFreezeMethod,
                       SetLearningRate, SetSchedule, Step, Stop, command_from_dict, FREEZE_METHODS)
from .config import RunConfig
from .errors import UserError
from .experiment import Experiment, Models, Phase, SampleContext, StepContext
from .loading import builtin_examples, example_path
from .metrics import MetricsBatch, PhaseBlock, Status
from .observers import Observer
from .replay import Replayer, plan_replay
from .runlog import Series, is_run_dir, read_config, read_events, read_scalars
from .varstore import read_variables
from .schedule import parse_ratio
from .scopes import ScopeNode, VarInfo, build_scope_tree, format_tree, in_scope
from .smoothing import EmaState, ema_smooth
from .trainer import Trainer

__all__ = [n for n in dir() if not n.startswith("_")]

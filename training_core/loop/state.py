"""The loop's own state, declared in one place: what a checkpoint must hold besides TensorFlow's variables
(`LoopState`), and whether the loop runs, pauses or stops (`Flow`).

Why declared apart from the Trainer: resume, rollback and the command table change these, and they used to
assign a dozen of the trainer's attributes (one of them declared nowhere and read back with `getattr`).
Now each of them reads and writes these two records, whose every field is here with what it means.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from training_core.base.commands import Envelope


@dataclass
class LoopState:
    """What the loop decides with; with the alternation policy, the learning rates and the freeze set's
    statistics switch, it is the checkpoint's host state (loop/restore.py)."""

    step: int = 0  #: steps done, every phase together
    freeze: tuple[str, ...] = ()  #: the scopes frozen now
    method: str = "exact"  #: the freeze method: exact or gate
    phase_counts: list[int] = field(default_factory=list)  #: steps each phase ran (decides the variable record)
    rollbacks: int = 0  #: rollbacks this run's record has made
    nan_at: int | None = None  #: a non-finite loss seen at this step and not rolled back (no checkpoints then)


@dataclass
class Flow:
    """Whether the loop runs, pauses or stops (not checkpointed: a resumed run starts running)."""

    running: bool = False
    paused: bool = False
    stopping: bool = False
    stop_command: Envelope | None = None  #: the Stop that ends the run, with its id (its reason goes to `stop`)
    steps_left: int | None = None  #: a Step command's steps still to take before it pauses

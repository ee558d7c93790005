"""Metrics as they reach the host: one `MetricsBatch` every N steps.

The compiled step returns one packed float32 vector per step (loss, then squared norms of the update,
of the weights and of the gradient for each of the phase's variables). The trainer keeps those device
tensors unread and converts a whole batch at once, so the device is never synchronised per step;
this module turns the packed rows into named numbers. TF-free: observers (the window) only see numpy.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np


@dataclass
class PhaseBlock:
    """The steps one phase ran within a batch. Per-variable arrays have shape (steps, variables)."""

    phase: str
    var_paths: tuple[str, ...]
    steps: np.ndarray  # int64 (n,)
    wall_time: np.ndarray  # float64 (n,)
    loss: np.ndarray  # float64 (n,)
    update_norm: np.ndarray  # ||W_after - W_before||_2
    update_ratio: np.ndarray  # update_norm / ||W_after||_2
    grad_norm: np.ndarray
    frozen: np.ndarray  # bool: variable was frozen at that step
    #: bool (n,): per-variable numbers of this step go to disk (every `var_every`-th step *of this phase*,
    #: so that a schedule can never alias a phase out of the record)
    record: np.ndarray = None
    weight_norm: np.ndarray = None  # ||W_after||_2

    @classmethod
    def from_packed(cls, phase: str, var_paths: tuple[str, ...], steps, wall_time, packed: np.ndarray,
                    frozen: np.ndarray, record: np.ndarray | None = None) -> "PhaseBlock":
        n = len(var_paths)
        packed = np.asarray(packed, dtype=np.float64).reshape(len(steps), 1 + 3 * n)
        upd = np.sqrt(packed[:, 1:1 + n])
        w = np.sqrt(packed[:, 1 + n:1 + 2 * n])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(w > 0, upd / np.where(w > 0, w, 1.0), np.where(upd > 0, np.inf, 0.0))
        ratio[np.isnan(upd) | np.isnan(w)] = np.nan  # a diverged weight: NaN, never the 0 of a frozen one
        return cls(phase, var_paths, np.asarray(steps, dtype=np.int64), np.asarray(wall_time, dtype=np.float64),
                   packed[:, 0], upd, ratio, np.sqrt(packed[:, 1 + 2 * n:]), np.asarray(frozen, dtype=bool),
                   np.ones(len(steps), dtype=bool) if record is None else np.asarray(record, dtype=bool), w)

    def __len__(self) -> int:
        return len(self.steps)

    def take(self, rows: np.ndarray) -> "PhaseBlock":
        """The block of the rows `rows` selects (a boolean mask or indices), every array cut alike."""
        cut = {f: getattr(self, f)[rows] for f in ("steps", "wall_time", "loss", "update_norm", "update_ratio",
                                                    "grad_norm", "frozen", "record", "weight_norm")
               if getattr(self, f) is not None}
        return replace(self, **cut)


@dataclass
class Status:
    """Where the trainer stands; sent with every batch and on every state change."""

    step: int = 0
    phase: str = ""
    paused: bool = False
    running: bool = False
    steps_per_s: float = 0.0
    elapsed_s: float = 0.0
    device: str = ""
    run_dir: str = ""
    target_steps: int | None = None
    traces: int = 0
    #: the phase whose steps the target counts ("": every phase's), and how many it has run
    count_phase: str = ""
    counted: int = 0


@dataclass
class MetricsBatch:
    blocks: list[PhaseBlock] = field(default_factory=list)
    status: Status = field(default_factory=Status)
    #: per-step scalars other than losses, by tag (`metric/modes_covered`): (steps, wall times, values).
    #: They travel with the losses of the same steps, so the record writes every row in step order.
    scalars: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        return sum(len(b) for b in self.blocks)


def scalar_columns(rows: list[tuple[str, int, float, float]]) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(tag, step, wall, value) rows -> {tag: (steps, wall times, values)}, as `MetricsBatch.scalars`."""
    cols: dict[str, list[list]] = {}
    for tag, step, wall, value in rows:
        c = cols.setdefault(tag, [[], [], []])
        c[0].append(step)
        c[1].append(wall)
        c[2].append(value)
    return {tag: (np.array(s, dtype=np.int64), np.array(w, dtype=np.float64), np.array(v, dtype=np.float64))
            for tag, (s, w, v) in cols.items()}


class PendingStep(NamedTuple):
    """A step whose numbers are still on the device (fetched in batches, one sync per batch)."""

    step: int
    phase: int
    wall: float
    packed: Any  # device tensor: [loss, ||dW||^2..., ||W||^2..., ||g||^2...]
    frozen: np.ndarray  # bool per variable of the phase
    record: bool  # the per-variable numbers of this step go to disk

"""The trainer's side of `observers.base.RunHandle`: what its observers see of it, and nothing more.

An observer used to receive the whole Trainer, and some reached into it (its checkpoint store, its list of
observers, its NaN flag). `TrainerHandle` offers the declared interface alone, so the observers work with
any loop that offers it, and the trainer's insides can change without them.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from training_core.base import events as E
from training_core.base.commands import Command
from training_core.base.config import RunConfig
from training_core.observers.base import overrides

if TYPE_CHECKING:
    from training_core.engine.beside import Measured
    from training_core.loop.trainer import Trainer


class TrainerHandle:
    """`RunHandle` for a `Trainer` (see observers/base.py for what each member means)."""

    def __init__(self, trainer: "Trainer") -> None:
        self._t = trainer

    # -- what the run is ---------------------------------------------------------------------------------
    @property
    def config(self) -> RunConfig:
        return self._t.config

    @property
    def run_dir(self) -> Path | None:
        return self._t.run_dir

    @property
    def resumed(self) -> bool:
        return self._t.resuming

    @property
    def step(self) -> int:
        return self._t.state.step

    @property
    def phase_names(self) -> Sequence[str]:
        return self._t.prepared.phase_names

    @property
    def phase_paths(self) -> Sequence[tuple[str, ...]]:
        return self._t.prepared.phase_paths

    @property
    def phase_counts(self) -> Sequence[int]:
        return tuple(self._t.state.phase_counts)

    @property
    def method(self) -> str:
        return self._t.state.method

    @property
    def nan_at(self) -> int | None:
        return self._t.state.nan_at

    @property
    def rollbacks(self) -> int:
        return self._t.state.rollbacks

    @property
    def command_file_start(self) -> int | None:
        return self._t.command_file_start

    @property
    def scratch_dir(self) -> Path | None:
        return self._t.scratch_dir

    @property
    def wants_samples(self) -> str:
        takers = [o for o in self._t.observers if overrides(o, "on_samples")]
        if any(not o.records_only for o in takers):
            return "live"
        return "record" if takers else ""

    @property
    def has_metrics(self) -> bool:
        return self._t.prepared.experiment.metrics is not None

    @property
    def experiment_source(self) -> Path | None:
        return self._t.prepared.source

    @property
    def measure_step(self) -> int | None:
        m = getattr(self._t, "measures", None)  # (a monitored run measures nothing beside it)
        return None if m is None else m.step

    # -- what it may ask ---------------------------------------------------------------------------------
    def emit(self, event: E.Event) -> None:
        self._t.emit(event)

    def send(self, command: Command, id: str | None = None) -> None:  # noqa: A002 - the wire name
        self._t.send(command, id)

    def pause(self, reason: str) -> None:
        self._t.pause(reason)

    def note_nan(self, at_step: int | None) -> None:
        st = self._t.state
        st.nan_at = None if at_step is None else at_step if st.nan_at is None else min(st.nan_at, at_step)

    def checkpoint_steps(self) -> list[int]:
        store = self._t.checkpoints
        return [] if store is None else store.steps()

    def save_checkpoint(self) -> None:
        self._t.save_checkpoint()

    def export_weights(self) -> None:
        if self._t.checkpoints is not None:
            self._t.checkpoints.export_weights()

    def sample(self) -> None:
        self._t.sample()

    def measure(self) -> dict[str, float] | None:
        from training_core.engine.measuring import compute_metrics
        from training_core.engine.model_state import kept, state_of
        with kept(state_of(self._t.prepared)):  # on the training's own models: their noise must not move
            return compute_metrics(self._t.prepared, self._t.state.step)

    def shadow_models(self) -> str | None:
        return self._t.measures.shadow_models(self._t.prepared)

    def measure_beside(self, on_result: "Callable[[Measured], None]") -> None:
        self._t.measures.start(self._t.state.step, on_result)

    def collect_measure(self, wait: bool = False) -> bool:
        return self._t.measures.collect(wait)

    def drop_metrics(self) -> None:
        self._t.prepared.experiment.metrics = None

    def record_scalars(self, values: dict[str, float], step: int | None = None, wall: float | None = None) -> None:
        self._t.record_scalars(values, step, wall)

"""What an observer is, and the narrow handle through which it sees and acts on a run.

As Keras runs callbacks (each sees `self.model`, not the trainer's insides) and Orange3 hands a long task
a `TaskState`: the loop stays plain, everything a run does besides training is an observer in a list
(`observers.defaults`), and each observer acts on the run only through `RunHandle`, a small declared interface. The loop implements it
(`loop.handle.TrainerHandle`); a user's own loop can too (a run object that is no Trainer), so the
record, the alarms and the command reader serve any loop that offers these few things.

Hooks run on the training thread between steps and must return quickly. `on_step_end` runs after every
step, so the loop calls it only on observers that override it.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

from training_core.base import events as E
from training_core.base.metrics import MetricsBatch, Status

if TYPE_CHECKING:
    from training_core.base.commands import Command
    from training_core.base.config import RunConfig
    from training_core.engine.beside import Measured


class RunHandle(Protocol):
    """What an observer may read of a run and ask of it. Reading is cheap; every request is applied on the
    training thread (commands at the next step boundary), so an observer never changes the loop's state
    behind its back."""

    # -- what the run is ---------------------------------------------------------------------------------
    @property
    def config(self) -> "RunConfig":
        """The resolved configuration (read it; change the run with commands)."""

    @property
    def run_dir(self) -> Path | None:
        """Where the record is written (None before the run begins)."""

    @property
    def resumed(self) -> bool:
        """Whether this run continues a record from its checkpoint (`--resume`)."""

    @property
    def step(self) -> int:
        """Steps done so far (of every phase together)."""

    @property
    def phase_names(self) -> Sequence[str]: ...

    @property
    def phase_paths(self) -> Sequence[tuple[str, ...]]:
        """The variables each phase trains, by path."""

    @property
    def phase_counts(self) -> Sequence[int]:
        """Steps each phase has run."""

    @property
    def method(self) -> str:
        """The freeze method in force: exact or gate."""

    @property
    def nan_at(self) -> int | None:
        """The step since which a loss is non-finite, or None (no checkpoint is saved meanwhile)."""

    @property
    def rollbacks(self) -> int:
        """Rollbacks this run made (its record's count, kept across resumes)."""

    @property
    def command_file_start(self) -> int | None:
        """Where this run's lines of `commands.jsonl` begin (None: after whatever the file holds)."""

    @property
    def scratch_dir(self) -> Path | None:
        """A non-chief worker's own folder for collective checkpoints (None elsewhere)."""

    @property
    def wants_samples(self) -> str:
        """Who takes samples: "live" (someone shows them), "record" (only the record keeps them), or ""."""

    @property
    def has_metrics(self) -> bool:
        """Whether the experiment measures anything (`metrics(ctx)`)."""

    @property
    def experiment_source(self) -> Path | None:
        """The experiment's file, where a failure of its code points (None: an experiment given as an object)."""

    @property
    def measure_step(self) -> int | None:
        """The step of the measure in flight beside training (`measure_beside`), until its result is taken or
        dropped; None: none is. The record holds back the rows of later steps meanwhile."""

    # -- what it may ask ---------------------------------------------------------------------------------
    def emit(self, event: E.Event) -> None:
        """Stamp `event` with the step and time and hand it to every observer, after the one being handled."""

    def send(self, command: "Command", id: str | None = None) -> None:  # noqa: A002 - the wire name
        """Queue a command for the next step boundary (the same path as the window's and the file's)."""

    def pause(self, reason: str) -> None:
        """Pause (reason: nan, ...): with one device now, so the loop takes no further step; in a multi-worker
        run at the next sync boundary, where every worker pauses at the same step."""

    def note_nan(self, at_step: int | None) -> None:
        """A loss went non-finite at `at_step` (None: every phase's loss is finite again)."""

    def checkpoint_steps(self) -> list[int]:
        """Steps of the checkpoints a rollback could go back to."""

    def save_checkpoint(self) -> None:
        """Checkpoint the state after this step, once the record holds every step up to it."""

    def export_weights(self) -> None:
        """Write each model's weights in Keras' format (`models/`)."""

    def sample(self) -> None:
        """Draw samples now; every observer's `on_samples` gets them."""

    def measure(self) -> dict[str, float] | None:
        """The experiment's `metrics(ctx)` now, on this thread (raises what its code raises)."""

    def shadow_models(self) -> str | None:
        """Make the shadow copies of the models that `measure_beside` measures on (once, before the first):
        None, or why they cannot be made (a subclassed model; then `measure()` is the way)."""

    def measure_beside(self, on_result: "Callable[[Measured], None]") -> None:
        """Snapshot this step's weights and start `metrics(ctx)` on them on a thread of its own; one at a time.
        Until its result is taken (`collect_measure`), the record holds back the rows of later steps (only the
        record: every observer gets every batch as fetched). A checkpoint of a later step and a rollback wait for
        it and take it first, as does the end of a run that reached its step target; a Stop or an error drops it.
        `on_result(result)` is called on the training thread with it: the step measured, the wall time of its
        snapshot (record the values at both), the values, the error, the seconds it took."""

    def collect_measure(self, wait: bool = False) -> bool:
        """Take the measure in flight if it is done (`wait`: once it is), calling its `on_result`. Whether it was."""

    def drop_metrics(self) -> None:
        """Turn the experiment's metrics off (they failed)."""

    def record_scalars(self, values: dict[str, float], step: int | None = None, wall: float | None = None) -> None:
        """`metric/<name>` values at this step and time (or at `step` and `wall`, the step and snapshot time of a
        measure beside training), sent with the next batch (the record writes them in step order)."""


class Observer:
    """Receives a run's reports on the training thread. Override what you need."""

    #: takes samples for the record only (the run's sample writer): drawing them at the live pace (every 2 s
    #: while a window shows them) is for observers that show them
    records_only: bool = False

    def on_prepared(self, run: RunHandle) -> None:
        """Models built and steps traced; no run directory yet."""

    def on_run_begin(self, run: RunHandle) -> None:
        """The run directory exists and the `start` event is about to be emitted."""

    #: the steps whose end `on_step_end` is for: every `step_period`-th (1: every step; 0: none). The loops call
    #: the hook at those steps only: a Python call a step costs microseconds a ring-size step cannot spare
    step_period: int = 1

    def on_step_end(self, run: RunHandle) -> None:
        """After every `step_period`-th step (only called when overridden)."""

    def on_idle(self, run: RunHandle) -> None:
        """While paused, a few times a second."""

    def on_metrics(self, batch: MetricsBatch) -> None:
        """Every `fetch_every` steps or `fetch_seconds`: the numbers of the steps since the last batch."""

    def on_event(self, event: E.Event) -> None:
        """Every event, in order (also those before the run directory exists: traces)."""

    def on_samples(self, samples: dict[str, Any]) -> None:
        """Generated samples (see `Experiment.sample`)."""

    def on_status(self, status: Status) -> None:
        """The run's state changed (paused, resumed, ended)."""

    def on_sync(self) -> None:
        """Write out everything received so far (before a checkpoint or a rollback: the record must hold
        every step a checkpoint holds)."""

    def on_run_end(self, run: RunHandle, reason: str) -> None:
        """Training ended (`done`, `stopped` or `error`); the `stop` event follows."""


def overrides(observer: Observer, hook: str) -> bool:
    """Whether `observer` has its own `hook` (the loop calls per-step hooks only on those)."""
    return getattr(type(observer), hook) is not getattr(Observer, hook)


def step_hooks(observers: list[Observer]) -> list[tuple[Observer, int]]:
    """The observers whose `on_step_end` a loop calls, each with its `step_period` (those with 0 left out)."""
    return [(o, int(o.step_period)) for o in observers if overrides(o, "on_step_end") and o.step_period]

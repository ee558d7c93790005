"""Every run's observers, in one list: the Keras-callbacks idea (TensorBoard, checkpoints,
TerminateOnNaN are each a callback in a list) applied to the loop. The trainer only runs the list; what
a run does besides training (samples, metrics, checkpoints, alarms, commands from a file, the record)
is decided here, in one place, in the order that matters."""
from __future__ import annotations

from training_core.base.config import RunConfig
from training_core.observers.alarms import LeakAlarm, NanAlarm, NanRollback
from training_core.observers.base import Observer
from training_core.observers.checkpointing import Checkpointer
from training_core.observers.command_file import CommandFileReader
from training_core.observers.health import HealthMetrics
from training_core.observers.planned import PlannedCommands
from training_core.observers.record import RunRecord
from training_core.observers.sample_record import SampleRecord
from training_core.observers.sampling import Sampler


def default_observers(config: RunConfig) -> list[Observer]:
    """Every run's observers: the record writer last (it sees what the others emitted), samples and metrics
    before checkpoints (they draw from the sample generator, which a checkpoint saves). A non-chief worker
    of a multiworker run only checkpoints, to a scratch directory: saving is collective."""
    from training_core.engine.distribute import is_chief
    if not is_chief(config.strategy):
        from training_core.observers.scratch import ScratchCleanup
        return [Checkpointer(config.checkpoint_every), ScratchCleanup()]
    rollback = [NanRollback(config.nan_lr_factor)] if config.on_nan == "rollback" else []
    return [Sampler(config.sample_seconds, config.sample_every), HealthMetrics(config.metrics_seconds),
            Checkpointer(config.checkpoint_every), LeakAlarm(), NanAlarm(config.on_nan), *rollback,
            *([CommandFileReader()] if config.command_file else []), *([PlannedCommands()] if config.planned else []),
            SampleRecord(), RunRecord()]

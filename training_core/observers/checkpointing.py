"""When checkpoints are saved: at step 0, every `checkpoint_every` steps, and at the end."""
from __future__ import annotations

from training_core.observers.base import Observer, RunHandle


class Checkpointer(Observer):
    """Checkpoints at step 0 (so a run killed early can resume), every `every` steps (0: none between),
    and at the end, with each model's weights in Keras' format (`models/<name>.weights.h5`). Not after an
    error: a failed step may have left the model half-updated, so the last checkpoint before it stays the
    resume point; and no weights are exported while a loss is non-finite."""

    def __init__(self, every: int) -> None:
        self.every = every

    @property
    def step_period(self) -> int:  # (the loops call `on_step_end` every `every` steps only; never when 0)
        return self.every

    def on_run_begin(self, run: RunHandle) -> None:
        run.save_checkpoint()

    def on_step_end(self, run: RunHandle) -> None:
        if self.every and run.step % self.every == 0:
            run.save_checkpoint()

    def on_run_end(self, run: RunHandle, reason: str) -> None:
        if reason != "error":
            run.save_checkpoint()
            if run.nan_at is None:
                run.export_weights()

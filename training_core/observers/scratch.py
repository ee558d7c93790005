"""A non-chief worker's scratch folder, removed at the end (multi-worker runs: loop/multiworker.py)."""
from __future__ import annotations

import shutil

from training_core.observers.base import Observer, RunHandle


class ScratchCleanup(Observer):
    """A non-chief worker checkpoints with the others (TensorFlow's saving may run collectives) into a
    scratch directory of its own, removed when the run ends: the chief's checkpoints are the record."""

    def on_run_end(self, run: RunHandle, reason: str) -> None:
        if run.scratch_dir is not None:  # never `run_dir`: on a resume that is the chief's record
            shutil.rmtree(run.scratch_dir, ignore_errors=True)

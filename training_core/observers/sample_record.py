"""The record's samples: every drawing the run makes goes to `samples/` (rundir/samples.py has the files)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from training_core.observers.base import Observer, RunHandle
from training_core.rundir.samples import write_samples


class SampleRecord(Observer):
    """Writes each drawing of samples to `samples/` (compressed; a few kB each). It takes what is drawn but
    asks for no live cadence: the handle's `wants_samples` counts it as "record"."""

    records_only = True

    def __init__(self) -> None:
        self.run_dir: Path | None = None

    def on_run_begin(self, run: RunHandle) -> None:
        self.run_dir = Path(run.run_dir)

    def on_samples(self, samples: dict[str, Any]) -> None:
        if self.run_dir is not None:
            write_samples(self.run_dir, samples)

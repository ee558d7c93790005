"""The run record as an observer: hands a run's events and metrics to a `rundir.writer.RecordWriter`.

The files are opened when the run's first event (`start` or `resumed`) comes, so that event is on disk
before any later observer (the window) sees it: a window that resumes a run reads the record then.
Events emitted before the run directory exists (traces at warm-up) are kept and written first; on a
resumed run they are stamped with the step it resumes from, so the steps of `events.jsonl` never go back.
Each drawing of samples is handed to the writer too (for TensorBoard's images: drawn on its thread); the
record takes what is drawn but asks for no live cadence (`records_only`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from training_core.base import events as E
from training_core.base.metrics import MetricsBatch
from training_core.observers.base import Observer, RunHandle
from training_core.rundir.writer import RecordWriter


class RunRecord(Observer):
    """`config.toml`, `events.jsonl`, `scalars.csv`, `variables/`, `tb/` of the run it observes."""

    records_only = True  # it takes samples for tb/, at whatever pace they are drawn

    def __init__(self) -> None:
        self.writer: RecordWriter | None = None
        self._early: list[E.Event] = []
        self._run: RunHandle | None = None

    def on_prepared(self, run: RunHandle) -> None:
        self._run = run

    def on_run_begin(self, run: RunHandle) -> None:
        self._run = run
        if self.writer is None:
            self._open(run)

    def _open(self, run: RunHandle) -> None:
        self.writer = RecordWriter(run.run_dir, list(zip(run.phase_names, run.phase_paths)),
                                   config=None if run.resumed else run.config, tensorboard=run.config.tensorboard,
                                   tb_session_start=run.step + 1 if run.resumed else None,
                                   hparams_config=run.config)
        early, self._early = self._early, []
        for e in early:
            self.writer.event(replace(e, step=max(e.step, run.step)))

    def on_event(self, event: E.Event) -> None:
        if self.writer is None:
            self._early.append(event)
            if isinstance(event, (E.Start, E.Resumed)) and self._run is not None:
                self._open(self._run)
            return
        self.writer.event(event)

    def on_metrics(self, batch: MetricsBatch) -> None:
        if self.writer is not None:
            self.writer.metrics(batch.blocks, batch.scalars)

    def on_samples(self, samples: dict[str, Any]) -> None:
        if self.writer is not None:
            self.writer.samples(samples)

    def on_sync(self) -> None:
        if self.writer is not None:
            self.writer.sync()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

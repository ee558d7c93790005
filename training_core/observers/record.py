"""The run record as an observer: hands a run's events and metrics to a `rundir.writer.RecordWriter`.

The files are opened when the run's first event (`start` or `resumed`) comes, so that event is on disk
before any later observer (the window) sees it: a window that resumes a run reads the record then.
Events emitted before the run directory exists (traces at warm-up) are kept and written first; on a
resumed run they are stamped with the step it resumes from, so the steps of `events.jsonl` never go back.
Each drawing of samples is handed to the writer too (for TensorBoard's images: drawn on its thread); the
record takes what is drawn but asks for no live cadence (`records_only`).

Holding back: while a measure runs beside training on the weights of step S (engine/beside.py), its values
will be recorded at S, after the steps that ran meanwhile. The record's readers take scalars.csv as being in
step order (cutting it back to a checkpoint scans it from the end for the last row at or before a step:
rundir/trim.py; a resume starts from the last step it holds), so the rows of the steps after S wait here until
the measure is no longer in flight (`RunHandle.measure_step`: its values, if any, are then in the batch that
comes), and every write is in step order with the file. Only the record waits: the alarms and the live views
get every batch as it is fetched. What waits is a few numbers per step on the host; the loop bounds how many
(`HOLD_MAX_STEPS`, loop/trainer.py), and whatever waits is written before a sync (a checkpoint, a rollback)
and before the `stop` event, whether the measure came or was dropped.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import numpy as np

from training_core.base import events as E
from training_core.base.metrics import MetricsBatch, PhaseBlock
from training_core.observers.base import Observer, RunHandle
from training_core.rundir.writer import RecordWriter


class RunRecord(Observer):
    """`config.toml`, `events.jsonl`, `scalars.csv`, `variables/`, `tb/` of the run it observes."""

    records_only = True  # it takes samples for tb/, at whatever pace they are drawn

    def __init__(self) -> None:
        self.writer: RecordWriter | None = None
        self._early: list[E.Event] = []
        self._run: RunHandle | None = None
        self._held: list[MetricsBatch] = []  # batches (or their rows after the measure in flight's step) not written

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
        if isinstance(event, E.SampleRequested):
            return  # not a control: a watcher asks every 2 s; its answer is the samples file (runs/attach.py)
        if self.writer is None:
            self._early.append(event)
            if isinstance(event, (E.Start, E.Resumed)) and self._run is not None:
                self._open(self._run)
            return
        if isinstance(event, E.Stop):  # the last event: nothing will come that the rows held could wait for
            self._write_held(None)
        self.writer.event(event)

    def on_metrics(self, batch: MetricsBatch) -> None:
        if self.writer is not None:
            self._held.append(batch)
            self._write_held(None if self._run is None else self._run.measure_step)

    def _write_held(self, measuring: int | None) -> None:
        """Write the rows held of the steps up to `measuring` (None: all of them) as one write, in step order
        (the writer orders a write's rows by step: a measure's row at S comes before the losses of S + 1 held
        for it); keep the rest."""
        if not self._held:
            return
        batches, self._held = self._held, []
        if measuring is not None:
            self._held = [b for b in (_rows(b, lambda s: s > measuring) for b in batches) if b.blocks or b.scalars]
            batches = [_rows(b, lambda s: s <= measuring) for b in batches]
        blocks = [blk for b in batches for blk in b.blocks]
        scalars: dict = {}
        for b in batches:
            for tag, cols in b.scalars.items():
                scalars[tag] = cols if tag not in scalars else tuple(np.concatenate(c) for c in zip(scalars[tag], cols))
        if blocks or scalars:
            self.writer.metrics(blocks, scalars)

    def on_samples(self, samples: dict[str, Any]) -> None:
        if self.writer is not None:
            self.writer.samples(samples)

    def on_sync(self) -> None:
        if self.writer is not None:
            self._write_held(None if self._run is None else self._run.measure_step)
            self.writer.sync()


def _rows(batch: MetricsBatch, keep: Callable[[np.ndarray], np.ndarray]) -> MetricsBatch:
    """The batch's rows whose steps `keep` selects (its blocks and its scalars); empty blocks left out."""
    blocks: list[PhaseBlock] = []
    for b in batch.blocks:
        mask = keep(b.steps)
        if mask.all():
            blocks.append(b)
        elif mask.any():
            blocks.append(b.take(mask))
    scalars = {}
    for tag, (steps, wall, values) in batch.scalars.items():
        mask = keep(steps)
        if mask.any():
            scalars[tag] = (steps[mask], wall[mask], values[mask])
    return MetricsBatch(blocks, batch.status, scalars)

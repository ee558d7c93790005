"""Writes the run directory incrementally: the one record of what happened, as an observer of the run.

Scalars are formatted and written by a background thread, so the training thread only hands over
numpy arrays; every batch is flushed, so a killed process leaves all batches before the last one
readable. Events are rare and written (and flushed) at once, in order; the `stop` event is the last
line of a run and closes the record. Events emitted before the run directory exists (traces at
warm-up) are kept and written first.
"""
from __future__ import annotations

import json
from datetime import datetime
import queue
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import events as E
from .errors import UserError
from .metrics import MetricsBatch, PhaseBlock
from .observers import Observer
from .runlog import CHECKPOINT_DIR, CONFIG_FILE, EVENTS_FILE, SCALARS_FILE, SCALARS_HEADER, TB_DIR
from .varstore import KINDS, VARIABLES_DIR, VarFileWriter, file_name

if TYPE_CHECKING:
    from .config import RunConfig
    from .trainer import Trainer

_STOP = object()
#: TensorBoard gets every variable's norms up to this many variables; above, one summary per model
#: (top-level scope): per-variable TensorBoard files of a 500-variable model grew by ~650 MB per 10^6 steps.
TB_PER_VARIABLE_MAX = 64


def check_run_dir_free(path: str | Path) -> Path:
    """Refuse a run directory that already holds something, so nothing recorded is ever overwritten."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UserError(f"run directory {p} is a file; pass a new --run-dir")
    if p.exists() and any(p.iterdir()):
        raise UserError(f"run directory {p} already exists and is not empty; pass a new --run-dir")
    return p


def prepare_run_dir(path: str | Path) -> Path:
    """Create a fresh run directory (checked free and writable)."""
    p = check_run_dir_free(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UserError(f"run directory {p} is not writable ({e.strerror}); choose another --run-dir") from None
    return p


def _jsonable(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


class _TensorBoard:
    """Per-step TensorBoard rows: losses always; per-variable norms, or per model for wide models."""

    def __init__(self, run_dir: Path, phase_paths: dict[str, tuple[str, ...]]) -> None:
        from .tb_writer import EventWriter
        self.writer = EventWriter(run_dir / TB_DIR)
        self.per_variable = sum(len(p) for p in phase_paths.values()) <= TB_PER_VARIABLE_MAX

    def rows(self, b: PhaseBlock, r: int) -> list[tuple[str, float]]:
        if self.per_variable:
            return [(f"{kind}/{path}", v) for kind, arr in (("update_norm", b.update_norm),
                                                             ("update_ratio", b.update_ratio),
                                                             ("grad_norm", b.grad_norm))
                    for path, v in zip(b.var_paths, arr[r].tolist())]
        tops: dict[str, list[int]] = {}
        for j, path in enumerate(b.var_paths):
            tops.setdefault(path.split("/")[0], []).append(j)
        out = []
        for top, idx in tops.items():
            upd, w, grad = (float(np.sqrt(np.sum(np.square(a[r, idx])))) for a in
                            (b.update_norm, b.weight_norm, b.grad_norm))
            out += [(f"update_norm/{top}", upd), (f"update_ratio/{top}", upd / w if w > 0 else 0.0),
                    (f"grad_norm/{top}", grad)]
        return out


class RunRecord(Observer):
    """`config.toml`, `events.jsonl`, `scalars.csv` (losses), `variables/` (per-variable norms), `tb/`."""

    def __init__(self) -> None:
        self.dir: Path | None = None
        self._early: list[E.Event] = []
        self._events = None
        self._scalars = None
        self._vars: dict[str, VarFileWriter] = {}
        self._tb: _TensorBoard | None = None
        self._queue: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._writer, name="freezeframe-recorder", daemon=True)

    # -- observer hooks -------------------------------------------------------------------------------------
    def on_run_begin(self, trainer: "Trainer") -> None:
        d = self.dir = trainer.run_dir
        trainer.config.write_toml(d / CONFIG_FILE)
        (d / CHECKPOINT_DIR).mkdir(exist_ok=True)
        (d / VARIABLES_DIR).mkdir(exist_ok=True)
        p = trainer.prepared
        self._vars = {name: VarFileWriter(d / VARIABLES_DIR / file_name(i, name), name, paths)
                      for i, (name, paths) in enumerate(zip(p.phase_names, p.phase_paths))}
        self._scalars = open(d / SCALARS_FILE, "a", encoding="utf-8", newline="\n")
        if self._scalars.tell() == 0:
            self._scalars.write(SCALARS_HEADER + "\n")
            self._scalars.flush()
        self._events = open(d / EVENTS_FILE, "a", encoding="utf-8")
        if trainer.config.tensorboard:
            self._tb = _TensorBoard(d, dict(zip(p.phase_names, p.phase_paths)))
        self._thread.start()
        early, self._early = self._early, []
        for e in early:
            self._write_event(e)

    def on_event(self, event: E.Event) -> None:
        if self._events is None:
            self._early.append(event)
            return
        self._write_event(event)
        if isinstance(event, E.Stop):
            self.close()

    def on_metrics(self, batch: MetricsBatch) -> None:
        if self._error is not None:
            raise self._error
        if self._scalars is not None:
            self._queue.put((batch.blocks, batch.scalars))

    # -- writing --------------------------------------------------------------------------------------------
    def _write_event(self, event: E.Event) -> None:
        with self._lock:
            if self._events is None or self._events.closed:
                return
            self._events.write(json.dumps(event.to_dict(), default=_jsonable) + "\n")
            self._events.flush()

    def close(self) -> None:
        """Write what is queued, then close every file (the `stop` event does this)."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        for f in [self._scalars, *self._vars.values()]:
            if f is not None:
                f.close()
        with self._lock:
            if self._events is not None:
                self._events.close()
        if self._tb is not None:
            self._tb.writer.close()

    def _writer(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                if self._error is None:
                    self._write(item)
            except BaseException as e:  # noqa: BLE001 - surfaced to the trainer on its next batch
                self._error = e
            finally:
                self._queue.task_done()

    def _write(self, item: tuple[list[PhaseBlock], dict]) -> None:
        blocks, scalars = item
        # losses of all phases and other scalars (metric/...), in step order (a batch holds each phase's
        # steps as one block; a scalar measured after step N comes after that step's losses)
        cols = [(b.steps, b.wall_time, b.loss, f"loss/{b.phase}") for b in blocks]
        cols += [(s, w, v, tag) for tag, (s, w, v) in scalars.items()]
        if cols:
            steps = np.concatenate([c[0] for c in cols])
            order = np.argsort(steps, kind="stable")
            wall = np.concatenate([c[1] for c in cols])[order]
            values = np.concatenate([c[2] for c in cols])[order]
            tags = np.concatenate([np.full(len(c[0]), c[3], dtype=object) for c in cols])[order]
            self._scalars.write("".join(f"{s},{w:.3f},{t},{v:.9g}\n" for s, w, t, v in
                                        zip(steps[order].tolist(), wall.tolist(), tags.tolist(), values.tolist())))
            self._scalars.flush()
        tb_rows: dict[int, tuple[float, list[tuple[str, float]]]] = {}
        for tag, (s_, w_, v_) in scalars.items():
            for s, w, v in zip(s_.tolist(), w_.tolist(), v_.tolist()):
                tb_rows.setdefault(s, (w, []))[1].append((tag, v))
        for b in blocks:
            for s, w, v in zip(b.steps.tolist(), b.wall_time.tolist(), b.loss.tolist()):
                tb_rows.setdefault(s, (w, []))[1].append((f"loss/{b.phase}", v))
            keep = b.record
            if not keep.any():
                continue
            self._vars[b.phase].append(b.steps[keep], b.wall_time[keep], b.update_norm[keep], b.update_ratio[keep],
                                       b.grad_norm[keep], b.frozen[keep])
            if self._tb is not None:
                for r in np.flatnonzero(keep).tolist():
                    tb_rows.setdefault(int(b.steps[r]), (float(b.wall_time[r]), []))[1].extend(self._tb.rows(b, r))
        for f in self._vars.values():
            f.flush()
        if self._tb is not None:
            for s in sorted(tb_rows):
                w, vals = tb_rows[s]
                self._tb.writer.add_scalars(s, w, vals)
            self._tb.writer.flush()


def default_run_dir(config: "RunConfig", folder: str | Path = "runs") -> Path:
    """FOLDER/NAME-YYYYmmdd-HHMMSS, with -2, -3, ... if that exists (headless and the window alike)."""
    name = Path(config.experiment_file).stem if config.experiment_file else (config.example or "run")
    base = Path(folder) / f"{name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    p, k = base, 1
    while p.exists():
        k += 1
        p = base.with_name(f"{base.name}-{k}")
    return p


"""Writes the run directory incrementally: the one record of what happened.

Scalars are formatted and written by a background thread, so the training thread only hands over
numpy arrays; every batch is flushed, so a killed process leaves all batches before the last one
readable. Events are rare and written (and flushed) at once, in order.
"""
from __future__ import annotations

import json
import queue
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from .config import RunConfig
from .errors import UserError
from .metrics import PhaseBlock
from .runlog import CHECKPOINT_DIR, CONFIG_FILE, EVENTS_FILE, SCALARS_FILE, SCALARS_HEADER, TB_DIR

_STOP = object()


def check_run_dir_free(path: str | Path) -> Path:
    """Refuse a run directory that already holds something, so nothing recorded is ever overwritten."""
    p = Path(path)
    if p.exists() and (not p.is_dir() or any(p.iterdir())):
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


class Recorder:
    def __init__(self, run_dir: Path, config: RunConfig, var_every: int, tensorboard: bool = True):
        self.dir = run_dir
        self.var_every = var_every
        config.write_toml(run_dir / CONFIG_FILE)
        (run_dir / CHECKPOINT_DIR).mkdir(exist_ok=True)
        self._scalars = open(run_dir / SCALARS_FILE, "w", encoding="utf-8", newline="\n")
        self._scalars.write(SCALARS_HEADER + "\n")
        self._scalars.flush()
        self._events = open(run_dir / EVENTS_FILE, "w", encoding="utf-8")
        self._tb = None
        if tensorboard:
            from .tb_writer import EventWriter
            self._tb = EventWriter(run_dir / TB_DIR)
        self._queue: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._writer, name="freezeframe-recorder", daemon=True)
        self._thread.start()
        self._lock = threading.Lock()

    @property
    def checkpoint_prefix(self) -> str:
        return str(self.dir / CHECKPOINT_DIR / "ckpt")

    def event(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._events.write(json.dumps(event, default=_jsonable) + "\n")
            self._events.flush()

    def scalars(self, blocks: list[PhaseBlock]) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(blocks)

    def flush(self) -> None:
        """Wait until every batch handed over is on disk."""
        self._queue.join()
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        self._scalars.close()
        with self._lock:
            self._events.close()
        if self._tb is not None:
            self._tb.close()

    # -- writer thread ------------------------------------------------------------------------------------
    def _writer(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                if self._error is None:
                    self._write(item)
            except BaseException as e:  # noqa: BLE001 - surfaced to the trainer on its next call
                self._error = e
            finally:
                self._queue.task_done()

    def _write(self, blocks: list[PhaseBlock]) -> None:
        lines: list[str] = []
        tb_rows: dict[int, tuple[float, list[tuple[str, float]]]] = {}
        for b in blocks:
            tag = f"loss/{b.phase}"
            for s, w, v in zip(b.steps.tolist(), b.wall_time.tolist(), b.loss.tolist()):
                lines.append(f"{s},{w:.3f},{tag},{v:.9g}\n")
                tb_rows.setdefault(s, (w, []))[1].append((tag, v))
            for r in np.flatnonzero(b.record).tolist():
                s, w = int(b.steps[r]), float(b.wall_time[r])
                row = tb_rows.setdefault(s, (w, []))[1]
                for name, arr in (("update_norm", b.update_norm), ("update_ratio", b.update_ratio),
                                  ("grad_norm", b.grad_norm)):
                    for path, v in zip(b.var_paths, arr[r].tolist()):
                        t = f"{name}/{path}"
                        lines.append(f"{s},{w:.3f},{t},{v:.9g}\n")
                        row.append((t, v))
        self._scalars.write("".join(lines))
        self._scalars.flush()
        if self._tb is not None:
            for s in sorted(tb_rows):
                w, vals = tb_rows[s]
                self._tb.add_scalars(s, w, vals)
            self._tb.flush()


def _jsonable(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    if isinstance(o, Path):
        return str(o)
    return str(o)


def now() -> float:
    return time.time()

"""Writes a run directory incrementally: the one record of what happened. Needs no Trainer: it takes
events and batches of metrics, so any loop (this project's, or a user's own) writes the same record.

Scalars are formatted and written by a background thread, so the training thread only hands over
numpy arrays; every batch is flushed, so a killed process leaves all batches before the last one
readable. Events are rare and written at once, in order, each with one system call (so a failed write
never leaves half a line in a buffer to be written later); the `stop` event is the last line of a run
and closes the record.

A write that fails (a full disk) becomes `WriteFailed` naming the file and the cause, raised on the
training thread at the next batch or event; after it nothing more is attempted but the closing `error`
and `stop` events, which are written if the disk still takes them and never raise.

TensorBoard (`tb/`) sees what the window sees, in two TensorBoard runs: `tb/training/` holds the losses
and the `metric/<name>` measures as scalars, each drawing of samples as a picture (`samples`), each control
change as a line of text (`controls`) and the run's settings as an HParams session, ended with its status
(success, or failure for a NaN halt or an error); `tb/variables/` the per-variable norms. Two runs because the HParams table's metrics are the scalars of the session's run
(and of the runs below it): with the norms beside the losses, they would be dozens of columns, and an
experiment summary naming the metrics would name them for every run of the logdir alike (TensorBoard
reads one), wrong for runs of other experiments. rundir/tb_views.py says what each looks like.
The training thread only hands over what it already has (the batch, the samples dict, the event); the
pictures are drawn, PNG-encoded and written on the writer's thread. A drawing that cannot be drawn
(arrays of an unexpected shape) is left out of `tb/`, never an error: `samples/` keeps it.
"""
from __future__ import annotations

import json
import queue
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from training_core.base import events as E
from training_core.base.event_json import json_safe
from training_core.base.errors import UserError, WriteFailed, describe
from training_core.base.metrics import PhaseBlock
from training_core.rundir import lock as runlock
from training_core.rundir.layout import CHECKPOINT_DIR, CONFIG_FILE, EVENTS_FILE, SCALARS_FILE, TB_DIR
from training_core.rundir.reading import SCALARS_HEADER
from training_core.rundir.tb_views import (CONTROLS_DESCRIPTION, CONTROLS_TAG, DESCRIPTIONS, SAMPLES_TAG, control_line,
                                           run_hparams, sample_picture)
from training_core.rundir.varstore import VARIABLES_DIR, VarFileWriter, file_name

if TYPE_CHECKING:
    from training_core.base.config import RunConfig



_STOP = object()
# queue items: (kind, payload)
_BATCH = "batch"  # (blocks, scalars)
_SESSION_START = "session_start"  # step: TensorBoard forgets what a rollback undid
_SAMPLES = "samples"  # a drawing, for tb/
_TEXT = "text"  # an event, for tb/'s controls
_HPARAMS = "hparams"  # (values, start time), for tb/'s HParams
_HPARAMS_END = "hparams_end"  # (the stop's reason, its time): how the HParams session ended
_FINAL = (E.Error, E.Stop)  # written if possible, never raising: the run is ending anyway
#: TensorBoard gets every variable's norms up to this many variables; above, one summary per model
#: (top-level scope): per-variable TensorBoard files of a 500-variable model grew by ~650 MB per 10^6 steps.
TB_PER_VARIABLE_MAX = 64


def check_run_dir_free(path: str | Path) -> Path:
    """Refuse a run directory that already holds something, so nothing recorded is ever overwritten."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UserError(f"run directory {p} is a file; pass a new --run-dir")
    held = runlock.refusal(p) if p.is_dir() else None
    if held:
        raise UserError(held)
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
        return json_safe(o.item())
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


class _TensorBoard:
    """`tb/training/` (losses, measures, samples, controls, the HParams session) and `tb/variables/`
    (per-variable norms, or per model for wide models): two TensorBoard runs, so that the HParams table's
    metrics are the scalars of the session's run, the losses and `metric/<name>`, and not the norms.
    `grads` False (a monitored run: the user's code owns its gradients, none is measured): no `grad_norm/`,
    whose zeros TensorBoard would draw as measured."""

    def __init__(self, run_dir: Path, phase_paths: dict[str, tuple[str, ...]], session_start: int,
                 grads: bool = True) -> None:
        from training_core.rundir.tensorboard import TB_TRAINING, TB_VARIABLES, EventWriter
        self.training = EventWriter(run_dir / TB_DIR / TB_TRAINING, session_start)
        self.variables = EventWriter(run_dir / TB_DIR / TB_VARIABLES, session_start)
        self.per_variable = sum(len(p) for p in phase_paths.values()) <= TB_PER_VARIABLE_MAX
        self.grads = grads
        self._session: tuple[dict, float] | None = None  # this process's HParams settings and start time

    def hparams(self, values: dict, start_time: float) -> None:
        """This process's HParams session for `training/`, replacing an earlier process's (a resume)."""
        from training_core.rundir.tensorboard import write_session
        self._session = (values, start_time)
        write_session(self.training.path.parent, values, start_time)

    def session_end(self, reason: str, end_time: float) -> None:
        """The session again, with how it ended (the `stop` event's reason); none without a session begun."""
        from training_core.rundir.tensorboard import write_session
        if self._session is not None:
            write_session(self.training.path.parent, *self._session, end=(reason, end_time))

    def session_start(self, step: int) -> None:
        for w in (self.training, self.variables):
            w.add_session_start(step)

    def flush(self) -> None:
        self.training.flush()
        self.variables.flush()

    def close(self) -> None:
        try:
            self.training.close()
        finally:
            self.variables.close()

    def rows(self, b: PhaseBlock, r: int) -> list[tuple[str, float]]:
        """Row `r`'s scalars: per variable, or per model for wide models; `grad_norm` only where measured."""
        if self.per_variable:
            kinds = [("update_norm", b.update_norm), ("update_ratio", b.update_ratio)]
            kinds += [("grad_norm", b.grad_norm)] if self.grads else []
            return [(f"{kind}/{path}", v) for kind, arr in kinds for path, v in zip(b.var_paths, arr[r].tolist())]
        tops: dict[str, list[int]] = {}
        for j, path in enumerate(b.var_paths):
            tops.setdefault(path.split("/")[0], []).append(j)
        out = []
        for top, idx in tops.items():
            upd, w = (float(np.sqrt(np.sum(np.square(a[r, idx])))) for a in (b.update_norm, b.weight_norm))
            out += [(f"update_norm/{top}", upd), (f"update_ratio/{top}", upd / w if w > 0 else 0.0)]
            if self.grads:
                out.append((f"grad_norm/{top}", float(np.sqrt(np.sum(np.square(b.grad_norm[r, idx]))))))
        return out



class RecordWriter:
    """`config.toml`, `events.jsonl`, `scalars.csv` (losses), `variables/` (per-variable norms), `tb/`.

    `phases` are the phase names with the variable paths each trains, in phase order. `config` is written
    as `config.toml` unless None (a resumed run keeps the configuration it started with).
    `tb_session_start`: TensorBoard forgets what a first process wrote from that step on (a resume).
    `hparams_config`: the configuration TensorBoard's HParams show with the `start` (or `resumed`) event's
    settings (default: `config`; a resumed run gives its own, which is not written)."""

    def __init__(self, run_dir: str | Path, phases: Sequence[tuple[str, Sequence[str]]],
                 config: "RunConfig | None" = None, tensorboard: bool = True,
                 tb_session_start: int | None = None, hparams_config: "RunConfig | None" = None) -> None:
        d = self.dir = Path(run_dir)
        self._torn = False  # the last event write failed part way: start the next on a new line
        self._queue: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._vars: dict[str, VarFileWriter] = {}
        self._tb: _TensorBoard | None = None
        self._hparams_config = hparams_config if hparams_config is not None else config
        self._scalars: Any = None
        self._events: Any = None  # unbuffered: one write per event
        try:
            if config is not None:
                config.write_toml(d / CONFIG_FILE)
            (d / CHECKPOINT_DIR).mkdir(exist_ok=True)
            (d / VARIABLES_DIR).mkdir(exist_ok=True)
            self._vars = {name: VarFileWriter(d / VARIABLES_DIR / file_name(i, name), name, tuple(paths))
                          for i, (name, paths) in enumerate(phases)}
            self._scalars = open(d / SCALARS_FILE, "a", encoding="utf-8", newline="\n")
            if self._scalars.tell() == 0:
                self._scalars.write(SCALARS_HEADER + "\n")
                self._scalars.flush()
            self._events = open(d / EVENTS_FILE, "ab", buffering=0)
            if tensorboard:
                self._tb = _TensorBoard(d, {name: tuple(paths) for name, paths in phases}, tb_session_start or 0,
                                        grads=getattr(self._hparams_config, "monitor", None) is None)
        except OSError as e:
            raise WriteFailed(d, describe(e)) from e
        self._thread = threading.Thread(target=self._writer, name="freezeframe-recorder", daemon=True)
        self._thread.start()

    def event(self, event: E.Event) -> None:
        """Write one event now (TensorBoard gets it as a line of text on the writer's thread, a rollback also
        as a SessionLog START, `start` and `resumed` as the HParams session, `stop` as its end; `stop` closes
        the record)."""
        self._write_event(event)
        if self._tb is not None:
            if isinstance(event, (E.Start, E.Resumed)):
                self._queue.put((_HPARAMS, (run_hparams(event, self._hparams_config), event.time)))
            if isinstance(event, E.Rollback):
                self._queue.put((_SESSION_START, event.step + 1))
            self._queue.put((_TEXT, event))
            if isinstance(event, E.Stop):
                self._queue.put((_HPARAMS_END, (event.reason, event.time)))
        if isinstance(event, E.Stop):
            self.close()

    def metrics(self, blocks: list[PhaseBlock], scalars: dict) -> None:
        """Queue a batch for the writer thread; a write that failed before is raised here."""
        if self._error is not None:
            raise self._error
        self._queue.put((_BATCH, (blocks, scalars)))

    def samples(self, samples: dict[str, Any]) -> None:
        """Queue a drawing of samples for TensorBoard's images (drawn and encoded on the writer thread; the
        dict is read there, not copied: the sampler makes a new one each time)."""
        if self._tb is not None and self._error is None:
            self._queue.put((_SAMPLES, samples))

    def sync(self) -> None:
        """Return once everything queued is on disk (raising a write that failed)."""
        if self._thread.is_alive():
            self._queue.join()
        if self._error is not None:
            raise self._error

    # -- writing --------------------------------------------------------------------------------------------
    def _write_event(self, event: E.Event) -> None:
        text = json.dumps(json_safe(event.to_dict()), default=_jsonable, allow_nan=False)  # strict JSON
        line = ("\n" if self._torn else "") + text + "\n"
        data = line.encode("utf-8")
        with self._lock:
            if self._events is None or self._events.closed:
                return
            try:
                written = self._events.write(data)
                if written != len(data):
                    raise OSError(28, "No space left on device")  # a short write: the disk filled up mid-line
                self._torn = False
            except OSError as e:
                self._torn = True
                if isinstance(event, _FINAL):
                    return
                self._error = self._error or WriteFailed(self.dir / EVENTS_FILE, describe(e))
                raise self._error from e

    def close(self) -> None:
        """Write what is queued, then close every file (the `stop` event does this). Never raises: a file
        whose last bytes cannot be written any more (a full disk) keeps what it has."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        closers = [f.close for f in [self._scalars, *self._vars.values()] if f is not None]
        if self._tb is not None:
            closers.append(self._tb.close)
        with self._lock:
            if self._events is not None:
                closers.append(self._events.close)
            for close in closers:
                try:
                    close()
                except Exception:  # noqa: BLE001 - see the docstring
                    pass

    def _writer(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                if self._error is None:
                    kind, payload = item
                    if kind == _BATCH:
                        self._write(payload)
                    elif kind == _SESSION_START:
                        self._tensorboard(self._tb.session_start, payload)
                    elif kind == _SAMPLES:
                        self._picture(payload)
                    elif kind == _TEXT:
                        line = control_line(payload)
                        if line is not None:
                            self._tensorboard(self._tb.training.add_text, payload.step, payload.time, CONTROLS_TAG,
                                              line, CONTROLS_DESCRIPTION)
                    elif kind == _HPARAMS:
                        self._tensorboard(self._tb.hparams, *payload)
                    elif kind == _HPARAMS_END:
                        self._tensorboard(self._tb.session_end, *payload)
            except BaseException as e:  # noqa: BLE001 - surfaced to the trainer on its next batch
                self._error = e
            finally:
                self._queue.task_done()

    def _tensorboard(self, write: Any, *args: Any) -> None:
        """One write to `tb/`, flushed (these are rare); TensorFlow's errors become `WriteFailed`."""
        try:
            write(*args)
            self._tb.flush()
        except Exception as e:
            if isinstance(e, OSError) or type(e).__module__.startswith("tensorflow"):
                raise WriteFailed(self.dir / TB_DIR, describe(e)) from e
            raise

    def _picture(self, samples: dict[str, Any]) -> None:
        """Every drawing is a picture, two at one step included (the end of a run may draw again at the step
        of the last timed drawing; `samples/` keeps the later one, TensorBoard both, in order)."""
        try:
            step = int(samples.get("step", 0))
            pixels = sample_picture(samples)
        except Exception:  # noqa: BLE001 - an experiment's odd arrays: samples/ keeps the drawing
            return
        if pixels is not None:
            self._tensorboard(self._tb.training.add_image, step, time.time(), SAMPLES_TAG, pixels,
                              DESCRIPTIONS.get(str(samples.get("kind")), ""))

    def _write(self, item: tuple[list[PhaseBlock], dict]) -> None:
        blocks, scalars = item
        try:
            self._write_scalars(blocks, scalars)
        except OSError as e:
            raise WriteFailed(self.dir / SCALARS_FILE, describe(e)) from e
        try:
            self._write_rest(blocks, scalars)
        except OSError as e:
            raise WriteFailed(self.dir / VARIABLES_DIR, describe(e)) from e
        except Exception as e:
            if type(e).__module__.startswith("tensorflow"):  # TensorBoard's writer: TensorFlow's error types
                raise WriteFailed(self.dir / TB_DIR, describe(e)) from e
            raise

    def _write_scalars(self, blocks: list[PhaseBlock], scalars: dict) -> None:
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

    def _write_rest(self, blocks: list[PhaseBlock], scalars: dict) -> None:
        rows: dict[int, tuple[float, list[tuple[str, float]]]] = {}  # tb/training: losses and measures
        var_rows: dict[int, tuple[float, list[tuple[str, float]]]] = {}  # tb/variables: norms
        for tag, (s_, w_, v_) in scalars.items():
            for s, w, v in zip(s_.tolist(), w_.tolist(), v_.tolist()):
                rows.setdefault(s, (w, []))[1].append((tag, v))
        for b in blocks:
            for s, w, v in zip(b.steps.tolist(), b.wall_time.tolist(), b.loss.tolist()):
                rows.setdefault(s, (w, []))[1].append((f"loss/{b.phase}", v))
            keep = b.record
            if not keep.any():
                continue
            self._vars[b.phase].append(b.steps[keep], b.wall_time[keep], b.update_norm[keep], b.update_ratio[keep],
                                       b.grad_norm[keep], b.frozen[keep])
            if self._tb is not None:
                for r in np.flatnonzero(keep).tolist():
                    var_rows.setdefault(int(b.steps[r]), (float(b.wall_time[r]), []))[1].extend(self._tb.rows(b, r))
        for f in self._vars.values():
            f.flush()
        if self._tb is not None:
            for writer, by_step in ((self._tb.training, rows), (self._tb.variables, var_rows)):
                for s in sorted(by_step):
                    w, vals = by_step[s]
                    writer.add_scalars(s, w, vals)
            self._tb.flush()


def default_run_dir(config: "RunConfig", folder: str | Path = "runs") -> Path:
    """FOLDER/NAME-YYYYmmdd-HHMMSS, with -2, -3, ... if that exists (headless and the window alike)."""
    name = Path(config.experiment_file).stem if config.experiment_file else (config.example or "run")
    base = Path(folder) / f"{name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    p, k = base, 1
    while p.exists():
        k += 1
        p = base.with_name(f"{base.name}-{k}")
    return p


"""The thread adapter: the training core runs on one QThread per window and reports through queued signals.

The core is plain blocking Python (`Trainer.prepare()`, `Trainer.run()`), so it gets a thread of its own
and the window never waits on it: jobs (load TensorFlow, prepare, run) are requested through queued
signals and run one after another on the worker thread; reports come back as queued signals; controls
go straight into the trainer's thread-safe command queue. Nothing here touches a widget.

TensorFlow is imported by the first job, on the worker thread, so the window can be visible before the
~3 s import finishes.
"""
from __future__ import annotations

import atexit
import copy
import threading
import weakref
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QThread, Signal, Slot

from training_core import (Command, MetricsBatch, Observer, RunConfig, ScopeNode, SetFreeze, SetFreezeMethod,
                           SetLearningRate, SetSchedule, Status, Stop, Trainer, UserError, VarInfo)

from .scheduling import configure_gui_process, gui_intra_op_threads, lower_this_thread

#: every training thread a window started and has not yet joined; tests fail if one is left running
_THREADS: list[QThread] = []
_HANDLES: "weakref.WeakSet[TrainingThread]" = weakref.WeakSet()


def running_threads() -> list[QThread]:
    """Training threads still running (for the test suite's no-thread-left check)."""
    return [t for t in _THREADS if shiboken6.isValid(t) and t.isRunning()]


@dataclass(frozen=True)
class PreparedInfo:
    """What the window needs of a prepared trainer, copied on the worker thread so the GUI never reads
    state the training thread may change."""

    config: RunConfig  # resolved: schedule, learning rates, freeze filled in
    var_infos: list[VarInfo]
    tree: ScopeNode
    phase_names: list[str]
    sample_kind: str
    device_name: str
    description: str

    @classmethod
    def of(cls, trainer: Trainer) -> "PreparedInfo":
        exp = trainer.prepared.experiment
        return cls(copy.deepcopy(trainer.config), list(trainer.var_infos), trainer.scope_tree,
                   list(trainer.phase_names), exp.sample_kind, trainer.prepared.device_name, exp.description)


class _SignalObserver(Observer):
    """Called on the training thread; only emits (queued to the GUI thread), never blocks."""

    def __init__(self, worker: "TrainingWorker") -> None:
        self._w = worker

    def on_prepared(self, trainer: Trainer) -> None:
        self._w.prepared.emit(PreparedInfo.of(trainer))

    def on_metrics(self, batch: MetricsBatch) -> None:
        self._w.metrics.emit(batch)

    def on_event(self, event: dict[str, Any]) -> None:
        self._w.event.emit(event)

    def on_samples(self, samples: dict[str, Any]) -> None:
        self._w.samples.emit(samples)

    def on_status(self, status: Status) -> None:
        self._w.status.emit(status)


def _same_source(trainer: Trainer, config: RunConfig) -> bool:
    """Whether a prepared trainer was built from what `config` asks for (so Start can reuse it)."""
    from training_core.experiment import file_sha256
    tc = trainer.config
    if (tc.experiment_file or None) != (config.experiment_file or None) or tc.seed != config.seed \
            or (tc.device or "auto") != (config.device or "auto"):
        return False
    if config.experiment_file:
        try:
            return file_sha256(config.experiment_file) == tc.experiment_sha256  # the user edited the file
        except OSError:
            return False
    return tc.example == config.example


def catch_up_commands(trainer: Trainer, config: RunConfig) -> list[Command]:
    """Commands that bring a prepared trainer to the settings the user chose after it was prepared."""
    tc, out = trainer.config, []
    if set(config.freeze) != set(trainer.freeze) or config.update_frozen_stats != tc.update_frozen_stats:
        out.append(SetFreeze(tuple(config.freeze), config.update_frozen_stats))
    if config.schedule and config.schedule != tc.schedule:
        out.append(SetSchedule(dict(config.schedule)))
    for phase, value in config.lr.items():
        if abs(float(value) - float(tc.lr.get(phase, -1.0))) > 1e-12 * max(1.0, abs(float(value))):
            out.append(SetLearningRate(phase, float(value)))
    if config.freeze_method != tc.freeze_method:
        out.append(SetFreezeMethod(config.freeze_method))
    return out


class TrainingWorker(QObject):
    """Lives on the training thread. Slots are jobs; signals are reports (all queued to the window)."""

    busy = Signal(str)  # what the worker is doing ("Loading TensorFlow…"), "" when idle
    loaded = Signal(object)  # list[str]: devices, once TensorFlow is imported
    prepared = Signal(object)  # PreparedInfo
    failed = Signal(str, str)  # one-line summary, details
    runStarted = Signal(str)  # run directory (may be "" until the core creates it)
    runFinished = Signal(object)  # final Status, or None when the run never started
    metrics = Signal(object)  # MetricsBatch
    event = Signal(object)  # dict
    samples = Signal(object)  # dict
    status = Signal(object)  # Status

    def __init__(self) -> None:
        super().__init__()
        self._observer = _SignalObserver(self)
        self._lock = threading.Lock()
        self._fresh: Trainer | None = None  # prepared, never run: Start can reuse it
        self._active: Trainer | None = None  # running
        self._accepting = False  # a run was requested: commands wait in _pending until it starts
        self._pending: list[Command] = []

    # -- any thread ---------------------------------------------------------------------------------------
    def begin_run(self) -> None:
        """Called by the GUI just before it requests a run, so commands sent meanwhile are kept."""
        with self._lock:
            self._pending.clear()
            self._accepting = True

    def send(self, command: Command) -> bool:
        """Hand a command to the running trainer (or to the one about to run). False if none will."""
        with self._lock:
            trainer = self._active
            if trainer is None:
                if self._accepting:
                    self._pending.append(command)
                return self._accepting
        trainer.send(command)
        return True

    # -- jobs (worker thread) ------------------------------------------------------------------------------
    @Slot()
    def load(self) -> None:
        self.busy.emit("Loading TensorFlow…")
        try:
            from training_core.devices import list_devices
            from training_core.tf_quiet import import_tensorflow
            # the core's quiet import (no oneDNN/CUDA chatter), leaving one core to the GUI: with TensorFlow on
            # every core, each redraw waited for a core and the 25 Hz refresh ran late (bench/run.py)
            import_tensorflow(intra_op_threads=gui_intra_op_threads())
            configure_gui_process()
            devices = list_devices()
        except Exception as e:  # noqa: BLE001 - a broken TensorFlow install is shown, not raised
            self.failed.emit(f"TensorFlow could not be loaded: {type(e).__name__}: {e}", traceback.format_exc())
            devices = []
        self.busy.emit("")
        self.loaded.emit(devices)

    @Slot(object)
    def prepare(self, config: RunConfig) -> None:
        self._fresh = None
        try:
            self._fresh = self._new_trainer(config)
        except BaseException as e:  # noqa: BLE001 - reported to the window
            self._report(e)
        finally:
            self.busy.emit("")

    @Slot(object)
    def run(self, config: RunConfig) -> None:
        trainer, status = None, None
        try:
            trainer = self._fresh if self._fresh is not None and _same_source(self._fresh, config) else None
            self._fresh = None
            if trainer is None:
                trainer = self._new_trainer(config)
            else:
                for cmd in catch_up_commands(trainer, config):
                    trainer.send(cmd)
            trainer.config.steps = config.steps
            trainer.config.run_dir = config.run_dir
            with self._lock:
                pending, self._pending = self._pending, []
                stopped = any(isinstance(c, Stop) for c in pending)
                if not stopped:
                    self._active = trainer
            if stopped:  # stopped (or the window closed) while preparing: nothing to record
                self._fresh = trainer
                return
            for cmd in pending:
                trainer.send(cmd)
            self.busy.emit("")
            self.runStarted.emit(str(config.run_dir or ""))
            status = trainer.run()
        except BaseException as e:  # noqa: BLE001 - the core recorded it; the window shows it
            self._report(e)
            if trainer is not None and trainer.prepared is not None:
                status = trainer.status()
        finally:
            with self._lock:
                self._active = None
                self._accepting = False
                self._pending.clear()
            if trainer is not None and trainer.prepared is not None and trainer.run_dir is None \
                    and self._fresh is None:
                self._fresh = trainer  # failed before its run directory existed (unwritable): reusable
            self.busy.emit("")
            self.runFinished.emit(status)

    def _new_trainer(self, config: RunConfig) -> Trainer:
        name = Path(config.experiment_file).name if config.experiment_file else config.example
        self.busy.emit(f"Preparing {name}…")
        trainer = Trainer(copy.deepcopy(config), self._observer)
        trainer.prepare()
        return trainer

    def _report(self, e: BaseException) -> None:
        if isinstance(e, UserError):
            self.failed.emit(str(e), e.detail or "")
        else:
            self.failed.emit(f"{type(e).__name__}: {e}", traceback.format_exc())


class _PythonThread(QThread):
    """A QThread whose event loop runs inside one Python call.

    With the default `QThread.run()`, PySide gives each queued slot call a fresh Python thread state
    and destroys it afterwards. TensorFlow's pybind11 layer caches the thread state of the first call
    and later dereferences it: a segfault in the second job (seen with TF 2.21 / PySide6 6.11). Running
    `exec()` from Python keeps one thread state alive for the thread's whole life.
    """

    def run(self) -> None:
        lower_this_thread()  # before TensorFlow starts its pools here: they inherit it
        self.exec()


class TrainingThread(QObject):
    """The GUI thread's handle on a worker and its QThread: request jobs, send commands, shut down."""

    _load = Signal()
    _prepare = Signal(object)
    _run = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = TrainingWorker()
        self.thread = _PythonThread()
        self.thread.setObjectName("freezeframe-training")
        self.worker.moveToThread(self.thread)
        self._load.connect(self.worker.load)
        self._prepare.connect(self.worker.prepare)
        self._run.connect(self.worker.run)
        self.thread.finished.connect(self.worker.deleteLater)
        _THREADS.append(self.thread)
        _HANDLES.add(self)
        self.thread.start()

    def load(self) -> None:
        """Import TensorFlow and list devices (reports `loaded`)."""
        self._load.emit()

    def prepare(self, config: RunConfig) -> None:
        """Prepare a trainer for `config` (reports `prepared` or `failed`); Start reuses it."""
        self._prepare.emit(copy.deepcopy(config))

    def start(self, config: RunConfig) -> None:
        """Run `config`: reuse the prepared trainer when it matches, otherwise prepare a new one first."""
        self.worker.begin_run()
        self._run.emit(copy.deepcopy(config))

    def send(self, command: Command) -> bool:
        return self.worker.send(command)

    def shutdown(self, timeout_s: float = 2.0) -> bool:
        """Stop training, let the core flush its record, and join the thread. True if it ended in time.

        A job that cannot be interrupted (importing TensorFlow, tracing) is waited for past the timeout:
        destroying a running QThread would abort the process.
        """
        if not shiboken6.isValid(self.thread):
            return True
        if shiboken6.isValid(self.worker):
            self.worker.send(Stop())
        self.thread.quit()
        in_time = self.thread.wait(int(timeout_s * 1000))
        if not in_time:
            self.thread.wait()
        if self.thread in _THREADS:
            _THREADS.remove(self.thread)
        return in_time


@atexit.register
def _join_at_exit() -> None:
    """A script that exits without closing its window still stops training and joins the thread
    (Qt aborts the process when a running QThread is destroyed)."""
    for handle in list(_HANDLES):
        if shiboken6.isValid(handle):
            handle.shutdown()

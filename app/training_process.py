"""The adapter between the window and its training process.

Training runs in a process of its own (`training_core.service`): a thread of the window's process would
share the GIL with the GUI, and every bit of Python the GUI runs would stall it (README, Performance).
The window talks to it through one pipe: requests (load TensorFlow, prepare, run, commands) go out as
the typed messages of `training_core.base.protocol`; reports come back and a reader thread emits each, queued
to the GUI thread, as `report` (the window's `Session` takes them all) and as the signal a table maps its
type to (for listeners that want one kind). Nothing here touches a widget.

`TrainingService` is what the window needs of this: tests of the window's own widgets pass a stand-in
that emits the same reports without a process (tests/app/fake_service.py).

TensorFlow is imported by the service's first job, so the window is visible long before the ~3 s
import finishes (and the window's own process never imports TensorFlow at all).
"""
from __future__ import annotations

import atexit
import copy
import os
import secrets
import subprocess
import sys
import threading
import weakref
from multiprocessing.connection import Client, Listener
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QObject, Signal

from training_core import Command, RunConfig
from training_core.base import protocol as P

from .scheduling import gui_intra_op_threads, training_nice, training_policy

__all__ = ["Reports", "TrainingProcess", "TrainingService", "still_running"]

ROOT = Path(__file__).resolve().parent.parent  # the project: `training_core` must import in the service

#: starts a training interpreter (the service; a replay, attach.py); the test suite swaps in a
#: `subprocess.Popen` that forks it from one with TensorFlow already imported (tests/zygote.py): the same
#: process, without a 3 s import
popen = subprocess.Popen

#: every training process a window started and has not yet joined; tests fail if one is left running
_PROCESSES: "weakref.WeakSet[TrainingProcess]" = weakref.WeakSet()


def still_running() -> list:
    """Training processes (and their reader threads) still running, for the test suite's no-leftover check."""
    out: list = []
    for training in list(_PROCESSES):
        out += training.alive()
    return out


class Reports(QObject):
    """The service's reports, as signals (emitted by the reader thread, queued to the GUI thread)."""

    busy = Signal(str)  # what the service is doing ("Loading TensorFlow…"), "" when idle
    loaded = Signal(object)  # list[str]: devices, once TensorFlow is imported
    prepared = Signal(object)  # PreparedInfo
    failed = Signal(str, str)  # one-line summary, details
    runStarted = Signal(str)  # run directory (may be "" until the core creates it)
    runFinished = Signal(object)  # final Status, or None when the run never started
    metrics = Signal(object)  # MetricsBatch
    event = Signal(object)  # training_core.base.events.Event
    samples = Signal(object)  # dict
    status = Signal(object)  # Status
    died = Signal(int)  # the service ended unexpectedly (exit code); the window starts a new one
    report = Signal(object)  # every report above, as the protocol object itself (`Session.handle` takes it)

    def emit_report(self, report: object) -> None:
        """Emit `report` and the signal its type maps to (reader thread; queued to the GUI thread)."""
        self.report.emit(report)
        kind = _SIGNALS.get(type(report))
        if kind is not None:
            signal, args = kind
            getattr(self, signal).emit(*args(report))


#: protocol report -> (Reports signal, its arguments)
_SIGNALS = {
    P.Busy: ("busy", lambda r: (r.text,)), P.Loaded: ("loaded", lambda r: (r.devices,)),
    P.Prepared: ("prepared", lambda r: (r.info,)), P.Failed: ("failed", lambda r: (r.summary, r.detail)),
    P.RunStarted: ("runStarted", lambda r: (r.run_dir,)), P.RunFinished: ("runFinished", lambda r: (r.status,)),
    P.Metrics: ("metrics", lambda r: (r.batch,)), P.Emitted: ("event", lambda r: (r.event,)),
    P.Samples: ("samples", lambda r: (r.samples,)), P.StatusChanged: ("status", lambda r: (r.status,)),
}


class TrainingService(Protocol):
    """What the window uses of a training service (`TrainingProcess`, or a stand-in in widget tests)."""

    reports: Reports

    def load(self) -> None: ...
    def prepare(self, config: RunConfig) -> None: ...
    def start(self, config: RunConfig, resume: bool = False) -> None: ...
    def send(self, command: Command, id: str | None = None) -> bool: ...  # noqa: A002 - the wire name
    def shutdown(self, timeout_s: float = 2.0) -> bool: ...
    def deleteLater(self) -> None: ...


class TrainingProcess(QObject):
    """The GUI thread's side of a training service: request jobs, send commands, shut down."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.reports = Reports(self)
        # A fresh interpreter running `python -m training_core.service`, which connects back over an
        # authenticated local socket: not multiprocessing's spawn, which re-imports the parent's __main__
        # (a script that opens a window would open another one in the child).
        key = secrets.token_bytes(32)
        self._listener = Listener(authkey=key)
        env = dict(os.environ, **{P.KEY_ENV: key.hex()})
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
        self.process = popen([sys.executable, "-m", "training_core.service", str(self._listener.address),
                              str(training_nice()), training_policy()], env=env)
        self._conn = None
        self._queued: list[object] = []  # requests made before the service connected
        self._send_lock = threading.Lock()
        self._accepting = False  # a run was requested and has not finished: commands are taken
        self._closed = False  # no more requests
        self._stopping = False  # the service was asked to exit: its end is expected
        self._reader = threading.Thread(target=self._read, name="freezeframe-reports", daemon=True)
        self._reader.start()
        _PROCESSES.add(self)

    # -- requests ----------------------------------------------------------------------------------------
    def _post(self, msg: object) -> bool:
        with self._send_lock:
            if self._closed:
                return False
            if self._conn is None:
                self._queued.append(msg)
                return True
            try:
                self._conn.send(msg)
                return True
            except (OSError, EOFError, BrokenPipeError):
                return False

    def load(self) -> None:
        """Import TensorFlow and list devices (reports `loaded`)."""
        self._post(P.Load(gui_intra_op_threads()))

    def prepare(self, config: RunConfig) -> None:
        """Prepare a trainer for `config` (reports `prepared` or `failed`); Start reuses it."""
        self._post(P.Prepare(copy.deepcopy(config)))

    def start(self, config: RunConfig, resume: bool = False) -> None:
        """Run `config`: reuse the prepared trainer when it matches, otherwise prepare a new one first. With
        `resume`, continue the run in `config.run_dir` from its last checkpoint."""
        self._accepting = True
        self._post(P.BeginRun())
        self._post(P.Run(copy.deepcopy(config), resume))

    def send(self, command: Command, id: str | None = None) -> bool:  # noqa: A002 - the wire name
        """Hand a command to the running trainer (or to the one about to run). False if none will. `id` comes
        back on the event that applies it (the window's own commands: `Session.own_command_id`)."""
        if not self._accepting:
            return False
        return self._post(P.Send(command, id))

    # -- reports -----------------------------------------------------------------------------------------
    def _read(self) -> None:
        reports = self.reports
        try:
            conn = self._listener.accept()
        except Exception:  # noqa: BLE001 - shutdown's wake-up call fails authentication: no service
            conn = None
        finally:
            self._listener.close()
        if conn is not None and not self._stopping:
            with self._send_lock:
                self._conn = conn
                try:
                    for msg in self._queued:
                        conn.send(msg)
                except (OSError, EOFError):
                    pass
                self._queued.clear()
        elif conn is not None:
            conn.close()
            return
        while conn is not None:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                break
            except Exception as e:  # noqa: BLE001 - one unreadable report must not end the window's link
                reports.emit_report(P.Failed(f"a report from training could not be read: {type(e).__name__}: {e}"))
                continue
            if isinstance(msg, P.RunFinished):
                self._accepting = False
            reports.emit_report(msg)
        if not self._stopping:  # the service died (killed, out of memory): say so, and end the run in the window
            code = self.process.wait()
            self._accepting = False
            reports.emit_report(P.Failed(f"the training process ended unexpectedly ({P.process_end(code)}); a new "
                                         "one is starting: check the run's memory use, then press Start"))
            reports.emit_report(P.Busy(""))
            reports.emit_report(P.RunFinished(None))
            reports.died.emit(code)

    # -- shutting down -----------------------------------------------------------------------------------
    def alive(self) -> list:
        return [x for x in (self.process, self._reader)
                if (x.poll() is None if isinstance(x, subprocess.Popen) else x.is_alive())]

    def shutdown(self, timeout_s: float = 2.0) -> bool:
        """Stop training, let the service flush its record and exit. True if it ended in time.

        A job that cannot be interrupted (importing TensorFlow, tracing) is waited for past the timeout,
        up to a minute, so the run record is complete; then the process is killed."""
        if self._closed:
            return True
        self._stopping = True
        self._post(P.Exit())  # the service stops the run (if any), lets it flush, and exits
        with self._send_lock:
            self._closed = True
            connected = self._conn is not None
        if not connected:  # never connected (still starting, or died first): unblock the reader's accept
            try:
                Client(self._listener.address, authkey=b"").close()
            except Exception:  # noqa: BLE001 - the listener is already closed
                pass
            self.process.kill()
        in_time = True
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            in_time = False
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self._reader.join(5)
        if self._conn is not None:
            self._conn.close()
        _PROCESSES.discard(self)
        return in_time


@atexit.register
def _join_at_exit() -> None:
    """A script that exits without closing its window still stops training and flushes its record."""
    for training in list(_PROCESSES):
        training.shutdown()

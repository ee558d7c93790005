"""A trainer served over a connection: the window's training runs in a process of its own.

Why a process: CPython has one GIL per process. With training on a thread of the window's process,
every bit of Python the GUI ran (handling a metrics batch, laying out an axis) stopped the training
thread, which needs the GIL between TensorFlow ops: the window trained at ~0.85x of a bare loop while
the same core, headless, ran at ~0.97x (bench/run.py). A process of its own has its own GIL.

The protocol is plain picklable tuples, in the spirit of the commands (which are already plain data):
  to the service:   ("job", "load", intra_op_threads) | ("job", "prepare", RunConfig)
                    | ("job", "run", RunConfig) | ("begin_run",) | ("send", Command) | ("exit",)
  from the service: (report, *args) with report one of busy, loaded, prepared, failed, runStarted,
                    runFinished, metrics, event, samples, status (the window's signals, by name).
Jobs run one after another on the service's main thread; `begin_run` and `send` are handled at once by
the reader thread, so a command reaches a running trainer at its next step boundary.
"""
from __future__ import annotations

import copy
import os
import queue
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .commands import Command, SetFreeze, SetFreezeMethod, SetLearningRate, SetSchedule, Stop
from .config import RunConfig
from .errors import UserError
from .metrics import MetricsBatch, Status
from .scopes import ScopeNode, VarInfo
from .trainer import Observer, Trainer


@dataclass(frozen=True)
class PreparedInfo:
    """What the window needs of a prepared trainer (sent across the process boundary)."""

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


def same_source(trainer: Trainer, config: RunConfig) -> bool:
    """Whether a prepared trainer was built from what `config` asks for (so Start can reuse it)."""
    from .experiment import file_sha256
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


class _Reporter(Observer):
    """Called on the training thread; sends reports, never blocks on the window."""

    def __init__(self, send) -> None:
        self._send = send

    def on_prepared(self, trainer: Trainer) -> None:
        self._send("prepared", PreparedInfo.of(trainer))

    def on_metrics(self, batch: MetricsBatch) -> None:
        self._send("metrics", batch)

    def on_event(self, event: dict[str, Any]) -> None:
        self._send("event", event)

    def on_samples(self, samples: dict[str, Any]) -> None:
        self._send("samples", samples)

    def on_status(self, status: Status) -> None:
        self._send("status", status)


class Service:
    """Jobs (load, prepare, run) and live commands for one window; reports go out through `send`."""

    def __init__(self, send) -> None:
        self.send = send
        self._observer = _Reporter(send)
        self._lock = threading.Lock()
        self._fresh: Trainer | None = None  # prepared, never run: Start can reuse it
        self._active: Trainer | None = None  # running
        self._accepting = False  # a run was requested: commands wait in _pending until it starts
        self._pending: list[Command] = []

    # -- any thread ---------------------------------------------------------------------------------------
    def begin_run(self) -> None:
        with self._lock:
            self._pending.clear()
            self._accepting = True

    def command(self, command: Command) -> None:
        with self._lock:
            trainer = self._active
            if trainer is None:
                if self._accepting:
                    self._pending.append(command)
                return
        trainer.send(command)

    # -- jobs (main thread) -------------------------------------------------------------------------------
    def load(self, intra_op_threads: int) -> None:
        self.send("busy", "Loading TensorFlow…")
        try:
            from .devices import list_devices
            from .tf_quiet import import_tensorflow
            import_tensorflow(intra_op_threads=intra_op_threads)
            devices = list_devices()
        except Exception as e:  # noqa: BLE001 - a broken TensorFlow install is shown, not raised
            self.send("failed", f"TensorFlow could not be loaded: {type(e).__name__}: {e}", traceback.format_exc())
            devices = []
        self.send("busy", "")
        self.send("loaded", devices)

    def prepare(self, config: RunConfig) -> None:
        self._fresh = None
        try:
            self._fresh = self._new_trainer(config)
        except BaseException as e:  # noqa: BLE001 - reported to the window
            self._report(e)
        finally:
            self.send("busy", "")

    def run(self, config: RunConfig) -> None:
        trainer, status = None, None
        try:
            trainer = self._fresh if self._fresh is not None and same_source(self._fresh, config) else None
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
            self.send("busy", "")
            self.send("runStarted", str(config.run_dir or ""))
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
            self.send("busy", "")
            self.send("runFinished", status)

    def _new_trainer(self, config: RunConfig) -> Trainer:
        name = Path(config.experiment_file).name if config.experiment_file else config.example
        self.send("busy", f"Preparing {name}…")
        trainer = Trainer(copy.deepcopy(config), self._observer)
        trainer.prepare()
        return trainer

    def _report(self, e: BaseException) -> None:
        if isinstance(e, UserError):
            self.send("failed", str(e), e.detail or "")
        else:
            self.send("failed", f"{type(e).__name__}: {e}", traceback.format_exc())


def lower_priority(nice: int) -> None:
    """Run this process's threads at `nice` (0: leave it). On Linux the value is per thread, and a new
    thread inherits it from the thread that starts it: so every thread that exists now (numpy's BLAS
    pool started at import) is lowered, and everything started later (TensorFlow's pools) follows."""
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    tasks = [int(t) for t in os.listdir("/proc/self/task")] if os.path.isdir("/proc/self/task") else [0]
    for tid in tasks:
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
        except OSError:
            pass


def serve(conn, nice: int = 0) -> None:
    """The service process's main: read requests, run jobs in order, until ("exit",) or the window is gone."""
    lower_priority(nice)
    send_lock = threading.Lock()

    def send(*report: Any) -> None:
        with send_lock:
            try:
                conn.send(report)
            except (OSError, EOFError, BrokenPipeError):
                pass  # the window is gone; the run still ends and flushes its record

    service = Service(send)
    jobs: queue.Queue = queue.Queue()

    def read() -> None:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                msg = ("exit",)  # the window died: stop the run cleanly, then exit
            if msg[0] == "job":
                jobs.put(msg[1:])
            elif msg[0] == "begin_run":
                service.begin_run()
            elif msg[0] == "send":
                service.command(msg[1])
            elif msg[0] == "exit":
                service.command(Stop())
                while not jobs.empty():  # jobs not started yet are dropped; the one running ends
                    jobs.get_nowait()
                jobs.put(("exit",))
                return

    threading.Thread(target=read, name="freezeframe-service-reader", daemon=True).start()
    while True:
        job = jobs.get()
        if job[0] == "exit":
            break
        getattr(service, job[0])(*job[1:])
    with send_lock:
        conn.close()
    sys.stdout.flush()


KEY_ENV = "FREEZEFRAME_SERVICE_KEY"


def main(argv: list[str]) -> int:
    """`python -m training_core.service ADDRESS NICE` (the window starts it; the key comes in the
    environment): connect back to the window and serve it until it says exit or goes away."""
    from multiprocessing.connection import Client
    key = bytes.fromhex(os.environ.pop(KEY_ENV, ""))
    address, nice = argv[0], int(argv[1]) if len(argv) > 1 else 0
    conn = Client(address, authkey=key)
    serve(conn, nice)
    return 0


if __name__ == "__main__":
    # run the imported module's code, not this __main__ copy: reports must pickle as training_core classes
    from training_core.service import main as _main
    sys.exit(_main(sys.argv[1:]))

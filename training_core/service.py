"""A trainer served over a connection: the window's training runs in a process of its own.

Why a process: CPython has one GIL per process. With training on a thread of the window's process,
every bit of Python the GUI ran (handling a metrics batch, laying out an axis) stopped the training
thread, which needs the GIL between TensorFlow ops: the window trained at ~0.85x of a bare loop while
the same core, headless, ran at ~0.97x (bench/run.py). A process of its own has its own GIL.

What crosses the connection is the typed protocol of `base/protocol.py`. Jobs run one after another on the
service's main thread; `BeginRun`, `Send` and `Exit` are handled at once by the reader thread.
"""
from __future__ import annotations

import copy
import os
import queue
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, Callable

from training_core.base import protocol as P
from training_core.base.commands import Command, Envelope, SetFreeze, SetFreezeMethod, SetLearningRate, SetRatio, Stop
from training_core.base.config import RunConfig
from training_core.base.errors import UserError
from training_core.base.events import Event
from training_core.base.metrics import MetricsBatch, Status
from training_core.loop.trainer import Trainer
from training_core.observers.base import Observer, RunHandle


def prepared_info(trainer: Trainer) -> P.PreparedInfo:
    """What the window needs of a prepared trainer (its scopes, phases, description and warnings)."""
    p = trainer.prepared
    return P.PreparedInfo(copy.deepcopy(trainer.config), list(p.var_infos), p.tree, list(p.phase_names),
                          list(p.phase_paths), tuple(p.stat_paths), p.experiment.sample_kind, p.device_name,
                          p.experiment.description, tuple(p.warnings))


def same_source(trainer: Trainer, config: RunConfig) -> bool:
    """Whether a prepared trainer was built from what `config` asks for (so Start can reuse it)."""
    from training_core.base.config import file_sha256
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
    if set(config.freeze) != set(trainer.state.freeze) or config.update_frozen_stats != tc.update_frozen_stats:
        out.append(SetFreeze(tuple(config.freeze), config.update_frozen_stats))
    if config.schedule and config.schedule != tc.schedule:
        out.append(SetRatio(dict(config.schedule)))
    for phase, value in config.lr.items():
        if abs(float(value) - float(tc.lr.get(phase, -1.0))) > 1e-12 * max(1.0, abs(float(value))):
            out.append(SetLearningRate(phase, float(value)))
    if config.freeze_method != tc.freeze_method:
        out.append(SetFreezeMethod(config.freeze_method))
    return out


class _Reporter(Observer):
    """Called on the training thread; sends reports, never blocks on the window."""

    def __init__(self, send: Callable[[Any], None]) -> None:
        self._send = send
        self.trainer: Trainer | None = None  # the service's current trainer (its handle hides what the window needs)

    def on_prepared(self, run: RunHandle) -> None:
        if self.trainer is not None:
            self._send(P.Prepared(prepared_info(self.trainer)))

    def on_metrics(self, batch: MetricsBatch) -> None:
        self._send(P.Metrics(batch))

    def on_event(self, event: Event) -> None:
        self._send(P.Emitted(event))

    def on_samples(self, samples: dict[str, Any]) -> None:
        self._send(P.Samples(samples))

    def on_status(self, status: Status) -> None:
        self._send(P.StatusChanged(status))


class Service:
    """Jobs (load, prepare, run) and live commands for one window; reports go out through `send`."""

    def __init__(self, send: Callable[[Any], None]) -> None:
        self.send = send
        self._observer = _Reporter(send)
        self._lock = threading.Lock()
        self._fresh: Trainer | None = None  # prepared, never run: Start can reuse it
        self._active: Trainer | None = None  # running
        self.in_job = False  # the main thread is in a job (load, prepare, run)
        self._accepting = False  # a run was requested: commands wait in _pending until it starts
        self._pending: list[Envelope] = []

    # -- any thread ---------------------------------------------------------------------------------------
    @property
    def active(self) -> Trainer | None:
        """The trainer running a run now (None while loading, preparing, or between jobs)."""
        with self._lock:
            return self._active

    def begin_run(self) -> None:
        with self._lock:
            self._pending.clear()
            self._accepting = True

    def command(self, command: Command, id: str | None = None) -> None:  # noqa: A002 - the wire name
        with self._lock:
            trainer = self._active
            if trainer is None:
                if self._accepting:
                    self._pending.append(Envelope(command, id))
                return
        trainer.send(command, id)

    # -- jobs (main thread) -------------------------------------------------------------------------------
    def load(self, intra_op_threads: int) -> None:
        self.send(P.Busy("Loading TensorFlow…"))
        try:
            from training_core.engine.devices import list_devices
            from training_core.engine.distribute import DEFAULT_CPU_REPLICAS, ensure_logical_cpus
            from training_core.engine.tf_quiet import import_tensorflow
            tf = import_tensorflow(intra_op_threads=intra_op_threads)
            if not tf.config.list_physical_devices("GPU"):
                # before any op: so that a mirrored run (2 CPU replicas) needs no new process; single-device
                # runs use /CPU:0 and share the same thread pools
                ensure_logical_cpus(DEFAULT_CPU_REPLICAS)
            devices = list_devices()
        except Exception as e:  # noqa: BLE001 - a broken TensorFlow install is shown, not raised
            self.send(P.Failed(f"TensorFlow could not be loaded: {type(e).__name__}: {e}", traceback.format_exc()))
            devices = []
        self.send(P.Busy(""))
        self.send(P.Loaded(devices))

    def prepare(self, config: RunConfig) -> None:
        self._fresh = None
        try:
            self._fresh = self._new_trainer(config)
        except BaseException as e:  # noqa: BLE001 - reported to the window
            self._report(e)
        finally:
            self.send(P.Busy(""))

    def run(self, config: RunConfig, resume: bool = False) -> None:
        trainer, status = None, None
        try:
            reuse = self._fresh is not None and same_source(self._fresh, config) and not resume
            trainer = self._fresh if reuse else None
            self._fresh = None
            if trainer is None:
                trainer = self._new_trainer(config, resume)
            else:
                for cmd in catch_up_commands(trainer, config):
                    trainer.send(cmd)
            trainer.set_target(config.steps, config.count)
            trainer.config.run_dir = config.run_dir
            with self._lock:
                pending, self._pending = self._pending, []
                stopped = any(isinstance(c.command, Stop) for c in pending)
                if not stopped:
                    self._active = trainer
            if stopped:  # stopped (or the window closed) while preparing: nothing to record
                self._fresh = None if resume else trainer
                return
            for env in pending:
                trainer.send(env.command, env.id)
            self.send(P.Busy(""))
            self.send(P.RunStarted(str(config.run_dir or "")))
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
                    and self._fresh is None and not trainer.resuming:
                self._fresh = trainer  # failed before its run directory existed (unwritable): reusable
            self.send(P.Busy(""))
            self.send(P.RunFinished(status))

    def _new_trainer(self, config: RunConfig, resume: bool = False) -> Trainer:
        config.refuse_monitored_script()  # (engine/prepare.py checks again, before importing anything)
        name = Path(config.experiment_file).name if config.experiment_file else config.example
        self.send(P.Busy(f"Preparing {name}…"))
        trainer = Trainer(copy.deepcopy(config), self._observer, resume=resume)
        self._observer.trainer = trainer
        trainer.prepare()
        return trainer

    def _report(self, e: BaseException) -> None:
        if isinstance(e, UserError):
            self.send(P.Failed(str(e), e.detail or ""))
        else:
            self.send(P.Failed(f"{type(e).__name__}: {e}", traceback.format_exc()))


def lower_priority(nice: int, batch: bool = False) -> None:
    """Run this process's threads at `nice` (0: leave it), and with `batch` under Linux's SCHED_BATCH policy (the
    same share of the CPU as any process at its nice value, but a thread that wakes up, such as the window's GUI
    thread for a paint, preempts it at once). On Linux both are per thread, and a new thread inherits them from
    the thread that starts it: so every thread that exists now (numpy's BLAS pool started at import) is changed,
    and everything started later (TensorFlow's pools) follows."""
    if not hasattr(os, "setpriority") or not (nice > 0 or batch):
        return
    tasks = [int(t) for t in os.listdir("/proc/self/task")] if os.path.isdir("/proc/self/task") else [0]
    for tid in tasks:
        try:
            if nice > 0 and os.getpriority(os.PRIO_PROCESS, tid) < nice:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
            if batch and hasattr(os, "SCHED_BATCH"):
                os.sched_setscheduler(tid, os.SCHED_BATCH, os.sched_param(0))
        except OSError:
            pass


#: how long a run that was told to stop (the window closed, or is gone) may take to end before the process exits
#: without it: a step stuck in user code must not keep training after the window (the window waits as long)
EXIT_GRACE_S = 60.0


#: the process's stderr as it started (`main`): while TensorFlow loads, descriptor 2 is a temporary file, and
#: after that a pipe a thread filters (engine/tf_quiet.py): a line written there just before `os._exit` was lost
_STDERR: int | None = None


def _exit_now(why: str) -> None:
    line = f"freezeframe: the training process exits: {why}\n"
    sys.stdout.flush()
    try:
        sys.stderr.flush()
        os.write(_STDERR if _STDERR is not None else 2, line.encode())
    except (OSError, ValueError):
        pass
    os._exit(0)


def exit_soon(service: Service, window: str = "the window closed") -> threading.Timer:
    """`Exit` (or the window gone): the training process never outlives its window. A run going on is stopped
    and ends at its next step, flushing its record, within `EXIT_GRACE_S`; a job with no run (importing
    TensorFlow, preparing: importing an experiment file runs its code, which may never return) has nothing
    to keep, so the process exits at once instead of waiting for it. `window`: what became of it, for the line
    that says why the process exits ("the window is gone": killed, its connection ended without `Exit`)."""
    if service.in_job and service.active is None:
        _exit_now(f"{window} while it was loading or preparing (nothing was recorded)")
    timer = threading.Timer(EXIT_GRACE_S, _exit_now, (f"the run did not stop within {EXIT_GRACE_S:g} s",))
    timer.daemon = True
    timer.start()
    return timer


def serve(conn: Any, nice: int = 0, own_process: bool = False, batch: bool = False) -> None:
    """The service process's main: read requests, run jobs in order, until `Exit` or the window is gone.
    `own_process`: this is the whole process (`main`), which then exits rather than outlive the window."""
    lower_priority(nice, batch)
    send_lock = threading.Lock()

    def send(report: Any) -> None:
        with send_lock:
            try:
                conn.send(report)
            except (OSError, EOFError, BrokenPipeError):
                pass  # the window is gone; the run still ends and flushes its record

    service = Service(send)
    timers: list[threading.Timer] = []
    jobs: queue.Queue = queue.Queue()
    job_methods = {P.Load: lambda r: service.load(r.intra_op_threads), P.Prepare: lambda r: service.prepare(r.config),
                   P.Run: lambda r: service.run(r.config, r.resume)}

    def read() -> None:
        window = "the window closed"
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                msg, window = P.Exit(), "the window is gone"  # it died: stop the run cleanly, then exit
            if isinstance(msg, P.JOBS):
                jobs.put(msg)
            elif isinstance(msg, P.BeginRun):
                service.begin_run()
            elif isinstance(msg, P.Send):
                service.command(msg.command, msg.id)
            elif isinstance(msg, P.Exit):
                service.command(Stop())
                while not jobs.empty():  # jobs not started yet are dropped; the one running ends
                    jobs.get_nowait()
                jobs.put(msg)
                if own_process:
                    timers.append(exit_soon(service, window))
                return

    threading.Thread(target=read, name="freezeframe-service-reader", daemon=True).start()
    while True:
        job = jobs.get()
        if isinstance(job, P.Exit):
            break
        service.in_job = True
        try:
            job_methods[type(job)](job)
        finally:
            service.in_job = False
    for timer in timers:  # the run ended in time
        timer.cancel()
    with send_lock:
        conn.close()
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    """`python -m training_core.service ADDRESS NICE [batch]` (the window starts it; the key comes in the
    environment): connect back to the window and serve it until it says exit or goes away."""
    from multiprocessing.connection import Client
    global _STDERR
    try:
        _STDERR = os.dup(2)
    except OSError:  # started without a stderr
        pass
    key = bytes.fromhex(os.environ.pop(P.KEY_ENV, ""))
    address, nice = argv[0], int(argv[1]) if len(argv) > 1 else 0
    batch = len(argv) > 2 and argv[2] == "batch"
    try:
        conn = Client(address, authkey=key)
    except OSError:  # the window died (SIGKILL) before this process connected: there is nobody to serve
        _exit_now("the window is gone (it ended before this process connected; nothing was recorded)")
    serve(conn, nice, own_process=True, batch=batch)
    # The run has ended and its record is closed (its `stop` event written, the recorder's thread joined) before
    # `serve` returns. What is left is the interpreter's teardown of TensorFlow and the models, which took 10-16 s
    # on a loaded 2-core machine (py-spy: the main thread, no Python frames left) while the window's close waited
    # for this process: so leave at once, after the one exit hook that holds output (the stderr filter's pipe).
    from training_core.engine import tf_quiet
    tf_quiet.restore_stderr()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    # run the imported module's code, not this __main__ copy: reports must pickle as training_core classes
    from training_core.service import main as _main
    sys.exit(_main(sys.argv[1:]))

"""One run trained on the terminal: the progress bar, what a headless run does when it cannot go on
by itself, and `train()`, which the headless command line (cli/headless.py) and a sweep's points
(cli/sweep.py) both run.

Bad input exits with code 2 and one line on stderr that names the problem and the fix; nothing is
written before every input has been checked. A run that fails after it began (experiment code raising
mid-run, a full disk) exits with code 1 and one line; the record is kept and its `error` event holds
the traceback. SIGTERM (Slurm, docker, systemd) is Ctrl-C: the run stops at the next step boundary,
writes its final checkpoint and `stop` event, and exits 0. Either signal during start-up ends the
process with one line, before anything is written.
"""
from __future__ import annotations

import signal
import sys
import time
from contextlib import AbstractContextManager
from typing import Any, Callable, Sequence

from training_core.base import events as E
from training_core.base.argparsing import run_cli
from training_core.base.config import RunConfig
from training_core.base.signal_handlers import handlers
from training_core.base.errors import UserError
from training_core.base.metrics import MetricsBatch
from training_core.loop.trainer import Trainer
from training_core.observers.base import Observer


class ProgressBar(Observer):
    """A one-line bar with steps/s; plain lines every few seconds when stderr is not a terminal."""

    def __init__(self, target: int | None, stream: Any = sys.stderr, quiet: bool = False) -> None:
        self.target, self.stream, self.quiet = target, stream, quiet
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self._last = 0.0

    def on_metrics(self, batch: MetricsBatch) -> None:
        now = time.monotonic()
        if self.quiet or now - self._last < (0.2 if self.tty else 5.0):
            return
        self._last = now
        self._draw(batch.status)

    def _draw(self, s: Any) -> None:
        if self.target:
            done = s.counted if s.count_phase else s.step
            frac = min(1.0, done / self.target)
            bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
            # counting one phase's steps (--count G): the bar says whose, and the step of all phases follows
            what = f" {s.count_phase} steps (step {s.step})" if s.count_phase else ""
            text = f"[{bar}] {done}/{self.target}{what} {100 * frac:5.1f}%"
        else:
            text = f"step {s.step}"
        text += f"  {s.steps_per_s:7.1f} steps/s  phase {s.phase:<6} {s.elapsed_s:6.1f}s"
        self.stream.write(("\r" + text) if self.tty else text + "\n")
        self.stream.flush()

    def on_event(self, e: E.Event) -> None:
        detail = {E.Warning: lambda: e.message, E.Rejected: lambda: e.message, E.Leak: lambda: e.variable,
                  E.Nan: lambda: e.phase, E.Retrace: lambda: e.phase, E.Rollback: lambda: e.reason,
                  E.Resumed: lambda: e.checkpoint}.get(type(e))
        if detail is not None:
            self.stream.write(("\n" if self.tty else "") + f"[step {e.step}] {e.kind}: {detail()}\n")

    def on_status(self, s: Any) -> None:
        if not s.running and s.step and not self.quiet:
            self._draw(s)
            if self.tty:
                self.stream.write("\n")


class HeadlessObserver(ProgressBar):
    """The progress bar, plus: a pause the trainer decides on (a NaN loss, nothing left to train) stops the
    run, because headless nobody can continue it and the process would wait forever. `halted` says why."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.halted: str | None = None
        self.failure: str | None = None  # the `error` event's one line
        self._trainer: Trainer | None = None
        self._cause = ""
        self._nan_named = False
        self.resumed_at: int | None = None  # the checkpoint's step this process continued from

    def on_prepared(self, trainer: Trainer) -> None:
        self._trainer = trainer

    def on_event(self, e: E.Event) -> None:
        super().on_event(e)
        if isinstance(e, E.Error):
            self.failure = e.message
        elif isinstance(e, E.Resumed):
            self.resumed_at = e.step
        elif isinstance(e, E.Nan) and not self._nan_named:
            # the trainer reports non-finite losses earliest first: the first one names the phase that failed
            # (a later one, e.g. D after G's NaN poisoned it, must not take its place)
            self._nan_named = True
            run_dir = self._trainer.run_dir if self._trainer is not None else "RUN_DIR"
            self._cause = (f"the loss of phase {e.phase} became {e.value} at step {e.at_step}; resume from the last "
                           f"good checkpoint with a lower learning rate (--resume {run_dir} --lr {e.phase}=...), "
                           f"or train with --on-nan rollback")
        elif isinstance(e, E.Warning):
            self._cause = e.message
        elif isinstance(e, E.Rollback):  # a new attempt: its NaN, if any, is named afresh
            self._nan_named = False
        elif isinstance(e, E.Pause) and e.reason not in ("user", "step") and self._trainer is not None \
                and self.halted is None:  # a pause or step from commands.jsonl waits for its continue
            self.halted = f"training stopped at step {e.step}: {self._cause or e.reason}"
            self._trainer.send(_stop("halted"))


EXIT_FAILED = 1  # the run began and failed, or training halted: the record is kept
EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C


_signalled: list[bool] = []  # a SIGINT or SIGTERM came while a run trained, since the last start-up


def signalled() -> bool:
    """Whether a signal asked this process to stop while its last run trained. A sweep that trains its points
    one after another asks after each (a start-up clears it)."""
    return bool(_signalled)


def _interrupt(*_: Any) -> None:
    raise KeyboardInterrupt


def interrupting() -> AbstractContextManager[None]:
    """Until training starts, SIGTERM is Ctrl-C: either raises KeyboardInterrupt."""
    return handlers(signal.default_int_handler, _interrupt)


def guarded(body: Callable[[], int]) -> int:
    """Run a command's body: bad input is one line and exit 2 (`run_cli`); until training starts, SIGTERM and
    SIGINT end the process with one line, before anything is written (each run of a sweep that trains them one
    after another in one process starts here afresh)."""
    _signalled.clear()
    try:
        with interrupting():
            return run_cli(body)
    except KeyboardInterrupt:
        print("error: interrupted while starting; nothing was written (run the command again to train)",
              file=sys.stderr)
        return EXIT_INTERRUPTED


def train(cfg: RunConfig, commands: Sequence[Any] = (), plan: Any = None, resume: bool = False,
          quiet: bool = False) -> int:
    """Train one run to its end on this thread, with the progress bar: a new run, a resumed one (`resume`, with
    the `commands` its options became) or a replay (`plan`). The exit code: 0 (done, or stopped by a signal),
    EXIT_FAILED (failed or halted: the record is kept), or a `UserError` raised before anything was written."""
    observer = HeadlessObserver(cfg.steps, quiet=quiet)
    extra: list[Observer] = [observer]
    if plan is not None:
        from training_core.loop.replay import Replayer
        extra.append(Replayer(plan))
    trainer = Trainer(cfg, extra, resume=resume)
    trainer.prepare()
    if commands:  # refused now, not `rejected` at the first step after the record was cut back
        from training_core.loop.restore import check_resume_commands
        check_resume_commands(trainer.prepared, commands)
    for command in commands:
        trainer.send(command)
    def stop(*_: Any) -> None:  # from here on: stop at the next step, keep the record
        _signalled.append(True)
        trainer.send(_stop())

    try:
        with handlers(stop):
            status = trainer.run()
    except Exception as e:  # noqa: BLE001 - one line; the record's error event has the traceback
        if trainer.run_dir is None and isinstance(e, UserError):
            raise  # before anything was written: bad input, exit 2
        lost = trainer.source.failure_line(e, trainer.step, trainer.run_dir)  # a multiworker peer died
        from training_core.rundir.layout import SCALARS_FILE
        from training_core.rundir.trim import (
            last_scalar_step,  # a write that failed (a full disk) ended the record before the step
        )
        kept = last_scalar_step(trainer.run_dir / SCALARS_FILE) if trainer.run_dir is not None else 0
        chief = trainer.prepared is None or trainer.prepared.placement.chief  # a worker's run_dir: its scratch
        where = (f"the record up to step {kept} is in {trainer.run_dir or 'no directory'}; the traceback is in its "
                 f"events.jsonl" if chief else "the chief keeps the record")
        print(f"error: {lost}" if lost else  # it says where the record is, as the chief's error event does
              f"error: {observer.failure or ' '.join(str(e).split())} ({where})", file=sys.stderr)
        return EXIT_FAILED
    placement = trainer.prepared.placement
    where = f"; run directory: {status.run_dir}" if placement.chief else f" as {placement.worker}; the chief keeps the record"
    sys.stderr.flush()  # the bar (stderr) ends before the summary (stdout), whichever of them is buffered
    print(f"{_steps_run(status, observer.resumed_at)} in {status.elapsed_s:.1f}s on {status.device}{where}", flush=True)
    if observer.halted:
        print(f"error: {observer.halted}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _steps_run(status: Any, resumed_at: int | None) -> str:
    """What this process trained: a resumed run's steps since its checkpoint (a summary that counted from 0 said
    300 steps when 100 ran), and with `--count G` how many of G's steps the run has in all."""
    text = f"{status.step} steps" if not resumed_at else \
        f"{status.step - resumed_at} steps (from step {resumed_at} to {status.step})"
    return text + (f", {status.counted} {status.count_phase} steps in all" if status.count_phase else "")


def _stop(reason: str = "stopped") -> Any:
    from training_core.base.commands import Stop
    return Stop(reason=reason)

"""The window attached to a run another process writes (`python main.py --attach RUN_DIR`, File → Attach
to Run…), and File → Replay Run…, which is a headless replay this window starts and attaches to.

The Qt-free `AttachedRun` (training_core/runs/attach.py) does the work: it reads only what the run
directory gained into the session's `RunData`, and sends commands through `commands.jsonl`. Here a
QTimer polls it (4 Hz: the trainer reads commands at most every 0.25 s too), hands each new event to
the session for the state it changes, keeps the status bar's numbers and "attached · freeze
acknowledged at step N" text current, and asks for samples every 2 s. The panels follow control
changes made by anyone else (another window, a line written by hand), so what they show is the run's.
Detaching stops the timer; the run trains on.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from training_core import Command, Stop, UserError, builtin_examples
from training_core.base import events as E
from training_core.runs import Session, Source
from training_core.runs.attach import AttachedRun

from . import training_process

POLL_MS = 250
SAMPLE_EVERY_S = 2.0


def available(source: Source) -> bool:
    """Whether this window can prepare `source` (an attached run's record may name a file of another host)."""
    kind, value = source
    return value in builtin_examples() if kind == "example" else bool(value) and Path(value).is_file()


def detached_text(run: AttachedRun) -> str:
    """The state after File → Detach: where the run was, and that it goes on (or that its writer is gone)."""
    at = f"Detached at step {run.data.last_step:,}"
    if run.finished:
        return ""  # its `stop` says how it ended
    if run.gone is not None:
        return f"{at}; its process (pid {run.gone.pid}) is gone: {run.resume_fix}"
    h = run.writer()
    who = "" if h is None else f" (pid {h.pid}" + ("" if h.host == socket.gethostname() else f" on {h.host}") + ")"
    return f"{at}; the run goes on{who}"


class AttachController(QObject):
    controlsChanged = Signal(object)  # training_core.runs.attach.Controls, after someone else's change
    commandRejected = Signal(str)  # the kind of a command this window sent that the run refused
    failed = Signal(str)  # a one-line problem (the replay process could not start its run)

    def __init__(self, session: Session, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.run: AttachedRun | None = None
        self.replay_process: subprocess.Popen | None = None  # a replay this window started
        self._pending_dir: Path | None = None  # the replay's run directory, until it exists
        self._stderr = None
        self._announced = False
        self._next_samples = 0.0
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self.poll)

    @property
    def attached(self) -> bool:
        return self.run is not None

    def _check_free(self) -> None:
        if self.session.running and not self.session.attached:
            raise UserError("a run is going in this window; stop it before attaching to or replaying another")

    def attach(self, run_dir: str | Path) -> None:
        """Follow `run_dir` live (a `UserError` if it holds no run, or this window runs one of its own)."""
        self._check_free()
        self.detach()
        run = AttachedRun(run_dir, self.session.data)
        self.session.attach(str(run_dir))
        self.run, self._announced, self._next_samples = run, False, 0.0
        self._timer.start()
        self.poll()

    def replay(self, source: str | Path, run_dir: str | Path | None = None) -> None:
        """Replay `source` headless into `run_dir` (default: SOURCE-replay-TIME beside it), in a process of
        its own as on a server, and attach to it."""
        from training_core.rundir.writer import check_run_dir_free
        from training_core.rundir.replay_plan import plan_replay
        self._check_free()
        src = Path(source)
        run_dir = run_dir or src.with_name(f"{src.name}-replay-{time.strftime('%Y%m%d-%H%M%S')}")
        plan_replay(source, str(run_dir))  # bad input answers here, in one line, before anything starts
        check_run_dir_free(run_dir)
        self.detach()
        self._stderr = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: nobody drains it while it runs
        # how the window starts a training interpreter (training_process.py), with the project on its path, so that
        # `-m app.entry` finds it from any working directory, installed or run from a clone
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(training_process.ROOT), os.environ.get("PYTHONPATH")])))
        self.replay_process = training_process.popen(
            [sys.executable, "-m", "app.entry", "--headless", "--replay", str(source), "--run-dir", str(run_dir),
             "--quiet"], stdout=subprocess.DEVNULL, stderr=self._stderr, text=True, env=env)
        self._pending_dir = Path(run_dir)
        self._timer.start()

    def send(self, command: Command) -> None:
        if self.run is not None and self.run.ended:  # its writer is gone: nothing would ever apply it
            self.controlsChanged.emit(self.run.controls)  # the panels go back to what the run has
            self.session.note.emit("not sent: the process writing this run is gone; resume it first (see the "
                                   "status bar)")
        elif self.run is not None:
            self.run.send(command)
            self._show_text()

    def detach(self) -> None:
        """Stop following; the run trains on, and the status bar says so. The window keeps the run's experiment
        if its file is here (or it is a built-in example), else goes back to the one chosen before attaching."""
        self._timer.stop()
        run, self.run, self._pending_dir = self.run, None, None
        if self.session.attached:
            self.session.fix = run.resume_fix if run is not None and run.gone is not None else ""
            self.session.detach(available(self.session.source), "" if run is None else detached_text(run))


    def shutdown(self, timeout_s: float) -> None:
        """The window closes: a replay it started is stopped (its record is kept); an attached run trains on."""
        p, self.replay_process = self.replay_process, None
        run = self.run
        self.detach()
        if p is None or p.poll() is not None:
            return
        if run is not None:
            run.send(Stop())
        try:
            p.wait(timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    # -- the 4 Hz poll ---------------------------------------------------------------------------------
    def poll(self) -> None:
        if self.run is None:
            self._wait_for_replay()
            return
        run, s = self.run, self.session
        run.poll()
        mine = set(run.sent)
        others_changed = False
        for e in run.new_events:
            s.track(e)
            if isinstance(e, E.Rejected) and e.id in mine:
                self.commandRejected.emit(run.sent[e.id].kind)
            if isinstance(e, (E.Resumed, E.Rejected)) or isinstance(e, (E.Freeze, E.Ratio, E.LearningRate, E.Method)) \
                    and e.id not in mine:  # (a resume: the settings of its checkpoint, its new step target; a
                others_changed = True      # rejected command: the panels showed the edit the run refused)
        if not self._announced and run.start is not None:
            self._announced = True
            s.attached_prepared(run.prepared_info())  # the window shows it as a prepared experiment
        elif others_changed:
            self.controlsChanged.emit(run.controls)
        s.status = run.status()
        self._show_text()
        now = time.monotonic()
        drawn_here = run.controls.paused and run.samples is not None and run.samples.get("step") == run.data.last_step
        if (not run.ended and now >= self._next_samples and not drawn_here  # (paused: the weights do not change)
                and not any(a.kind == "sample" for a in run.in_flight)):
            self._next_samples = now + SAMPLE_EVERY_S
            run.request_samples()
        if run.finished:
            self.detach()

    def _show_text(self) -> None:
        if self.run is not None and self.run.status_text() != self.session.attached_text:
            self.session.attached_text = self.run.status_text()
            self.session.fix = self.run.resume_fix if self.run.gone is not None else ""
            self.session.state_changed.emit()

    def _wait_for_replay(self) -> None:
        d, p = self._pending_dir, self.replay_process
        if d is None or p is None:
            self._timer.stop()
            return
        if (d / "events.jsonl").is_file():
            self._pending_dir = None
            self.attach(d)
        elif p.poll() is not None:
            self._timer.stop()
            self._pending_dir = None
            self._stderr.seek(0)
            lines = [ln for ln in self._stderr.read().splitlines() if ln.startswith("error:")]
            self.failed.emit(lines[-1][len("error: "):] if lines else f"the replay ended with exit code {p.returncode}")


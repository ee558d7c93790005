"""Attaching to a run another process writes (a headless run on a server, seen over sshfs or NFS; a run
another window started): the Qt-free half of `python main.py --attach RUN_DIR`.

Everything comes from the run directory, so any number of watchers can attach and each sees every
change, whoever made it:
  - the numbers: a `RunFollower` reads only the bytes added since the last poll into a `RunData`, the
    same model a local run fills, so plots and markers are the same;
  - the scope tree: from the `start` event, which records every variable's path, shape, dtype and
    trainable flag (no experiment file or TensorFlow needed);
  - the controls' current state (freeze set, schedule, learning rates, method, paused): the `start`
    event, then every control event in order;
  - samples: the latest `samples/step-*.npz`; a watcher sends a `sample` command for fresh ones;
  - steering: commands appended to `commands.jsonl`; each is "in flight" until the event carrying its
    id comes back, then "acknowledged at step N" (or rejected, with the reason).
Detaching is just no longer polling: the run trains on. Attaching never takes the writer lock.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from training_core.base import events as E
from training_core.base.commands import Command, SampleNow
from training_core.base.config import RunConfig, file_not_dir
from training_core.base.errors import UserError
from training_core.base.metrics import Status
from training_core.base.protocol import PreparedInfo
from training_core.base.scopes import ScopeNode, VarInfo, build_scope_tree
from training_core.rundir.commands_file import append_command
from training_core.rundir.layout import CONFIG_FILE, EVENTS_FILE
from training_core.rundir.lock import Holder, gone_writer, read_holder
from training_core.rundir.samples import list_samples, load_samples
from training_core.runs.data import RunData
from training_core.runs.follow import RunFollower

WRITER_CHECK_S = 2.0  # how often the lock is read to see whether the writer still runs


#: the status bar's phase for a fit() run: its train_step trains every sub-model in each step, so no one phase
#: is the latest step's
FIT_PHASE = "all (fit()'s train_step)"


@dataclass
class Controls:
    """The run's control settings (what its commands set: freeze set, schedule, rates, method, paused, step
    target) as its record says they now are; loop/command_table.py is what applies the commands."""

    freeze: list[str] = field(default_factory=list)
    schedule: dict = field(default_factory=dict)
    lr: dict[str, float] = field(default_factory=dict)
    method: str = "exact"
    update_frozen_stats: bool = False
    paused: bool = False
    pause_reason: str = ""
    steps: int | None = None  # the step target (a resume can set a new one)
    device: str = ""

    @classmethod
    def of(cls, events: list[E.Event]) -> "Controls":
        """The controls after `events`, in order (a record read afresh, or cut back to a checkpoint)."""
        c = cls()
        for e in events:
            c.apply(e)
        return c

    def apply(self, e: E.Event) -> None:
        if isinstance(e, (E.Start, E.Resumed)):  # a resume: the settings its checkpoint holds, its new target
            self.freeze, self.schedule, self.lr, self.method = list(e.freeze), dict(e.schedule), dict(e.lr), e.method
            self.update_frozen_stats = e.update_frozen_stats
            self.steps, self.device = e.steps, e.device or self.device
            if isinstance(e, E.Resumed):
                self.paused, self.pause_reason = False, ""
        elif isinstance(e, E.Freeze):
            self.freeze, self.update_frozen_stats = list(e.scopes), e.update_frozen_stats
        elif isinstance(e, E.Ratio):
            self.schedule = dict(e.policy)
        elif isinstance(e, E.LearningRate):
            self.lr[e.phase] = e.value
        elif isinstance(e, E.Method):
            self.method = e.method
        elif isinstance(e, E.Pause):
            self.paused, self.pause_reason = True, e.reason
        elif isinstance(e, (E.Continue, E.Step)):
            self.paused, self.pause_reason = False, ""


@dataclass
class Ack:
    """What became of a command this watcher sent."""

    id: str
    kind: str
    step: int | None = None  # None while in flight
    rejected: str | None = None  # the reason, if it was refused


def var_infos_of(start: E.Start | None) -> list[VarInfo]:
    """The variables a `start` event records (damaged entries skipped)."""
    out = []
    for d in start.variables if start is not None else []:
        try:
            out.append(VarInfo.from_dict(d))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return out


class AttachedRun:
    """One run directory, followed and steered from outside. Call `poll()` a few times a second.

    A writer killed on this host leaves no `stop` event; its lock names a process that no longer runs, so
    every `WRITER_CHECK_S` the lock is read and such a run is shown as `ended` (a watcher would otherwise
    show it training, with its commands in flight forever). A writer on another host cannot be checked."""

    def __init__(self, run_dir: str | Path, data: RunData | None = None) -> None:
        self.dir = Path(run_dir)
        if self.dir.is_file():
            raise UserError(file_not_dir(self.dir, "--attach"))
        if not self.dir.is_dir():
            raise UserError(f"{self.dir} does not exist; attach to a run directory (one a run is writing)")
        if not (self.dir / EVENTS_FILE).is_file():
            raise UserError(f"{self.dir} has no {EVENTS_FILE}; attach to a run directory (one a run is writing)")
        self.data = data if data is not None else RunData(self.dir)  # the window passes its session's
        self.data.clear()
        self.data.run_dir = self.dir  # where its samples are (the session's data may have named another run)
        self.new_events: list[E.Event] = []  # the events the last poll read
        self._rate: list[tuple[float, int]] = []  # (monotonic time, last step) of recent polls
        self.follower = RunFollower(self.dir, self.data)
        self.controls = Controls()
        self.sent: dict[str, Ack] = {}  # this watcher's commands, in the order sent
        self.last_ack: Ack | None = None  # of the last control command (sample requests are not shown)
        self.samples: dict[str, Any] | None = None
        self._seen = 0  # events already looked at
        self._looked: list[E.Event] = []  # the list they are in (the old one, after the record was read afresh)
        self._generation = self.data.generation
        self._samples_stamp: tuple | None = None
        self._tree: ScopeNode | None = None
        self.gone: Holder | None = None  # the writer, found dead on this host while the record has no `stop`
        self._next_writer_check = 0.0
        self._monitor: str | None = None  # the record's `monitor`, once config.toml is read

    # -- reading --------------------------------------------------------------------------------------------
    def poll(self) -> bool:
        """Read what the run wrote since the last poll; True if anything changed."""
        changed = self.follower.poll()
        events = self.data.events
        if self.data.generation != self._generation:
            self._reread(events)
        self.new_events = events[self._seen:]
        for e in self.new_events:
            if isinstance(e, E.Resumed):  # a new process: it skips the lines already in commands.jsonl
                self._lost("its process ended before applying it", e.step)
            self.controls.apply(e)
            ack = self.sent.get(getattr(e, "id", None) or "")
            if ack is not None and ack.step is None:
                ack.step = e.step
                ack.rejected = e.message if isinstance(e, E.Rejected) else None
                if ack.kind != "sample":  # the window's own sample requests (every 2 s) must not hide it
                    self.last_ack = ack
        self._seen, self._looked = len(events), events
        now = time.monotonic()
        if self.finished:
            self.gone = None
        elif now >= self._next_writer_check or self.new_events:  # a resume's events: look again at once
            self._next_writer_check = now + WRITER_CHECK_S
            self.gone = gone_writer(self.dir)
            if self.gone is not None:
                self._lost("its process is gone", self.data.last_step)
        self._rate = [(t, n) for t, n in self._rate if now - t < 3.0] + [(now, self.data.last_step)]
        return self._read_samples() or changed

    def _lost(self, why: str, step: int) -> None:
        """Commands in flight that no process will apply (their writer ended; a resume skips the lines already
        in commands.jsonl): no longer in flight, or a sample request waiting on one stopped the next for ever."""
        for ack in self.in_flight:
            ack.step, ack.rejected = step, f"not applied: {why}"
            if ack.kind != "sample":
                self.last_ack = ack

    def _reread(self, events: list[E.Event]) -> None:
        """The follower read the record afresh (a resume or a rollback cut it back; follow.py): the controls
        are those of every event now in it, but only the events not looked at before are new (a NaN or a
        warning the window has shown is not shown again). Its count says nothing: the cut record may have
        grown past it."""
        self._generation = self.data.generation
        seen = self._looked[:self._seen]
        same = next((i for i, (a, b) in enumerate(zip(seen, events)) if a != b), min(len(seen), len(events)))
        self.controls, self._tree, self._samples_stamp, self._rate = Controls.of(events[:same]), None, None, []
        self._seen = same

    def _read_samples(self) -> bool:
        files = list_samples(self.dir)
        if not files:
            return False
        try:  # (step, path, inode, mtime): a drawing at a step drawn before replaces its file (a paused run's)
            st = files[-1][1].stat()
        except OSError:
            return False
        stamp = (*files[-1], st.st_ino, st.st_mtime_ns)
        if stamp == self._samples_stamp:
            return False
        got = load_samples(files[-1][1])
        if got is None:
            return False
        self._samples_stamp = stamp
        self.samples = got
        self.data.set_samples(got)
        for ack in self.sent.values():  # a sample request is answered by the drawing (it is no event)
            if ack.kind == "sample" and ack.step is None:
                ack.step = int(got.get("step", self.data.last_step))
        return True

    @property
    def start(self) -> E.Start | None:
        return self.data.start

    @property
    def tree(self) -> ScopeNode | None:
        """The scope tree with shapes and parameter counts, once the `start` event is read."""
        if self._tree is None and self.start is not None:
            self._tree = build_scope_tree(var_infos_of(self.start))
        return self._tree

    def prepared_info(self) -> PreparedInfo | None:
        """What a window shows of a prepared experiment, from the record: the configuration with the
        controls as they are now, the variables, the phases and what each trains."""
        start = self.start
        if start is None:
            return None
        try:
            config = RunConfig.read_toml(self.dir / CONFIG_FILE)
        except UserError:
            config = RunConfig()
        c = self.controls
        config = replace(config, freeze=list(c.freeze), schedule=dict(c.schedule), lr=dict(c.lr), steps=c.steps,
                         freeze_method=c.method, update_frozen_stats=c.update_frozen_stats, run_dir=str(self.dir))
        infos = var_infos_of(start)
        phases = list(start.phases)
        return PreparedInfo(config, infos, self.tree, phases,
                            [tuple(start.phase_variables.get(p, ())) for p in phases], (), "", c.device)

    def status(self) -> Status:
        """Step, phase, speed, elapsed time and device, as the status bar shows a local run's."""
        d, start = self.data, self.start
        phase, last = "", -1
        for p in d.phases:
            steps = d.loss(p)[0]
            if len(steps) and steps[-1] > last:
                phase, last = p, int(steps[-1])
        (t0, n0), (t1, n1) = self._rate[0], self._rate[-1]
        rate = (n1 - n0) / (t1 - t0) if t1 - t0 >= 0.5 and not self.controls.paused else 0.0
        wall = d.loss(phase)[1] if phase else ()
        elapsed = float(wall[-1]) - start.time if start is not None and len(wall) and start.time else 0.0
        shown = FIT_PHASE if phase and self.monitor == "fit" else phase  # fit(): each step trains every sub-model
        return Status(step=d.last_step, phase=shown, paused=self.controls.paused, running=not self.ended,
                      steps_per_s=rate, elapsed_s=max(0.0, elapsed), device=self.controls.device,
                      run_dir=str(self.dir), target_steps=self.controls.steps)

    @property
    def finished(self) -> bool:
        return self.data.stop is not None

    @property
    def ended(self) -> bool:
        """Finished, or its writer is gone (killed on this host: no `stop` event will ever come). A resume of
        it takes the lock anew, and the next poll finds the run live again."""
        return self.finished or self.gone is not None

    def writer(self) -> Holder | None:
        """The process writing the run (from its lock file), or None once it stopped."""
        return read_holder(self.dir)

    # -- steering -------------------------------------------------------------------------------------------
    def send(self, command: Command) -> str:
        """Append `command` to the run's `commands.jsonl`; its `Ack` is in `sent` under the returned id."""
        cid = append_command(self.dir, command)
        self.sent[cid] = Ack(cid, command.kind)
        return cid

    def request_samples(self) -> str:
        """Ask the trainer to draw samples (they arrive in `samples` after a later poll)."""
        return self.send(SampleNow())

    @property
    def in_flight(self) -> list[Ack]:
        return [a for a in self.sent.values() if a.step is None]

    def status_text(self) -> str:
        """For the status bar: attached, the command in flight, or the last one and the step it took effect."""
        parts = ["attached"]
        flying = [a for a in self.in_flight if a.kind != "sample"]
        last = self.last_ack
        if flying:
            parts.append(f"{flying[-1].kind} in flight" + (f" (+{len(flying) - 1} more)" if len(flying) > 1 else ""))
        elif last is not None and last.rejected is not None:
            parts.append(f"{last.kind} rejected at step {last.step:,}: {last.rejected}")
        elif last is not None:
            parts.append(f"{last.kind} acknowledged at step {last.step:,}")
        if self.finished:
            parts.append(f"run ended ({self.data.stop.reason})")
        elif self.gone is not None:  # short: the status bar keeps the fix whole and cuts what comes before it
            parts.append(f"its process (pid {self.gone.pid}) is gone after step {self.data.last_step:,}, without a "
                         f"stop; {self.resume_fix}")
        return " · ".join(parts)

    @property
    def monitor(self) -> str:
        """"loop" or "fit" when training_core.monitor records the run (the user's script trains it), else ""."""
        if self._monitor is None:
            try:
                self._monitor = RunConfig.read_toml(self.dir / CONFIG_FILE).monitor or ""
            except UserError:
                return ""  # not written yet (or damaged): asked again at the next call
        return self._monitor

    @property
    def resume_fix(self) -> str:
        """How to go on with a run whose writer is gone (the end of `status_text` then): a monitored run only by
        its own script (Freezeframe cannot run the user's code)."""
        if self.monitor == "loop":
            return "run your script again with start_run(..., resume=True) to continue"
        if self.monitor == "fit":
            return "run your script again for a new run (the Monitor cannot resume fit())"
        return f"resume it with python main.py --headless --resume {self.dir}"

"""What a run reports, as typed records: one small frozen dataclass per kind, as `base/commands.py` does for
what a run is told.

Events are the run's history: the trainer emits them to its observers, the record writes them to
`events.jsonl` one JSON object a line (`json_safe`), and every reader (the window, review, attach, replay,
export) gets them back through `event_from_dict` (both in base/event_json.py). Comparing kinds by string in
six places drifted; an `isinstance` against these classes cannot.

Every event has `step` (the trainer's step count when it happened: a control event at step N was
applied after step N, so step N+1 is the first it affects), `kind` and `time` (seconds since the
epoch). Control events also carry the command they applied (`command`, its `to_dict()`) and the
command's `id` when it came with one (from `commands.jsonl`), so a tuned run can be replayed and a
remote controller can see its command acknowledged.

Reading is forgiving on purpose: a record may come from a killed process, a newer Freezeframe, or a
hand edit. `event_from_dict` returns `None` for anything that is not an event (a list, a missing or
wrong-typed `step`), keeps an unknown kind as `UnknownEvent`, ignores unknown fields and falls back to
a field's default when its value has the wrong type. A kind renamed since is read through `OLD_KINDS`
(`resume`, the un-pause before issue 23, is `Continue`; `Resume` remains a deprecated alias of it, as in
`base/commands.py`).
"""
from __future__ import annotations

import time as _time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True, kw_only=True)
class Event:
    kind: ClassVar[str] = ""
    step: int = 0
    time: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        out = {"step": d.pop("step"), "kind": self.kind, "time": d.pop("time")}
        out.update((k, v) for k, v in d.items() if v is not None)
        return out

    @property
    def marker_step(self) -> int:
        """The step a plot marks this event at (alarms: the step where it happened, inside a batch)."""
        return self.step


@dataclass(frozen=True, kw_only=True)
class ControlEvent(Event):
    """An applied command. `command` is `Command.to_dict()`; `id` is the command's id, if it had one."""

    command: dict | None = None
    id: str | None = None


# -- lifecycle ------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Trace(Event):
    """A compiled step variant was traced for the first time (warm-up: before the first step, or during the run
    on the warm-up thread, loop/warmup.py); `retrace`: traced again, which costs seconds mid-run and should not happen."""

    kind: ClassVar[str] = "trace"
    phase: str = ""
    variant: str = ""
    traces: int = 0


@dataclass(frozen=True, kw_only=True)
class Retrace(Trace):
    kind: ClassVar[str] = "retrace"


@dataclass(frozen=True, kw_only=True)
class Start(Event):
    """The run began: the resolved settings, and which variables each phase trains (in the order of the
    per-variable record), so a reader never has to guess a variable's phase."""

    kind: ClassVar[str] = "start"
    device: str = ""
    experiment: str = ""
    phases: list = field(default_factory=list)
    phase_variables: dict = field(default_factory=dict)  # phase -> [variable path, ...]
    freeze: list = field(default_factory=list)
    update_frozen_stats: bool = False  # with `freeze`: what a watcher's panel shows (its checkbox)
    schedule: dict = field(default_factory=dict)
    lr: dict = field(default_factory=dict)
    method: str = "exact"
    run_dir: str = ""
    steps: int | None = None
    #: every variable as `VarInfo.to_dict()` (path, shape, dtype, trainable): the scope tree of a run
    #: seen only through its directory (an attached window)
    variables: list = field(default_factory=list)
    strategy: str = "single"  # single | mirrored | multiworker
    replicas: int = 1  # replicas in sync (over all workers)


@dataclass(frozen=True, kw_only=True)
class Checkpoint(Event):
    kind: ClassVar[str] = "checkpoint"
    path: str = ""  # relative to the run directory


@dataclass(frozen=True, kw_only=True)
class Warning(Event):  # noqa: A001 - the event kind's name
    """Something the run went on despite. A failure in user code turned off (sample(), metrics()) keeps its
    traceback in `detail`; `at_step` is the step it concerns when that is not the step it is reported at (a
    measure beside training fails at the step it measured and is taken at a later boundary)."""

    kind: ClassVar[str] = "warning"
    message: str = ""
    phase: str | None = None
    detail: str | None = None
    at_step: int | None = None

    @property
    def marker_step(self) -> int:
        return self.step if self.at_step is None else self.at_step


@dataclass(frozen=True, kw_only=True)
class Error(Event):
    """Training failed mid-run; `detail` holds the full traceback."""

    kind: ClassVar[str] = "error"
    message: str = ""
    detail: str | None = None


@dataclass(frozen=True, kw_only=True)
class Stop(ControlEvent):
    """The last event of a run: `reason` is done (step target), stopped (a Stop command, Ctrl-C, SIGTERM,
    the window closed), halted (a headless run that could not go on by itself: a NaN it stopped or gave up
    on, nothing left to train) or error."""

    kind: ClassVar[str] = "stop"
    reason: str = "done"
    traces: int = 0
    retraces: int = 0


@dataclass(frozen=True, kw_only=True)
class Resumed(Event):
    """The run continued, in a new process, from its checkpoint at `step`: what had been recorded after
    that checkpoint was dropped first (moved to `dropped["dir"]`), so every reader sees one timeline.
    The settings are those the checkpoint holds; `steps` is the step target from here on. (A pause ends
    with `continue`.)"""

    kind: ClassVar[str] = "resumed"
    checkpoint: str = ""  # relative to the run directory
    device: str = ""
    freeze: list = field(default_factory=list)
    update_frozen_stats: bool = False
    schedule: dict = field(default_factory=dict)
    lr: dict = field(default_factory=dict)
    method: str = "exact"
    steps: int | None = None
    strategy: str = "single"  # as in `start`: a run may be resumed with another strategy or replica count
    replicas: int = 1
    #: what was dropped: {"dir": "dropped/…", "scalars": rows, "events": lines, "variables": rows, "checkpoints": n}
    dropped: dict = field(default_factory=dict)


# -- controls -------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Pause(ControlEvent):
    """Training paused: `reason` user (a Pause command), step (a Step ran out), nan, or nothing to train."""

    kind: ClassVar[str] = "pause"
    reason: str = "user"


@dataclass(frozen=True, kw_only=True)
class Continue(ControlEvent):
    """A pause ended (a Continue command); written `resume` before issue 23, still read (`OLD_KINDS`)."""

    kind: ClassVar[str] = "continue"


@dataclass(frozen=True, kw_only=True)
class Step(ControlEvent):
    kind: ClassVar[str] = "step"
    n: int = 1


@dataclass(frozen=True, kw_only=True)
class Freeze(ControlEvent):
    """The freeze set was replaced by `scopes` (normalised)."""

    kind: ClassVar[str] = "freeze"
    scopes: list = field(default_factory=list)
    update_frozen_stats: bool = False


@dataclass(frozen=True, kw_only=True)
class Ratio(ControlEvent):
    kind: ClassVar[str] = "ratio"
    policy: dict = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class LearningRate(ControlEvent):
    kind: ClassVar[str] = "lr"
    phase: str = ""
    value: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Method(ControlEvent):
    kind: ClassVar[str] = "method"
    method: str = "exact"


@dataclass(frozen=True, kw_only=True)
class Rollback(ControlEvent):
    """The run went back to its checkpoint at `step` from `from_step` (a NaN with `--on-nan rollback`, or
    the user); the record after the checkpoint was dropped as on a resume. `reason` says why ("nan: …" or
    "user"); a learning-rate change made with it follows as an `lr` event."""

    kind: ClassVar[str] = "rollback"
    from_step: int = 0
    checkpoint: str = ""
    reason: str = "user"
    count: int = 1  # rollbacks in this run so far (an earlier one to the same checkpoint is cut by this one)
    dropped: dict = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class CheckpointRequested(ControlEvent):
    """A SaveCheckpoint command was applied (the `checkpoint` event that follows names the files)."""

    kind: ClassVar[str] = "checkpoint_requested"


@dataclass(frozen=True, kw_only=True)
class SampleRequested(ControlEvent):
    kind: ClassVar[str] = "sample"


@dataclass(frozen=True, kw_only=True)
class Rejected(ControlEvent):
    """A command that could not apply (a wrong value, an unknown scope, a malformed line): the run goes on."""

    kind: ClassVar[str] = "rejected"
    message: str = ""


# -- alarms ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Leak(Event):
    """A frozen variable moved (the gate method: optimizer momentum or decay), first seen at `at_step`."""

    kind: ClassVar[str] = "leak"
    variable: str = ""
    phase: str = ""
    at_step: int = 0
    update_norm: float = 0.0
    method: str = ""

    @property
    def marker_step(self) -> int:
        return self.at_step


#: why a variable of a `fit()` run moved while it counted as frozen, by the leak's `method`: its flag was set
#: False once fit() had traced the step (the step as traced still updates it), or a scope over it was declared
#: frozen (`Monitor(frozen=...)`, `declare_frozen`) and the step updates it all the same
FIT_LEAK_CAUSES = {
    "fit": "fit()'s compiled train_step still updates it (trainable = False set once fit() has traced the step "
           "does not reach it)",
    "fit declared": "it is declared frozen (Monitor(frozen=...), declare_frozen), but fit()'s train_step still "
                    "updates it (the Monitor only watches: leave it out of the step's update)"}


@dataclass(frozen=True, kw_only=True)
class Nan(Event):
    """A phase's loss became NaN or Inf at `at_step` (reported once until it is finite again)."""

    kind: ClassVar[str] = "nan"
    phase: str = ""
    at_step: int = 0
    value: str = "nan"

    @property
    def marker_step(self) -> int:
        return self.at_step


@dataclass(frozen=True, kw_only=True)
class UnknownEvent(Event):
    """A kind this version does not know (a newer record): kept, shown nowhere, never fatal."""

    data: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.data)

    @property
    def kind_name(self) -> str:
        return str(self.data.get("kind", ""))


EVENTS: dict[str, type[Event]] = {
    c.kind: c for c in (Trace, Retrace, Start, Checkpoint, Warning, Error, Stop, Pause, Continue, Step, Freeze,
                        Ratio, LearningRate, Method, CheckpointRequested, SampleRequested, Rejected, Leak, Nan, Resumed,
                        Rollback)
}


#: kinds read but no longer written, each the old name of a kind above: `resume` is `continue`'s
OLD_KINDS: dict[str, type[Event]] = {"resume": Continue}


def __getattr__(name: str) -> Any:
    """`Resume`: the deprecated alias of `Continue` (see the module docstring)."""
    if name == "Resume":
        warnings.warn("events.Resume (a pause ended) is now events.Continue; 'resume' means continuing a run "
                      "from disk (events.Resumed)", DeprecationWarning, stacklevel=2)
        return Continue
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(cls: type[Event]) -> type[Event]:
    """Add an event kind (a decorator): features that add kinds (resume, rollback) register them here."""
    EVENTS[cls.kind] = cls
    return cls


def now() -> float:
    """Event time: seconds since the epoch, to the millisecond (what `events.jsonl` holds)."""
    return round(_time.time(), 3)


@register
@dataclass(frozen=True, kw_only=True)
class Replay(Event):
    """This run replays `source`: `commands` control changes, up to step `stop_step`."""

    kind: ClassVar[str] = "replay"
    source: str = ""
    commands: int = 0
    stop_step: int = 0

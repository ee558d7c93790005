"""Controls as plain, serialisable commands.

Every change a user makes to a running training (from the window, from code, later from a file in
the run directory of a headless run) is one of these small records. The trainer applies them only at
a step boundary, in the order sent, and logs each one it applied to `events.jsonl`, so a hand-tuned
run can be replayed exactly and a remote run can be steered with the same vocabulary.

One meaning per name: `Continue` (kind `continue`) ends a pause; "resume" means only continuing a run from
its checkpoint on disk (`--resume RUN_DIR`, File → Resume Run…, the `resumed` event). The un-pause was
called `Resume` (kind `resume`) before issue 23. Records and `commands.jsonl` files written then keep
working: `command_from_dict` reads an old kind through `OLD_KINDS`, and only the new kind is written.
`Resume` stays importable (from here and from `training_core`) as a deprecated alias of `Continue`, the
same class, with a DeprecationWarning: the live-control guide has shown `trainer.send(Resume())` since the
start, and a user's script must not break over a rename. It is left out of `__all__` and `dir()`, so
nothing new picks it up; it can go once a release has warned of it.
"""
from __future__ import annotations

import functools
import math
import queue
import typing
import warnings
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, NamedTuple

from training_core.base.errors import UserError


@dataclass(frozen=True)
class Command:
    kind: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self)}


@dataclass(frozen=True)
class Pause(Command):
    kind: ClassVar[str] = "pause"


@dataclass(frozen=True)
class Continue(Command):
    """End a pause: training goes on (kind `resume` before issue 23, still read: `OLD_KINDS`)."""

    kind: ClassVar[str] = "continue"


@dataclass(frozen=True)
class Step(Command):
    """Run `n` steps, then pause (from a paused or a running trainer)."""

    kind: ClassVar[str] = "step"
    n: int = 1


#: why a run stops on a `Stop` command: a user or signal (stopped), or a headless run that cannot go on
#: by itself (halted: a NaN it gave up on, nothing left to train); the `stop` event carries it
STOP_REASONS = ("stopped", "halted")


@dataclass(frozen=True)
class Stop(Command):
    kind: ClassVar[str] = "stop"
    reason: str = "stopped"

    def __post_init__(self) -> None:
        if self.reason not in STOP_REASONS:
            raise UserError(f"command 'stop': reason must be one of {', '.join(STOP_REASONS)}, got {self.reason!r}")


@dataclass(frozen=True)
class SetFreeze(Command):
    """Replace the whole freeze set (scope prefixes), so that a replay needs no history."""

    kind: ClassVar[str] = "freeze"
    scopes: tuple[str, ...] = ()
    #: let BatchNormalization-style statistics in frozen scopes keep updating
    update_frozen_stats: bool = False

    def __post_init__(self) -> None:
        # one string is one scope (tuple("discriminator") was the scopes 'd', 'i', 's', ...)
        scopes = (self.scopes,) if isinstance(self.scopes, str) else self.scopes
        object.__setattr__(self, "scopes", tuple(scopes))


@dataclass(frozen=True)
class SetRatio(Command):
    """A new alternation policy, as `base/alternation.py`'s `policy_from_dict` reads it."""

    kind: ClassVar[str] = "ratio"
    policy: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SetLearningRate(Command):
    kind: ClassVar[str] = "lr"
    phase: str = ""
    value: float = 0.0


@dataclass(frozen=True)
class SetFreezeMethod(Command):
    """`exact` leaves frozen variables out of the update; `gate` (leaky) only zeroes their gradient."""

    kind: ClassVar[str] = "method"
    method: str = "exact"


@dataclass(frozen=True)
class SampleNow(Command):
    """Ask for generated samples at the next step boundary."""

    kind: ClassVar[str] = "sample"


@dataclass(frozen=True)
class SaveCheckpoint(Command):
    kind: ClassVar[str] = "checkpoint"


@dataclass(frozen=True)
class Rollback(Command):
    """Go back to the checkpoint at `step` (which must exist), dropping what was recorded after it; with
    `phase`, that phase's learning rate is then multiplied by `lr_factor` (a NaN's usual remedy)."""

    kind: ClassVar[str] = "rollback"
    step: int = 0
    phase: str | None = None
    lr_factor: float = 1.0
    reason: str = "user"


COMMANDS: dict[str, type[Command]] = {
    c.kind: c
    for c in (Pause, Continue, Step, Stop, SetFreeze, SetRatio, SetLearningRate, SetFreezeMethod, SampleNow, SaveCheckpoint,
              Rollback)
}
#: kinds read but no longer written, each the old name of a kind above: `resume` is `continue`'s (the
#: un-pause, renamed so that "resume" means only continuing a run from disk)
OLD_KINDS: dict[str, type[Command]] = {"resume": Continue}
FREEZE_METHODS = ("exact", "gate")


def __getattr__(name: str) -> Any:
    """`Resume`: the deprecated alias of `Continue` (see the module docstring)."""
    if name == "Resume":
        warnings.warn("Resume (the un-pause command) is now Continue; 'resume' means continuing a run from disk",
                      DeprecationWarning, stacklevel=2)
        return Continue
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _check_value(kind: str, name: str, value: Any, hint: Any) -> None:
    """A field's value must have its declared type: commands also come from files (`commands.jsonl`),
    where `"scopes": "generator"` or `"value": "1e-4"` would otherwise be taken apart or compared as text.
    An optional field (`phase: str | None`) takes null or its type."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if type(None) in typing.get_args(hint):
        if value is None:
            return
        hint = args[0]
    origin = typing.get_origin(hint) or hint
    ok = {
        bool: lambda v: isinstance(v, bool),
        int: lambda v: isinstance(v, int) and not isinstance(v, bool),
        float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
        str: lambda v: isinstance(v, str),
        dict: lambda v: isinstance(v, dict),
        tuple: lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v),
    }[origin](value)
    if not ok:
        what = {bool: "true or false", int: "a whole number", float: "a finite number", str: "a string",
                dict: "an object", tuple: "a list of strings"}[origin]
        raise UserError(f"command {kind!r}: field {name!r} must be {what}, got {value!r}"[:300])


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def command_from_dict(d: dict[str, Any]) -> Command:
    """Inverse of `Command.to_dict`; an unknown kind or field, or a value of the wrong type, is a `UserError`."""
    if not isinstance(d, dict):
        raise UserError(f"a command is a JSON object with a 'kind', got {d!r}"[:300])
    d = dict(d)
    kind = d.pop("kind", None)
    cls = COMMANDS.get(kind, OLD_KINDS.get(kind)) if isinstance(kind, str) else None
    if cls is None:
        raise UserError(f"unknown command kind {kind!r}; use one of {', '.join(sorted(COMMANDS))}"[:300])
    hints = _hints(cls)
    names = {f.name for f in fields(cls)}
    extra = set(d) - names
    if extra:
        raise UserError(f"command {kind!r} has unknown field(s) {', '.join(sorted(map(str, extra)))}"[:300])
    for name, value in d.items():
        _check_value(kind, name, value, hints[name])
    return cls(**d)


class Envelope(NamedTuple):
    """A command on its way to the trainer, with the id its sender gave it (`commands.jsonl` lines have one),
    which the event that acknowledges it carries."""

    command: Command
    id: str | None = None


class CommandQueue:
    """Thread-safe hand-over from any thread to the training thread.

    `pending()` is a cheap check made at every step boundary; `get()` blocks while paused, so a
    paused trainer uses no CPU.
    """

    def __init__(self) -> None:
        self._q: queue.SimpleQueue[Envelope] = queue.SimpleQueue()

    def put(self, command: Command, id: str | None = None) -> None:  # noqa: A002 - the wire name
        if not isinstance(command, Command):
            raise TypeError(f"expected a Command, got {type(command).__name__}")
        self._q.put(Envelope(command, id))

    def pending(self) -> bool:
        return not self._q.empty()

    def get(self, timeout: float | None = None) -> Envelope | None:
        try:
            return self._q.get(timeout=timeout)
        except queue.Empty:
            return None

    def drain(self) -> list[Envelope]:
        out = []
        while True:
            try:
                out.append(self._q.get_nowait())
            except queue.Empty:
                return out

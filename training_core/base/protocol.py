"""The wire protocol between the window and its training process, as typed messages.

Both directions are small frozen dataclasses, pickled over one authenticated local socket
(`multiprocessing.connection`). Requests go to the service; reports come back. The names belong to
the protocol: the window's adapter maps each report type to a Qt signal by a table, so renaming a
signal never changes what crosses the wire, and a test can drive the service without Qt.

Jobs (`Load`, `Prepare`, `Run`) run one after another on the service's main thread; `BeginRun`, `Send`
and `Exit` are handled at once by its reader thread, so a command reaches a running trainer at its
next step boundary.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from training_core.base.commands import Command
from training_core.base.config import RunConfig
from training_core.base.events import Event
from training_core.base.metrics import MetricsBatch, Status
from training_core.base.scopes import ScopeNode, VarInfo


# -- requests: window -> service ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Load:
    """Import TensorFlow (with this many intra-op threads; 0 = its default) and list the devices."""

    intra_op_threads: int = 0


@dataclass(frozen=True)
class Prepare:
    """Prepare a trainer for `config` so the window can show its scopes; Start reuses it when it matches."""

    config: RunConfig


@dataclass(frozen=True)
class Run:
    """Run `config` (reusing the prepared trainer when it matches, preparing a new one otherwise). With
    `resume`, continue the run in `config.run_dir` from its last checkpoint (always a new trainer)."""

    config: RunConfig
    resume: bool = False


@dataclass(frozen=True)
class BeginRun:
    """A run was requested: commands sent before it starts are kept and applied at its start."""


@dataclass(frozen=True)
class Send:
    command: Command
    id: str | None = None


@dataclass(frozen=True)
class Exit:
    """Stop the run (if any), let it flush its record, and end the process."""


JOBS = (Load, Prepare, Run)


# -- reports: service -> window ----------------------------------------------------------------------------
@dataclass(frozen=True)
class PreparedInfo:
    """What the window needs of a prepared trainer."""

    config: RunConfig  # resolved: schedule, learning rates, freeze filled in
    var_infos: list[VarInfo]
    tree: ScopeNode
    phase_names: list[str]
    phase_paths: list[tuple[str, ...]]  # the variables each phase trains
    stat_paths: tuple[str, ...]  # non-trainable statistics a forward pass updates (BatchNormalization)
    sample_kind: str
    device_name: str
    description: str = ""
    warnings: tuple[str, ...] = ()  # what preparing found (variables no gradient reaches, ...), shown at Ready


@dataclass(frozen=True)
class Busy:
    text: str  # what the service is doing ("Loading TensorFlow…"); "" when idle


@dataclass(frozen=True)
class Loaded:
    devices: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Prepared:
    info: PreparedInfo


@dataclass(frozen=True)
class Failed:
    summary: str  # one line: the problem and the fix
    detail: str = ""


@dataclass(frozen=True)
class RunStarted:
    run_dir: str = ""


@dataclass(frozen=True)
class RunFinished:
    status: Status | None = None  # None when the run never started


@dataclass(frozen=True)
class Metrics:
    batch: MetricsBatch


@dataclass(frozen=True)
class Emitted:
    event: Event


@dataclass(frozen=True)
class Samples:
    samples: dict[str, Any]


@dataclass(frozen=True)
class StatusChanged:
    status: Status


REPORTS = (Busy, Loaded, Prepared, Failed, RunStarted, RunFinished, Metrics, Emitted, Samples, StatusChanged)


#: the environment variable through which the window hands the training process its connection key
KEY_ENV = "FREEZEFRAME_SERVICE_KEY"


def process_end(code: int | None) -> str:
    """How a training process ended, in words, from its exit code (`subprocess`'s: negative for a signal):
    "killed by SIGKILL", "exit code 1". The window says it where the user looks (status bar, dialog)."""
    if code is None:
        return "ended"
    if code < 0:
        import signal
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"ended with exit code {code}"

"""Where commands come from at a step boundary: the run's own queue (one device), or, in a multi-worker run,
the chief's decision that every worker applies at the same boundary. The trainer has one command table and
one paused loop for both (loop/trainer.py); these say when a boundary takes commands and which.

Why a multi-worker run needs this: each worker runs the same training loop; every step is a collective
(the gradient all-reduce), so all workers must run the same collectives in the same order. A command that
reached only the chief (from its window, from code, from a file) and was applied there alone would change
what the chief computes and, sooner or later, which collectives it runs: the workers would hang or silently
diverge.

So in a multi-worker run commands apply only at boundaries every worker reaches at the same step count
(multiples of `sync_every`). At a boundary the chief sends the commands it received since the last one
(and a pause it decided on its own: a NaN loss) to every worker with one more collective
(engine/collective.py), and every worker applies the same list in the same order. The same message says whether
a loss is non-finite (the chief's `nan_at`: only the chief has the NaN alarm), and every worker skips its
checkpoints by that (`nan_at`): a worker that went on saving while the chief skipped kept other checkpoints
("last 3 kept" deleted the good ones), and a rollback to one of the chief's was refused on that worker alone. While paused, the
workers wait in that collective; the chief runs a round a few times a second, so a continue, a step or a
stop reaches all of them at once.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from training_core.base import commands as C

if TYPE_CHECKING:
    from training_core.engine.collective import Broadcast

class CommandSource(Protocol):
    """When a boundary takes commands, and which (see the module docstring)."""

    #: this process decides (one device, or the chief): it reads its queue and runs the observers' idle hooks
    leads: bool

    def due(self, step: int, paused: bool, pending: bool) -> bool:
        """Whether this boundary takes commands."""

    def exchange(self, envelopes: list[C.Envelope], nan_at: int | None) -> tuple[list[C.Envelope], str | None]:
        """The commands to apply here, in order, and a pause decided since the last boundary; `nan_at` is this
        process's (the chief's counts)."""

    def nan_at(self, own: int | None) -> int | None:
        """The step since which a loss is non-finite as every worker knows it, which decides whether a checkpoint
        is saved (`own`: this process's; one device: that one)."""

    def defer_pause(self, reason: str) -> bool:
        """A pause an observer asks for (a NaN): whether it waits for the next boundary's exchange (True), which
        carries it to every worker, or applies now (False). The loop's own pauses (a Step count run out, nothing
        to train), a Pause command and the exchange's pause are every worker's at the same step: never deferred."""

    def failure_line(self, error: BaseException, step: int, run_dir: Path | None) -> str | None:
        """The one line for an error that is a lost peer, or None."""


class LocalCommands:
    """One device: a boundary takes commands whenever some are queued, or while paused."""

    leads = True

    def due(self, step: int, paused: bool, pending: bool) -> bool:
        return paused or pending

    def exchange(self, envelopes: list[C.Envelope], nan_at: int | None) -> tuple[list[C.Envelope], str | None]:
        return envelopes, None

    def nan_at(self, own: int | None) -> int | None:
        return own

    def defer_pause(self, reason: str) -> bool:
        return False

    def failure_line(self, error: BaseException, step: int, run_dir: Path | None) -> str | None:
        return None


class CommandSync:
    """A multi-worker run: the chief's commands, broadcast every `every` steps (and while paused)."""

    def __init__(self, broadcast: "Broadcast", chief: bool, every: int) -> None:
        self.broadcast, self.leads, self.every = broadcast, chief, every
        self.pending_pause: str | None = None
        self._nan_at: int | None = None  # the chief's `nan_at` as the last boundary's exchange carried it
        self._last = -1

    def due(self, step: int, paused: bool, pending: bool) -> bool:
        if not paused and (step == self._last or step % self.every):
            return False
        self._last = step
        return True

    def defer_pause(self, reason: str) -> bool:
        if self.leads and self.pending_pause is None:
            self.pending_pause = reason
        return True

    def exchange(self, envelopes: list[C.Envelope], nan_at: int | None) -> tuple[list[C.Envelope], str | None]:
        message = b""
        if self.leads:
            pause, self.pending_pause = self.pending_pause, None
            message = json.dumps({"commands": [[e.command.to_dict(), e.id] for e in envelopes],
                                  "pause": pause, "nan_at": nan_at}).encode("utf-8")
        decided = json.loads(self.broadcast(message).decode("utf-8"))
        self._nan_at = decided.get("nan_at")
        return [C.Envelope(C.command_from_dict(d), cid) for d, cid in decided["commands"]], decided["pause"]

    def nan_at(self, own: int | None) -> int | None:
        """The chief's as of the last boundary: the same on every worker at every step between two boundaries
        (a checkpoint up to `sync_every` steps after a NaN may still be saved; NanRollback never picks one saved
        after the NaN's step)."""
        return self._nan_at

    def failure_line(self, error: BaseException, step: int, run_dir: Path | None) -> str | None:
        from training_core.engine.collective import lost_peer_line
        return lost_peer_line(error, step, str(run_dir or "") if self.leads else None)

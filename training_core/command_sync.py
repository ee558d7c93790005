"""Commands in a multi-worker run: the chief decides, every worker applies, at the same step boundary.

Each worker runs the same training loop; every step is a collective (the gradient all-reduce), so all
workers must run the same collectives in the same order. A command that reached only the chief (from
its window, from code, from a file) and was applied there alone would change what the chief computes
and, sooner or later, which collectives it runs: the workers would hang or silently diverge.

So in a multi-worker run the trainer applies commands only at boundaries every worker reaches at the
same step count (multiples of `sync_every`). At a boundary the chief sends the commands it received
since the last one (and a pause it decided on its own: a NaN loss) to every worker with one more
collective (an all-reduce of a fixed-size buffer that only the chief fills), and every worker applies
the same list in the same order. While paused, the workers wait in that collective; the chief runs a
round a few times a second, so a resume, a step or a stop reaches all of them at once.

A worker that dies makes the next collective on the others fail (gRPC reports the lost peer at once on
loopback); `failure_line` turns that error into the one line the chief prints.
"""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from . import commands as C
from .observers import Observer

if TYPE_CHECKING:
    from .trainer import Trainer

#: bytes per round; a longer message takes several rounds
CAPACITY = 4096
#: pauses every worker reaches by itself at the same step (no need to wait for the chief's word)
DETERMINISTIC_PAUSES = ("step", "nothing to train")
IDLE_POLL_S = 0.25


class CommandSync:
    def __init__(self, strategy: Any, chief: bool, every: int) -> None:
        import tensorflow as tf
        self.strategy, self.chief, self.every = strategy, chief, every
        workers = _count_workers(strategy)
        self.local = max(1, int(strategy.num_replicas_in_sync) // workers)  # replicas per worker (equal)
        self.applying = False
        self.pending_pause: str | None = None
        self._last = -1

        @tf.function(input_signature=[tf.TensorSpec([CAPACITY + 2], tf.int32)], autograph=False)
        def exchange(payload: Any) -> Any:
            def replica() -> Any:
                return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, tf.identity(payload))
            return strategy.experimental_local_results(strategy.run(replica))[0]
        self._exchange = exchange

    # -- the trainer's hooks ------------------------------------------------------------------------------
    def defer_pause(self, reason: str) -> bool:
        """A pause the chief decided alone (not at a boundary) waits for the next round, so that every
        worker pauses after the same step. Returns True when deferred."""
        if self.applying or reason in DETERMINISTIC_PAUSES:
            return False
        if self.chief and self.pending_pause is None:
            self.pending_pause = reason
        return True

    def boundary(self, trainer: "Trainer") -> None:
        """Called by every worker at the top of every loop iteration."""
        if not trainer._paused and (trainer.step == self._last or trainer.step % self.every):
            return
        self._last = trainer.step
        self._round(trainer, trainer.commands.drain() if self.chief else [])
        while trainer._paused and not trainer._stop:
            trainer._fetch()
            waiting: list[C.Envelope] = []
            if self.chief:
                for o in trainer.observers:
                    o.on_idle(trainer)
                env = trainer.commands.get(timeout=IDLE_POLL_S)
                waiting = ([env] if env is not None else []) + trainer.commands.drain()
            self._round(trainer, waiting)

    def failure_line(self, error: BaseException, trainer: "Trainer") -> str | None:
        """The one line the chief (or a worker) prints when a peer died; None for any other error."""
        return lost_peer_line(error, trainer.step, str(trainer.run_dir or "") if self.chief else None)

    # -- one round --------------------------------------------------------------------------------------
    def _round(self, trainer: "Trainer", envelopes: list[C.Envelope]) -> None:
        message = b""
        if self.chief:
            pause, self.pending_pause = self.pending_pause, None
            message = json.dumps({"commands": [[e.command.to_dict(), e.id] for e in envelopes],
                                  "pause": pause}).encode("utf-8")
        received = self._broadcast(message)
        decided = json.loads(received.decode("utf-8"))
        self.applying = True
        try:
            for d, cid in decided["commands"]:
                trainer._apply(C.Envelope(C.command_from_dict(d), cid))
            if decided["pause"]:
                trainer.pause(decided["pause"])
        finally:
            self.applying = False

    def _broadcast(self, message: bytes) -> bytes:
        """The chief's bytes on every worker (several rounds when longer than CAPACITY)."""
        import numpy as np
        out, offset = b"", 0
        while True:
            chunk = message[offset:offset + CAPACITY]
            more = int(offset + CAPACITY < len(message))
            buf = np.zeros(CAPACITY + 2, dtype=np.int32)
            if self.chief:
                buf[0], buf[1] = len(chunk), more
                buf[2:2 + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
            got = self._exchange(buf).numpy() // self.local  # each of the chief's local replicas added it
            n = int(got[0])
            out += got[2:2 + n].astype(np.uint8).tobytes()
            offset += CAPACITY
            if not got[1]:
                return out


def _count_workers(strategy: Any) -> int:
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    return max(1, sum(len(spec.get(job, [])) for job in ("chief", "worker")))


def lost_peer_line(error: BaseException, step: int, run_dir: str | None) -> str | None:
    """One line for a collective that failed because a peer is gone; None for any other error."""
    import tensorflow as tf
    if not isinstance(error, (tf.errors.UnavailableError, tf.errors.CancelledError, tf.errors.InternalError,
                              tf.errors.DeadlineExceededError, tf.errors.AbortedError)):
        return None
    text = str(error)
    if "ollective" not in text and "peer" not in text.lower() and "RecvBuf" not in text:
        return None
    peer = re.search(r"/job:(\w+)/replica:\d+/task:(\d+)", text)
    who = f"{peer.group(1)} {peer.group(2)}" if peer else "a worker"
    cause = next((ln.strip() for ln in text.splitlines() if "aborted by" in ln or "Connection" in ln), "")
    cause = re.sub(r"^Collective ops is aborted by:\s*", "", cause)[:120]
    kept = f"the record up to there is in {run_dir}" if run_dir else "the chief keeps the record"
    return (f"{who} of the multiworker run stopped responding after step {step}"
            f"{f' ({cause})' if cause else ''}; training stopped, {kept}")


class ScratchCleanup(Observer):
    """A non-chief worker checkpoints with the others (TensorFlow's saving may run collectives) into a
    scratch directory of its own, removed when the run ends: the chief's checkpoints are the record."""

    def on_run_end(self, trainer: "Trainer", reason: str) -> None:
        import shutil
        if trainer.scratch_dir is not None:  # never `run_dir`: on a resume that is the chief's record
            shutil.rmtree(trainer.scratch_dir, ignore_errors=True)

"""The TensorFlow half of a multi-worker run's command exchange: the chief's bytes on every worker, by one
collective (an all-reduce of a fixed-size buffer that only the chief fills), and the one line for a
collective that failed because a peer is gone. The decisions (what is exchanged, when) are the loop's:
loop/multiworker.py.

A worker that dies makes the next collective on the others fail (gRPC reports the lost peer at once on
loopback); `lost_peer_line` turns that error into the one line the chief prints.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

#: bytes per round; a longer message takes several rounds
CAPACITY = 4096


def _count_workers(strategy: Any) -> int:
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    return max(1, sum(len(spec.get(job, [])) for job in ("chief", "worker")))


class Broadcast:
    """`broadcast(message)` returns the chief's message on every worker (the others pass b"")."""

    def __init__(self, strategy: Any, chief: bool) -> None:
        import tensorflow as tf
        self.chief = chief
        workers = _count_workers(strategy)
        self.local = max(1, int(strategy.num_replicas_in_sync) // workers)  # replicas per worker (equal)

        @tf.function(input_signature=[tf.TensorSpec([CAPACITY + 2], tf.int32)], autograph=False)
        def exchange(payload: Any) -> Any:
            def replica() -> Any:
                return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, tf.identity(payload))
            return strategy.experimental_local_results(strategy.run(replica))[0]
        self._exchange = exchange

    def __call__(self, message: bytes) -> bytes:
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

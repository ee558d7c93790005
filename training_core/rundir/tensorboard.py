"""TensorBoard event files written through TensorFlow's C++ record writer.

An event file is a TFRecord file of `Event` protos. TensorBoard's own pure-Python writer computes the
record checksums in Python on a thread of its own, which cost about 8 us per training step here and
competes with the training thread for the GIL; `tf.io.TFRecordWriter` does the same in C++. The protos
come from the `tensorboard` package, so the files are exactly what TensorBoard reads.
Write failures surface as TensorFlow errors on `flush`/`close` (the record writer names them).
"""
from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Iterable


class EventWriter:
    def __init__(self, logdir: str | Path) -> None:
        import tensorflow as tf
        from tensorboard.compat.proto import event_pb2, summary_pb2
        self._event, self._summary = event_pb2.Event, summary_pb2.Summary
        self._session_log = event_pb2.SessionLog
        Path(logdir).mkdir(parents=True, exist_ok=True)
        now = time.time()
        # TensorBoard reads a directory's files in name order; a resumed run's file must come after (and
        # never replace) the first one, even within the same second
        base = self.path = Path(logdir) / f"events.out.tfevents.{int(now)}.{socket.gethostname()}"
        k = 1
        while self.path.exists():
            k += 1
            self.path = base.with_name(f"{base.name}.{k}")
        self._w = tf.io.TFRecordWriter(str(self.path))
        self._w.write(event_pb2.Event(wall_time=now, file_version="brain.Event:2").SerializeToString())
        self._w.flush()

    def add_scalars(self, step: int, wall_time: float, values: Iterable[tuple[str, float]]) -> None:
        V = self._summary.Value
        ev = self._event(wall_time=wall_time, step=step,
                         summary=self._summary(value=[V(tag=t, simple_value=v) for t, v in values]))
        self._w.write(ev.SerializeToString())

    def add_session_start(self, step: int) -> None:
        """A SessionLog START at `step`: TensorBoard discards every value it read at `step` or later from
        earlier files (`EventAccumulator._CheckForRestartAndMaybePurge`), so a resumed or rolled-back run
        shows one timeline, without the steps it ran again."""
        ev = self._event(wall_time=time.time(), step=step, session_log=self._session_log(status=self._session_log.START))
        self._w.write(ev.SerializeToString())

    def flush(self) -> None:
        self._w.flush()

    def close(self) -> None:
        self._w.close()

"""TensorBoard event files written through TensorFlow's C++ record writer.

An event file is a TFRecord file of `Event` protos. TensorBoard's own pure-Python writer computes the
record checksums in Python on a thread of its own, which cost about 8 us per training step here and
competes with the training thread for the GIL; `tf.io.TFRecordWriter` does the same in C++. The protos
come from the `tensorboard` package, so the files are exactly what TensorBoard reads.
Write failures surface as TensorFlow errors on `flush`/`close` (the record writer names them).

Besides scalars: pictures (the images plugin's own `Summary.Image`, PNG-encoded by `tf.io.encode_png`),
Markdown text (the text plugin) and an HParams session (the hparams plugin's session start info, its end
info with the run's status once it has ended, and no experiment summary: TensorBoard then derives the
table's columns from the sessions of every run in the logdir, and each row's metrics from the last values
of its run's scalars). TensorBoard keeps the metadata
(plugin, description) of the first value of a tag it reads and ignores the rest, so a file gives it with
a tag's first value only, as TensorFlow's own writer does. Whoever owns the writer writes all of it: in a
run, the record writer's thread.
"""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any, Iterable

import numpy as np

#: the two TensorBoard runs of a run directory's `tb/` (rundir/writer.py says why two)
TB_TRAINING, TB_VARIABLES = "training", "variables"


class EventWriter:
    """One event file. It begins with a SessionLog START at `session_start` (0 for a new run, the step after
    the checkpoint for a resumed one): TensorBoard's server takes the first START it reads in a run for the
    run's beginning and purges only at later ones, so without one at the start of a run's first file, the
    START of a resume or a rollback would be that first one, and the steps run again would show twice."""

    def __init__(self, logdir: str | Path, session_start: int = 0) -> None:
        import tensorflow as tf
        from tensorboard.compat.proto import event_pb2, summary_pb2
        self._event, self._summary = event_pb2.Event, summary_pb2.Summary
        self._session_log = event_pb2.SessionLog
        self._tf = tf
        self._described: set[str] = set()  # tags whose metadata this file already holds
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
        self.add_session_start(session_start)
        self._w.flush()

    def add_scalars(self, step: int, wall_time: float, values: Iterable[tuple[str, float]]) -> None:
        V = self._summary.Value
        ev = self._event(wall_time=wall_time, step=step,
                         summary=self._summary(value=[V(tag=t, simple_value=v) for t, v in values]))
        self._w.write(ev.SerializeToString())

    def add_session_start(self, step: int) -> None:
        """A SessionLog START at `step`: TensorBoard discards every value it read at `step` or later (scalars,
        pictures, text; `EventAccumulator._CheckForRestartAndMaybePurge`), so a resumed or rolled-back run
        shows one timeline, without the steps it ran again."""
        ev = self._event(wall_time=time.time(), step=step,
                         session_log=self._session_log(status=self._session_log.START))
        self._w.write(ev.SerializeToString())

    def add_image(self, step: int, wall_time: float, tag: str, pixels: np.ndarray, description: str = "") -> None:
        """One picture, uint8 pixels of shape (height, width, 1 or 3), as TensorBoard's images plugin reads it."""
        h, w, c = pixels.shape
        png = self._tf.io.encode_png(pixels).numpy()
        value = self._summary.Value(tag=tag, image=self._summary.Image(height=h, width=w, colorspace=c,
                                                                       encoded_image_string=png))
        if tag not in self._described:
            value.metadata.summary_description = description
            value.metadata.plugin_data.plugin_name = "images"  # (TensorBoard rebuilds it from the description)
            self._described.add(tag)
        self._w.write(self._event(wall_time=wall_time, step=step, summary=self._summary(value=[value]))
                      .SerializeToString())

    def add_text(self, step: int, wall_time: float, tag: str, text: str, description: str = "") -> None:
        """One entry of Markdown text (the text plugin: a string tensor)."""
        from tensorboard.plugins.text import metadata as text_metadata
        from tensorboard.util import tensor_util
        value = self._summary.Value(tag=tag, tensor=tensor_util.make_tensor_proto(text.encode("utf-8")))
        if tag not in self._described:
            value.metadata.CopyFrom(text_metadata.create_summary_metadata(display_name=None,
                                                                           description=description))
            self._described.add(tag)
        self._w.write(self._event(wall_time=wall_time, step=step, summary=self._summary(value=[value]))
                      .SerializeToString())

    def flush(self) -> None:
        self._w.flush()

    def close(self) -> None:
        self._w.close()


#: the file of a TensorBoard run's HParams session: it sorts before every event file a process writes
#: (their names hold the time), so TensorBoard reads this session before any other one an old file may hold
HPARAMS_FILE = "events.out.tfevents.0.hparams"


#: the hparams plugin's status of a session, by the reason of its run's `stop` event (base/events.py): a run
#: that reached its target (done) or was stopped by someone (stopped) ended as asked; one that halted (a NaN
#: it stopped on, nothing left to train) or failed (error) did not. Another reason: unknown.
END_STATUS = {"done": "STATUS_SUCCESS", "stopped": "STATUS_SUCCESS", "halted": "STATUS_FAILURE",
              "error": "STATUS_FAILURE"}


def write_session(logdir: str | Path, hparams: dict[str, Any], start_time: float,
                  end: tuple[str, float] | None = None) -> Path:
    """The hparams plugin's session start info of a TensorBoard run, at step 0 (a SessionLog START later never
    discards it), in a file of its own that each process replaces whole (os.replace: a reader never sees
    half of it). Why its own file: TensorBoard keeps the first metadata of a tag it reads in a run and ignores
    every later one, so a resumed process's session appended to an event file would never show; here the
    plugin shows the latest process's settings (its `steps` target, its `count`). Its group name is left
    empty, so TensorBoard names the row after the run's directory: one row per run, even for two runs with
    the same settings.

    `end`: (the `stop` event's reason, its time) at the run's end: the file is written again with the same
    start info and the session end info after it (`END_STATUS`), so that the table's Status column says how
    the run ended; a run still training, or killed, has none (TensorBoard's "unknown"). A resumed process
    writes the start alone again, which takes the end of the process before it away."""
    import tensorflow as tf
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2
    info = plugin_data_pb2.SessionStartInfo(group_name="", start_time_secs=start_time)
    for name in sorted(hparams):
        v = hparams[name]
        if isinstance(v, bool):
            info.hparams[name].bool_value = v
        elif isinstance(v, (int, float)):
            info.hparams[name].number_value = v
        else:
            info.hparams[name].string_value = str(v)
    values = [(start_time, summary_pb2.Summary.Value(tag=metadata.SESSION_START_INFO_TAG, tensor=metadata.NULL_TENSOR,
                                                     metadata=metadata.create_summary_metadata(
                                                         plugin_data_pb2.HParamsPluginData(session_start_info=info))))]
    if end is not None:
        reason, end_time = end
        status = getattr(api_pb2, END_STATUS.get(reason, "STATUS_UNKNOWN"))
        data = plugin_data_pb2.HParamsPluginData(session_end_info=plugin_data_pb2.SessionEndInfo(
            status=status, end_time_secs=end_time))
        values.append((end_time, summary_pb2.Summary.Value(tag=metadata.SESSION_END_INFO_TAG,
                                                           tensor=metadata.NULL_TENSOR,
                                                           metadata=metadata.create_summary_metadata(data))))
    path = Path(logdir) / HPARAMS_FILE
    part = path.with_name(".hparams.part")  # no "tfevents" in its name: TensorBoard never reads it
    w = tf.io.TFRecordWriter(str(part))
    w.write(event_pb2.Event(wall_time=start_time, file_version="brain.Event:2").SerializeToString())
    for wall_time, value in values:  # (the start first, as the file held it before the end)
        w.write(event_pb2.Event(wall_time=wall_time, step=0, summary=summary_pb2.Summary(value=[value]))
                .SerializeToString(deterministic=True))
    w.close()
    os.replace(part, path)
    return path

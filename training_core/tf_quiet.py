"""Import TensorFlow without its start-up chatter.

TensorFlow's C++ side prints oneDNN/CUDA notices straight to file descriptor 2 before any log level
applies (TF_CPP_MIN_LOG_LEVEL does not reach them), which buries the one-line errors Freezeframe prints.
The notices are swallowed at the descriptor level while TensorFlow loads and probes devices; if that
fails, what was captured is written back so that nothing useful is lost.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from typing import Iterator

_lock = threading.Lock()
_done = False


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    with _lock:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError):  # no real stderr (embedded, pytest capture): nothing to quiet
            yield
            return
        with tempfile.TemporaryFile() as tmp:
            os.dup2(tmp.fileno(), 2)
            ok = False
            try:
                yield
                ok = True
            except KeyboardInterrupt:  # Ctrl-C while TensorFlow loads: the caller says so in one line
                ok = True
                raise
            finally:
                os.dup2(saved, 2)
                os.close(saved)
                if not ok:
                    tmp.seek(0)
                    sys.stderr.write(tmp.read().decode("utf-8", "replace"))


def import_tensorflow(intra_op_threads: int = 0):
    """`import tensorflow` (and probe devices once) with the chatter swallowed.

    `intra_op_threads` > 0 is applied on the first call only: TensorFlow fixes its thread pools when its
    runtime starts, which is right after this."""
    global _done
    if _done:
        import tensorflow as tf
        return tf
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with quiet_stderr():
        import tensorflow as tf
        import keras  # noqa: F401
        if intra_op_threads > 0:
            try:
                tf.config.threading.set_intra_op_parallelism_threads(intra_op_threads)
            except RuntimeError:  # the runtime already started (TF was used before Freezeframe)
                pass
        tf.config.list_physical_devices("GPU")
    _done = True
    return tf

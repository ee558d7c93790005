"""Import TensorFlow without its start-up chatter, and keep its known noise off the terminal.

TensorFlow's C++ side prints oneDNN/CUDA notices straight to file descriptor 2 before any log level
applies (TF_CPP_MIN_LOG_LEVEL does not reach them), which buries the one-line errors Freezeframe prints.
The notices are swallowed at the descriptor level while TensorFlow loads and probes devices; if that
fails, what was captured is written back so that nothing useful is lost.

Later, Grappler logs at ERROR level when one of its graph optimizers gives up on a graph
("meta_optimizer.cc:967] remapper failed: INVALID_ARGUMENT: Mutation::Apply error ..." on the digits
GAN, at the first step of each compiled variant), although nothing failed: the graph simply runs
without that rewrite. `filter_native_stderr` passes descriptor 2 through a pipe that drops exactly
those lines and forwards everything else as it comes (a partial line too, so a progress bar's "\r"
updates are not held back); at exit the pipe is drained and the real stderr restored.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import re
import sys
import tempfile
import threading
from typing import Iterator

_lock = threading.Lock()
_done = False
_filter: tuple[int, threading.Thread] | None = None  # (the real stderr, the pump thread)

#: Grappler's "an optimizer skipped this graph" lines: noise, never a failure of the run
NOISE = re.compile(rb"meta_optimizer\.cc:\d+\] \w+ failed: ")
_LOG_START = re.compile(rb"^[IWEF]\d")  # the start of a TensorFlow C++ log line: held until it is whole


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


def filter_native_stderr() -> None:
    """Drop Grappler's optimizer-skipped lines from descriptor 2, forward the rest (module docstring)."""
    global _filter
    if _filter is not None:
        return
    try:
        sys.stderr.flush()
        real = os.dup(2)
        r, w = os.pipe()
        os.dup2(w, 2)
        os.close(w)
    except (OSError, ValueError):  # no real stderr (embedded, pytest capture): nothing to filter
        return

    def pump() -> None:
        held = b""
        while True:
            try:
                chunk = os.read(r, 65536)
            except OSError:
                break
            if not chunk:
                break
            *lines, held = (held + chunk).split(b"\n")
            out = b"".join(line + b"\n" for line in lines if not NOISE.search(line))
            if held and not _LOG_START.match(held):
                out, held = out + held, b""
            if out:
                os.write(real, out)
        if held and not NOISE.search(held):
            os.write(real, held)
        os.close(r)

    thread = threading.Thread(target=pump, name="freezeframe-stderr-filter", daemon=True)
    thread.start()
    _filter = (real, thread)
    atexit.register(restore_stderr)


def restore_stderr() -> None:
    """Put the real stderr back and forward what is still in the pipe (runs at exit)."""
    global _filter
    if _filter is None:
        return
    real, thread = _filter
    _filter = None
    try:
        sys.stderr.flush()
        os.dup2(real, 2)  # closes the pipe's only write end: the pump reads to the end and stops
    except (OSError, ValueError):
        return
    thread.join(timeout=2.0)


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
        import keras  # noqa: F401
        import tensorflow as tf
        if intra_op_threads > 0:
            try:
                tf.config.threading.set_intra_op_parallelism_threads(intra_op_threads)
            except RuntimeError:  # the runtime already started (TF was used before Freezeframe)
                pass
        tf.config.list_physical_devices("GPU")
    filter_native_stderr()
    _done = True
    return tf

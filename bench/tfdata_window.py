"""The DCGAN on tf.data in the window: the built-in `shapes` example trained from the real window (offscreen, its
plots, FID/KID curves and sample grid drawn live as a user sees them; its training in the training process the
window starts, with one intra-op thread fewer than cores, at nice 0 under SCHED_BATCH) against the bare `tf.function` loop of
bench/tfdata_bench.py over the same pipeline, in a process with the window's TensorFlow settings (bench/run.py's
row "throughput window, shapes DCGAN on tf.data").

  window      MainWindow(("example", "shapes")), 1440x900, started, paused, stepped by Step(n) commands; a chunk
              is timed from sending the command to its last step's numbers drawn in the window
  bare        tfdata_bench.Bare: the file's models, optimizers and pipeline, the batch read inside the step
  bare_fed    the same with the batch passed in from Python (the reference is the faster of the two)
  bare_again  the bare loop again: the A/A spread of this run
  window_niceN, window_batchN  (not defaults) the window with its training process at nice N
              (FREEZEFRAME_TRAINING_NICE=N), under SCHED_BATCH for `batch` (FREEZEFRAME_TRAINING_POLICY=batch):
              what the training process's lower priority costs on a machine other jobs share
  headless    (not a default) tfdata_bench's headless Trainer on a thread of this process, with the window's
              TensorFlow settings: the window's cost apart from the Trainer's own
  window_nomet, headless_nomet  (not defaults) the same without the file's FID/KID metric (`metrics = None`):
              what measuring beside training costs the training

Stepped in turn, the order turned each round, steps/s = steps over the chunks' whole time, as in
bench/tfdata_bench.py (whose docstring says why). The window's steps/s by the training process's own step clock
is reported beside it (each chunk from its first to its last step: without the Step command's and the last batch's
trips, which a chunk makes and a run does not).

python -m bench.tfdata_window [chunk] [rounds] [variants,...]    (one JSON line; 300 6, all four)
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from pathlib import Path

from bench.child import run_child

ROOT = Path(__file__).resolve().parent.parent
NAMES = ["window", "bare", "bare_fed", "bare_again"]


def _make(name: str, folder: Path, module):
    from bench.tfdata_bench import Bare, Driven
    from bench.window_bench import Window
    if name.startswith("window"):
        from bench.tfdata_bench import _experiment
        source = ("file", str(_experiment("headless_nomet", folder))) if name == "window_nomet" else ("example", "shapes")
        with _scheduling(name):  # read when the window starts its training process
            return Window(source, name, timeout=600)
    return Driven(name, folder) if name.startswith("headless") else Bare(name, module)


@contextlib.contextmanager
def _scheduling(name: str):
    """`window_niceN` / `window_batchN`: the training process at nice N, under SCHED_BATCH for `batch`."""
    from app.scheduling import NICE_ENV, POLICY_ENV
    got = re.fullmatch(r"window_(nice|batch)(\d+)", name)
    saved = {k: os.environ.get(k) for k in (NICE_ENV, POLICY_ENV)}
    if got:
        os.environ[NICE_ENV] = got[2]
        os.environ[POLICY_ENV] = "batch" if got[1] == "batch" else "other"
    try:
        yield
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


def measure(chunk: int, rounds: int, names: list[str] | None = None) -> dict:
    """In a child process with the window's TensorFlow settings (as bench/throughput.py's `gui` kind)."""
    return run_child("bench.tfdata_window", [str(chunk), str(rounds),
                     ",".join(names or NAMES)], "tf.data window bench child", timeout=3000)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT))
    from app.scheduling import gui_intra_op_threads
    from training_core.engine.tf_quiet import import_tensorflow
    import_tensorflow(gui_intra_op_threads())  # the window's training process's settings
    from bench.tfdata_bench import interleaved
    a = sys.argv[1:]
    print(json.dumps(interleaved(int(a[0]) if a else 300, int(a[1]) if a[1:] else 6,
                                 a[2].split(",") if a[2:] else NAMES, make=_make)), flush=True)
    os._exit(0)  # Qt and TensorFlow threads need no orderly teardown here

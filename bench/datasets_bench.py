"""Data through tf.data against data in memory: the digits example's steps/s with its 1,797 images as an array
(the step draws random rows on the device) and the same images through a `tf.data.Dataset` (shuffled, batched,
repeated, prefetched by engine/datasets.py; the step reads the iterator inside its graph).

  array        resources/experiments/digits.py as it is
  dataset      the same file, `real_data()` returning `Dataset.from_tensor_slices(images).shuffle(1797, seed=0)`
  no_prefetch  the same Dataset with engine/datasets.py's prefetch off (PREFETCH = 0): what prefetching buys

Each is a headless `Trainer` with every default observer, on a thread of its own, paused, and they are stepped
in turn, a chunk of steps each (A B C A B C ...), so that a shared machine's drifting speed slows all alike
(bench/metrics_bench.py says why). Steps/s is each one's steps over its chunks' time.

Whether the step waits for the host: the pipeline alone (its batches pulled in a loop, no training) is timed
too; a pipeline much faster than the step, with prefetching, is never waited for, and the `dataset` row then
equals the `array` row up to the cost of the batch's copy.

python -m bench.datasets_bench [chunk] [rounds]
"""
from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_DATASET = '''

import tensorflow as _tf
_array_data = real_data


def real_data():
    return _tf.data.Dataset.from_tensor_slices(_array_data()).shuffle(1797, seed=0)
'''


def _experiment(name: str, folder: Path) -> Path:
    from training_core.experiment.loading import example_path
    src = example_path("digits").read_text()
    data_dir = example_path("digits").resolve().parent.parent / "data"
    src = src.replace('Path(__file__).resolve().parent.parent / "data"', f"Path({str(data_dir)!r})")
    path = folder / f"digits_{name}.py"
    path.write_text(src + ("" if name == "array" else _DATASET), encoding="utf-8")
    return path


@contextlib.contextmanager
def _prefetching(name: str):
    """The no_prefetch variant is prepared with prefetching off, and only it."""
    from training_core.engine import datasets
    datasets.PREFETCH, before = (0 if name == "no_prefetch" else datasets.PREFETCH), datasets.PREFETCH
    try:
        yield
    finally:
        datasets.PREFETCH = before


def _Driven(name: str, folder: Path):
    """A Trainer of the variant, paused and stepped in turn (bench/variants.py FileDriven)."""
    from bench.variants import FileDriven
    return FileDriven(name, _experiment(name, folder), warm=50, preparing=_prefetching(name))


def _pipeline_alone(driven: Any, batches: int) -> float:
    """Batches/s of the variant's pipeline alone: a fresh iterator over the Dataset the step reads, pulled in a
    loop (no training meanwhile: the trainer is paused)."""
    import tensorflow as tf
    it = iter(driven.trainer.prepared.data.dataset)
    next(it)
    t = time.perf_counter()
    for _ in range(batches):
        tf.nest.map_structure(lambda x: x.numpy(), next(it))
    return batches / (time.perf_counter() - t)


def measure(chunk: int = 500, rounds: int = 5) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="ff-bench-data-"))
    names = ["array", "dataset", "no_prefetch"]
    runs = {n: _Driven(n, folder) for n in names}
    seconds = {n: 0.0 for n in names}
    try:
        for _ in range(rounds):
            for n in names:
                t = time.perf_counter()
                runs[n].run(chunk)
                seconds[n] += time.perf_counter() - t
        alone = _pipeline_alone(runs["dataset"], 2000)
    finally:
        for r in runs.values():
            r.close()
    rate = {n: chunk * rounds / s for n, s in seconds.items()}
    return {"chunk": chunk, "rounds": rounds, "steps_per_s": rate, "dataset_over_array": rate["dataset"] / rate["array"],
            "no_prefetch_over_dataset": rate["no_prefetch"] / rate["dataset"], "pipeline_alone_batches_per_s": alone}


if __name__ == "__main__":
    from training_core.engine.tf_quiet import import_tensorflow
    import_tensorflow(0)
    args = [int(a) for a in sys.argv[1:]]
    print(json.dumps(measure(*args), indent=1))

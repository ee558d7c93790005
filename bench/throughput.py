"""Throughput, side by side: the variants are interleaved (a b c d a b c d ...) in chunks of `chunk`
steps and the median steps/s of each is reported, so that a noisy, shared machine slows all of them
alike instead of skewing one.

Each comparison runs in a child process configured as the product runs: `headless` beside `bare` and
`fit_tb` with TensorFlow's defaults, as the CLI does; `window` (the real window; its training runs in
the training process it starts, with one intra-op thread fewer than cores, at nice 0 under SCHED_BATCH) beside a
`bare` loop with that same thread count; `mirrored2` (2 replicas) beside `bare_mirrored2`, in a process
with two devices. Every ratio is against a bare loop measured in the same run.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

from bench.child import run_child

ROOT = Path(__file__).resolve().parent.parent


def measure_throughput(variants: list, chunk: int, rounds: int) -> dict[str, float]:
    rates: dict[str, list[float]] = {v.name: [] for v in variants}
    for _ in range(rounds):
        for v in variants:
            t = time.perf_counter()
            v.run(chunk)
            rates[v.name].append(chunk / (time.perf_counter() - t))
            if getattr(v, "clock_rate", None):  # the window: also by the training process's own step clock
                rates.setdefault(v.name + "_clock", []).append(v.clock_rate)
    return {name: statistics.median(r) for name, r in rates.items()}


def in_child(names: list[str], chunk: int, rounds: int, gui_process: bool, kind: str = "") -> dict[str, float]:
    """`kind`: cli (TensorFlow's defaults), gui (the window's training process) or mirrored (2 devices)."""
    kind = kind or ("gui" if gui_process else "cli")
    return run_child("bench.throughput", [",".join(names), str(chunk), str(rounds), kind],
                     "throughput child", timeout=3000)


def _child(argv: list[str]) -> None:
    names, chunk, rounds, kind = argv[0].split(","), int(argv[1]), int(argv[2]), argv[3]
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT))
    from training_core.engine.tf_quiet import import_tensorflow
    if kind == "gui":
        from app.scheduling import gui_intra_op_threads
        import_tensorflow(gui_intra_op_threads())
    else:
        import_tensorflow()
    from bench import mirrored_variants as M
    from bench import variants as V
    if kind == "mirrored":
        M.two_devices()  # logical CPU devices: before TensorFlow's first op
    from bench.window_bench import Window
    make = {"bare": V.Bare, "bare_norms": V.BareNorms, "fit_tb": V.FitTensorBoard, "headless": V.Headless, "headless_nocmd": V.HeadlessNoCommandFile,
            "window": Window, "bare_mirrored2": M.BareMirrored, "mirrored2": M.Mirrored, "headless_jit": M.HeadlessJit,
            "bare_again": V.BareAgain}
    vs = [make[n]() for n in names]
    rates = measure_throughput(vs, chunk, rounds)
    for v in vs:
        v.close()
    print(json.dumps(rates), flush=True)
    os._exit(0)  # Qt and TensorFlow threads need no orderly teardown here


if __name__ == "__main__":
    _child(sys.argv[1:])

"""Soak: 10^6 steps of the ring example in the real window (offscreen), with a control change every few
seconds (freeze set, ratio, learning rate, method, in turn), as issue 10 asks: no crash, memory growth
of the window's process and of the training process under 200 MB, run directory under 200 MB.

About an hour on this project's 2-core machine, so `bench/run.py` does not run it; run it by hand:

    nohup python bench/soak.py > soak.log 2>&1 &        # 10^6 steps
    python bench/soak.py --steps 20000 --every 1         # a quick check that it works

It prints one line per minute (step, steps/s, both processes' resident memory, run directory size) and a
JSON summary at the end. Memory is `/proc/<pid>/statm`'s resident set: the window's own process (the
benchmark's probe, `window_bench._rss_mb`) and its training process. Growth is measured from the first
minute on (after TensorFlow's and Qt's start-up allocations) to the end.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from bench.window_bench import _rss_mb, close_window, qapp, wait_for  # noqa: E402

CHANGES = [  # (label, command factory): cycled, one every `every` seconds
    ("freeze discriminator/dense_1", lambda: _cmd("SetFreeze", scopes=("discriminator/dense_1",))),
    ("ratio 5:1", lambda: _cmd("SetRatio", policy={"policy": "fixed", "ratio": [5, 1]})),
    ("lr D 1e-4", lambda: _cmd("SetLearningRate", phase="D", value=1e-4)),
    ("method gate", lambda: _cmd("SetFreezeMethod", method="gate")),
    ("freeze generator/dense_1", lambda: _cmd("SetFreeze", scopes=("generator/dense_1",))),
    ("ratio 1:1", lambda: _cmd("SetRatio", policy={"policy": "fixed", "ratio": [1, 1]})),
    ("lr D 2e-4", lambda: _cmd("SetLearningRate", phase="D", value=2e-4)),
    ("method exact", lambda: _cmd("SetFreezeMethod", method="exact")),
    ("unfreeze", lambda: _cmd("SetFreeze", scopes=())),
]


def _cmd(name: str, **kw):
    import training_core
    return getattr(training_core, name)(**kw)


def _rss_of(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except OSError:
        return float("nan")


def _du_mb(d: Path) -> float:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) / 1e6


def _training_pid(w) -> int | None:
    return getattr(getattr(w.core, "process", None), "pid", None)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=1_000_000)
    p.add_argument("--every", type=float, default=3.0, help="seconds between control changes")
    p.add_argument("--run-dir", default=None)
    a = p.parse_args(argv)

    import tempfile

    from app.main_window import MainWindow
    run_dir = Path(a.run_dir or Path(tempfile.mkdtemp(prefix="ff-soak-")) / "run")
    qapp()
    w = MainWindow(("example", "ring"), steps=a.steps, run_dir=str(run_dir))
    w.resize(1440, 900)
    w.show()
    wait_for(lambda: w.prepared is not None and not w.busy, 300)
    t0 = time.perf_counter()
    w.start()
    wait_for(lambda: w.store.last_step > 0, 300)
    pid = _training_pid(w)
    samples, changes = [], 0
    first_minute = None
    next_change = next_report = time.perf_counter() + a.every
    errors: list[str] = []
    while w.running:
        wait_for(lambda: not w.running or time.perf_counter() >= min(next_change, next_report), a.every + 600)
        now = time.perf_counter()
        if w.running and now >= next_change:
            label, make = CHANGES[changes % len(CHANGES)]
            w.controller.send(make())
            changes += 1
            next_change = now + a.every
        if now >= next_report:
            s = {"t_s": round(now - t0, 1), "step": w.store.last_step, "window_MB": round(_rss_mb(), 1),
                 "training_MB": round(_rss_of(pid), 1) if pid else None, "run_dir_MB": round(_du_mb(run_dir), 1)}
            samples.append(s)
            if first_minute is None and now - t0 >= 60:
                first_minute = s
            print(json.dumps(s), flush=True)
            next_report = now + 60
        if w.last_error is not None and w.last_error[0] not in errors:
            errors.append(w.last_error[0])
    elapsed = time.perf_counter() - t0
    end = {"step": w.store.last_step, "window_MB": round(_rss_mb(), 1),
           "training_MB": round(_rss_of(pid), 1) if pid else None, "run_dir_MB": round(_du_mb(run_dir), 1)}
    base = first_minute or (samples[0] if samples else end)
    from training_core import read_events
    events = read_events(run_dir)
    stop = events[-1] if events and events[-1].kind == "stop" else None
    summary = {
        "steps": end["step"], "target": a.steps, "elapsed_s": round(elapsed, 1),
        "steps_per_s": round(end["step"] / elapsed, 1), "control_changes": changes,
        "stop_reason": getattr(stop, "reason", None), "retraces": getattr(stop, "retraces", None),
        "errors": errors, "window_growth_MB": round(end["window_MB"] - base["window_MB"], 1),
        "training_growth_MB": None if pid is None else round(end["training_MB"] - base["training_MB"], 1),
        "window_MB": end["window_MB"], "training_MB": end["training_MB"], "run_dir_MB": end["run_dir_MB"],
        "run_dir": str(run_dir),
    }
    close_window(w)
    print("SUMMARY " + json.dumps(summary), flush=True)
    ok = summary["stop_reason"] == "done" and not errors and summary["window_growth_MB"] < 200 \
        and summary["run_dir_MB"] < 200 and (summary["training_growth_MB"] or 0) < 200
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""A sweep's points side by side on several GPUs (`--devices gpu:0,gpu:1`): each point is its own ordinary
command (`python -m training_core.cli.headless --headless --sweep SWEEP_DIR --point K`) in a process of its
own that sees one GPU (CUDA_VISIBLE_DEVICES), at most one point per device at a time, its output in
`logs/NAME.log`.

Why processes, not threads: each TensorFlow process owns its device, and a point that fails, is killed or
runs out of memory takes nothing else with it. Why not on a CPU: TensorFlow already uses every core for one
run, so two at once only share them (`--devices cpu` is refused with one line). This machine has no GPU: the
pool was run with two CPU slots standing in for two GPUs (tests/core/test_sweep.py), never on GPUs.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training_core.base.errors import UserError
from training_core.base.signal_handlers import handlers
from training_core.cli.sweep_report import announce, say, stopped, summary
from training_core.runs.sweep import Sweep

POLL_S = 0.2  # the pool's look at its processes


@dataclass(frozen=True)
class Slot:
    """Where one point at a time runs: a device name and the environment its process gets."""

    name: str
    env: dict[str, str]


def device_slots(devices: str | None) -> list[Slot] | None:
    """`--devices gpu:0,gpu:1`: a slot per GPU (its process sees that GPU alone). None: one at a time, here."""
    if devices is None:
        return None
    names = [n.strip().lower() for n in devices.split(",") if n.strip()]
    if not names:
        raise UserError("--devices needs device names, e.g. --devices gpu:0,gpu:1")
    bad = next((n for n in names if not (n.startswith("gpu:") and n[4:].isdigit())), None)
    if bad is not None:
        if bad == "cpu":
            raise UserError("--devices cpu: a CPU trains one point at a time (TensorFlow uses every core for one); "
                            "drop --devices to run the points one after another")
        raise UserError(f"--devices {bad}: give GPUs as gpu:N, e.g. --devices gpu:0,gpu:1")
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice:
        raise UserError(f"--devices lists {twice} twice; a device runs one point at a time, name it once")
    from training_core.engine.tf_quiet import import_tensorflow
    tf = import_tensorflow()  # (listing the GPUs starts no runtime: nothing holds them from here)
    found = len(tf.config.list_physical_devices("GPU"))
    missing = next((n for n in names if int(n[4:]) >= found), None)
    if missing:
        raise UserError(f"--devices {missing}: this machine has {found} GPU(s) visible to TensorFlow; name GPUs it "
                        f"has, or drop --devices to run the points one after another")
    return [Slot(n, {"CUDA_VISIBLE_DEVICES": n[4:]}) for n in names]


def run_pool(sweep: Sweep, slots: list[Slot], quiet: bool = True) -> int:
    """The points not yet done, at most one per slot at a time, each `--point K` in a process of its own writing
    its output to logs/NAME.log. SIGINT or SIGTERM: each running point gets SIGTERM (it stops and keeps its
    record), the sweep waits for them and says how to continue."""
    announce(sweep)
    todo = [p for p in sweep.points if sweep.state(p).state not in ("done", "failed", "running")]
    running: dict[str, tuple[subprocess.Popen, Any]] = {}
    failed: list[int] = []
    stop = {"now": False}

    def on_signal(*_: Any) -> None:
        stop["now"] = True
        for proc, _p in running.values():
            proc.send_signal(signal.SIGTERM)

    with handlers(on_signal):
        while todo or running:
            for slot in slots:
                if slot.name not in running and todo and not stop["now"]:
                    point = todo.pop(0)
                    running[slot.name] = (_spawn(sweep, point, slot, quiet), point)
                    say(sweep, point)(f"started on {slot.name} (log: {sweep.log_file(point)})")
            time.sleep(POLL_S)
            for name, (proc, point) in list(running.items()):
                if proc.poll() is not None:
                    del running[name]
                    state = sweep.state(point)
                    say(sweep, point)(f"{state.state} (exit code {proc.returncode})")
                    if state.state != "done" and not stop["now"]:
                        failed.append(point.index)
    return stopped(sweep) if stop["now"] else summary(sweep, failed)


def _spawn(sweep: Sweep, point: Any, slot: Slot, quiet: bool) -> subprocess.Popen:
    root = str(Path(__file__).resolve().parents[2])  # the package's parent: `-m training_core...` from anywhere
    env = {**os.environ, **slot.env, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    log = sweep.log_file(point)
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "training_core.cli.headless", "--headless", "--sweep", str(sweep.dir),
            "--point", str(point.index), *(["--quiet"] if quiet else [])]
    with open(log, "ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)


def _die_with_parent() -> None:
    """In the child, before it runs: SIGTERM when the sweep's process dies (a kill -9 of the sweep leaves no
    point training on unseen; SIGTERM stops a run at its next step and keeps its record). Linux only."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

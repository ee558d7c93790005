"""What steering through `commands.jsonl` costs a run: the reader has no per-step hook, and looks at the
file at most 4 times a second. Measured here directly (a look with nothing new, a look that reads one
command), because the throughput comparison of headless with and without the reader (bench/run.py) sits
inside the machine's noise."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path


class _Run:
    """The parts of a run's handle (observers/base.py RunHandle) the command reader uses."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.command_file_start = None

    def send(self, *_args) -> None: ...

    def emit(self, _event) -> None: ...


def measure_command_file(looks: int) -> dict[str, float]:
    from training_core import SetFreezeMethod, append_command
    from training_core.rundir.commands_file import POLL_S
    from training_core.observers.command_file import CommandFileReader
    d = Path(tempfile.mkdtemp(prefix="ff-bench-cmd-"))
    t = _Run(d)
    reader = CommandFileReader()
    reader.on_run_begin(t)
    t0 = time.perf_counter()
    for _ in range(looks):
        reader.poll(t)
    idle = (time.perf_counter() - t0) / looks
    total = 0.0
    for i in range(looks // 10):
        append_command(d, SetFreezeMethod(method="exact"), str(i))
        t0 = time.perf_counter()
        reader.poll(t)
        total += time.perf_counter() - t0
    one = total / max(1, looks // 10)
    return {"look_us": idle * 1e6, "look_with_command_us": one * 1e6, "share_of_time": idle / POLL_S}

"""What a sweep says on the terminal, and the ordinary command of each point (cli/sweep.py runs the points
here, cli/sweep_pool.py side by side): one line per point as it starts and ends, a summary at the end, and
the command to continue a stopped sweep, written as this program was started (python main.py, freezeframe)."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any, Callable

from training_core.cli.train import EXIT_FAILED, EXIT_INTERRUPTED
from training_core.runs.sweep import Sweep


def say(sweep: Sweep, point: Any) -> Callable[[str], None]:
    """A printer of lines about `point`: `[point 4/8] NAME: text`, counted from 1 as a reader counts ("4 of 8";
    the name keeps the index, 003-..., that `--point 3` takes)."""
    return lambda text: print(point_label(sweep, point) + f" {point.name}: {text}", flush=True)


def point_label(sweep: Sweep, point: Any) -> str:
    """`[point K/N]`, K counted from 1, so the last point says N/N."""
    n = len(sweep.points)
    return f"[point {point.index + 1:>{len(str(n))}}/{n}]"


def point_command(sweep: Sweep, index: int) -> str:
    """The ordinary command that runs point `index`, as this program was started (python main.py, freezeframe)."""
    return f"{program()} --headless --sweep {shlex.quote(str(sweep.dir.resolve()))} --point {index}"


def program() -> str:
    arg0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("main.py")
    if arg0.name == "headless.py":
        return "python -m training_core.cli.headless"
    return f"python {shlex.quote(str(arg0))}" if arg0.suffix == ".py" else shlex.quote(arg0.name)


def announce(sweep: Sweep) -> None:
    states = [s.state for s in sweep.states()]
    counts = ", ".join(f"{states.count(s)} {s}" for s in ("done", "partial", "cut", "new", "failed", "running")
                       if states.count(s))
    print(f"sweep {sweep.dir}: {len(sweep.points)} points ({counts})", flush=True)


def stopped(sweep: Sweep) -> int:
    print(f"sweep stopped; continue it with: {program()} --headless --resume {shlex.quote(str(sweep.dir))}",
          file=sys.stderr)
    return EXIT_INTERRUPTED


def _named(sweep: Sweep, k: int) -> str:
    """A failed point as the user finds it: its index (`--point K`) and its run directory's name."""
    return f"point {k} ({sweep.points[k].name})"


def summary(sweep: Sweep, failed: list[int]) -> int:
    done = sum(s.state == "done" for s in sweep.states())
    print(f"sweep {sweep.dir}: {done} of {len(sweep.points)} points done"
          + (f"; failed: {', '.join(_named(sweep, k) for k in failed)} (their logs and records say why)" if failed else "")
          + f"; the table: {program()} --export {shlex.quote(str(sweep.dir))} --table table.csv", flush=True)
    return EXIT_FAILED if failed else 0

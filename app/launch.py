"""Starting the window from the command line: options, `--open`, `--screenshot`, `--close-after`, signals.

`python main.py --example ring --steps 400 --screenshot out.png` trains, grabs the window into a PNG
and exits 0: a scriptable check that the whole window works. `python main.py --open RUN [RUN ...]`
shows finished runs for review and comparison (with `--screenshot`: opens them, saves, exits 0).
`--close-after SECONDS` closes the window while it trains, as a user would, to exercise a clean shutdown. SIGINT and SIGTERM close the
window the same way, so the run record is flushed.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import Sequence

from training_core import UserError, builtin_examples, example_path, is_run_dir
from training_core.base.argparsing import ArgParser, run_cli
from training_core.base.config import file_not_dir
from training_core.base.device_names import DEVICE_HELP, check_device_name
from training_core.experiment.loading import require_file
from training_core.rundir.outputs import check_output
from training_core.runs.sweep import Sweep, is_sweep_dir

STARTUP_ENV = "FREEZEFRAME_STARTUP_REPORT"  # print a line when the window is first visible (benchmarks)


OTHER_MODES = """\
other modes (main.py dispatches on these options):
  main.py --headless [options]   train on the terminal, without a window (also on a server);
                                 `main.py --headless --help` lists its options
  main.py --headless --sweep FILE.toml [options]
                                 a sweep: every point of a grid of settings over seeds, one run each
                                 (docs: Sweeps and ablations); --resume SWEEP_DIR continues one
  main.py --export SWEEP_DIR --table FILE.tex|FILE.csv
                                 a sweep's table of settings x final metrics, mean ± sd over seeds
  main.py --export RUN_DIR [RUN_DIR ...] --out FIG.pdf [options]
                                 render paper figures (PDF, SVG, PNG) or CSV from run directories
                                 (several overlaid), without a window; `main.py --export RUN_DIR --help`
                                 lists its options"""


SEED_MAX = 2**31 - 1  # the Experiment panel's seed box (a QSpinBox holds a C int)


def build_parser() -> argparse.ArgumentParser:
    p = ArgParser(prog="main.py", description="Freezeframe: a training monitor for alternating-phase training. "
                                              "Without --headless or --export, this opens the window.",
                  epilog=OTHER_MODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--example", help=f"built-in example to open: {', '.join(builtin_examples())} (default ring)")
    src.add_argument("--experiment", metavar="FILE", help="your own experiment file (.py)")
    src.add_argument("--attach", metavar="RUN_DIR", help="show and steer a run another process writes (a headless "
                                                        "run, e.g. on a server through sshfs)")
    p.add_argument("--steps", type=int, help="train this many steps, starting as soon as the window is ready "
                                              "(without it the window waits for Start)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--run-dir", metavar="DIR", help="run directory of the first run (default runs/NAME-TIME)")
    p.add_argument("--start", action="store_true", help="start training as soon as the experiment is ready")
    p.add_argument("--open", metavar="RUN_DIR", nargs="+", help="show these run directories (finished, or still "
                                                                 "being written) for review and comparison; a "
                                                                 "sweep directory: its runs grouped by setting")
    p.add_argument("--screenshot", metavar="PNG", help="train (--steps, default 400), or with --open show the runs, "
                                                       "save the window as PNG, exit")
    p.add_argument("--close-after", metavar="SECONDS", type=float,
                   help="close the window this long after training has made its first steps "
                        "(or after it is ready)")
    return p


def parse(argv: Sequence[str]) -> argparse.Namespace:
    a = build_parser().parse_args(list(argv))
    if a.example:
        example_path(a.example)  # an unknown name is a one-line UserError
    if a.experiment:
        require_file(a.experiment)
    for path, flag in [(a.attach, "--attach"), *((d, "--open") for d in a.open or [])]:
        if path and Path(path).is_file():  # a sweep file, a config.toml, an experiment: said as such
            raise UserError(file_not_dir(path, flag))
    if a.attach and not (Path(a.attach) / "events.jsonl").is_file():
        raise UserError(f"{a.attach} has no events.jsonl; --attach needs the run directory of a run")
    if a.attach and (a.steps or a.start or a.screenshot):
        raise UserError("--attach shows a run another process trains; drop --steps, --start and --screenshot")
    if a.steps is not None and a.steps < 0:
        raise UserError(f"--steps must be >= 0, got {a.steps}")
    if not 0 <= a.seed <= SEED_MAX:  # the seed box's range: a value outside it would silently become another
        raise UserError(f"--seed must be a whole number from 0 to {SEED_MAX}, got {a.seed}; pass another --seed")
    check_device_name(a.device)
    if a.close_after is not None and a.close_after < 0:
        raise UserError(f"--close-after must be >= 0 seconds, got {a.close_after}")
    if a.screenshot:
        if not a.screenshot.lower().endswith(".png"):
            raise UserError(f"--screenshot {a.screenshot} must end in .png")
        check_output(a.screenshot, "--screenshot")
        if not a.steps and not a.open:
            a.steps = 400
    for d in a.open or []:
        if not Path(d).is_dir():
            raise UserError(f"run directory {d} does not exist; give --open a folder a run wrote")
        if is_sweep_dir(d):
            Sweep.open(d)  # a damaged one is one line here, before the window opens
        elif not is_run_dir(d):
            raise UserError(f"{d} is not a run directory (no events.jsonl with scalars.csv or variables/) nor a "
                            "sweep's (no sweep.toml); give --open a folder a training run or a sweep wrote")
    return a


def run_app(argv: Sequence[str]) -> int:
    """Open the window (bad arguments: one line on stderr and exit code 2, before Qt starts)."""
    return run_cli(lambda: _open_window(parse(argv)))


def _open_window(args: argparse.Namespace) -> int:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from .main_window import MainWindow

    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "freezeframe"])
    app.setApplicationName("Freezeframe")
    app.setOrganizationName("Freezeframe")
    app.setStyle("Fusion")
    source = ("file", str(Path(args.experiment).resolve())) if args.experiment else ("example", args.example or "ring")
    win = MainWindow(source=source, steps=args.steps, seed=args.seed, device=args.device, run_dir=args.run_dir,
                     open_runs=args.open)
    outcome = {"code": 0}
    if args.screenshot:
        from .main_window import DEFAULT_SIZE
        win.resize(*DEFAULT_SIZE)  # the same picture on every machine, whatever size was remembered

    if args.attach:
        QTimer.singleShot(0, lambda: win.attach_run(args.attach))
    auto_start = bool(args.start or (args.screenshot and not args.open) or args.steps)
    if auto_start:
        win.start_when_ready()
    if args.screenshot and not auto_start:  # --open: the runs are read; grab once they are drawn
        def grab_review() -> None:
            win.refresh()
            app.processEvents()
            ok = win.grab().save(args.screenshot, "PNG")
            if not ok:
                print(f"error: could not write {args.screenshot}", file=sys.stderr)
            if win.last_error is not None:
                print(f"error: {win.last_error[0]}", file=sys.stderr)
            outcome["code"] = 0 if ok and win.last_error is None else 1
            win.close()
        QTimer.singleShot(1500, grab_review)
    elif args.screenshot:
        def grab(status: object) -> None:
            win.refresh()
            app.processEvents()
            ok = win.grab().save(args.screenshot, "PNG")
            if not ok:
                print(f"error: could not write {args.screenshot}", file=sys.stderr)
            outcome["code"] = 0 if ok and status is not None and win.last_error is None else 1
            if win.last_error is not None:
                print(f"error: {win.last_error[0]}", file=sys.stderr)
            win.close()
        win.runFinished.connect(lambda status: QTimer.singleShot(300, lambda: grab(status)))
        win.core.reports.failed.connect(lambda *_: None if win.running else QTimer.singleShot(300, lambda: grab(None)))
    if args.close_after is not None:
        armed: list[bool] = []

        def closer(*_: object) -> None:  # once: counted from the first steps' numbers, so that the window is
            if not armed:                # closed mid-training however long preparing took on a busy machine
                armed.append(True)
                QTimer.singleShot(int(args.close_after * 1000), win.close)
        (win.core.reports.metrics if auto_start else win.ready).connect(closer)

    if os.environ.get(STARTUP_ENV):
        def report() -> None:
            print(f"freezeframe: visible at {time.time():.3f} tensorflow_imported="
                  f"{'tensorflow' in sys.modules}", flush=True)
        win.firstShown.connect(report)
        win.ready.connect(lambda: print(f"freezeframe: ready at {time.time():.3f}", flush=True))

    # Python runs signal handlers only between bytecodes: a no-op timer gives it the chance.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: QTimer.singleShot(0, win.close))
    tick = QTimer()
    tick.timeout.connect(lambda: None)
    tick.start(250)
    win.show()
    code = app.exec()
    tick.stop()
    # Clipboard data still owned at interpreter exit is deleted after Python's teardown began, which
    # segfaults; give it up while everything is alive.
    app.clipboard().clear()
    return outcome["code"] or code

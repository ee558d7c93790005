"""`main.py --headless --sweep ...`: a grid of runs, one run directory per point under one sweep directory.

    main.py --headless --sweep ablation.toml                      every point, one after another, here
    main.py --headless --sweep --example ring --steps 2000 --grid ratio=1:1,5:1 --grid seed=0,1
    main.py --headless --sweep ablation.toml --devices gpu:0,gpu:1   side by side, a process per GPU
    main.py --headless --sweep ablation.toml --print-commands     write the sweep, print a command per point
    main.py --headless --sweep SWEEP_DIR --point K                point K alone (a scheduler's task)
    main.py --headless --resume SWEEP_DIR                         the points not yet done

Why each point is an ordinary run started by an ordinary command: a point runs, stops, resumes and fails
like any run (cli/train.py), so any scheduler can run the points (this process, one process per GPU, a
Slurm job array) and the sweep directory collects them (runs/sweep.py). `--point K` does what the point
needs: nothing when it is done, `--resume` of its run directory when it was cut mid-way (from its last
checkpoint, the single-run resume), a fresh run otherwise. A point cut before its first checkpoint is
begun again (what it wrote is moved to `dropped/`). A failed point (an error, or halted on a NaN) is
skipped and named; move its run directory away to run it again.

One at a time, the points run in this process: TensorFlow is imported once, and a CPU trains one run
at a time anyway (TensorFlow uses every core). With `--devices`, each point runs in a process of its own
(`python -m training_core.cli.headless --headless --sweep SWEEP_DIR --point K`) that sees one GPU
(CUDA_VISIBLE_DEVICES), at most one point per device. Killed, a point's process gets SIGTERM (Linux: it
stops at the next step and keeps its record); Ctrl-C or SIGTERM stops the sweep the same way, and
`--resume SWEEP_DIR` continues it.

A bad spec is refused with one line and exit code 2 before anything is written, the experiment included:
it is prepared once, and every point's scopes, phases and ratios are checked against it.
"""
from __future__ import annotations

import argparse
import json
import shutil
import socket
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Collection, Sequence

from training_core.base.alternation import parse_ratio, policy_from_dict
from training_core.base.argparsing import EXIT_BAD_INPUT
from training_core.base.errors import UserError
from training_core.base.scopes import resolve_scopes
from training_core.rundir.layout import LOCK_FILE
from training_core.rundir.lock import read_holder
from training_core.cli.options import build_parser, config_from_args, resume_from_args
from training_core.cli.sweep_pool import Slot, device_slots, run_pool
from training_core.cli.sweep_report import announce, point_command, say, stopped, summary
from training_core.cli.train import EXIT_FAILED, EXIT_INTERRUPTED, guarded, interrupting, signalled, train
from training_core.runs.sweep import Sweep, is_sweep_dir, read_spec_file, write_sweep
from training_core.runs.sweep_spec import Point, SweepSpec, axis_from_text, check_spec, parse_freeze

#: options of the sweep itself; the others are what every point shares (the base)
_SWEEP_OPTIONS = {"headless", "sweep", "grid", "sweep_dir", "point", "print_commands", "devices", "quiet", "resume"}
#: options that mean something else in a sweep: (why, the fix)
_NOT_IN_SWEEP = {"run_dir": "each point's run directory is in the sweep directory; give --sweep-dir DIR",
                 "replay": "a sweep trains new runs; replay a point's run with --replay SWEEP_DIR/runs/NAME",
                 "list_scopes": "run --list-scopes without --sweep (it shows the experiment, not a sweep)"}
#: the option that sets a configuration key, for the line that refuses it beside an axis of that key
_FLAGS = {"schedule": "--ratio/--adaptive", "freeze": "--freeze", "freeze_method": "--method", "seed": "--seed",
          "batch_size": "--batch-size", "steps": "--steps", "planned": "--freeze", "lr": "--lr"}


def is_sweep_command(a: argparse.Namespace) -> bool:
    return (a.sweep is not None or bool(a.grid) or a.point is not None or a.print_commands or bool(a.devices)
            or a.sweep_dir is not None or bool(a.resume and is_sweep_dir(a.resume)))


def sweep_main(a: argparse.Namespace) -> int:
    existing = a.resume or (a.sweep if a.sweep and Path(a.sweep).is_dir() else None)
    slots = device_slots(a.devices)
    if existing:
        _only_sweep_options(a, existing)
        sweep = Sweep.open(existing)
    else:
        sweep = _new_sweep(a, slots)
    if a.point is not None:
        return run_point(sweep, a.point, a.quiet)
    if a.print_commands:
        print(f"# {len(sweep.points)} points of {sweep.dir} (one command each, in any order, on any machine that "
              f"sees the directory):")
        for p in sweep.points:
            print(point_command(sweep, p.index))
        return 0
    return run_pool(sweep, slots, a.quiet) if slots else run_here(sweep, a.quiet)


# -- a new sweep ----------------------------------------------------------------------------------------------
def _new_sweep(a: argparse.Namespace, slots: list[Slot] | None) -> Sweep:
    if a.point is not None:
        where = f"sweep directory {a.sweep} does not exist" if a.sweep and not Path(a.sweep).exists() else \
            f"--point {a.point} runs a point of an existing sweep"
        raise UserError(f"{where}: give the directory a sweep wrote, --sweep SWEEP_DIR --point {a.point}")
    if a.sweep is None:
        given = "--grid" if a.grid else "--print-commands" if a.print_commands else "--devices" if a.devices \
            else "--sweep-dir"
        raise UserError(f"{given} belongs to a sweep; add --sweep FILE.toml (or --sweep alone, with --grid axes)")
    for name, why in _NOT_IN_SWEEP.items():
        if getattr(a, name):
            raise UserError(f"--{name.replace('_', '-')} with --sweep: {why}")
    if a.resume:
        raise UserError(f"--resume {a.resume} is a run directory, not a sweep; resume it without --sweep, or give "
                        f"--resume a sweep directory (it holds sweep.toml)")
    spec = read_spec_file(a.sweep) if a.sweep else SweepSpec()
    where = a.sweep or "the command line"
    cli_axes = [axis_from_text(item) for item in a.grid]
    base = {**spec.base, **_base_from_options(a, spec, cli_axes)}
    spec = check_spec(SweepSpec(base, [*spec.axes, *cli_axes]), where)
    if slots and (base.get("device", "auto") != "auto" or base.get("strategy", "single") != "single"):
        raise UserError("--devices places each point on one GPU of its own; drop --device and --strategy (or drop "
                        "--devices)")
    check_experiment(spec, hide_gpus=slots is not None, where=where, grid_names={x.name for x in cli_axes},
                     base_in_file=bool(a.sweep) and not (a.lr or a.ratio or a.adaptive))
    directory = Path(a.sweep_dir) if a.sweep_dir else default_sweep_dir(spec, a.sweep)
    return write_sweep(spec, directory)


def _base_from_options(a: argparse.Namespace, spec: SweepSpec, axes: list[Any]) -> dict[str, Any]:
    """The configuration keys the other options set (what every point shares), each refused where an axis sets
    it too: `--ratio 5:1` beside `--grid ratio=...` would be silently overruled by the axis."""
    defaults = build_parser().parse_args([])
    plain = config_from_args(defaults).to_dict()
    mine = config_from_args(a).to_dict()
    out = {k: v for k, v in mine.items() if plain.get(k) != v}
    # what the points train, and what a headless run does on a NaN, said in the sweep file even when default
    if not ({"example", "experiment_file", "config"} & set(spec.base) or a.config):
        out.setdefault("experiment_file" if mine.get("experiment_file") else "example",
                       mine.get("experiment_file") or mine.get("example"))
    if "on_nan" not in spec.base:
        out.setdefault("on_nan", mine["on_nan"])
    axis_sets = {"ratio": "schedule", "freeze": "freeze", "method": "freeze_method", "seed": "seed",
                 "batch_size": "batch_size", "steps": "steps"}
    for axis in [*spec.axes, *axes]:
        key = axis_sets.get(axis.name)
        if key in out or (axis.name.startswith("lr.") and axis.name[3:] in out.get("lr", {})):
            flag = _FLAGS.get(key or "lr", "--lr")
            raise UserError(f"{flag} sets what the axis {axis.name} of the sweep varies; drop {flag}, or the axis")
    return out


def _only_sweep_options(a: argparse.Namespace, directory: str) -> None:
    defaults = build_parser().parse_args([])
    allowed = {"headless", "sweep", "resume", "point", "print_commands", "devices", "quiet"}
    changed = [k for k, v in vars(a).items() if k not in allowed and v != getattr(defaults, k)]
    if changed:
        opt = "--" + changed[0].replace("_", "-")
        raise UserError(f"{opt} would change the sweep in {directory}, which runs as it was written; drop {opt}, or "
                        f"start a new sweep")
    if a.resume and a.sweep is not None and Path(a.sweep or ".").resolve() != Path(a.resume).resolve():
        raise UserError(f"--resume {a.resume} continues that sweep; drop --sweep")


def default_sweep_dir(spec: SweepSpec, spec_file: str | None, folder: str | Path = "runs") -> Path:
    """runs/NAME-sweep-YYYYmmdd-HHMMSS (NAME: the sweep file's, else the experiment's), -2, -3, ... if taken."""
    name = Path(spec_file).stem if spec_file else Path(str(spec.base.get("experiment_file") or "")).stem or \
        spec.base.get("example", "ring")
    base = Path(folder) / f"{name}-sweep-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    p, k = base, 1
    while p.exists():
        k += 1
        p = base.with_name(f"{base.name}-{k}")
    return p


def check_experiment(spec: SweepSpec, hide_gpus: bool = False, where: str = "the sweep",
                     grid_names: Collection[str] = (), base_in_file: bool = False) -> None:
    """Prepare the experiment once (as --list-scopes does; TensorFlow loads) and check every point's learning
    rates, freeze sets, ratios and planned changes against it, so a typo in one point's scope is one line now
    rather than a failed run hours into the sweep; a problem an axis's value makes is named as the user wrote
    that value (`--grid lr.X=0.0001`, `sweep.toml: grid.freeze = "d/x@100"`: `grid_names` are the axes given
    by --grid), not by the configuration it became. `hide_gpus`: the points run in processes of their own, on
    the GPUs; this process must not hold a CUDA context on them for the whole sweep. `base_in_file`: the base's
    learning rates and ratio are the sweep file's (no --lr, --ratio beside it), named as `FILE: base: lr.X`."""
    from training_core.base.planned import check_planned
    from training_core.engine.prepare import check_controls, prepare
    from training_core.experiment.loading import check_batch_size
    points = spec.points()
    cfg = spec.config(points[0])
    if hide_gpus:
        from training_core.engine.tf_quiet import import_tensorflow
        import_tensorflow().config.set_visible_devices([], "GPU")  # before the runtime starts: CPU only
        cfg.device = "cpu"
    cfg.freeze, cfg.planned = [], []  # the points' own are checked below, each named with its point
    cfg.lr, cfg.schedule = dict(spec.base.get("lr") or {}), spec.base.get("schedule") or {}  # and the axes'
    if base_in_file:
        cfg.source = f"{where}: base"
    p = prepare(cfg, lambda *_: None)
    for point in points:
        for name in point.values:
            try:
                _check_axis_value(name, point.values[name], p.phase_names, p.var_infos)
            except UserError as e:
                raise UserError(f"{_value_place(name, point, where, name in grid_names)}: {e}") from None
        c = spec.config(point)
        try:
            check_controls(c.lr, c.freeze, c.schedule or None, p.phase_names, p.var_infos)
            check_planned(c.planned, p.phase_names, p.var_infos)
            if c.batch_size is not None:
                check_batch_size(c.batch_size, p.experiment, p.source)
        except UserError as e:
            raise UserError(f"{where}: the point {point.name}: {e}") from None


def _check_axis_value(name: str, value: Any, phases: Sequence[str], variables: Sequence[Any]) -> None:
    """One axis value against the prepared experiment: an `lr` axis's phases, a `freeze` axis's scopes (at the
    start or from step N), a `ratio` axis's length. The rest (batch sizes, the base) is the point's check."""
    if name == "lr" or name.startswith("lr."):
        unknown = [ph for ph in (value if name == "lr" else [name[3:]]) if ph not in phases]
        if unknown:
            raise UserError(f"the experiment has no phase {unknown[0]!r}; its phases are {', '.join(phases)} "
                            f"(an axis per phase: {', '.join('lr.' + ph for ph in phases)})")
    elif name == "freeze":
        resolve_scopes(parse_freeze(value)[0], variables)
    elif name == "ratio":
        policy_from_dict({"policy": "fixed", "ratio": parse_ratio(value)}, phases)


def _value_place(name: str, point: Point, where: str, from_grid_option: bool) -> str:
    """Where the user wrote this point's value of axis `name`: `--grid NAME=VALUE`, or its sweep file's
    `grid.NAME = VALUE` (TOML's notation)."""
    text = point.texts[name]
    if from_grid_option:
        return f"--grid {name}={text}"
    value = point.values[name]
    if isinstance(value, dict):  # an lr axis's table, as TOML writes it inline
        return f"{where}: grid.{name} = {{{', '.join(f'{k} = {v}' for k, v in value.items())}}}"
    return f"{where}: grid.{name} = {json.dumps(value) if isinstance(value, str) else text}"


# -- one point --------------------------------------------------------------------------------------------
def run_point(sweep: Sweep, index: int, quiet: bool = False) -> int:
    """What point `index` needs (module docstring): its exit code as a run's (0 also when it was done)."""
    point = sweep.point(index)
    state = sweep.state(point)
    d = sweep.run_dir(point)
    tell = say(sweep, point)
    if state.state == "done":
        tell("done already; skipped")
        return 0
    if state.state == "failed":
        tell(f"failed earlier ({state.detail}); skipped (move {d} away to run it again)")
        return EXIT_FAILED
    if state.state == "running":
        raise UserError(busy(d, point))
    if state.state == "cut":
        kept = _move_aside(sweep, d)
        tell(f"was cut before its first checkpoint: begun again (what it wrote is in {kept})")
    if state.state == "partial":
        tell(f"resumed {state.detail}")
        cfg = sweep.config(point)
        argv = ["--headless", "--resume", str(d), *(["--quiet"] if quiet else [])]
        if cfg.on_nan in ("stop", "rollback"):  # (a resume takes the headless default otherwise)
            argv += ["--on-nan", cfg.on_nan]
        return guarded(lambda: _resume(argv, quiet))
    tell("started")
    return guarded(lambda: train(sweep.config(point), quiet=quiet))


def busy(run_dir: Path, point: Point) -> str:
    """The one line refusing a point another live process trains (its run's `writer.lock`): who, and the fix for
    a point (the run's own refusal says "choose another --run-dir", which a point has not)."""
    h = read_holder(run_dir)
    who = f"by {h.describe()}" if h else "by another process"
    fix = f"wait for it to end, or stop that process (it keeps its record) and run --point {point.index} again"
    if h and h.host != socket.gethostname():  # (its liveness cannot be seen from here)
        fix += f"; if that process is gone (its node is down), delete {run_dir / LOCK_FILE} first"
    return f"point {point.index} ({point.name}) is being trained now {who}; {fix}"


def _resume(argv: list[str], quiet: bool) -> int:
    cfg, commands = resume_from_args(build_parser().parse_args(argv))
    return train(cfg, commands, resume=True, quiet=quiet)


def _move_aside(sweep: Sweep, run_dir: Path) -> Path:
    keep = sweep.dir / "dropped" / run_dir.name
    k = 1
    while keep.exists():
        k += 1
        keep = keep.with_name(f"{run_dir.name}.{k}")
    keep.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(run_dir), str(keep))
    return keep


# -- every point, here ----------------------------------------------------------------------------------------
def run_here(sweep: Sweep, quiet: bool) -> int:
    """Every point not yet done, one after another in this process. A signal (Ctrl-C, SIGTERM) stops the point
    training then, which keeps its record, and the sweep with it; between two points it stops the sweep."""
    announce(sweep)
    try:
        with interrupting():  # between two points too, SIGTERM is Ctrl-C
            return _each_point(sweep, quiet)
    except KeyboardInterrupt:  # between two points
        return stopped(sweep)


def _each_point(sweep: Sweep, quiet: bool) -> int:
    failed = []
    for point in sweep.points:
        try:
            code = run_point(sweep, point.index, quiet)
        except UserError as e:  # e.g. written by another process right now: the others go on
            print(f"error: {e}", file=sys.stderr)
            failed.append(point.index)
            continue
        after = sweep.state(point).state
        if code == EXIT_BAD_INPUT:  # refused at its start, before anything was written (the line says why)
            failed.append(point.index)
            continue
        if code == EXIT_INTERRUPTED or signalled() or after in ("new", "cut", "partial"):
            return stopped(sweep)
        if after != "done":
            failed.append(point.index)
    return summary(sweep, failed)



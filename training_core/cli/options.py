"""The headless command line's options, and what they become: the `RunConfig` of a new run, the
configuration and commands of a resumed one, or a replay plan (cli/headless.py runs them).

Everything here is checked without TensorFlow, so a typo answers at once; what needs the experiment
(a scope, a phase, a ratio's length) is checked when it is prepared, still before anything is written
(prepare.check_controls, resume.check_resume_commands). Options that contradict each other (`--device
cpu --strategy mirrored`, `--max-steps` without `--adaptive`) are refused rather than one of them being
silently ignored.
"""
from __future__ import annotations

import argparse
import os
from typing import Any, Sequence

from training_core.base.argparsing import ArgParser
from training_core.base.config import RunConfig, check_learning_rate, refuse_no_steps
from training_core.base.errors import UserError
from training_core.experiment.loading import builtin_examples


def example_names() -> str:
    """The built-in examples as the help and docs/headless.md list them: `ring (default), digits, ...`, read
    from the examples' folder (experiment/loading.builtin_examples), so a new example cannot be left out."""
    names = builtin_examples()
    return ", ".join(["ring (default)"] + [n for n in names if n != "ring"])


def build_parser() -> argparse.ArgumentParser:
    p = ArgParser(prog="main.py --headless", description="Train a Freezeframe experiment without the window.")
    p.add_argument("--headless", action="store_true", help="run without the window (this mode)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--example", help="built-in example: " + example_names())
    src.add_argument("--experiment", metavar="FILE", help="your own experiment file (.py)")
    src.add_argument("--config", metavar="TOML", help="run again from a run directory's config.toml")
    src.add_argument("--resume", metavar="RUN_DIR", help="continue a run in its directory from its last checkpoint")
    src.add_argument("--replay", metavar="RUN_DIR",
                     help="replay a recorded run: its config.toml and its control changes, at the same steps")
    p.add_argument("--steps", type=int, help="number of steps, 1 or more (default: until Ctrl-C)")
    p.add_argument("--count", metavar="PHASE", help="--steps counts this phase's steps (e.g. G: generator iterations, "
                                                   "as GAN papers count); default: every phase's steps together")
    p.add_argument("--ratio", help="fixed alternation A:B[:C...], steps of each phase in turn, e.g. 5:1")
    p.add_argument("--adaptive", metavar="PHASE=LOSS", action="append", default=[],
                   help="adaptive policy: stay in a phase until its loss < LOSS (repeat per phase)")
    p.add_argument("--max-steps", type=int, help="with --adaptive: cap on steps per stay (default 50)")
    p.add_argument("--freeze", metavar="SCOPE", action="append", default=[],
                   help="freeze a scope prefix, e.g. discriminator or generator/dense_1 (repeatable)")
    p.add_argument("--method", choices=["exact", "gate"], help="freeze method (default exact; gate is leaky)")
    p.add_argument("--update-frozen-stats", action="store_true",
                   help="let BatchNormalization statistics in frozen scopes keep updating")
    p.add_argument("--lr", metavar="PHASE=VALUE", action="append", default=[], help="learning rate of a phase")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--run-dir", metavar="DIR", help="where to write the run record (default runs/NAME-TIME)")
    p.add_argument("--seed", type=int)
    p.add_argument("--device", help="auto (default), cpu or gpu:N: the one device of a single-device run "
                                    "(mirrored: --strategy mirrored)")
    p.add_argument("--strategy", choices=["single", "mirrored", "multiworker"],
                   help="single device (default); mirrored: every local GPU (or --replicas logical CPU devices "
                        "without a GPU); multiworker: the cluster in TF_CONFIG")
    p.add_argument("--replicas", type=int, help="mirrored: how many replicas (default: every GPU, or 2 on a CPU)")
    p.add_argument("--sync-every", type=int, help="multiworker: commands reach every worker at multiples of N steps "
                                                  "(default 10)")
    p.add_argument("--jit", action="store_true", help="XLA-compile the training steps")
    p.add_argument("--fetch-every", type=int, help="bring metrics to the host every N steps (default 200)")
    p.add_argument("--var-every", type=int, help="write per-variable scalars every N-th step of each phase (default 25)")
    p.add_argument("--checkpoint-every", type=int, help="checkpoint every N steps (default 5000; 0 = at the end)")
    p.add_argument("--sample-every", type=float, metavar="SECONDS",
                   help="write samples to the run's samples/ every SECONDS (default 10; 0 = only at the end)")
    p.add_argument("--metrics-every", type=float, metavar="SECONDS",
                   help="compute the experiment's metrics(ctx) every SECONDS (default 2)")
    p.add_argument("--no-tensorboard", action="store_true", help="do not write TensorBoard event files")
    p.add_argument("--no-command-file", action="store_true", help="do not read RUN_DIR/commands.jsonl")
    p.add_argument("--deterministic", action="store_true",
                   help="TensorFlow op determinism: a resumed run or a replay reproduces the original exactly (CPU)")
    p.add_argument("--on-nan", choices=["stop", "rollback"],
                   help="a NaN/Inf loss: stop (default) or roll back to the last good checkpoint with a lower lr")
    p.add_argument("--nan-lr-factor", type=float, help="rollback: multiply the phase's learning rate by this (0.5)")
    p.add_argument("--list-scopes", action="store_true", help="print the experiment's scope tree and exit")
    sw = p.add_argument_group("sweeps (docs: Sweeps and ablations); the other options are what every point shares")
    sw.add_argument("--sweep", metavar="FILE|SWEEP_DIR", nargs="?", const="",
                    help="run every point of a grid: a sweep file (.toml), the --grid options, or both; or a sweep "
                         "directory's remaining points")
    sw.add_argument("--grid", metavar="NAME=V1,V2", action="append", default=[],
                    help="an axis of the grid: ratio, lr.PHASE, freeze (SCOPE+SCOPE, SCOPE@STEP, none), method, "
                         "seed, batch_size, steps (repeatable)")
    sw.add_argument("--sweep-dir", metavar="DIR", help="where the sweep is written (default runs/NAME-sweep-TIME)")
    sw.add_argument("--point", metavar="K", type=int, help="run point K of --sweep SWEEP_DIR alone (new, resumed from "
                                                           "its checkpoint, or skipped when done): one scheduler task")
    sw.add_argument("--print-commands", action="store_true",
                    help="write the sweep directory and print one command per point (for Slurm, Ray, ...) instead "
                         "of running them")
    sw.add_argument("--devices", metavar="gpu:0,gpu:1",
                    help="run points side by side, one per GPU, each in a process of its own (default: one at a "
                         "time in this process)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _pairs(items: Sequence[str], what: str) -> dict[str, float]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise UserError(f"{what} {item!r} is not of the form PHASE=NUMBER, e.g. D=2e-4") from None
    return out


def check_steps(steps: int) -> None:
    """`--steps 0` trained no step, wrote a run directory and exited 0: 0 means nothing on the command line (the
    window's Steps box shows 0 as "until stopped", which here is leaving `--steps` out). `RunConfig(steps=0)`
    from Python still prepares a run without training it."""
    if steps < 1:
        raise UserError(f"--steps must be a whole number >= 1, got {steps}; give the number of steps to train, or "
                        f"leave --steps out to train until Ctrl-C")


def config_from_args(a: argparse.Namespace) -> RunConfig:
    if a.config:
        cfg = RunConfig.read_toml(a.config)
        refuse_no_steps(cfg.steps, f"config file {a.config}: steps", "set it to a whole number >= 1 in the file, "
                        "or remove the line to train until Ctrl-C")
        cfg.run_dir = None  # a rerun gets a fresh directory unless --run-dir says otherwise
        if a.lr or a.freeze or a.ratio or a.adaptive:  # values of the file and the options mixed: errors name options
            cfg.source = None
    else:
        cfg = RunConfig()
        if a.experiment:
            cfg.experiment_file, cfg.example = os.path.abspath(a.experiment), None
        elif a.example:
            cfg.example = a.example
    if a.steps is not None:
        check_steps(a.steps)
        cfg.steps = a.steps
    if a.count is not None:
        cfg.count = a.count
    schedule = _schedule(a)
    if schedule:
        cfg.schedule = schedule
    if a.freeze:
        cfg.freeze = list(a.freeze)
    if a.method:
        cfg.freeze_method = a.method
    if a.update_frozen_stats:
        cfg.update_frozen_stats = True
    if a.lr:
        cfg.lr = {**cfg.lr, **_pairs(a.lr, "--lr")}
    for name in ("batch_size", "run_dir", "seed"):
        if getattr(a, name) is not None:
            setattr(cfg, name, getattr(a, name))
    return _run_options(cfg, a, "run").validate()


def _schedule(a: argparse.Namespace) -> dict[str, Any] | None:
    """The policy `--ratio` or `--adaptive` asks for, if any. `--max-steps` belongs to `--adaptive` (README,
    --help): alone it used to be dropped without a word, so it is refused, on a resume too (where it would
    not change the recorded policy either)."""
    if a.ratio and a.adaptive:
        raise UserError("--ratio and --adaptive choose different policies; give one of them")
    if a.max_steps is not None and not a.adaptive:
        raise UserError(f"--max-steps {a.max_steps} caps each stay of the adaptive policy, so it needs --adaptive "
                        f"PHASE=LOSS (one per phase); add that, or drop --max-steps")
    if a.ratio:
        from training_core.base.alternation import parse_ratio
        return {"policy": "fixed", "ratio": parse_ratio(a.ratio)}
    if a.adaptive:
        return {"policy": "adaptive", "thresholds": _pairs(a.adaptive, "--adaptive"),
                "max_steps": 50 if a.max_steps is None else a.max_steps}
    return None


def _run_options(cfg: RunConfig, a: argparse.Namespace, verb: str) -> RunConfig:
    """The options that change how a run is carried out, not what it computes: a resumed run takes them too.
    `cfg` may come from a `config.toml` (`--config`, `--resume`; `verb` says which: run, resume)."""
    if a.jit:
        cfg.jit = True
    _placement(cfg, a, verb)
    if a.sync_every is not None and cfg.strategy != "multiworker":  # (it was ignored without a word)
        raise UserError(f"--sync-every {a.sync_every} sets where a multi-worker run's workers take commands; "
                        f"add --strategy multiworker, or drop --sync-every")
    for name in ("fetch_every", "var_every", "checkpoint_every", "nan_lr_factor", "sync_every", "sample_every"):
        if getattr(a, name) is not None:
            setattr(cfg, name, getattr(a, name))
    if a.metrics_every is not None:
        cfg.metrics_seconds = a.metrics_every
    if a.no_tensorboard:
        cfg.tensorboard = False
    if a.no_command_file:
        cfg.command_file = False
    if a.deterministic:
        cfg.deterministic = True
    cfg.on_nan = a.on_nan or "stop"  # headless, a pause would wait forever
    return cfg


#: what a run over several devices or hosts uses instead of one device (README: Several GPUs and hosts)
_USES = {"mirrored": "every local GPU (or --replicas N of them)", "multiworker": "every GPU of each host"}


def _placement(cfg: RunConfig, a: argparse.Namespace, verb: str) -> None:
    """`--device`, `--strategy` and `--replicas` onto `cfg`, refused when they contradict each other.

    `--device` picks one device, which only a `single` run has: with mirrored or multiworker it used to be
    dropped without a word (distribute.make_placement places those runs itself). `--device auto` is the
    default and means nothing more, so it is accepted with any strategy; `--device mirrored` (the window's
    choice) is `--strategy mirrored`. The strategy and replicas may come from the run's `config.toml`: a
    mirrored run resumed or rerun with `--strategy single` then runs on one device (its recorded replicas,
    which the user never gave, no longer apply), and `--replicas 1` with `single` says the same."""
    if a.replicas is not None and a.replicas < 1:  # (0 is the configuration's "every GPU, or 2 CPUs")
        raise UserError(f"--replicas must be a whole number >= 1, got {a.replicas}; or leave it out for every GPU "
                        f"(2 CPU devices without one)")
    device, strategy = (a.device or "").strip().lower() or None, a.strategy  # as devices.resolve_device reads it
    if device == "mirrored":
        if strategy not in (None, "mirrored"):
            raise UserError(f"--device mirrored is --strategy mirrored, which contradicts --strategy {strategy}; "
                            f"drop one of them")
        strategy = "mirrored"
    if strategy is not None:
        if strategy != "mirrored" and a.replicas in (None, 1):
            cfg.replicas = 0  # one device, or a multiworker cluster's own count
            if a.device is None and cfg.device == "mirrored":  # the window's mirrored choice, recorded
                cfg.device = "auto"
        cfg.strategy = strategy
    if a.replicas is not None and not (a.replicas == 1 and cfg.strategy == "single"):
        cfg.replicas = a.replicas
    if device not in (None, "auto", "mirrored") and cfg.strategy in _USES:
        kind = cfg.strategy
        if a.strategy:
            what, fix = f"a {kind} run uses", f"drop --strategy {kind} to train on {device} alone"
        else:  # the strategy is the recorded one
            what = f"{'the run' if verb == 'resume' else 'the configuration'} is {kind}, which uses"
            fix = f"add --strategy single to {verb} it on {device} alone"
        raise UserError(f"--device {device} picks one device, but {what} {_USES[kind]}: drop --device, or {fix}")
    if device is not None:
        cfg.device = device


#: what a replay takes from the command line; everything else would change what is replayed
REPLAY_OPTIONS = {"headless", "replay", "run_dir", "deterministic", "quiet", "no_tensorboard", "no_command_file",
                  "fetch_every", "var_every", "checkpoint_every"}


def replay_from_args(a: argparse.Namespace) -> Any:
    """The replay plan for `--replay RUN_DIR`; an option that would change the replayed run is refused."""
    from training_core.rundir.replay_plan import plan_replay
    defaults = vars(build_parser().parse_args([]))
    changed = [k for k, v in vars(a).items() if k not in REPLAY_OPTIONS and v != defaults[k]]
    if changed:
        opt = "--" + changed[0].replace("_", "-")
        raise UserError(f"{opt} would change what --replay replays; drop it, or run the recorded settings with "
                        f"changes: --config {a.replay}/config.toml {opt} ...")
    plan = plan_replay(a.replay, a.run_dir, a.deterministic)
    for name in ("fetch_every", "var_every", "checkpoint_every"):
        if getattr(a, name) is not None:
            setattr(plan.config, name, getattr(a, name))
    if a.no_tensorboard:
        plan.config.tensorboard = False
    if a.no_command_file:
        plan.config.command_file = False
    plan.config.validate()
    return plan


#: what makes a run the run it is: fixed once it began (its checkpoints are of exactly that)
_NOT_ON_RESUME = {"seed": "--seed", "batch_size": "--batch-size", "run_dir": "--run-dir", "count": "--count"}


def resume_from_args(a: argparse.Namespace) -> tuple[RunConfig, list[Any]]:
    """The configuration of the run to resume, and the commands the options given with `--resume` become
    (a new freeze set, ratio, method or learning rate applies from the resumed step on, logged as events)."""
    from training_core.base.commands import SetFreeze, SetFreezeMethod, SetLearningRate, SetRatio
    from training_core.rundir.resume_point import check_target, resume_config
    for name, flag in _NOT_ON_RESUME.items():
        if getattr(a, name) is not None:
            raise UserError(f"{flag} cannot change when resuming (the checkpoints are of the run as it began); "
                            f"leave it out, or start a new run with --config {a.resume}/config.toml")
    if a.update_frozen_stats and not a.freeze:
        raise UserError("--update-frozen-stats with --resume applies with a new freeze set; give --freeze too")
    schedule = _schedule(a)
    cfg = resume_config(a.resume)
    if a.steps is not None:
        cfg.steps = a.steps
    cfg = _run_options(cfg, a, "resume").validate()
    check_target(cfg.run_dir, cfg.steps, cfg.count)
    from training_core.engine.distribute import is_chief
    from training_core.rundir.lock import refusal
    held = is_chief(cfg.strategy) and refusal(cfg.run_dir)  # a non-chief worker only reads the chief's checkpoint
    if held:  # answered now, not once TensorFlow has loaded (~9 s here); the lock is taken later, and checked then
        raise UserError(held)
    commands: list[Any] = []
    if a.freeze:
        commands.append(SetFreeze(tuple(a.freeze), bool(a.update_frozen_stats)))
    if schedule:
        commands.append(SetRatio(schedule))
    if a.method:
        commands.append(SetFreezeMethod(a.method))
    for phase, value in _pairs(a.lr, "--lr").items():
        check_learning_rate(value, f"--lr {phase}")
        commands.append(SetLearningRate(phase, value))
    return cfg, commands

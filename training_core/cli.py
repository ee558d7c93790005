"""`python main.py --headless ...`: train without a window, with a progress bar on the terminal.

Bad input exits with code 2 and one line on stderr that names the problem and the fix; nothing is
written before every input has been checked.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Any, Sequence

from . import events as E
from .cli_args import ArgParser, run_cli
from .config import RunConfig
from .errors import UserError
from .metrics import MetricsBatch
from .observers import Observer
from .trainer import Trainer


def build_parser() -> argparse.ArgumentParser:
    p = ArgParser(prog="main.py --headless", description="Train a Freezeframe experiment without the window.")
    p.add_argument("--headless", action="store_true", help="run without the window (this mode)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--example", help="built-in example: ring (default), digits, factorization")
    src.add_argument("--experiment", metavar="FILE", help="your own experiment file (.py)")
    src.add_argument("--config", metavar="TOML", help="run again from a run directory's config.toml")
    p.add_argument("--steps", type=int, help="number of steps (default: until Ctrl-C)")
    p.add_argument("--ratio", help="fixed alternation A:B[:C...], steps of each phase in turn, e.g. 5:1")
    p.add_argument("--adaptive", metavar="PHASE=LOSS", action="append", default=[],
                   help="adaptive policy: stay in a phase until its loss < LOSS (repeat per phase)")
    p.add_argument("--max-steps", type=int, default=50, help="adaptive policy: cap on steps per stay")
    p.add_argument("--freeze", metavar="SCOPE", action="append", default=[],
                   help="freeze a scope prefix, e.g. discriminator or generator/dense_1 (repeatable)")
    p.add_argument("--method", choices=["exact", "gate"], help="freeze method (default exact; gate is leaky)")
    p.add_argument("--update-frozen-stats", action="store_true",
                   help="let BatchNormalization statistics in frozen scopes keep updating")
    p.add_argument("--lr", metavar="PHASE=VALUE", action="append", default=[], help="learning rate of a phase")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--run-dir", metavar="DIR", help="where to write the run record (default runs/NAME-TIME)")
    p.add_argument("--seed", type=int)
    p.add_argument("--device", help="auto (default), cpu or gpu:N")
    p.add_argument("--fetch-every", type=int, help="bring metrics to the host every N steps (default 200)")
    p.add_argument("--var-every", type=int, help="write per-variable scalars every N-th step of each phase (default 25)")
    p.add_argument("--checkpoint-every", type=int, help="checkpoint every N steps (default 5000; 0 = at the end)")
    p.add_argument("--sample-every", type=float, metavar="SECONDS",
                   help="write samples to the run's samples/ every SECONDS (default 10; 0 = only at the end)")
    p.add_argument("--metrics-every", type=float, metavar="SECONDS",
                   help="compute the experiment's metrics(ctx) every SECONDS (default 2)")
    p.add_argument("--no-tensorboard", action="store_true", help="do not write TensorBoard event files")
    p.add_argument("--list-scopes", action="store_true", help="print the experiment's scope tree and exit")
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


def config_from_args(a: argparse.Namespace) -> RunConfig:
    if a.config:
        cfg = RunConfig.read_toml(a.config)
        cfg.run_dir = None  # a rerun gets a fresh directory unless --run-dir says otherwise
    else:
        cfg = RunConfig()
        if a.experiment:
            cfg.experiment_file, cfg.example = os.path.abspath(a.experiment), None
        elif a.example:
            cfg.example = a.example
    if a.steps is not None:
        cfg.steps = a.steps
    if a.ratio and a.adaptive:
        raise UserError("--ratio and --adaptive choose different policies; give one of them")
    if a.ratio:
        from .schedule import parse_ratio
        cfg.schedule = {"policy": "fixed", "ratio": parse_ratio(a.ratio)}
    if a.adaptive:
        cfg.schedule = {"policy": "adaptive", "thresholds": _pairs(a.adaptive, "--adaptive"), "max_steps": a.max_steps}
    if a.freeze:
        cfg.freeze = list(a.freeze)
    if a.method:
        cfg.freeze_method = a.method
    if a.update_frozen_stats:
        cfg.update_frozen_stats = True
    if a.lr:
        cfg.lr = {**cfg.lr, **_pairs(a.lr, "--lr")}
    for name in ("batch_size", "run_dir", "seed", "device", "fetch_every", "var_every", "checkpoint_every",
                 "sample_every"):
        if getattr(a, name) is not None:
            setattr(cfg, name, getattr(a, name))
    if a.metrics_every is not None:
        cfg.metrics_seconds = a.metrics_every
    if a.no_tensorboard:
        cfg.tensorboard = False
    return cfg.validate()


class ProgressBar(Observer):
    """A one-line bar with steps/s; plain lines every few seconds when stderr is not a terminal."""

    def __init__(self, target: int | None, stream: Any = sys.stderr, quiet: bool = False) -> None:
        self.target, self.stream, self.quiet = target, stream, quiet
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self._last = 0.0

    def on_metrics(self, batch: MetricsBatch) -> None:
        now = time.monotonic()
        if self.quiet or now - self._last < (0.2 if self.tty else 5.0):
            return
        self._last = now
        self._draw(batch.status)

    def _draw(self, s: Any) -> None:
        if self.target:
            frac = min(1.0, s.step / self.target)
            bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
            text = f"[{bar}] {s.step}/{self.target} {100 * frac:5.1f}%"
        else:
            text = f"step {s.step}"
        text += f"  {s.steps_per_s:7.1f} steps/s  phase {s.phase:<6} {s.elapsed_s:6.1f}s"
        self.stream.write(("\r" + text) if self.tty else text + "\n")
        self.stream.flush()

    def on_event(self, e: E.Event) -> None:
        detail = {E.Warning: lambda: e.message, E.Rejected: lambda: e.message, E.Leak: lambda: e.variable,
                  E.Nan: lambda: e.phase, E.Retrace: lambda: e.phase}.get(type(e))
        if detail is not None:
            self.stream.write(("\n" if self.tty else "") + f"[step {e.step}] {e.kind}: {detail()}\n")

    def on_status(self, s: Any) -> None:
        if not s.running and s.step and not self.quiet:
            self._draw(s)
            if self.tty:
                self.stream.write("\n")


class HeadlessObserver(ProgressBar):
    """The progress bar, plus: a pause the trainer decides on (a NaN loss, nothing left to train) stops the
    run, because headless nobody can resume it and the process would wait forever. `halted` says why."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.halted: str | None = None
        self._trainer: Trainer | None = None
        self._cause = ""

    def on_prepared(self, trainer: Trainer) -> None:
        self._trainer = trainer

    def on_event(self, e: E.Event) -> None:
        super().on_event(e)
        if isinstance(e, E.Nan):
            self._cause = (f"the loss of phase {e.phase} became {e.value} at step {e.at_step}; "
                           f"lower its learning rate (--lr {e.phase}=...)")
        elif isinstance(e, E.Warning):
            self._cause = e.message
        elif isinstance(e, E.Pause) and self._trainer is not None and self.halted is None:
            self.halted = f"training stopped at step {e.step}: {self._cause or e.reason}"
            self._trainer.send(_stop())


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    cfg = config_from_args(args)
    if args.list_scopes:
        return _list_scopes(cfg)
    observer = HeadlessObserver(cfg.steps, quiet=args.quiet)
    trainer = Trainer(cfg, observer)
    trainer.prepare()
    signal.signal(signal.SIGINT, lambda *_: trainer.send(_stop()))
    status = trainer.run()
    print(f"{status.step} steps in {status.elapsed_s:.1f}s on {status.device}; run directory: {status.run_dir}")
    if observer.halted:
        print(f"error: {observer.halted}", file=sys.stderr)
        return 1
    return 0


def _list_scopes(cfg: RunConfig) -> int:
    """The scope tree, then what each phase trains (prepared for real, so it is what a run would use)."""
    from .prepare import prepare
    from .scopes import format_phases, format_tree
    p = prepare(cfg, lambda *_: None)
    phases = [(n, list(ph.trains), paths) for n, ph, paths in zip(p.phase_names, p.experiment.phases, p.phase_paths)]
    print(format_tree(p.tree))
    print()
    print(format_phases(phases, p.var_infos))
    return 0


def _stop() -> Any:
    from .commands import Stop
    return Stop()

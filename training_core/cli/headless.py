"""`python main.py --headless ...`: train without a window, with a progress bar on the terminal (one run:
cli/train.py), or a sweep of runs over a grid of settings (`--sweep`, `--point K`, `--resume SWEEP_DIR`:
cli/sweep.py). `python -m training_core.cli.headless` is the same command (a sweep's points on several
devices are started so).

Bad input exits with code 2 and one line on stderr that names the problem and the fix; nothing is
written before every input has been checked. A run that fails after it began (experiment code raising
mid-run, a full disk) exits with code 1 and one line; the record is kept and its `error` event holds
the traceback. SIGTERM (Slurm, docker, systemd) is Ctrl-C: the run stops at the next step boundary,
writes its final checkpoint and `stop` event, and exits 0. Either signal during start-up ends the
process with one line, before anything is written.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any, Sequence

from training_core.base.config import RunConfig
from training_core.cli.options import build_parser, config_from_args, replay_from_args, resume_from_args  # noqa: F401 - API
from training_core.cli.sweep import is_sweep_command, sweep_main
from training_core.cli.train import (  # noqa: F401 - API: what the headless command line is made of
    EXIT_FAILED, EXIT_INTERRUPTED, HeadlessObserver, ProgressBar, guarded, train)


def main(argv: Sequence[str] | None = None) -> int:
    return guarded(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if is_sweep_command(args):  # --sweep, --point, or --resume SWEEP_DIR: cli/sweep.py
        return sweep_main(args)
    commands: list[Any] = []
    plan = replay_from_args(args) if args.replay else None
    if args.resume:
        cfg, commands = resume_from_args(args)
    else:
        cfg = plan.config if plan else config_from_args(args)
    if args.list_scopes:
        return _list_scopes(replace(cfg, run_dir=None) if args.resume else cfg)
    return train(cfg, commands, plan, resume=bool(args.resume), quiet=args.quiet)


def _list_scopes(cfg: RunConfig) -> int:
    """The scope tree, then what each phase trains (prepared for real, so it is what a run would use)."""
    from training_core.base.scopes import format_phases, format_tree
    from training_core.engine.prepare import prepare
    p = prepare(cfg, lambda *_: None)
    phases = [(n, list(ph.trains), paths) for n, ph, paths in zip(p.phase_names, p.experiment.phases, p.phase_paths)]
    print(format_tree(p.tree))
    print()
    print(format_phases(phases, p.var_infos))
    return 0




if __name__ == "__main__":  # python -m training_core.cli.headless: a sweep's point in a process of its own
    sys.exit(main())

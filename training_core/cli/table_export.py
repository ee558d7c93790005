"""`main.py --export SWEEP_DIR --table FILE.csv|FILE.tex`: a sweep's table (runs/sweep_table.py) from the command line.

One row per setting, each metric's mean ± sd over the seeds at the end (and `--step N`: at that step too);
CSV (mean, sd, n per column) or a LaTeX booktabs table, by the file's extension (`-`: CSV on stdout, or
LaTeX with `--format tex`). No window, no TensorFlow: the numbers are read from the run directories, the
same ones the window's sweep table shows. Bad input is one line and exit 2, before anything is written.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from training_core.base.argparsing import ArgParser, run_cli
from training_core.base.errors import UserError
from training_core.rundir.outputs import check_output
from training_core.runs.sweep import Sweep, check_sweep_output
from training_core.runs.sweep_table import SweepTable, build_table, label_names, read_members

FORMATS = {".csv": "csv", ".tex": "tex"}


def build_parser() -> argparse.ArgumentParser:
    p = ArgParser(prog="main.py --export SWEEP_DIR --table", help_hint="see main.py --export SWEEP_DIR --table - --help",
                  description="A sweep's table: settings x final metrics, mean ± sd over seeds.")
    p.add_argument("--export", metavar="SWEEP_DIR", required=True, help="the sweep directory")
    p.add_argument("--table", metavar="FILE", required=True, help="FILE.csv or FILE.tex (LaTeX, booktabs); - for stdout")
    p.add_argument("--format", choices=sorted(FORMATS.values()), help="csv or tex (default: from the extension; "
                                                                      "csv for -)")
    p.add_argument("--metrics", metavar="TAG,TAG", help="the columns, e.g. loss/G,metric/modes_covered (default: every "
                                                        "loss and metric recorded)")
    p.add_argument("--step", type=int, help="each metric at this step too (its last record at or before it)")
    p.add_argument("--smoothing", type=float, default=0.0, help="smooth each seed's curve first (TensorBoard's EMA "
                                                                "weight, 0..0.999; default 0: the recorded values)")
    p.add_argument("--sort", metavar="COLUMN", help="sort the rows by this column (a setting, seeds, or a metric)")
    p.add_argument("--descending", action="store_true", help="with --sort: largest first")
    p.add_argument("--digits", type=int, default=3, help="LaTeX: significant digits of each mean (default 3; finer "
                                                         "where its sd needs it)")
    p.add_argument("--ylabel", metavar="COLUMN=TEXT", action="append", default=[],
                   help="LaTeX: a column's title, e.g. --ylabel loss/D=\"Critic loss\" or modes_covered=Modes "
                        "(default: \"D loss\", a metric as written)")
    return p


def table_from_args(a: argparse.Namespace) -> tuple[SweepTable, str]:
    """The table the options ask for, and its format; every problem is a `UserError`, before anything is written."""
    if a.table != "-":
        check_output(a.table, "the table")
        check_sweep_output(a.table)
    fmt = a.format or ("csv" if a.table == "-" else FORMATS.get(Path(a.table).suffix.lower()))
    if fmt is None:
        raise UserError(f"--table {a.table}: the format follows the extension, .csv or .tex; rename it, or add "
                        f"--format csv|tex")
    if not 0 <= a.smoothing < 1:
        raise UserError(f"--smoothing must be in [0, 1), got {a.smoothing}")
    if a.step is not None and a.step < 0:
        raise UserError(f"--step must be >= 0, got {a.step}")
    if not 1 <= a.digits <= 12:
        raise UserError(f"--digits must be 1 to 12, got {a.digits}")
    sweep = Sweep.open(a.export)
    members = read_members(sweep)
    if not members:
        raise UserError(f"no point of {sweep.dir} has recorded anything yet; run it first "
                        f"(main.py --headless --resume {sweep.dir})")
    recorded = list(dict.fromkeys(t for m in members for t in m.curves))
    tags = None
    if a.metrics:
        tags = [t.strip() for t in a.metrics.split(",") if t.strip()]
        unknown = next((t for t in tags if t not in recorded), None)
        if unknown:
            raise UserError(f"--metrics {unknown}: no point recorded it; recorded are {', '.join(recorded)}")
    table = build_table(members, tags, a.step, a.smoothing)
    table = replace(table, names=label_names(a.ylabel, list(dict.fromkeys(c.tag for c in table.columns))))
    if a.sort:
        if a.sort not in table.headers:
            raise UserError(f"--sort {a.sort}: the columns are {', '.join(table.headers)}")
        table = table.sorted(table.headers.index(a.sort), a.descending)
    not_done = [p.name for p, s in zip(sweep.points, sweep.states()) if s.state != "done"]
    if not_done:
        print(f"warning: {len(not_done)} of {len(sweep.points)} points are not done (e.g. {not_done[0]}); the table "
              f"holds what the others recorded", file=sys.stderr)
    return table, fmt


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    a = build_parser().parse_args(argv)
    table, fmt = table_from_args(a)
    text = table.to_csv() if fmt == "csv" else table.to_latex(a.digits)
    if a.table == "-":
        sys.stdout.write(text)
        return 0
    try:
        Path(a.table).write_text(text, encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot write {a.table} ({e.strerror}); choose another path") from None
    print(f"{len(table.rows)} settings x {len(table.columns)} columns: {a.table}")
    return 0

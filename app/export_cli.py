"""`python main.py --export RUN_DIR [RUN_DIR ...] --out fig.pdf ...`: paper figures from run directories,
no window. Several runs overlay in the same plots, each named in the legend by its label (its directory
name unless `--labels` gives others).

Every input is checked before Qt starts or anything is written; bad input exits with code 2 and one
line on stderr. Without a display (CI, ssh) Qt's offscreen platform is used, so this works headless.
Without a height (`--size 3.5`, or no `--size`), the figure gets the smallest height at which every plot
is readable; a height given too small is drawn as asked, with a warning naming a better one.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Sequence

from training_core import UserError, is_run_dir
from training_core.rundir.outputs import check_output
from training_core.rundir.reading import scalars_header_problem
from training_core.base.argparsing import ArgParser, run_cli
from training_core.base.config import file_not_dir

from training_core.figures import (BANDS, COLOUR_BY, FORMATS, LAYOUTS, MARKER_KINDS, PAPER_MARKERS, PLOT_NAMES,
                                   THEMES, UNITS, FigureSpec, format_from_path, label_key, marker_kinds, parse_size)
from training_core.runs.collection import unique_labels


def build_parser() -> argparse.ArgumentParser:
    p = ArgParser(prog="main.py", description="Render paper figures from one run directory, or several overlaid.",
                  help_hint="see main.py --export RUN_DIR --help")
    p.add_argument("--export", metavar="RUN_DIR", nargs="+", required=True,
                   help="the run directory to draw; several are overlaid in the same plots")
    p.add_argument("--labels", metavar="A,B,...", help="legend names of the runs, in order (default: directory names)")
    p.add_argument("--colour-by", "--color-by", dest="colour_by", choices=COLOUR_BY, default="run",
                   help="several runs: colour names the run and line style the phase (run, default), or the reverse")
    p.add_argument("--x", dest="x_axis", metavar="step|time|PHASE", default="step",
                   help="x axis: the step (default), the time since each run began, or a phase's name (G) to "
                        "count that phase's steps, as GAN papers count generator iterations")
    p.add_argument("--log-loss", action="store_true", help="the loss plot on a log axis")
    p.add_argument("--out", metavar="FILE", help="figure file; the format follows its extension (.png/.svg/.pdf)")
    p.add_argument("--plots", default="losses,updates", help=f"comma-separated, from: {', '.join(PLOT_NAMES)} "
                                                             "(metrics: one panel per metric the runs recorded)")
    p.add_argument("--format", choices=FORMATS, help="png, svg or pdf (default: from --out)")
    p.add_argument("--size", metavar="WxH", help="figure size, e.g. 7.16x3; a width alone (3.5) gets the height that "
                                                 "keeps every plot readable (default: 3.5 in wide for one plot, "
                                                 "7.16 for more)")
    p.add_argument("--units", choices=UNITS, default="in", help="units of --size: in (default) or mm")
    p.add_argument("--dpi", type=int, default=300, help="PNG resolution (default 300)")
    p.add_argument("--theme", choices=THEMES, default="paper", help="paper (default: white, colour-blind-safe) "
                                                                    "or screen (dark)")
    p.add_argument("--font-size", type=float, default=8.0, help="base font size in points (default 8)")
    p.add_argument("--smoothing", type=float, default=0.6, help="EMA weight 0..0.999 as in TensorBoard (default 0.6)")
    p.add_argument("--no-raw", action="store_true", help="draw only the smoothed curves")
    p.add_argument("--markers", metavar="KINDS", default=",".join(PAPER_MARKERS),
                   help=f"the events marked by a labelled line, comma-separated from: {', '.join(MARKER_KINDS)} "
                        f"(default: {','.join(PAPER_MARKERS)}, what the experiment changed and any leak; all "
                        "for every kind, none for no markers)")
    p.add_argument("--no-markers", action="store_true", help="no marker lines (as --markers none)")
    p.add_argument("--bands", choices=BANDS, default="off",
                   help="runs of one setting that differ only by seed: one mean line with a band from the lowest "
                        "to the highest seed (minmax) or of ±1 standard deviation (sd); off (default): a line each")
    p.add_argument("--no-legend", action="store_true", help="no legends")
    p.add_argument("--no-panel-labels", action="store_true", help="no (a), (b) on multi-plot figures")
    p.add_argument("--absolute", action="store_true", help="updates plot: ‖ΔW‖ instead of ‖ΔW‖/‖W‖")
    p.add_argument("--vars", metavar="SCOPES", help="updates plot: only these comma-separated scopes")
    p.add_argument("--layout", choices=LAYOUTS, default="auto", help="panels side by side (row), stacked "
                                                                      "(column) or auto")
    p.add_argument("--xlabel", help="x-axis label of every plot")
    p.add_argument("--ylabel", metavar="PLOT=TEXT", action="append", default=[],
                   help="y-axis label of a plot: losses, updates, metrics (every metric panel) or a metric by its "
                        "name, e.g. pca_fd=PCA-FD")
    p.add_argument("--csv", metavar="FILE", help="also write the drawn curves as step,wall_time,tag,value,smoothed,run")
    return p


def spec_from_args(a: argparse.Namespace) -> tuple[FigureSpec, bool]:
    """The figure the options ask for, and whether its height is still to be chosen (none was given)."""
    plots = [s.strip() for s in a.plots.split(",") if s.strip()]
    fmt = a.format or (format_from_path(a.out) if a.out else "pdf")
    ext = a.out.rsplit(".", 1)[-1].lower() if a.out and "." in Path(a.out).name else ""
    if a.format and ext in FORMATS and ext != a.format:  # PNG bytes in a .pdf opens nowhere
        raise UserError(f"--format {a.format} but --out ends in .{ext}; make them agree, or leave out --format")
    w, h, auto_height = (3.5 if len(plots) == 1 else 7.16), 2.6, True
    if a.size:
        if re.fullmatch(r"\s*[0-9]*\.?[0-9]+\s*", a.size):
            w = parse_size(f"{a.size}x1", a.units)[0]
        else:
            (w, h), auto_height = parse_size(a.size, a.units), False
    spec = FigureSpec(plots=plots, width_in=w, height_in=h, format=fmt, dpi=a.dpi, theme=a.theme,
                      font_size=a.font_size, raw=not a.no_raw, smoothing=a.smoothing,
                      markers=() if a.no_markers else marker_kinds(a.markers), bands=a.bands,
                      legend=not a.no_legend, panel_labels=not a.no_panel_labels, layout=a.layout,
                      update_kind="update_norm" if a.absolute else "update_ratio",
                      variables=[s.strip() for s in a.vars.split(",") if s.strip()] if a.vars else None,
                      colour_by=a.colour_by, x_axis=a.x_axis, log_losses=a.log_loss)
    spec.validate()
    if a.xlabel is not None:
        for plot in spec.plots:
            spec.labels[plot] = (a.xlabel, None)
    for item in a.ylabel:
        if "=" not in item:
            raise UserError(f"--ylabel {item!r} is not PLOT=TEXT, e.g. --ylabel losses=\"BCE loss\"")
    return spec, auto_height


def apply_ylabels(spec: FigureSpec, items: list[str], metrics: list[str]) -> None:
    """`--ylabel KEY=TEXT` into the spec, once the runs' metrics are known: a key no panel answers to is refused
    with the keys that work (`label_key`)."""
    for item in items:
        key, _, text = item.partition("=")
        plot = label_key(key.strip(), spec.plots, metrics)
        spec.labels[plot] = ((spec.labels.get(plot) or (None, None))[0], text)


def run_labels(a: argparse.Namespace) -> list[str]:
    """One label per run: `--labels`, or the directory names. With --bands, `--labels` may instead name the
    groups of seeds (`group_names`), and the runs keep their directory names."""
    if a.labels is None:
        named = getattr(a, "sweep_labels", {})  # a sweep's runs are named by their grid point
        return [named.get(d, u) for d, u in zip(a.export, unique_labels(a.export))]
    labels = [s.strip() for s in a.labels.split(",")]
    if a.bands != "off" and len(labels) != len(a.export) and all(labels):
        return unique_labels(a.export)
    if len(labels) != len(a.export) or not all(labels):
        raise UserError(f"--labels gives {len(labels)} name(s) for {len(a.export)} run(s); give one per run, "
                        "comma-separated, in the order of --export")
    return labels


def group_names(a: argparse.Namespace, n_runs: int, groups: list[list[int]]) -> list[str] | None:
    """With --bands: `--labels` naming each group of seeds (one per group, in the order of their first run),
    or None (each group named by what its runs' labels share)."""
    labels = [s.strip() for s in a.labels.split(",")] if a.labels is not None else []
    if not labels or len(labels) == n_runs and len(groups) != n_runs:
        return None if not labels else [labels[g[0]] for g in groups]
    if len(labels) != len(groups):
        raise UserError(f"--labels gives {len(labels)} name(s) for {n_runs} run(s) in {len(groups)} group(s) of "
                        "seeds; give one per run, or one per group in the order of their first run")
    return labels


def expand_sweeps(dirs: Sequence[str], labels: dict[str, str] | None = None) -> list[str]:
    """A sweep directory among the runs stands for its points' runs, in the grid's order (seeds innermost), so
    that `--export SWEEP_DIR --bands minmax --out fig.pdf` draws a sweep's settings as bands without naming
    every run. Points not begun yet are left out with a line on stderr; a sweep with none begun is refused.
    `labels` receives each point's name by its grid point ("ratio=3:1 freeze=none seed=1"), so that a group of
    seeds is named by its setting, what the runs' names share."""
    from training_core.runs.sweep import Sweep, is_sweep_dir
    out: list[str] = []
    labels = {} if labels is None else labels
    for d in dirs:
        if not is_sweep_dir(d):
            out.append(d)
            continue
        sweep = Sweep.open(d)
        begun = [str(sweep.run_dir(p)) for p in sweep.points if is_run_dir(sweep.run_dir(p))]
        if not begun:
            raise UserError(f"the sweep in {d} has no point with a record yet; export it once a point has trained "
                            f"(python main.py --headless --resume {d})")
        if len(begun) < len(sweep.points):
            print(f"warning: {len(sweep.points) - len(begun)} of the {len(sweep.points)} points of {d} have no "
                  f"record yet and are left out", file=sys.stderr)
        out += begun
        for p in sweep.points:
            setting = " ".join(f"{k}={v}" for k, v in p.setting().items())
            labels[str(sweep.run_dir(p))] = f"{setting} seed={p.seed}" if p.seed is not None else setting
    return out


def _check_paths(a: argparse.Namespace) -> None:
    for d in a.export:
        run = Path(d)
        if run.is_file():  # a sweep file, a config.toml, an experiment: said as such
            raise UserError(file_not_dir(run, "--export"))
        if not run.exists():
            raise UserError(f"run directory {d} does not exist; give a directory a run wrote, e.g. runs/ring-...")
        if not is_run_dir(run):
            raise UserError(f"{d} is not a run directory (no scalars.csv and events.jsonl); "
                            "give the directory a training run wrote")
        problem = scalars_header_problem(run)  # refused as read_scalars refuses it (its docstring says why)
        if problem:
            raise UserError(problem)
    if not a.out and not a.csv:
        raise UserError("nothing to write; give --out FILE (.png/.svg/.pdf) and/or --csv FILE")
    if a.out and a.csv and Path(a.out).expanduser().resolve() == Path(a.csv).expanduser().resolve():
        raise UserError(f"--out and --csv are both {a.out}; the CSV would replace the figure: give them two names")
    for path, what in ((a.out, "--out"), (a.csv, "--csv")):
        if path:  # both checked before anything is written
            check_output(path, what)


_APP = None  # the QGuiApplication fonts and painting need; module-level so it outlives main()'s locals


def _ensure_gui_app() -> None:
    global _APP
    if not os.environ.get("QT_QPA_PLATFORM") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtGui import QGuiApplication
    _APP = QGuiApplication.instance() or QGuiApplication(["freezeframe-export"])


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(lambda: _main(list(sys.argv[1:] if argv is None else argv)))


def _main(argv: list[str]) -> int:
    a = build_parser().parse_args(argv)
    a.sweep_labels = {}
    a.export = expand_sweeps(a.export, a.sweep_labels)
    _check_paths(a)
    spec, auto_height = spec_from_args(a)
    labels = run_labels(a)
    from training_core.figures import metric_tags
    from training_core.figures.data import in_variables
    from training_core.runs import read_run
    runs = []
    for label, d in zip(labels, a.export):
        try:
            store = read_run(d)
        except (OSError, ValueError, KeyError, IndexError) as e:
            raise UserError(f"could not read the run in {d} ({e}); is it complete?") from None
        if not store.phases:
            raise UserError(f"{d} has no recorded steps yet; export after the run has trained a little")
        from training_core.rundir.varstore import unreadable_files
        for path in unreadable_files(d):  # read_run leaves it out: a figure would show one phase fewer, unsaid
            print(f"warning: {path} cannot be read (its header is damaged or cut); its phase's per-variable "
                  f"records are left out", file=sys.stderr)
        runs.append((label, store))
    if spec.variables and not any(in_variables(st, p, s) for _, st in runs for p in st.var_paths
                                  for s in spec.variables):
        raise UserError(f"--vars {','.join(spec.variables)} matches no variable; see --list-scopes")
    if "metrics" in spec.plots and not metric_tags(runs):
        raise UserError("no metric/ rows in the run(s): the experiment defines no metrics(ctx); "
                        "drop metrics from --plots")
    apply_ylabels(spec, a.ylabel, [t.removeprefix("metric/") for t in metric_tags(runs)])
    _ensure_gui_app()
    from app.export import Figure, recommended_height, write_csv, write_pdf, write_png, write_svg
    groups = names = None
    if spec.bands != "off":
        from training_core.figures import seed_groups
        groups = seed_groups(runs)
        names = group_names(a, len(runs), groups)
    fig = Figure(runs, spec, groups, names)
    if auto_height:
        spec.height_in = recommended_height(spec, fig.data)
        fig = Figure(runs, spec, groups, names)
        from app.export.figure import MAX_HEIGHT_IN
        if spec.height_in >= MAX_HEIGHT_IN and fig.check():  # a 40-inch page was written, its plots unreadable still
            raise UserError(f"no height up to {MAX_HEIGHT_IN:g} in makes every plot readable {spec.width_in:g} in wide "
                            f"with --layout {spec.layout}; use --layout column (or auto), or a wider --size")
    if a.out:
        for problem in [fig.check()] + [pd.problem for pd in fig.data.plots]:
            if problem:
                print(f"warning: {problem}", file=sys.stderr)
        {"png": lambda: write_png(fig, a.out, spec.dpi), "svg": lambda: write_svg(fig, a.out),
         "pdf": lambda: write_pdf(fig, a.out)}[spec.format]()
        grouped = f" in {len(fig.data.runs)} group{'s' if len(fig.data.runs) > 1 else ''}" if groups else ""
        print(f"wrote {a.out} ({spec.width_in:.3g} x {spec.height_in:.3g} in, {spec.format}, "
              f"{len(runs)} run{'s' if len(runs) > 1 else ''}{grouped})")
    if a.csv:
        rows = write_csv(fig.data, a.csv)
        print(f"wrote {a.csv} ({rows} rows)")
    return 0

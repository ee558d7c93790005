"""The export dialog's options that the command line has too: which kinds of event are marked (`--markers`),
seeds as bands (`--bands`), the x axis (`--x`: step, time, or one phase's steps), and the plots ticked when the
dialog opens (the runs' metrics among them).

Why the metrics are ticked by default: a run whose experiment measures metrics was exported without them
unless the user noticed the unticked box; a figure of a GAN without its health metrics is rarely what was
wanted. Until the user ticks or unticks a plot, the dialog keeps the defaults in step with the runs (a live
run's first metrics come some seconds in).
"""
from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QComboBox, QGridLayout, QWidget

from training_core.figures import MARKER_KINDS, FigureSpec, marker_kinds, metric_tags

#: how the dialog names each kind of marker (the command line's names are the kinds themselves)
KIND_TEXT = {"freeze": "freeze", "ratio": "ratio", "lr": "learning rate", "method": "method", "pause": "pause",
             "nan": "NaN", "leak": "leak", "rollback": "rollback", "resumed": "resumed"}
BAND_ITEMS = [("a line per run", "off"), ("mean and min–max band", "minmax"), ("mean and ±1 sd band", "sd")]


def as_runs(shown: object) -> list[tuple[str, object]]:
    """What the dialog draws, as (label, RunData) pairs: one run, or the window's several."""
    if isinstance(shown, (list, tuple)):
        return list(shown)
    return [("", shown)]


def default_plots(shown: object) -> list[str]:
    """Losses, the metrics when any run recorded some, and the updates."""
    try:
        has_metrics = bool(metric_tags(as_runs(shown)))
    except AttributeError:  # nothing to draw yet
        has_metrics = False
    return ["losses", "metrics", "updates"] if has_metrics else ["losses", "updates"]


def marker_boxes(spec: FigureSpec) -> tuple[QWidget, dict[str, QCheckBox]]:
    """A checkbox per kind of marker, in a grid of three columns; ticked as `spec.markers` says."""
    chosen = marker_kinds(spec.markers)
    widget, grid = QWidget(), QGridLayout()
    grid.setContentsMargins(0, 0, 0, 0)
    widget.setLayout(grid)
    boxes = {}
    for i, kind in enumerate(MARKER_KINDS):
        box = QCheckBox(KIND_TEXT[kind])
        box.setObjectName(f"marker_{kind}")
        box.setChecked(kind in chosen)
        box.setToolTip(f"Mark {KIND_TEXT[kind]} events with a labelled line (--markers {kind})")
        grid.addWidget(box, i // 3, i % 3)
        boxes[kind] = box
    return widget, boxes


def bands_box(spec: FigureSpec) -> QComboBox:
    box = QComboBox()
    for text, value in BAND_ITEMS:
        box.addItem(text, value)
    box.setCurrentIndex([v for _, v in BAND_ITEMS].index(spec.bands))
    box.setToolTip("Runs of one setting that differ only by their seed: a line each, or one mean line with a band "
                   "(--bands)")
    return box


def x_axis_box(spec: FigureSpec) -> QComboBox:
    """Step, time since start, and (added by `sync_phase_axes` as the runs show them) each phase's steps."""
    box = QComboBox()
    box.addItem("x: step", "step")
    box.addItem("x: time since start", "time")
    if spec.x_axis not in ("step", "time"):
        box.addItem(f"x: {spec.x_axis} steps", spec.x_axis)
    box.setCurrentIndex(box.findData(spec.x_axis))
    box.setToolTip("Every phase's steps, the time since each run began, or one phase's steps (GAN papers count "
                   "generator iterations: --x G)")
    return box


def sync_phase_axes(box: QComboBox, shown: object) -> None:
    """Offer "x: P steps" for each phase every shown run has (a live run's phases appear as they first train)."""
    try:
        runs = as_runs(shown)
        phases = [p for p in runs[0][1].phases if all(p in s.phases for _, s in runs[1:])] if runs else []
    except AttributeError:  # nothing to draw yet
        return
    for phase in phases:
        if box.findData(phase) < 0:
            box.addItem(f"x: {phase} steps", phase)

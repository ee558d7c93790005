"""What a figure should look like: one plain dataclass shared by the dialog, the menu actions and the CLI.
Qt-free (training_core), so a review or the headless export can check a spec without a display.

Sizes are kept in inches (the unit PDF pages and DPI are defined in); millimetres are only a way of
typing them. Every check raises `UserError` with one line, so the CLI and the dialog report bad input
the same way.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from training_core.base.errors import UserError

PLOT_NAMES = ("losses", "updates", "metrics")  # metrics: one panel per metric/<name> the runs recorded
FORMATS = ("png", "svg", "pdf")
THEMES = ("paper", "screen")
UNITS = ("in", "mm")
LAYOUTS = ("auto", "row", "column")
UPDATE_KINDS = ("update_ratio", "update_norm")
COLOUR_BY = ("run", "phase")  # several runs: colour names the run (line style the phase), or the reverse
X_AXES = ("step", "time")  # or a phase's name: x counts that phase's steps (GAN papers: generator iterations)
#: the figure's x unit when x counts one phase's steps (`FigureData.x_unit`)
PHASE_UNIT = "steps:"
MM_PER_IN = 25.4
#: the kinds of event a figure can mark (runs/data.py labels each), in the order the options list them
MARKER_KINDS = ("freeze", "ratio", "lr", "method", "pause", "nan", "leak", "rollback", "resumed")
#: the kinds a figure marks unless asked for others: what the experiment did to training (the freeze set, the
#: phase ratio, a learning rate, the freeze method), which a reader needs to read the curves, and a leak (a
#: variable meant frozen that moved): what the plots say must be what happened, and a figure of a run whose
#: "frozen" discriminator trained on, unmarked, says it was frozen. Left out: how the run was kept (pause,
#: resumed, rollback: the record is one timeline across them) and a NaN (the window's alarm; a paper
#: about it asks with `--markers all` or names it)
PAPER_MARKERS = ("freeze", "ratio", "lr", "method", "leak")
#: runs of one setting that differ only by their seed: separate lines (off), or one mean line with a band
#: from the lowest to the highest seed (minmax) or of one standard deviation either side (sd)
BANDS = ("off", "minmax", "sd")

#: journal column widths in inches (IEEE/ACM two-column templates; most others are within 0.1 in)
SIZE_PRESETS = {"single column (3.5 in)": 3.5, "double column (7.16 in)": 7.16}
DEFAULT_HEIGHT_IN = 2.6


TIME_LABELS = {"s": "Time (s)", "min": "Time (min)", "h": "Time (h)"}


def default_labels(plot: str, update_kind: str = "update_ratio", x_unit: str = "step") -> tuple[str, str]:
    """(x label, y label) a plot gets unless the user typed others (`plot`: losses, updates, metric/<name>)."""
    x = TIME_LABELS.get(x_unit) or (f"{x_unit.removeprefix(PHASE_UNIT)} steps" if x_unit.startswith(PHASE_UNIT)
                                    else "Training step")
    if plot == "losses":
        return x, "Loss"
    if plot.startswith("metric/") or plot == "metrics":  # as the experiment wrote it: "pca_fd" is no "Pca fd"
        return x, plot.removeprefix("metric/") if plot != "metrics" else "Metric"
    if update_kind == "update_norm":
        return x, "Update norm ‖ΔW‖"
    return x, "Relative update ‖ΔW‖ / ‖W‖"


def counts_steps(x_unit: str) -> bool:
    """Whether x is a count of steps (every phase's, or one phase's): whole-number ticks, a range from 0."""
    return x_unit == "step" or x_unit.startswith(PHASE_UNIT)


def short_label(label: str) -> str:
    """The compact form of a default label, for axes too short to hold the long one."""
    short = {"Relative update ‖ΔW‖ / ‖W‖": "‖ΔW‖ / ‖W‖", "Update norm ‖ΔW‖": "‖ΔW‖"}
    return short.get(label, label)


@dataclass
class FigureSpec:
    """Everything that decides how a figure looks; the data come from the store at draw time, so one
    spec can be exported again later in the run and give the same style on newer numbers."""

    plots: list[str] = field(default_factory=lambda: ["losses", "updates"])
    width_in: float = 7.16
    height_in: float = DEFAULT_HEIGHT_IN
    format: str = "pdf"
    dpi: int = 300  # PNG only: vectors have no pixels
    theme: str = "paper"
    font_size: float = 8.0  # points, at print size
    raw: bool = True  # faint unsmoothed curve behind the smoothed one
    smoothing: float = 0.6  # TensorBoard-style EMA weight, as training_core.ema_smooth
    #: the kinds of event marked by a vertical line and its label (True: every kind, False: none)
    markers: tuple[str, ...] | bool = PAPER_MARKERS
    legend: bool = True
    update_kind: str = "update_ratio"  # relative ‖ΔW‖/‖W‖ or absolute ‖ΔW‖
    variables: list[str] | None = None  # scope prefixes to show on the updates plot; None = all
    layout: str = "auto"  # panels side by side (row), stacked (column), or whichever fits the page
    panel_labels: bool = True  # (a), (b), ... when there is more than one plot
    labels: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)  # plot -> (x, y) overrides
    colour_by: str = "run"  # several runs: colour by run and line style by phase, or "phase": the reverse
    #: "step" (every phase's), "time": seconds (minutes, hours) since each run began, or a phase's name ("G"):
    #: that phase's steps so far, as GAN papers count generator iterations (checked against the runs' phases)
    x_axis: str = "step"
    log_losses: bool = False  # the loss plot on a log axis (losses that fall by decades)
    bands: str = "off"  # seeds of one setting: separate lines, or a mean line with a min-max or sd band

    def axis_labels(self, plot: str, x_unit: str = "step") -> tuple[str, str]:
        """The labels of panel `plot` (losses, updates, metric/<name>): the user's where given (None or ""
        keeps the default; an x label given for "metrics" applies to every metric panel)."""
        x, y = default_labels(plot, self.update_kind, x_unit)
        own = self.labels.get(plot) or (None, None)
        group = (self.labels.get("metrics") or (None, None)) if plot.startswith("metric/") else (None, None)
        return own[0] or group[0] or x, own[1] or group[1] or y

    @property
    def size_pt(self) -> tuple[float, float]:
        return self.width_in * 72.0, self.height_in * 72.0

    def copy(self, **changes: object) -> "FigureSpec":
        return replace(self, plots=list(self.plots), labels=dict(self.labels), **changes)

    def validate(self) -> "FigureSpec":
        """Raise UserError on the first problem; return self so calls chain."""
        if not self.plots:
            raise UserError("no plot chosen; pick at least one of: " + ", ".join(PLOT_NAMES))
        self.plots = list(dict.fromkeys(self.plots))
        for p in self.plots:
            if p not in PLOT_NAMES:
                raise UserError(f"unknown plot {p!r}; choose from: {', '.join(PLOT_NAMES)}")
        if self.format not in FORMATS:
            raise UserError(f"unknown format {self.format!r}; choose png, svg or pdf")
        if self.theme not in THEMES:
            raise UserError(f"unknown theme {self.theme!r}; choose paper or screen")
        if self.layout not in LAYOUTS:
            raise UserError(f"unknown layout {self.layout!r}; choose auto, row or column")
        if self.colour_by not in COLOUR_BY:
            raise UserError(f"unknown colouring {self.colour_by!r}; choose run or phase")
        if not self.x_axis or not self.x_axis.strip():
            raise UserError("no x axis given; choose step, time or a phase's name (e.g. G: generator steps)")
        if self.bands not in BANDS:
            raise UserError(f"unknown bands {self.bands!r}; choose {', '.join(BANDS)}")
        self.markers = marker_kinds(self.markers)
        if self.update_kind not in UPDATE_KINDS:
            raise UserError(f"unknown update kind {self.update_kind!r}; choose update_ratio or update_norm")
        if not (0.5 <= self.width_in <= 40 and 0.5 <= self.height_in <= 40):
            raise UserError(f"figure size {self.width_in:g} x {self.height_in:g} in is out of range; "
                            "use 0.5 to 40 inches (13 to 1016 mm) per side")
        if not 10 <= self.dpi <= 2400:
            raise UserError(f"DPI {self.dpi} is out of range; use 10 to 2400 (300 is usual for print)")
        if not 3 <= self.font_size <= 72:
            raise UserError(f"font size {self.font_size:g} pt is out of range; use 3 to 72 (8 is usual)")
        if not 0.0 <= self.smoothing < 1.0:
            raise UserError(f"smoothing {self.smoothing:g} is out of range; use 0 (none) up to 0.999")
        return self


def marker_kinds(value: "tuple[str, ...] | list[str] | str | bool") -> tuple[str, ...]:
    """The marker kinds `value` names: True or "all" every kind, False, "none" or "" none, else a list (or a
    comma-separated text) of kinds; an unknown kind is a UserError that lists the kinds there are."""
    if value is True:
        return MARKER_KINDS
    if value is False:
        return ()
    if isinstance(value, str):
        value = [k.strip() for k in value.split(",") if k.strip()]
        if value in (["all"], ["none"]):
            return MARKER_KINDS if value == ["all"] else ()
    wrong = [k for k in value if k not in MARKER_KINDS]
    if wrong:
        raise UserError(f"unknown marker kind {wrong[0]!r}; choose from: {', '.join(MARKER_KINDS)} (or all, or none)")
    return tuple(k for k in MARKER_KINDS if k in value)


def label_key(key: str, plots: "list[str]", metrics: "list[str]") -> str:
    """The panel an axis-label KEY (`--ylabel KEY=TEXT`) names: losses, updates, metrics (every metric panel),
    or one metric as the experiment named it (`pca_fd`, or `metric/pca_fd`). `metrics` are the metric names
    the runs recorded. A key no panel of the figure answers to is a UserError listing the ones that do."""
    shown = metrics if "metrics" in plots else []
    valid = [p for p in plots if p != "metrics"] + (["metrics", *shown] if shown else [])
    if key in valid:
        return key if key not in shown or key == "metrics" else "metric/" + key
    if key.removeprefix("metric/") in shown:
        return key
    example = shown[0] if shown else valid[0] if valid else "losses"
    raise UserError(f"--ylabel {key}=...: no plot {key!r} in this figure; use one of: {', '.join(valid)} "
                    f"(e.g. --ylabel {example}=\"My label\")")


def parse_size(text: str, units: str = "in") -> tuple[float, float]:
    """'7.16x3' (in the given units) -> (width_in, height_in)."""
    if units not in UNITS:
        raise UserError(f"unknown units {units!r}; choose in or mm")
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*[xX×]\s*([0-9]*\.?[0-9]+)\s*", text or "")
    if not m:
        raise UserError(f"size {text!r} is not WIDTHxHEIGHT, e.g. 7.16x3 (inches) or 182x76 with --units mm")
    w, h = float(m.group(1)), float(m.group(2))
    if units == "mm":
        w, h = w / MM_PER_IN, h / MM_PER_IN
    return w, h


def to_units(inches: float, units: str) -> float:
    return inches * MM_PER_IN if units == "mm" else inches


def from_units(value: float, units: str) -> float:
    return value / MM_PER_IN if units == "mm" else value


def format_from_path(path: str) -> str:
    """The format an output file name asks for, by extension."""
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    if ext not in FORMATS:
        raise UserError(f"cannot tell the format of {path!r}; end it in .png, .svg or .pdf, or give --format")
    return ext

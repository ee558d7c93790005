"""Every colour and line style of the live plots, in one place so the figure export draws the same.

Plain hex strings and numbers (no Qt objects at import), so the exporter can use them with
matplotlib-free Qt painting or anything else. Colours are fixed per phase *name* where we know it
(D blue, G orange: the colours a GAN user sees in every plot and figure) and by order otherwise.
"""
from __future__ import annotations

BACKGROUND = "#ffffff"
FOREGROUND = "#333333"  # axes, ticks, text
GRID_ALPHA = 0.15

# Tableau 10: distinct, colour-blind tolerable, prints well.
CYCLE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
KNOWN_PHASES = {"D": "#1f77b4", "G": "#ff7f0e"}

# Variables: a colour per layer (scope), a line style per kind of leaf (styles.variable_styles): twelve hues
# that stay apart on white (Tableau 10 without its grey, which frozen curves use, and three darker ones).
VARIABLE_CYCLE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
                  "#17becf", "#393b79", "#637939", "#ad494a")

#: line styles of the variables' kinds (kernel solid, bias dashed, ...), as training_core.figures.DASHES in
#: pen widths; a 1-pixel line needs them longer to read (see styles.variable_styles for the assignment)
VARIABLE_DASHES = (None, (8.0, 5.0), (10.0, 4.0, 2.0, 4.0), (2.0, 3.0))
FROZEN_DOTS = (1.0, 3.0)  # a frozen variable: grey and dotted
#: several runs: each run keeps a colour of its own (Okabe-Ito, as the export's paper theme)
RUN_CYCLE = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#B8A200")

RAW_ALPHA = 70          # 0..255: the raw loss is context, the smoothed one is the signal
RAW_WIDTH = 1.0
SMOOTH_WIDTH = 2.2
UPDATE_WIDTH = 1.0   # 1 px lines take the raster fast path: 12+ curves stay cheap
HIGHLIGHT_WIDTH = 3.5
DIM_ALPHA = 80          # other variables while one is highlighted

FROZEN_GREY = "#8c8c8c"  # frozen variables are mixed halfway towards this and dashed
FLOOR_COLOR = "#8c8c8c"  # the "0 (frozen)" line at the bottom of the log axis
REFERENCE_COLOR = "#444444"  # the 1e-3 rule of thumb for ||dW||/||W|| (no hue: hues are variables)

CONTROL_COLOR = "#6a3d9a"  # freeze, ratio, lr, method: things the user did
PAUSE_COLOR = "#7f7f7f"
ALARM_COLOR = "#d62728"    # nan, leak: things that went wrong
MARKER_KIND_COLOR = {"freeze": CONTROL_COLOR, "ratio": CONTROL_COLOR, "lr": CONTROL_COLOR,
                     "method": CONTROL_COLOR, "pause": PAUSE_COLOR, "nan": ALARM_COLOR, "leak": ALARM_COLOR}

METRIC_COLOR = "#2ca02c"  # a metric of one run (several: the runs' colours)
REAL_POINTS = "#7f7f7f"   # samples: real data grey, generated in the generator's colour
FAKE_POINTS = KNOWN_PHASES["G"]
MATRIX_COLORMAP = "CET-D1"  # diverging: factor matrices are signed
IMAGE_LEVELS = (-1.0, 1.0)


def phase_color(phase: str, index: int) -> str:
    """The colour of a phase: by name for D and G, else by its position among the run's phases."""
    return KNOWN_PHASES.get(phase) or CYCLE[index % len(CYCLE)]


def variable_color(index: int) -> str:
    return VARIABLE_CYCLE[index % len(VARIABLE_CYCLE)]


def run_color(index: int) -> str:
    return RUN_CYCLE[index % len(RUN_CYCLE)]


def marker_color(kind: str) -> str:
    return MARKER_KIND_COLOR.get(kind, CONTROL_COLOR)


def mix(color: str, other: str, t: float) -> str:
    """`color` moved a fraction `t` towards `other` (hex in, hex out)."""
    a = [int(color[i:i + 2], 16) for i in (1, 3, 5)]
    b = [int(other[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(a, b))

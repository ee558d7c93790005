"""Figure data, Qt-free: what a paper figure of one run or several shows (`FigureSpec`) and its numbers (`FigureData`,
copied out of a `RunData` and smoothed once). app/export/ only draws these; the CSV export writes them.

  FigureSpec, parse_size, format_from_path, default_labels   what to draw                  spec.py
  FigureData, PlotData, Curve, LegendEntry, DASHES           the numbers and legend          data.py
  variable_styles                                            colour and line style per variable  styles.py
  minmax_decimate                                            peak-preserving decimation      decimate.py
"""
from training_core.figures.data import (
    DASHES,
    N_COLOURS,
    NO_UPDATE_NOTE,
    REFERENCE_RATIO,
    Curve,
    FigureData,
    LegendEntry,
    PlotData,
    metric_tags,
)
from training_core.figures.decimate import minmax_decimate
from training_core.figures.spec import (
    COLOUR_BY,
    FORMATS,
    LAYOUTS,
    PLOT_NAMES,
    SIZE_PRESETS,
    THEMES,
    UNITS,
    UPDATE_KINDS,
    X_AXES,
    FigureSpec,
    default_labels,
    format_from_path,
    from_units,
    parse_size,
    short_label,
    to_units,
)
from training_core.figures.styles import split_path, variable_styles

__all__ = [n for n in dir() if not n.startswith("_")]

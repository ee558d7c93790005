"""Figure data, Qt-free: what a paper figure of a run shows (`FigureSpec`) and its numbers (`FigureData`,
copied out of a `RunData` and smoothed once). app/export/ only draws these; the CSV export writes them.

  FigureSpec, parse_size, format_from_path, default_labels   what to draw                  spec.py
  FigureData, PlotData, Curve, LegendEntry, DASHES           the numbers and legend          data.py
  minmax_decimate                                            peak-preserving decimation      decimate.py
"""
from .data import DASHES, REFERENCE_RATIO, Curve, FigureData, LegendEntry, PlotData
from .decimate import minmax_decimate
from .spec import (FORMATS, LAYOUTS, PLOT_NAMES, SIZE_PRESETS, THEMES, UNITS, UPDATE_KINDS, FigureSpec,
                   default_labels, format_from_path, from_units, parse_size, short_label, to_units)

__all__ = [n for n in dir() if not n.startswith("_")]

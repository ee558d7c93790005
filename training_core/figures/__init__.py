"""Figure data, Qt-free: what a paper figure of one run or several shows (`FigureSpec`), its numbers
(`FigureData`, copied out of `RunData`s and smoothed once) and where its marker labels go. app/export/ only
draws these; the CSV export writes them.

  FigureSpec, parse_size, format_from_path, default_labels    what to draw                        spec.py
  counts_steps                                                whether x counts steps (not time)   spec.py
  FigureData, metric_tags                                     the numbers, legends and markers    data.py
  Curve, LegendEntry, PlotData, DASHES                        what a panel is made of             curves.py
  MarkerLine, Flag, place_flags, label_lines                  which events, and labels at their lines  markers.py
  seed_groups, Entity, band_curve                             seeds of one setting as a band      bands.py
  metric_groups, MetricGroup, wants_log, band_edges           a metric's _std as its band; log    metric_groups.py
  variable_styles                                             colour and line style per variable  styles.py
  minmax_decimate                                             peak-preserving decimation          decimate.py
  frozen_label                                                a frozen variable's legend name     frozen.py
"""
from training_core.figures.bands import Entity, band_curve, group_name, seed_groups
from training_core.figures.curves import DASHES, N_COLOURS, Curve, LegendEntry, PlotData
from training_core.figures.data import NO_UPDATE_NOTE, REFERENCE_RATIO, FigureData, metric_tags
from training_core.figures.decimate import minmax_decimate
from training_core.figures.frozen import frozen_label
from training_core.figures.markers import (LEAK_PREFIX, Flag, MarkerLine, label_lines, leak_text, merge_repeats,
                                          place_flags, repeat_text, wrap_label)
from training_core.figures.metric_groups import MetricGroup, band_edges, metric_groups, wants_log
from training_core.figures.spec import (
    BANDS,
    COLOUR_BY,
    FORMATS,
    LAYOUTS,
    MARKER_KINDS,
    PAPER_MARKERS,
    PLOT_NAMES,
    SIZE_PRESETS,
    THEMES,
    UNITS,
    UPDATE_KINDS,
    X_AXES,
    FigureSpec,
    counts_steps,
    default_labels,
    format_from_path,
    from_units,
    label_key,
    marker_kinds,
    parse_size,
    short_label,
    to_units,
)
from training_core.figures.styles import split_path, variable_styles

__all__ = [n for n in dir() if not n.startswith("_")]

"""Figures for papers: export plots as PNG/SVG/PDF, their data as CSV, from the window or headless.

Everything here reads a `RunData` (a GUI-side snapshot of the metrics) and never the trainer, so
exporting while training runs neither pauses nor slows it.

  FigureSpec, parse_size           what to draw (size in inches, format, theme, options)      spec.py
  Figure                           a store snapshot drawn with QPainter in points             figure.py
  write_png/write_svg/write_pdf    files; figure_image/svg_bytes for clipboard and preview    render.py
  write_csv                        the figure's curves as step,wall_time,tag,value,smoothed   csv_export.py
  ExportDialog                     options with a live preview                                dialog.py
  install_export_menu              File-menu actions                                          actions.py
Also: data.py (snapshot, smoothing, legend entries, min/max decimation), theme.py (Okabe-Ito paper and
dark themes), axes.py (ticks), text.py (point-size fonts on any device), legend.py, markers.py,
clipboard.py (copy, window screenshots). The headless CLI is app/export_cli.py.
"""
from .csv_export import CSV_HEADER, csv_text, write_csv
from .figure import Figure
from .render import figure_image, svg_bytes, write_pdf, write_png, write_svg
from .spec import PLOT_NAMES, FigureSpec, format_from_path, parse_size

__all__ = ["CSV_HEADER", "Figure", "FigureSpec", "PLOT_NAMES", "csv_text", "figure_image", "format_from_path",
           "parse_size", "svg_bytes", "write_csv", "write_pdf", "write_png", "write_svg"]

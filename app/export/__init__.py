"""Figures for papers: export plots as PNG/SVG/PDF, their data as CSV, from the window or headless.

Everything here draws what `training_core.figures` computes from a `RunData` (the window's copy of
the metrics, or a run directory read back) and never talks to the trainer, so exporting while
training runs neither pauses nor slows it. What to draw (`FigureSpec`) and the numbers (`FigureData`)
are Qt-free and live in training_core/figures/; this package only paints them.

  Figure                           a store snapshot drawn with QPainter in points             figure.py
  write_png/write_svg/write_pdf    files; figure_image/svg_bytes for clipboard and preview    render.py
  write_csv                        the figure's curves as step,wall_time,tag,value,smoothed   csv_export.py
  ExportDialog                     options with a live preview                                dialog.py
  install_export_menu              File-menu actions                                          actions.py
Also: theme.py (Okabe-Ito paper and dark themes), axes.py (ticks), text.py (point-size fonts on any
device), legend.py, markers.py, clipboard.py (copy, window screenshots). The headless CLI is app/export_cli.py.
"""
from .csv_export import CSV_HEADER, csv_text, write_csv
from .figure import Figure, recommended_height
from .render import figure_image, svg_bytes, write_pdf, write_png, write_svg

__all__ = ["CSV_HEADER", "Figure", "recommended_height", "csv_text", "figure_image", "svg_bytes", "write_csv",
           "write_pdf", "write_png",
           "write_svg"]

"""Writing a `Figure` as PNG, SVG or PDF, and as an image or SVG bytes for the clipboard.

Vectors go through Qt's own QSvgGenerator and QPdfWriter (pyqtgraph's SVG exporter fails under
PySide6 6.11), so lines stay paths and text stays text. The painter's unit is always one point;
each writer only sets the scale from points to its device.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

from PySide6.QtCore import QBuffer, QIODevice, QMarginsF, QRectF, QSize, QSizeF
from PySide6.QtGui import QImage, QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgGenerator

from training_core import UserError
from training_core.rundir.outputs import check_output

from .figure import VECTOR_DPI, Figure
from .pdf_fonts import tag_subset_fonts

PDF_RESOLUTION = 1200  # device units per inch inside the PDF; only affects coordinate rounding


def figure_image(fig: Figure, dpi: float) -> QImage:
    """The figure as pixels: inches x DPI, rounded, with the DPI recorded in the PNG (pHYs)."""
    w_pt, h_pt = fig.size_pt
    img = QImage(max(1, round(w_pt / 72 * dpi)), max(1, round(h_pt / 72 * dpi)), QImage.Format.Format_ARGB32)
    img.setDotsPerMeterX(round(dpi / 0.0254))
    img.setDotsPerMeterY(round(dpi / 0.0254))
    img.fill(0)
    p = QPainter(img)
    p.scale(img.width() / w_pt, img.height() / h_pt)
    fig.paint(p, dpi_equiv=dpi)
    p.end()
    return img


def write_png(fig: Figure, path: str | Path, dpi: float) -> None:
    check_output(path, "the figure")
    if not figure_image(fig, dpi).save(str(path), "PNG"):
        raise UserError(f"could not write {path}; check that its folder exists and is writable")


def _svg_generator(fig: Figure) -> QSvgGenerator:
    w_pt, h_pt = fig.size_pt
    g = QSvgGenerator()
    # width/height attributes come out in mm from size/resolution; a fine resolution keeps them exact
    g.setResolution(7200)
    g.setSize(QSize(round(w_pt * 100), round(h_pt * 100)))
    g.setViewBox(QRectF(0, 0, w_pt, h_pt))  # so the painter's unit is one point
    g.setTitle("Freezeframe figure")
    g.setDescription(", ".join(fig.spec.plots))
    return g


def svg_bytes(fig: Figure) -> bytes:
    buf = QBuffer()
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    g = _svg_generator(fig)
    g.setOutputDevice(buf)
    p = QPainter(g)
    fig.paint(p, dpi_equiv=VECTOR_DPI)
    p.end()
    # Qt derives width/height from an integer pixel size; state the exact physical size instead
    w_mm, h_mm = (v / 72 * 25.4 for v in fig.size_pt)
    return re.sub(rb'<svg width="[0-9.]+mm" height="[0-9.]+mm"',
                  f'<svg width="{w_mm:.6g}mm" height="{h_mm:.6g}mm"'.encode(), bytes(buf.data()), count=1)


def write_svg(fig: Figure, path: str | Path) -> None:
    check_output(path, "the figure")
    data = svg_bytes(fig)
    try:
        Path(path).write_bytes(data)
    except OSError as e:
        raise UserError(f"could not write {path}: {e.strerror}; check the folder") from None


def write_pdf(fig: Figure, path: str | Path) -> None:
    """One page exactly the figure's size, no margins.

    Qt makes custom pages whole points (up to 0.007 in off), so the page is made the next whole size
    up, the figure is drawn against its lower-left corner (PDF's origin), and the MediaBox numbers are
    rewritten, same byte length, to the exact size: the page is what was asked for, nothing is
    clipped, and the file's offsets stay valid. Its fonts are subsets, and named so (`tag_subset_fonts`).
    """
    check_output(path, "the figure")
    w_pt, h_pt = fig.size_pt
    pdf = QPdfWriter(str(path))
    pdf.setCreator("Freezeframe")
    pdf.setTitle("Freezeframe figure")
    # Qt pages are whole points: take the next size up, draw against its lower-left corner, then crop
    page = QSizeF(math.ceil(w_pt - 1e-6), math.ceil(h_pt - 1e-6))
    pdf.setPageSize(QPageSize(page, QPageSize.Unit.Point, "", QPageSize.SizeMatchPolicy.ExactMatch))
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0))
    pdf.setResolution(PDF_RESOLUTION)
    page_h = pdf.pageLayout().fullRectPoints().height()
    p = QPainter()
    if not p.begin(pdf):
        raise UserError(f"could not write {path}; check that its folder exists and is writable")
    s = PDF_RESOLUTION / 72.0
    p.scale(s, s)
    p.translate(0, page_h - h_pt)  # bottom-aligned: the exact MediaBox keeps the lower-left origin
    fig.paint(p, dpi_equiv=VECTOR_DPI)
    p.end()
    _exact_mediabox(Path(path), w_pt, h_pt)
    tag_subset_fonts(path)  # the subsets Qt embeds, named as subsets (pdf_fonts.py says why)


def _exact_mediabox(path: Path, w_pt: float, h_pt: float) -> None:
    data = path.read_bytes()

    def fix(m: re.Match) -> bytes:
        old_w, old_h = m.group(1), m.group(2)
        new_w, new_h = _fit(w_pt, len(old_w)), _fit(h_pt, len(old_h))
        if new_w is None or new_h is None:
            return m.group(0)
        return m.group(0).replace(old_w + b" " + old_h, new_w + b" " + new_h)

    fixed = re.sub(rb"/MediaBox \[0 0 ([0-9.]+) ([0-9.]+)\]", fix, data)
    if fixed != data and len(fixed) == len(data):
        path.write_bytes(fixed)


def _fit(value: float, width: int) -> bytes | None:
    """`value` as a PDF number of exactly `width` bytes (left-padded with spaces), or None."""
    for decimals in (4, 3, 2):
        s = f"{value:.{decimals}f}".encode()
        if len(s) <= width:
            return s.rjust(width)
    return None

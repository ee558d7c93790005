"""What a panel draws of its curves: the faint raw curves, the smoothed lines, frozen stretches dotted grey, and
the bands of groups of seeds, as native strokes and fills in points, decimated to the output's resolution.

Kept apart from panel.py (the axes, legend and layout) because both grew: a band is a filled polygon per
finite stretch of its edges, drawn under every line so no seed's band hides another group's mean.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath
from pyqtgraph.functions import arrayToQPath

from training_core.figures import DASHES, minmax_decimate

from .legend import make_pen

LONE_POINT_PT = 1.5  # a point with no neighbour to join is drawn as a dash this long, so a 2-step run shows


def decimated(panel, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) in pt, min/max decimated to the panel's resolution (1/dpi in per bin)."""
    px, py = panel.X(x), panel.Y(y)
    bins = max(16, int(panel.area.width() / 72.0 * panel.dpi))
    idx = minmax_decimate(px, py, panel.area.left(), panel.area.right(), bins)
    return px[idx], py[idx]


def _stretches(ok: np.ndarray) -> list[tuple[int, int]]:
    edges = np.flatnonzero(np.diff(np.r_[False, ok, False].astype(np.int8)))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def line_path(panel, x: np.ndarray, y: np.ndarray) -> QPainterPath:
    px, py = decimated(panel, x, y)
    # one subpath per finite run of 2+ points: a lone point or an empty path makes PDF readers
    # complain ("no current point in closepath")
    path = QPainterPath()
    for a, b in _stretches(np.isfinite(py)):
        if b - a >= 2:
            path.addPath(arrayToQPath(px[a:b], py[a:b], connect="all"))
        elif px[a] == px[a]:  # a lone point (a phase's only step, or one between gaps): a dot, not nothing
            path.moveTo(px[a] - LONE_POINT_PT / 2, py[a])
            path.lineTo(px[a] + LONE_POINT_PT / 2, py[a])
    return path


def band_path(panel, x: np.ndarray, low: np.ndarray, high: np.ndarray) -> QPainterPath:
    """The band between `low` and `high` (axis units) as closed polygons, one per stretch where both are finite."""
    path = QPainterPath()
    ok = np.isfinite(low) & np.isfinite(high)
    for a, b in _stretches(ok):
        if b - a < 2:
            continue
        hx, hy = decimated(panel, x[a:b], high[a:b])
        lx, ly = decimated(panel, x[a:b], low[a:b])
        path.moveTo(float(hx[0]), float(hy[0]))
        for px, py in zip(hx[1:].tolist(), hy[1:].tolist()):
            path.lineTo(px, py)
        for px, py in zip(lx[::-1].tolist(), ly[::-1].tolist()):
            path.lineTo(px, py)
        path.closeSubpath()
    return path


def stepped(c) -> tuple[np.ndarray, np.ndarray]:
    """(x of each point drawn, the record it stands for): the records, and at each change of frozen state
    (`Curve.step_x`) two points more at the change's x, the record before and the record after, so the curve
    holds its level to the freeze and drops there, the window's rule (app/plots/update_stretches.py). Joined
    straight, a variable frozen at 150 with records at 133 and 166 sloped from its level at 133 to the "0" at
    166, across the freeze's marker."""
    n = len(c.x)
    rec = np.arange(n)
    if c.step_x is None or c.frozen is None:
        return c.x, rec
    idx = np.flatnonzero(np.isfinite(c.step_x[:n]))
    at = np.repeat(idx, 2)
    return np.insert(c.x, at, c.step_x[at]), np.insert(rec, at, np.column_stack([idx - 1, idx]).ravel())


def layers(panel) -> list[list[tuple]]:
    """(pen, x, y in axis units) per drawn line: raw behind smoothed behind frozen stretches."""
    th = panel.theme
    out: list[list[tuple]] = [[], [], []]
    for c in panel.plot.curves:
        if not len(c.steps):
            continue
        colour = th.colour(c.colour)
        frozen = c.frozen if c.frozen is not None and c.frozen.any() else None
        x, rec = stepped(c) if frozen is not None else (c.x, np.arange(len(c.x)))
        frozen = None if frozen is None else frozen[rec]
        live = np.ones(len(x), bool) if frozen is None else ~frozen
        sm = panel.ty(c.smoothed)[rec]
        if panel.show_raw and not c.is_band:  # a band stands for the seeds' spread: no raw copy behind it
            faint = th.tint(colour, th.raw_alpha)
            out[0].append((make_pen(faint, th.raw_width), x, np.where(live, panel.ty(c.values)[rec], np.nan)))
        out[1].append((make_pen(colour, th.line_width, DASHES[c.dash]), x, np.where(live, sm, np.nan)))
        if frozen is not None:  # joined to the live parts on both sides: at a change, the step's vertical
            near = frozen | np.r_[frozen[1:], False] | np.r_[False, frozen[:-1]]
            joined = np.where(frozen, panel.ty(c.values)[rec], sm)
            out[2].append((make_pen(QColor(th.muted), th.line_width, dots=True), x, np.where(near, joined, np.nan)))
    return out


def band_colour(panel, colour: int) -> QColor:
    c = QColor(panel.theme.colour(colour))
    c.setAlphaF(panel.theme.band_alpha)
    return c


def band_edges(panel, c) -> list[np.ndarray]:
    """A band's upper and lower edges (axis units) as lines to stroke; the lower one not where a log axis cuts
    it at its bottom (`band_low`): that is the axis, not the band's edge."""
    low = band_low(panel, c)
    if panel.plot.log_y:
        low = np.where(low > panel.yr[0], low, np.nan)
    return [panel.ty(c.high), low]


def band_low(panel, c) -> np.ndarray:
    """A band's lower edge in axis units. On a log axis it stops at the axis' bottom: a metric's spread can
    reach below what the measure ever was (or below 0: KID ± its std), and the axis is not stretched to it
    (that flattened the measure again), nor the band dropped where its edge has no logarithm."""
    lo = panel.ty(c.low)
    if not panel.plot.log_y:
        return lo
    return np.where(np.isfinite(c.low), np.fmax(lo, panel.yr[0]), np.nan)


def draw_curves(panel, p: QPainter) -> None:
    for c in panel.plot.curves:  # bands first, under every line
        if c.is_band and len(c.steps):
            path = band_path(panel, c.x, band_low(panel, c), panel.ty(c.high))
            if not path.isEmpty():
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(band_colour(panel, c.colour))
                p.drawPath(path)
    p.setBrush(Qt.BrushStyle.NoBrush)
    th = panel.theme
    for c in panel.plot.curves:  # each band's edges over every fill, so overlapping bands keep their extents
        if c.is_band and len(c.steps):
            p.setPen(make_pen(th.tint(th.colour(c.colour), th.band_edge_alpha), th.band_edge_width))
            for edge in band_edges(panel, c):
                path = line_path(panel, c.x, np.where(np.isfinite(c.low) & np.isfinite(c.high), edge, np.nan))
                if not path.isEmpty():
                    p.drawPath(path)
    for layer in layers(panel):
        for pen, x, y in layer:
            path = line_path(panel, x, y)
            if not path.isEmpty():
                p.setPen(pen)
                p.drawPath(path)

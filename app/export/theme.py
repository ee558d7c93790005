"""Colours and line weights for exported figures.

The paper theme uses the Okabe–Ito palette (Okabe & Ito 2008, "Color Universal Design"), which stays
distinguishable under the common forms of colour blindness and in greyscale print better than
default plotting palettes. Weights are in points at print size: ~1 pt data lines read well in a
journal column; axes a little lighter so the data dominate.
"""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor

OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
}

# Order matters: the first colours go to the first curves. Yellow is last on white paper (low contrast
# for thin lines); black is the 7th colour on paper and becomes light grey on the dark theme.
_PAPER_ORDER = ["blue", "vermillion", "bluish green", "orange", "reddish purple", "sky blue", "black", "yellow"]
_SCREEN_ORDER = ["sky blue", "orange", "bluish green", "yellow", "reddish purple", "vermillion", "blue"]

#: marker kind -> palette colour; control events stay grey so they never read as one of the curves,
#: alarms (NaN, leak) stand out in vermillion
MARKER_COLOURS = {"nan": "vermillion", "leak": "vermillion"}

FROZEN_DASH = [0.1, 2.2]  # dots, drawn with a round cap


@dataclass(frozen=True)
class Theme:
    name: str
    background: str
    foreground: str  # axes, ticks, text
    muted: str  # reference lines, frozen curves, pause markers, legend frame
    grid: str
    marker_text: str  # marker labels: darker than their lines, to stay legible at 6 pt
    palette: tuple[str, ...]
    axis_width: float = 0.6
    tick_width: float = 0.5
    tick_length: float = 3.0
    line_width: float = 1.0
    raw_width: float = 0.5
    raw_alpha: float = 0.3
    marker_width: float = 0.6
    legend_frame_width: float = 0.4
    # a group of seeds' band: a translucent fill (the mean line stays the darkest thing, bands overlap visibly)
    # edged by a thin line of its colour, so where two settings' bands overlap each one's extent still shows
    band_alpha: float = 0.22
    band_edge_width: float = 0.4
    band_edge_alpha: float = 0.65  # the edge as an opaque tint (a translucent pen: see `tint`)

    def colour(self, i: int) -> QColor:
        return QColor(self.palette[i % len(self.palette)])

    def tint(self, colour: QColor, alpha: float) -> QColor:
        """`colour` at `alpha` over the background, as an opaque colour. Why not a translucent pen: Qt's PDF
        writer strokes a translucent line as filled outlines (~10x the bytes: a 3-run figure came to
        1.1 MB), while an opaque one stays a native PDF stroke."""
        bg = QColor(self.background)
        return QColor.fromRgbF(*(alpha * c + (1 - alpha) * b for c, b in
                                 zip(colour.getRgbF()[:3], bg.getRgbF()[:3])))

    def marker_colour(self, kind: str) -> QColor:
        name = MARKER_COLOURS.get(kind)
        return QColor(OKABE_ITO[name]) if name else QColor(self.muted)

    def marker_text_colour(self, kind: str) -> QColor:
        name = MARKER_COLOURS.get(kind)
        return QColor(OKABE_ITO[name]) if name else QColor(self.marker_text)


PAPER = Theme("paper", background="#FFFFFF", foreground="#000000", muted="#8C8C8C", grid="#E6E6E6",
              marker_text="#4D4D4D", palette=tuple(OKABE_ITO[n] for n in _PAPER_ORDER))
SCREEN = Theme("screen", background="#1C1C20", foreground="#D8D8D8", muted="#7A7A80", grid="#2E2E34",
               marker_text="#B4B4BA", palette=tuple(OKABE_ITO[n] for n in _SCREEN_ORDER) + ("#E0E0E0",))


def theme_named(name: str) -> Theme:
    return SCREEN if name == "screen" else PAPER

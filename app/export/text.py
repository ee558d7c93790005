"""Text at exact point sizes on any paint device.

Qt resolves a point-size font against the paint device's DPI (96 on screen, 1200 in a PDF, 72 in an
SVG), so the same figure would come out with different text sizes per format. Fonts here are set in
pixels of the figure's own coordinate system instead (1 unit = 1 pt), drawn at 10x and scaled down so
sizes like 7.5 pt work: the text is the same size, relative to the lines, in PNG, SVG, PDF and preview.
"""
from __future__ import annotations

from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QFont, QFontInfo, QFontMetricsF, QPainter

FONT_FAMILIES = ["Helvetica", "Arial", "Liberation Sans", "DejaVu Sans"]
_S = 10.0  # text is laid out at 10x, so font sizes have 0.1 pt resolution
_family: str | None = None


def font_family() -> str:
    """The first of FONT_FAMILIES this machine has. Named alone, so an SVG asks viewers for the font
    its text was measured with (PDFs embed it anyway)."""
    global _family
    if _family is None:
        probe = QFont()
        probe.setFamilies(FONT_FAMILIES)
        _family = QFontInfo(probe).family()
    return _family


class TextStyle:
    def __init__(self, size_pt: float, bold: bool = False, italic: bool = False) -> None:
        self.size = size_pt
        self.font = QFont()
        self.font.setFamilies([font_family()])
        self.font.setPixelSize(max(1, round(size_pt * _S)))
        self.font.setBold(bold)
        self.font.setItalic(italic)
        self.font.setHintingPreference(QFont.HintingPreference.PreferNoHinting)
        self.fm = QFontMetricsF(self.font)
        self.ascent = self.fm.ascent() / _S
        self.descent = self.fm.descent() / _S
        self.height = self.ascent + self.descent
        self.cap = self.fm.capHeight() / _S

    def width(self, s: str) -> float:
        return self.fm.horizontalAdvance(s) / _S

    def elide(self, s: str, width_pt: float) -> str:
        from PySide6.QtCore import Qt
        return self.fm.elidedText(s, Qt.TextElideMode.ElideRight, width_pt * _S)

    def draw(self, p: QPainter, x: float, y: float, s: str, colour: QColor, ha: str = "left",
             va: str = "baseline", rotation: float = 0.0) -> None:
        """Draw `s` anchored at (x, y): ha left|center|right, va baseline|top|center|bottom."""
        dx = {"left": 0.0, "center": -self.width(s) / 2, "right": -self.width(s)}[ha]
        dy = {"baseline": 0.0, "top": self.ascent, "center": self.cap / 2, "bottom": -self.descent}[va]
        p.save()
        p.translate(x, y)
        if rotation:
            p.rotate(rotation)
        p.scale(1 / _S, 1 / _S)
        p.setFont(self.font)
        p.setPen(colour)
        p.drawText(QPointF(dx * _S, dy * _S), s)
        p.restore()


class PowerLabel:
    """'10' with a raised, smaller exponent: tick labels of log axes."""

    def __init__(self, style: TextStyle) -> None:
        self.base = style
        self.sup = TextStyle(style.size * 0.72)

    def width(self, text: str, exponent: str) -> float:
        return self.base.width(text) + (self.sup.width(exponent) if exponent else 0.0)

    def draw(self, p: QPainter, x: float, y: float, text: str, exponent: str, colour: QColor,
             ha: str = "right") -> None:
        w = self.width(text, exponent)
        left = {"left": x, "center": x - w / 2, "right": x - w}[ha]
        self.base.draw(p, left, y, text, colour, va="center")
        if exponent:
            baseline = y + self.base.cap / 2
            self.sup.draw(p, left + self.base.width(text), baseline - self.base.cap * 0.62, exponent, colour)

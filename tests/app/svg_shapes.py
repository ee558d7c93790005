"""What an exported SVG draws, read back as a reader's eye sees it: texts at their page positions, and lines and
filled shapes with their stroke, dash and fill, in points (the figure's viewBox unit).

QSvgGenerator writes each piece of text in a group whose `transform` places it (text.py draws at 10x and scales
down), and lines as `polyline`s or `path`s; here every group's matrix is applied, so a test compares positions
on the page, not attributes.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

NS = "{http://www.w3.org/2000/svg}"
Matrix = tuple[float, float, float, float, float, float]
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


@dataclass
class Text:
    text: str
    x: float  # the anchor (start of the baseline) on the page, pt
    y: float
    size: float  # font size on the page, pt
    rotated: bool
    fill: str
    #: the baseline's direction on the page (a unit vector): (1, 0) upright, (0, -1) a y label read upwards
    direction: tuple[float, float] = (1.0, 0.0)
    bold: bool = False


@dataclass
class Shape:
    points: list[tuple[float, float]]  # on the page, pt
    stroke: str
    width: float
    dashed: bool
    fill: str  # "none", or the colour a closed shape is filled with
    fill_opacity: float

    @property
    def xs(self) -> list[float]:
        return [p[0] for p in self.points]

    @property
    def ys(self) -> list[float]:
        return [p[1] for p in self.points]


def _compose(m: Matrix, n: Matrix) -> Matrix:
    a, b, c, d, e, f = m
    a2, b2, c2, d2, e2, f2 = n
    return (a * a2 + c * b2, b * a2 + d * b2, a * c2 + c * d2, b * c2 + d * d2, a * e2 + c * f2 + e, b * e2 + d * f2 + f)


def _apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    a, b, c, d, e, f = m
    return a * x + c * y + e, b * x + d * y + f


def _matrix(el: ET.Element) -> Matrix:
    t = el.get("transform", "")
    found = re.search(r"matrix\(([^)]*)\)", t)
    return tuple(float(v) for v in re.split(r"[ ,]+", found.group(1).strip())) if found else IDENTITY


def _path_points(d: str) -> list[tuple[float, float]]:
    """The vertices of an SVG path made of M/L (and C end points), as Qt writes them."""
    nums = re.findall(r"([MLC])([^MLCZz]*)", d)
    out = []
    for cmd, args in nums:
        vals = [float(v) for v in re.findall(r"-?[0-9.]+(?:e-?[0-9]+)?", args)]
        pairs = list(zip(vals[::2], vals[1::2]))
        out += pairs[-1:] if cmd == "C" else pairs
    return out


def read(data: bytes) -> tuple[list[Text], list[Shape]]:
    """Every text and every line or shape of the SVG, on the page."""
    texts: list[Text] = []
    shapes: list[Shape] = []

    def walk(el: ET.Element, m: Matrix, style: dict[str, str]) -> None:
        m = _compose(m, _matrix(el))
        style = {**style, **{k: v for k, v in el.attrib.items() if k in (
            "stroke", "stroke-width", "stroke-dasharray", "fill", "fill-opacity", "font-size", "font-weight")}}
        tag = el.tag.removeprefix(NS)
        if tag == "text":
            x, y = _apply(m, float(el.get("x", 0)), float(el.get("y", 0)))
            scale = (m[0] ** 2 + m[1] ** 2) ** 0.5
            texts.append(Text(el.text or "", x, y, float(style.get("font-size", 0)) * scale, abs(m[1]) > 1e-6,
                              el.get("fill", style.get("fill", "")), (m[0] / scale, m[1] / scale),
                              int(el.get("font-weight", style.get("font-weight", "400"))) >= 600))
        elif tag in ("polyline", "path", "polygon"):
            if tag == "path":
                pts = _path_points(el.get("d", ""))
            else:
                vals = [float(v) for v in re.findall(r"-?[0-9.]+(?:e-?[0-9]+)?", el.get("points", ""))]
                pts = list(zip(vals[::2], vals[1::2]))
            scale = (m[0] ** 2 + m[1] ** 2) ** 0.5
            own = {**style, **el.attrib}
            shapes.append(Shape([_apply(m, x, y) for x, y in pts], own.get("stroke", "none"),
                                float(own.get("stroke-width", 1)) * scale, "stroke-dasharray" in own,
                                own.get("fill", "none"), float(own.get("fill-opacity", 1))))
        for child in el:
            walk(child, m, style)

    walk(ET.fromstring(data), IDENTITY, {})
    return texts, shapes


def vertical(s: Shape, tol: float = 0.01) -> bool:
    return len(s.points) == 2 and abs(s.points[0][0] - s.points[1][0]) < tol and abs(s.points[0][1] - s.points[1][1]) > tol


def horizontal(s: Shape, tol: float = 0.01) -> bool:
    return len(s.points) == 2 and abs(s.points[0][1] - s.points[1][1]) < tol and abs(s.points[0][0] - s.points[1][0]) > tol

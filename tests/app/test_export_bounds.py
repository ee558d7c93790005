"""Every text of an exported figure lies on the page: each text element's box (measured in the font it was drawn
with) inside the SVG's viewBox, for one real run (losses on a log axis, the updates' log axis), a sweep's seeds
drawn as bands with their markers, and narrow single-column sizes. A tick label at the figure's edge was cut
("3" of a "300" past the right edge)."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from app.export import Figure, svg_bytes
from app.export.text import TextStyle
from training_core.figures import FigureSpec
from training_core.runs import read_run
from tests.app import svg_shapes as svg


def box(t: svg.Text) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of a text on the page; a rotated one (an axis label) reads upwards."""
    style = TextStyle(t.size)
    if t.rotated:
        return t.x - style.ascent, t.y - style.width(t.text), t.x + style.descent, t.y
    return t.x, t.y - style.ascent, t.x + style.width(t.text), t.y + style.descent


def outside(data: bytes) -> list[tuple[str, tuple[float, ...]]]:
    x0, y0, w, h = (float(v) for v in ET.fromstring(data).get("viewBox").split())
    texts, _ = svg.read(data)
    assert texts
    out = []
    for t in texts:
        b = box(t)
        if b[0] < x0 - 0.01 or b[1] < y0 - 0.01 or b[2] > x0 + w + 0.01 or b[3] > y0 + h + 0.01:
            out.append((t.text, tuple(round(v, 2) for v in b)))
    return out


FIGURES = {
    "one run, log losses": dict(plots=["losses", "updates"], log_losses=True, width_in=3.5, height_in=3.2),
    "one run, double column": dict(plots=["losses", "updates"], width_in=7.16, height_in=3.0),
    "one run, updates alone": dict(plots=["updates"], width_in=3.5, height_in=2.6),
    "seeds as bands": dict(plots=["losses", "updates", "metrics"], bands="minmax", markers="all", width_in=7.16,
                           height_in=4.5),
    "seeds as bands, narrow": dict(plots=["losses"], bands="sd", log_losses=True, markers="all", width_in=3.5,
                                   height_in=2.8),
}


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_text_lies_inside_the_page(qapp, ring_dir, steered_runs, name):
    spec = FigureSpec(**FIGURES[name])
    if "seeds" in name:
        runs = [(d.name, read_run(d)) for d in steered_runs["steered"] + steered_runs["ratio"]]
    else:
        runs = [("ring", read_run(ring_dir))]
    data = svg_bytes(Figure(runs, spec))
    assert outside(data) == []

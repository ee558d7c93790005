"""Axis ranges, tick positions and tick labels for printed figures.

Kept apart from the painting so the numeric rules (nice 1-2-2.5-5 steps, decades on log axes, 20k
instead of 20000) can be reasoned about and tested without Qt.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from app.log_decades import two_decades  # noqa: F401 (one rule for the window's log axes and the figures')

MINUS = "\u2212"  # a real minus sign: a hyphen looks too short in print


@dataclass
class Tick:
    value: float  # in axis units (log10 of the data on log axes)
    text: str = ""  # "" = minor tick, no label
    exponent: str = ""  # drawn as a superscript after text (10 with exponent -3)


def linear_range(lo: float, hi: float, pad: float = 0.04) -> tuple[float, float]:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return 0.0, 1.0
    if hi <= lo:
        d = abs(lo) * 0.1 or 1.0
        return lo - d, hi + d
    d = (hi - lo) * pad
    return lo - d, hi + d


def step_range(first: int, last: int) -> tuple[float, float]:
    """Steps start at 0 unless the data start far from it (a resumed run)."""
    lo = 0.0 if first <= 0.25 * max(last, 1) else float(first)
    return (lo, float(last)) if last > lo else (lo, lo + 1.0)


def tick_spacing(span: float, max_ticks: int) -> float:
    """The distance between ticks: 1, 2, 2.5 or 5 times a power of ten, so that `span` holds about `max_ticks` or fewer."""
    raw = span / max(max_ticks, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if m * mag >= raw * (1 - 1e-9):
            return m * mag
    return 10.0 * mag


def _decimals(spacing: float) -> int:
    for d in range(0, 12):
        if abs(round(spacing, d) - spacing) <= 1e-9 * max(spacing, 1e-300):
            return d
    return 12


def linear_ticks(lo: float, hi: float, max_ticks: int, steps_axis: bool = False, compact: bool = False,
                 scientific: bool = False) -> list[Tick]:
    """Ticks at a nice spacing; on a step axis 20000 reads 20k (from 1e4, or from 1e3 when `compact`), and
    steps are whole (a 2-step run had ticks at 1.2, 1.4, ...); with `scientific` (a y axis, which draws
    `Tick.exponent`), values from 1e6 or below 1e-3 read as multiples of one power of ten (a diverged
    loss's 1e24 was written out in 25 digits)."""
    spacing = tick_spacing(hi - lo, max_ticks)
    if steps_axis:
        spacing = max(spacing, 1.0)
    scale, suffix, exponent = 1.0, "", ""
    big = max(abs(lo), abs(hi))
    if steps_axis and big >= (1e3 if compact else 1e4):
        scale, suffix = (1e6, "M") if big >= 1e7 else (1e3, "k")
    elif scientific and big > 0 and (big >= 1e6 or big < 1e-3):
        e = math.floor(math.log10(big))
        scale, suffix, exponent = 10.0 ** e, "×10", str(e).replace("-", MINUS)
    d = _decimals(spacing / scale)
    first = math.ceil(lo / spacing - 1e-9)
    ticks = []
    for i in range(first, first + 1000):
        v = i * spacing
        if v > hi + 1e-9 * spacing:
            break
        text = f"{v / scale:.{d}f}"
        if float(text) == 0:  # zero in any unit (no 0k, no 0×10⁵, no −0.0), with the axis's decimals: 0.0 beside
            text, sfx, exp = f"{0:.{d}f}", "", ""  # 0.5 and 1.0 (a "0" there read as another precision)
        else:
            sfx, exp = suffix, exponent
        ticks.append(Tick(v, text.replace("-", MINUS) + sfx, exp))
    return ticks


def whole_ticks(ticks: list[Tick]) -> list[Tick]:
    """The ticks at whole numbers, for a count (modes covered: no tick at 0.5 of a mode), labelled without the
    decimals the spacing before had given them all (1, 2, 3, not 1.0, 2.0, 3.0); every tick when none is whole."""
    whole = [t for t in ticks if float(t.value).is_integer()]
    if not whole:
        return ticks
    if all(re.fullmatch(r"[0-9\u2212]+\.0+", t.text) for t in whole):
        whole = [Tick(t.value, t.text.split(".")[0], t.exponent) for t in whole]
    return whole


def log_range(lo: float, hi: float) -> tuple[float, float]:
    """log10 range covering at least one whole decade, padded by 5% of the span."""
    if not (lo > 0 and hi > 0 and math.isfinite(lo) and math.isfinite(hi)):
        return -8.0, 0.0
    a, b = math.log10(lo), math.log10(hi)
    if b - a < 1.0:
        a, b = math.floor(a), max(math.ceil(b), math.floor(a) + 1)
    pad = (b - a) * 0.05
    return a - pad, b + pad


def log_ticks(a: float, b: float, max_labels: int) -> list[Tick]:
    """Decades (labelled 10^k, every n-th if crowded, but never fewer than two labelled when the span holds two)
    and, on short spans, unlabelled 2..9 minors."""
    lo, hi = math.ceil(a - 1e-9), math.floor(b + 1e-9)
    decades = list(range(lo, hi + 1))
    every = max(1, math.ceil(len(decades) / max(max_labels, 1)))
    labelled = {k for k in decades if k % every == 0}
    if len(labelled) < 2 and len(decades) >= 2:  # crowded: the lowest and the highest still say the scale
        labelled = {decades[0], decades[-1]}
    ticks = []
    for k in decades:
        if k in labelled:
            ticks.append(Tick(float(k), "10", str(k).replace("-", MINUS)))
        else:
            ticks.append(Tick(float(k)))
    if hi - lo <= 6:
        for k in range(lo - 1, hi + 1):
            for m in range(2, 10):
                v = k + math.log10(m)
                if a <= v <= b:
                    ticks.append(Tick(v))
    return ticks

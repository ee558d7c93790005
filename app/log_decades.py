"""How much a log axis must span: two labelled decades at least, for the window's plots and the printed figures.

Why one module: one "10⁻³" alone (or the window's 2, 3, ... 9 with no decade at all) does not say how far apart
the ticks are, so every log axis holds two powers of ten. The export (app/export/panel.py) widens its range by
this rule and the window's log axes (app/plots/axes.py) widen their view by it; Qt-free, so it is tested alone.
"""
from __future__ import annotations

import math


def two_decades(lo: float, hi: float) -> tuple[float, float]:
    """(lo, hi), positive, widened to hold at least two powers of ten, so a log axis has two labelled decades
    to read its scale from (one "10⁻³" alone does not say how far apart the ticks are): by the nearer decade
    when one is inside, by the decades on either side when none is."""
    a, b = math.log10(lo), math.log10(hi)
    k0, k1 = math.ceil(a - 1e-9), math.floor(b + 1e-9)
    if k1 < k0:  # within one decade
        a, b = min(a, math.floor(a)), max(b, math.floor(a) + 1)
    elif k1 == k0:
        if a - (k0 - 1) <= (k0 + 1) - b:
            a = k0 - 1
        else:
            b = k0 + 1
    return 10.0 ** a, 10.0 ** b

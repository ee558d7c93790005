"""Numbers as a printed figure writes them, shared by the window's axes and the window's sweep table.

Why one place: the window's update axis ("10⁻³") and the sweep table's cells ("1.20×10⁻⁵") each had a copy of
the same superscript table; a digit mapped differently in one would print one exponent two ways on one screen.
"""
from __future__ import annotations

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def superscript(n: int) -> str:
    """`n` in superscript digits: -3 -> "⁻³"."""
    return str(n).translate(_SUPERSCRIPT)

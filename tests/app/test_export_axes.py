"""Tick labels of printed figures (app/export/axes.py): the numeric rules, without Qt."""
from __future__ import annotations

import pytest

from app.export.axes import MINUS, linear_ticks


@pytest.mark.parametrize("lo, hi, kw, labels, exponent", [
    (0.0, 1.0, {}, ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"], ""),  # one number of decimals: it read 0, 0.2, ...
    (-1.0, 1.0, {}, [f"{MINUS}1.0", f"{MINUS}0.5", "0.0", "0.5", "1.0"], ""),
    (1.0, 2.0, {"steps_axis": True}, ["1", "2"], ""),  # a 2-step run: whole steps only (it read 1.2, 1.4, ...)
    (0.0, 20000.0, {"steps_axis": True}, ["0", "5k", "10k", "15k", "20k"], ""),
    (0.0, 1.3e22, {"scientific": True}, ["0.0", "0.5×10", "1.0×10"], "22"),  # was written out in 23 digits
    (0.0, 4e-5, {"scientific": True}, ["0", "1×10", "2×10", "3×10", "4×10"], f"{MINUS}5"),
    (-2e6, 2e6, {"scientific": True}, [f"{MINUS}2×10", f"{MINUS}1×10", "0", "1×10", "2×10"], "6"),
    (0.0, 1.3e22, {}, None, ""),  # an x axis (it draws no exponent) never gets the ×10 form
])
def test_tick_labels(lo, hi, kw, labels, exponent):
    ticks = linear_ticks(lo, hi, 5, **kw)
    if labels is None:
        assert not any("×" in t.text or t.exponent for t in ticks)
        return
    assert [t.text for t in ticks] == labels
    assert {t.exponent for t in ticks if t.value != 0} == {exponent}
    assert not [t for t in ticks if t.value == 0 and (t.exponent or t.text.strip("0.") != "")]  # zero is zero


def test_a_count_axis_keeps_its_whole_ticks_without_decimals():
    """A count's axis (modes covered) drops the ticks between whole numbers; the ones kept read 0, 1, 2 and not
    the 0.0, 1.0, 2.0 of the spacing they were made with, and an axis with no whole tick keeps them all."""
    from app.export.axes import whole_ticks
    assert [t.text for t in whole_ticks(linear_ticks(0.0, 2.0, 5))] == ["0", "1", "2"]
    assert [t.text for t in whole_ticks(linear_ticks(0.0, 8.0, 5))] == ["0", "2", "4", "6", "8"]
    assert [t.text for t in whole_ticks(linear_ticks(0.1, 0.4, 4))] == ["0.1", "0.2", "0.3", "0.4"]


@pytest.mark.parametrize("lo, hi, decades", [
    (4e-4, 9e-4, [-4, -3]),  # within one decade: the decades on either side
    (6e-4, 1.5e-3, [-4, -3]),  # one decade inside, the nearer one added
    (8e-4, 4e-3, [-3, -2]),
    (1e-6, 1e-1, [-6, -5, -4, -3, -2, -1]),  # wide enough already: unchanged
])
def test_a_log_axis_spans_two_decades_and_labels_two(lo, hi, decades):
    """An update plot of three runs had one labelled tick, 10⁻³: no scale can be read from one."""
    from app.export.axes import log_range, log_ticks, two_decades
    a, b = two_decades(lo, hi)
    assert a <= lo * (1 + 1e-12) and b >= hi * (1 - 1e-12)
    ticks = log_ticks(*log_range(a, b), 1)  # room for one label only
    labelled = [round(t.value) for t in ticks if t.text == "10"]
    assert len(labelled) >= 2 and set(labelled) <= set(decades)
    if len(decades) == 2:
        assert labelled == decades

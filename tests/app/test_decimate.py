"""Peak decimation from a block pyramid: every point inside its chunk's envelope, the same result
whether the series arrived at once or in pieces, and the work bounded by the screen, not the run."""
from __future__ import annotations

import numpy as np
import pytest

from app.plots.decimate import PeakPyramid


def brute_envelope(x, y, i0, i1, d):
    """Min and max of each aligned chunk of d points overlapping [i0, i1), from the points themselves."""
    out = []
    for c in range(i0 // d, -(-i1 // d)):
        seg = y[c * d:min((c + 1) * d, i1)]
        out.append((x[c * d], np.nanmax(seg) if np.isfinite(seg).any() else np.nan,
                    np.nanmin(seg) if np.isfinite(seg).any() else np.nan))
    return out


@pytest.mark.parametrize("per_chunk", [1.2, 3, 8, 64, 100, 700, 5000])
def test_view_is_the_exact_peak_envelope_of_aligned_chunks(per_chunk):
    rng = np.random.default_rng(1)
    n = 50_003
    x = np.arange(n, dtype=np.int64) * 2 + 7
    y = rng.normal(size=n).cumsum()
    y[rng.integers(0, n, 40)] = np.nan
    pyr = PeakPyramid()
    pyr.extend(y)
    i0, i1 = 1234, 48_765
    xo, yo = pyr.view(x, y, i0, i1, per_chunk)
    assert xo[-1] == x[i1 - 1] and (yo[-1] == y[i1 - 1] or np.isnan(y[i1 - 1]))  # ends on the newest point
    if per_chunk < 2:
        np.testing.assert_array_equal(xo, x[i0:i1])
        return
    d = 1 << int(round(np.log2(per_chunk)))
    want = brute_envelope(x, y, i0, i1, d)
    assert len(xo) == 2 * len(want) + 1
    np.testing.assert_array_equal(xo[0:-1:2], [w[0] for w in want])
    np.testing.assert_array_equal(yo[0:-1:2], [w[1] for w in want])
    np.testing.assert_array_equal(yo[1:-1:2], [w[2] for w in want])
    # nothing is dropped: every finite point in view lies within the drawn range of its chunk
    for c, (_, hi, lo) in zip(range(i0 // d, -(-i1 // d)), want):
        seg = y[max(c * d, i0):min((c + 1) * d, i1)]
        seg = seg[np.isfinite(seg)]
        assert not len(seg) or (lo <= seg.min() and seg.max() <= hi)


def test_growing_in_pieces_equals_building_at_once():
    rng = np.random.default_rng(2)
    y = rng.normal(size=123_457)
    x = np.arange(len(y))
    whole = PeakPyramid()
    whole.extend(y)
    pieces = PeakPyramid()
    at = 0
    while at < len(y):
        at = min(len(y), at + int(rng.integers(1, 5000)))
        pieces.extend(y[:at])
        if at > 10_000:  # compare views while it grows: the unfinished blocks come from the points
            a = pieces.view(x, y[:at], 0, at, 300)
            b = PeakPyramid()
            b.extend(y[:at])
            np.testing.assert_array_equal(a[1], b.view(x, y[:at], 0, at, 300)[1])
    for per_chunk in (16, 256, 4096):
        np.testing.assert_array_equal(pieces.view(x, y, 0, len(y), per_chunk)[1],
                                      whole.view(x, y, 0, len(y), per_chunk)[1])


def test_a_view_costs_the_screen_not_the_run():
    """Counted, not timed: the values a view reads from the pyramid stay near the pixel count."""
    y = np.random.default_rng(3).normal(size=2_000_000)
    x = np.arange(len(y))
    pyr = PeakPyramid()
    pyr.extend(y)
    per_chunk = len(y) / 1000  # 1000 pixel columns
    xo, _ = pyr.view(x, y, 0, len(y), per_chunk)
    assert 1400 <= len(xo) <= 2 * 1500 + 1  # one min and one max per chunk, ~1 chunk per column
    d = 1 << int(round(np.log2(per_chunk)))
    level = min(int(np.log2(d)) // 3, len(pyr._lens))
    assert 8 ** level >= d // 8  # read from a level whose blocks are at least 1/8 of a chunk


def test_a_shorter_series_is_a_new_series():
    pyr = PeakPyramid()
    pyr.extend(np.arange(1000.0))
    pyr.extend(np.full(100, 5.0))  # a new run restarted the curve
    xo, yo = pyr.view(np.arange(100), np.full(100, 5.0), 0, 100, 8)
    assert set(yo) == {5.0}

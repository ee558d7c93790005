"""Peak decimation in time proportional to the screen, not to the run.

pyqtgraph's peak downsampling reshapes every visible point on every refresh: with 10^6 steps in view
that is a pass over 10^6 values per curve, 25 times a second, on the GUI thread that also paints, and
the report reader thread waits for the GIL meanwhile. `PeakPyramid` keeps the min and max of blocks of
8, 64, 512, ... points, extended only by the points that arrived since the last refresh, so a view
of any width is cut from the coarsest level that still gives at least one chunk per pixel column:
a few thousand values per curve, whatever the length of the run.

Chunks are aligned to multiples of their size (a power of two), so scrolling the newest step into
view does not reshuffle the envelope of old steps between frames. Nothing is dropped: every point
is inside the min/max of its chunk, and the newest point is drawn as itself so the curve reaches
the current step. NaN is ignored within a chunk (np.fmin/np.fmax); an all-NaN chunk stays a gap.
"""
from __future__ import annotations

import numpy as np

BASE = 8  # points per block, level to level
_LOG2_BASE = 3


class PeakPyramid:
    """Block minima and maxima of an append-only series (the series itself is not copied)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.n = 0  # points of the series ingested
        self._mins: list[np.ndarray] = []  # level k+1: blocks of BASE**(k+1) points
        self._maxs: list[np.ndarray] = []
        self._lens: list[int] = []

    def extend(self, y: np.ndarray) -> None:
        """Take in `y[self.n:]`; `y[:self.n]` must be what was ingested before (the caller knows)."""
        if len(y) < self.n:
            self.reset()
        self.n = len(y)
        lo_src, hi_src = y, y
        level = 0
        while len(lo_src) >= BASE:
            if level == len(self._mins):
                self._mins.append(np.empty(64))
                self._maxs.append(np.empty(64))
                self._lens.append(0)
            have, avail = self._lens[level], len(lo_src) // BASE
            if avail > have:
                seg = slice(have * BASE, avail * BASE)
                new_lo = np.fmin.reduce(np.asarray(lo_src[seg], np.float64).reshape(-1, BASE), axis=1)
                new_hi = np.fmax.reduce(np.asarray(hi_src[seg], np.float64).reshape(-1, BASE), axis=1)
                self._append(level, new_lo, new_hi)
            lo_src, hi_src = self._mins[level][:avail], self._maxs[level][:avail]
            level += 1

    def _append(self, level: int, lo: np.ndarray, hi: np.ndarray) -> None:
        n, k = self._lens[level], len(lo)
        if n + k > len(self._mins[level]):  # amortised growth: capacity doubles
            cap = max(2 * len(self._mins[level]), n + k)
            for arrs in (self._mins, self._maxs):
                grown = np.empty(cap)
                grown[:n] = arrs[level][:n]
                arrs[level] = grown
        self._mins[level][n:n + k] = lo
        self._maxs[level][n:n + k] = hi
        self._lens[level] = n + k

    def view(self, x: np.ndarray, y: np.ndarray, i0: int, i1: int, per_chunk: float) -> tuple[np.ndarray, np.ndarray]:
        """The points to draw for indices [i0, i1) with about `per_chunk` points per chunk (the nearest
        power of two: 0.7 to 1.4 chunks per pixel column). Below two points per chunk: the points themselves."""
        i0, i1 = max(0, i0), min(i1, self.n, len(y))
        if i1 - i0 <= 0:
            return np.empty(0), np.empty(0)
        if per_chunk < 2:
            return np.asarray(x[i0:i1], np.float64), np.asarray(y[i0:i1], np.float64)
        d = 1 << int(round(np.log2(per_chunk)))  # chunk size: a power of two, changes only on doubling
        level = min(int(np.log2(d)) // _LOG2_BASE, len(self._lens))  # 0: raw points
        b = BASE ** level
        m = d // b  # blocks of that level per chunk
        c0, c1 = i0 // d, -(-i1 // d)
        # chunks complete in the level and ending inside the range; the rest come from the points
        if level:
            lo_all, hi_all = self._mins[level - 1], self._maxs[level - 1]
            full = min(i1 // d, self._lens[level - 1] // m)
        else:
            lo_all = hi_all = y
            full = i1 // d
        c_mid = max(c0, full)
        parts_lo, parts_hi = [], []
        if c_mid > c0:
            lo = np.asarray(lo_all[c0 * m:c_mid * m], np.float64).reshape(-1, m)
            hi = np.asarray(hi_all[c0 * m:c_mid * m], np.float64).reshape(-1, m)
            parts_lo.append(np.fmin.reduce(lo, axis=1))
            parts_hi.append(np.fmax.reduce(hi, axis=1))
        for c in range(c_mid, c1):  # the newest chunks, not yet in a block: from the points themselves
            seg = np.asarray(y[c * d:min((c + 1) * d, i1)], np.float64)
            parts_lo.append(np.array([np.fmin.reduce(seg)]))
            parts_hi.append(np.array([np.fmax.reduce(seg)]))
        lo, hi = np.concatenate(parts_lo), np.concatenate(parts_hi)
        n = len(lo)
        xs = np.asarray(x[np.arange(c0, c0 + n) * d], np.float64)
        out_x, out_y = np.empty(2 * n + 1), np.empty(2 * n + 1)
        out_x[0:-1:2] = xs
        out_x[1:-1:2] = xs
        out_y[0:-1:2] = hi
        out_y[1:-1:2] = lo
        out_x[-1], out_y[-1] = x[i1 - 1], y[i1 - 1]  # the curve ends on the newest point itself
        return out_x, out_y

"""Update magnitudes of many variables as a grid (variables × bins of steps), and the variables that
move most: the numbers behind the window's heat-map update view, without Qt.

Why a grid: a GAN has hundreds of variables, and hundreds of curves on one log axis are a tangle.
Each variable is a row, rows ordered by scope (`scope_order`: every model and layer one block, in the
order the model built them), and the steps are binned into columns. A column holds the geometric mean
of its records (the mean of log10 ‖ΔW‖/‖W‖, or of ‖ΔW‖) over those that are not exactly 0; a column
whose records are all exactly 0 is a zero cell, "frozen" if the core reported the variable frozen at
any of them, else "no update" (as the curves' "0 (frozen)" and "0 (no update)" floors). Nothing is
dropped to stay cheap: every record lands in its column's sums, added once as it arrives; when the
columns exceed `max_columns`, pairs of them are merged (sums add up, so merging is exact) and the
bins become twice as wide.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from training_core.runs.data import RunData

MAX_COLUMNS = 512
RECENT_ROWS = 20  # top movers: the mean of each variable's last this many records
ZERO_FROZEN, ZERO_FREE = 1, 2  # `HeatGrid.zero_state` codes (0: not a zero cell)


def scope_order(paths: Iterable[str]) -> list[str]:
    """`paths` grouped by scope, each scope where its first variable appeared: a model's layers stay in
    build order (dense_2 before dense_10) and every scope's variables are one contiguous block."""
    tree: dict = {}
    for p in paths:
        node = tree
        for part in p.split("/")[:-1]:
            node = node.setdefault(part + "/", {})
        node[p] = None
    out: list[str] = []

    def walk(node: dict) -> None:
        for key, child in node.items():
            if child is None:
                out.append(key)
            else:
                walk(child)

    walk(tree)
    return out


def scope_blocks(rows: Sequence[str], depth: int = 1) -> list[tuple[str, int, int]]:
    """(scope, first row, end row) of each run of consecutive `rows` sharing their first `depth` path
    parts (rows as `scope_order` gives them)."""
    out: list[tuple[str, int, int]] = []
    for i, p in enumerate(rows):
        scope = "/".join(p.split("/")[:depth])
        if out and out[-1][0] == scope:
            out[-1] = (scope, out[-1][1], i + 1)
        else:
            out.append((scope, i, i + 1))
    return out


class HeatGrid:
    """Sums per (row, column) of the records added so far; columns are bins of `width` x units (steps, or
    seconds), absolute column c covering [c·width, (c+1)·width), stored from column `c0` on."""

    def __init__(self, n_rows: int, width: float = 1.0, max_columns: int = MAX_COLUMNS) -> None:
        self.n_rows, self.width, self.max_columns = n_rows, float(width), max_columns
        self.c0 = 0
        # column, then (sum of log10, count > 0, zeros frozen, zeros not frozen), then row: a live tick adds to
        # its newest one or two columns, each one contiguous block (rows outermost, the 500 rows' strided adds
        # four times a phase were most of a wide tick's `add`)
        self._buf = np.zeros((0, 4, n_rows))
        self._n = 0  # columns in use; the buffer has room for more (a copy of it per new column was most of a
        # wide refresh)
        self._changed: tuple[int, int] | None = None  # stored columns [lo, hi) changed since `changes()`
        self._moved = True  # every column changed or moved (coarsened, shifted) since `changes()`

    @property
    def _sums(self) -> np.ndarray:
        """(4, rows, columns): a view of the buffer."""
        return self._buf[:self._n].transpose(1, 2, 0)

    def _set(self, sums: np.ndarray, room: int = 0) -> None:
        self._n = sums.shape[2]
        self._moved = True
        self._buf = np.concatenate([np.transpose(sums, (2, 0, 1)), np.zeros((room,) + sums.shape[:2])])

    @property
    def n_columns(self) -> int:
        return self._n

    def add(self, rows: np.ndarray, x: np.ndarray, values: np.ndarray, frozen: np.ndarray) -> None:
        """Records at x-positions `x` (n,) for grid rows `rows` (v,): `values`, `frozen` are (n, v)."""
        x = np.asarray(x, dtype=np.float64)
        if not len(x) or not len(rows):
            return
        v = np.asarray(values, dtype=np.float64)
        cols = np.floor(x / self.width).astype(np.int64)
        self._cover(int(cols.min()), int(cols.max()))
        cols = np.floor(x / self.width).astype(np.int64) - self.c0
        # only the columns the records fall in (a live tick's: the newest one or two), not the whole grid: a
        # bincount the size of 500 rows x 512 columns, four times a phase, was most of a wide refresh
        c_lo, c_hi = int(cols.min()), int(cols.max()) + 1
        span, n = c_hi - c_lo, self.n_rows
        pos = (v > 0) & np.isfinite(v)
        zero = v == 0
        f = np.asarray(frozen, dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.where(pos, np.log10(np.where(pos, v, 1.0)), 0.0)
        # one bincount for the four sums: index (column, sum, row), the buffer's order from column c_lo
        flat = ((cols - c_lo)[None, :, None] * (4 * n) + np.arange(4)[:, None, None] * n
                + np.asarray(rows, dtype=np.int64)[None, None, :]).ravel()
        weights = np.stack([logs, pos, zero & f, zero & ~f]).astype(np.float64).ravel()
        self._mark(c_lo, c_hi)
        self._buf[c_lo:c_hi] += np.bincount(flat, weights=weights, minlength=span * 4 * n).reshape(span, 4, n)

    def _cover(self, lo: int, hi: int) -> None:
        """Make room for absolute columns lo..hi, halving the resolution while there are too many."""
        while True:
            first = min(self.c0, lo) if self.n_columns else lo
            last = max(self.c0 + self.n_columns - 1, hi) if self.n_columns else hi
            if last - first + 1 <= self.max_columns:
                break
            self._coarsen()
            lo, hi = lo // 2, hi // 2
        if not self.n_columns:
            self.c0 = first
            self._set(np.zeros((4, self.n_rows, last - first + 1)), room=self.max_columns - (last - first + 1))
            return
        left, right = self.c0 - first, last - (self.c0 + self.n_columns - 1)
        if left:  # earlier than the first column (rare: runs aligned by time)
            self._set(np.pad(self._sums, ((0, 0), (0, 0), (left, right))), room=self.max_columns)
            self.c0 = first
        elif right:
            if self._n + right > self._buf.shape[0]:
                self._set(self._sums, room=max(right, self._n))
            self._buf[self._n:self._n + right] = 0.0
            self._mark(self._n, self._n + right)
            self._n += right

    def _mark(self, lo: int, hi: int) -> None:
        self._changed = (lo, hi) if self._changed is None else (min(lo, self._changed[0]), max(hi, self._changed[1]))

    def changes(self) -> tuple[int, int]:
        """The stored columns [lo, hi) that changed since the last call (every column after a merge or a shift:
        they moved), so that a view redraws only those: a live tick's records land in the newest one or two."""
        got = (0, self._n) if self._moved else (self._changed or (0, 0))
        self._changed, self._moved = None, False
        return got

    def _coarsen(self) -> None:
        """Twice as wide bins: column c goes to c // 2 (exact: the sums add up)."""
        new_c0 = self.c0 // 2
        lead = self.c0 % 2  # an odd first column pairs with an empty one before it
        tail = (lead + self.n_columns) % 2
        padded = np.pad(self._sums, ((0, 0), (0, 0), (lead, tail)))
        merged = padded.reshape(4, self.n_rows, -1, 2).sum(axis=3)
        self._set(merged, room=self.max_columns - merged.shape[2] + 1)
        self.c0, self.width = new_c0, self.width * 2

    def widen_to(self, spacing: float) -> None:
        """Bins at least `spacing` wide (the records' spacing), so no column between two records is empty."""
        while self.width < spacing:
            if self.n_columns:
                self._coarsen()
            else:
                self.width *= 2

    def log_means(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """(rows, columns lo..hi) mean of log10 over the records > 0; NaN where there are none."""
        s, n = self._sums[0][:, lo:hi], self._sums[1][:, lo:hi]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(n > 0, s / np.where(n > 0, n, 1), np.nan)

    def zero_state(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """(rows, columns lo..hi): ZERO_FROZEN or ZERO_FREE where every record was exactly 0, else 0."""
        n, zf, zn = (self._sums[i][:, lo:hi] for i in (1, 2, 3))
        out = np.zeros(n.shape, dtype=np.int8)
        zero = (n == 0) & (zf + zn > 0)
        out[zero & (zf > 0)] = ZERO_FROZEN
        out[zero & (zf == 0)] = ZERO_FREE
        return out

    def column_span(self, col: int) -> tuple[float, float]:
        """[start, end) in x units of stored column `col`."""
        return ((self.c0 + col) * self.width, (self.c0 + col + 1) * self.width)

    def column_at(self, x: float) -> int | None:
        c = math.floor(x / self.width) - self.c0
        return c if 0 <= c < self.n_columns else None


def record_spacing(x: np.ndarray, tail: int = 16) -> float:
    """The usual distance between a phase's recent records (0 with fewer than two)."""
    recent = np.asarray(x[-tail:], dtype=np.float64)
    return float(np.median(np.diff(recent))) if len(recent) > 1 else 0.0


def top_movers(runs: Sequence[RunData], paths: Sequence[str], kind: str = "update_ratio", k: int = 8,
               recent: int = RECENT_ROWS, keep: Sequence[str] = ()) -> list[str]:
    """The `k` variables of `paths` with the largest mean `kind` over their last `recent` records (the
    largest over `runs`), largest first; variables that did not move at all, or are frozen now (their
    recent mean still holds the records before the freeze), are never among them.

    `keep`: the movers shown so far; one stays while it is still among the top 2·k, so that two variables
    of about the same size do not swap curves at every refresh."""
    wanted = set(paths)
    scores: dict[str, float] = {}
    for data in runs:
        for phase in data.var_phases:
            names, _, _, values, frozen = data.var_block(phase, kind)
            tail = np.asarray(values[-recent:], dtype=np.float64)
            if not len(tail):
                continue
            with np.errstate(invalid="ignore"):
                means = np.nanmean(np.where(np.isfinite(tail), tail, np.nan), axis=0)
            # the moving, not frozen ones first, with numpy: a Python pass over every variable was most of a
            # wide refresh's ranking (500 variables: ~1 ms)
            live = np.flatnonzero((means > 0) & ~np.asarray(frozen[-1], dtype=bool))
            for j, m in zip(live.tolist(), means[live].tolist()):
                p = names[j]
                if p in wanted and data.phase_of(p) == phase:
                    scores[p] = max(scores.get(p, 0.0), m)
    order = {p: i for i, p in enumerate(paths)}
    names = list(scores)
    value = np.fromiter(scores.values(), dtype=np.float64, count=len(names))
    place = np.fromiter((order[p] for p in names), dtype=np.int64, count=len(names))
    ranked = [names[i] for i in np.lexsort((place, -value))[:2 * k].tolist()]  # by (-score, order): the top 2·k
    # are all the choice below reads (`held` are among them, and at least k others)
    held = [p for p in keep if p in ranked][:k]
    chosen = held + [p for p in ranked if p not in held][:k - len(held)]
    return sorted(chosen, key=lambda p: (-scores[p], order[p]))


def cell_records(data: RunData, path: str, kind: str, x: np.ndarray, lo: float, hi: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(values, frozen) of `path`'s records whose x (one per record, as `x`) lies in [lo, hi)."""
    _, _, v = data.var_series(path, kind)
    f = data.frozen_series(path)
    n = min(len(x), len(v), len(f))
    keep = (x[:n] >= lo) & (x[:n] < hi)
    return np.asarray(v[:n][keep], dtype=np.float64), np.asarray(f[:n][keep], dtype=bool)

"""The numbers behind the heat-map update view (training_core/runs/heat.py): rows by scope, binning that
drops nothing (incremental = all at once, merged bins = bins built twice as wide), zero cells that say
frozen or no update, and the top movers of known data."""
from __future__ import annotations

import numpy as np
import pytest

from training_core import MetricsBatch, PhaseBlock
from training_core.runs import RunData
from training_core.runs.heat import ZERO_FREE, ZERO_FROZEN, HeatGrid, scope_blocks, scope_order, top_movers


def test_scope_order_keeps_build_order_and_makes_each_scope_a_block():
    paths = ["g/dense_2/kernel", "d/dense_1/kernel", "g/dense_10/kernel", "g/dense_2/bias", "d/dense_1/bias", "g/x"]
    rows = scope_order(paths)
    assert rows == ["g/dense_2/kernel", "g/dense_2/bias", "g/dense_10/kernel", "g/x", "d/dense_1/kernel",
                    "d/dense_1/bias"]
    assert scope_blocks(rows) == [("g", 0, 4), ("d", 4, 6)]
    assert scope_blocks(rows, 2)[:2] == [("g/dense_2", 0, 2), ("g/dense_10", 2, 3)]


def _records(seed: int, n: int, v: int):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.choice(np.arange(1, 20_000), n, replace=False)).astype(np.float64)
    values = 10.0 ** rng.uniform(-6, -1, (n, v))
    values[rng.random((n, v)) < 0.2] = 0.0
    frozen = (values == 0) & (rng.random((n, v)) < 0.5)
    return x, values, frozen


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adding_in_chunks_and_merging_bins_equals_one_pass_at_the_final_width(seed):
    x, values, frozen = _records(seed, 700, 5)
    rows = np.arange(5)
    grown = HeatGrid(5, width=1.0, max_columns=64)
    for lo in range(0, len(x), 37):
        grown.add(rows, x[lo:lo + 37], values[lo:lo + 37], frozen[lo:lo + 37])
    assert grown.n_columns <= 64 and grown.width > 1.0
    once = HeatGrid(5, width=grown.width, max_columns=10_000)
    once.add(rows, x, values, frozen)
    assert (once.c0, once.n_columns) == (grown.c0, grown.n_columns)
    np.testing.assert_allclose(grown.log_means(), once.log_means(), rtol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(grown.zero_state(), once.zero_state())
    # every record counted exactly once: the grid's counts add up to the records
    assert grown._sums[1:].sum() == len(x) * 5


def test_a_cell_is_the_geometric_mean_of_its_nonzero_records_and_zero_cells_say_why():
    g = HeatGrid(3, width=10.0)
    x = np.array([1.0, 5.0, 12.0])
    values = np.array([[1e-3, 0.0, 0.0], [1e-5, 0.0, 0.0], [2e-3, 0.0, 1e-4]])
    frozen = np.array([[False, True, False], [False, True, False], [False, True, False]])
    g.add(np.arange(3), x, values, frozen)
    means, zeros = g.log_means(), g.zero_state()
    assert means[0, 0] == pytest.approx(-4.0) and means[0, 1] == pytest.approx(np.log10(2e-3))
    assert zeros[1].tolist() == [ZERO_FROZEN, ZERO_FROZEN] and np.isnan(means[1]).all()
    assert zeros[2].tolist() == [ZERO_FREE, 0] and means[2, 1] == pytest.approx(-4.0)
    assert g.column_span(1) == (10.0, 20.0) and g.column_at(12.0) == 1 and g.column_at(25.0) is None


def test_widen_to_the_record_spacing_leaves_no_empty_column_between_records():
    g = HeatGrid(1, width=1.0)
    g.widen_to(25.0)
    x = np.arange(25.0, 2500.0, 25.0)
    g.add(np.array([0]), x, np.full((len(x), 1), 1e-3), np.zeros((len(x), 1), bool))
    assert g.width == 32.0 and np.isfinite(g.log_means()).all()


def _run(ratios: dict[str, np.ndarray], frozen: set[str] = frozenset()) -> RunData:
    data = RunData()
    paths = tuple(ratios)
    steps = np.arange(1, len(next(iter(ratios.values()))) + 1)
    r = np.stack([ratios[p] for p in paths], axis=1)
    f = np.array([[p in frozen for p in paths]] * len(steps))
    r = np.where(f, 0.0, r)
    data.add_batch(MetricsBatch([PhaseBlock("D", paths, steps, steps * 1.0, np.ones(len(steps)), r * 10, r, r,
                                            f, np.ones(len(steps), bool))]))
    return data


def test_top_movers_rank_by_the_recent_mean_and_skip_frozen_ones():
    n = 100
    early_big = np.r_[np.full(n - 20, 1.0), np.full(20, 1e-6)]  # moved a lot, but not recently
    ratios = {f"m/v{i}": np.full(n, 10.0 ** (-3 - i / 10)) for i in range(10)}
    ratios["m/early"] = early_big
    ratios["m/frozen"] = np.full(n, 1.0)
    data = _run(ratios, frozen={"m/frozen"})
    paths = list(ratios)
    assert top_movers([data], paths, k=3) == ["m/v0", "m/v1", "m/v2"]
    assert top_movers([data], paths, k=3, recent=n) == ["m/early", "m/v0", "m/v1"]
    # a mover shown before stays while it is still among the top 2k: no swapping at every refresh
    assert top_movers([data], paths, k=3, keep=["m/v4"]) == ["m/v0", "m/v1", "m/v4"]
    assert top_movers([data], paths, k=3, keep=["m/v7"]) == ["m/v0", "m/v1", "m/v2"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_changed_columns_are_every_column_that_changed(seed):
    """A view that recomputes only `changes()`' columns (app/plots/heatmap.py) keeps the grid's image: a
    mirror updated only there equals the whole grid after every add, through merges and a shift left."""
    x, values, frozen = _records(seed, 700, 5)
    rows = np.arange(5)
    grid = HeatGrid(5, width=1.0, max_columns=64)
    means, zeros, spans = np.zeros((5, 0)), np.zeros((5, 0), np.int8), []
    order = np.concatenate([np.arange(200, 700), np.arange(0, 200)])  # the last chunks before the first column
    chunks = [order[lo:lo + 23] for lo in range(0, len(x), 23)]
    chunks.insert(3, np.array([-1]))  # one record a few columns past the last: empty columns between
    x, values, frozen = (np.concatenate([a, a[-1:]]) for a in (x, values, frozen))
    x[-1] = x[order[68]] + 5 * 20_000 / 64
    for take in chunks:
        grid.add(rows, x[take], values[take], frozen[take])
        a, b = grid.changes()
        spans.append(b - a)
        n = grid.n_columns
        if (a, b) == (0, n):  # merged or shifted: all anew
            means, zeros = np.zeros((5, n)), np.zeros((5, n), np.int8)
        elif means.shape[1] < n:  # new columns on the right: among the changed ones
            assert b == n and a <= means.shape[1]
            means, zeros = (np.pad(m, ((0, 0), (0, n - m.shape[1]))) for m in (means, zeros))
        means[:, a:b], zeros[:, a:b] = grid.log_means(a, b), grid.zero_state(a, b)
        np.testing.assert_array_equal(means, grid.log_means())
        np.testing.assert_array_equal(zeros, grid.zero_state())
        assert grid.changes() == (0, 0)  # nothing since
    assert min(spans) < 64 // 4  # most adds change a few columns, not the grid

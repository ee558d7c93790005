"""Which look (colour, dash) each variable of the update panel gets (training_core/figures/styles.py): every
variable a look of its own while there are no more variables than looks, whatever the shape of the layers, and
past that no layer drawn as an earlier one; and the legend names what the plot draws."""
from __future__ import annotations

import pytest

from training_core.figures import DASHES, N_COLOURS, variable_styles

LEAVES = ["kernel", "bias", "gamma", "beta", "moving_mean"]


def layered(n_layers: int, n_leaves: int) -> list[str]:
    return [f"net/layer_{i}/{leaf}" for i in range(n_layers) for leaf in LEAVES[:n_leaves]]


@pytest.mark.parametrize("n_colours", [N_COLOURS, 12])  # the paper palette, the window's
@pytest.mark.parametrize("n_layers, n_leaves", [(12, 4), (16, 3), (10, 3), (6, 5), (16, 2), (8, 4), (24, 1)])
def test_every_variable_its_own_look_while_there_are_enough(n_layers, n_leaves, n_colours):
    paths = layered(n_layers, n_leaves)
    n_looks = n_colours * len(DASHES)
    if len(paths) > n_looks:
        pytest.skip("more variables than looks: test_no_layer_repeats_an_earlier_one")
    looks = variable_styles(paths, n_colours, len(DASHES))
    assert len(set(looks.values())) == len(paths), looks
    assert all(0 <= c < n_colours and 0 <= d < len(DASHES) for c, d in looks.values())


@pytest.mark.parametrize("n_layers, n_leaves", [(12, 4), (8, 4), (16, 2), (10, 3)])
def test_a_layer_keeps_one_colour_and_each_leaf_its_dash_while_the_colours_last(n_layers, n_leaves):
    looks = variable_styles(layered(n_layers, n_leaves), 12, len(DASHES))
    for i in range(min(n_layers, 12)):
        assert [looks[f"net/layer_{i}/{leaf}"] for leaf in LEAVES[:n_leaves]] == [(i, j) for j in range(n_leaves)]


def test_no_layer_repeats_an_earlier_one_past_the_looks():
    """4 leaves x 12 layers on paper (8 colours x 4 dashes = 32 looks for 48 variables): layer 9 drew exactly as
    layer 1. Some look repeats, but each only once every look is taken, and no two layers look alike."""
    paths = layered(12, 4)
    looks = variable_styles(paths, N_COLOURS, len(DASHES))
    first = [looks[p] for p in paths[:N_COLOURS * len(DASHES)]]
    assert len(set(first)) == len(first)
    layers = [frozenset(looks[f"net/layer_{i}/{leaf}"] for leaf in LEAVES[:4]) for i in range(12)]
    assert len(set(layers)) == 12, layers


def test_irregular_layers_and_phases_stay_distinct():
    """Layers with different leaves (a dense layer's kernel and bias, a norm's gamma and beta), and phases'
    copies of one variable (path@phase: a layer each)."""
    paths = [f"g/dense_{i}/{leaf}" for i in range(7) for leaf in ("kernel", "bias")]
    paths += [f"g/bn_{i}/{leaf}" for i in range(5) for leaf in ("gamma", "beta", "moving_mean")]
    paths += [f"e/dense/kernel@{ph}" for ph in ("rec", "adv")] + ["e/dense/bias@rec"]
    assert len(paths) == 32
    looks = variable_styles(paths, N_COLOURS, len(DASHES))
    assert len(set(looks.values())) == 32, looks


def test_the_leaf_key_never_gives_two_kinds_one_dash_and_every_line_is_read_once():
    """5 kinds of leaf on 4 dashes: the key showed moving_mean solid like kernel, so a norm layer's solid line
    read as a kernel. Now the key holds only kinds with a dash of their own, and each drawn look is told by the
    legend one way only: its layer's colour with its leaf's dash in the key, or its own path named with it."""
    import numpy as np

    from training_core import MetricsBatch, PhaseBlock
    from training_core.figures import FigureData, FigureSpec
    from training_core.runs import RunData

    paths = tuple(f"g/{kind}_{i}/{leaf}" for i in range(3) for kind, leaves in
                  (("dense", LEAVES[:2]), ("bn", LEAVES[2:])) for leaf in leaves)
    store, steps, n = RunData(), np.arange(1, 11, dtype=np.int64), len(paths)
    v = np.full((10, n), 1e-3)
    store.add_batch(MetricsBatch([PhaseBlock("G", paths, steps, steps * 1.0, np.ones(10), v, v, v,
                                             np.zeros((10, n), bool), np.ones(10, bool))]))
    plot = FigureData.from_store(store, FigureSpec(plots=["updates"])).plots[0]
    looks = {c.tag.split("/", 1)[1]: (c.colour, c.dash) for c in plot.curves}
    assert len(set(looks.values())) == len(looks) == n
    key = {e.label: e.dash for e in plot.legend if e.colour == "fg"}
    assert len({str(d) for d in key.values()}) == len(key), key
    assert set(key) == set(LEAVES[:len(DASHES)])
    named = {e.label: (e.colour, e.dash) for e in plot.legend if e.colour not in (None, "fg", "muted")}
    for path, (colour, dash) in looks.items():
        layer, leaf = path.rsplit("/", 1)
        by_key = named.get(layer.split("/", 1)[1]) == (colour, None) and key.get(leaf, 0) == DASHES[dash]
        by_name = named.get(path.split("/", 1)[1]) == (colour, DASHES[dash])
        assert by_key != by_name, (path, colour, dash)  # read exactly one way

"""app/export/band_legend.py: a panel's tall legend in columns under its whole row (or under the stack), so the
figure has no large empty area: side by side, the update plot's legend went under panel (b) alone, the cell of
(a) was empty under its plot and the figure twice as tall as its plots need."""
from __future__ import annotations

import numpy as np
import pytest

from training_core import MetricsBatch, PhaseBlock
from training_core.base import events
from training_core.figures import FigureSpec
from training_core.runs import RunData

D = ("discriminator/h1/kernel", "discriminator/h1/bias", "discriminator/out/kernel", "discriminator/out/bias")
G = tuple(p.replace("discriminator", "generator") for p in D)


def gan_run(monitor: str, method: str) -> RunData:
    """The keras.io GAN of the tester's run: the discriminator counts as frozen from step 100 and moves on."""
    store = RunData()
    store.monitor = monitor
    store.add_event(events.Start(step=0, phases=["discriminator", "generator"], method=method,
                                 phase_variables={"discriminator": list(D), "generator": list(G)}))
    n, steps = 300, np.arange(1, 301, dtype=np.int64)
    for k, (phase, paths) in enumerate((("discriminator", D), ("generator", G))):
        frozen = np.zeros((n, 4), bool)
        if phase == "discriminator":
            frozen[100:] = True
        ratio = np.outer(1 / np.sqrt(steps), [0.01, 0.1, 0.02, 0.2]) * (1 + 0.1 * k)
        loss = 0.7 + 0.2 * np.sin(steps / 40 + k)
        store.add_batch(MetricsBatch([PhaseBlock(phase, paths, steps, steps * 0.1, loss,
                                                 ratio * 10, ratio, ratio * 100, frozen, steps % 25 == 0)]))
    return store


@pytest.fixture
def figure_of(qapp):
    from app.export import Figure, recommended_height

    def make(store: RunData, layout: str) -> "Figure":
        spec = FigureSpec(plots=["losses", "updates"], width_in=7.16, layout=layout)
        spec.height_in = recommended_height(spec, Figure(store, spec).data)
        fig = Figure(store, spec)
        fig.layout()
        return fig
    return make


@pytest.mark.parametrize("monitor, method", [("fit", "exact"), ("", "gate")])
def test_side_by_side_the_tall_legend_spans_the_row_and_the_figure_is_no_taller_than_its_plots(
        figure_of, monitor, method):
    fig = figure_of(gan_run(monitor, method), "row")
    losses, updates = fig.layout()
    w, h = fig.size_pt
    assert updates.legend_rect is None and len(fig.row_legends) == 1  # not under (b), nor squeezing (b) beside it
    band, x, y = fig.row_legends[0]
    bw, bh = band.size()
    assert x >= 0 and x + bw <= w and y + bh <= h + 0.5
    assert bw > updates.cell.width()  # across the figure, in columns: a few rows, not one column of 12
    assert bh < 0.4 * h
    for pn in (losses, updates):
        assert y >= pn.area.bottom() + pn.x_block - 0.5  # under the x labels, over no plot
    # the plots line up and get the row's width: (b) is not a sliver beside its legend
    assert losses.area.top() == updates.area.top() and losses.area.bottom() == updates.area.bottom()
    assert updates.area.width() > 0.8 * losses.area.width()
    assert fig.spec.height_in < 2.3  # 2.85 in, half of it empty, with the legend under (b)


def test_stacked_the_legend_goes_under_the_stack_and_the_plots_keep_the_width(figure_of):
    fig = figure_of(gan_run("fit", "exact"), "column")
    losses, updates = fig.layout()
    w, _ = fig.size_pt
    assert len(fig.row_legends) == 1 and updates.legend_rect is None
    _, _, y = fig.row_legends[0]
    assert y >= updates.area.bottom() + updates.x_block - 0.5
    assert losses.area.left() == updates.area.left() and losses.area.right() == updates.area.right()
    assert losses.area.right() > 0.9 * w  # no legend beside (b) leaving the room beside (a) empty


def test_a_header_keeps_its_layers_in_its_column(qapp):
    from app.export.band_legend import BandLegend
    from app.export.text import TextStyle
    from app.export.theme import theme_named
    from training_core.figures import FigureData
    entries = FigureData.from_store(gan_run("fit", "exact"), FigureSpec(plots=["updates"])).plots[0].legend
    for width in (200.0, 300.0, 500.0):
        band = BandLegend(entries, TextStyle(7.0), theme_named("paper"))
        assert band.fit(width) and band.size()[0] <= width
        for col in band.columns:
            assert col[-1].colour is not None  # no header at a column's foot
            assert not col[0].under  # no layer cut off from its header


def test_side_by_side_the_legend_is_centred_under_the_whole_row_in_the_exported_svg(figure_of):
    """Centred on panel (b), the legend sat under (a) only partly and read as (b)'s: in the SVG its entries (each
    text with its line sample) span the row's plots, from (a)'s axis to (b)'s right edge, with equal margins."""
    from app.export import svg_bytes
    from tests.app import svg_shapes as svg
    fig = figure_of(gan_run("fit", "exact"), "row")
    losses, updates = fig.layout()
    band, _, top = fig.row_legends[0]
    entries = {e.label: e for col in band.columns for e in col}
    lefts, rights, seen = [], [], set()
    for t in svg.read(svg_bytes(fig))[0]:
        e = entries.get(t.text)
        if e is None or t.y < top:  # a text of the plots, not of the legend under them
            continue
        seen.add(t.text)
        header = e.colour is None
        lefts.append(t.x if header else t.x - band.sample - 0.5 * band.style.size)
        rights.append(t.x + (band.header if header else band.style).width(t.text))
    assert seen == set(entries)  # every entry drawn
    left, right = min(lefts), max(rights)
    row_left, row_right = losses.area.left(), updates.area.right()
    assert left < losses.area.right() and right > updates.area.left()  # under (a) and (b) alike
    assert abs((left - row_left) - (row_right - right)) < 0.5  # centred under the row, not under (b)


def test_two_legends_under_a_narrow_row_keep_their_full_names_when_the_figure_holds_them(qapp):
    """3.5 in, side by side: both legends went under their own half of the row and the updates legend's names were
    cut to its cell ("not trainable (moved: a l…)") though the figure's width holds them. The one that would be
    cut goes under the whole row, whole."""
    from app.export import Figure, svg_bytes
    from tests.app import svg_shapes as svg

    spec = FigureSpec(plots=["losses", "updates"], width_in=3.5, height_in=3.0, layout="row")
    fig = Figure(gan_run("fit", "exact"), spec)
    losses, updates = fig.layout()
    assert losses.legend_mode == "below" and updates.in_band and len(fig.row_legends) == 1
    texts = [t.text for t in svg.read(svg_bytes(fig))[0]]
    assert "not trainable (moved: a leak)" in texts and not any("…" in t for t in texts), texts

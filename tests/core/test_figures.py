"""Figure data without Qt: what a figure of a `RunData` holds (curves, legend, markers) and the
peak-preserving decimation the painter applies."""
from __future__ import annotations

import numpy as np
import pytest

from training_core import MetricsBatch, PhaseBlock, UserError
from training_core.base import events
from training_core.figures import DASHES, FigureData, FigureSpec, minmax_decimate, parse_size
from training_core.runs import RunData

D_PATHS = ("discriminator/dense_1/kernel", "discriminator/dense_1/bias", "discriminator/out/kernel",
           "discriminator/out/bias")


def store_with_frozen_scope() -> RunData:
    """Phase D for 40 steps, discriminator/dense_1 frozen the whole run, out moving."""
    store = RunData()
    n, steps = 40, np.arange(1, 41, dtype=np.int64)
    frozen = np.zeros((n, 4), bool)
    frozen[:, :2] = True
    ratio = np.where(frozen, 0.0, 1e-3)
    store.add_batch(MetricsBatch([PhaseBlock("D", D_PATHS, steps, steps * 0.1, np.linspace(2, 1, n), ratio * 10,
                                             ratio, ratio * 100, frozen, np.ones(n, bool))]))
    return store


def test_updates_legend_groups_scopes_and_leaves():
    store = store_with_frozen_scope()
    store.add_event(events.LearningRate(step=10, phase="D", value=1e-4))
    store.add_event(events.LearningRate(step=10, phase="D", value=1e-4))  # the same marker twice: drawn once
    data = FigureData.from_store(store, FigureSpec(smoothing=0.0))
    losses, updates = data.plots
    assert [c.tag for c in losses.curves] == ["loss/D"] and not losses.log_y
    np.testing.assert_array_equal(losses.curves[0].smoothed, losses.curves[0].values)  # smoothing 0
    assert updates.log_y and updates.reference == 1e-3
    frozen = {c.tag for c in updates.curves if c.frozen is not None and c.frozen.all()}
    assert frozen == {f"update_ratio/{p}" for p in D_PATHS[:2]}
    # a header per top-level scope, its scopes under it (frozen ones greyed), then the leaves' dashes
    assert [(e.label, e.colour) for e in updates.legend] == [
        ("discriminator", None), ("dense_1 (frozen)", "muted"), ("out", 0), ("kernel", "fg"), ("bias", "fg"),
        ("10⁻³ reference", "muted")]
    assert data.markers == [(10, "lr", "lr D=0.0001")] and data.last_step == 40
    absolute = FigureData.from_store(store, FigureSpec(plots=["updates"], update_kind="update_norm"))
    assert absolute.plots[0].reference is None
    assert {c.tag for c in absolute.plots[0].curves} == {f"update_norm/{p}" for p in D_PATHS}


def _store_of(paths: tuple[str, ...]) -> RunData:
    store, steps = RunData(), np.arange(1, 11, dtype=np.int64)
    v = np.full((10, len(paths)), 1e-3)
    store.add_batch(MetricsBatch([PhaseBlock("G", paths, steps, steps * 1.0, np.ones(10), v, v, v,
                                             np.zeros((10, len(paths)), bool), np.ones(10, bool))]))
    return store


@pytest.mark.parametrize("colour_by, limit", [("run", len(DASHES)), ("phase", 8)])
def test_an_overlay_with_more_variables_than_looks_says_so_instead_of_naming_curves_wrongly(colour_by, limit):
    """Two runs overlaid: a variable is told apart by its line style (or colour), of which there are only so
    many. Past that, a legend of repeated looks would name curves wrongly (12 ring variables on 4 dashes);
    the runs stay named (once, in the figure's legend) and one line says how to choose fewer."""
    def updates(n: int):
        paths = tuple(f"g/layer_{i}/kernel" for i in range(n))
        spec = FigureSpec(plots=["updates"], colour_by=colour_by)
        data = FigureData.from_runs([("a", _store_of(paths)), ("b", _store_of(paths))], spec)
        return data.plots[0], paths, [e.label for e in data.run_legend]
    fits, paths, runs = updates(limit)
    assert fits.problem == "" and {p for p in paths} <= {e.label for e in fits.legend} and runs == ["a", "b"]
    crowded, paths, runs = updates(limit + 1)
    assert crowded.problem.startswith(f"{limit + 1} variables per run share {limit} ") and "--vars" in crowded.problem
    labels = {e.label for e in crowded.legend}
    assert not labels & set(paths) and runs == ["a", "b"] and len(crowded.curves) == 2 * (limit + 1)
    assert not {"a", "b"} & labels  # named once for the figure, not again in the panel


def test_two_leaves_per_scope_get_dashes():
    store = RunData()
    paths = ("g/a/kernel", "g/a/bias", "g/b/kernel", "g/b/bias")
    steps = np.arange(1, 11, dtype=np.int64)
    v = np.full((10, 4), 1e-3)
    store.add_batch(MetricsBatch([PhaseBlock("G", paths, steps, steps * 1.0, np.ones(10), v, v, v,
                                             np.zeros((10, 4), bool), np.ones(10, bool))]))
    updates = FigureData.from_store(store, FigureSpec(plots=["updates"])).plots[0]
    assert [c.dash for c in updates.curves] == [0, 1, 0, 1] and [c.colour for c in updates.curves] == [0, 0, 1, 1]
    leaf_entries = [e for e in updates.legend if e.colour == "fg"]
    assert [(e.label, e.dash) for e in leaf_entries] == [("kernel", DASHES[0]), ("bias", DASHES[1])]


@pytest.mark.parametrize("text, units, problem", [("7x", "in", "not WIDTHxHEIGHT"), ("3x2", "cm", "unknown units")])
def test_bad_sizes_name_the_fix(text, units, problem):
    with pytest.raises(UserError, match=problem):
        parse_size(text, units)
    assert parse_size("254x127", "mm") == pytest.approx((10.0, 5.0))


def test_decimation_is_identity_on_short_series():
    x = np.arange(100.0)
    y = np.sin(x)
    assert np.array_equal(minmax_decimate(x, y, 0.0, 100.0, 900), np.arange(100))
    y[50] = np.nan
    keep = minmax_decimate(np.arange(1e5), np.r_[y, np.zeros(int(1e5) - 100)], 0.0, 1e5, 100)
    assert 50 in keep  # a gap stays a gap


@pytest.mark.parametrize("leak, runs", [(0.0, 1), (3e-6, 1), (0.0, 2), (3e-6, 2)])
def test_the_frozen_entry_claims_dw_0_only_when_every_frozen_record_is_0(leak, runs):
    """With the gate method a frozen variable keeps moving: its figure must not call the stretch "ΔW = 0"."""
    from training_core.figures.frozen import FROZEN_EXACT, FROZEN_LEAKING
    store = RunData()
    n, steps = 40, np.arange(1, 41, dtype=np.int64)
    frozen = np.zeros((n, 4), bool)
    frozen[20:, 0] = True  # dense_1/kernel frozen from step 21: exact zeros, or the gate's decaying leak
    ratio = np.where(frozen, leak, 1e-3)
    store.add_batch(MetricsBatch([PhaseBlock("D", D_PATHS, steps, steps * 0.1, np.linspace(2, 1, n), ratio * 10,
                                             ratio, ratio * 100, frozen, np.ones(n, bool))]))
    data = FigureData.from_runs([(f"run{i}", store) for i in range(runs)], FigureSpec(plots=["updates"]))
    labels = [e.label for e in data.plots[0].legend]
    assert (FROZEN_LEAKING in labels) == bool(leak) and (FROZEN_EXACT in labels) == (not leak)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from training_core.figures import (MARKER_KINDS, MarkerLine, group_name, label_key, marker_kinds,  # noqa: E402
                                   place_flags)
from training_core.figures.markers import figure_markers, label_lines, wrap_label  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 300), st.floats(5, 120), st.integers(1, 3)), min_size=1, max_size=14))
def test_flags_never_overlap_and_each_starts_or_ends_at_its_line(marks):
    marks = sorted(marks)
    xs, widths, heights = [m[0] for m in marks], [m[1] for m in marks], [m[2] for m in marks]
    flags = place_flags(xs, widths, 0.0, 300.0, 2.4, 4.8, heights)
    for f, h in zip(flags, heights):
        assert 0.0 - 1e-9 <= f.left and f.right <= 300.0 + 1e-9 and f.top_row == f.row + h - 1
        at_line = abs(f.left - (f.x + 2.4)) < 1e-9 if f.side == "right" else abs(f.right - (f.x - 2.4)) < 1e-9
        assert at_line or f.width > 300 - 2.4 - max(f.x, 300 - f.x)  # kept inside only when too wide to be at it
    for i, a in enumerate(flags):
        for b in flags[i + 1:]:  # never over one another: a wrapped label's rows are all its own
            assert a.top_row < b.row or b.top_row < a.row or a.right <= b.left or b.right <= a.left


def test_a_wrapped_label_is_above_the_line_it_would_cover_in_all_its_rows():
    """A two-row label whose text covers its neighbour's line sits with its lower row above that line's label."""
    flags = place_flags([10.0, 40.0], [60.0, 30.0], 0.0, 300.0, 2.4, 4.8, [1, 2])
    assert flags[0].row == 2 and flags[1].row == 0 and flags[1].top_row == 1


def mono(s: str) -> float:
    """A text's width with every character 1 pt wide: what the wrapping is tested with (Qt-free)."""
    return float(len(s))


@pytest.mark.parametrize("room, lines", [
    (80, ["freeze=discriminator/dense_1@90: freeze: discriminator/dense_1"]),
    (40, ["freeze=discriminator/dense_1@90:", "freeze: discriminator/dense_1"]),  # after the owners, not a space
    (30, ["freeze=discriminator/", "dense_1@90:", "freeze: discriminator/dense_1"]),  # a path after its "/"
])
def test_a_label_too_wide_for_its_room_is_wrapped_in_the_fewest_lines_where_a_reader_minds_least(room, lines):
    text = "freeze=discriminator/dense_1@90: freeze: discriminator/dense_1"
    assert wrap_label(text, mono, room) == lines
    assert all(mono(line) <= room for line in lines)


def test_a_word_wider_than_the_room_is_cut_as_few_times_as_it_must():
    text = "freeze=discriminator/dense_1@90: freeze: discriminator/dense_1"
    lines = wrap_label(text, mono, 12)  # "discriminator/" is 14: each of the two is cut once, nothing else is
    assert all(mono(line) <= 12 for line in lines) and "".join(lines) == text.replace(" ", "")
    whole = [w for line in lines for w in line.split(" ")]
    assert sum(1 for w in whole if w not in ("freeze=", "discriminator/", "dense_1@90:", "freeze:", "dense_1",
                                              "freeze=discriminator/", "dense_1@", "90:")) == 4  # 2 words, 2 halves
    assert len(lines) == 6 and wrap_label("abc", mono, 0.5) == ["a", "b", "c"]  # no room: a character a line


def test_a_label_wraps_only_when_neither_side_of_its_line_has_room():
    text = "ratio=3:1 freeze=none: lr D=5e-05"  # 33 pt
    assert label_lines(text, 20.0, 0.0, 100.0, 2.0, mono) == [text]  # fits on its right
    assert label_lines(text, 80.0, 0.0, 100.0, 2.0, mono) == [text]  # fits on its left, near the right edge
    assert label_lines(text, 30.0, 0.0, 60.0, 2.0, mono) == ["ratio=3:1 freeze=none:", "lr D=5e-05"]  # 28 pt left


def test_flags_climb_over_the_lines_their_texts_cover():
    """A long label whose text covers its neighbour's line sits a row higher, so that line ends below it."""
    flags = place_flags([10.0, 40.0, 200.0], [60.0, 30.0, 30.0], 0.0, 300.0, 2.4, 4.8)
    assert [f.row for f in flags] == [1, 0, 0] and all(f.side == "right" for f in flags)
    near_edge = place_flags([100.0, 290.0], [50.0, 50.0], 0.0, 300.0, 2.4, 4.8)
    assert near_edge[1].side == "left" and near_edge[1].right == pytest.approx(290.0 - 2.4)


def test_markers_by_kind_and_axis_label_keys_name_what_works():
    assert marker_kinds("ratio,freeze") == ("freeze", "ratio") and marker_kinds("all") == MARKER_KINDS
    assert marker_kinds("none") == () and marker_kinds(False) == ()
    assert FigureSpec().validate().markers == ("freeze", "ratio", "lr", "method", "leak")  # what the run changed, leaks
    with pytest.raises(UserError, match="unknown marker kind 'lrate'; choose from: freeze, ratio, lr"):
        marker_kinds("freeze,lrate")
    plots, metrics = ["losses", "metrics"], ["pca_fd", "modes"]
    assert label_key("pca_fd", plots, metrics) == "metric/pca_fd" == label_key("metric/pca_fd", plots, metrics)
    assert label_key("losses", plots, metrics) == "losses" and label_key("metrics", plots, metrics) == "metrics"
    with pytest.raises(UserError, match=r"no plot 'updates' in this figure; use one of: losses, metrics, pca_fd, modes"):
        label_key("updates", plots, metrics)


def test_an_event_every_run_has_is_one_plain_label():
    both = {(100, "freeze", "freeze: g"): (100.0, None)}
    one = {(200, "lr", "lr D=1e-05"): (200.0, None)}
    lines = figure_markers([{**both, **one}, dict(both)], ["1:1", "3:1"])
    assert lines == [MarkerLine(100.0, "freeze", "freeze: g"), MarkerLine(200.0, "lr", "1:1: lr D=1e-05")]


@pytest.mark.parametrize("labels, name", [
    (["ratio-1to1-seed1", "ratio-1to1-seed2"], "ratio-1to1"),
    (["lr=1e-4 s1", "lr=1e-4 s2", "lr=1e-4 s3"], "lr=1e-4"),
    (["a", "b"], "a"),  # nothing shared: the first run's name
    (["run7", "run8"], "run7"),  # a word cut in two is no name
])
def test_a_group_is_named_by_what_its_runs_names_share(labels, name):
    assert group_name(labels) == name


def test_a_marker_of_some_groups_is_named_by_the_words_only_they_share():
    """A sweep's settings as groups: the freeze from step 1500 that two of four settings have is named by their
    shared word, not by both settings listed (which ran off the figure)."""
    from training_core.figures.markers import figure_markers
    names = ["ratio=1:1 freeze=none", "ratio=1:1 freeze=d@1500", "ratio=3:1 freeze=none", "ratio=3:1 freeze=d@1500"]
    key = (1500, "freeze", "freeze: d")
    per = [{}, {key: (1500.0, None)}, {}, {key: (1500.0, None)}]
    (line,) = figure_markers(per, names)
    assert line.label == "freeze=d@1500"  # their word says the freeze itself: not "freeze=d@1500: freeze: d"
    per[2] = {key: (1500.0, None)}  # three owners with no word of their own: listed
    (line,) = figure_markers(per, names)
    assert line.label.startswith("ratio=1:1 freeze=d@1500, ratio=3:1 freeze=none, ")


def test_x_may_count_one_phases_steps_as_gan_papers_count_generator_iterations():
    """At 5:1, every point stands at the number of G steps done by its step (D's five between two G steps at
    one x), a marker too; a phase no run has is one line naming the phases there are."""
    store, step = RunData(), 0
    for _ in range(10):
        d = np.arange(step + 1, step + 6, dtype=np.int64)
        g = np.array([step + 6], dtype=np.int64)
        step += 6
        store.add_batch(MetricsBatch([
            PhaseBlock("D", D_PATHS, d, d * 0.1, np.ones(5), np.ones((5, 4)), np.ones((5, 4)), np.ones((5, 4)),
                       np.zeros((5, 4), bool), np.ones(5, bool)),
            PhaseBlock("G", ("generator/out/kernel",), g, g * 0.1, np.ones(1), np.ones((1, 1)), np.ones((1, 1)),
                       np.ones((1, 1)), np.zeros((1, 1), bool), np.ones(1, bool))]))
    store.add_event(events.LearningRate(step=33, phase="D", value=1e-4))
    data = FigureData.from_store(store, FigureSpec(plots=["losses"], x_axis="G"))
    d_curve, g_curve = data.plots[0].curves
    g_steps = store.loss("G")[0]
    np.testing.assert_array_equal(g_curve.x, np.arange(1, 11))
    np.testing.assert_array_equal(d_curve.x, np.searchsorted(g_steps, d_curve.steps, side="right"))
    assert list(d_curve.x[:6]) == [0, 0, 0, 0, 0, 1]  # D's first five before G's first step
    assert data.x_unit == "steps:G" and FigureSpec().axis_labels("losses", data.x_unit) == ("G steps", "Loss")
    assert data.markers[0][0] == 5.0  # step 33: five G steps (6..30) done
    with pytest.raises(UserError, match=r"x axis 'Q' is not a phase of run \(its phases: D, G\)"):
        FigureData.from_store(store, FigureSpec(plots=["losses"], x_axis="Q"), label="run")

"""Seeds as bands: runs of one setting that differ only by their seed drawn as one mean line with a band, the
groups found from the runs' own `config.toml`s (training_core/runs/groups.py), on real ring runs
(tests/app/conftest.py: `steered_runs`, three seeds of one setting and two of another). The mean line in the
SVG is checked against NumPy's mean of the runs' recorded losses, and the band against their min-max and
standard deviation."""
from __future__ import annotations

import numpy as np
import pytest

from app.export import Figure, svg_bytes
from training_core import read_scalars
from training_core.figures import FigureSpec, seed_groups
from training_core.runs import read_run
from tests.app import svg_shapes as svg
from tests.app.test_export_paper import export


@pytest.fixture(scope="module")
def seeds(steered_runs):
    dirs = steered_runs["steered"] + steered_runs["ratio"]
    return dirs, [(d.name, read_run(d)) for d in dirs]


def recorded(d, tag: str) -> tuple[np.ndarray, np.ndarray]:
    """A run's own record of `tag`, read from its scalars.csv (not through the figure code)."""
    series = read_scalars(d, {tag})[tag]
    return series.steps, series.values


def test_seeds_of_one_setting_are_one_group(seeds):
    dirs, runs = seeds
    assert seed_groups(runs) == [[0, 1, 2], [3, 4]]  # the 2:1 ratio is another setting; the seed is none


@pytest.mark.parametrize("spread", ["minmax", "sd"])
def test_each_group_is_a_mean_line_over_its_band(qapp, seeds, spread):
    dirs, runs = seeds
    fig = Figure(runs, FigureSpec(plots=["losses"], smoothing=0.0, bands=spread, width_in=7.16, height_in=3.0))
    assert fig.data.runs == ["steered", "ratio-2to1"]  # named by what the seeds' names share
    texts, shapes = svg.read(svg_bytes(fig))
    words = [t.text for t in texts]
    assert words.count("steered") == 1 and words.count("ratio-2to1") == 1  # one legend entry per group
    assert any("mean of 2–3 seeds" in w for w in words)
    [panel] = fig.layout()
    palette = [fig.theme.colour(i).name() for i in range(2)]
    for g, members in enumerate(([0, 1, 2], [3, 4])):
        steps, values = zip(*(recorded(dirs[i], "loss/D") for i in members))
        if g == 1:  # one schedule from the start: the seeds recorded the same steps
            assert all(np.array_equal(steps[0], s) for s in steps)
        # the steered seeds changed their ratio at different steps, so their D steps differ from there: each
        # seed read on every step one of them recorded, between the first and last steps all of them have
        grid = np.unique(np.concatenate(steps))
        grid = grid[(grid >= max(s[0] for s in steps)) & (grid <= min(s[-1] for s in steps))]
        stack = np.stack([np.interp(grid, s, v) for s, v in zip(steps, values)])
        mean = stack.mean(axis=0)  # NumPy's mean of the runs
        low, high = (stack.min(axis=0), stack.max(axis=0)) if spread == "minmax" else \
            (mean - stack.std(axis=0, ddof=1), mean + stack.std(axis=0, ddof=1))
        curve = next(c for c in fig.data.plots[0].curves if c.tag == "loss/D" and c.run == fig.data.runs[g])
        np.testing.assert_allclose(curve.smoothed, mean, rtol=1e-6)
        np.testing.assert_allclose(curve.low, low, rtol=1e-6)
        np.testing.assert_allclose(curve.high, high, rtol=1e-6)
        # in the SVG: the group's solid line (phase D) runs through the means, where the panel puts them
        line = next(s for s in shapes if s.stroke == palette[g] and not s.dashed and abs(s.width - 1.0) < 1e-6
                    and s.fill == "none" and len(s.points) == len(mean))
        np.testing.assert_allclose(line.xs, panel.X(grid), atol=0.01)
        np.testing.assert_allclose(line.ys, panel.Y(mean), atol=0.01)
        # ... over a filled band from its lowest to its highest edge, which no stroke outlines (one per phase)
        bands = [s for s in shapes if s.fill == palette[g] and s.fill_opacity < 1 and s.stroke in ("none", "")]
        top, bottom = float(np.min(panel.Y(high))), float(np.max(panel.Y(low)))
        assert any(abs(min(b.ys) - top) < 0.05 and abs(max(b.ys) - bottom) < 0.05 for b in bands), \
            ([(min(b.ys), max(b.ys)) for b in bands], top, bottom)


def test_bands_from_the_command_line_named_per_group(seeds, tmp_path):
    dirs, _ = seeds
    out, table = tmp_path / "bands.svg", tmp_path / "bands.csv"
    r = export(*map(str, dirs), "--plots", "losses,updates", "--bands", "sd", "--labels", "steered,2:1",
               "--vars", "generator/dense_1/kernel", "--out", str(out), "--csv", str(table))
    assert r.returncode == 0, r.stderr
    assert "5 runs in 2 groups" in r.stdout
    words = [t.text for t in svg.read(out.read_bytes())[0]]
    assert words.count("2:1") == 1 and any("band: mean ± 1 sd" in w for w in words)
    lines = table.read_text().splitlines()  # the drawn means under their groups' names, with the band's edges
    assert lines[0] == "step,wall_time,tag,value,smoothed,run,low,high"
    rows = [line.split(",") for line in lines[1:]]
    assert {r[5] for r in rows} == {"steered", "2:1"} and all(len(r) == 8 for r in rows)
    assert all(float(r[6]) <= float(r[4]) <= float(r[7]) for r in rows if r[2] == "loss/D")
    r = export(*map(str, dirs), "--bands", "sd", "--labels", "a,b,c", "--out", str(tmp_path / "x.pdf"))
    assert r.returncode == 2 and "5 run(s) in 2 group(s)" in r.stderr and r.stderr.count("\n") == 1


def test_each_band_is_edged_in_its_colour_as_its_legend_sample(qapp, seeds):
    """Two settings' bands overlapping were one brownish fill: each band's upper and lower edges are a thin
    stroke in a tint of its colour, drawn over the fills, and the legend's sample is the same band (fill
    opacity and edges: one source, the theme's)."""
    _, runs = seeds
    fig = Figure(runs, FigureSpec(plots=["losses"], smoothing=0.0, bands="minmax", width_in=7.16, height_in=3.0))
    _, shapes = svg.read(svg_bytes(fig))
    [panel] = fig.layout()
    th = fig.theme
    for g in range(2):
        edge = th.tint(th.colour(g), th.band_edge_alpha).name()
        strokes = [s for s in shapes if s.stroke == edge and abs(s.width - th.band_edge_width) < 1e-6]
        curve = next(c for c in fig.data.plots[0].curves if c.tag == "loss/D" and c.run == fig.data.runs[g])
        for side in (curve.high, curve.low):
            assert any(len(s.points) > 10 and abs(min(s.ys) - float(np.min(panel.Y(side)))) < 0.05 and
                       abs(max(s.ys) - float(np.max(panel.Y(side)))) < 0.05 for s in strokes), g
        samples = [s for s in strokes if svg.horizontal(s) and abs(s.xs[1] - s.xs[0] - fig.legend.sample) < 0.01]
        assert len(samples) == 2, g  # the legend's band: its two edges
        fills = {s.fill_opacity for s in shapes if s.fill == th.colour(g).name() and s.fill_opacity < 1}
        assert fills and all(abs(f - th.band_alpha) < 0.01 for f in fills), fills

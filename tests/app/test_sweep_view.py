"""A sweep in the window (app/sweep_view.py, app/sweep_plot.py, app/sweep_table.py): `--open SWEEP_DIR` and File →
Open Run… show its runs grouped by setting, one mean line per setting with its band over the seeds (min–max or
± sd, chosen in the window), and the table of settings × final metrics, which sorts and exports as CSV and LaTeX.
A real 2-ratio × 2-seed sweep of the ring, made once by the headless CLI; every number is computed again here
from the run directories with NumPy. The window runs on the stand-in service: review never trains."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from app.launch import parse
from training_core import read_scalars
from training_core.base.smoothing import ema_smooth
from training_core.runs.sweep import Sweep
from training_core.runs.sweep_table import mean_sd_text, tex_number

STEPS = 80


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    from tests.core.helpers import main_cmd, run_all
    d = tmp_path_factory.mktemp("sweep_view") / "ratios"
    r = run_all({"sweep": main_cmd("--headless", "--sweep", "--example", "ring", "--steps", str(STEPS),
                                   "--no-tensorboard", "--grid", "ratio=1:1,3:1", "--grid", "seed=0,1",
                                   "--sweep-dir", str(d), "--quiet")}, timeout=600)["sweep"]
    assert r.returncode == 0, r.stderr
    return d


def _runs(d, ratio):
    s = Sweep.open(d)
    return [read_scalars(s.run_dir(p)) for p in s.points if p.values["ratio"] == ratio]


def _view(ui, sweep_dir):
    w = ui.make(fake=True, wait=False, open_runs=[str(sweep_dir)])
    dock = w.review.sweeps
    assert dock is not None and len(dock.views()) == 1
    assert dock.as_tabs or dock.isVisible()  # a tab beside the plots in a window under 1,000 px (app/sweep_dock.py)
    return w, dock.views()[0]


def test_open_shows_the_runs_labelled_by_grid_point_and_one_band_per_setting(ui, sweep_dir):
    w, view = _view(ui, sweep_dir)
    labels = [e.label for e in w.review.runs.entries]
    assert labels == ["ratio=1:1 seed=0", "ratio=1:1 seed=1", "ratio=3:1 seed=0", "ratio=3:1 seed=1"]
    assert view.metric.currentText() == "D loss" and view.metric.currentData() == "loss/D"  # titled as the table
    assert [label for label, _, _ in view.plot.drawn] == ["ratio=1:1 (2 seeds)", "ratio=3:1 (2 seeds)"]
    for (label, line, fill), ratio in zip(view.plot.drawn, ("1:1", "3:1")):
        runs = _runs(sweep_dir, ratio)
        steps = runs[0]["loss/D"].steps
        assert all(np.array_equal(r["loss/D"].steps, steps) for r in runs)  # one ratio: the same steps
        smoothed = np.stack([ema_smooth(r["loss/D"].values, 0.6)[0] for r in runs])
        x, y = line.getData()
        assert np.array_equal(x, steps) and np.allclose(y, smoothed.mean(0), rtol=0, atol=1e-12)
        lo, hi = fill.curves[0].getData()[1], fill.curves[1].getData()[1]
        assert np.allclose(lo, smoothed.min(0), rtol=0, atol=1e-12)
        assert np.allclose(hi, smoothed.max(0), rtol=0, atol=1e-12)
        assert np.any(hi > lo)  # two seeds differ: a band, not a line


def test_file_open_on_a_sweep_directory_opens_it_as_a_sweep_once(ui, sweep_dir):
    w = ui.make(fake=True, wait=False)
    assert w.review.sweeps is None
    assert w.open_runs([str(sweep_dir)])  # what File → Open Run… hands the window
    assert w.open_runs([str(sweep_dir)])  # again: the same tab, the same runs
    assert len(w.review.sweeps.views()) == 1 and len(w.review.runs.entries) == 4
    assert w.tabs.currentIndex() == 1  # the Runs tab lists the sweep's runs


def test_the_band_is_chosen_in_the_window_min_max_or_plus_minus_sd(ui, sweep_dir):
    w, view = _view(ui, sweep_dir)
    view.smoothing.setValue(0.0)
    view.spread.setCurrentIndex(view.spread.findData("sd"))
    view.metric.setCurrentText("G loss")
    _, line, fill = view.plot.drawn[1]
    runs = np.stack([r["loss/G"].values for r in _runs(sweep_dir, "3:1")])
    mean, sd = runs.mean(0), runs.std(0, ddof=1)
    assert np.allclose(line.getData()[1], mean, rtol=0, atol=1e-12)
    assert np.allclose(fill.curves[0].getData()[1], mean - sd, rtol=0, atol=1e-12)
    assert np.allclose(fill.curves[1].getData()[1], mean + sd, rtol=0, atol=1e-12)
    assert view.plot.plotItem.getAxis("left").labelText == "G loss"


def _titles(grid) -> list[str]:
    """The columns' titles as a reader reads them: a title wrapped onto lines (after an underscore, or at a space)
    joined again."""
    return [grid.horizontalHeaderItem(c).text().replace("_\n", "_").replace("\n", " ") for c in range(grid.columnCount())]


def _expected(sweep_dir, ratio, tag, step=None):
    values = []
    for r in _runs(sweep_dir, ratio):
        s = r[tag]
        values.append(s.values[s.steps <= step][-1] if step is not None else s.values[-1])
    return float(np.mean(values)), float(np.std(values, ddof=1))


def test_the_table_sorts_and_exports_what_it_shows_as_csv_and_latex(ui, sweep_dir, tmp_path):
    w, view = _view(ui, sweep_dir)
    t = view.table
    titles = _titles(t.grid)
    headers = [t.grid.horizontalHeaderItem(c).toolTip() for c in range(t.grid.columnCount())]  # the tags, as recorded
    assert titles[:2] == ["ratio", "seeds"] and {"D loss", "G loss", "modes_covered"} <= set(titles)  # as the CLI's
    assert titles == [_title(h) for h in headers] and "loss/G" in headers  # one rule: column_label
    col = titles.index("G loss")
    rows = {t.grid.item(r, 0).text(): t.grid.item(r, col).text() for r in range(t.grid.rowCount())}
    for ratio in ("1:1", "3:1"):
        mean, sd = _expected(sweep_dir, ratio, "loss/G")
        assert rows[ratio] == mean_sd_text(mean, sd, plain=True)  # as LaTeX gives it: "1.20 ± 0.23", not "1.2 ± 0.232"
    view.at_step.setValue(40)  # the columns at step 40 join those at the end
    titles = _titles(t.grid)
    headers = [t.grid.horizontalHeaderItem(c).toolTip() for c in range(t.grid.columnCount())]
    assert "G loss @ 40" in titles
    # a click on a header sorts by it; a second click the other way
    col = titles.index("G loss @ 40")
    means = {r: _expected(sweep_dir, r, "loss/G", 40)[0] for r in ("1:1", "3:1")}
    t.grid.horizontalHeader().sectionClicked.emit(col)
    order = [t.grid.item(r, 0).text() for r in range(2)]
    assert order == sorted(means, key=means.get)
    t.grid.horizontalHeader().sectionClicked.emit(col)
    assert [t.grid.item(r, 0).text() for r in range(2)] == order[::-1]

    t.export(tmp_path / "table.csv")
    t.export(tmp_path / "table.tex")
    lines = list(csv.DictReader((tmp_path / "table.csv").read_text().splitlines()))
    assert [row["ratio"] for row in lines] == order[::-1]  # as shown
    for row in lines:
        for tag, step in (("loss/D", None), ("loss/G", 40), ("metric/high_quality", None)):
            mean, sd = _expected(sweep_dir, row["ratio"], tag, step)
            head = tag if step is None else f"{tag} @ {step}"
            assert (float(row[f"{head} mean"]), float(row[f"{head} sd"]), row[f"{head} n"]) == (mean, sd, "2")
    tex = (tmp_path / "table.tex").read_text().splitlines()
    assert tex[2:4] == ["\\toprule", " & ".join(["ratio"] + [_title(h).replace("_", "\\_") for h in headers[2:]]) + " \\\\"]
    body = tex[tex.index("\\midrule") + 1:tex.index("\\bottomrule")]
    assert [b.split(" & ")[0] for b in body] == order[::-1]
    mean, sd = _expected(sweep_dir, order[-1], "loss/D")
    assert body[0].split(" & ")[1].startswith(f"${tex_number(mean)} \\pm ")
    shown = [[t.grid.item(r, c).text() for c in range(2, t.grid.columnCount())] for r in range(t.grid.rowCount())]
    exported = [b.removesuffix(" \\\\").split(" & ")[1:] for b in body]  # (the LaTeX has no seeds column)
    # the window's cells read as the LaTeX table's, digit for digit (one rule: runs/sweep_table.cell_text)
    assert [[c.strip("$").replace(" \\pm ", " ± ") for c in row] for row in exported] == shown


def _title(header: str) -> str:
    """A column's LaTeX title: "D loss", a metric as written, "@ STEP" kept (runs/sweep_table.column_label)."""
    tag, at, step = header.partition(" @ ")
    name = f"{tag.removeprefix('loss/')} loss" if tag.startswith("loss/") else tag.removeprefix("metric/")
    return name + at + step


def _cut_columns(grid) -> list[str]:
    """The columns a reader cannot read whole: narrower than their longest value (by the grid's font), or reaching
    past the grid's viewport (cut at its edge, or scrolled out of sight)."""
    fm, header, k = grid.fontMetrics(), grid.horizontalHeader(), grid.columnCount()
    cut = []
    for c in range(k):
        title = grid.horizontalHeaderItem(c).text()
        longest = max(fm.horizontalAdvance(grid.item(r, c).text()) for r in range(grid.rowCount()))
        left = header.sectionViewportPosition(c)
        if grid.columnWidth(c) < longest or left < 0 or left + grid.columnWidth(c) > grid.viewport().width():
            cut.append(title)
    return cut


def test_at_1440x900_every_column_of_the_table_reads_in_full(ui, qtbot, sweep_dir):
    """The window's default size: the sweep is a tab beside the plots (998 px wide), and split 1:1 beside its
    band plot the table had half of that for its columns; the metrics' columns were cut at its edge. Now the
    table goes under the plot when its columns do not fit beside it, and every value reads unscrolled."""
    from PySide6.QtWidgets import QApplication
    w, view = _view(ui, sweep_dir)
    assert (w.width(), w.height()) == (1440, 900)
    qtbot.waitUntil(lambda: w.review.sweeps.as_tabs, timeout=10_000)
    for step in (-1, 40):  # the columns at the end, then those at step 40 beside them
        view.at_step.setValue(step)
        for _ in range(5):
            QApplication.processEvents()
        grid = view.table.grid
        assert grid.columnCount() >= 6 and grid.rowCount() == 2
        assert _cut_columns(grid) == [], (step, view.split.sizes(), grid.viewport().width())
        assert view.plot.plotItem.vb.height() >= 250  # the band plot over the table keeps room to be read


def test_an_export_that_would_damage_the_sweep_is_refused_with_one_line(ui, sweep_dir):
    from training_core import UserError
    w, view = _view(ui, sweep_dir)
    with pytest.raises(UserError, match="is part of the sweep in"):
        view.table.export(sweep_dir / "points" / "x.csv")
    with pytest.raises(UserError, match="a table is written as .csv or .tex"):
        view.table.export(sweep_dir / "table.pdf")


def test_open_on_the_command_line_takes_a_sweep_directory_and_refuses_a_folder_that_is_neither(sweep_dir, tmp_path):
    assert parse(["--open", str(sweep_dir)]).open == [str(sweep_dir)]
    (tmp_path / "empty").mkdir()
    from training_core import UserError
    with pytest.raises(UserError, match="nor a sweep's"):
        parse(["--open", str(tmp_path / "empty")])

"""Runs as documents in the window: finished runs opened read-only, overlaid in the plots, named and
restyled from the Runs tab, exported as one figure; and `--open` with `--screenshot` from the command line.
Three real ring runs (1:1, 3:1, 5:1) made once by the headless CLI; the window runs on the stand-in
service, since review never trains."""
from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage

from app.export import Figure, csv_text, svg_bytes
from training_core.figures import FigureSpec
from training_core.runs import LIVE, read_run
from training_core.rundir.samples import list_samples

REPO = Path(__file__).resolve().parents[2]


def legend_texts(legend) -> list[str]:
    return [label.text for _, label in legend.items]


def test_opened_runs_overlay_read_only_and_the_runs_tab_restyles_them(ui, qtbot, ring_runs):
    w = ui.make(fake=True, wait=False, open_runs=[str(d) for d in ring_runs])
    names = [d.name for d in ring_runs]
    assert w.tabs.currentIndex() == 1 and w.core.requests == []  # reviewing: TensorFlow is not even loaded
    assert w.status_panel.state_label.text().startswith("Reviewing 3 run(s)")
    w.refresh()
    curves = w.plots.curves()
    for n in names:
        assert {f"{n}: loss/D", f"{n}: loss/G", f"{n}: metric/modes_covered", f"{n}: metric/high_quality"} <= set(curves)
    steps, _, values = read_run(ring_runs[2]).loss("D")
    np.testing.assert_array_equal(curves[f"{names[2]}: loss/D"].xData, steps)
    np.testing.assert_array_equal(curves[f"{names[2]}: loss/D"].yData, values)
    assert legend_texts(w.plots.loss_legend) == names + ["loss D", "loss G"]
    colours = {curves[f"{n}: loss/D/smoothed"].opts["pen"].color().name() for n in names}
    assert len(colours) == 3  # colour names the run ...
    assert curves[f"{names[0]}: loss/G/smoothed"].opts["pen"].style() == Qt.PenStyle.CustomDashLine  # ... style the phase
    for sample in w.plots.losses._samples:  # each legend sample's 20 px line shows a whole dash period
        pen = sample.opts["pen"]
        assert pen.style() != Qt.PenStyle.CustomDashLine or sum(pen.dashPattern()) * pen.widthF() <= 20
    assert set(w.plots.metrics.plots) == {"metric/modes_covered", "metric/high_quality"}

    panel = w.review.panel
    first = panel.list.topLevelItem(0)
    first.setText(0, "ratio 1:1")  # as a double-click edit ends
    # the row Qt emitted itemChanged for lives on (deleting it inside the signal segfaulted in CI)
    assert panel.list.topLevelItem(0) is first and first.text(0) == "ratio 1:1"
    w.refresh()
    assert "ratio 1:1: loss/D" in w.plots.curves() and legend_texts(w.plots.loss_legend)[0] == "ratio 1:1"
    third = panel.list.topLevelItem(2)
    third.setCheckState(0, Qt.CheckState.Unchecked)
    assert panel.list.topLevelItem(2) is third and third.checkState(0) == Qt.CheckState.Unchecked
    w.refresh()
    assert not [n for n in w.plots.curves() if n.startswith(names[2])]
    assert [label for label, _ in w.export_runs()] == ["ratio 1:1", names[1]]

    panel.colour_by.setCurrentIndex(1)  # colour by phase, line style by run
    w.refresh()
    c = w.plots.curves()
    assert c["ratio 1:1: loss/D/smoothed"].opts["pen"].color() == c[f"{names[1]}: loss/D/smoothed"].opts["pen"].color()
    assert c[f"{names[1]}: loss/D/smoothed"].opts["pen"].style() == Qt.PenStyle.CustomDashLine
    metric = [c[f"{n}: metric/modes_covered"].opts["pen"] for n in ("ratio 1:1", names[1])]
    assert metric[0].color() == metric[1].color() and metric[0].style() != metric[1].style()  # colour is no run's

    panel.scopes.setText("discriminator/dense_1")
    panel.scopes.editingFinished.emit()
    w.refresh()
    ups = [n for n in w.plots.curves() if n.startswith("update/")]
    assert len(ups) == 4 and all("discriminator/dense_1/" in n for n in ups)  # 2 variables x 2 shown runs
    pens = {n: w.plots.curves()[n].opts["pen"] for n in ups}
    looks = {(p.color().name(), p.style(), tuple(p.dashPattern())) for p in pens.values()}
    assert len(looks) == 4  # kernel and bias apart by colour, the runs by line style (kernel and bias looked alike)

    panel.align.setCurrentIndex(1)  # time since each run began
    w.refresh()
    assert w.plots.loss_plot.getAxis("bottom").labelText == "time (s)"
    x = w.plots.curves()["ratio 1:1: loss/D"].xData
    first = read_run(ring_runs[0])
    _, wall, _ = first.loss("D")
    np.testing.assert_allclose(x, wall - first.start_time())  # seconds since that run began, from its record
    assert x[0] >= 0 and np.all(np.diff(x) >= 0)

    # the selected run's events (click one: the plots and the samples go to its step) and variables
    panel.align.setCurrentIndex(0)
    panel.list.topLevelItem(1).setSelected(True)
    panel.list.setCurrentItem(panel.list.topLevelItem(1))
    panel.refresh()
    texts = [panel.events.topLevelItem(i).text(1) for i in range(panel.events.topLevelItemCount())]
    assert texts[0] == "start (CPU)" and texts[-1] == "stop: done"
    w.refresh()
    files = list_samples(ring_runs[1])
    assert len(files) >= 3 and w.plots.samples.slider.maximum() == len(files) - 1
    middle = files[len(files) // 2][0]
    w.plots.loss_plot.vb.setXRange(0, 100, padding=0)
    w.plots.show_step(middle)
    (x0, x1), _ = w.plots.loss_plot.vb.viewRange()
    assert abs((x0 + x1) / 2 - middle) < 1 and not w.plots.following
    assert w.plots.samples.step_label.text().startswith(f"{middle:,}")
    assert w.plots.samples_view.kind == "points2d"
    tree = panel.variables
    top = [tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())]
    assert top == ["discriminator", "generator"]

    # behind the Train tab the selected run's details wait (rebuilding them cost ~50 ms at 10^6 steps, twice
    # a second while a run grew); brought to the front, the tab shows the run as it is
    w.tabs.setCurrentIndex(0)
    assert not panel.isVisible()
    shown = [panel.events.topLevelItem(0), tree.topLevelItem(0)]
    panel.list.setCurrentItem(panel.list.topLevelItem(0))
    panel.refresh()
    assert [panel.events.topLevelItem(0), tree.topLevelItem(0)] == shown  # not rebuilt
    w.tabs.setCurrentIndex(1)
    now = [panel.events.topLevelItem(0), tree.topLevelItem(0)]
    assert now[0] is not shown[0] and now[1] is not shown[1]  # rebuilt, for the run now selected
    assert now[0].text(1) == "start (CPU)" and tree.topLevelItemCount() == 2

    qtbot.keyClick(w.plots.graphics, Qt.Key.Key_A)  # "A": follow the runs again
    assert w.plots.following

    fig = Figure(w.export_runs(), FigureSpec(plots=["losses", "metrics"]))
    texts = [el.text for el in ET.fromstring(svg_bytes(fig)).iter("{http://www.w3.org/2000/svg}text")]
    assert "ratio 1:1" in texts and names[1] in texts and names[2] not in texts
    rows = csv_text(fig.data).splitlines()
    assert rows[0].endswith(",run") and {r.rsplit(",", 1)[1] for r in rows[1:]} == {"ratio 1:1", names[1]}


def test_a_new_run_joins_the_opened_ones_as_the_live_run(ui, ring_runs):
    w = ui.make(fake=True, wait=False, open_runs=[str(ring_runs[0])])
    w.tabs.setCurrentIndex(0)  # the Train tab loads TensorFlow (here: the stand-in) and prepares
    ui.wait_prepared(w)
    w.start()
    w.core.train(40)
    ui.wait_steps(w, 40)
    w.refresh()
    live, opened = w.review.runs.entries
    assert live.key == LIVE and live.label == "run0"  # named after its run directory
    assert {"run0: loss/D", f"{opened.label}: loss/D"} <= set(w.plots.curves())


def test_an_opened_finished_run_that_is_resumed_is_drawn_on(ui, ring_runs, tmp_path):
    """A finished run is resumed in its own directory (`--resume`): the window that has it open draws the
    resumed steps within its next look at stopped runs, from the record rebuilt after the cut."""
    from tests.core.helpers import main_cmd
    from app.review import STOPPED_EVERY
    run_dir = tmp_path / "copy"
    shutil.copytree(ring_runs[0], run_dir)
    w = ui.make(fake=True, wait=False, open_runs=[str(run_dir)])
    w.refresh()
    assert w.plots.curves()["loss/D"].xData[-1] < 300  # one run shown: its curves carry no run label
    subprocess.run(main_cmd("--headless", "--resume", str(run_dir), "--steps", "360", "--quiet"), cwd=REPO,
                   check=True, capture_output=True, timeout=300)
    for _ in range(STOPPED_EVERY):
        w.review.poll()
    w.refresh()
    steps = w.plots.curves()["loss/D"].xData
    assert steps[-1] >= 350 and np.all(np.diff(steps) > 0)  # one timeline: the cut's rows are not drawn twice


def test_open_run_reports_a_folder_that_is_not_a_run(ui, tmp_path):
    w = ui.make(fake=True, wait=False)
    assert not w.open_runs([str(tmp_path)])
    assert "is not a run directory" in w.last_error[0]
    assert w.review.runs.entries == []


def test_open_with_screenshot_saves_the_comparison_and_exits_0(ring_runs, tmp_path):
    out = tmp_path / "cmp.png"
    env = {"QT_QPA_PLATFORM": "offscreen", "FREEZEFRAME_SETTINGS": str(tmp_path / "s.ini")}
    import os
    r = subprocess.run([sys.executable, "main.py", "--open", *map(str, ring_runs), "--screenshot", str(out)],
                       cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    img = QImage(str(out))
    assert (img.width(), img.height()) == (1440, 900)
    bad = subprocess.run([sys.executable, "main.py", "--open", str(tmp_path)], cwd=REPO, env={**os.environ, **env},
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "not a run directory" in bad.stderr


def test_reviewing_a_finished_run_shows_its_last_step_not_a_live_looking_step_0(ui, ring_runs):
    """`--open` on a finished 300-step run read "Step 0" and "0.0 s" in the status bar, the numbers of a run
    about to start; it reads the reviewed run's last step and nothing live. Two runs: no one step is theirs."""
    w = ui.make(fake=True, wait=False, open_runs=[str(ring_runs[0])])
    w.refresh()
    sp = w.status_panel
    assert sp.step_label.text() == "Step 300" and sp.elapsed_label.text() == "–"
    assert "no run trains" in sp.step_label.toolTip()
    w.open_runs([str(ring_runs[1])])
    w.refresh()
    assert sp.step_label.text() == "Step –"

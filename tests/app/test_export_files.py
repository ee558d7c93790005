"""Exported figures and data from a real training run: true vectors, exact page and pixel sizes, CSV
that matches the run's own record, and curves that stay small and faithful on long runs."""
from __future__ import annotations

import csv
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app.export import CSV_HEADER, Figure, svg_bytes, write_csv, write_pdf, write_png, write_svg  # noqa: E402
from training_core.figures import FigureSpec, minmax_decimate  # noqa: E402
from training_core.runs import RunData, read_run  # noqa: E402
from training_core import MetricsBatch, PhaseBlock, ema_smooth, read_events, read_scalars
from training_core.base import events  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def run_dir(frozen_ring_run: Path) -> Path:
    return frozen_ring_run


@pytest.fixture
def store(run_dir, qapp) -> RunData:
    return read_run(run_dir)


def mediabox_in(pdf: bytes) -> tuple[float, float]:
    boxes = re.findall(rb"/MediaBox\s*\[\s*([-0-9.]+)\s+([-0-9.]+)\s+([-0-9.]+)\s+([-0-9.]+)\s*\]", pdf)
    assert len(boxes) == 1, "one page"
    x0, y0, x1, y1 = map(float, boxes[0])
    return (x1 - x0) / 72.0, (y1 - y0) / 72.0


def test_svg_is_true_vector(store, tmp_path):
    path = tmp_path / "fig.svg"
    write_svg(Figure(store, FigureSpec(width_in=7.16, height_in=3.0)), path)
    root = ET.parse(path).getroot()
    tags = [el.tag.removeprefix(SVG_NS) for el in root.iter()]
    assert tags.count("path") + tags.count("polyline") >= 12 * 2 + 2  # every curve is a line, not pixels
    assert "image" not in tags
    texts = [el.text or "" for el in root.iter(SVG_NS + "text")]
    assert "Training step" in texts and "Loss" in texts and "D" in texts
    assert root.get("width") == f"{7.16 * 25.4:g}mm" and root.get("height") == f"{3 * 25.4:g}mm"


@pytest.mark.parametrize("w,h", [(7.16, 3.0), (3.5, 2.6), (89 / 25.4, 60 / 25.4)])
def test_pdf_page_is_the_size_asked(store, tmp_path, w, h):
    path = tmp_path / "fig.pdf"
    write_pdf(Figure(store, FigureSpec(width_in=w, height_in=h)), path)
    data = path.read_bytes()
    pw, ph = mediabox_in(data)
    assert abs(pw - w) < 0.001 and abs(ph - h) < 0.001
    assert b"/Subtype /Image" not in data  # no raster anywhere
    assert b"/FontFile" in data  # text is text, with its font embedded


@pytest.mark.parametrize("dpi", [150, 300])
def test_png_pixels_are_inches_times_dpi(store, tmp_path, dpi):
    from PySide6.QtGui import QImage
    path = tmp_path / "fig.png"
    write_png(Figure(store, FigureSpec(plots=["updates"], width_in=3.5, height_in=2.6)), path, dpi)
    img = QImage(str(path))
    assert (img.width(), img.height()) == (round(3.5 * dpi), round(2.6 * dpi))
    assert abs(img.dotsPerMeterX() * 0.0254 - dpi) < 0.5  # the DPI is in the file, for layout programs
    assert img.pixelColor(0, 0).name() == "#ffffff"  # paper theme: white page


def test_csv_agrees_with_scalars_and_smoothing(store, run_dir, tmp_path):
    spec = FigureSpec(smoothing=0.75)
    fig = Figure(store, spec)
    path = tmp_path / "fig.csv"
    n = write_csv(fig.data, path)
    lines = path.read_text().splitlines()
    assert lines[0] == CSV_HEADER == "step,wall_time,tag,value,smoothed,run"
    rows = list(csv.DictReader(lines))
    assert len(rows) == n and {r["run"] for r in rows} == {run_dir.name}
    ours: dict[str, list[dict]] = {}
    for r in rows:
        ours.setdefault(r["tag"], []).append(r)
    scalars = read_scalars(run_dir)
    expected = {t for t in scalars if t.startswith("loss/") or t.startswith("update_ratio/")}
    assert set(ours) == expected
    for tag, rs in ours.items():
        s = scalars[tag]
        steps = np.array([int(r["step"]) for r in rs])
        values = np.array([float(r["value"]) for r in rs])
        assert np.array_equal(steps, s.steps)
        np.testing.assert_allclose([float(r["wall_time"]) for r in rs], s.wall_time, atol=1e-3)
        np.testing.assert_allclose(values, s.values, rtol=1e-6, atol=1e-12)
        smoothed, _ = ema_smooth(values, 0.75)
        np.testing.assert_allclose([float(r["smoothed"]) for r in rs], smoothed, rtol=1e-6, atol=1e-12)
    assert [int(r["step"]) for r in rows] == sorted(int(r["step"]) for r in rows)


def test_absolute_updates_export_update_norm_tags(store, tmp_path):
    fig = Figure(store, FigureSpec(plots=["updates"], update_kind="update_norm", variables=["generator"]))
    tags = {c.tag for p in fig.data.plots for c in p.curves}
    assert tags == {f"update_norm/{p}" for p in store.var_paths if p.startswith("generator/")}
    assert fig.data.plots[0].reference is None  # the 1e-3 rule is about ratios only


def test_frozen_variables_drawn_apart_at_a_floor(store, tmp_path):
    fig = Figure(store, FigureSpec(plots=["updates"]))
    plot = fig.data.plots[0]
    frozen = [c for c in plot.curves if c.frozen is not None and c.frozen.all()]
    assert {c.tag for c in frozen} == {"update_ratio/discriminator/dense_1/kernel",
                                        "update_ratio/discriminator/dense_1/bias"}
    assert all((c.values == 0).all() for c in frozen)  # exact freezing: nothing moved
    labels = [e.label for e in plot.legend]
    assert "dense_1 (frozen)" in labels and "10⁻³ reference" in labels
    root = ET.fromstring(svg_bytes(fig))
    texts = [el.text for el in root.iter(SVG_NS + "text")]
    assert "0" in texts  # the zeros have a labelled floor on the log axis instead of vanishing


def test_markers_and_custom_labels_are_text(store, tmp_path):
    store.add_event(events.Freeze(step=200, scopes=["generator"]))
    store.add_event(events.LearningRate(step=300, phase="D", value=5e-5))
    spec = FigureSpec(labels={"losses": ("Iteration", "BCE loss")})
    texts = [el.text for el in ET.fromstring(svg_bytes(Figure(store, spec))).iter(SVG_NS + "text")]
    assert "freeze: generator" in texts and "lr D=5e-05" in texts
    assert "Iteration" in texts and "BCE loss" in texts
    off = [el.text for el in ET.fromstring(svg_bytes(Figure(store, spec.copy(markers=False, legend=False))))
           .iter(SVG_NS + "text")]
    assert "freeze: generator" not in off and "D" not in off


def test_long_run_svg_stays_small_and_keeps_spikes(qapp):
    """1e5 steps per phase: min/max decimation keeps the SVG small without losing a one-step spike."""
    n, paths = 100_000, tuple(f"generator/dense_{i}/{leaf}" for i in range(3) for leaf in ("kernel", "bias"))
    rng = np.random.default_rng(0)
    store = RunData()
    for phase, offset in (("D", 0), ("G", 1)):
        steps = np.arange(n, dtype=np.int64) * 2 + 1 + offset
        loss = 1.0 + np.cumsum(rng.normal(0, 0.01, n))
        if phase == "D":
            loss[n // 2] += 50.0  # one spike
        v = np.abs(rng.normal(1e-3, 3e-4, (n, len(paths))))
        store.add_batch(MetricsBatch([PhaseBlock(phase, paths if phase == "G" else tuple("discriminator/" + p[10:]
                                                                                          for p in paths),
                                                 steps, steps * 0.01, loss, v, v, v,
                                                 np.zeros((n, len(paths)), bool), steps % 20 < 2)]))
    fig = Figure(store, FigureSpec(width_in=7.16, height_in=3.0))
    data = svg_bytes(fig)
    assert len(data) < 2_000_000
    x = np.arange(n, dtype=float)
    y = store.loss("D")[2]
    keep = minmax_decimate(x, y, 0.0, float(n), 900)
    assert n // 2 in keep and len(keep) <= 4 * 900
    assert max(fig.data.plots[0].curves[0].values) > 40  # the spike is in the data the figure draws


def test_export_while_training_runs(tmp_path, qapp):
    """Figures come from the GUI-side store, so exporting mid-run needs no pause and no trainer call:
    the trainer thread runs on while the main thread writes figures from the batches it received."""
    import queue
    import threading

    from training_core import Observer, RunConfig, Trainer

    batches: queue.Queue = queue.Queue()

    class Relay(Observer):  # what the window's adapter does: hand batches to the GUI thread
        def on_metrics(self, batch):
            batches.put(batch)

    trainer = Trainer(RunConfig(example="ring", steps=1000, run_dir=str(tmp_path / "live"), tensorboard=False),
                      Relay())
    trainer.prepare()
    training = threading.Thread(target=trainer.run)
    training.start()
    store, during, last = RunData(), 0, -1
    while training.is_alive():
        try:  # wait for the next batch (not a sleep: it returns as soon as one arrives)
            store.add_batch(batches.get(timeout=0.5))
        except queue.Empty:
            continue
        while not batches.empty():
            store.add_batch(batches.get())
        if store.phases and store.last_step != last and trainer.status().running:
            last = store.last_step
            write_svg(Figure(store, FigureSpec()), tmp_path / "live.svg")
            during += 1
    training.join()
    while not batches.empty():
        store.add_batch(batches.get())
    assert during >= 2  # several exports while the trainer was running
    assert trainer.status().step == 1000 and store.last_step == 1000
    assert [e.kind for e in read_events(tmp_path / "live") if e.kind in ("pause", "stop")] == ["stop"]


@pytest.mark.parametrize("size, layout, advice", [
    ((3.5, 2.0), "column", "use a height of at least"),   # stacked, too short: taller, or side by side
    ((3.5, 2.0), "column", "or a row layout"),
    ((7.16, 1.2), "row", "use a height of at least"),      # side by side, short: no row layout to offer
    ((3.0, 4.0), "row", "or a column layout"),              # side by side, each panel too narrow
    ((0.6, 0.6), "auto", "no height is enough at this width: make it wider"),  # said 'a height of 40 in'
])
def test_a_cramped_figure_gets_advice_that_fixes_what_is_short(store, size, layout, advice):
    fig = Figure(store, FigureSpec(plots=["losses", "updates"], width_in=size[0], height_in=size[1], layout=layout))
    problem = fig.check()
    assert advice in problem and "\n" not in problem, problem
    if layout == "row":
        assert "a row layout" not in problem


def test_marker_label_rows_grow_to_hold_every_label(qapp):
    """A panel laid out again for fewer label rows than its labels take (stacked panels share the narrowest
    plot width, which crowds the labels) reserves the rows they need: a label was drawn above the page, in a
    row with no room kept for it."""
    store = RunData()
    steps = np.arange(1, 3001)
    r = np.full((3000, 1), 1e-3)
    store.add_batch(MetricsBatch([PhaseBlock("D", ("d/w",), steps, steps * 0.01, np.linspace(2, 1, 3000), r, r, r,
                                             np.zeros((3000, 1), bool), np.ones(3000, bool))]))
    for step, scopes in ((270, ["discriminator/dense_2"]), (574, ["discriminator/dense_2", "generator/out"]),
                         (969, [])):
        store.add_event(events.Freeze(step=step, scopes=scopes))
    fig = Figure(store, FigureSpec(plots=["losses"], width_in=7.16, height_in=3))
    [panel] = fig.layout()
    need = max(lab.top_row for lab in panel.labels) + 1
    assert need >= 2  # two long freeze labels overlap: a second row
    for asked in range(need):  # as Figure.layout asks panels side by side for the rows of the tallest
        assert panel.prepare(asked) >= need
        assert all(lab.top_row < panel.rows for lab in panel.labels)


def test_a_lone_point_is_drawn_and_an_empty_update_plot_says_why(qapp):
    """A phase with one recorded step drew nothing (paths need two points), and a run too short for any
    per-variable row said "no data yet" of a finished run."""
    from app.export.panel import LONE_POINT_PT
    store = RunData()
    for phase, step, loss in (("D", 1, 1.3), ("G", 2, 0.7)):
        z = np.zeros((1, 1))
        store.add_batch(MetricsBatch([PhaseBlock(phase, (f"{phase.lower()}/w",), np.array([step]), np.array([0.1]),
                                                 np.array([loss]), z, z, z, np.zeros((1, 1), bool),
                                                 np.zeros(1, bool))]))
    fig = Figure(store, FigureSpec(plots=["losses", "updates"], width_in=7.16, height_in=2))
    losses, updates = fig.layout()
    paths = [losses._path(x, y) for layer in losses._layers() for _, x, y in layer]
    assert sum(1 for pth in paths if not pth.isEmpty()) >= 2  # a dash for each phase's one point
    assert all(pth.isEmpty() or abs(pth.boundingRect().width() - LONE_POINT_PT) < 1e-6 for pth in paths)
    svg = svg_bytes(fig).decode()
    assert "no per-variable records" in svg and "no data yet" not in svg

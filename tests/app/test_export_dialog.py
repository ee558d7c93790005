"""The export dialog and the File-menu actions, on real widgets and a real run's store (offscreen)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QGuiApplication, QImage, QKeySequence
from PySide6.QtWidgets import QFileDialog, QLabel, QMainWindow

from app.export.actions import install_export_menu
from app.export.clipboard import save_window_screenshot
from app.export.dialog import ExportDialog
from training_core.figures import FigureSpec
from training_core.runs import RunData, read_run
from training_core import MetricsBatch, PhaseBlock



@pytest.fixture(scope="module")
def run_dir(frozen_ring_run: Path) -> Path:
    return frozen_ring_run


@pytest.fixture
def store(run_dir) -> RunData:
    return read_run(run_dir)


@pytest.fixture
def dialog(qtbot, store) -> ExportDialog:
    d = ExportDialog(lambda: store, FigureSpec())  # losses and updates (the runs' own defaults: test_export_paper.py)
    qtbot.addWidget(d)
    d.resize(1100, 650)
    d.show()  # never exec(): the dialog is modeless and the test keeps control
    d.refresh_preview()
    return d


def test_preview_shows_the_figure_and_follows_options(qtbot, dialog):
    img = dialog.preview_image
    assert img is not None and not dialog.preview.pixmap().isNull()
    assert abs(img.width() / img.height() - 7.16 / 2.6) < 0.02
    assert img.pixelColor(2, 2).name() == "#ffffff"
    dialog.theme.setCurrentIndex(1)  # as on screen (dark); the preview follows after a short debounce
    qtbot.waitUntil(lambda: dialog.preview_image.pixelColor(2, 2).lightness() < 60, timeout=60_000)
    dialog.height_box.setValue(5.0)
    qtbot.waitUntil(lambda: abs(dialog.preview_image.width() / dialog.preview_image.height() - 7.16 / 5) < 0.02,
                    timeout=60_000)


def test_x_may_be_each_phases_steps(dialog):
    """The runs' phases are offered as x axes (`--x G`), and the figure then counts G's steps."""
    box = dialog.x_axis
    assert [box.itemData(i) for i in range(box.count())] == ["step", "time", "D", "G"]
    box.setCurrentIndex(box.findData("G"))
    fig = dialog.figure()
    assert fig.data.x_unit == "steps:G" and fig.x_range[1] == 200  # 400 steps at 1:1


def test_size_presets_and_units(dialog):
    dialog.preset.setCurrentText("single column (3.5 in)")
    assert dialog.width_box.value() == pytest.approx(3.5)
    dialog.units.setCurrentText("mm")
    assert dialog.width_box.value() == pytest.approx(88.9, abs=0.05)
    assert dialog.spec().width_in == pytest.approx(3.5, abs=1e-3)
    dialog.width_box.setValue(120)
    assert dialog.preset.currentText() == "custom"
    assert dialog.spec().width_in == pytest.approx(120 / 25.4, abs=1e-3)


def test_exports_every_format_with_edited_labels(dialog, tmp_path):
    dialog.label_edits["losses"][1].setText("BCE loss")
    svg = dialog.export_to(tmp_path / "f.svg")
    texts = [el.text for el in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}text")]
    assert "BCE loss" in texts and "Loss" not in texts
    dialog.format_box.setCurrentText("PNG")
    dialog.dpi.setValue(100)
    png = dialog.export_to(tmp_path / "f")  # no extension: the chosen format's is added
    assert png.name == "f.png"
    assert QImage(str(png)).size().toTuple() == (716, 260)
    pdf = dialog.export_to(tmp_path / "f.pdf")
    box = re.search(rb"/MediaBox\s*\[\s*0\s+0\s+([0-9.]+)\s+([0-9.]+)", pdf.read_bytes())
    assert (float(box.group(1)), float(box.group(2))) == pytest.approx((7.16 * 72, 2.6 * 72), abs=0.01)
    rows = dialog.export_csv_to(tmp_path / "f.csv")
    assert rows == len((tmp_path / "f.csv").read_text().splitlines()) - 1 > 400


def test_invalid_options_show_one_line_instead_of_failing(dialog):
    for box in dialog.plot_boxes.values():
        box.setChecked(False)
    dialog.refresh_preview()
    assert "no plot chosen" in dialog.error.text()
    dialog.plot_boxes["losses"].setChecked(True)
    dialog.refresh_preview()
    assert dialog.error.text() == ""


def test_preview_follows_a_store_that_keeps_growing(qtbot, store, dialog):
    """While training runs the store grows; the dialog re-reads it (the trainer is never involved)."""
    last = store.last_step
    steps = np.arange(last + 1, last + 101, dtype=np.int64)
    paths = tuple(p for p in store.var_paths if store.phase_of(p) == "D")
    n, v = len(steps), len(paths)
    store.add_batch(MetricsBatch([PhaseBlock("D", paths, steps, steps * 0.01, np.ones(n), np.full((n, v), 1e-3),
                                             np.full((n, v), 1e-3), np.ones((n, v)), np.zeros((n, v), bool),
                                             np.ones(n, bool))]))
    dialog.refresh_preview()
    assert f"data to step {last + 100}" in dialog.info.text()


def test_copy_puts_an_image_and_svg_on_the_clipboard(dialog):
    QGuiApplication.clipboard().clear()
    dialog.copy_button.click()
    mime = QGuiApplication.clipboard().mimeData()
    assert mime.hasImage()
    svg = bytes(mime.data("image/svg+xml"))
    assert svg.startswith(b"<?xml") and b"<image" not in svg


def test_menu_actions(qtbot, store, tmp_path, monkeypatch):
    w = QMainWindow()
    w.setCentralWidget(QLabel("Freezeframe"))
    qtbot.addWidget(w)
    w.resize(640, 400)
    w.show()
    file_menu = w.menuBar().addMenu("File")
    actions = install_export_menu(w, file_menu, lambda: store)
    texts = [a.text() for a in file_menu.actions() if a.text()]
    assert texts == ["Export figure…", "Export data as CSV…", "Copy figure to clipboard", "Save window screenshot"]
    assert actions.figure_action.shortcut() == QKeySequence("Ctrl+E")

    actions.figure_action.trigger()  # returns at once: the dialog is modeless
    assert actions.dialog is not None and actions.dialog.isVisible()
    qtbot.addWidget(actions.dialog)  # closed after the test: a window left on top takes later tests' mouse
    actions.dialog.smoothing.setValue(0.3)

    target = tmp_path / "menu.csv"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    actions.csv_action.trigger()
    lines = target.read_text().splitlines()
    assert lines[0] == "step,wall_time,tag,value,smoothed,run"
    d0 = [line.split(",") for line in lines[1:] if ",loss/D," in line][:3]
    assert float(d0[1][4]) == pytest.approx((0.7 * 0.3 * float(d0[0][3]) + 0.7 * float(d0[1][3])) / (1 - 0.09))

    QGuiApplication.clipboard().clear()
    actions.copy_action.trigger()
    assert QGuiApplication.clipboard().mimeData().hasImage()

    for ratio in (1, 2):
        shot = tmp_path / f"shot{ratio}.png"
        monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, s=shot, **k: (str(s), ""))
        actions.shot_actions[ratio - 1].trigger()
        assert QImage(str(shot)).size().toTuple() == (w.width() * ratio, w.height() * ratio)


def test_screenshot_is_the_window_itself(qtbot, tmp_path):
    w = QMainWindow()
    label = QLabel("x")
    label.setStyleSheet("background: #00ff00")
    w.setCentralWidget(label)
    qtbot.addWidget(w)
    w.resize(300, 200)
    w.show()
    pix = save_window_screenshot(w, tmp_path / "s.png", 2.0)
    img = QImage(str(tmp_path / "s.png"))
    assert pix.devicePixelRatio() == 2.0 and img.size().toTuple() == (600, 400)
    assert img.pixelColor(300, 200).name() == "#00ff00"

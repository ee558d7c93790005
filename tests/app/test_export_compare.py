"""Paper figures of several runs and figures that keep everything readable: `--export RUN1 RUN2 RUN3` as a
user runs it (true vectors, each run named, subset fonts, a CSV `run` column), every marker label kept
at single and double column, and a height that keeps each plot readable (chosen, or warned about)."""
from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from pypdf import PdfReader

from app.export import Figure, recommended_height, svg_bytes
from app.export.dialog import ExportDialog
from training_core import MetricsBatch, PhaseBlock
from training_core.base import events
from training_core.figures import MARKER_KINDS, FigureSpec
from training_core.runs import RunData
from tests import zygote

REPO = Path(__file__).resolve().parents[2]
SVG_TEXT = "{http://www.w3.org/2000/svg}text"


def export(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["QT_QPA_PLATFORM"] = "offscreen"
    return zygote.run([sys.executable, "main.py", "--export", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=180)


def svg_texts(data: bytes) -> list[str]:
    return [el.text or "" for el in ET.fromstring(data).iter(SVG_TEXT)]


def test_three_runs_in_one_vector_figure_each_named(ring_runs, tmp_path):
    runs = [str(d) for d in ring_runs]
    svg, pdf, table = tmp_path / "cmp.svg", tmp_path / "cmp.pdf", tmp_path / "cmp.csv"
    r = export(*runs, "--labels", "1:1,3:1,5:1", "--plots", "losses,updates,metrics", "--vars",
               "discriminator/dense_1/kernel", "--out", str(svg), "--csv", str(table))
    assert r.returncode == 0, r.stderr
    assert "3 runs" in r.stdout and r.stderr == ""  # no height given: one that keeps every plot readable
    root = ET.parse(svg).getroot()
    tags = [el.tag.rsplit("}", 1)[1] for el in root.iter()]
    assert "image" not in tags and tags.count("path") + tags.count("polyline") > 20
    texts = svg_texts(svg.read_bytes())
    for label in ("1:1", "3:1", "5:1", "D", "G", "modes_covered", "high_quality", "discriminator/dense_1/kernel"):
        assert label in texts, label  # the metrics by the names the experiment gave them
    rows = list(csv.DictReader(io.StringIO(table.read_text())))
    assert {r["run"] for r in rows} == {"1:1", "3:1", "5:1"}
    assert {r["tag"] for r in rows} >= {"loss/D", "metric/modes_covered", "update_ratio/discriminator/dense_1/kernel"}

    r = export(*runs, "--plots", "losses,updates", "--size", "7.16x3", "--out", str(pdf))
    assert r.returncode == 0, r.stderr  # drawn, and said: 12 variables cannot each have a line style
    assert r.stderr.strip() == "warning: 12 variables per run share 4 line styles; choose up to 4 with --vars " \
                               "(Variables in the export dialog)"
    data = pdf.read_bytes()
    assert b"/Subtype /Image" not in data
    font_sizes = [int(m) for m in re.findall(rb"/Length1 (\d+)", data)]  # embedded TrueType programs
    assert font_sizes and all(n < 60_000 for n in font_sizes), font_sizes  # subsets: DejaVuSans.ttf is 757 kB
    assert len(data) < 400_000, len(data)  # 3 runs x 12 variables and both losses, raw and smoothed
    content = _pdf_content(pdf)
    assert re.search(rb"\sS\n", content)  # the pages' drawing, read: it strokes ...
    assert content.count(b" c\n") == 0  # ... lines as strokes, not outlines of strokes (Qt's translucent pens)
    text = _pdf_text(pdf)
    for name in (d.name for d in ring_runs):  # the legend names each run by its directory
        assert name in text, (name, text)


def _pdf_content(pdf: Path) -> bytes:
    """Every page's content stream, decoded by pypdf (pure Python, pinned in requirements-dev.txt): the
    operators the figure draws with, and nothing else (no font program or image can pass for them)."""
    return b"".join(page.get_contents().get_data() for page in PdfReader(pdf).pages)


def _pdf_text(pdf: Path) -> str:
    """The text a reader would copy out of every page, read by pypdf: a pure-Python library pinned in
    requirements-dev.txt, so the check runs on every machine (no poppler's `pdftotext`, whose absence
    crashed the test, and which a skip would have hidden). pypdf writes a space between words as a tab:
    runs of blanks become one space, as `pdftotext` gives them."""
    return re.sub(r"[ \t]+", " ", "\n".join(page.extract_text() for page in PdfReader(pdf).pages))


def busy_run() -> RunData:
    """2,000 steps with many markers close together, as a hand-tuned run leaves them: a freeze with a long
    scope list, lr changes 40 steps apart near 8,900 (drawn at 1/2000 of the width apart), and 12 Step pauses
    (which a default figure leaves out: its tests ask for every kind)."""
    store = RunData()
    steps = np.arange(1, 10_001, dtype=np.int64)
    paths = ("generator/dense_1/kernel", "generator/dense_1/bias")
    v = np.full((len(steps), 2), 1e-3)
    store.add_batch(MetricsBatch([PhaseBlock("G", paths, steps, steps * 0.01, np.linspace(2, 1, len(steps)), v, v, v,
                                             np.zeros_like(v, bool), np.ones(len(steps), bool))]))
    store.add_event(events.Freeze(step=2_000, scopes=["discriminator/dense_1", "generator/dense_2"]))
    for k, at in enumerate((8_840, 8_880, 8_900, 8_940)):
        store.add_event(events.LearningRate(step=at, phase="D", value=1e-4 / (k + 2)))
    store.add_event(events.Ratio(step=8_920, policy={"policy": "fixed", "ratio": [5, 1]}))
    for at in range(9_500, 9_512):
        store.add_event(events.Pause(step=at, reason="step"))
    return store


@pytest.mark.parametrize("width", [3.5, 7.16])
def test_every_marker_label_is_kept_at_single_and_double_column(qapp, width):
    store = busy_run()
    fig = Figure(store, FigureSpec(width_in=width, height_in=2.6, plots=["losses", "updates"], markers=MARKER_KINDS))
    texts = svg_texts(svg_bytes(fig))
    wanted = [m.label for m in store.markers if m.kind != "pause"] + ["pause (step) ×12"]
    for label in wanted:  # each once, in full, at its line (tests/app/test_export_paper.py measures where)
        assert texts.count(label) == 1, (label, texts)
    assert texts.count("pause (step) ×12") == 1 and "pause (step)" not in texts  # merged, not stacked


def test_a_height_too_small_is_named_and_the_recommended_one_is_readable(qapp, tmp_path, ring_runs):
    store = busy_run()
    cramped = Figure(store, FigureSpec(width_in=3.5, height_in=2.6, plots=["losses", "updates"], markers=MARKER_KINDS))
    problem = cramped.check()
    assert "use a height of at least" in problem
    better = recommended_height(cramped.spec, cramped.data)
    assert better > 2.6 and f"{better:.2f} in" in problem
    assert Figure(store, cramped.spec.copy(height_in=better)).check() == ""
    out = tmp_path / "small.pdf"
    r = export(str(ring_runs[0]), "--size", "3.5x2.6", "--out", str(out))
    assert r.returncode == 0 and out.is_file()  # drawn as asked ...
    assert r.stderr.startswith("warning: at 3.50 × 2.60 in") and r.stderr.count("\n") == 1  # ... and said so
    r = export(str(ring_runs[0]), "--size", "3.5", "--out", str(out))
    assert r.returncode == 0 and r.stderr == "" and "3.5 x " in r.stdout


def test_the_dialog_warns_and_offers_a_readable_height(qtbot, qapp):
    store = busy_run()
    d = ExportDialog(lambda: [("busy", store)], FigureSpec(width_in=3.5, height_in=2.6, markers=MARKER_KINDS))
    qtbot.addWidget(d)
    d.resize(1100, 650)
    d.show()
    d.refresh_preview()
    assert d.warning.text().startswith("Too small:") and d.fix_height.isVisible()
    d.fix_height.click()
    d.refresh_preview()
    assert d.height_box.value() > 2.6 and d.warning.text() == "" and not d.fix_height.isVisible()


def test_the_windows_dialog_opens_at_a_readable_height_until_the_user_sets_one(qtbot, qapp):
    """File → Export figure… used to open on a warning about its own default height."""
    store = busy_run()
    d = ExportDialog(lambda: [("busy", store)], FigureSpec(width_in=3.5, height_in=2.6, markers=MARKER_KINDS),
                     auto_height=True)
    qtbot.addWidget(d)
    d.show()
    d.refresh_preview()
    assert d.height_box.value() > 2.6 and d.warning.text() == "" and not d.fix_height.isVisible()
    d.height_box.setValue(2.6)  # the user's choice stands, with the warning
    d.refresh_preview()
    assert d.height_box.value() == 2.6 and d.warning.text().startswith("Too small:")


@pytest.mark.parametrize("args,needle", [
    (["{run}", "{run}", "--labels", "a", "--out", "{out}"], "--labels gives 1 name(s) for 2 run(s)"),
    (["{run}", "{tmp}", "--out", "{out}"], "not a run directory"),
    (["{run}", "--colour-by", "size", "--out", "{out}"], "invalid choice"),
])
def test_bad_comparison_input_is_one_line_and_exit_2(ring_runs, tmp_path, args, needle):
    out = tmp_path / "fig.pdf"
    subs = {"tmp": str(tmp_path), "run": str(ring_runs[0]), "out": str(out)}
    r = export(*[a.format(**subs) for a in args])
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
    assert not out.exists()

"""Figures that go into a paper unedited (issue 26, item 3), checked on what the exported SVG draws, as a
reviewer reads it: each marker's label at its own line and clear of every other text, one legend of runs,
panels lined up, log axes with two labelled decades, metrics named as the experiment named them, markers
chosen by kind, axis-label keys that say which keys work, and the dialog's defaults. The runs are real ring
training steered as a user steers one (tests/app/conftest.py: `steered_runs`, `ring_runs`) and a real sweep
(`freeze_sweep`), exported with the two commands of the issue."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from app.export import Figure, svg_bytes
from app.export.dialog import ExportDialog
from app.export.text import TextStyle
from training_core.figures import MARKER_KINDS, PAPER_MARKERS, FigureSpec
from training_core.runs import read_run
from tests import zygote
from tests.app import svg_shapes as svg

REPO = Path(__file__).resolve().parents[2]
MARKER_TEXT = "#4d4d4d"  # the paper theme's colour of control markers' labels (theme.py)
MARKER_LINE = "#8c8c8c"
AXIS = "#000000"


def export(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["QT_QPA_PLATFORM"] = "offscreen"
    return zygote.run([sys.executable, "main.py", "--export", *args], cwd=REPO, env=env, capture_output=True,
                      text=True, timeout=180)


def rect(t: svg.Text) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of a text on the page, measured in the font it was drawn with; of a rotated
    text (a y label read upwards), the box of its rotated outline: the baseline runs along `t.direction`
    from the anchor, the ascent to its left."""
    style = TextStyle(t.size, bold=t.bold)
    (ux, uy), w = t.direction, style.width(t.text)
    vx, vy = uy, -ux  # "up" from the baseline
    corners = [(t.x + a * ux + b * vx, t.y + a * uy + b * vy) for a in (0.0, w) for b in (-style.descent, style.ascent)]
    xs, ys = [c[0] for c in corners], [c[1] for c in corners]
    return min(xs), min(ys), max(xs), max(ys)


def overlap(a: tuple, b: tuple) -> bool:
    return a[0] < b[2] - 0.05 and b[0] < a[2] - 0.05 and a[1] < b[3] - 0.05 and b[1] < a[3] - 0.05


def plot_rects(shapes: list[svg.Shape]) -> list[tuple[float, float, float, float]]:
    """(left, top, right, bottom) of each panel's plot area: its y axis and x axis, drawn one after the other."""
    axes = [s for s in shapes if s.stroke == AXIS and abs(s.width - 0.6) < 1e-6 and not s.dashed
            and (svg.vertical(s) or svg.horizontal(s))]
    out = []
    for left, bottom in zip(axes[::2], axes[1::2]):
        assert svg.vertical(left) and svg.horizontal(bottom)
        out.append((left.xs[0], min(left.ys), max(bottom.xs), bottom.ys[0]))
    return out


@pytest.fixture(scope="module")
def issue_figures(steered_runs, ring_runs, freeze_sweep, tmp_path_factory) -> dict[str, bytes]:
    """The issue's two exports as SVG: three runs with losses, metrics and updates at 7.16 in, and one run with
    losses and updates at 3.5 in; three steered runs, whose markers crowd each other, at 7.16 in; and a sweep,
    whose freeze only two settings have is labelled with their setting, in panels side by side at 7.16 in
    (two by two; also as bands: `--bands minmax`) and narrower (4.5 in, a row of two)."""
    out = tmp_path_factory.mktemp("paper")
    made = {}
    for name, args in {
        "three": [*map(str, ring_runs), "--plots", "losses,metrics,updates", "--size", "7.16"],
        "one": [str(steered_runs["steered"][0]), "--plots", "losses,updates", "--size", "3.5"],
        "steered": [*map(str, steered_runs["steered"]), "--plots", "losses,updates", "--size", "7.16"],
        "stacked": [*map(str, ring_runs), "--plots", "losses,metrics,updates", "--vars",
                    "discriminator/dense_1/kernel", "--size", "7.16", "--layout", "column"],
        "sweep": [str(freeze_sweep), "--plots", "losses,metrics,updates", "--size", "7.16"],
        "sweep-bands": [str(freeze_sweep), "--bands", "minmax", "--plots", "losses,metrics,updates", "--size", "7.16"],
        "sweep-narrow": [str(freeze_sweep), "--plots", "losses,updates", "--size", "4.5", "--layout", "row"],
    }.items():
        path = out / f"{name}.svg"
        r = export(*args, "--out", str(path))
        assert r.returncode == 0, r.stderr
        made[name] = path.read_bytes()
    return made


def marker_labels(texts: list[svg.Text], shapes: list[svg.Shape]) -> list[tuple[float, list[svg.Text]]]:
    """Each marker label of panel (a) as a reader finds it: up a line's leader (solid, from the plot's top) to the
    text whose row it ends in, standing within 3 pt right of the line (or left of it), and on down that text's
    lines below it, one row at a time, each starting (or ending) at the line too: (the line's x, its lines, top
    first). Every marker text must belong to exactly one label, and every dashed line of panel (a) to one
    label at least."""
    first = plot_rects(shapes)[0]  # panel (a), whose markers are labelled above it
    labels = [t for t in texts if t.fill == MARKER_TEXT]
    dashed = {round(s.xs[0], 2) for s in shapes if s.stroke == MARKER_LINE and s.dashed and svg.vertical(s)
              and first[0] <= s.xs[0] <= first[2] and abs(min(s.ys) - first[1]) < 0.01}
    leaders = [s for s in shapes if s.stroke == MARKER_LINE and not s.dashed and svg.vertical(s)
               and abs(max(s.ys) - first[1]) < 0.01]

    def anchored(t: svg.Text, x: float) -> str | None:
        left, _, right, _ = rect(t)
        return "start" if 0 < left - x <= 3.0 else "end" if 0 < x - right <= 3.0 else None

    heads = []
    for s in leaders:
        x, end = s.xs[0], min(s.ys)
        at = [t for t in labels if anchored(t, x) and rect(t)[1] - 1 <= end <= rect(t)[3]]
        assert len(at) == 1, (x, [t.text for t in at])  # the leader ends in the row of one text at its line
        heads.append((x, at[0]))
    out, claimed = [], []
    for x, head in heads:
        side, lines = anchored(head, x), [head]
        edge = rect(head)[0] if side == "start" else rect(head)[2]
        below = sorted((t for t in labels if t.y > head.y and t.y < first[1] and anchored(t, x) == side
                        and abs((rect(t)[0] if side == "start" else rect(t)[2]) - edge) < 0.05), key=lambda t: t.y)
        for t in below:  # the label's next lines, a row apart, until the next label's first line
            if any(t is h for _, h in heads) or t.y - lines[-1].y > 1.3 * (rect(t)[3] - rect(t)[1]):
                break
            lines.append(t)
        out.append((x, lines))
        claimed += lines
    assert sorted(id(t) for t in claimed) == sorted(id(t) for t in labels), (
        [t.text for t in labels if all(t is not c for c in claimed)])
    assert {round(x, 2) for x, _ in out} == dashed, (sorted(dashed), [(x, [t.text for t in ls]) for x, ls in out])
    return out


@pytest.mark.parametrize("name", ["three", "one", "steered", "sweep", "sweep-bands", "sweep-narrow"])
def test_each_marker_label_stands_at_its_line_clear_of_every_other_text(qapp, issue_figures, name):
    """Every label starts (or ends) within 3 pt of its line, its line's leader going up to it, and no text
    touches another or leaves the figure: a sweep's settings, too wide for a half-page panel, ran off their
    line and over the panel letter "(a)"; now they are wrapped, each line at the line. And no panel letter
    touches any text, a rotated y label included (by its rotated box): "(b)" of the three runs at 7.16 in
    printed over the top of "modes_covered"."""
    data = issue_figures[name]
    texts, shapes = svg.read(data)
    view = [float(v) for v in ET.fromstring(data).get("viewBox").split()]
    found = marker_labels(texts, shapes)
    labels = [t for t in texts if t.fill == MARKER_TEXT]
    assert len(found) >= 3 or name.startswith("sweep") or name == "three"
    if name == "steered":  # each seed changed things 12 steps after the previous: nine lines, each labelled
        for change in ("freeze: generator/dense_1", "lr D=5e-05", "ratio 2:1"):  # with the seeds that made it
            assert sum(" ".join(t.text for t in ls).count("steered-seed") for _, ls in found
                       if " ".join(t.text for t in ls).endswith(change)) == 3, change
    if name.startswith("sweep"):  # the freeze of two of the four settings, named once by what they share
        [(_, lines)] = found
        assert "".join(t.text for t in lines) == "freeze=discriminator/dense_1@90", [t.text for t in lines]
    others = [rect(t) for t in texts if t.fill != MARKER_TEXT]
    assert any(t.text == "(a)" for t in texts) and any(t.rotated for t in texts)
    letters = [t for t in texts if t.text in ("(a)", "(b)", "(c)", "(d)")]
    for letter in letters:  # a panel letter clear of every other text, rotated or not
        for t in texts:
            if t is not letter:
                assert not overlap(rect(letter), rect(t)), (letter.text, t.text, rect(letter), rect(t))
    leaders = [s for s in shapes if s.stroke == MARKER_LINE and not s.dashed and svg.vertical(s)]
    boxes = [rect(t) for t in labels]
    for i, a in enumerate(boxes):
        assert view[0] <= a[0] and a[2] <= view[0] + view[2] and view[1] <= a[1] and a[3] <= view[1] + view[3]
        for o in others:  # the panel letters, the legend of runs, the ticks: never under a label
            assert not overlap(a, o), (labels[i].text, o)
        for b in boxes[i + 1:]:
            assert not overlap(a, b)  # never over one another
        for s in leaders:  # no other label's line runs through this label
            if not (a[0] - 3 <= s.xs[0] <= a[0]) and not (a[2] <= s.xs[0] <= a[2] + 3):
                assert not (a[0] < s.xs[0] < a[2] and min(s.ys) < a[3] and max(s.ys) > a[1]), (labels[i].text, s.xs)


def test_the_runs_are_named_once_and_the_panels_line_up(qapp, issue_figures, ring_runs):
    texts, shapes = svg.read(issue_figures["three"])
    words = [t.text for t in texts]
    for run in ring_runs:  # the legend of runs was drawn under each of three panels
        assert words.count(run.name) == 1, words
    rects = plot_rects(shapes)
    assert len(rects) == 4  # losses, two metrics, updates, in a grid of two by two at 7.16 in
    for i, a in enumerate(rects):  # panels side by side share a top and an x axis height; above one another
        for b in rects[i + 1:]:  # a left and a right edge, whatever their legends
            side_by_side = abs(a[1] - b[1]) < 0.01 and abs(a[3] - b[3]) < 0.01
            stacked = abs(a[0] - b[0]) < 0.01 and abs(a[2] - b[2]) < 0.01
            diagonal = (a[2] < b[0] or b[2] < a[0]) and (a[3] < b[1] or b[3] < a[1])
            assert side_by_side or stacked or diagonal, (a, b)
    assert len({round(r[1], 2) for r in rects}) == 2 and len({round(r[0], 2) for r in rects}) == 2
    _, shapes = svg.read(issue_figures["stacked"])
    rects = plot_rects(shapes)
    assert len(rects) == 4 and len({(round(r[0], 2), round(r[2], 2)) for r in rects}) == 1  # one left, one right


@pytest.mark.parametrize("name", ["three", "stacked", "one", "steered"])
def test_every_log_axis_has_two_labelled_decades(qapp, issue_figures, name):
    """The update plot of three runs had one labelled tick, 10⁻³: no scale can be read from one."""
    texts, shapes = svg.read(issue_figures[name])
    rects = plot_rects(shapes)
    left, top, right, bottom = rects[-1]  # the updates panel, the last
    decades = [t for t in texts if t.text == "10" and t.x < left and top - 4 <= t.y <= bottom + 4]
    assert len(decades) >= 2, [t.text for t in texts]


def test_metrics_are_named_as_written_and_relabelled_by_their_names(qapp, issue_figures, ring_runs, tmp_path):
    words = [t.text for t in svg.read(issue_figures["three"])[0]]
    assert "modes_covered" in words and "high_quality" in words and "Modes covered" not in words
    out = tmp_path / "relabelled.svg"
    r = export(*map(str, ring_runs), "--plots", "metrics", "--ylabel", "modes_covered=Modes (of 8)",
               "--ylabel", "metric/high_quality=High-quality fraction", "--out", str(out))
    assert r.returncode == 0, r.stderr
    words = [t.text for t in svg.read(out.read_bytes())[0]]
    assert "Modes (of 8)" in words and "High-quality fraction" in words and "modes_covered" not in words


def test_a_wrong_ylabel_key_is_one_line_listing_the_keys_that_work(ring_runs, tmp_path):
    out = tmp_path / "fig.pdf"
    r = export(str(ring_runs[0]), "--plots", "losses,metrics", "--ylabel", "pca_fd=PCA-FD", "--out", str(out))
    assert r.returncode == 2 and not out.exists()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "pca_fd" in lines[0], r.stderr
    for key in ("losses", "metrics", "modes_covered", "high_quality"):  # the keys this figure has
        assert key in lines[0].split("use one of:")[1], lines[0]
    assert "updates" not in lines[0]  # not a plot of this figure


def test_markers_are_chosen_by_kind(qapp, steered_runs, tmp_path):
    run = str(steered_runs["steered"][0])
    out = tmp_path / "fig.svg"
    r = export(run, "--plots", "losses", "--markers", "freeze,ratio", "--out", str(out))
    assert r.returncode == 0, r.stderr
    texts, shapes = svg.read(out.read_bytes())
    labels = sorted(t.text for t in texts if t.fill == MARKER_TEXT)
    assert labels == ["freeze: generator/dense_1", "ratio 2:1"]  # the learning rate's change left out
    assert sum(1 for s in shapes if s.stroke == MARKER_LINE and s.dashed and svg.vertical(s)) == 2
    r = export(run, "--plots", "losses", "--markers", "freeze,lrate", "--out", str(out.with_suffix(".pdf")))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "'lrate'" in r.stderr
    assert all(kind in r.stderr for kind in MARKER_KINDS)  # the kinds there are, in the one line
    assert not out.with_suffix(".pdf").exists()


STEER = """import sys
sys.path.insert(0, sys.argv[2])
from training_core import Observer, RunConfig, Trainer
from training_core.base import commands as C, events as E

class Steer(Observer):  # a user's pause at step 20, continued at once, and a freeze at 40: at exactly those steps
    def on_run_begin(self, run):
        self.run = run

    def on_step_end(self, run):
        if run.step in (20, 40):
            run.send(C.Pause() if run.step == 20 else C.SetFreeze(("generator/dense_1",)))

    def on_event(self, event):
        if isinstance(event, E.Pause):
            self.run.send(C.Continue())

Trainer(RunConfig(example="ring", steps=60, run_dir=sys.argv[1], fetch_every=20, seed=0), Steer()).run()
"""


def test_a_default_export_marks_the_freeze_not_the_pause_or_the_resume(qapp, tmp_path):
    """A real ring run paused by its user at step 20, frozen at 40, stopped at 60 and resumed to 80: exported with
    no --markers, the figure marks the freeze alone (issue 26: "a paper wants the freeze and the ratio change,
    not 'pause (step) ×2'"); --markers all marks the pause and the resume too, and --markers none nothing."""
    run, script = tmp_path / "run", tmp_path / "steer.py"
    script.write_text(STEER)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    for argv in ([sys.executable, str(script), str(run), str(REPO)],
                 [sys.executable, "main.py", "--headless", "--resume", str(run), "--steps", "80", "--quiet",
                  "--no-tensorboard"]):
        r = zygote.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
    assert {m.kind for m in read_run(run).markers} == {"pause", "freeze", "resumed"}

    def drawn(*markers: str) -> tuple[list[str], int]:
        out = tmp_path / f"fig{len(markers)}{'-'.join(markers)}.svg"
        r = export(str(run), "--plots", "losses,updates", *markers, "--out", str(out))
        assert r.returncode == 0, r.stderr
        texts, shapes = svg.read(out.read_bytes())
        lines = sum(1 for s in shapes if s.stroke == MARKER_LINE and s.dashed and svg.vertical(s))
        return sorted(t.text for t in texts if t.fill == MARKER_TEXT), lines

    labels, lines = drawn()
    assert labels == ["freeze: generator/dense_1"] and lines == 2  # its line in each of the two panels
    assert drawn("--markers", "all") == (["freeze: generator/dense_1", "pause", "resumed"], 6)
    assert drawn("--markers", "none") == ([], 0)


def test_the_dialog_ticks_the_runs_metrics_and_offers_markers_and_bands(qtbot, ring_runs, steered_runs):
    runs = [(d.name, read_run(d)) for d in ring_runs]
    d = ExportDialog(lambda: runs)
    qtbot.addWidget(d)
    d.show()
    d.refresh_preview()
    assert [n for n, b in d.plot_boxes.items() if b.isChecked()] == ["losses", "updates", "metrics"]
    # the kinds a paper wants ticked, a leak among them (what happened), the run's history and a NaN not
    assert [k for k, b in d.marker_boxes.items() if b.isChecked()] == list(PAPER_MARKERS) == ["freeze", "ratio", "lr",
                                                                                             "method", "leak"]
    assert d.markers.isChecked() and d.spec().markers == PAPER_MARKERS and d.bands.currentData() == "off"
    d.marker_boxes["pause"].setChecked(True)
    d.marker_boxes["lr"].setChecked(False)
    d.bands.setCurrentIndex(d.bands.findData("sd"))
    spec = d.spec()
    assert spec.markers == ("freeze", "ratio", "method", "pause", "leak") and spec.bands == "sd"
    d.markers.setChecked(False)
    assert d.spec().markers == ()
    d.plot_boxes["metrics"].click()  # the user's choice stands from now on
    d.refresh_preview()
    assert not d.plot_boxes["metrics"].isChecked()
    seeds = [(p.name, read_run(p)) for p in steered_runs["steered"]]
    fig = Figure(seeds, d.spec().copy(markers=MARKER_KINDS))  # the dialog's bands: one group of three seeds
    assert fig.data.runs == ["steered"] and "mean of 3 seeds" in svg_bytes(fig).decode()

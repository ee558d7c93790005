"""`python main.py --export RUN_DIR ...` as a user runs it: a subprocess with no display and no window."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import zygote

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run_dir(frozen_ring_run: Path) -> Path:
    return frozen_ring_run


def export(*args: str, platform: str | None = "offscreen") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    if platform:
        env["QT_QPA_PLATFORM"] = platform
    return zygote.run([sys.executable, "main.py", "--export", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


def test_pdf_with_the_issue_command(run_dir, tmp_path):
    out = tmp_path / "fig.pdf"
    r = export(str(run_dir), "--plots", "losses,updates", "--format", "pdf", "--size", "7.16x3", "--out", str(out))
    assert r.returncode == 0, r.stderr
    box = re.search(rb"/MediaBox\s*\[\s*0\s+0\s+([0-9.]+)\s+([0-9.]+)\s*\]", out.read_bytes())
    assert abs(float(box.group(1)) / 72 - 7.16) < 0.01 and abs(float(box.group(2)) / 72 - 3.0) < 0.01


def test_no_display_at_all_still_renders(run_dir, tmp_path):
    """No DISPLAY and no QT_QPA_PLATFORM: the exporter picks the offscreen platform itself."""
    out = tmp_path / "fig.png"
    r = export(str(run_dir), "--plots", "updates", "--size", "3.5x2.5", "--dpi", "120", "--theme", "screen",
               "--smoothing", "0.9", "--font-size", "9", "--no-legend", "--no-markers", "--no-raw", "--out", str(out),
               platform=None)
    assert r.returncode == 0, r.stderr
    from PySide6.QtGui import QImage
    img = QImage(str(out))
    assert (img.width(), img.height()) == (420, 300)
    assert img.pixelColor(0, 0).lightness() < 60  # the dark screen theme


def test_svg_and_csv_in_millimetres(run_dir, tmp_path):
    out, data = tmp_path / "fig.svg", tmp_path / "fig.csv"
    r = export(str(run_dir), "--size", "89x60", "--units", "mm", "--out", str(out), "--csv", str(data))
    assert r.returncode == 0, r.stderr
    head = out.read_text()[:600]
    assert 'width="89mm"' in head and 'height="60mm"' in head
    lines = data.read_text().splitlines()
    assert lines[0] == "step,wall_time,tag,value,smoothed,run" and len(lines) > 400


def test_x_counts_generator_steps_with_x_g(run_dir, tmp_path):
    """`--x G`: the axis is G's steps (the ring's 400 steps at 1:1 are 200 of G's), named so."""
    from training_core.runs import read_run
    out = tmp_path / "fig.svg"
    r = export(str(run_dir), "--x", "G", "--plots", "losses", "--out", str(out))
    assert r.returncode == 0, r.stderr
    texts = re.findall(r">([^<>]+)</text>", out.read_text())
    ticks = [int(t) for t in texts if t.isdigit()]
    assert "G steps" in texts and max(ticks) == len(read_run(run_dir).loss("G")[0]) == 200


@pytest.mark.parametrize("args,needle", [
    (["{missing}", "--out", "{out}"], "does not exist"),
    (["{tmp}", "--out", "{out}"], "not a run directory"),
    # a file for the wrong option: what it is, and the option that takes it
    (["{tmp}/x.toml", "--out", "{out}"], "x.toml is a sweep file, not a run or sweep directory; run it with python "
                                         "main.py --headless --sweep "),
    (["{tmp}/exp.py", "--out", "{out}"], "exp.py is an experiment file, not a run or sweep directory; train it with "
                                         "python main.py --experiment "),
    (["{run}/config.toml", "--out", "{out}"], "config.toml is the config.toml of the run in "),
    (["{run}", "--plots", "losses,gradients", "--out", "{out}"], "unknown plot"),
    (["{run}", "--size", "7x", "--out", "{out}"], "WIDTHxHEIGHT"),
    (["{run}", "--format", "tiff", "--out", "{out}"], "invalid choice"),
    (["{run}", "--out", "{tmp}/fig.eps"], "cannot tell the format"),
    (["{run}", "--format", "png", "--out", "{out}"], "--format png but --out ends in .pdf"),
    # a run's own record is never written over (a figure replaced scalars.csv: the run could not be read again)
    (["{run}", "--csv", "{run}/scalars.csv"], "is part of the run record in"),
    (["{run}", "--format", "svg", "--out", "{run}/events.jsonl"], "would destroy the run"),
    (["{run}", "--out", "{run}/variables/fig.pdf"], "is part of the run record in"),
    (["{run}", "--out", "{out}", "--csv", "{out}"], "the CSV would replace the figure"),
    (["{run}", "--out", "{out}", "--csv", "{tmp}"], "is a folder"),  # checked before the figure is written
    (["{run}", "--out", "{tmp}/dir.pdf"], "is a folder"),
    (["{run}", "--out", "{tmp}/nofolder/fig.pdf"], "does not exist"),
    (["{run}", "--headless", "--out", "{out}"], "trains nothing; drop --headless"),
    (["{run}", "--x", "Q", "--out", "{out}"], "x axis 'Q' is not a phase of run (its phases: D, G)"),
    # no height makes two plots side by side readable in 1.5 in: refused, not a 40-inch page of unreadable plots
    (["{run}", "--plots", "losses,updates", "--layout", "row", "--size", "1.5", "--out", "{out}"],
     "no height up to 40 in makes every plot readable 1.5 in wide with --layout row"),  # named --export as unknown
])
def test_bad_input_is_one_line_and_exit_2(run_dir, tmp_path, args, needle):
    out = tmp_path / "fig.pdf"
    (tmp_path / "dir.pdf").mkdir()
    (tmp_path / "x.toml").write_text('[base]\nexample = "ring"\n[grid]\nseed = [0, 1]\n')
    (tmp_path / "exp.py").write_text("def build():\n    pass\n")
    subs = {"missing": str(tmp_path / "nope"), "tmp": str(tmp_path), "run": str(run_dir), "out": str(out)}
    record = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    r = export(*[a.format(**subs) for a in args])
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], r.stderr
    assert not out.exists() and not (tmp_path / "fig.eps").exists()
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == record  # nothing written there


def test_a_figure_beside_the_run_record_is_fine(run_dir, tmp_path):
    """Inside a run directory only the names the run writes are refused: runs/x/figure.pdf is a fine place."""
    import shutil
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    r = export(str(copy), "--out", str(copy / "figure.pdf"), "--csv", str(copy / "figure.csv"))
    assert r.returncode == 0, r.stderr
    assert (copy / "figure.pdf").stat().st_size > 0 and (copy / "figure.csv").read_text().startswith("step,")


def test_a_record_cut_mid_write_still_exports(run_dir, tmp_path):
    """A run killed or out of disk mid-write: scalars.csv ends at a line boundary between two steps' rows,
    a per-variable row is torn, events.jsonl has a torn line and one that is not an event. What is complete
    is drawn."""
    import shutil
    cut = tmp_path / "cut"
    shutil.copytree(run_dir, cut)
    data = (cut / "scalars.csv").read_bytes()
    (cut / "scalars.csv").write_bytes(data[:data.index(b"\n", len(data) // 2) + 1])
    for p in (cut / "variables").glob("*.bin"):
        p.write_bytes(p.read_bytes()[:p.stat().st_size * 2 // 3 + 5])
    with open(cut / "events.jsonl", "ab") as f:
        f.write(b'[1,2,3]\n{"step": 9, "kind": "fre')
    out = tmp_path / "fig.pdf"
    r = export(str(cut), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 1000 and r.stderr.strip() == ""


def test_a_phase_file_with_a_damaged_header_is_named_not_left_out_unsaid(run_dir, tmp_path):
    """Four bytes over the first phase's variable file: the figure used to show the other phase alone,
    with exit 0 and no word. It still draws what can be read, and a warning names the file."""
    import shutil
    cut = tmp_path / "damaged"
    shutil.copytree(run_dir, cut)
    first = sorted((cut / "variables").glob("*.bin"))[0]
    with open(first, "r+b") as f:
        f.write(b"XXXX")
    out = tmp_path / "fig.png"
    r = export(str(cut), "--plots", "updates", "--out", str(out))
    assert r.returncode == 0 and out.is_file(), r.stderr
    assert f"warning: {first} cannot be read" in r.stderr and "left out" in r.stderr, r.stderr


def test_a_scalars_file_whose_header_is_damaged_is_refused_as_read_scalars_refuses_it(run_dir, tmp_path):
    """Bytes over scalars.csv's header: `--export` drew the run without a word while read_scalars raised on it.
    The export refuses it now with read_scalars' own line (naming the file and the fix), exit 2, nothing
    written."""
    import shutil
    cut = tmp_path / "damaged"
    shutil.copytree(run_dir, cut)
    path = cut / "scalars.csv"
    path.write_bytes(b"XXXX" + path.read_bytes()[4:])
    out, csv = tmp_path / "fig.png", tmp_path / "fig.csv"
    r = export(str(cut), "--out", str(out), "--csv", str(csv))
    assert r.returncode == 2, r.stderr
    assert [ln for ln in r.stderr.splitlines() if ln.strip()] == [
        f"error: {path} does not start with its header line step,wall_time,tag,value (the file is damaged, or not "
        f"a Freezeframe record); make that its first line again and every complete row after it is read"], r.stderr
    assert r.stdout == "" and not out.exists() and not csv.exists()
    from training_core import read_scalars
    with pytest.raises(ValueError, match="does not start with its header line"):
        read_scalars(cut)


@pytest.fixture(scope="module")
def leak_run(tmp_path_factory) -> Path:
    """A real monitor run with leaks: the keras.io GAN's `discriminator.trainable = False` once a first fit() has
    traced the step, which that step ignores (tests/core/keras_gan.py --leak)."""
    from tests.core.helpers import env
    d = tmp_path_factory.mktemp("leak") / "run"
    r = zygote.run([sys.executable, "-m", "tests.core.keras_gan", str(d), "3", "--leak"], cwd=REPO, env=env(),
                   capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return d


def test_a_leak_is_marked_by_default_and_markers_still_choose(leak_run, tmp_path):
    """What the plots say must be what happened: a figure of the run whose "frozen" discriminator trained on
    showed no leak unless `--markers leak` was given. Now the default marks it; `--markers` still chooses."""
    from tests.app import svg_shapes as svg
    from training_core import read_events
    leaks = [e for e in read_events(leak_run) if e.kind == "leak"]
    assert {e.variable.split("/")[0] for e in leaks} == {"discriminator"}

    def labels(*args: str) -> list[str]:
        out = tmp_path / "fig.svg"
        r = export(str(leak_run), "--plots", "losses,updates", "--size", "7.16", "--out", str(out), *args)
        assert r.returncode == 0, r.stderr
        return [t.text for t in svg.read(out.read_bytes())[0] if t.text.startswith("leak")]

    shown = labels()
    assert shown and all(t.startswith(("leak: discriminator", "leak discriminator/")) for t in shown), shown
    assert labels("--markers", "freeze,ratio,lr,method") == []
    assert labels("--markers", "leak") == shown

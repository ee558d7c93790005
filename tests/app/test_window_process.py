"""`python main.py` as a user runs it: the window shows before TensorFlow loads, closing it mid-training
exits 0 with the run record flushed, `--screenshot` writes a real picture, bad options fail in one line."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from PySide6.QtGui import QImage

from app.main_window import DEFAULT_SIZE
from training_core import read_events

REPO = Path(__file__).resolve().parents[2]

MAIN = Path(__file__).resolve().parents[2] / "main.py"


def run_main(args: list[str], tmp_path: Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "TF_CPP_MIN_LOG_LEVEL": "2",
                "FREEZEFRAME_SETTINGS": str(tmp_path / "settings.ini"), **env}
    return subprocess.run([sys.executable, str(MAIN), *args], cwd=tmp_path, env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def test_visible_before_tensorflow_and_close_mid_training_exits_cleanly(tmp_path):
    run_dir = tmp_path / "run"
    p = run_main(["--example", "ring", "--run-dir", str(run_dir), "--start", "--close-after", "1.5"], tmp_path,
                 FREEZEFRAME_STARTUP_REPORT="1")
    assert p.returncode == 0, p.stderr[-2000:]
    visible = [line for line in p.stdout.splitlines() if line.startswith("freezeframe: visible")]
    assert visible and visible[0].endswith("tensorflow_imported=False"), p.stdout
    events = read_events(run_dir)
    assert events[-1].kind == "stop" and events[-1].reason == "stopped"
    assert events[-1].step > 0 and any(e.kind == "checkpoint" for e in events)
    loss_rows = [line for line in (run_dir / "scalars.csv").read_text().splitlines() if ",loss/" in line]
    steps = sorted(int(r.split(",")[0]) for r in loss_rows)
    assert steps == list(range(1, events[-1].step + 1))  # every step up to the stop is on disk


def test_screenshot_writes_the_trained_window(tmp_path):
    out = tmp_path / "window.png"
    p = run_main(["--example", "ring", "--steps", "150", "--run-dir", str(tmp_path / "run"), "--screenshot",
                  str(out)], tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    image = QImage(str(out))
    assert (image.width(), image.height()) == DEFAULT_SIZE
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    pixels = np.frombuffer(image.constBits(), np.uint8, image.sizeInBytes()).reshape(image.height(), -1)
    assert pixels.std() > 20, "the screenshot is blank"
    events = read_events(tmp_path / "run")
    assert events[-1].kind == "stop" and events[-1].reason == "done" and events[-1].step == 150


def test_bad_options_fail_in_one_line(tmp_path):
    (tmp_path / "shots.png").mkdir()
    for args, expected in ((["--example", "nope"], "unknown example 'nope'"),
                           (["--experiment", "missing.py"], "experiment file missing.py does not exist"),
                           (["--steps", "-3"], "--steps must be >= 0"),
                           (["--seed", "-1"], "--seed must be a whole number from 0 to 2147483647, got -1"),
                           (["--example", "../../resources/experiments/ring"], "unknown example"),
                           (["--screenshot", "out.jpg"], "must end in .png"),
                           (["--device", "bogus", "--screenshot", "out.png"],
                            "use auto (default), cpu, gpu:N or mirrored"),
                           (["--screenshot", "shots.png"], "is a folder"),  # a folder named like a PNG
                           (["--attach", "."], "has no events.jsonl"),
                           (["--attach", ".", "--example", "ring"], "not allowed with")):
        p = run_main(args, tmp_path, timeout=60)
        assert p.returncode == 2
        assert p.stderr.strip().splitlines() == [f"error: {p.stderr.strip()[7:]}"] and expected in p.stderr


def test_help_names_the_other_modes_and_review():
    """`main.py --help` is the window's; it says how to train headless, export figures and open runs."""
    r = subprocess.run([sys.executable, "main.py", "--help"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    for needle in ("--headless", "--export RUN_DIR [RUN_DIR ...]", "--open RUN_DIR", "--screenshot"):
        assert needle in r.stdout, needle


def _stuck_in_preparing(qtbot, tmp_path):
    """A training process importing a file that never returns (as a user's training script does)."""
    from app.training_process import TrainingProcess
    from training_core import RunConfig
    marker = tmp_path / "importing.txt"
    stuck = tmp_path / "stuck.py"
    stuck.write_text(f"import time\nopen({str(marker)!r}, 'w').write('in')\nwhile True:\n    time.sleep(0.05)\n")
    training = TrainingProcess()
    training.prepare(RunConfig(experiment_file=str(stuck)))
    qtbot.waitUntil(marker.exists, timeout=120_000)
    return training


def test_closing_the_window_while_a_file_is_being_prepared_ends_the_training_process(qtbot, tmp_path):
    """A job with no run (loading, preparing) has nothing to flush: on the window's exit the process ends at
    once. It used to finish the job first, up to a minute, and a script's import may never finish."""
    training = _stuck_in_preparing(qtbot, tmp_path)
    assert training.shutdown(60)  # ended in time, not killed after the minute
    assert training.process.returncode == 0


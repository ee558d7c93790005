"""`python main.py` as a user runs it: the window shows before TensorFlow loads, closing it mid-training
exits 0 with the run record flushed, `--screenshot` writes a real picture, bad options fail in one line."""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage

from app.main_window import DEFAULT_SIZE
from tests.core.helpers import wait_for
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
    (tmp_path / "x.toml").write_text('[base]\nexample = "ring"\n[grid]\nseed = [0, 1]\n')
    (tmp_path / "c.toml").write_text('example = "ring"\nsteps = 10\n')
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
                           (["--open", "x.toml"], "x.toml is a sweep file, not a run or sweep directory; run it "
                                                  "with python main.py --headless --sweep x.toml"),
                           (["--attach", "c.toml"], "c.toml is a run's configuration, not a run directory; run it "
                                                    "again with python main.py --headless --config c.toml"),
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



# -- the window killed (SIGKILL): its training process must not outlive it --------------------------------
def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def _exit_code_of_orphan(pid: int, timeout_s: float = 120) -> int:
    """The exit code of `pid`, a grandchild whose parent was killed: this process is made a child subreaper
    (Linux), so the orphan is re-parented here and can be waited for. The timeout only ends a hang."""
    status: list[int] = []

    def reaped() -> bool:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status.append(code)
        return bool(status)

    if not wait_for(reaped, timeout=timeout_s):
        os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"the training process {pid} outlived its killed window")
    return os.waitstatus_to_exitcode(status[0])


@pytest.fixture
def subreaper():
    if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        pytest.skip("needs Linux's child subreaper")


def _window(tmp_path: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "TF_CPP_MIN_LOG_LEVEL": "2",
           "FREEZEFRAME_SETTINGS": str(tmp_path / "settings.ini")}
    return subprocess.Popen([sys.executable, str(MAIN), *args], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=(tmp_path / "stderr.txt").open("w"))


def test_window_killed_while_its_training_process_prepares(tmp_path, subreaper):
    """SIGKILL leaves no window to say Exit: the training process notices the end of its connection and exits
    at once (a job with no run has nothing to record), as a script stuck in its import cannot finish."""
    marker, stuck, run_dir = tmp_path / "pid.txt", tmp_path / "stuck.py", tmp_path / "run"
    stuck.write_text(f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\n"
                     "while True:\n    time.sleep(0.05)\n")
    window = _window(tmp_path, "--experiment", str(stuck), "--run-dir", str(run_dir), "--start")
    assert wait_for(lambda: marker.exists() and bool(marker.read_text()), timeout=180), \
        "timed out waiting for the training process to import the file"
    training = int(marker.read_text())
    assert _children(window.pid) == [training]
    window.kill()
    assert window.wait() == -signal.SIGKILL
    assert _exit_code_of_orphan(training) == 0
    assert not run_dir.exists()  # nothing half-written: the run never began
    assert ("freezeframe: the training process exits: the window is gone while it was loading or preparing "
            "(nothing was recorded)") in (tmp_path / "stderr.txt").read_text()


def test_window_killed_mid_training_leaves_a_closed_record(tmp_path, subreaper):
    """Once a run trains, the training process stops it at its next step, flushes and closes the record (a
    `stop` event, the lock released, every step's scalars) and exits: as when the window is closed."""
    run_dir = tmp_path / "run"
    window = _window(tmp_path, "--example", "ring", "--run-dir", str(run_dir), "--start")
    scalars = run_dir / "scalars.csv"
    assert wait_for(lambda: scalars.exists() and ",loss/" in scalars.read_text(), timeout=180), \
        "timed out waiting for the first steps on disk"
    training, = _children(window.pid)
    window.kill()
    assert window.wait() == -signal.SIGKILL
    assert _exit_code_of_orphan(training) == 0
    events = read_events(run_dir)
    assert any(e.kind == "start" for e in events) and events[-1].kind == "stop" and events[-1].reason == "stopped"
    steps = sorted({int(r.split(",")[0]) for r in scalars.read_text().splitlines() if ",loss/" in r})
    assert steps == list(range(1, events[-1].step + 1)) and not (run_dir / "writer.lock").exists()


def test_training_process_whose_window_is_gone_before_it_connects(tmp_path):
    """The window killed right after starting it: one line says why it exits, no traceback."""
    from multiprocessing.connection import Listener
    listener = Listener()
    address = listener.address
    listener.close()
    p = subprocess.run([sys.executable, "-m", "training_core.service", str(address), "0"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0
    assert p.stderr.strip().splitlines() == ["freezeframe: the training process exits: the window is gone (it "
                                             "ended before this process connected; nothing was recorded)"]

"""Shared fixtures for the window tests: offscreen Qt, isolated settings, windows on real training or on
the stand-in service (tests/app/fake_service.py), and a check that no training process (or its report
reader thread) outlives its test: a leak would train on in the background and skew or break later,
unrelated tests."""
from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The training process could run at nice 10 (FREEZEFRAME_TRAINING_NICE); on a machine where other jobs keep the cores
# busy that starves it (an e2e test waiting for 300 steps took 77 s instead of 8). Tests wait for steps,
# so they train at normal priority; tests/app/test_scheduling.py checks the default and the variable.
os.environ.setdefault("FREEZEFRAME_TRAINING_NICE", "0")

import pytest  # noqa: E402

PREPARE_TIMEOUT_MS = 90_000  # the first window of a session imports TensorFlow (~3-5 s) and traces (~2 s)


@pytest.fixture(autouse=True, scope="session")
def services_forked_from_one_import():
    """Windows start their training process by a fork from an interpreter that has imported TensorFlow
    (tests/zygote.py): each is still a process of its own, without a 3-5 s import per window."""
    from app import training_process
    from tests import zygote
    training_process.popen = zygote.Popen


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own settings file: recent files and geometry never leak between tests or
    into the user's real settings."""
    path = tmp_path / "freezeframe-settings.ini"
    monkeypatch.setenv("FREEZEFRAME_SETTINGS", str(path))
    return path


@pytest.fixture(autouse=True)
def no_training_process_left(request: pytest.FixtureRequest):
    yield
    training_process = sys.modules.get("app.training_process")
    if training_process is None:
        return
    left = training_process.still_running()
    for training in list(training_process._PROCESSES):  # clean up so the next test starts clean, then fail this one
        training.shutdown(60)
    gc.collect()  # this test's windows die here, on the GUI thread
    if left:
        pytest.fail(f"{len(left)} training process(es) or reader thread(s) still running after {request.node.nodeid}")


class WindowDriver:
    """Makes windows (shown, experiment prepared, runs in tmp) and waits on them like a user.

    `make()` trains in a real training process; `make(fake=True)` on the stand-in service, whose steps
    happen only when the test calls `w.core.train(n)`."""

    def __init__(self, qtbot, tmp_path: Path) -> None:
        self.qtbot, self.tmp_path = qtbot, tmp_path
        self.windows: list = []

    def make(self, wait: bool = True, fake: bool = False, **kwargs):
        from app.main_window import MainWindow
        kwargs.setdefault("run_dir", str(self.tmp_path / f"run{len(self.windows)}"))
        if fake:
            from tests.app.fake_service import FakeTrainingService
            kwargs["service_factory"] = FakeTrainingService
        w = MainWindow(**kwargs)
        w.settings.set_runs_folder(str(self.tmp_path / "runs"))
        self.qtbot.addWidget(w)
        w.show()
        self.windows.append(w)
        if wait:
            self.wait_prepared(w)
        return w

    def wait_prepared(self, w, timeout: int = PREPARE_TIMEOUT_MS) -> None:
        self.qtbot.waitUntil(lambda: w.prepared is not None and not w.busy and w.start_action.isEnabled(),
                             timeout=timeout)

    def wait_steps(self, w, at_least: int, timeout: int = 30_000) -> None:
        self.qtbot.waitUntil(lambda: w.store.last_step >= at_least, timeout=timeout)

    def wait_finished(self, w, timeout: int = 30_000) -> None:
        self.qtbot.waitUntil(lambda: not w.running, timeout=timeout)

    def wait_event(self, w, kind: str, timeout: int = 30_000, **match) -> dict:
        found: list[dict] = []

        def check() -> bool:
            found[:] = [e for e in w.store.events if e.kind == kind
                        and all(getattr(e, k) == v for k, v in match.items())]
            return bool(found)

        self.qtbot.waitUntil(check, timeout=timeout)
        return found[-1]

    def flush(self, w) -> int:
        """Wait until everything the service did so far has reached the window; return the step it is at.

        Absence ("training did not move while paused") is checked with this, not by waiting and seeing:
        a real run is sent SampleNow, which the trainer applies at its next boundary and acknowledges
        with a `sample` event (after the metrics of every step before it); the stand-in has nothing
        in flight once its queued reports are delivered."""
        if hasattr(w.core, "pending"):
            self.qtbot.waitUntil(lambda: not w.core.pending, timeout=60_000)
            return w.store.last_step
        from training_core import SampleNow
        seen = len([e for e in w.store.events if e.kind == "sample"])
        w.core.send(SampleNow())
        self.qtbot.waitUntil(lambda: len([e for e in w.store.events if e.kind == "sample"]) > seen, timeout=30_000)
        return [e for e in w.store.events if e.kind == "sample"][-1].step


@pytest.fixture
def ui(qtbot, tmp_path: Path):
    driver = WindowDriver(qtbot, tmp_path)
    yield driver
    for w in driver.windows:
        w.close()


@pytest.fixture(autouse=True)
def empty_clipboard_after_test():
    """Qt deletes clipboard data when the application object goes; at interpreter exit that happens after
    Python has started tearing down, which segfaults (offscreen platform). The app clears the clipboard
    when it quits (app.launch); tests that copy never quit, so they clear it here."""
    yield
    if "PySide6.QtGui" in sys.modules:
        from PySide6.QtGui import QGuiApplication
        if QGuiApplication.instance() is not None:
            QGuiApplication.clipboard().clear()


@pytest.fixture(scope="session")
def frozen_ring_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real 400-step ring run with discriminator/dense_1 frozen, made once through the headless CLI
    and only read by the tests that share it (figure export, CSV, the export CLI)."""
    from tests.core.helpers import main_cmd, run_all
    d = tmp_path_factory.mktemp("frozen_ring") / "run"
    done = run_all({"frozen": main_cmd("--headless", "--example", "ring", "--steps", "400", "--run-dir", str(d),
                                       "--freeze", "discriminator/dense_1", "--quiet")}, timeout=300)["frozen"]
    assert done.returncode == 0, done.stderr
    return d


@pytest.fixture(scope="session")
def ring_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three real ring runs at ratios 1:1, 3:1 and 5:1 (300 steps, metrics several times a run), made at once
    through the headless CLI (forked from one TensorFlow import: tests/zygote.py) and only read by
    the tests that compare them."""
    from tests.core.helpers import main_cmd, run_all
    base = tmp_path_factory.mktemp("ring_runs")
    ratios = ("1:1", "3:1", "5:1")
    dirs = [base / f"ratio-{r.replace(':', 'to')}" for r in ratios]
    done = run_all({r: main_cmd("--headless", "--example", "ring", "--steps", "300", "--ratio", r, "--run-dir", str(d),
                                "--metrics-every", "0.05", "--sample-every", "0.2", "--quiet", "--no-tensorboard",
                                "--checkpoint-every", "0") for r, d in zip(ratios, dirs)}, parallel=3)
    for r in ratios:
        assert done[r].returncode == 0, done[r].stderr
    return dirs


@pytest.fixture
def panel_of(qtbot):
    """`panel_of(store)`: the window's plots panel drawing `store`, at a typical size."""
    from app.plots import PlotsPanel

    def make(store):
        panel = PlotsPanel(store)
        qtbot.addWidget(panel)
        panel.resize(1100, 700)
        return panel
    return make


@pytest.fixture(scope="session")
def steered_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Real ring runs steered as a user steers them, for the paper-figure tests (tests/app/test_export_paper.py,
    test_export_bands.py): "steered", three seeds of one setting (400 steps, discriminator/dense_1 frozen,
    then a new freeze set, D's learning rate and the ratio changed from an observer, each seed's changes 12
    steps after the previous one's, at exactly those steps on any machine: resources/docs/make_example_run.py), and "ratio", two seeds of another
    setting (2:1 from the start, nothing changed). Made at once through the headless CLI and the docs' script,
    each forked from one TensorFlow import (tests/zygote.py), and only read by the tests."""
    import sys
    from tests.core.helpers import REPO, main_cmd, run_all
    base = tmp_path_factory.mktemp("steered")
    script = str(REPO / "resources" / "docs" / "make_example_run.py")
    dirs = {"steered": [base / f"steered-seed{s}" for s in (1, 2, 3)], "ratio": [base / f"ratio-2to1-seed{s}" for s in (1, 2)]}
    commands = {d.name: [sys.executable, script, str(d), "400", str(s), str(12 * (s - 1))]
                for s, d in zip((1, 2, 3), dirs["steered"])}
    commands.update({d.name: main_cmd("--headless", "--example", "ring", "--steps", "400", "--ratio", "2:1",
                                      "--freeze", "discriminator/dense_1", "--seed", str(s), "--run-dir", str(d),
                                      "--quiet", "--no-tensorboard", "--checkpoint-every", "0")
                     for s, d in zip((1, 2), dirs["ratio"])})
    done = run_all(commands, timeout=300)
    for name, r in done.items():
        assert r.returncode == 0, (name, r.stderr[-2000:])
    return dirs


@pytest.fixture(scope="session")
def freeze_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real sweep of the ring (docs/sweeps.md): ratios 1:1 and 3:1 by nothing frozen or discriminator/dense_1
    frozen from step 90 (a planned change), one seed, 120 steps; its freeze, which two of its four settings
    have, is labelled with what they share (`freeze=discriminator/dense_1@90: freeze: discriminator/dense_1`),
    wider than a panel of a double column. Made once by the headless CLI, only read by the tests."""
    from tests.core.helpers import main_cmd, run_all
    d = tmp_path_factory.mktemp("freeze_sweep") / "sweep"
    r = run_all({"sweep": main_cmd("--headless", "--sweep", "--example", "ring", "--steps", "120", "--no-tensorboard",
                                   "--checkpoint-every", "0", "--grid", "ratio=1:1,3:1", "--grid",
                                   "freeze=none,discriminator/dense_1@90", "--grid", "seed=0", "--sweep-dir", str(d),
                                   "--quiet")}, timeout=600)["sweep"]
    assert r.returncode == 0, r.stderr[-2000:]
    return d


@pytest.fixture(scope="session")
def ring_dir(tmp_path_factory) -> Path:
    """A real 300-step headless ring run, generator/dense_1 frozen from the start (tests/app/ring_run.py)."""
    from tests.app.ring_run import train_ring
    return train_ring(tmp_path_factory.mktemp("plots") / "ring")


@pytest.fixture
def ring(ring_dir):
    """The ring run read afresh (a test may add to it)."""
    from training_core.runs import read_run
    return read_run(ring_dir)

"""The training service the window talks to: jobs in order, live commands at the next step, reports as
typed protocol messages that cross a process boundary, and a clean end (flushed record) when the window
says exit or disappears."""
from __future__ import annotations

import pickle
import threading
import time
from multiprocessing import Pipe

from training_core import RunConfig, SetFreeze, Step, read_events
from training_core.base import events
from training_core.base import protocol as P
from training_core.service import serve


class Window:
    """The other end of the pipe, as the window's reader thread sees it."""

    def __init__(self) -> None:
        self.conn, child = Pipe(duplex=True)
        self.thread = threading.Thread(target=serve, args=(child,), daemon=True)
        self.thread.start()
        self.reports: list = []

    def send(self, msg) -> None:
        self.conn.send(msg)

    def wait(self, kind: type, timeout: float = 120.0, where=lambda r: True):
        end = time.time() + timeout
        while time.time() < end:
            for r in self.reports:
                if isinstance(r, kind) and where(r):
                    return r
            if self.conn.poll(0.1):
                r = self.conn.recv()
                pickle.dumps(r)  # everything the service reports crosses a process boundary
                assert isinstance(r, P.REPORTS), r
                self.reports.append(r)
        raise TimeoutError(f"no {kind.__name__} report; got {[type(r).__name__ for r in self.reports]}")


def test_jobs_commands_and_reports(run_dir):
    w = Window()
    w.send(P.Load(1))
    assert w.wait(P.Loaded).devices[0] == "cpu"
    w.send(P.Prepare(RunConfig(example="ring")))
    info = w.wait(P.Prepared).info
    assert isinstance(info, P.PreparedInfo) and info.phase_names == ["D", "G"]
    assert any(v.path == "discriminator/dense_1/kernel" for v in info.var_infos)
    assert all(p.startswith("discriminator/") for p in info.phase_paths[0]) and len(info.phase_paths[1]) == 6
    # a command sent between Start and the run's first step is kept and applied first, with its id
    w.send(P.BeginRun())
    w.send(P.Send(SetFreeze(("discriminator/dense_1",)), id="f1"))
    w.send(P.Send(Step(30)))
    w.send(P.Run(RunConfig(example="ring", run_dir=str(run_dir), steps=None)))
    assert w.wait(P.RunStarted).run_dir == str(run_dir)
    w.wait(P.Metrics)
    w.wait(P.Emitted, 60, lambda r: isinstance(r.event, events.Pause))
    w.send(P.Exit())
    status = w.wait(P.RunFinished).status
    w.thread.join(30)
    assert not w.thread.is_alive()
    assert status.step == 30  # Step(30) ran, then paused until the exit stopped it
    record = read_events(run_dir)
    kinds = [e.kind for e in record]
    assert kinds.index("freeze") < kinds.index("step") and kinds[-1] == "stop"
    assert next(e for e in record if isinstance(e, events.Freeze)).id == "f1"


def test_window_gone_ends_the_run_cleanly(run_dir):
    w = Window()
    w.send(P.Load(1))
    w.send(P.BeginRun())
    w.send(P.Run(RunConfig(example="ring", run_dir=str(run_dir), steps=None)))
    w.wait(P.RunStarted)
    w.wait(P.Metrics)
    w.conn.close()  # the window's process died
    w.thread.join(60)
    assert not w.thread.is_alive()
    record = read_events(run_dir)
    assert record[-1].kind == "stop" and record[-1].reason == "stopped"


def test_a_monitored_runs_script_is_refused_in_one_line_and_never_imported(tmp_path):
    """The window's training process once imported a start_run script named by a monitored run's record, and
    the script's start_run(resume=True) trained the run on, unseen. A config with `monitor` set is refused
    before anything is imported (the window never asks; this is the defence behind it)."""
    marker = tmp_path / "imported.txt"
    script = tmp_path / "my_loop.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    w = Window()
    w.send(P.Prepare(RunConfig(experiment_file=str(script), monitor="loop")))
    failed = w.wait(P.Failed)
    assert failed.summary == ("my_loop.py is the script of a run training_core.monitor records (monitor = 'loop'): "
                              "its own code trains the run, so Freezeframe does not import it; run your script "
                              "again with start_run(..., resume=True) to continue")
    w.send(P.Exit())
    w.thread.join(30)
    assert not w.thread.is_alive() and not marker.exists()

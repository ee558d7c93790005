"""The training service the window talks to: jobs in order, live commands at the next step, reports as
plain picklable tuples, and a clean end (flushed record) when the window says exit or disappears."""
from __future__ import annotations

import pickle
import threading
import time
from multiprocessing import Pipe

from training_core import RunConfig, SetFreeze, Step, read_events
from training_core.service import PreparedInfo, serve


class Window:
    """The other end of the pipe, as the window's reader thread sees it."""

    def __init__(self) -> None:
        self.conn, child = Pipe(duplex=True)
        self.thread = threading.Thread(target=serve, args=(child,), daemon=True)
        self.thread.start()
        self.reports: list[tuple] = []

    def send(self, *msg) -> None:
        self.conn.send(msg)

    def wait(self, kind: str, timeout: float = 120.0) -> tuple:
        end = time.time() + timeout
        while time.time() < end:
            for r in self.reports:
                if r[0] == kind:
                    return r
            if self.conn.poll(0.1):
                r = self.conn.recv()
                pickle.dumps(r)  # everything the service reports crosses a process boundary
                self.reports.append(r)
        raise TimeoutError(f"no {kind!r} report; got {[r[0] for r in self.reports]}")


def test_jobs_commands_and_reports(run_dir):
    w = Window()
    w.send("job", "load", 1)
    assert w.wait("loaded")[1][0] == "cpu"
    w.send("job", "prepare", RunConfig(example="ring"))
    info = w.wait("prepared")[1]
    assert isinstance(info, PreparedInfo) and info.phase_names == ["D", "G"]
    assert any(v.path == "discriminator/dense_1/kernel" for v in info.var_infos)
    # a command sent between Start and the run's first step is kept and applied first
    w.send("begin_run")
    w.send("send", SetFreeze(("discriminator/dense_1",)))
    w.send("send", Step(30))
    w.send("job", "run", RunConfig(example="ring", run_dir=str(run_dir), steps=None))
    assert w.wait("runStarted")[1] == str(run_dir)
    w.wait("metrics")
    end = time.time() + 60
    while time.time() < end and not any(r[0] == "event" and r[1]["kind"] == "pause" for r in w.reports):
        w.wait("status", 1)
        if w.conn.poll(0.1):
            w.reports.append(w.conn.recv())
    w.send("exit")
    status = w.wait("runFinished")[1]
    w.thread.join(30)
    assert not w.thread.is_alive()
    assert status.step == 30  # Step(30) ran, then paused until the exit stopped it
    kinds = [e["kind"] for e in read_events(run_dir)]
    assert kinds.index("freeze") < kinds.index("step") and kinds[-1] == "stop"


def test_window_gone_ends_the_run_cleanly(run_dir):
    w = Window()
    w.send("job", "load", 1)
    w.send("begin_run")
    w.send("job", "run", RunConfig(example="ring", run_dir=str(run_dir), steps=None))
    w.wait("runStarted")
    w.wait("metrics")
    w.conn.close()  # the window's process died
    w.thread.join(60)
    assert not w.thread.is_alive()
    events = read_events(run_dir)
    assert events[-1]["kind"] == "stop" and events[-1]["reason"] == "stopped"

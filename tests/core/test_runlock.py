"""One writer per run directory (training_core/runlock.py): a live holder refuses a second writer
with one line, a dead one's lock is taken over with a warning, and a lock is only ever removed by its
owner. (A second `main.py` refused while a run trains: test_steering.py.)"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from training_core.rundir import lock as runlock
from training_core.base.errors import UserError


def _write_lock(run_dir, **fields):
    d = {"host": socket.gethostname(), "pid": os.getpid(), "pid_start": runlock._pid_start(os.getpid()),
         "since": time.time(), "token": "theirs"} | fields
    (run_dir / runlock.LOCK_FILE).write_text(json.dumps(d))


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_acquire_names_the_writer_and_release_removes_it(tmp_path):
    lock = runlock.acquire(tmp_path)
    h = runlock.read_holder(tmp_path)
    assert (h.host, h.pid, h.token) == (socket.gethostname(), os.getpid(), lock.holder.token)
    with pytest.raises(UserError, match=f"being written by pid {os.getpid()} on host") as e:
        runlock.acquire(tmp_path)
    assert "\n" not in str(e.value) and "choose another --run-dir" in str(e.value)
    runlock.release(lock)
    runlock.release(lock)  # idempotent
    assert not (tmp_path / runlock.LOCK_FILE).exists()


@pytest.mark.parametrize("case", ["dead_pid", "reused_pid", "torn_and_old"])
def test_a_dead_writers_lock_is_taken_over_with_a_warning(tmp_path, case):
    if case == "dead_pid":
        _write_lock(tmp_path, pid=_dead_pid())
    elif case == "reused_pid":  # our pid, but the lock says it started at another time: not us
        _write_lock(tmp_path, pid_start=(runlock._pid_start(os.getpid()) or 0) + 1)
    else:
        (tmp_path / runlock.LOCK_FILE).write_text('{"host": "x", "pi')
        old = time.time() - 60
        os.utime(tmp_path / runlock.LOCK_FILE, (old, old))
    warnings = []
    lock = runlock.acquire(tmp_path, on_takeover=warnings.append)
    assert len(warnings) == 1 and warnings[0].startswith("took over") and lock.took_over
    assert runlock.read_holder(tmp_path).token == lock.holder.token
    runlock.release(lock)


@pytest.mark.parametrize("case", ["live_here", "other_host"])
def test_a_live_or_remote_writer_is_refused(tmp_path, case):
    if case == "live_here":
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        _write_lock(tmp_path, pid=p.pid, pid_start=runlock._pid_start(p.pid))
        word = f"pid {p.pid} on host {socket.gethostname()}"
    else:
        _write_lock(tmp_path, host="gpu-server-7", pid=_dead_pid())  # its pid means nothing here
        word = f"delete {tmp_path / runlock.LOCK_FILE}"
    try:
        with pytest.raises(UserError, match="being written by") as e:
            runlock.acquire(tmp_path)
        assert word in str(e.value)
        assert runlock.read_holder(tmp_path).token == "theirs"  # untouched
    finally:
        if case == "live_here":
            p.kill()
            p.wait()


def test_release_leaves_a_lock_that_is_no_longer_ours(tmp_path):
    lock = runlock.acquire(tmp_path)
    _write_lock(tmp_path, token="someone else")  # e.g. taken over after we were presumed dead
    runlock.release(lock)
    assert runlock.read_holder(tmp_path).token == "someone else"


def test_resuming_a_run_another_process_writes_is_refused_before_tensorflow_loads(tmp_path):
    """The refusal came only after TensorFlow had loaded (~9 s here); the lock was checked when taken. Now
    the CLI answers from the lock file first (and still checks again when it takes the lock)."""
    from training_core.base.config import RunConfig
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    RunConfig(example="ring", steps=100).write_toml(run / "config.toml")
    for name in ("ckpt-10.index", "ckpt-10.data-00000-of-00001"):
        (run / "checkpoints" / name).write_bytes(b"")
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        _write_lock(run, pid=p.pid, pid_start=runlock._pid_start(p.pid))
        code = ("import sys; from training_core.cli.headless import main; rc = main(['--headless', '--resume', sys.argv[1]]); "
                "print(rc, 'tensorflow' in sys.modules)")
        r = subprocess.run([sys.executable, "-c", code, str(run)], capture_output=True, text=True, timeout=300,
                           cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    finally:
        p.kill()
        p.wait()
    assert r.stdout.split() == ["2", "False"], (r.stdout, r.stderr)
    assert f"is being written by pid {p.pid}" in r.stderr

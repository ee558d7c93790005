"""One writer per run directory: `RUN_DIR/writer.lock` names the process that writes the run.

Why: a run directory is steered and watched by other processes (windows attached to it, a
`commands.jsonl` written from a laptop), but only one process may *write* it. Two trainers appending
to the same `events.jsonl` and `scalars.csv` (a second start with the same `--run-dir`, a resume while
the first run still trains) would interleave two histories into one record that no reader can untangle.

The lock file holds the writer's host, pid, the pid's start time (so a pid reused by another process
after a reboot or a wrap-around does not look alive) and a random token (so `release` removes only its
own lock). It is created with O_CREAT|O_EXCL, which is atomic on local file systems and on NFSv3+.

- A lock held by a live process, or by any process on another host (whose liveness cannot be seen from
  here), refuses the second writer with one line naming the holder and the fix.
- A lock left by a dead process on this host (a kill -9, a power cut) is taken over; `RunLock.took_over`
  says whose it was, for a warning.

The API is two calls, used wherever a run opens its directory for writing (a new run, a resume):
`lock = acquire(run_dir)` before the first byte is written, `release(lock)` after the last.
Readers (the exporter, an attached window) never take it.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from training_core.base.errors import UserError
from training_core.rundir.layout import LOCK_FILE

#: a lock file still empty or torn after this long was left by a writer that died while creating it
_TORN_GRACE_S = 5.0


@dataclass(frozen=True)
class Holder:
    """Who a lock file names."""

    host: str
    pid: int
    pid_start: int | None = None  # the process's start time in clock ticks since boot (Linux), if known
    since: float = 0.0  # seconds since the epoch
    token: str = ""

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since)) if self.since else "an unknown time"
        return f"pid {self.pid} on host {self.host} (since {when})"


@dataclass
class RunLock:
    """A held lock. `took_over` describes the dead writer whose lock was taken, or is None."""

    path: Path
    holder: Holder
    took_over: str | None = None
    released: bool = False


def _pid_start(pid: int) -> int | None:
    """The process's start time (field 22 of /proc/PID/stat), or None where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (ValueError, IndexError):
        return None


def _me() -> Holder:
    pid = os.getpid()
    return Holder(socket.gethostname(), pid, _pid_start(pid), round(time.time(), 3), secrets.token_hex(8))


def _alive(h: Holder) -> bool:
    """Whether the holder (on this host) still runs: its pid exists and started when the lock says."""
    if h.pid <= 0:
        return False
    try:
        os.kill(h.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: alive
    if h.pid_start is not None:
        now = _pid_start(h.pid)
        if now is not None and now != h.pid_start:
            return False  # the pid was reused by a newer process
    return True


def read_holder(run_dir: str | Path) -> Holder | None:
    """The lock's holder; None when there is no lock file; a holder with pid 0 when the file is torn."""
    path = Path(run_dir) / LOCK_FILE
    try:
        d = json.loads(path.read_bytes())
        return Holder(str(d["host"]), int(d["pid"]), None if d.get("pid_start") is None else int(d["pid_start"]),
                      float(d.get("since", 0.0)), str(d.get("token", "")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return Holder("?", 0)


def is_live(h: Holder) -> bool:
    """Whether a lock holder must be respected: alive here, or on another host (which we cannot check)."""
    return h.host != socket.gethostname() or _alive(h)


def gone_writer(run_dir: str | Path) -> Holder | None:
    """The holder of the run's lock if it was a process on this host that no longer runs (killed: it could
    not remove its lock), else None (no lock, a torn one, a live writer, or one on another host)."""
    h = read_holder(run_dir)
    return None if h is None or h.pid == 0 or is_live(h) else h


def refusal(run_dir: str | Path) -> str | None:
    """The one-line refusal for a run directory another live process writes, or None."""
    h = read_holder(run_dir)
    if h is None or h.pid == 0 or not is_live(h):
        return None
    path = Path(run_dir) / LOCK_FILE
    fix = "stop that process first, or choose another --run-dir"
    if h.host != socket.gethostname():
        fix += f" (if that process is gone, delete {path})"
    return f"run directory {run_dir} is being written by {h.describe()}; {fix}"


def _create(path: Path, me: Holder) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    try:
        os.write(fd, json.dumps({"host": me.host, "pid": me.pid, "pid_start": me.pid_start, "since": me.since,
                                 "token": me.token}).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


def acquire(run_dir: str | Path, on_takeover: Callable[[str], None] | None = None) -> RunLock:
    """Take the run directory's writer lock, or raise `UserError` (one line) if a live process holds it.
    A dead writer's lock is taken over; `on_takeover` gets a one-line warning saying whose it was."""
    path = Path(run_dir) / LOCK_FILE
    me = _me()
    took_over = None
    deadline = time.monotonic() + _TORN_GRACE_S + 1.0
    while True:
        try:
            if _create(path, me):
                if took_over and on_takeover is not None:
                    on_takeover(f"took over {took_over}")
                return RunLock(path, me, took_over)
        except OSError as e:
            raise UserError(f"cannot create {path} ({e.strerror}); choose a writable --run-dir") from None
        h = read_holder(run_dir)
        if h is None:
            continue  # released between our two looks
        if h.pid == 0:  # torn: a writer is creating it right now, or died doing so
            try:
                age = time.time() - path.stat().st_mtime
            except FileNotFoundError:
                continue
            if age < _TORN_GRACE_S and time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            took_over = f"a damaged lock file {path}"
        elif is_live(h):
            raise UserError(refusal(run_dir) or f"run directory {run_dir} is locked by {h.describe()}")
        else:
            took_over = f"the lock of {h.describe()}, which is no longer running"
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def release(lock: RunLock) -> None:
    """Remove the lock file if it is still ours (idempotent)."""
    if lock.released:
        return
    lock.released = True
    h = read_holder(lock.path.parent)
    if h is not None and h.token == lock.holder.token:
        try:
            lock.path.unlink()
        except FileNotFoundError:
            pass


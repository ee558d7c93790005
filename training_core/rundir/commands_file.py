"""A run's interface to other processes, through its directory: commands come in through
`RUN_DIR/commands.jsonl`: a sender appends a line (`append_command`), the run reads what was appended
(`CommandTail`; the observer that sends it to the loop is `observers.command_file.CommandFileReader`).
Everything a watcher needs is already in the record, samples included (`samples/step-*.npz`).

Why a file: a run on a server is started from a terminal, a job scheduler or a notebook, and the
researcher watches from a laptop that sees the run directory over sshfs or NFS. A file in the run
directory needs no port, no daemon and no credentials beyond the ones that already let the laptop
read the run; every process that can read the run can steer it, and nothing else can.

Format: each line is a JSON object, the command's own dictionary form (`Command.to_dict()`: `kind` and
its fields) plus an optional `id` (a string the sender chooses). The trainer reads the lines appended
since its last look, at step boundaries, and queues each command with its id; the event that
acknowledges it in `events.jsonl` carries the same id. A line that is not JSON, an unknown kind or
field, a value of the wrong type, or a command that cannot apply becomes a `rejected` event with the
id (when there is one) and the reason; the run never stops for a bad line. A last line without its
newline waits until it is complete. Commands are data only: nothing in them is evaluated, and no
command has a path in it, so nothing in this file can make the trainer read or write outside the run
directory.

Cost: the reader is an observer that looks at the file at most every `POLL_S` seconds (one `stat`,
~5 us; reading only the new bytes when it grew), from `on_metrics` while training (the trainer fetches
metrics at a step boundary at least every 0.25 s) and `on_idle` while paused. It has no per-step hook,
so a step costs nothing more (`bench/run.py` compares runs with and without it).

Samples: a process that watches the run (an attached window) asks for fresh ones with `sample`
commands; each drawing goes to the record's `samples/` like every other (atomically: a reader never sees
half a file).

Lines already in the file when the run opens its directory (a resumed run) are not applied: they were
meant for an earlier process, and their sender never saw them acknowledged. A warning says how many.
"""
from __future__ import annotations

import itertools
import json
import os
import socket
from pathlib import Path

from training_core.base import events as E
from training_core.base.commands import Command, Envelope, command_from_dict
from training_core.base.errors import UserError
from training_core.rundir.layout import COMMANDS_FILE

POLL_S = 0.25
#: a line longer than this is refused without being kept in memory (no command comes close)
MAX_LINE_BYTES = 1 << 20


def parse_command_line(line: bytes) -> Envelope | E.Rejected:
    """One line of `commands.jsonl` (without its newline): the command with its id, or why it is refused."""
    try:
        d = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        return E.Rejected(message="the line is not UTF-8 text")
    except ValueError as e:
        return E.Rejected(message=f"the line is not JSON ({e}): {_snippet(line)}")
    if not isinstance(d, dict):
        return E.Rejected(message=f"the line is not a JSON object: {_snippet(line)}")
    cid = d.pop("id", None)
    if cid is not None and not isinstance(cid, str):
        return E.Rejected(message=f"the id must be a string, got {cid!r}"[:200], command=d)
    try:
        return Envelope(command_from_dict(d), cid)
    except UserError as e:
        return E.Rejected(message=str(e), command=d, id=cid)
    except Exception as e:  # noqa: BLE001 - a line from a file must never end a long run
        return E.Rejected(message=f"the command could not be read ({type(e).__name__}: {e})"[:300], command=d, id=cid)


def _snippet(line: bytes) -> str:
    text = line.decode("utf-8", "replace")
    return repr(text if len(text) <= 80 else text[:77] + "...")


# -- the sender's side ------------------------------------------------------------------------------------
_ids = itertools.count(1)


def new_id() -> str:
    """An id no other sender uses: host, pid and a counter."""
    return f"{socket.gethostname()}-{os.getpid()}-{next(_ids)}"


def append_command(run_dir: str | Path, command: Command, id: str | None = None) -> str:  # noqa: A002
    """Append `command` to `RUN_DIR/commands.jsonl` as one line, written with one `write` (lines from two
    senders on one machine never interleave), and return its id. The file is opened and closed each time,
    so NFS's close-to-open consistency hands the line to the server at once."""
    cid = new_id() if id is None else id
    line = (json.dumps({"id": cid, **command.to_dict()}, separators=(",", ":")) + "\n").encode("utf-8")
    path = Path(run_dir) / COMMANDS_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as e:
        raise UserError(f"cannot write {path} ({e.strerror}); is {run_dir} a run directory you can write?") from None
    try:
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return cid


class CommandTail:
    """The lines appended to a commands file since the last look, each parsed: an `Envelope` to apply, a
    `Rejected` event (a bad line, named by its line number) or a `Warning` (the file shrank). Reading costs one
    `stat` when nothing was appended; a last line without its newline waits until it is complete; a line longer
    than `MAX_LINE_BYTES` is refused without being kept in memory.

    `start` is where this run's commands begin (a resumed run: the file's size when it resumed; lines before
    were meant for an earlier process). The file is created, so `ls` shows where commands go."""

    def __init__(self, path: str | Path, start: int | None = None) -> None:
        self.path = Path(path)
        try:
            with open(self.path, "ab") as f:
                size = f.tell()
        except OSError:
            size = 0
        self._offset = size if start is None else min(start, size)  # bytes consumed, the partial line included
        self._partial = b""
        self._overlong = False  # inside a line longer than MAX_LINE_BYTES: skip to its newline
        self._line_no = 0
        old = b""
        if self._offset:
            with open(self.path, "rb") as f:
                old = f.read(self._offset)
            self._line_no = old.count(b"\n")
            self._partial = old[old.rfind(b"\n") + 1:]
        #: complete lines that were there before `start`: not applied
        self.skipped = self._line_no
        self._before = old[:old.rfind(b"\n") + 1]

    def unanswered(self, answered: set[str]) -> int:
        """Of the lines before `start`, the commands no event of the record answers (`answered`: the ids its
        events carry): those a sender may still be waiting for. An answered one was applied (or refused) by the
        process before; a sample request is a watcher's stale refresh. A resume warned of every line, the
        window's many sample requests included, at each resume of a steered run."""
        n = 0
        for line in self._before.split(b"\n")[:-1]:
            got = parse_command_line(line) if line.strip() else None
            if isinstance(got, Envelope) and got.command.kind != "sample" and (got.id is None or got.id not in answered):
                n += 1
        return n

    @property
    def lines(self) -> int:
        """Complete lines consumed so far (those before `start` included)."""
        return self._line_no

    def read(self) -> list[Envelope | E.Rejected | E.Warning]:
        """What was appended since the last call."""
        out: list[Envelope | E.Rejected | E.Warning] = []
        try:
            size = os.stat(self.path).st_size
        except OSError:
            size = 0  # deleted: a new file starts from its beginning
        if size < self._offset:
            out.append(E.Warning(message=f"{COMMANDS_FILE} shrank to {size} bytes; reading it again from its "
                                         f"start (append to it instead of rewriting it)"))
            self._offset, self._partial, self._overlong = 0, b"", False
        if size == self._offset:
            return out
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read(size - self._offset)
        except OSError:
            return out
        self._offset += len(data)
        for line in self._lines(data):
            self._line_no += 1
            got = E.Rejected(message=f"the line is longer than {MAX_LINE_BYTES} bytes") if line is None \
                else parse_command_line(line) if line.strip() else None
            if isinstance(got, E.Rejected):
                got = E.Rejected(message=f"{COMMANDS_FILE} line {self._line_no}: {got.message}", command=got.command,
                                 id=got.id)
            if got is not None:
                out.append(got)
        return out

    def _lines(self, data: bytes) -> list[bytes | None]:
        """The complete lines in `data` after what was kept; None stands for a line too long to keep."""
        data = self._partial + data
        cut = data.rfind(b"\n") + 1
        lines: list[bytes | None] = list(data[:cut].split(b"\n")[:-1])
        self._partial = data[cut:]
        if self._overlong and lines:  # the end of an overlong line, already refused
            lines.pop(0)
            self._overlong = False
        if len(self._partial) > MAX_LINE_BYTES and not self._overlong:
            self._partial, self._overlong = b"", True
            lines.append(None)
        elif self._overlong:
            self._partial = b""
        return lines

"""Cutting a run record back to a checkpoint: what a resumed or rolled-back run does first.

A run killed at step M, resumed from its checkpoint at step N < M, runs steps N+1..M again. Had the
rows of the first N+1..M stayed, `scalars.csv` would hold two rows for those steps and every reader
would have to guess which timeline is meant. So the record is cut back to the checkpoint first: the
loss rows after N, the per-variable rows after N and the events after the checkpoint's own `checkpoint`
event (a command applied after the checkpoint is not in it). Nothing is lost: what is cut goes to
`dropped/<label>-<time>/` in the same formats, where a human can find it. TensorBoard's files are
append-only; the record writer adds a SessionLog START at step N+1 instead, which TensorBoard reads
as "discard every step from here on" (rundir/writer.py).

Files are scanned from the end, so cutting a long run costs what is dropped, not the run's length.
No TensorFlow here.
"""
from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, TypeVar

from training_core.rundir.layout import DROPPED_DIR, EVENTS_FILE, SAMPLES_DIR, SCALARS_FILE, VARIABLES_DIR
from training_core.rundir.reading import SCALARS_HEADER
from training_core.rundir.samples import list_samples
from training_core.rundir.varstore import truncate_after

T = TypeVar("T")
_CHUNK = 1 << 16


def dropped_dir(run_dir: str | Path, label: str) -> Path:
    """A new `dropped/<label>-YYYYmmdd-HHMMSS[-k]/` path (created when something is moved there)."""
    base = Path(run_dir) / DROPPED_DIR / f"{label}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    p, k = base, 1
    while p.exists():
        k += 1
        p = base.with_name(f"{base.name}-{k}")
    return p


def lines_backwards(f: BinaryIO) -> Iterator[tuple[bytes, int]]:
    """The complete lines of a file from the last to the first, each with the offset just after its newline
    (a torn last line, without its newline, is not a line)."""
    pos = f.seek(0, 2)
    buf = b""

    def more() -> int:
        nonlocal pos, buf
        start = max(0, pos - _CHUNK)
        f.seek(start)
        chunk = f.read(pos - start)
        buf, pos = chunk + buf, start
        return len(chunk)

    while True:
        i = buf.rfind(b"\n")
        while i < 0 and pos > 0:
            more()
            i = buf.rfind(b"\n")
        if i < 0:
            return
        j = buf.rfind(b"\n", 0, i)
        while j < 0 and pos > 0:
            i += more()
            j = buf.rfind(b"\n", 0, i)
        yield buf[j + 1:i], pos + i + 1
        buf = buf[:j + 1]


def _scalar_step(line: bytes) -> int | None:
    parts = line.split(b",")
    if len(parts) != 4:
        return None
    try:
        float(parts[1]), float(parts[3])
        return int(parts[0])
    except ValueError:
        return None


def scalars_cut(path: Path, step: int) -> int:
    """Offset after the last complete row at or before `step` (or after the header)."""
    try:
        with open(path, "rb") as f:
            for line, end in lines_backwards(f):
                s = _scalar_step(line)
                if (s is not None and s <= step) or line.strip() == SCALARS_HEADER.encode():
                    return end
    except FileNotFoundError:
        pass
    return 0


def last_scalar_step(path: Path) -> int:
    """The step of the last complete row of `scalars.csv` (0 if there is none)."""
    try:
        with open(path, "rb") as f:
            for line, _ in lines_backwards(f):
                s = _scalar_step(line)
                if s is not None:
                    return s
    except FileNotFoundError:
        pass
    return 0


def tags_at_step(path: Path, step: int) -> set[str]:
    """The tags of the complete rows of `scalars.csv` at `step`, scanned from the end (a resumed run's record
    ends at its checkpoint's step: this reads what that step holds, not the run)."""
    tags: set[str] = set()
    try:
        with open(path, "rb") as f:
            for line, _ in lines_backwards(f):
                s = _scalar_step(line)
                if s is not None and s < step:
                    break
                if s == step:
                    tags.add(line.split(b",")[2].decode("utf-8", "replace"))
    except FileNotFoundError:
        pass
    return tags


def _event(line: bytes) -> tuple[int, str] | None:
    try:
        d = json.loads(line)
    except ValueError:
        return None
    if not isinstance(d, dict) or isinstance(d.get("step"), bool) or not isinstance(d.get("step"), int):
        return None
    return d["step"], str(d.get("kind", ""))


def checkpoint_cut(items: Iterable[tuple[int, str, T]], step: int) -> T | None:
    """Where a record is cut back to the checkpoint at `step`, given its events from the last to the first
    as (step, kind, position after it): after the checkpoint's own `checkpoint` event (an event after it,
    at the same step, was not in the checkpoint); without one (a kill between the save and its event),
    after the last event at or before `step`. The file (`events_cut`) and the window's model cut alike."""
    fallback = None
    for s, kind, end in items:
        if s > step:
            continue
        if fallback is None:
            fallback = end
        if (s, kind) == (step, "checkpoint"):
            return end
        if s < step:
            break
    return fallback


def events_cut(path: Path, step: int) -> int:
    """Offset in `events.jsonl` after which the events are not in the checkpoint at `step`."""
    try:
        with open(path, "rb") as f:
            parsed = ((got[0], got[1], end) for line, end in lines_backwards(f) if (got := _event(line)))
            return checkpoint_cut(parsed, step) or 0
    except FileNotFoundError:
        return 0


def _cut(path: Path, offset: int, keep_in: Path | None, header: bytes = b"") -> int:
    """Truncate `path` at `offset`; the bytes cut go to `keep_in/<name>` (after `header`). Returns the
    number of complete lines cut."""
    if not path.is_file():
        return 0
    with open(path, "r+b") as f:
        size = f.seek(0, 2)
        if offset >= size:
            return 0
        f.seek(offset)
        tail = f.read()
        if keep_in is not None:
            keep_in.mkdir(parents=True, exist_ok=True)
            (keep_in / path.name).write_bytes(header + tail)
        f.truncate(offset)
        f.flush()
        os.fsync(f.fileno())
    return tail.count(b"\n")


def trim_record(run_dir: str | Path, step: int, keep_in: Path | None) -> dict[str, int]:
    """Cut `scalars.csv`, `events.jsonl` and `variables/*.bin` back to the checkpoint at `step`; what is
    cut goes to `keep_in`. Returns how many rows and lines were cut, by file kind."""
    d = Path(run_dir)
    scalars = d / SCALARS_FILE
    events = d / EVENTS_FILE
    return {
        "scalars": _cut(scalars, scalars_cut(scalars, step), keep_in, (SCALARS_HEADER + "\n").encode()),
        "events": _cut(events, events_cut(events, step), keep_in),
        "variables": truncate_after(d, step, None if keep_in is None else keep_in / VARIABLES_DIR),
        "samples": _move_samples_after(d, step, keep_in),
    }


def _move_samples_after(run_dir: Path, step: int, keep_in: Path | None) -> int:
    """`samples/step-*.npz` drawn after `step` go to `keep_in/samples/` (deleted without `keep_in`)."""
    later = [path for s, path in list_samples(run_dir) if s > step]
    for path in later:
        if keep_in is None:
            path.unlink(missing_ok=True)
        else:
            (keep_in / SAMPLES_DIR).mkdir(parents=True, exist_ok=True)
            os.replace(path, keep_in / SAMPLES_DIR / path.name)
    return len(later)


"""Following a run directory as it grows: `RunFollower.poll()` reads only the bytes added since the
last poll (scalars.csv, events.jsonl, variables/*.bin) into a `RunData`.

This is what review of a growing run and attaching to a run another process writes stand on: the
cost of a poll is proportional to what is new, not to the run's length, and a record cut at any byte
(a kill, a full disk, a network file system that shows a file half-written) yields what is complete.

A resume or a rollback cuts the record back to a checkpoint (rundir/trim.py) and appends again, possibly past
where the follower had read before its next poll. Then the model is rebuilt from the start: when a
reader finds that what it had read is no longer the file's content (rundir/readmark.py), and when a poll
reads a new `resumed` or `rollback` event (each follows a cut: this covers a cut that happens to end
in the bytes a reader last saw). Reading on from the old offsets gave steps twice and out of order,
and kept the killed process's rows after the checkpoint.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from training_core.base import events as E
from training_core.base.config import RunConfig
from training_core.base.errors import UserError
from training_core.rundir.layout import CONFIG_FILE, EVENTS_FILE, SCALARS_FILE, VARIABLES_DIR
from training_core.rundir.reading import LineTail, parse_event_lines, parse_scalar_lines
from training_core.rundir.varstore import VarFileReader
from training_core.runs.data import RunData

#: events written right after the record was cut back to a checkpoint
CUT_EVENTS = (E.Resumed, E.Rollback)


class RunFollower:
    """Feeds `data` with what `run_dir` gains (`read_run` makes a RunData and reads a directory once).
    A rebuild clears `data` (its `generation` moves) and reads it again."""

    def __init__(self, run_dir: str | Path, data: RunData | None = None) -> None:
        self.dir = Path(run_dir)
        self.data = data if data is not None else RunData(run_dir)
        self._reset()

    def _reset(self) -> None:
        self._scalars = LineTail(self.dir / SCALARS_FILE)
        self._events = LineTail(self.dir / EVENTS_FILE)
        self._vars: dict[Path, VarFileReader] = {}
        self._read_any = False  # whether `data` holds anything these readers read
        self._config_read = False  # whether the record's config.toml (its `monitor`) was read into `data`

    def poll(self) -> bool:
        """Read what is new; True if the model changed."""
        version = self.data.version
        got = self._read()
        events = [] if got is None else parse_event_lines(got[0])
        if got is None or (self._read_any and any(isinstance(e, CUT_EVENTS) for e in events)):
            self.data.clear()  # the record was cut back (and may have grown again): start over
            self._reset()
            got = self._read() or ([], [], [])  # (fresh readers never find a mismatch)
            events = parse_event_lines(got[0])
        event_lines, scalar_lines, var_rows = got
        self._read_any = self._read_any or bool(event_lines or scalar_lines or any(len(r) for r in var_rows))
        for e in events:
            self.data.add_event(e)
        for tag, (s, w, v) in parse_scalar_lines(scalar_lines).items():
            self.data.add_scalar(tag, np.array(s, dtype=np.int64), np.array(w), np.array(v))
        for rows in var_rows:
            self.data.add_var_rows(rows)
        if not self._config_read:
            self._read_monitor()
        return self.data.version != version

    def _read_monitor(self) -> None:
        """`data.monitor` from config.toml, once it is there (a run just begun may not have written it yet)."""
        if not (self.dir / CONFIG_FILE).is_file():
            return
        try:
            self.data.monitor = RunConfig.read_toml(self.dir / CONFIG_FILE).monitor or ""
        except UserError:
            return  # damaged or half-written: asked again at the next poll
        self._config_read = True

    def _read(self) -> tuple[list[str], list[str], list] | None:
        """The new lines and rows, or None if any file is no longer what was read of it."""
        event_lines = self._events.read_lines()
        scalar_lines = self._scalars.read_lines()
        var_rows = []
        var_dir = self.dir / VARIABLES_DIR
        for path in sorted(var_dir.glob("*.bin")) if var_dir.is_dir() else []:
            reader = self._vars.setdefault(path, VarFileReader(path))
            rows = reader.read_new()
            if reader.reset:
                return None
            if rows is not None:
                var_rows.append(rows)
        if self._events.reset or self._scalars.reset:
            return None
        return event_lines, scalar_lines, var_rows


def read_run(run_dir: str | Path) -> RunData:
    """Everything a run directory holds now (a `RunFollower` keeps following it)."""
    data = RunData(run_dir)
    RunFollower(run_dir, data).poll()
    return data


def reload_resumed(data: RunData, run_dir: str | Path, resumed: "E.Resumed") -> None:
    """A window that resumes a run: its model becomes the run's record up to the `resumed` event (read from
    the directory the training process has just cut back), and what follows comes live. What the process
    wrote after that event is dropped here, since it arrives live too."""
    data.clear()
    data.run_dir = Path(run_dir)
    RunFollower(run_dir, data).poll()
    data.cut_back(resumed.step, through=resumed)

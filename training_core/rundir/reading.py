"""The run directory's readers: scalars, events and the configuration (the names are in layout.py).

The run directory is the one record of a run: `config.toml` (what was asked), `events.jsonl` (every
lifecycle and control event, so a hand-tuned run can be replayed), `scalars.csv` (losses and
metrics, one row per step and tag), `variables/` (the per-variable norms, binary: see rundir/varstore.py),
`tb/` (TensorBoard) and `checkpoints/`.

Readers accept a record cut at any byte, because a killed process (or a full disk) may stop
mid-write and everything complete before that must stay usable: a torn last line, a half-written
header, bytes that are not UTF-8 or lines that are not what they should be are skipped, never fatal.
`LineTail` reads only the bytes a growing file gained since the last call, so following a live run
costs what is new, not the run's length; it starts over when the file was cut back and rewritten
(a resume between two reads: rundir/readmark.py). Pure Python and numpy: the window and the figure exporter
read runs without loading TensorFlow.
"""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from training_core.base.errors import UserError
from training_core.base.event_json import event_from_dict
from training_core.base.events import Event
from training_core.rundir.layout import CONFIG_FILE, EVENTS_FILE, SCALARS_FILE
from training_core.rundir.readmark import ReadMark
from training_core.rundir.varstore import KINDS as VAR_KINDS
from training_core.rundir.varstore import read_variables, var_keys

SCALARS_HEADER = "step,wall_time,tag,value"


@dataclass
class Series:
    """One tag's recorded points, in step order."""

    steps: np.ndarray  # int64
    wall_time: np.ndarray  # float64, seconds since the epoch
    values: np.ndarray  # float64


class LineTail:
    """The complete lines a growing text file gained since the last call (a torn last line waits, and is
    read again with its end: only complete lines count as read, so a half-written tail never decides
    whether the file is still the one read).

    `read_lines()` reads only new bytes. If what it read is no longer the file's content (a resume or a
    rollback cut the file back and it may have grown again since; or the file was replaced: rundir/readmark.py),
    `reset` turns True for that call and the lines are the whole file again."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._mark = ReadMark()
        self.reset = False

    def read_lines(self) -> list[str]:
        self.reset = False
        try:
            with open(self.path, "rb") as f:
                data = self._mark.read_rest(f)
                if data is None:
                    self._mark, self.reset = ReadMark(), True
                    data = self._mark.read_rest(f)
        except OSError:
            return []
        cut = data.rfind(b"\n") + 1
        self._mark.consumed(data, cut)
        return data[:cut].decode("utf-8", "replace").splitlines()


def parse_scalar_lines(lines: list[str], tags: set[str] | None = None,
                       into: dict[str, tuple[list, list, list]] | None = None) -> dict[str, tuple[list, list, list]]:
    """`step,wall_time,tag,value` lines into per-tag columns; the header and malformed lines are skipped."""
    cols = {} if into is None else into
    for line in lines:
        parts = line.split(",")
        if len(parts) != 4:
            continue
        step, wall, tag, value = parts
        if tags is not None and tag not in tags:
            continue
        try:
            s, w, v = int(step), float(wall), float(value)
        except ValueError:
            continue  # the header, or a line damaged by a crash
        c = cols.setdefault(tag, ([], [], []))
        c[0].append(s)
        c[1].append(w)
        c[2].append(v)
    return cols


def to_series(cols: dict[str, tuple[list, list, list]]) -> dict[str, Series]:
    return {tag: Series(np.array(s, dtype=np.int64), np.array(w, dtype=np.float64), np.array(v, dtype=np.float64))
            for tag, (s, w, v) in cols.items()}


def read_scalars(run_dir: str | Path, tags: set[str] | None = None) -> dict[str, Series]:
    """All scalars of a run by tag, as `scalars.csv` tags them: `loss/<phase>`, `metric/<name>`, and from
    `variables/` `update_norm/<name>`, `update_ratio/<name>`, `grad_norm/<name>`, a variable's name being its
    path, or `path@phase` for each phase of a variable several phases train (rundir/varstore.py `var_keys`).
    `tags` limits what is kept.

    A complete first line that is not the header is refused (ValueError, `scalars_header_problem`'s line), and
    `--export` refuses it with the same line (it drew such a run without a word). Why refuse rather than skip
    it like a damaged row: a run that was cut never leaves one (a kill leaves a torn line, which is not read
    yet; a resume cuts a torn header away and writes it anew), so the file was damaged or is not a record of
    this format, whose rows would be guessed at; putting the header line back makes every row readable."""
    run_dir = Path(run_dir)
    lines = LineTail(run_dir / SCALARS_FILE).read_lines()
    if lines and lines[0].strip() != SCALARS_HEADER:  # a complete first line that is not the header
        raise ValueError(scalars_header_problem(run_dir))
    out = to_series(parse_scalar_lines(lines, tags))
    phases = read_variables(run_dir)
    for rows, keys in zip(phases, var_keys([(r.phase, r.paths) for r in phases])):
        for kind in VAR_KINDS:
            values = getattr(rows, kind)
            for j, key in enumerate(keys):
                tag = f"{kind}/{key}"
                if tags is None or tag in tags:
                    out[tag] = Series(rows.steps, rows.wall, values[:, j].astype(np.float64))
    return out


def scalars_header_problem(run_dir: str | Path) -> str | None:
    """The one line that refuses `scalars.csv` when its first complete line is not its header (see
    `read_scalars`), else None (a missing file, or a header not yet complete, is no problem here)."""
    path = Path(run_dir) / SCALARS_FILE
    try:
        with open(path, "rb") as f:
            first = f.readline()
    except OSError:
        return None
    if not first.endswith(b"\n") or first.strip() == SCALARS_HEADER.encode():
        return None
    return (f"{path} does not start with its header line {SCALARS_HEADER} (the file is damaged, or not a "
            f"Freezeframe record); make that its first line again and every complete row after it is read")


def parse_event_lines(lines: list[str]) -> list[Event]:
    out = []
    for line in lines:
        try:
            e = event_from_dict(json.loads(line))
        except ValueError:
            continue
        if e is not None:
            out.append(e)
    return out


def read_events(run_dir: str | Path) -> list[Event]:
    """Events in the order they happened (typed; see base/events.py). Damaged or torn lines are skipped."""
    return parse_event_lines(LineTail(Path(run_dir) / EVENTS_FILE).read_lines())


def read_config(run_dir: str | Path) -> dict[str, Any]:
    """The run's `config.toml` as a plain dict (see `RunConfig.from_dict`); a damaged file is a `UserError`."""
    path = Path(run_dir) / CONFIG_FILE
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise UserError(f"{path} does not exist; pass a run directory (it holds config.toml)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path} is damaged ({' '.join(str(e).split())}); pass an intact run directory") from None
    except OSError as e:
        raise UserError(f"{path} cannot be read ({e.strerror}); pass a readable run directory") from None


def clear_failed_run(run_dir: Path) -> bool:
    """Empty `run_dir` when its run recorded no step and ended with an error (a wrong loss key, a frozen scope
    or a train_step that failed before its first batch was logged), and say whether it did. Why: such a record
    holds nothing to keep, and refusing the directory would block the very re-run that fixes the script."""
    import shutil
    try:
        events = read_events(run_dir)
    except Exception:  # noqa: BLE001 - not a run's record, or a damaged one: keep it, the caller refuses it
        return False
    if not events or events[-1].kind != "stop" or events[-1].reason != "error" or any(e.step for e in events):
        return False
    for child in run_dir.iterdir():
        shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    return True

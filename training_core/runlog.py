"""The run directory's layout and its readers.

The run directory is the one record of a run: `config.toml` (what was asked), `events.jsonl` (every
lifecycle and control event, so a hand-tuned run can be replayed), `scalars.csv` (every measured
number), `tb/` (the same scalars for TensorBoard) and `checkpoints/`. Readers tolerate a truncated
last line, because a killed process may stop mid-write and everything before it must stay usable.
Pure Python and numpy: the window and the figure exporter read runs without loading TensorFlow.
"""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

CONFIG_FILE = "config.toml"
SCALARS_FILE = "scalars.csv"
EVENTS_FILE = "events.jsonl"
TB_DIR = "tb"
CHECKPOINT_DIR = "checkpoints"
SCALARS_HEADER = "step,wall_time,tag,value"


@dataclass
class Series:
    """One tag's recorded points, in step order."""

    steps: np.ndarray  # int64
    wall_time: np.ndarray  # float64, seconds since the epoch
    values: np.ndarray  # float64


def read_scalars(run_dir: str | Path, tags: set[str] | None = None) -> dict[str, Series]:
    """All scalars of a run, by tag; `tags` limits what is kept. A torn last line is ignored."""
    path = Path(run_dir) / SCALARS_FILE
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if not lines or lines[0].strip() != SCALARS_HEADER:
        raise ValueError(f"{path} does not start with the header {SCALARS_HEADER!r}")
    if not text.endswith("\n"):
        lines = lines[:-1]  # torn by a kill mid-write
    cols: dict[str, tuple[list, list, list]] = {}
    for line in lines[1:]:
        if not line:
            continue
        parts = line.split(",")
        if len(parts) != 4:
            continue
        step, wall, tag, value = parts
        if tags is not None and tag not in tags:
            continue
        c = cols.setdefault(tag, ([], [], []))
        c[0].append(step)
        c[1].append(wall)
        c[2].append(value)
    return {
        tag: Series(np.array(s, dtype=np.int64), np.array(w, dtype=np.float64), np.array(v, dtype=np.float64))
        for tag, (s, w, v) in cols.items()
    }


def read_events(run_dir: str | Path) -> list[dict[str, Any]]:
    """Events in the order they happened. A torn last line is ignored."""
    path = Path(run_dir) / EVENTS_FILE
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def read_config(run_dir: str | Path) -> dict[str, Any]:
    """The run's `config.toml` as a plain dict (see `RunConfig.from_dict`)."""
    with open(Path(run_dir) / CONFIG_FILE, "rb") as f:
        return tomllib.load(f)


def is_run_dir(path: str | Path) -> bool:
    p = Path(path)
    return (p / SCALARS_FILE).is_file() and (p / EVENTS_FILE).is_file()

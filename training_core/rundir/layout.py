"""A run directory's layout, in one place: every name a run writes, and how checkpoints are named.

Why one module: the names were spread over seven (the scalars reader, the variable store, the lock, the
trim, the checkpoint store, the commands file, the export guard), so knowing which files belong to a
run meant importing all of them. Readers, writers and the export guard (`rundir/outputs.py`) take the names
from here; nothing here reads or writes a file but the checkpoint listing, which needs no TensorFlow.

    RUN_DIR/config.toml        the resolved configuration (RunConfig)
            events.jsonl       one JSON event per line, strict JSON
            scalars.csv        step,wall_time,tag,value: losses and metric/<name>
            variables/         per-variable norms, one binary file per phase (rundir/varstore.py)
            samples/           step-NNNNNNNNN.npz drawings
            checkpoints/       ckpt-<step>.index/.data-*: TensorFlow checkpoints with the host state
            models/            each model's weights in Keras' format at the end
            tb/                TensorBoard event files
            commands.jsonl     commands appended by other processes (commands_file.py)
            writer.lock        the one writer's lock (lock.py)
            dropped/           rows a resume or rollback cut, kept
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

CONFIG_FILE = "config.toml"
SCALARS_FILE = "scalars.csv"
EVENTS_FILE = "events.jsonl"
TB_DIR = "tb"
CHECKPOINT_DIR = "checkpoints"
SAMPLES_DIR = "samples"
VARIABLES_DIR = "variables"
MODELS_DIR = "models"
COMMANDS_FILE = "commands.jsonl"
LOCK_FILE = "writer.lock"
DROPPED_DIR = "dropped"

#: what a run directory holds of its own: files and folders a run writes
RECORD_NAMES = frozenset({CONFIG_FILE, SCALARS_FILE, EVENTS_FILE, COMMANDS_FILE, LOCK_FILE, TB_DIR, CHECKPOINT_DIR,
                          SAMPLES_DIR, VARIABLES_DIR, MODELS_DIR, DROPPED_DIR})

PREFIX = "ckpt"
_DATA = re.compile(r"\.data-(\d+)-of-(\d+)$")


def is_run_dir(path: str | Path) -> bool:
    """A folder holding a run's record: its events and its scalars or variables."""
    p = Path(path)
    return (p / EVENTS_FILE).is_file() and ((p / SCALARS_FILE).is_file() or (p / VARIABLES_DIR).is_dir())


def checkpoint_steps(run_dir: str | Path) -> list[int]:
    """Steps of the complete checkpoints in a run directory, ascending (no TensorFlow needed): read from the
    files themselves, not TensorFlow's `checkpoint` state file, which a kill can leave behind the files. A
    checkpoint is complete when its `.index` (written last) and all its data shards are there."""
    d = Path(run_dir) / CHECKPOINT_DIR
    out = []
    for index in d.glob(f"{PREFIX}-*.index"):
        step = index.name[len(PREFIX) + 1:-len(".index")]
        if not step.isdigit():
            continue
        shards = [m for m in (_DATA.search(p.name) for p in d.glob(f"{PREFIX}-{step}.data-*")) if m]
        if shards and len(shards) == int(shards[0].group(2)):
            out.append(int(step))
    return sorted(out)


def checkpoint_prefix(run_dir: str | Path, step: int) -> Path:
    """The path TensorFlow's saver takes for the checkpoint at `step` (its files add `.index`, `.data-*`)."""
    return Path(run_dir) / CHECKPOINT_DIR / f"{PREFIX}-{step}"


def remove_partial(run_dir: str | Path) -> None:
    """Remove what an interrupted save leaves: `ckpt-N_temp/` and the state file's temporary copies."""
    d = Path(run_dir) / CHECKPOINT_DIR
    for p in list(d.glob("*_temp*")) + list(d.glob("checkpoint.tmp*")):
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)

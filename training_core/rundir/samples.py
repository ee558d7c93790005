"""Samples in the run directory: `samples/step-000001234.npz`, one compressed file per drawing.

Why on disk: a review of a finished run (and a comparison of several) has to show what the model
produced at any recorded step, not only what a window happened to see. `SampleRecord` writes every
sample the trainer draws (every 2 s while a window shows them, every `sample_every` seconds headless,
and at the end); `list_samples` and `load_samples` read them back without TensorFlow.

A file is written under a temporary name and renamed, so a reader never sees one half-written; a
file damaged anyway (a copy cut short, a full disk) reads as None, never as an exception.
"""
from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from training_core.rundir.layout import SAMPLES_DIR

_NAME = re.compile(r"step-(\d{9,})\.npz")


def sample_file(run_dir: str | Path, step: int) -> Path:
    return Path(run_dir) / SAMPLES_DIR / f"step-{int(step):09d}.npz"


def samples_bytes(samples: dict[str, Any]) -> bytes:
    """`samples` as compressed .npz bytes: numeric arrays and numbers as they are, `kind` as a string;
    anything numpy cannot store without pickling is left out."""
    arrays: dict[str, np.ndarray] = {}
    for key, value in samples.items():
        try:
            a = np.asarray(value)
        except (TypeError, ValueError):
            continue
        if a.dtype.kind in "biufU":
            arrays[str(key)] = a
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def load_samples(path: str | Path) -> dict[str, Any] | None:
    """One samples file as the dict `sample()` returned (0-d arrays back to numbers, `kind` a string), or
    None if it is damaged or not a samples file."""
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
    except Exception:  # noqa: BLE001 - any damage: a flipped flag bit reads as "encrypted" (RuntimeError),
        return None     # a cut header as EOFError, a bad size as ValueError or MemoryError (hypothesis found them)
    for k, v in list(out.items()):
        if v.ndim == 0:
            out[k] = v.item()
    if not isinstance(out.get("kind"), str) or not isinstance(out.get("step"), int):
        return None
    return out


def list_samples(run_dir: str | Path) -> list[tuple[int, Path]]:
    """(step, file) of every samples file of a run, in step order (temporary files left out)."""
    d = Path(run_dir) / SAMPLES_DIR
    try:
        names = os.listdir(d)
    except OSError:
        return []
    out = []
    for name in names:
        m = _NAME.fullmatch(name)
        if m:
            out.append((int(m.group(1)), d / name))
    return sorted(out)



def write_samples(run_dir: str | Path, samples: dict[str, Any]) -> Path:
    """Write one drawing as `samples/step-N.npz`, atomically (under a temporary name, then renamed)."""
    path = sample_file(run_dir, int(samples.get("step", 0)))
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(samples_bytes(samples))
    os.replace(tmp, path)
    return path

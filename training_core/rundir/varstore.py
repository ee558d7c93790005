"""The per-variable record: fixed-size binary rows, one file per phase, under `variables/`.

Why not the long CSV: a model with hundreds of variables wrote ~1.6 GB of `step,wall_time,tag,value`
text per 10^6 steps (three tags per variable every `var_every` steps). A row here is the step, the
wall time, the three norms of every variable of the phase as float32 (the precision the compiled step
computes them in) and the frozen mask as bits: about 12 bytes per variable instead of ~150.

Fixed-size rows make the file easy to read while it grows and after a kill: the header is one
magic line and one JSON line; after it, every complete row is a record and a torn last row is simply
not there yet. A reader that remembers its offset reads only the new bytes (attach, review of a
growing run), and a resumed run truncates the rows after its checkpoint by binary search (the reader
notices, by what precedes its offset, and reads the file again: rundir/readmark.py).

A variable several phases train (an autoencoder's encoder, trained by a reconstruction phase and by a
regularisation phase) is in each of their files, with each phase's rows. Readers name its series
`path@phase` (`encoder/dense/kernel@rec`, `encoder/dense/kernel@reg`), so that no phase's rows hide
another's; a variable one phase trains keeps its path as its name (`var_keys`).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Sequence

import numpy as np

from training_core.rundir.layout import VARIABLES_DIR
from training_core.rundir.readmark import ReadMark

MAGIC = b"FREEZEFRAME-VARIABLES 1\n"
KINDS = ("update_norm", "update_ratio", "grad_norm")
#: between a shared variable's path and the phase in its series' name: `encoder/dense/kernel@rec`
PHASE_MARK = "@"


def var_keys(phases: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, ...]]:
    """The name of each variable's series, for each of `phases` ((phase, paths), in phase order): its path
    when one phase trains it, `path@phase` when several do (each phase's rows are a series of their own).
    The tags of `read_scalars` are `<kind>/<name>`; the window and the figures name curves so too."""
    trained_by: dict[str, int] = {}
    for _, paths in phases:
        for p in set(paths):
            trained_by[p] = trained_by.get(p, 0) + 1
    return [tuple(f"{p}{PHASE_MARK}{phase}" if trained_by[p] > 1 else p for p in paths) for phase, paths in phases]


def row_dtype(n: int) -> np.dtype:
    """One record: step, wall time, the three norms of `n` variables, and their frozen bits."""
    return np.dtype([("step", "<i8"), ("wall", "<f8"), ("update_norm", "<f4", (n,)), ("update_ratio", "<f4", (n,)),
                     ("grad_norm", "<f4", (n,)), ("frozen", "u1", ((n + 7) // 8,))])


def file_name(index: int, phase: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in phase)[:40]
    return f"{index:02d}-{safe}.bin"


@dataclass
class VarRows:
    """Records of one phase: arrays with one row per recorded step."""

    phase: str
    paths: tuple[str, ...]
    steps: np.ndarray  # int64 (r,)
    wall: np.ndarray  # float64 (r,)
    update_norm: np.ndarray  # float32 (r, n)
    update_ratio: np.ndarray
    grad_norm: np.ndarray
    frozen: np.ndarray  # bool (r, n)

    def __len__(self) -> int:
        return len(self.steps)

    @classmethod
    def from_records(cls, phase: str, paths: tuple[str, ...], rec: np.ndarray) -> "VarRows":
        n = len(paths)
        frozen = np.unpackbits(rec["frozen"], axis=1, count=n, bitorder="little").astype(bool) if len(rec) \
            else np.zeros((0, n), dtype=bool)
        shape = (len(rec), n)
        return cls(phase, paths, rec["step"].astype(np.int64), rec["wall"].astype(np.float64),
                   rec["update_norm"].reshape(shape), rec["update_ratio"].reshape(shape),
                   rec["grad_norm"].reshape(shape), frozen)


class VarFileWriter:
    """Appends rows for one phase; the header is written (and flushed) at once."""

    def __init__(self, path: Path, phase: str, paths: Sequence[str]) -> None:
        self.path, self.phase, self.paths = path, phase, tuple(paths)
        self.dtype = row_dtype(len(self.paths))
        exists = path.exists() and path.stat().st_size > 0
        self._f = open(path, "ab")
        if not exists:
            header = {"phase": phase, "paths": list(self.paths), "kinds": list(KINDS), "row_bytes": self.dtype.itemsize}
            self._f.write(MAGIC + json.dumps(header).encode("utf-8") + b"\n")
            self._f.flush()

    def append(self, steps: np.ndarray, wall: np.ndarray, update_norm: np.ndarray, update_ratio: np.ndarray,
               grad_norm: np.ndarray, frozen: np.ndarray) -> None:
        rec = np.zeros(len(steps), dtype=self.dtype)
        rec["step"], rec["wall"] = steps, wall
        rec["update_norm"], rec["update_ratio"], rec["grad_norm"] = update_norm, update_ratio, grad_norm
        rec["frozen"] = np.packbits(np.asarray(frozen, dtype=bool), axis=1, bitorder="little")
        self._f.write(rec.tobytes())

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        self._f.close()


def _header_bytes(f: BinaryIO) -> bytes:
    """The magic line and the JSON line after it, however long (a 1 MiB cap read 20,000 variables' header
    as damaged, and a resume would have set the file aside)."""
    return f.read(len(MAGIC)) + f.readline()


def _parse_header(buf: bytes) -> tuple[dict, int] | None:
    """(header, offset of the first row), or None while the header is incomplete or not a header."""
    if not buf.startswith(MAGIC):
        return None
    end = buf.find(b"\n", len(MAGIC))
    if end < 0:
        return None
    try:
        header = json.loads(buf[len(MAGIC):end].decode("utf-8"))
        paths = tuple(str(p) for p in header["paths"])
        phase = str(header["phase"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    if row_dtype(len(paths)).itemsize != header.get("row_bytes"):
        return None
    return {"phase": phase, "paths": paths}, end + 1


class VarFileReader:
    """Reads one phase's file incrementally: `read_new()` returns the rows completed since the last call.

    `reset` turns True for a call that found the rows it had read gone (a resume or a rollback cut the file
    back, and it may have grown again since: rundir/readmark.py); the rows returned are then the whole file's."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.phase: str | None = None
        self.paths: tuple[str, ...] = ()
        self._dtype: np.dtype | None = None
        self._mark = ReadMark()
        self.reset = False

    def read_new(self) -> VarRows | None:
        self.reset = False
        try:
            with open(self.path, "rb") as f:
                data = self._mark.read_rest(f)
                if data is None:
                    self._dtype, self._mark, self.reset = None, ReadMark(), True
                    data = self._mark.read_rest(f)
        except OSError:
            return None
        start = 0
        if self._dtype is None:
            got = _parse_header(data)  # it stops at the header's newline
            if got is None:
                return None
            header, start = got
            self.phase, self.paths = header["phase"], header["paths"]
            self._dtype = row_dtype(len(self.paths))
        size = self._dtype.itemsize
        k = (len(data) - start) // size
        rec = np.frombuffer(data, dtype=self._dtype, count=k, offset=start)
        self._mark.consumed(data, start + k * size)
        return VarRows.from_records(self.phase, self.paths, rec)


def unreadable_files(run_dir: str | Path) -> list[Path]:
    """The phase files whose header cannot be read (damaged, or cut before it was whole): `read_variables`
    leaves them out, and what reads a run for a user says so rather than showing one phase fewer."""
    out = []
    for path in sorted((Path(run_dir) / VARIABLES_DIR).glob("*.bin")):
        try:
            with open(path, "rb") as f:
                if _parse_header(_header_bytes(f)) is None:
                    out.append(path)
        except OSError:
            out.append(path)
    return out


def read_variables(run_dir: str | Path) -> list[VarRows]:
    """Every phase's complete rows, in phase order (file name order); see `unreadable_files`."""
    out = []
    for path in sorted((Path(run_dir) / VARIABLES_DIR).glob("*.bin")):
        rows = VarFileReader(path).read_new()
        if rows is not None:
            out.append(rows)
    return out


def truncate_after(run_dir: str | Path, step: int, keep_in: Path | None = None) -> int:
    """Drop the rows recorded after `step` (a resumed run continues from its checkpoint at `step`), and a
    torn last row. The rows dropped go to `keep_in/<file name>` (with the header: a readable file) if
    given. Returns the number of complete rows dropped."""
    dropped = 0
    for path in sorted((Path(run_dir) / VARIABLES_DIR).glob("*.bin")):
        with open(path, "rb") as f:
            got = _parse_header(_header_bytes(f))
        if got is None:  # cut inside its header (a kill as the run began) or damaged: no reader can use it, and
            # rows appended to it would be lost too. Set aside (kept), so that the run writes a readable one.
            if keep_in is not None:
                keep_in.mkdir(parents=True, exist_ok=True)
                os.replace(path, keep_in / path.name)
            else:
                path.unlink()
            continue
        header, start = got
        dtype = row_dtype(len(header["paths"]))
        size = dtype.itemsize
        total = (path.stat().st_size - start) // size
        rows = np.memmap(path, dtype=dtype, mode="r", offset=start, shape=(total,)) if total else None
        keep = int(np.searchsorted(rows["step"], step, side="right")) if rows is not None else 0
        del rows
        with open(path, "r+b") as f:
            if keep < total and keep_in is not None:
                f.seek(start + keep * size)
                tail = f.read((total - keep) * size)
                f.seek(0)
                keep_in.mkdir(parents=True, exist_ok=True)
                (keep_in / path.name).write_bytes(f.read(start) + tail)
            f.truncate(start + keep * size)
            f.flush()
            os.fsync(f.fileno())
        dropped += total - keep
    return dropped


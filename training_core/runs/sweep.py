"""A sweep directory: its grid (`sweep.toml`), its points (`points/NAME.toml`), their run directories
(`runs/NAME/`) and where each point stands (new, cut, partial, running, done, failed).

    SWEEP_DIR/sweep.toml        the sweep as asked: [base] (what every point shares) and [grid] (the axes)
              points/NAME.toml  one grid point: index, name, its [values], and the [config] its run takes
              runs/NAME/        that point's run directory (an ordinary run: --resume, --export, the window)
              logs/NAME.log     its terminal output, when the sweep ran it in a process of its own

Why a directory of ordinary runs: each point is one ordinary command (`--sweep SWEEP_DIR --point K`), so
any scheduler can run the points (one after another, one per GPU, a Slurm job array) and the sweep
directory collects them, with nothing shared to write but each point's own files. Qt-free and
TensorFlow-free: the launcher (cli/sweep.py), the table (runs/sweep_table.py) and the window read it here.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from training_core.base import events as E
from training_core.base.config import RunConfig, load_toml, refuse_no_steps, file_not_dir, wrong_file
from training_core.base.errors import UserError
from training_core.rundir.layout import checkpoint_steps
from training_core.rundir.lock import refusal
from training_core.rundir.reading import read_events
from training_core.runs.sweep_spec import Point, SweepSpec, spec_from_dict

SWEEP_FILE = "sweep.toml"
POINTS_DIR = "points"
RUNS_DIR = "runs"
LOGS_DIR = "logs"
#: where a point stands: not begun; begun but cut before its first checkpoint (begun again); cut mid-way or
#: stopped (resumed from its checkpoint); written by a live process now; finished; failed (error or halted)
STATES = ("new", "cut", "partial", "running", "done", "failed")


def is_sweep_dir(path: str | Path) -> bool:
    return (Path(path) / SWEEP_FILE).is_file()


@dataclass(frozen=True)
class PointState:
    state: str  # one of STATES
    detail: str = ""  # partial: "from step N"; running: who writes it; failed: why


class Sweep:
    """An open sweep directory (`Sweep.open`), or one just written (`write_sweep`)."""

    def __init__(self, directory: Path, spec: SweepSpec, points: list[Point], configs: list[dict[str, Any]]) -> None:
        self.dir, self.spec, self.points = directory, spec, points
        self._configs = configs

    @classmethod
    def open(cls, path: str | Path) -> "Sweep":
        d = Path(path)
        if d.is_file():
            raise UserError(file_not_dir(d, "--open"))
        if not d.is_dir():
            raise UserError(f"sweep directory {d} does not exist; pass the directory a sweep wrote")
        if not is_sweep_dir(d):
            raise UserError(f"{d} has no {SWEEP_FILE}, so it is not a sweep directory; pass one (or start a sweep "
                            f"with --sweep FILE.toml)")
        spec = spec_from_dict(_read_toml(d / SWEEP_FILE), str(d / SWEEP_FILE))
        points, configs = [], []
        for point in spec.points():
            path_ = d / POINTS_DIR / f"{point.name}.toml"
            if not path_.is_file():
                raise UserError(f"{path_} is missing ({d} is incomplete); start the sweep again in a new directory")
            raw = _read_toml(path_)
            if raw.get("index") != point.index or raw.get("name") != point.name or "config" not in raw:
                raise UserError(f"{path_} does not hold point {point.index} of {d / SWEEP_FILE}; it was edited: "
                                f"restore it, or start the sweep again in a new directory")
            points.append(point)
            configs.append(raw["config"])
        return cls(d, spec, points, configs)

    # -- one point ---------------------------------------------------------------------------------------
    def point(self, index: int) -> Point:
        if not 0 <= index < len(self.points):
            raise UserError(f"--point {index}: {self.dir} has points 0 to {len(self.points) - 1}; pick one of them")
        return self.points[index]

    def run_dir(self, point: Point) -> Path:
        return self.dir / RUNS_DIR / point.name

    def point_file(self, point: Point) -> Path:
        return self.dir / POINTS_DIR / f"{point.name}.toml"

    def log_file(self, point: Point) -> Path:
        return self.dir / LOGS_DIR / f"{point.name}.log"

    def config(self, point: Point) -> RunConfig:
        """The configuration the point's run takes, as written when the sweep began, in its run directory."""
        cfg = RunConfig.from_dict(self._configs[point.index])
        cfg.run_dir = str(self.run_dir(point))
        return cfg

    def state(self, point: Point) -> PointState:
        """Where the point stands, read from its run directory alone."""
        d = self.run_dir(point)
        if not d.is_dir() or not any(d.iterdir()):
            return PointState("new")
        held = refusal(d)
        if held:
            return PointState("running", held)
        last = next((e for e in reversed(read_events(d)) if isinstance(e, (E.Start, E.Resumed, E.Stop))), None)
        if isinstance(last, E.Stop) and last.reason == "done":
            return PointState("done")
        if isinstance(last, E.Stop) and last.reason in ("error", "halted"):
            errors = [e.message for e in read_events(d) if isinstance(e, E.Error)]
            why = errors[-1] if last.reason == "error" and errors else f"it {last.reason} at step {last.step}"
            return PointState("failed", why)
        steps = checkpoint_steps(d)
        if not steps:
            return PointState("cut")
        return PointState("partial", f"from step {steps[-1]}")

    def states(self) -> list[PointState]:
        return [self.state(p) for p in self.points]


def write_sweep(spec: SweepSpec, directory: str | Path) -> Sweep:
    """Write a new sweep directory: `sweep.toml` and a file per point, all at once (made aside, then moved into
    place), so a sweep directory is never half-written. Refused if `directory` holds anything."""
    d = Path(directory)
    if d.exists() and (not d.is_dir() or any(d.iterdir())):
        raise UserError(f"{d} already exists and is not empty; continue that sweep with --resume {d}, or pass "
                        f"another --sweep-dir")
    points = spec.points()
    configs = [spec.config(p).to_dict() for p in points]
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{d.name}.", dir=d.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)  # (mkdtemp makes it private: the sweep directory is as any other)
        (tmp / POINTS_DIR).mkdir()
        (tmp / SWEEP_FILE).write_bytes(_SWEEP_HEADER + tomli_w.dumps(spec.to_dict()).encode("utf-8"))
        for p, cfg in zip(points, configs):
            record = {"index": p.index, "name": p.name, "values": dict(p.values), "config": cfg}
            (tmp / POINTS_DIR / f"{p.name}.toml").write_bytes(tomli_w.dumps(record).encode("utf-8"))
        if d.exists():
            d.rmdir()  # empty (checked above): the rename takes its place
        os.replace(tmp, d)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise UserError(f"cannot write the sweep directory {d} ({e.strerror}); choose another --sweep-dir") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Sweep(d, spec, points, configs)


_SWEEP_HEADER = (b"# A Freezeframe sweep (docs: Sweeps and ablations). Every point is a run in runs/, its grid point\n"
                 b"# and configuration in points/. Continue it with: main.py --headless --resume THIS_DIRECTORY\n")


def check_sweep_output(path: str | Path, what: str = "the table") -> None:
    """Refuse writing over a sweep's own files (sweep.toml, points/, runs/, logs/), as rundir/outputs.py refuses
    a run's record: `--table SWEEP_DIR/sweep.toml` would leave a sweep that can no longer be read or resumed."""
    p = Path(path).expanduser().resolve()
    for parent in p.parents:
        if is_sweep_dir(parent):
            if p.relative_to(parent).parts[0] in (SWEEP_FILE, POINTS_DIR, RUNS_DIR, LOGS_DIR):
                raise UserError(f"{path} is part of the sweep in {parent}; writing {what} there would damage it: "
                                f"choose another name, e.g. {parent / 'table.tex'}")
            return


def _read_toml(path: Path) -> dict[str, Any]:
    return load_toml(path, str(path), missing="pass an existing sweep file", not_text="pass a TOML sweep file")


def read_spec_file(path: str | Path) -> SweepSpec:
    """A sweep file (`--sweep FILE.toml`), checked; a directory is named as such."""
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{p} is a directory but holds no {SWEEP_FILE}; pass a sweep file (.toml) or a sweep "
                        f"directory")
    wrong = wrong_file(p, "--sweep") if p.is_file() else None  # a config.toml, an experiment file
    if wrong:
        raise UserError(wrong)
    raw = _read_toml(p)
    base = raw.get("base")
    if isinstance(base, dict) and isinstance(base.get("experiment_file"), str):
        # relative to the sweep file, not to wherever the sweep is started from
        base["experiment_file"] = str((p.parent / base["experiment_file"]).resolve())
    spec = spec_from_dict(raw, str(p))
    refuse_no_steps(spec.base.get("steps"), f"{p}: base.steps", "set it to the steps every point trains, a whole "
                    "number >= 1 (e.g. steps = 3000)")
    return spec

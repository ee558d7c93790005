"""Run-directory size per 10^6 steps with default settings, extrapolated from a real headless run of
`steps` steps (checkpoints are a fixed cost: the last 3 are kept, plus the final one)."""
from __future__ import annotations

import tempfile
from pathlib import Path


def _size(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def measure_disk(steps: int = 20000) -> dict:
    from training_core import Observer, RunConfig, Trainer
    run_dir = Path(tempfile.mkdtemp(prefix="ff-bench-disk-")) / "run"
    Trainer(RunConfig(example="ring", steps=steps, run_dir=str(run_dir)), Observer()).run()
    growing = _size(run_dir) - _size(run_dir / "checkpoints")
    per_million = growing * (1_000_000 / steps) + _size(run_dir / "checkpoints")  # at most 3 kept
    return {"steps": steps, "scalars_csv_MB": (run_dir / "scalars.csv").stat().st_size / 1e6,
            "tb_MB": _size(run_dir / "tb") / 1e6, "checkpoints_MB": _size(run_dir / "checkpoints") / 1e6,
            "MB_per_1e6_steps": per_million / 1e6}

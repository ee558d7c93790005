"""Run-directory size per 10^6 steps with default settings, extrapolated from a real headless run of
`steps` steps (checkpoints are a fixed cost: the last 3 are kept, plus the final one; so are the final
weights in Keras' format, `models/`)."""
from __future__ import annotations

import tempfile
from pathlib import Path


def _size(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def measure_disk(steps: int = 20000) -> dict:
    from training_core import Observer, RunConfig, Trainer
    run_dir = Path(tempfile.mkdtemp(prefix="ff-bench-disk-")) / "run"
    Trainer(RunConfig(example="ring", steps=steps, run_dir=str(run_dir)), Observer()).run()
    fixed = _size(run_dir / "checkpoints") + _size(run_dir / "models")  # at most 3 kept; one file per model
    per_million = (_size(run_dir) - fixed) * (1_000_000 / steps) + fixed
    return {"steps": steps, "scalars_csv_MB": (run_dir / "scalars.csv").stat().st_size / 1e6,
            "tb_MB": _size(run_dir / "tb") / 1e6, "checkpoints_MB": _size(run_dir / "checkpoints") / 1e6,
            "MB_per_1e6_steps": per_million / 1e6}

"""Run-directory size per 10^6 steps with default settings, extrapolated from a real headless run.

Two workloads: the ring (`measure_disk`, in this process) and a wide model (`measure_wide_disk`:
bench/wide_gan.py, 500 variables at 125 layers per model, in a fresh process with the CLI's settings).

How each part is extrapolated:
  * per step (`scalars.csv`, `variables/`, `tb/`): size x 10^6 / steps;
  * `samples/` grows with wall time, not steps (one drawing every `sample_every` = 10 s headless): the mean
    file size x the drawings 10^6 steps take at the speed measured in this run (a faster machine draws
    fewer per 10^6 steps);
  * checkpoints are a fixed cost: the last 3 are kept (the size of one x 3); so are the final weights
    in Keras' format (`models/`), `config.toml` and `events.jsonl` (mostly the `start` event, which names
    every variable; a default run adds a `checkpoint` line every 5,000 steps, ~20 kB per 10^6 steps).

`python -m bench.disk wide LAYERS STEPS` prints the wide measurement as one JSON line.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.child import run_child

ROOT = Path(__file__).resolve().parent.parent
KEPT_CHECKPOINTS = 3
MB = 1e6


def _size(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.exists() else 0


def _run(config_kwargs: dict, steps: int) -> tuple[Path, float, int]:
    """A real headless run with default settings; returns its directory, the loop's seconds and variables."""
    from training_core import Observer, RunConfig, Trainer
    clock: list[float] = []

    class Clock(Observer):
        def on_run_begin(self, trainer):
            clock.append(time.perf_counter())

        def on_run_end(self, trainer, reason):
            clock.append(time.perf_counter())

    run_dir = Path(tempfile.mkdtemp(prefix="ff-bench-disk-")) / "run"
    trainer = Trainer(RunConfig(steps=steps, run_dir=str(run_dir), **config_kwargs), Clock())
    trainer.run()
    return run_dir, clock[1] - clock[0], len(trainer.prepared.variables)


def breakdown(run_dir: Path, steps: int, seconds: float, sample_every: float = 10.0) -> dict:
    """MB per 10^6 steps of each part of `run_dir` (see the module docstring for how)."""
    scale = 1_000_000 / steps
    ckpts = sorted({f.name.split(".")[0] for f in (run_dir / "checkpoints").glob("ckpt-*.index")})
    one_ckpt = _size(run_dir / "checkpoints") / max(1, len(ckpts))
    samples = list((run_dir / "samples").glob("*.npz"))
    steps_per_s = steps / seconds
    parts = {
        "variables": _size(run_dir / "variables") * scale,
        "scalars_csv": (run_dir / "scalars.csv").stat().st_size * scale,
        "tb": _size(run_dir / "tb") * scale,
        "events": (run_dir / "events.jsonl").stat().st_size + 100 * 1_000_000 // 5000,
        "samples": (sum(f.stat().st_size for f in samples) / max(1, len(samples)))
                   * 1_000_000 / steps_per_s / sample_every,
        "checkpoints": one_ckpt * KEPT_CHECKPOINTS,
        "models": _size(run_dir / "models") + (run_dir / "config.toml").stat().st_size,
    }
    out = {f"{k}_MB": v / MB for k, v in parts.items()}
    out.update(steps=steps, steps_per_s=steps_per_s, samples_drawn=len(samples),
               MB_per_1e6_steps=sum(parts.values()) / MB)
    return out


def measure_disk(steps: int = 20000) -> dict:
    """The ring (example), in this process."""
    run_dir, seconds, n = _run({"example": "ring"}, steps)
    return {**breakdown(run_dir, steps, seconds), "variables": n}


def measure_wide_disk(layers: int = 125, steps: int = 3000) -> dict:
    """bench/wide_gan.py with `layers` layers per model (125: 500 variables), in a fresh process."""
    return run_child("bench.disk", ["wide", str(layers), str(steps)],
                     "wide disk child", timeout=3000, env={"FF_WIDE_LAYERS": str(layers)})


def _child(layers: int, steps: int) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ["FF_WIDE_LAYERS"] = str(layers)
    run_dir, seconds, n = _run({"experiment_file": str(ROOT / "bench" / "wide_gan.py"), "example": None}, steps)
    print(json.dumps({**breakdown(run_dir, steps, seconds), "variables": n, "layers": layers}), flush=True)
    os._exit(0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["wide"]:
        _child(int(sys.argv[2]), int(sys.argv[3]))

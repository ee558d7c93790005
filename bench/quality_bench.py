"""What FID and KID cost (training_core/quality), and a DCGAN learning the shapes with them as its metrics.

    python -m bench.quality_bench            # the costs alone, then a 240 s DCGAN run
    python -m bench.quality_bench --alone    # the costs alone only
    python -m bench.quality_bench --seconds 600 --grid /tmp/fake.png

The costs alone, in a child process of the CLI's TensorFlow settings, the median of `REPEATS` (min–max beside):
the feature space trained on the 6,400 shapes (and loaded from its cache), the reference of the real shapes, then
what each measure does on 2,048 generated samples (a DCGAN's untrained generator: the cost does not depend on what
the samples look like): the generator's samples, their features, the Fréchet distance against the reference, KID
over 100 subsets of 1,000, and `scores()`'s whole. Then the two distances alone on random features of 2,048 rows
and d = 64 ... 2,048 (a user's own feature space may be wide: FID costs O(d³)).

The run: bench/shapes_dcgan.py headless, every default observer, for `--seconds`; each measure's cost beside
training (the health observer's pacing wrapped, as bench/metrics_bench.py does), the training's steps/s while a
measure is in flight and while none is, FID and KID at each measure, and the last samples as a PNG grid to look at.
Timings are wall-clock on a shared machine: the load average is printed with them.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.child import run_child

ROOT = Path(__file__).resolve().parent.parent
REPEATS = 5
N = 2048


def _timed(fn, repeats: int = REPEATS) -> tuple[float, float, float, object]:
    """(median, min, max) seconds of `repeats` calls, and the last result."""
    import numpy as np
    out, got = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        got = fn()
        out.append(time.perf_counter() - t)
    return float(np.median(out)), min(out), max(out), got


def costs_alone() -> dict:
    import numpy as np

    import bench.shapes_dcgan as exp  # trains (or loads) the feature space and makes the reference at import
    from training_core import quality
    rows: dict = {"load": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as cache:
        t = time.perf_counter()
        space = quality.trained_features(exp.IMAGES, exp.LABELS, cache=Path(cache) / "f.npz")
        rows["train_features"] = time.perf_counter() - t
        rows["load_features"] = _timed(lambda: quality.trained_features(exp.IMAGES, exp.LABELS,
                                                                        cache=Path(cache) / "f.npz"), 3)[:3]
    rows["accuracy"] = float((space.net(exp.IMAGES[::4]).numpy().argmax(1) == exp.LABELS[::4]).mean())
    rows["reference"] = _timed(lambda: space.reference(exp.IMAGES), 3)[:3]
    ref = space.reference(exp.IMAGES)
    g = exp.generator()
    z = np.random.default_rng(0).normal(size=(N, exp.noise_dim)).astype(np.float32)
    *rows["generate"], fake = _timed(lambda: g(z, training=False).numpy())
    *rows["features"], feats = _timed(lambda: space.features(fake))
    rows["fid"] = _timed(lambda: quality.frechet_distance(ref.gaussian, feats))[:3]
    rows["kid"] = _timed(lambda: quality.kernel_distance(ref.features, feats, real_sums=ref.kid_sums))[:3]
    rows["kid_without_kept_sums"] = _timed(lambda: quality.kernel_distance(ref.features, feats), 3)[:3]
    rows["scores"] = _timed(lambda: quality.scores(space, ref, fake))[:3]
    rng = np.random.default_rng(1)
    for d in (64, 256, 1024, 2048):
        a, b = rng.normal(size=(N, d)), rng.normal(size=(N, d)) * 1.1
        rows[f"fid_d{d}"] = _timed(lambda: quality.frechet_distance(a, b), 3)[:3]
        rows[f"kid_d{d}"] = _timed(lambda: quality.kernel_distance(a, b), 3)[:3]
    rows["load_after"] = os.getloadavg()[0]
    return rows


def run(seconds: float, grid: Path | None) -> dict:
    import numpy as np

    from bench.metrics_bench import _Costs
    from training_core import Observer, RunConfig, Stop, Trainer, read_scalars
    from training_core.rundir.samples import list_samples, load_samples

    class Clock(Observer):
        def __init__(self) -> None:
            self.trainer, self.t0, self.last = None, 0.0, 0.0
            self.steps, self.time = {True: 0, False: 0}, {True: 0.0, False: 0.0}

        def on_prepared(self, run) -> None:
            self.trainer = run._t

        def on_step_end(self, run) -> None:
            now = time.perf_counter()
            if run.step == 1:
                self.t0 = self.last = now
                return
            flying = self.trainer.measures.step is not None
            self.steps[flying] += 1
            self.time[flying] += now - self.last
            self.last = now
            if now - self.t0 >= seconds:
                run.send(Stop())

    costs, clock = _Costs(), Clock()
    d = Path(tempfile.mkdtemp(prefix="ff-bench-quality-")) / "run"
    load = os.getloadavg()[0]
    Trainer(RunConfig(experiment_file=str(ROOT / "bench" / "shapes_dcgan.py"), example=None, seed=0,
                      run_dir=str(d)), clock).run()
    s = read_scalars(d, {"metric/fid", "metric/kid", "metric/kid_std"})
    out = {"load": load, "load_after": os.getloadavg()[0], "run_dir": str(d),
           "steps": int(sum(clock.steps.values())), "seconds": sum(clock.time.values()),
           "rate_measuring": clock.steps[True] / clock.time[True] if clock.time[True] else 0.0,
           "rate_not_measuring": clock.steps[False] / clock.time[False] if clock.time[False] else 0.0,
           "costs": [(step, round(c, 3)) for step, _, c in costs.rows],
           "fid": list(zip(s["metric/fid"].steps.tolist(), np.round(s["metric/fid"].values, 3).tolist())),
           "kid": list(zip(s["metric/kid"].steps.tolist(), np.round(s["metric/kid"].values, 4).tolist()))}
    if grid is not None:
        last = load_samples(list_samples(d)[-1][1])
        images = ((np.clip(last["fake"][:64, ..., 0], -1, 1) + 1) * 127.5).astype(np.uint8)
        rows = [np.concatenate([np.pad(x, 1, constant_values=80) for x in images[r * 16:(r + 1) * 16]], 1)
                for r in range(4)]
        sys.path.insert(0, str(ROOT / "resources" / "data"))
        from make_shapes import png_bytes
        grid.write_bytes(png_bytes(np.kron(np.concatenate(rows, 0), np.ones((3, 3), np.uint8))))
        out["grid"] = str(grid)
    return out


def _child(argv: list[str]) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(ROOT))
    from training_core.engine.tf_quiet import import_tensorflow
    import_tensorflow()  # the CLI's settings
    what, seconds, grid = argv[0], float(argv[1]), (Path(argv[2]) if argv[2] else None)
    out = costs_alone() if what == "alone" else run(seconds, grid)
    print(json.dumps(out), flush=True)
    os._exit(0)


def _in_child(what: str, seconds: float = 0.0, grid: Path | None = None) -> dict:
    return run_child("bench.quality_bench", ["--child", what, str(seconds), str(grid or "")],
                     "quality bench child", timeout=3600)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        _child(argv[1:])
    ap = argparse.ArgumentParser(description="the cost of FID and KID, and a DCGAN on the shapes measured by them")
    ap.add_argument("--alone", action="store_true", help="the costs alone, no run")
    ap.add_argument("--seconds", type=float, default=240.0, help="the DCGAN run's length (default 240)")
    ap.add_argument("--grid", type=Path, help="write the run's last samples as a PNG grid here")
    args = ap.parse_args(argv)
    print(json.dumps({"alone": _in_child("alone")}), flush=True)
    if not args.alone:
        print(json.dumps({"run": _in_child("run", args.seconds, args.grid)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

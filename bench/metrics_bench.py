"""Metrics beside training: the training's steps/s with a slow `metrics(ctx)` against the same training without
metrics (bench/run.py's row "metric of 3 s (sleep) against none").

The ring, headless: `Trainer`s with the CLI's TensorFlow settings and every default observer (the full record,
checkpoints every 5,000 steps, samples every 10 s), in a child process of their own.

  none     the ring without metrics (`metrics = None`)
  sleep3   a `metrics(ctx)` that sleeps 3 s, then computes the ring's own: a measure that keeps no core busy,
           as one on another device (a GPU's FID) would
  cpu      for the record: a CPU-bound measure, FID and KID in numpy of 2,048 generated against 2,048 real
           points in a 32-d PCA space of 512 random features (KID over 10 subsets of 1,000), its numpy calls
           using every core

The row: `none` and `sleep3` each run in a trainer of its own on a thread, paused, and are stepped in turn, a
chunk of steps each (A B A B ...: bench/variants.py's `Driven`), so that a shared machine whose speed moves by
a third from minute to minute (this one's, during the first version of this benchmark, which ran whole runs in
turn: 604 then 376 steps/s for the same `none`) slows both alike. Steps/s is each one's steps over its chunks'
time, all of it (a median of chunks would leave out the few a measure falls in). The pacing is on the wall
clock, which runs for both, so `sleep3` measures twice as often for its steps as a run of its own would: the
cost measured is an upper bound.

For the record, `cpu` runs alone (its measure would run on into the other one's chunks), and the steps/s while
a measure is in flight is compared with the steps/s while none is, in the same run.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from bench.child import run_child

ROOT = Path(__file__).resolve().parent.parent

_SLEEP3 = '''

import time as _time
_ring_metrics = metrics


def metrics(ctx):
    _time.sleep(3.0)
    return _ring_metrics(ctx)
'''

_CPU = '''

_FEATURES = np.random.default_rng(5)
_W, _B = _FEATURES.normal(size=(2, 512)), _FEATURES.normal(size=512)


def _frechet(a, b):
    mu1, mu2 = a.mean(0), b.mean(0)
    c1, c2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    w, v = np.linalg.eigh(c1)
    s1 = (v * np.sqrt(np.clip(w, 0, None))) @ v.T
    root = np.sqrt(np.clip(np.linalg.eigvalsh(s1 @ c2 @ s1), 0, None)).sum()
    return float(((mu1 - mu2) ** 2).sum() + np.trace(c1) + np.trace(c2) - 2 * root)


def _kid(a, b, subsets=10, size=1000):
    rng, d, out = np.random.default_rng(1), a.shape[1], []
    for _ in range(subsets):
        x, y = a[rng.choice(len(a), size)], b[rng.choice(len(b), size)]
        kxx, kyy, kxy = ((x @ x.T / d + 1) ** 3, (y @ y.T / d + 1) ** 3, (x @ y.T / d + 1) ** 3)
        n = size * (size - 1)
        out.append((kxx.sum() - np.trace(kxx)) / n + (kyy.sum() - np.trace(kyy)) / n - 2 * kxy.mean())
    return float(np.mean(out))


def metrics(ctx):
    fake = np.asarray(ctx.models.generator(ctx.normal((ctx.n, noise_dim)), training=False), np.float64)
    real = np.tanh(np.asarray(ctx.batch, np.float64) @ _W + _B)
    fake = np.tanh(fake @ _W + _B)
    mean = real.mean(0)
    basis = np.linalg.svd(real - mean, full_matrices=False)[2][:32].T
    a, b = (real - mean) @ basis, (fake - mean) @ basis
    return {"fid": _frechet(a, b), "kid": _kid(a, b)}
'''

VARIANTS = {"none": "\n\nmetrics = None\n", "sleep3": _SLEEP3, "cpu": _CPU}


def _experiment(name: str, folder: Path) -> Path:
    from training_core.experiment.loading import example_path
    path = folder / f"ring_{name}.py"
    path.write_text(example_path("ring").read_text() + VARIANTS[name], encoding="utf-8")
    return path


class _Costs:
    """Each measure's (step, perf_counter when taken, seconds), by wrapping the health observer's pacing."""

    def __init__(self) -> None:
        from training_core.observers import health
        self.rows: list[tuple[int, float, float]] = []
        paced = health.HealthMetrics._paced
        rows = self.rows

        def noting(self, run, cost):
            rows.append((run.step, time.perf_counter(), cost))
            return paced(self, run, cost)

        health.HealthMetrics._paced = noting


def _Driven(name: str, folder: Path):
    """A Trainer of the variant, paused and stepped in turn (bench/variants.py FileDriven)."""
    from bench.variants import FileDriven
    return FileDriven(name, _experiment(name, folder))


def interleaved(chunk: int, rounds: int, folder: Path, costs: _Costs) -> dict:
    """`none` and `sleep3` stepped in turn, `chunk` steps each, `rounds` times: total steps / total time."""
    a, b = _Driven("none", folder), _Driven("sleep3", folder)
    spent = {"none": 0.0, "sleep3": 0.0}
    for _ in range(rounds):
        for v in (a, b):
            t = time.perf_counter()
            v.run(chunk)
            spent[v.name] += time.perf_counter() - t
    beside = [c for c in costs.rows if c[0] > 20]  # (not the step-0 measure, taken before the first chunk)
    for v in (a, b):
        v.close()
    rates = {k: chunk * rounds / s for k, s in spent.items()}
    return {"none": rates["none"], "sleep3": rates["sleep3"], "ratio": rates["sleep3"] / rates["none"],
            "measures": len(beside), "cost": max((c[2] for c in beside), default=0.0)}


def alone(name: str, seconds: float, folder: Path, costs: _Costs) -> dict:
    """One run of `seconds`: steps/s while a measure is in flight against while none is, and the measures."""
    from training_core import Observer, RunConfig, Stop, Trainer

    class Clock(Observer):
        def __init__(self) -> None:
            self.trainer = None
            self.t0 = self.last = 0.0
            self.steps = {True: 0, False: 0}
            self.time = {True: 0.0, False: 0.0}

        def on_prepared(self, run) -> None:
            self.trainer = run._t

        def on_step_end(self, run) -> None:
            now = time.perf_counter()
            if run.step == 1:
                self.t0 = self.last = now
                return
            flying = self.trainer.measures.step is not None  # a measure in flight (loop/measures.py)
            self.steps[flying] += 1
            self.time[flying] += now - self.last
            self.last = now
            if now - self.t0 >= seconds:
                run.send(Stop())

    clock = Clock()
    first = len(costs.rows)
    cfg = RunConfig(experiment_file=str(_experiment(name, folder)), run_dir=tempfile.mkdtemp(prefix="ff-bench-m-"),
                    seed=0)
    Trainer(cfg, clock).run()
    rows = costs.rows[first:]
    starts = [t - c for _, t, c in rows[:-1]]
    return {"rate": sum(clock.steps.values()) / sum(clock.time.values()),
            "rate_measuring": clock.steps[True] / clock.time[True] if clock.time[True] else 0.0,
            "rate_not_measuring": clock.steps[False] / clock.time[False] if clock.time[False] else 0.0,
            "share_measuring": clock.time[True] / sum(clock.time.values()),
            "measures": len(rows) - 1, "cost": max((c for _, _, c in rows[:-1]), default=0.0),
            "gap": max((b - a for a, b in zip(starts, starts[1:])), default=0.0)}


def measure(chunk: int, rounds: int, cpu_seconds: float) -> dict:
    """In a child process: the interleaved comparison and the CPU-bound run."""
    return run_child("bench.metrics_bench", [str(chunk), str(rounds), str(cpu_seconds)],
                     "metrics bench child", timeout=3000)


def _child(argv: list[str]) -> None:
    import os
    chunk, rounds, cpu_seconds = int(argv[0]), int(argv[1]), float(argv[2])
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, str(ROOT))
    from training_core.engine.tf_quiet import import_tensorflow
    import_tensorflow()  # the CLI's settings
    folder = Path(tempfile.mkdtemp(prefix="ff-bench-metrics-"))
    costs = _Costs()
    out = {"interleaved": interleaved(chunk, rounds, folder, costs)}
    print(json.dumps(out), file=sys.stderr, flush=True)
    costs.rows.clear()
    out["cpu"] = alone("cpu", cpu_seconds, folder, costs)
    print(json.dumps(out), flush=True)
    os._exit(0)


if __name__ == "__main__":
    _child(sys.argv[1:])

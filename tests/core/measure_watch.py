"""What the tests of measures beside training share (test_health.py, test_beside.py, test_measures.py): `Watch`,
an observer that notes the weights each measure saw and the training's own at every step boundary, and the checks
of the record a run with measures leaves (one timeline, in step order; each measure equal to the weights of the
step it is recorded at).

Why one module: three test files check these facts of one record, and each had its own copy (or imported another
test file's private helpers)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from training_core import Observer, Trainer, read_scalars
from training_core.loop.handle import TrainerHandle

METRICS_THREAD = "freezeframe-metrics"
#: how long a wait on the training may last before the test fails: a broken run, not a slow machine (a working
#: run is never waited for this long, and no assertion depends on it)
GUARD_S = 120


def all_rows(run_dir) -> list[tuple[int, str]]:
    """(step, tag) of every row of scalars.csv, in file order."""
    lines = (run_dir / "scalars.csv").read_text().splitlines()[1:]
    return [(int(line.split(",")[0]), line.split(",")[2]) for line in lines]


def weights(models, trainable: bool | None = None) -> float:
    """A number that changes at every step: the sum of every variable of `models` (only the trainable ones, or
    only the others), summed in one order."""
    return float(sum(float(np.sum(np.asarray(v.numpy(), np.float64))) for m in models.values() for v in m.variables
                     if trainable is None or v.trainable == trainable))


class Watch(Observer):
    """Wraps the experiment's `metrics(ctx)` before the run begins: the wrapped one also returns the sum of the
    weights of `ctx.models` (the shadows, beside training) and of their non-trainable variables (BatchNormalization
    statistics), and notes on which thread it ran and the training's step before and after it. At every step
    boundary it notes the same sums of the training's own models: what a measure recorded at step S must equal.
    Observers come after the run's own ones, so a measure started at a boundary and the sums noted at it see the
    same weights.

    `sleep`: the cost of a slow measure (from the `slow_from`-th call on; before the `slow_until`-th, if given),
    which the pacing and the hold bound see; nothing is synchronised by it. `until_step`: each measure begun before that step also waits until the
    training has stepped on, on a condition notified at every step boundary (a measure on the training thread
    would wait for ever; `GUARD_S` only keeps a broken run from hanging the suite, and a wait that ran out is
    noted in `timed_out`), so "training went on while it ran" is a fact, not a race against the scheduler."""

    def __init__(self, sleep: float = 0.0, slow_from: int = 0, until_step: int | None = None,
                 slow_until: int | None = None) -> None:
        self.sleep, self.slow_from, self.until_step, self.slow_until = sleep, slow_from, until_step, slow_until
        self.trainer: Trainer | None = None
        self.live: dict[int, tuple[float, float]] = {}
        self.calls: list[tuple[str, int, int]] = []  # (thread name, step before, step after)
        self.timed_out: list[int] = []  # steps before of measures whose wait for the training ran out
        self._stepped = threading.Condition()

    def on_prepared(self, run_) -> None:
        t = self.trainer = run_._t if isinstance(run_, TrainerHandle) else run_
        exp = t.prepared.experiment
        own = exp.metrics

        def metrics(ctx):
            before = t.state.step
            n = len(self.calls)
            if self.sleep and self.slow_from <= n and (self.slow_until is None or n < self.slow_until):
                time.sleep(self.sleep)  # (the measure's cost)
            if self.until_step is not None and before < self.until_step:
                with self._stepped:
                    if not self._stepped.wait_for(lambda: t.state.step != before, GUARD_S):
                        self.timed_out.append(before)
            out = dict(own(ctx)) if own is not None else {}
            out["weights"] = weights(ctx.models)
            out["stats"] = weights(ctx.models, trainable=False)
            self.calls.append((threading.current_thread().name, before, t.state.step))
            return out

        exp.metrics = metrics

    def _note(self, run_) -> None:
        models = self.trainer.prepared.experiment.models
        self.live[run_.step] = (weights(models), weights(models, trainable=False))
        with self._stepped:
            self._stepped.notify_all()

    def on_run_begin(self, run_) -> None:
        self._note(run_)

    def on_step_end(self, run_) -> None:
        self._note(run_)

    def beside(self) -> list[tuple[str, int, int]]:
        return [c for c in self.calls if c[0] == METRICS_THREAD]


def assert_one_ordered_record(run_dir, last: int) -> dict:
    """scalars.csv in step order; every step 1..last has one loss row; each metric tag has each step once."""
    rows = all_rows(run_dir)
    steps = [s for s, _ in rows]
    assert steps == sorted(steps), "scalars.csv is not in step order"
    assert sorted(s for s, t in rows if t.startswith("loss/")) == list(range(1, last + 1))
    sc = read_scalars(run_dir)
    for tag in [t for t in sc if t.startswith("metric/")]:
        assert len(np.unique(sc[tag].steps)) == len(sc[tag].steps) and np.all(np.diff(sc[tag].steps) > 0), tag
    return sc


def assert_measured_at_their_steps(sc: dict, watch: Watch) -> None:
    w, stats = sc["metric/weights"], sc["metric/stats"]
    np.testing.assert_array_equal(w.steps, stats.steps)
    for step, value, stat in zip(w.steps.tolist(), w.values.tolist(), stats.values.tolist()):
        want, want_stat = watch.live[step]
        assert value == pytest.approx(want, rel=1e-8, abs=1e-9), f"metric/weights at step {step}"  # csv: 9 digits
        assert stat == pytest.approx(want_stat, rel=1e-8, abs=1e-9), f"metric/stats at step {step}"

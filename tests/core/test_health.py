"""GAN health (`metrics(ctx)` recorded as `metric/<name>` rows) and samples written to the run directory.

Real training on the built-in examples and on tiny experiment files written per test; the readers of
`samples/` are property-tested on files cut at every byte. Measures beside training (engine/beside.py):
recorded at the step whose weights they measured, on a thread of their own, through a checkpoint, a kill and
resume, a rollback; a subclassed model measured on the training thread. Steps are counted, time never is."""
from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from training_core import Observer, Rollback, RunConfig, Trainer, example_path, read_events, read_scalars
from training_core.experiment.loading import load_module
from training_core.loop.handle import TrainerHandle
from training_core.observers import health
from training_core.rundir.layout import checkpoint_steps
from training_core.runs import read_run
from training_core.rundir.samples import list_samples, load_samples, sample_file, samples_bytes

from .helpers import REPO, config, main_cmd, run, start, tiny_gan, wait_for, write_file


def _all_rows(run_dir) -> list[tuple[int, str]]:
    lines = (run_dir / "scalars.csv").read_text().splitlines()[1:]
    return [(int(line.split(",")[0]), line.split(",")[2]) for line in lines]


def test_ring_records_modes_covered_and_high_quality_in_step_order(run_dir):
    run(RunConfig(example="ring", steps=120, seed=0, run_dir=str(run_dir), metrics_seconds=0.0, fetch_every=50,
                  checkpoint_every=0))
    sc = read_scalars(run_dir)
    modes, hq = sc["metric/modes_covered"], sc["metric/high_quality"]
    assert modes.steps[0] == 0 and modes.steps[-1] == 120  # before the first step and after the last
    assert len(modes.steps) > 100 and np.array_equal(modes.steps, hq.steps)  # metrics_seconds=0: every step
    assert np.all((modes.values >= 0) & (modes.values <= 8)) and np.all(modes.values == np.round(modes.values))
    assert np.all((hq.values >= 0) & (hq.values <= 1))
    steps = [s for s, _ in _all_rows(run_dir)]
    assert steps == sorted(steps), "scalars.csv is not in step order"
    losses = [s for s, t in _all_rows(run_dir) if t.startswith("loss/")]
    assert losses == list(range(1, 121))
    data = read_run(run_dir)  # what the window and the exporter read
    assert {"metric/modes_covered", "metric/high_quality"} <= set(data.scalar_tags)
    np.testing.assert_array_equal(data.scalar("metric/modes_covered")[2], modes.values)
    assert not [e for e in read_events(run_dir) if e.kind == "warning"]


def test_ring_metrics_count_modes_and_high_quality_points():
    """The ring's measures on points placed by hand: 3 modes with 30 points within 3 std, 1 mode with 10
    (fewer than the 20 a mode needs), and 40 points off the ring."""
    ring = load_module(example_path("ring"))
    c = ring.centres()
    rng = np.random.default_rng(0)
    pts = [c[k] + rng.normal(0, ring.STD / 2, (30, 2)) for k in (0, 3, 5)] + [c[6] + np.zeros((10, 2))]
    pts.append(rng.uniform(-0.5, 0.5, (40, 2)))  # the middle of the ring: far from every mode
    fake = np.concatenate(pts).astype(np.float32)

    class Ctx:
        n = len(fake)

        class models:  # noqa: N801 - as ctx.models.generator
            @staticmethod
            def generator(z, training=False):
                return fake

        @staticmethod
        def normal(shape):
            return np.zeros(shape, np.float32)

    got = ring.metrics(Ctx)
    assert got["modes_covered"] == 3
    assert got["high_quality"] == pytest.approx(100 / 140)


def test_factorization_relative_error_falls(run_dir):
    run(RunConfig(example="factorization", steps=300, seed=0, run_dir=str(run_dir), metrics_seconds=0.0,
                  checkpoint_every=0))
    err = read_scalars(run_dir)["metric/relative_error"].values
    assert err[0] > 0.9 and err[-1] < 0.5 * err[0]


def test_gan_shortcut_metrics_and_a_failing_metrics_is_turned_off(tmp_path):
    good = tiny_gan(tmp_path)
    src = good.read_text() + "\n\ndef metrics(ctx):\n    z = ctx.normal((ctx.n, noise_dim))\n" \
        "    return {'spread': float(np.std(np.asarray(ctx.models.generator(z)))), 'n': ctx.n}\n"
    good = write_file(tmp_path, "with_metrics.py", src)
    run(config(good, tmp_path / "good", steps=20, metrics_seconds=0.0))
    sc = read_scalars(tmp_path / "good")
    assert set(sc["metric/n"].values) == {2048.0} and np.all(sc["metric/spread"].values > 0)

    bad = write_file(tmp_path, "bad_metrics.py", good.read_text().replace("'n': ctx.n", "'n': ctx.nope"))
    run(config(bad, tmp_path / "bad", steps=20, metrics_seconds=0.0))
    warnings = [e for e in read_events(tmp_path / "bad") if e.kind == "warning"]
    assert len(warnings) == 1 and "metrics() failed and is turned off: AttributeError" in warnings[0].message
    assert warnings[0].detail and warnings[0].at_step == 0  # (on the training thread: metrics_seconds = 0)
    sc = read_scalars(tmp_path / "bad")
    assert not [t for t in sc if t.startswith("metric/")] and len(sc["loss/D"].steps) == 10  # training went on


def test_headless_run_writes_samples_at_the_end_and_they_read_back(run_dir):
    run(RunConfig(example="ring", steps=60, seed=0, run_dir=str(run_dir), sample_every=0.0, checkpoint_every=0))
    files = list_samples(run_dir)
    assert [s for s, _ in files] == [60]  # nobody watched, sample_every=0: the end only
    s = load_samples(files[0][1])
    assert s["kind"] == "points2d" and s["step"] == 60 and s["fake"].shape == (512, 2) and s["real"].shape == (512, 2)
    assert files[0][1].stat().st_size < 20_000  # compressed: a few kB


def test_watched_run_writes_every_sample_it_shows(run_dir):
    from tests.core.test_examples import Samples
    obs = Samples()
    run(RunConfig(example="factorization", steps=30, seed=0, run_dir=str(run_dir), sample_seconds=0.0,
                  checkpoint_every=0), obs)
    files = list_samples(run_dir)
    assert [s for s, _ in files] == sorted({s["step"] for s in obs.samples})
    last = load_samples(files[-1][1])
    np.testing.assert_array_equal(last["reconstruction"], obs.samples[-1]["reconstruction"])
    assert isinstance(last["error"], float) and last["error"] == obs.samples[-1]["error"]


SAMPLE = {"kind": "matrix", "step": 1234, "target": np.arange(12.0).reshape(3, 4),
          "reconstruction": np.ones((3, 4), np.float32), "error": 0.25, "note": object()}


def test_samples_file_round_trip_keeps_arrays_and_numbers(tmp_path):
    path = sample_file(tmp_path, 1234)
    path.parent.mkdir()
    path.write_bytes(samples_bytes(SAMPLE))
    (path.parent / "step-000000001.tmp").write_bytes(b"half")  # a write in progress: not listed
    got = load_samples(path)
    assert set(got) == {"kind", "step", "target", "reconstruction", "error"}  # the object is left out
    assert got["kind"] == "matrix" and got["step"] == 1234 and got["error"] == 0.25
    np.testing.assert_array_equal(got["target"], SAMPLE["target"])
    assert list_samples(tmp_path) == [(1234, path)]


_BYTES = samples_bytes(SAMPLE)


def test_a_samples_file_whose_flags_say_encrypted_reads_as_none(tmp_path):
    """One flipped bit (the "encrypted" flag of a zip entry, found by the test below in CI) made zipfile
    raise RuntimeError, which the reader let through."""
    damaged = bytearray(_BYTES)
    for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local and central headers: general flags
        i = damaged.find(sig)
        while i >= 0:
            damaged[i + at] |= 1
            i = damaged.find(sig, i + 1)
    path = tmp_path / "step-000000007.npz"
    path.write_bytes(bytes(damaged))
    assert load_samples(path) is None


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(min_value=0, max_value=len(_BYTES) - 1), flip=st.integers(min_value=0, max_value=255))
@example(cut=822, flip=1)  # the falsifying example of 2026-12-01 (an entry's "encrypted" flag)
def test_a_samples_file_cut_or_damaged_anywhere_reads_as_none_or_intact(tmp_path_factory, cut, flip):
    d = tmp_path_factory.mktemp("cut")
    path = d / "step-000000007.npz"
    path.write_bytes(_BYTES[:cut])
    assert load_samples(path) is None
    damaged = bytearray(_BYTES)
    damaged[cut] ^= flip
    path.write_bytes(bytes(damaged))
    got = load_samples(path)  # never raises
    assert got is None or set(got) <= set(SAMPLE)


# -- measures beside training ------------------------------------------------------------------------------------
METRICS_THREAD = "freezeframe-metrics"


def _weights(models, trainable: bool | None = None) -> float:
    """A number that changes at every step: the sum of every variable of `models` (only the trainable ones, or
    only the others), summed in one order."""
    return float(sum(float(np.sum(np.asarray(v.numpy(), np.float64))) for m in models.values() for v in m.variables
                     if trainable is None or v.trainable == trainable))


class Watch(Observer):
    """Wraps the experiment's `metrics(ctx)` before the run begins: the wrapped one also returns the sum of the
    weights of `ctx.models` (the shadows, beside training) and of their non-trainable variables (BatchNormalization
    statistics), and notes on which thread it ran and the training's step before and after it (a `sleep` in
    between). At every step boundary it notes the same sums of the training's own models: what a measure
    recorded at step S must equal. Observers come after the run's own ones, so a measure started at a boundary
    and the sums noted at it see the same weights."""

    def __init__(self, sleep: float = 0.0, slow_from: int = 0, marker: str | None = None,
                 until_step: int | None = None) -> None:
        # until_step: each measure begun before that step also waits until the training has stepped on (a
        # measure on the training thread would wait for ever; the guard below only keeps a broken run from
        # hanging the suite), so "training went on while it ran" is a fact, not a race against the clock
        self.sleep, self.slow_from, self.until_step = sleep, slow_from, until_step
        self.trainer: Trainer | None = None
        self.live: dict[int, tuple[float, float]] = {}
        self.calls: list[tuple[str, int, int]] = []  # (thread name, step before, step after)

    def on_prepared(self, run_) -> None:
        t = self.trainer = run_._t if isinstance(run_, TrainerHandle) else run_
        exp = t.prepared.experiment
        own = exp.metrics

        def metrics(ctx):
            before = t.state.step
            if self.sleep and len(self.calls) >= self.slow_from:
                time.sleep(self.sleep)
                guard = time.monotonic() + 120
                while (self.until_step is not None and before < self.until_step and t.state.step == before
                       and time.monotonic() < guard):
                    time.sleep(0.005)
            out = dict(own(ctx)) if own is not None else {}
            out["weights"] = _weights(ctx.models)
            out["stats"] = _weights(ctx.models, trainable=False)
            self.calls.append((threading.current_thread().name, before, t.state.step))
            return out

        exp.metrics = metrics

    def _note(self, run_) -> None:
        models = self.trainer.prepared.experiment.models
        self.live[run_.step] = (_weights(models), _weights(models, trainable=False))

    def on_run_begin(self, run_) -> None:
        self._note(run_)

    def on_step_end(self, run_) -> None:
        self._note(run_)

    def beside(self) -> list[tuple[str, int, int]]:
        return [c for c in self.calls if c[0] == METRICS_THREAD]


def _assert_one_ordered_record(run_dir, last: int) -> dict:
    """scalars.csv in step order; every step 1..last has one loss row; each metric tag has each step once."""
    rows = _all_rows(run_dir)
    steps = [s for s, _ in rows]
    assert steps == sorted(steps), "scalars.csv is not in step order"
    assert sorted(s for s, t in rows if t.startswith("loss/")) == list(range(1, last + 1))
    sc = read_scalars(run_dir)
    for tag in [t for t in sc if t.startswith("metric/")]:
        assert len(np.unique(sc[tag].steps)) == len(sc[tag].steps) and np.all(np.diff(sc[tag].steps) > 0), tag
    return sc


def _assert_measured_at_their_steps(sc: dict, watch: Watch) -> None:
    w, stats = sc["metric/weights"], sc["metric/stats"]
    np.testing.assert_array_equal(w.steps, stats.steps)
    for step, value, stat in zip(w.steps.tolist(), w.values.tolist(), stats.values.tolist()):
        want, want_stat = watch.live[step]
        assert value == pytest.approx(want, rel=1e-8, abs=1e-9), f"metric/weights at step {step}"  # csv: 9 digits
        assert stat == pytest.approx(want_stat, rel=1e-8, abs=1e-9), f"metric/stats at step {step}"


def test_measures_beside_training_are_recorded_at_the_step_whose_weights_they_measured(run_dir, monkeypatch):
    """The ring's metrics every 0.05 s for 500 steps (SHARE raised: measures as often as half their cost allows):
    each measure but the end's ran on the metrics thread, on the shadows; each value equals the training's own
    weights at the step it is recorded at (every step changes them: the sums of D's and G's weights), and the
    record is one, in step order."""
    monkeypatch.setattr(health, "SHARE", 0.5)
    watch = Watch()
    run(RunConfig(example="ring", steps=500, seed=0, run_dir=str(run_dir), metrics_seconds=0.05, fetch_every=50,
                  checkpoint_every=100), watch)
    sc = _assert_one_ordered_record(run_dir, 500)
    _assert_measured_at_their_steps(sc, watch)
    assert sc["metric/weights"].steps[0] == 0 and sc["metric/weights"].steps[-1] == 500
    np.testing.assert_array_equal(sc["metric/modes_covered"].steps, sc["metric/weights"].steps)
    # every measure ran on the metrics thread, but the end's (on the training thread: the run is over), which a
    # measure that happened to begin at the last step makes unneeded
    assert len(watch.beside()) >= len(watch.calls) - 1 and len(watch.beside()) >= 2
    # (a warning that a measure took longer than 0.05 s may come, on a loaded machine; nothing else)
    assert not [e for e in read_events(run_dir) if e.kind == "warning" and "more than its interval" not in e.message]


_NOISY = '''
"""A tiny GAN whose generator adds noise at every call, training or not, from a SeedGenerator of its own (as
the Keras VAE example's Sampling layer draws its epsilon)."""
import keras
import numpy as np

noise_dim = 2
batch_size = 16


class Noise(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seeds = keras.random.SeedGenerator(1)

    def call(self, x):
        return x + 0.1 * keras.random.normal(keras.ops.shape(x), seed=self.seeds)


def generator():
    return keras.Sequential([keras.Input((noise_dim,)), keras.layers.Dense(4, activation="tanh", name="dense_1"),
                             Noise(name="noise"), keras.layers.Dense(2, name="out")], name="generator")


def discriminator():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(4, activation="tanh", name="dense_1"),
                             keras.layers.Dense(1, name="out")], name="discriminator")


def real_data():
    return (np.random.default_rng(0).normal(size=(256, 2)) * 0.5 + 1.0).astype("float32")
'''

_SPREAD = '''

def metrics(ctx):
    return {"spread": float(np.std(np.asarray(ctx.models.generator(ctx.normal((ctx.n, noise_dim))))))}
'''


def test_a_run_with_metrics_trains_on_the_noise_of_the_run_without(tmp_path):
    """A generator layer that draws from its own SeedGenerator at every call: the shadows are checked by calling
    the model once, which moved its seed state; now the losses are those of the run without metrics, bit for
    bit, and the measures ran beside training."""
    plain = write_file(tmp_path, "noisy.py", _NOISY)
    measured = write_file(tmp_path, "noisy_measured.py", _NOISY + _SPREAD)
    run(config(plain, tmp_path / "plain", steps=40))
    run(config(measured, tmp_path / "measured", steps=40, metrics_seconds=0.05))
    a, b = read_scalars(tmp_path / "plain"), read_scalars(tmp_path / "measured")
    assert "metric/spread" in b and not [t for t in a if t.startswith("metric/")]
    for tag in ("loss/D", "loss/G"):
        np.testing.assert_array_equal(a[tag].steps, b[tag].steps)
        assert np.array_equal(a[tag].values, b[tag].values), tag
    assert not [e for e in read_events(tmp_path / "measured") if e.kind == "warning"
                and "more than its interval" not in e.message]


def test_batch_normalization_statistics_are_in_the_snapshot(tmp_path, monkeypatch):
    """A generator with BatchNormalization, whose moving statistics change at every step: each measure's sum of
    the shadows' non-trainable variables equals the training's at the step it is recorded at."""
    monkeypatch.setattr(health, "SHARE", 0.5)
    watch = Watch()
    run(config(tiny_gan(tmp_path, bn=True), tmp_path / "run", steps=300, metrics_seconds=0.05, fetch_every=20,
               checkpoint_every=100), watch)
    sc = _assert_one_ordered_record(tmp_path / "run", 300)
    _assert_measured_at_their_steps(sc, watch)
    assert len(set(sc["metric/stats"].values.tolist())) > 2  # the statistics moved, and were measured moving
    assert watch.beside()


def test_a_slow_measure_runs_on_its_own_thread_while_training_steps_and_says_so_once(run_dir, monkeypatch):
    """A measure that sleeps 0.2 s, asked for every 0.1 s: it runs on the metrics thread while the training goes
    on (it also waits for the training's step to move, which it could not do on the training thread); one warning names its cost and the interval it now runs at
    (SHARE raised, so that several slow measures come in a short run)."""
    monkeypatch.setattr(health, "SHARE", 0.5)
    watch = Watch(sleep=0.2, until_step=1000)
    run(RunConfig(example="ring", steps=1000, seed=0, run_dir=str(run_dir), metrics_seconds=0.1, checkpoint_every=0),
        watch)
    assert len(watch.calls) >= 2
    assert watch.beside() and all(after > before for _, before, after in watch.beside() if before < 1000)
    slow = [e for e in read_events(run_dir) if e.kind == "warning" and "more than its interval" in e.message]
    assert len(slow) == 1, [e.message for e in slow]
    assert "metrics() took" in slow[0].message and "of 0.1 s" in slow[0].message and "beside training" in slow[0].message
    _assert_measured_at_their_steps(_assert_one_ordered_record(run_dir, 1000), watch)


class CheckpointWitness(Observer):
    """At each `checkpoint` event, the rows scalars.csv holds then (the record is synced before a checkpoint)."""

    def __init__(self, run_dir) -> None:
        self.run_dir, self.seen = run_dir, {}

    def on_event(self, event) -> None:
        if event.kind == "checkpoint":
            self.seen[event.step] = _all_rows(self.run_dir)


class MeasureBeforeACheckpoint(Observer):
    """Once, from step 100 on, at a step with no measure in flight whose next step is no checkpoint's: the clock is
    set due (and the checkpoint margin's estimate cleared), so a measure begins at the next step F; on the metrics
    thread that measure waits until the training has reached the next checkpoint's step C, where the checkpoint
    waits for it. Put before a `Watch`, whose wrapper then notes the steps before and after the wait."""

    def __init__(self, every: int) -> None:
        self.every, self.forced = every, None

    def on_prepared(self, run_) -> None:
        t = run_._t
        own = t.prepared.experiment.metrics

        def metrics(ctx):
            f = self.forced
            if threading.current_thread().name == METRICS_THREAD and f is not None and t.measures.step == f:
                until, guard = (f // self.every + 1) * self.every, time.monotonic() + 120
                while t.state.step < until and time.monotonic() < guard:
                    time.sleep(0.002)  # (polled: the wait ends when the training has reached the checkpoint)
            return own(ctx)

        t.prepared.experiment.metrics = metrics

    def on_step_end(self, run_) -> None:
        if self.forced is None and run_.step >= 100 and (run_.step + 1) % self.every and run_.measure_step is None:
            h = next(o for o in run_._t.observers if isinstance(o, health.HealthMetrics))
            h._next, h._steps_per_measure = 0.0, 0
            self.forced = run_.step + 1


def test_a_checkpoint_comes_after_the_record_holds_every_step_up_to_it(run_dir, monkeypatch):
    """A checkpoint every 30 steps, measures beside training, and one measure (of step F) that lasts until the
    training has reached the next checkpoint's step: that checkpoint waits for it, so the record then holds every
    row up to the checkpoint's step that it ever will, as every checkpoint's does (only a measure of the
    checkpoint's own step may follow it)."""
    monkeypatch.setattr(health, "SHARE", 0.5)
    forced, watch = MeasureBeforeACheckpoint(30), Watch()
    witness = CheckpointWitness(run_dir)
    trainer = Trainer(RunConfig(example="ring", steps=600, seed=0, run_dir=str(run_dir), metrics_seconds=0.05,
                                fetch_every=20, checkpoint_every=30), [forced, watch, witness])
    trainer.run()
    final = _all_rows(run_dir)
    assert len(witness.seen) == 600 // 30 + 1

    def upto(rows, step):
        return [r for r in rows if r[0] < step or (r[0] == step and r[1].startswith("loss/"))]

    for step, rows in witness.seen.items():
        assert upto(rows, step) == upto(final, step), f"checkpoint at step {step}"
    f = forced.forced
    assert f is not None and f % 30
    assert (f, "metric/modes_covered") in witness.seen[(f // 30 + 1) * 30]  # the checkpoint waited for it
    assert any(after >= (f // 30 + 1) * 30 for _, _, after in watch.beside())  # it lasted up to the checkpoint
    _assert_measured_at_their_steps(_assert_one_ordered_record(run_dir, 600), watch)


def test_a_rollback_with_a_measure_in_flight_keeps_one_record(run_dir, monkeypatch):
    """A rollback (with D's learning rate halved, so the timeline after it differs) sent at the step a measure
    began (the clock set due once a checkpoint to go back to exists), which is in flight then (a measure is taken at
    a later boundary at the soonest), so the rollback waits for it; what the record keeps after the cut is one timeline, in step order, and every measure in it equals
    the weights of its step on the timeline that stayed."""
    monkeypatch.setattr(health, "SHARE", 0.5)
    watch = Watch()

    class RollBackOnce(Observer):
        sent = None

        def on_step_end(self, run_) -> None:
            good = [s for s in run_.checkpoint_steps() if 0 < s < run_.step]
            if self.sent is None and run_.measure_step == run_.step and good:
                self.sent = (run_.step, good[-1])
                run_.send(Rollback(step=good[-1], phase="D", lr_factor=0.5, reason="test"))
            elif self.sent is None and good and run_.measure_step is None:  # the clock says due: one begins next
                h = next(o for o in run_._t.observers if isinstance(o, health.HealthMetrics))
                h._next, h._steps_per_measure = 0.0, 0

    rb = RollBackOnce()
    run(RunConfig(example="ring", steps=600, seed=0, run_dir=str(run_dir), metrics_seconds=0.05, fetch_every=20,
                  checkpoint_every=50), [watch, rb])
    assert rb.sent is not None
    events = read_events(run_dir)
    assert [(e.kind, e.step) for e in events if e.kind == "rollback"] == [("rollback", rb.sent[1])]
    assert watch.beside()
    sc = _assert_one_ordered_record(run_dir, 600)
    _assert_measured_at_their_steps(sc, watch)


def test_a_measure_held_longer_than_the_bound_makes_the_loop_wait(run_dir, monkeypatch):
    """With HOLD_MAX_STEPS at 5, a slow measure makes the loop wait for it after a few steps: the record stays
    whole and in step order, and the steps a measure lasted are few."""
    from training_core.loop import trainer as trainer_module
    monkeypatch.setattr(trainer_module, "HOLD_MAX_STEPS", 5)
    monkeypatch.setattr(health, "SHARE", 0.5)
    watch = Watch(sleep=0.2)
    run(RunConfig(example="ring", steps=500, seed=0, run_dir=str(run_dir), metrics_seconds=0.05, fetch_every=1,
                  fetch_seconds=1e-6, checkpoint_every=0), watch)
    _assert_measured_at_their_steps(_assert_one_ordered_record(run_dir, 500), watch)
    assert watch.beside() and all(after - before <= 5 for _, before, after in watch.beside())


_SUBCLASSED = '''
"""A GAN shortcut whose generator is a subclassed keras.Model: Keras cannot clone it."""
import threading

import keras
import numpy as np

noise_dim = 2
batch_size = 16


class Generator(keras.Model):
    def __init__(self):
        super().__init__(name="generator")
        self.hidden = keras.layers.Dense(4, activation="tanh", name="dense_1")
        self.out = keras.layers.Dense(2, name="out")

    def call(self, z, training=False):
        return self.out(self.hidden(z))


def generator():
    g = Generator()
    g(np.zeros((1, noise_dim), "float32"))
    return g


def discriminator():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(4, activation="tanh", name="dense_1"),
                             keras.layers.Dense(1, name="out")], name="discriminator")


def real_data():
    return (np.random.default_rng(0).normal(size=(256, 2)) * 0.5 + 1.0).astype("float32")


def metrics(ctx):
    z = ctx.normal((ctx.n, noise_dim))
    return {"spread": float(np.std(np.asarray(ctx.models.generator(z)))),
            "beside": float(threading.current_thread().name == "freezeframe-metrics")}
'''


def test_a_subclassed_model_is_measured_on_the_training_thread_with_a_warning(tmp_path):
    exp = write_file(tmp_path, "subclassed.py", _SUBCLASSED)
    run(config(exp, tmp_path / "run", steps=200, metrics_seconds=0.02, fetch_every=20))
    warnings = [e.message for e in read_events(tmp_path / "run") if e.kind == "warning"
                and "more than its interval" not in e.message]  # (a loaded machine: a measure slower than 0.02 s)
    assert len(warnings) == 1 and "metrics() runs on the training thread" in warnings[0], warnings
    assert "subclassed keras.Model (Generator)" in warnings[0]
    sc = _assert_one_ordered_record(tmp_path / "run", 200)
    assert len(sc["metric/beside"].steps) >= 2 and not sc["metric/beside"].values.any()
    assert np.all(sc["metric/spread"].values > 0)


_KILLED = '''

import os
import time
from pathlib import Path

_ring_metrics = metrics
_calls = [0]
MARKER = Path({marker!r})


def metrics(ctx):
    """The ring's, fast for 3 calls, then one that says it is in flight and takes long (once: not resumed)."""
    _calls[0] += 1
    if _calls[0] == 4 and not MARKER.exists():
        MARKER.write_text(str(os.getpid()))
        time.sleep(30)
    return _ring_metrics(ctx)
'''


def test_a_run_killed_with_a_measure_in_flight_resumes_into_one_record(tmp_path):
    """A headless run is killed (SIGKILL) while its 4th measure is in flight, the checkpoint after the measure's
    step waiting for it; resumed, its record is one timeline: every step's losses once, every measure's step
    once, scalars.csv in step order; what the killed process wrote after the checkpoint resumed from is in
    dropped/."""
    marker = tmp_path / "in-flight"
    exp = write_file(tmp_path, "ring_killed.py", (REPO / "resources" / "experiments" / "ring.py").read_text()
                     + _KILLED.format(marker=str(marker)))
    d = tmp_path / "run"
    victim = start(main_cmd("--headless", "--experiment", str(exp), "--steps", "100000", "--checkpoint-every", "100",
                            "--fetch-every", "20", "--metrics-every", "0.1", "--quiet", "--run-dir", str(d)))
    try:
        assert wait_for(lambda: marker.exists() or victim.poll() is not None, timeout=240)
        assert victim.poll() is None
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=60)
    finally:
        if victim.poll() is None:
            victim.kill()
    before = _all_rows(d)
    assert before and max(checkpoint_steps(d)) > 0
    cfg = RunConfig.read_toml(d / "config.toml")
    resumed_at = max(s for s in checkpoint_steps(d) if s <= before[-1][0])
    Trainer(replace(cfg, steps=resumed_at + 150), resume=True).run()
    events = read_events(d)
    resumed = [e for e in events if e.kind == "resumed"]
    assert len(resumed) == 1 and resumed[0].step == resumed_at
    sc = _assert_one_ordered_record(d, resumed_at + 150)
    measured = sc["metric/modes_covered"].steps
    assert measured[0] == 0 and measured[-1] == resumed_at + 150
    kept = [r for r in before if r[0] < resumed_at]
    assert [r for r in _all_rows(d) if r[0] < resumed_at] == kept  # the checkpoint's record, as the kill left it
    at = {t for s, t in before if s == resumed_at}  # and its step's losses, and a measure there (the kill's, or the
    assert {t for s, t in _all_rows(d) if s == resumed_at} == at | {"metric/modes_covered", "metric/high_quality"}
    assert list(measured).count(resumed_at) == 1  # resumed run's when the kill left none: taken once either way)


def test_a_rollback_from_the_last_step_still_measures_the_last_step(run_dir):
    """A measure begins at the run's last step (the clock set due one step before), and a rollback is sent while
    it is in flight: the rollback cuts that measure with the rest, the run trains up to the last step again, and
    it is measured there at the end (the measure's step used to be remembered past the rollback, so the end's
    measure was skipped as already taken)."""
    last, back = 300, 200

    class Drive(Observer):
        sent = False

        def on_step_end(self, run_) -> None:
            t = run_._t
            if not self.sent and run_.step == last - 1 and t.measures.step is None:
                next(o for o in t.observers if isinstance(o, health.HealthMetrics))._next = 0.0  # due now
            if not self.sent and run_.step == last and t.measures.step == last:
                self.sent = True
                run_.send(Rollback(step=back, reason="test"))

    drive = Drive()
    run(RunConfig(example="ring", steps=last, seed=0, run_dir=str(run_dir), metrics_seconds=2.0, checkpoint_every=100,
                  fetch_every=20, tensorboard=False), drive)
    assert drive.sent
    assert [(e.step, e.from_step) for e in read_events(run_dir) if e.kind == "rollback"] == [(back, last)]
    sc = _assert_one_ordered_record(run_dir, last)
    assert sc["metric/modes_covered"].steps[-1] == last


def test_a_measure_at_a_checkpoints_own_step_lost_to_a_crash_is_taken_again_on_resume(run_dir):
    """A measure begins at step 100 (the clock set due one step before), the checkpoint at 100 is saved without
    waiting for it (its snapshot is the checkpoint's weights), and the run dies at that boundary (as a kill would:
    the measure never comes in). Resumed from step 100, the run measures step 100 again, once: the record had
    none there, and a resumed run used never to measure at its first step."""
    class Crash(Exception):
        pass

    class Die(Observer):
        in_flight = None

        def on_step_end(self, run_) -> None:
            t = run_._t
            if run_.step == 99:
                next(o for o in t.observers if isinstance(o, health.HealthMetrics))._next = 0.0  # due at 100
            if run_.step == 100:
                self.in_flight = t.measures.step
                raise Crash("killed")

    die = Die()
    cfg = RunConfig(example="ring", steps=1000, seed=0, run_dir=str(run_dir), metrics_seconds=1000.0,
                    checkpoint_every=100, fetch_every=20, tensorboard=False)
    with pytest.raises(Crash):
        Trainer(cfg, die).run()
    assert die.in_flight == 100 and max(checkpoint_steps(run_dir)) == 100
    assert 100 not in read_scalars(run_dir)["metric/modes_covered"].steps
    Trainer(replace(RunConfig.read_toml(run_dir / "config.toml"), steps=150), resume=True).run()
    sc = _assert_one_ordered_record(run_dir, 150)
    assert sc["metric/modes_covered"].steps.tolist().count(100) == 1 and sc["metric/modes_covered"].steps[-1] == 150


_BROKEN_MEASURE = '''

def metrics(ctx):
    values = {"spread": float(np.std(np.asarray(ctx.models.generator(ctx.normal((ctx.n, noise_dim))))))}
    return values["nope"]  # line MARK
'''


def test_a_failing_measure_beside_training_is_reported_like_other_user_code(tmp_path):
    """metrics() raises on the metrics thread, measuring step 0: the warning is one line with the exception's
    first line and the experiment file's line, its detail the traceback from the metrics thread, and it names
    the step measured (`at_step`, where the plots mark it) though it is reported at a later boundary."""
    src = tiny_gan(tmp_path).read_text() + _BROKEN_MEASURE
    line = next(i for i, text in enumerate(src.splitlines(), 1) if "# line MARK" in text)
    exp = write_file(tmp_path, "broken_measure.py", src)
    run(config(exp, tmp_path / "run", steps=40, metrics_seconds=0.05))
    warnings = [e for e in read_events(tmp_path / "run") if e.kind == "warning"]
    assert len(warnings) == 1, [w.message for w in warnings]
    w = warnings[0]
    assert w.message == f"metrics() failed and is turned off: KeyError: 'nope' at line {line}; fix the experiment " \
                        f"file (measuring step 0)", w.message
    assert w.at_step == 0 and w.marker_step == 0 and w.step >= 1  # taken at a later boundary than it measured
    assert "Traceback" in w.detail and f'broken_measure.py", line {line}, in metrics' in w.detail
    assert not [t for t in read_scalars(tmp_path / "run") if t.startswith("metric/")]

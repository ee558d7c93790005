"""GAN health (observers/health.py): `metrics(ctx)` recorded as `metric/<name>` rows, when measures are taken
(paced by their cost, the end's, a resumed run's first step) and what a failing one does.

Real training on the built-in examples and on tiny experiment files written per test. A measure held in flight
waits on a condition of the training (its step), never on the clock; steps are counted, time never is. How a
measure beside training is made (shadows, snapshots) is tested in test_beside.py, what waits for the one in flight
in test_measures.py, the samples in test_samples.py."""
from __future__ import annotations

import os
import signal
from dataclasses import replace

import numpy as np
import pytest

from training_core import Observer, Rollback, RunConfig, Stop, Trainer, example_path, read_events, read_scalars
from training_core.experiment.loading import load_module
from training_core.observers import health
from training_core.rundir.layout import checkpoint_steps
from training_core.runs import read_run

from .helpers import REPO, config, main_cmd, run, start, tiny_gan, wait_for, write_file
from .measure_watch import GUARD_S, Watch, all_rows, assert_measured_at_their_steps, assert_one_ordered_record


def test_ring_records_modes_covered_and_high_quality_in_step_order(run_dir):
    run(RunConfig(example="ring", steps=120, seed=0, run_dir=str(run_dir), metrics_seconds=0.0, fetch_every=50,
                  checkpoint_every=0))
    sc = read_scalars(run_dir)
    modes, hq = sc["metric/modes_covered"], sc["metric/high_quality"]
    assert modes.steps[0] == 0 and modes.steps[-1] == 120  # before the first step and after the last
    assert len(modes.steps) > 100 and np.array_equal(modes.steps, hq.steps)  # metrics_seconds=0: every step
    assert np.all((modes.values >= 0) & (modes.values <= 8)) and np.all(modes.values == np.round(modes.values))
    assert np.all((hq.values >= 0) & (hq.values <= 1))
    steps = [s for s, _ in all_rows(run_dir)]
    assert steps == sorted(steps), "scalars.csv is not in step order"
    losses = [s for s, t in all_rows(run_dir) if t.startswith("loss/")]
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


# -- when measures are taken, and a failing one ---------------------------------------------------------------
def test_a_slow_measure_runs_on_its_own_thread_while_training_steps_and_says_so_once(run_dir, monkeypatch):
    """A measure that costs 0.2 s, asked for every 0.1 s: it runs on the metrics thread while the training goes
    on (each also waits, on a condition notified at every step boundary, until the training's step has moved,
    which it could not do on the training thread); one warning names its cost and the interval it now runs at
    (SHARE raised, so that several slow measures come in a short run)."""
    monkeypatch.setattr(health, "SHARE", 0.5)
    watch = Watch(sleep=0.2, until_step=1000)
    run(RunConfig(example="ring", steps=1000, seed=0, run_dir=str(run_dir), metrics_seconds=0.1, checkpoint_every=0),
        watch)
    assert not watch.timed_out, f"measures that waited {GUARD_S} s for the training to step: {watch.timed_out}"
    assert len(watch.calls) >= 2
    assert watch.beside() and all(after > before for _, before, after in watch.beside() if before < 1000)
    slow = [e for e in read_events(run_dir) if e.kind == "warning" and "more than its interval" in e.message]
    assert len(slow) == 1, [e.message for e in slow]
    assert "metrics() took" in slow[0].message and "of 0.1 s" in slow[0].message and "beside training" in slow[0].message
    assert_measured_at_their_steps(assert_one_ordered_record(run_dir, 1000), watch)


class Paces(Observer):
    """Notes each boundary where a measure beside training came in: (its step, whether the next measure began at
    that same boundary), and sends a Stop at the first that came in with none begun after it, or after `n` came in
    (a Stop drops the measure in flight, so the record then holds exactly the measures that came in)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.came: list[tuple[int, bool]] = []
        self._in_flight: int | None = None
        self._sent = False

    def on_run_begin(self, run_) -> None:
        self._in_flight = run_.measure_step  # the first, begun by the run's own observer before this one

    def on_step_end(self, run_) -> None:
        now = run_.measure_step
        if self._in_flight is not None and now != self._in_flight:
            self.came.append((run_.step, now == run_.step))
            if not self._sent and (now is None or len(self.came) >= self.n):
                self._sent = True
                run_.send(Stop())
        self._in_flight = now


def _slow_warnings(run_dir) -> list:
    return [e for e in read_events(run_dir) if e.kind == "warning" and "more than its interval" in e.message]


def test_a_slow_first_measure_does_not_pace_the_run(run_dir):
    """Issue 24: the `shapes` example's first FID/KID took 8.23 s under load (its first calls and traces, beside
    the training's warm-up), paced the next at 8.23 s / SHARE = 165 s with a warning, and the curves stayed one
    point long. Here the first measure takes 1.5 s (asked for every 1 s), the later ones are the ring's own: the
    second begins at the boundary the first came in at, and no warning says a measure is slower than its interval
    (the first used to pace the next 30 s after it, and say so)."""
    watch = Watch(sleep=1.5, slow_until=1)
    paces = Paces(n=2)
    run(RunConfig(example="ring", steps=1_000_000, seed=0, run_dir=str(run_dir), metrics_seconds=1.0,
                  checkpoint_every=0, tensorboard=False), [watch, paces])
    assert paces.came and paces.came[0][1], f"the second measure did not follow the first at once: {paces.came}"
    assert not _slow_warnings(run_dir), [e.message for e in _slow_warnings(run_dir)]
    assert len(paces.came) == 2
    assert read_scalars(run_dir)["metric/weights"].steps.tolist() == [0, paces.came[0][0]]


def test_a_measure_slow_every_time_is_paced_by_its_cost_from_the_second_on_and_says_so_once(run_dir):
    """A measure of 0.5 s every time, asked for every 0.2 s: the first does not pace the next (the second begins
    when it comes in); the second does, at its cost / SHARE (10 s or more: no third begins when it comes in), and
    its warning, the only one, is emitted when it comes in and names that pace."""
    watch = Watch(sleep=0.5)
    paces = Paces(n=3)
    run(RunConfig(example="ring", steps=1_000_000, seed=0, run_dir=str(run_dir), metrics_seconds=0.2,
                  checkpoint_every=0, tensorboard=False), [watch, paces])
    assert [began for _, began in paces.came] == [True, False], paces.came
    slow = _slow_warnings(run_dir)
    assert len(slow) == 1 and slow[0].step == paces.came[1][0], [(e.step, e.message) for e in slow]
    pace = float(slow[0].message.split("now runs every ")[1].split(" s")[0])
    assert pace >= 0.5 / health.SHARE, slow[0].message
    assert read_scalars(run_dir)["metric/weights"].steps.tolist() == [0, paces.came[0][0]]


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
    before = all_rows(d)
    assert before and max(checkpoint_steps(d)) > 0
    cfg = RunConfig.read_toml(d / "config.toml")
    resumed_at = max(s for s in checkpoint_steps(d) if s <= before[-1][0])
    Trainer(replace(cfg, steps=resumed_at + 150), resume=True).run()
    events = read_events(d)
    resumed = [e for e in events if e.kind == "resumed"]
    assert len(resumed) == 1 and resumed[0].step == resumed_at
    sc = assert_one_ordered_record(d, resumed_at + 150)
    measured = sc["metric/modes_covered"].steps
    assert measured[0] == 0 and measured[-1] == resumed_at + 150
    kept = [r for r in before if r[0] < resumed_at]
    assert [r for r in all_rows(d) if r[0] < resumed_at] == kept  # the checkpoint's record, as the kill left it
    at = {t for s, t in before if s == resumed_at}  # and its step's losses, and a measure there (the kill's, or the
    assert {t for s, t in all_rows(d) if s == resumed_at} == at | {"metric/modes_covered", "metric/high_quality"}
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
    sc = assert_one_ordered_record(run_dir, last)
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
                # a measure still in flight (the first, slow on a busy machine) would set the pace when taken at
                # step 100, after this: take it now, then make the next one due at 100
                t.measures.collect(wait=True)
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
    sc = assert_one_ordered_record(run_dir, 150)
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

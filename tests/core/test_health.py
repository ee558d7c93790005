"""GAN health (`metrics(ctx)` recorded as `metric/<name>` rows) and samples written to the run directory.

Real training on the built-in examples and on tiny experiment files written per test; the readers of
`samples/` are property-tested on files cut at every byte."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from training_core import RunConfig, example_path, read_events, read_scalars
from training_core.experiment.loading import load_module
from training_core.runs import read_run
from training_core.rundir.samples import list_samples, load_samples, sample_file, samples_bytes

from .helpers import config, run, tiny_gan, write_file


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

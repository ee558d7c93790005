"""Samples in the run directory: the drawings a run writes to `samples/` (observers/sample_record.py) and their
files (rundir/samples.py), written at the end of a headless run and at every sample a watched one shows; the
reader of a samples file is property-tested on files cut or damaged at every byte (it returns None, never raises).

Real training on the built-in examples."""
from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from training_core import RunConfig
from training_core.rundir.samples import list_samples, load_samples, sample_file, samples_bytes

from .helpers import run


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

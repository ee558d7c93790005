"""Property tests (hypothesis) of every reader of a run directory: a record cut at any byte (a kill, a full
disk) or with bytes overwritten is read without an exception, and what is read is exactly what was
complete. Also the tail reader the window follows a run with, the backward line scan that cuts a record
back to a checkpoint, and the cut itself.

The record is a real one: a short run of a tiny GAN (module fixture), TensorBoard off.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from training_core import RunConfig, UserError, read_config, read_events, read_scalars, read_variables
from training_core import trim
from training_core.runlog import LineTail
from training_core.sample_record import list_samples, sample_file, samples_bytes
from training_core.runs import RunFollower, read_run

from .helpers import config, run, tiny_gan

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("readers")
    d = tmp / "run"
    run(config(tiny_gan(tmp), d, steps=30, var_every=2, fetch_every=4, checkpoint_every=10))
    return d


def _copy_with(record: Path, name: str, data: bytes) -> Path:
    out = Path(tempfile.mkdtemp(prefix="ff-reader-"))
    for f in ("config.toml", "scalars.csv", "events.jsonl"):
        shutil.copy(record / f, out / f)
    shutil.copytree(record / "variables", out / "variables")
    (out / name).write_bytes(data)
    return out


def _complete_lines(data: bytes) -> list[bytes]:
    return data[:data.rfind(b"\n") + 1].splitlines()


# -- cut at any byte ----------------------------------------------------------------------------------------
@SETTINGS
@given(data=st.data())
def test_scalars_cut_anywhere_read_as_their_complete_rows(record, data):
    full = (record / "scalars.csv").read_bytes()
    cut = data.draw(st.integers(0, len(full)))
    d = _copy_with(record, "scalars.csv", full[:cut])
    try:
        got = read_scalars(d)
        rows = [ln.decode().split(",") for ln in _complete_lines(full[:cut])[1:]]
        for tag in {r[2] for r in rows} | {t for t in got if t.startswith("loss/")}:
            want = [(int(r[0]), float(r[3])) for r in rows if r[2] == tag]
            assert list(zip(got[tag].steps.tolist(), got[tag].values.tolist())) == want
    finally:
        shutil.rmtree(d)


@SETTINGS
@given(data=st.data())
def test_events_cut_anywhere_read_as_their_complete_lines(record, data):
    full = (record / "events.jsonl").read_bytes()
    cut = data.draw(st.integers(0, len(full)))
    d = _copy_with(record, "events.jsonl", full[:cut])
    try:
        want = [json.loads(ln) for ln in _complete_lines(full[:cut])]
        assert [e.to_dict() for e in read_events(d)] == want
    finally:
        shutil.rmtree(d)


@SETTINGS
@given(data=st.data())
def test_variables_cut_anywhere_read_as_their_complete_rows(record, data):
    whole = read_variables(record)
    name = sorted(p.name for p in (record / "variables").iterdir())[data.draw(st.integers(0, 1))]
    full = (record / "variables" / name).read_bytes()
    cut = data.draw(st.integers(0, len(full)))
    d = _copy_with(record, "scalars.csv", (record / "scalars.csv").read_bytes())
    (d / "variables" / name).write_bytes(full[:cut])
    try:
        got = {r.phase: r for r in read_variables(d)}
        for w in whole:
            g = got.get(w.phase)
            if g is None:  # the header itself was cut
                continue
            n = len(g)
            assert n <= len(w)
            np.testing.assert_array_equal(g.steps, w.steps[:n])
            assert g.update_ratio.tobytes() == w.update_ratio[:n].tobytes() and (g.frozen == w.frozen[:n]).all()
        read_run(d)  # the model the window and the exporter read takes it too
    finally:
        shutil.rmtree(d)


@SETTINGS
@given(data=st.data())
def test_config_cut_or_corrupted_is_a_dict_or_one_line(record, data):
    full = bytearray((record / "config.toml").read_bytes())
    cut = data.draw(st.integers(0, len(full)))
    damaged = bytearray(full[:cut])
    for _ in range(data.draw(st.integers(0, 3))):
        if damaged:
            damaged[data.draw(st.integers(0, len(damaged) - 1))] = data.draw(st.integers(0, 255))
    d = _copy_with(record, "config.toml", bytes(damaged))
    try:
        for read in (read_config, lambda p: RunConfig.read_toml(p / "config.toml")):
            try:
                read(d)
            except UserError as e:
                assert "\n" not in str(e) and "config.toml" in str(e)
    finally:
        shutil.rmtree(d)


# -- corrupted ----------------------------------------------------------------------------------------------
@SETTINGS
@given(data=st.data())
def test_events_and_scalars_with_bytes_overwritten_never_raise(record, data):
    name = data.draw(st.sampled_from(["events.jsonl", "scalars.csv"]))
    full = bytearray((record / name).read_bytes())
    header_end = full.index(b"\n")
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(header_end + 1 if name == "scalars.csv" else 0, len(full) - 1))
        full[i] = data.draw(st.integers(0, 255))
    d = _copy_with(record, name, bytes(full))
    try:
        events, scalars = read_events(d), read_scalars(d)
        assert all(e.step >= 0 for e in events)
        assert all(len(s.steps) == len(s.values) for s in scalars.values())
        read_run(d)
    finally:
        shutil.rmtree(d)


def test_an_events_line_that_is_not_an_object_is_skipped(record, tmp_path):
    d = _copy_with(record, "events.jsonl", (record / "events.jsonl").read_bytes() + b"[1,2,3]\n\"x\"\n{}\n")
    try:
        assert [e.to_dict() for e in read_events(d)] == [e.to_dict() for e in read_events(record)]
    finally:
        shutil.rmtree(d)


# -- following a growing record -----------------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # each polls hundreds of times
@given(seed=st.integers(0, 2**32 - 1), largest=st.integers(1, 400))
def test_following_a_growing_record_in_any_pieces_reads_the_whole(record, seed, largest):
    """The window's follower polls while the files grow by arbitrary pieces (a line, half a row): at the end it
    holds exactly what reading the finished record gives."""
    out = Path(tempfile.mkdtemp(prefix="ff-follow-"))
    try:
        (out / "variables").mkdir()
        files = {n: (record / n).read_bytes() for n in ("scalars.csv", "events.jsonl")}
        files.update({f"variables/{p.name}": p.read_bytes() for p in (record / "variables").iterdir()})
        written = dict.fromkeys(files, 0)
        follower = RunFollower(out)
        rng = np.random.default_rng(seed)
        while any(written[n] < len(b) for n, b in files.items()):
            for n, b in files.items():
                k = int(rng.integers(0, largest + 1))
                with open(out / n, "ab") as f:
                    f.write(b[written[n]:written[n] + k])
                written[n] = min(len(b), written[n] + k)
            follower.poll()
        follower.poll()
        whole = read_run(record)
        got = follower.data
        assert sorted(got.tags()) == sorted(whole.tags())  # (the order phases first show up in may differ)
        for tag in whole.tags():
            for a, b in zip(got.series(tag), whole.series(tag)):
                np.testing.assert_array_equal(a, b)
        assert [e.to_dict() for e in got.events] == [e.to_dict() for e in whole.events]
    finally:
        shutil.rmtree(out)


def test_line_tail_restarts_when_a_file_shrank(tmp_path):
    p = tmp_path / "f.txt"
    p.write_bytes(b"a\nb\nc")
    tail = LineTail(p)
    assert tail.read_lines() == ["a", "b"] and not tail.reset
    p.write_bytes(b"a\n")
    assert tail.read_lines() == ["a"] and tail.reset


# -- cutting back to a checkpoint ----------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(content=st.binary(max_size=200).map(lambda b: b.replace(b"\r", b"")), chunk=st.integers(1, 9))
def test_lines_backwards_is_the_complete_lines_reversed(content, chunk):
    import io
    old = trim._CHUNK
    trim._CHUNK = chunk
    try:
        got = list(trim.lines_backwards(io.BytesIO(content)))
    finally:
        trim._CHUNK = old
    lines = content[:content.rfind(b"\n") + 1].split(b"\n")[:-1]
    ends = np.cumsum([len(ln) + 1 for ln in lines]).tolist()
    assert got == list(zip(lines, ends))[::-1]


@pytest.mark.parametrize("step", [0, 1, 9, 10, 17, 30, 99])
def test_trim_keeps_exactly_what_the_checkpoint_holds(record, step, tmp_path):
    d = _copy_with(record, "scalars.csv", (record / "scalars.csv").read_bytes())
    try:
        before = read_scalars(d)
        events = read_events(d)
        for s in (5, 10, 50):
            sample_file(d, s).parent.mkdir(exist_ok=True)
            sample_file(d, s).write_bytes(samples_bytes({"kind": "points", "step": s, "x": np.zeros(3)}))
        drawn = [s for s, _ in list_samples(d)]
        counts = trim.trim_record(d, step, tmp_path / "dropped")
        assert [s for s, _ in list_samples(d)] == [s for s in drawn if s <= step]
        assert [s for s, _ in list_samples(tmp_path / "dropped")] == [s for s in drawn if s > step]
        assert counts["samples"] == sum(s > step for s in drawn)
        after = read_scalars(d)
        for tag, s in before.items():
            keep = s.steps <= step
            np.testing.assert_array_equal(after.get(tag, s).steps if keep.any() else s.steps[keep], s.steps[keep])
        kept = read_events(d)
        ckpt = [i for i, e in enumerate(events) if e.kind == "checkpoint" and e.step == step]
        n = ckpt[-1] + 1 if ckpt else sum(1 for e in events if e.step <= step)
        assert [e.to_dict() for e in kept] == [e.to_dict() for e in events[:n]]
        assert counts["events"] == len(events) - n
        dropped = read_events(tmp_path / "dropped") if counts["events"] else []
        assert [e.to_dict() for e in dropped] == [e.to_dict() for e in events[n:]]
    finally:
        shutil.rmtree(d)

"""Property tests (hypothesis) of every reader of a run directory: a record cut at any byte (a kill, a full
disk) or with bytes overwritten is read without an exception, and what is read is exactly what was
complete. Also the tail reader the window follows a run with (and how it starts over when a resume cut the
record back and it grew again before the next poll), the backward line scan that cuts a record back to a
checkpoint, and the cut itself.

The record is a real one: a short run of a tiny GAN (module fixture), TensorBoard off.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from training_core import RunConfig, UserError, read_config, read_events, read_scalars, read_variables
from training_core.base import events as E
from training_core.rundir import trim
from training_core.rundir.reading import LineTail
from training_core.rundir.varstore import VarFileReader, VarFileWriter, truncate_after
from training_core.rundir.samples import list_samples, sample_file, samples_bytes
from training_core.runs import RunFollower, read_run

from .helpers import assert_same_model, config, run, tiny_gan

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
        assert_same_model(follower.data, read_run(record))
    finally:
        shutil.rmtree(out)


def test_line_tail_restarts_when_a_file_shrank(tmp_path):
    p = tmp_path / "f.txt"
    p.write_bytes(b"a\nb\nc")
    tail = LineTail(p)
    assert tail.read_lines() == ["a", "b"] and not tail.reset
    p.write_bytes(b"a\n")
    assert tail.read_lines() == ["a"] and tail.reset


# -- following a record that is cut back and grows again (a resume between two polls) -----------------------
PATHS = ("discriminator/w", "discriminator/b")


def _append_rows(d: Path, steps: range, value: float, wall: float) -> None:
    """Loss rows of steps `steps` (odd: D, even: G) and per-variable rows of the D steps, as the record
    writer appends them; `value` and `wall` tell one timeline from another (same widths, so the rows of
    two timelines are the same length)."""
    with open(d / "scalars.csv", "a") as f:
        f.writelines(f"{s},{wall + s:.3f},loss/{'D' if s % 2 else 'G'},{value + s:.3f}\n" for s in steps)
    w = VarFileWriter(d / "variables" / "00-D.bin", "D", PATHS)
    odd = np.array([s for s in steps if s % 2], dtype=np.int64)
    norms = np.column_stack([value + odd, value + 2 * odd]).astype(np.float32)
    w.append(odd, wall + odd, norms, norms, norms, np.zeros(norms.shape, dtype=bool))
    w.close()


def _append_events(d: Path, *events: E.Event) -> None:
    with open(d / "events.jsonl", "a") as f:
        f.writelines(json.dumps(e.to_dict()) + "\n" for e in events)


def _first_timeline(d: Path, *later: E.Event) -> None:
    """Steps 1..10 of a run checkpointed at step 4, and `later` events after that checkpoint."""
    (d / "variables").mkdir(parents=True)
    (d / "scalars.csv").write_text("step,wall_time,tag,value\n")
    _append_events(d, E.Start(phases=["D", "G"], phase_variables={"D": list(PATHS), "G": []}, steps=10),
                   E.Checkpoint(step=4, path="checkpoints/ckpt-4"), *later)
    _append_rows(d, range(1, 11), 1.0, 1000.0)


def _assert_one_timeline(data, d: Path, value: float) -> None:
    """The follower's model is what reading the directory afresh gives: each step once, in order, with the
    values the resumed process wrote after the checkpoint."""
    assert_same_model(data, read_run(d))
    for phase in ("D", "G"):
        steps, _, values = data.loss(phase)
        assert (np.diff(steps) > 0).all(), (phase, steps)
        np.testing.assert_array_equal(values[steps > 4], value + steps[steps > 4])
    assert sum(e.kind == "resumed" for e in data.events) <= 1


@pytest.mark.parametrize("later, resumed", [((), ()), ((E.Warning(step=7, message="late"),),
                                                       (E.Resumed(step=4, steps=30), E.Warning(step=5, message="x")))],
                         ids=["rows only", "rows and events"])
def test_a_follower_reads_a_record_cut_back_and_regrown_between_two_polls_afresh(tmp_path, later, resumed):
    """A resume between two polls: the record is cut back to the checkpoint (rundir/trim.py, in place) and the
    resumed process appends past where the follower had read. It used to read on from its old byte offsets
    in the rewritten files: steps twice and out of order, the killed process's rows kept. Without a
    `resumed` event ("rows only") the readers alone must notice."""
    d = tmp_path / "run"
    _first_timeline(d, *later)
    follower = RunFollower(d)
    follower.poll()
    assert follower.data.last_step == 10
    trim.trim_record(d, 4, d / "dropped" / "resume")
    _append_events(d, *resumed)
    _append_rows(d, range(5, 31), 100.0, 2000.0)  # grows well past the old offsets
    assert follower.poll()
    _assert_one_timeline(follower.data, d, 100.0)


def test_a_resumed_event_read_after_a_cut_that_left_the_same_bytes_before_the_offset_starts_over(tmp_path):
    """A cut whose new rows happen to end in the bytes the follower last read (the fingerprint cannot tell):
    the `resumed` event says the record was cut, so the follower reads it afresh."""
    d = tmp_path / "run"
    _first_timeline(d)
    follower = RunFollower(d)
    follower.poll()
    trim.trim_record(d, 4, d / "dropped" / "resume")
    _append_events(d, E.Resumed(step=4, steps=30))
    _append_rows(d, range(5, 7), 2.0, 2000.0)  # steps 5, 6 differ (in bytes of the same width) ...
    _append_rows(d, range(7, 11), 1.0, 1000.0)  # ... 7 to 10 are the bytes of the first timeline
    _append_rows(d, range(11, 15), 1.0, 1000.0)
    assert follower.poll()
    assert_same_model(follower.data, read_run(d))
    np.testing.assert_array_equal(follower.data.loss("D")[2][:3], [2.0, 4.0, 7.0])


def test_readers_start_over_when_the_bytes_before_their_offset_changed(tmp_path):
    """The tail readers tell a rewritten file from a grown one by what precedes their offset (and by the
    inode): a file cut and rewritten to the same or a greater size, or replaced, is read again whole."""
    p = tmp_path / "f.txt"
    p.write_bytes(b"a\nb\n")
    tail = LineTail(p)
    assert tail.read_lines() == ["a", "b"]
    p.write_bytes(b"a\nb\nc\n")  # grown: only the new line
    assert tail.read_lines() == ["c"] and not tail.reset
    p.write_bytes(b"a\nB\nc\nd\n")  # rewritten, longer
    assert tail.read_lines() == ["a", "B", "c", "d"] and tail.reset
    q = tmp_path / "g.txt"
    q.write_bytes(b"a\nB\nc\nd\n")
    os.replace(q, p)  # the same bytes in a new file
    assert tail.read_lines() == ["a", "B", "c", "d"] and tail.reset
    assert tail.read_lines() == [] and not tail.reset

    d = tmp_path / "run"
    (d / "variables").mkdir(parents=True)
    _append_rows(d, range(1, 11), 1.0, 1000.0)
    reader = VarFileReader(d / "variables" / "00-D.bin")
    assert reader.read_new().steps.tolist() == [1, 3, 5, 7, 9] and not reader.reset
    truncate_after(d, 4)
    _append_rows(d, range(5, 21), 100.0, 2000.0)
    rows = reader.read_new()
    assert reader.reset and rows.steps.tolist() == list(range(1, 21, 2))
    assert rows.update_norm[2:, 0].tolist() == [100.0 + s for s in range(5, 21, 2)]


@pytest.mark.parametrize("damage", ["cut inside the header", "bytes over the magic", "bad JSON"])
def test_a_variable_file_without_a_readable_header_is_named_and_set_aside_by_a_resume(tmp_path, damage):
    """A phase file whose header cannot be read was left out by every reader without a word (a figure had
    one phase fewer), and a resume appended its rows to it, unreadable too. `unreadable_files` names it
    (the export warns), and cutting the record back for a resume moves it to the kept folder, so that the
    resumed run writes a readable file."""
    from training_core.rundir.varstore import read_variables, unreadable_files
    d = tmp_path / "run"
    (d / "variables").mkdir(parents=True)
    _append_rows(d, range(1, 11), 1.0, 1000.0)
    path = d / "variables" / "00-D.bin"
    data = path.read_bytes()
    path.write_bytes({"cut inside the header": data[:30], "bytes over the magic": b"XXXX" + data[4:],
                      "bad JSON": data.replace(b'"phase"', b'"ph\x00se"', 1)}[damage])
    assert read_variables(d) == [] and unreadable_files(d) == [path]
    truncate_after(d, 4, tmp_path / "kept")
    assert not path.exists() and (tmp_path / "kept" / "00-D.bin").is_file() and unreadable_files(d) == []
    _append_rows(d, range(5, 9), 100.0, 2000.0)  # the resumed run writes a new file, header first
    assert read_variables(d)[0].steps.tolist() == [5, 7]


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



@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 400))
def test_the_last_scalar_step_is_that_of_the_last_complete_row(tmp_path, cut):
    """Read from the end of a scalars file cut at any byte (where a full disk or a kill ended it): what the
    headless failure line and a resume say the record holds."""
    from training_core.rundir.trim import last_scalar_step
    rows = "step,wall_time,tag,value\n" + "".join(f"{s},{1000 + s}.5,loss/{'D' if s % 2 else 'G'},0.{s}\n"
                                                  for s in range(1, 15))
    data = rows.encode()[:cut]
    (tmp_path / "scalars.csv").write_bytes(data)
    complete = data.decode().split("\n")[:-1][1:]
    assert last_scalar_step(tmp_path / "scalars.csv") == (int(complete[-1].split(",")[0]) if complete else 0)

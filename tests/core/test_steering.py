"""Issue 12, part 1: a headless run steered by a second process through `RUN_DIR/commands.jsonl`
(tests/core/steering.py drives it): every command acknowledged by an event with its id at a step
boundary, malformed lines rejected with their ids while the run goes on, the frozen variables' updates
exactly 0 after the freeze's acknowledged step; and the reader itself, line by line and byte by byte."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from training_core import Observer, RunConfig, Trainer, append_command, read_events, read_scalars
from training_core.base import events as E
from training_core.base.event_json import event_from_dict, json_safe
from training_core.rundir.layout import COMMANDS_FILE
from training_core.observers.command_file import CommandFileReader
from training_core.rundir.commands_file import parse_command_line
from training_core.base.commands import Continue, Envelope, SampleNow, SetFreeze, SetLearningRate, Step
from training_core.base.errors import UserError
from training_core.base.alternation import Policy, policy_from_dict

from .helpers import error_lines, phase_of_step, runs_of, tiny_gan
from .steering import BAD_LINES, FROZEN


def test_the_run_ended_on_the_stop_command_and_released_its_lock(steered_run):
    r = steered_run
    assert r.returncode == 0
    stop = r.acks["s1"]
    assert isinstance(stop, E.Stop) and stop.reason == "stopped"
    assert r.holder is not None and r.holder.pid == r.pid
    assert not (r.dir / "writer.lock").exists()


def test_a_second_writer_is_refused_with_one_line(steered_run):
    r = steered_run.refused
    lines = error_lines(r.stderr)
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert f"being written by pid {steered_run.pid}" in lines[0] and "choose another --run-dir" in lines[0]


def test_every_command_is_acknowledged_with_its_id_in_order(steered_run):
    acks = steered_run.acks
    kinds = {cid: type(acks[cid]) for cid in ("f1", "r1", "l1", "m1", "p1", "c1", "q1", "s1")}
    assert kinds == {"f1": E.Freeze, "r1": E.Ratio, "l1": E.LearningRate, "m1": E.Method, "p1": E.Pause,
                     "c1": E.CheckpointRequested, "q1": E.Continue, "s1": E.Stop}
    steps = [acks[c].step for c in ("f1", "r1", "l1", "m1", "p1", "q1", "s1")]
    assert steps == sorted(steps) and steps[0] > 0
    assert acks["f1"].scopes == [FROZEN] and acks["r1"].policy["ratio"] == [3, 1]
    assert (acks["l1"].phase, acks["l1"].value) == ("D", 0.001)
    assert acks["p1"].reason == "user"
    assert acks["c1"].step == acks["p1"].step == acks["q1"].step  # paused: not one step in between


def test_malformed_lines_are_rejected_with_their_ids_and_the_run_goes_on(steered_run):
    events = read_events(steered_run.dir)
    rejected = [e for e in events if isinstance(e, E.Rejected)]
    for cid, line, word in BAD_LINES:
        hits = [e for e in rejected if e.id == cid and word in e.message]
        assert len(hits) == 1 if cid else hits, (line, [e.message for e in rejected])
    assert len(rejected) == len(BAD_LINES)  # the line written in two halves was not one of them
    assert steered_run.acks["s1"].step > max(e.step for e in rejected)


def test_every_line_of_the_events_file_is_strict_json(steered_run):
    """The rejected `NaN` and `1e400` lines are echoed in their events; JSON has no NaN or Infinity, and
    JavaScript's JSON.parse, Go and serde refuse Python's bare `NaN` (the README promises one JSON object a
    line). Non-finite numbers are written as strings and read back as floats."""
    def refuse(word: str) -> None:
        raise ValueError(f"not JSON: {word}")
    lines = (steered_run.dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    echoed = [json.loads(ln, parse_constant=refuse) for ln in lines if '"x5"' in ln or '"x6"' in ln]
    assert [e["command"] for e in echoed if e["id"] == "x6"] == [{"kind": "lr", "phase": "D", "value": "nan"}]
    assert [e["command"]["policy"]["ratio"] for e in echoed if e["id"] == "x5"] == [["inf", 1]]
    for ln in lines:
        json.loads(ln, parse_constant=refuse)


def test_a_non_finite_float_field_round_trips_through_strict_json():
    """A float field that is NaN or infinite is written as a string and read back as the float it was."""
    import math
    for value in (math.nan, math.inf, -math.inf):
        line = json.dumps(json_safe(E.LearningRate(step=3, phase="D", value=value).to_dict()), allow_nan=False)
        back = event_from_dict(json.loads(line))
        assert isinstance(back, E.LearningRate) and back.step == 3
        assert (math.isnan(back.value) if math.isnan(value) else back.value == value)
    assert event_from_dict({"step": 1, "kind": "lr", "phase": "D", "value": "fast"}).value != "fast"


def test_frozen_variables_read_exactly_zero_after_the_acknowledged_step(steered_run):
    scalars = read_scalars(steered_run.dir)
    freeze, gate = steered_run.acks["f1"].step, steered_run.acks["m1"].step
    for path in (f"{FROZEN}/kernel", f"{FROZEN}/bias"):
        s = scalars[f"update_norm/{path}"]
        before, frozen = s.values[s.steps <= freeze], s.values[(s.steps > freeze) & (s.steps <= gate)]
        assert len(before) > 10 and np.all(before > 0)
        assert len(frozen) > 10 and np.all(frozen == 0.0), path
        assert np.any(s.values[s.steps > gate] > 0)  # gate is leaky: Adam's momentum moves it
    other = scalars["update_norm/discriminator/out/kernel"]
    assert np.all(other.values[other.steps > freeze] > 0)


def test_the_ratio_applies_from_its_acknowledged_step(steered_run):
    r1, until = steered_run.acks["r1"].step, steered_run.acks["s1"].step
    phases = [p for step, p in phase_of_step(steered_run.dir).items() if r1 < step <= until]
    middle = runs_of(phases)[1:-1]
    assert len(middle) > 10 and set(middle) == {("D", 3), ("G", 1)}


# -- the reader on its own -------------------------------------------------------------------------------
class FakeTrainer:
    """What the reader uses of a run's handle: where the run is, where its commands begin, `send` and `emit`."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.command_file_start = None
        self.got: list = []

    def send(self, command, id=None):  # noqa: A002
        self.got.append(Envelope(command, id))

    def emit(self, event):
        self.got.append(event)


def _reader(tmp: Path) -> tuple[CommandFileReader, FakeTrainer]:
    t = FakeTrainer(tmp)
    r = CommandFileReader(poll_s=0.0)
    r.on_run_begin(t)
    return r, t


@pytest.mark.parametrize("line, expect", [
    ('{"kind": "freeze", "scopes": ["a/b"]}', Envelope(SetFreeze(scopes=("a/b",)), None)),
    ('{"id": "7", "kind": "lr", "phase": "G", "value": 1}', Envelope(SetLearningRate(phase="G", value=1), "7")),
    ('{"kind": "step", "n": 3, "id": ""}', Envelope(Step(n=3), "")),
    *[(line, word) for cid, line, word in BAD_LINES if cid not in ("x4", "x5")],  # those the trainer refuses
    ('{"kind": "step", "n": true}', "whole number"),
    ('{"kind": "lr", "phase": "D", "value": NaN}', "finite number"),
    ('{"kind": "freeze", "scopes": "generator"}', "list of strings"),
    ('\xff{"kind": "pause"}', "not JSON"),
])
def test_a_line_is_a_command_with_its_id_or_a_rejection_saying_why(line, expect):
    got = parse_command_line(line.encode("utf-8"))
    if isinstance(expect, str):
        assert isinstance(got, E.Rejected) and expect in got.message, got
    else:
        assert got == expect


def test_a_line_that_is_not_utf8_is_rejected():
    got = parse_command_line(b'{"kind": "pause", "id": "\xff"}')
    assert isinstance(got, E.Rejected) and "UTF-8" in got.message


def test_lines_before_the_run_opened_its_directory_are_not_applied(tmp_path):
    (tmp_path / COMMANDS_FILE).write_text('{"kind": "pause"}\n{"kind": "stop"}\n')
    r, t = _reader(tmp_path)
    assert len(t.got) == 1 and isinstance(t.got[0], E.Warning) and "2 command(s)" in t.got[0].message
    append_command(tmp_path, Step(n=2), "new")
    r.poll(t)
    assert t.got[1:] == [Envelope(Step(n=2), "new")]


class _AppendsWhenItBegins(Observer):
    """A watcher that answers the run's `start` (or `resumed`) event at once: it appends a command before the
    run's own command reader has opened commands.jsonl (the reader comes after the step-0 checkpoint)."""

    def __init__(self, run_dir, kind: str, command, cid: str) -> None:
        self.run_dir, self.kind, self.command, self.cid = run_dir, kind, command, cid

    def on_event(self, e) -> None:
        if e.kind == self.kind:
            append_command(self.run_dir, self.command, self.cid)


def test_a_command_appended_as_soon_as_the_run_shows_is_applied(tmp_path):
    """Such a command used to be counted with the lines from before the run and dropped (a warning, no
    acknowledgement ever); a resumed run still drops only what was there before it resumed, and warns only of
    what no event answers (it warned of every line, a window's sample requests included)."""
    d = tmp_path / "run"
    exp = tiny_gan(tmp_path)
    freeze = SetFreeze(scopes=("generator/dense_1",))
    Trainer(RunConfig(experiment_file=str(exp), example=None, run_dir=str(d), steps=20),
            _AppendsWhenItBegins(d, "start", freeze, "at-start")).run()
    events = read_events(d)
    assert len([e for e in events if e.kind == "freeze" and e.id == "at-start"]) == 1  # applied, at its first look
    assert not [e for e in events if e.kind == "warning" and COMMANDS_FILE in e.message]

    append_command(d, SetFreeze(scopes=()), "stale")  # written while no process had the run open
    append_command(d, SampleNow(), "refresh")  # an attached window's request for fresh samples: stale, not warned of
    cfg = RunConfig(experiment_file=str(exp), example=None, run_dir=str(d), steps=30)
    Trainer(cfg, _AppendsWhenItBegins(d, "resumed", SetLearningRate(phase="G", value=1e-4), "at-resume"),
            resume=True).run()
    events = read_events(d)
    assert [e.id for e in events if e.kind == "lr"] == ["at-resume"]
    assert not [e for e in events if getattr(e, "id", None) == "stale"]
    assert [e.message for e in events if e.kind == "warning"] == [  # of the three lines, "at-start" was applied
        f"1 command(s) in {COMMANDS_FILE} from before this process opened the run were never applied (no event "
        "answers them) and are not applied by it now; append them again to apply them"]


def test_a_file_that_shrank_is_read_again_from_its_start(tmp_path):
    r, t = _reader(tmp_path)
    append_command(tmp_path, Step(n=1), "a")
    append_command(tmp_path, Step(n=2), "b")
    r.poll(t)
    (tmp_path / COMMANDS_FILE).write_text('{"id": "c", "kind": "pause"}\n')
    r.poll(t)
    assert [getattr(g, "id", None) for g in t.got if isinstance(g, Envelope)] == ["a", "b", "c"]
    assert any(isinstance(g, E.Warning) and "shrank" in g.message for g in t.got)


def test_an_overlong_line_is_rejected_without_being_kept(tmp_path, monkeypatch):
    monkeypatch.setattr("training_core.rundir.commands_file.MAX_LINE_BYTES", 100)
    r, t = _reader(tmp_path)
    path = tmp_path / COMMANDS_FILE
    with open(path, "a") as f:
        f.write('{"kind": "pause", "pad": "' + "x" * 150)
    r.poll(t)
    with open(path, "a") as f:
        f.write("x" * 50 + '"}\n{"id": "after", "kind": "continue"}\n')
    r.poll(t)
    assert isinstance(t.got[0], E.Rejected) and "longer than 100 bytes" in t.got[0].message
    assert t.got[1:] == [Envelope(Continue(), "after")]


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                     max_leaves=12)
_COMMANDS = st.fixed_dictionaries({"kind": st.sampled_from(["freeze", "ratio", "lr", "method", "step", "pause", "x"])},
                                  optional={"id": st.text(max_size=5) | st.integers(), "scopes": _JSON,
                                            "policy": _JSON, "phase": _JSON, "value": _JSON, "method": _JSON,
                                            "n": _JSON, "update_frozen_stats": _JSON})


@settings(max_examples=300, deadline=None)
@given(d=_COMMANDS)
def test_any_json_object_is_a_command_or_a_rejection_never_an_exception(d):
    got = parse_command_line(json.dumps(d).encode())
    assert isinstance(got, (Envelope, E.Rejected))
    if isinstance(got, Envelope) and d["kind"] == "ratio":
        try:  # what the trainer does with a policy: a Policy or a UserError, nothing else
            assert isinstance(policy_from_dict(got.command.policy, ["D", "G"]), Policy)
        except UserError:
            pass


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(_COMMANDS.map(json.dumps) | st.text(alphabet="{}[]\":ab ,", max_size=20), min_size=1,
                      max_size=6),
       cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=6))
def test_a_file_read_in_pieces_cut_at_any_byte_gives_what_reading_it_whole_gives(tmp_path_factory, lines, cuts):
    data = "".join(line.replace("\n", " ") + "\n" for line in lines).encode()
    whole_dir, piece_dir = tmp_path_factory.mktemp("whole"), tmp_path_factory.mktemp("pieces")
    whole, tw = _reader(whole_dir)
    (whole_dir / COMMANDS_FILE).write_bytes(data)
    whole.poll(tw)
    pieces, tp = _reader(piece_dir)
    done = 0
    for cut in sorted({c % (len(data) + 1) for c in cuts} | {len(data)}):
        with open(piece_dir / COMMANDS_FILE, "ab") as f:
            f.write(data[done:cut])
        done = cut
        pieces.poll(tp)
        complete = data[:cut].count(b"\n")  # only complete lines were taken
        assert pieces._tail.lines == complete
    assert [_key(g) for g in tp.got] == [_key(g) for g in tw.got]


def _key(g) -> tuple:
    return (g.command, g.id) if isinstance(g, Envelope) else (g.kind, g.message, g.id)

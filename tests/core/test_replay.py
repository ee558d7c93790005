"""Issue 12, part 3: `--replay RUN_DIR` runs a recorded run again from its config.toml and its control
changes, each at the step boundary where it took effect, and stops where the original stopped. With
`--deterministic` on the CPU the losses equal the original's exactly, and a replay of a replay equals
both. The original is the run steered through commands.jsonl by a second process (steering.py):
freeze, ratio, lr and method changed mid-run at steps only its record knows."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from training_core import RunConfig, append_command, plan_replay, read_events, read_scalars
from training_core.base import events as E
from training_core.base.commands import SampleNow, SetFreeze, SetLearningRate, SetRatio, Stop
from training_core.base.errors import UserError
from training_core.rundir.samples import list_samples

from .helpers import error_lines, main_cmd, run_all, start, tiny_gan, wait_for, write_file
from .steering import Steer, killed_if_left

TIMEOUT = 300


@pytest.fixture(scope="module")
def replays(steered_run, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replays")
    first, second = tmp / "replay", tmp / "replay-of-replay"
    out = {}
    for name, src, dst in (("first", steered_run.dir, first), ("second", first, second)):
        out[name] = run_all({name: main_cmd("--headless", "--replay", str(src), "--run-dir", str(dst), "--quiet")},
                            timeout=TIMEOUT)[name]
        assert out[name].returncode == 0, out[name].stderr
    return steered_run.dir, first, second


def _controls(run_dir: Path) -> list[tuple[int, dict]]:
    return [(e.step, e.command) for e in read_events(run_dir) if isinstance(e, (E.Freeze, E.Ratio, E.LearningRate,
                                                                                E.Method))]


def _checkpoint(run_dir: Path) -> dict[str, np.ndarray]:
    path = tf.train.latest_checkpoint(str(run_dir / "checkpoints"))
    reader = tf.train.load_checkpoint(path)
    return {k: reader.get_tensor(k) for k, _ in tf.train.list_variables(path)
            if k.startswith(("variables/", "optimizers/", "rng/", "step/"))}


def test_a_replay_and_a_replay_of_it_reproduce_the_losses_exactly(replays):
    runs = [read_scalars(d) for d in replays]
    orig = runs[0]
    assert {"loss/D", "loss/G"} <= set(orig)
    for tag in orig:
        for other in runs[1:]:
            assert np.array_equal(other[tag].steps, orig[tag].steps), tag
            assert np.array_equal(other[tag].values, orig[tag].values), tag


def test_the_replays_apply_each_control_change_at_its_step_and_stop_where_the_original_stopped(replays, steered_run):
    orig, first, second = replays
    recorded = _controls(orig)
    assert [c["kind"] for _, c in recorded] == ["freeze", "ratio", "lr", "method"]
    for d in (first, second):
        events = read_events(d)
        assert _controls(d) == recorded
        stop = [e for e in events if isinstance(e, E.Stop)]
        assert len(stop) == 1 and stop[0].step == steered_run.acks["s1"].step and stop[0].reason == "done"
        replay = [e for e in events if e.kind == "replay"]
        assert len(replay) == 1 and replay[0].commands == 4
        assert not [e for e in events if isinstance(e, (E.Pause, E.Continue, E.Rejected))]


def test_the_replays_end_in_the_same_weights_optimizer_state_and_random_state(replays):
    orig, first, second = (_checkpoint(d) for d in replays)
    assert len(orig) > 20
    for other in (first, second):
        assert orig.keys() == other.keys()
        assert [k for k in orig if orig[k].tobytes() != other[k].tobytes()] == []


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    """A `--deterministic` headless run steered through commands.jsonl as the window writes it (a sample request,
    an lr change, another sample request, stop; samples otherwise only at the end), and its `--replay`."""
    tmp = tmp_path_factory.mktemp("sampled")
    exp, orig, again = tiny_gan(tmp), tmp / "orig", tmp / "replay"
    proc = start(main_cmd("--headless", "--experiment", str(exp), "--run-dir", str(orig), "--deterministic",
                          "--sample-every", "0", "--quiet"))
    asked = []

    def sample() -> None:  # a request is answered by its drawing, no event (as the window sees it: runs/attach.py)
        append_command(orig, SampleNow(), f"a{len(asked)}")
        assert wait_for(lambda: len(list_samples(orig)) > len(asked), TIMEOUT), "no samples drawn"
        asked.append(list_samples(orig)[-1][0])
        assert wait_for(lambda: (s.poll(), s.data.last_step >= asked[-1] + 20)[1], TIMEOUT), "no rows after it"

    with killed_if_left(proc):
        s = Steer(orig)
        s.advance(20)
        for step in (sample, lambda: s.send(SetLearningRate(phase="G", value=4e-4), "l1"), sample):
            step()
        s.advance(20)
        s.send(Stop(), "s1")
        proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0
    r = run_all({"replay": main_cmd("--headless", "--replay", str(orig), "--run-dir", str(again), "--quiet")},
                timeout=TIMEOUT)["replay"]
    assert r.returncode == 0, r.stderr
    return orig, again, s.acks, asked


def test_a_replay_of_a_run_steered_with_sample_requests_has_its_losses_and_its_samples(sampled):
    orig, again, acks, asked = sampled
    a, b = read_scalars(orig), read_scalars(again)
    assert {"loss/D", "loss/G"} <= set(a) and a.keys() == b.keys()
    for tag in a:
        assert np.array_equal(a[tag].steps, b[tag].steps) and np.array_equal(a[tag].values, b[tag].values), tag
    assert len(asked) == 2 and 0 < asked[0] < acks["l1"].step < asked[1] < acks["s1"].step
    assert [s for s, _ in list_samples(again)] == [s for s, _ in list_samples(orig)] == [*asked, acks["s1"].step]
    assert [(e.step, e.value) for e in read_events(again) if isinstance(e, E.LearningRate)] == [(acks["l1"].step, 4e-4)]


# -- the plan, from a hand-written record ------------------------------------------------------------------
def _record(tmp: Path, events: list[dict], **config) -> Path:
    RunConfig(example="ring", **config).write_toml(tmp / "config.toml")
    (tmp / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return tmp


START = {"step": 0, "kind": "start", "time": 1.0}


def test_the_plan_keeps_only_the_changes_that_move_the_numbers(tmp_path):
    freeze = {"kind": "freeze", "scopes": ["generator"], "update_frozen_stats": False}
    run = _record(tmp_path, [
        START, {"step": 0, "kind": "lr", "phase": "D", "value": 0.1, "command": {"kind": "lr", "phase": "D", "value": 0.1}},
        {"step": 5, "kind": "pause", "reason": "user", "command": {"kind": "pause"}},
        {"step": 5, "kind": "freeze", "scopes": ["generator"], "command": freeze, "id": "a"},
        {"step": 5, "kind": "rejected", "message": "no", "command": {"kind": "lr", "phase": "X", "value": 1}},
        {"step": 5, "kind": "continue", "command": {"kind": "continue"}},
        {"step": 9, "kind": "ratio", "policy": {}, "command": {"kind": "ratio", "policy": {"ratio": [2, 1]}}},
        {"step": 9, "kind": "sample", "command": {"kind": "sample"}},
        {"step": 12, "kind": "stop", "reason": "stopped", "command": {"kind": "stop"}},
    ], steps=None, on_nan="pause")
    (run / "samples").mkdir()
    for step in (4, 12):  # drawn at step 4 (a request: no event) and at the end
        (run / "samples" / f"step-{step:09d}.npz").write_bytes(b"")
    plan = plan_replay(run, "new")
    assert plan.sample_steps == [4] and plan.config.sample_every == 0  # drawn again there; the end draws anyway
    assert plan.commands == [(0, SetLearningRate(phase="D", value=0.1)), (5, SetFreeze(scopes=("generator",))),
                             (9, SetRatio(policy={"ratio": [2, 1]}))]
    assert (plan.stop_step, plan.stopped_cleanly, plan.config.steps, plan.config.run_dir) == (12, True, 12, "new")
    assert plan.config.on_nan == "continue" and plan.config.deterministic is False
    assert plan_replay(run, "new", deterministic=True).config.deterministic is True


def test_a_killed_run_is_replayed_up_to_its_last_recorded_step(tmp_path):
    run = _record(tmp_path, [START, {"step": 7, "kind": "checkpoint", "path": "x"}])
    (run / "scalars.csv").write_text("step,wall_time,tag,value\n1,1.0,loss/D,0.5\n40,1.0,loss/G,0.5\n41,1.0,loss/D,0.")
    plan = plan_replay(run)
    assert (plan.stop_step, plan.stopped_cleanly) == (40, False)


BAD = {  # name: (arguments after --headless, a word the one line must contain)
    "no_such_dir": (["--replay", "{tmp}/nope"], "does not exist; pass the directory of a recorded run"),
    "not_a_run": (["--replay", "{tmp}"], "config.toml"),
    "a_file": (["--replay", "{tmp}/unstarted/config.toml"], "unstarted/config.toml is the config.toml of the run in "),
    "never_started": (["--replay", "{tmp}/unstarted"], "never started"),
    "no_step": (["--replay", "{tmp}/stepless"], "recorded no step"),  # killed during its step-0 checkpoint
    "changed_experiment": (["--replay", "{tmp}/changed"], "changed since"),
    "option_changes_it": (["--replay", "{tmp}/unstarted", "--ratio", "2:1"], "--ratio would change"),
    "seed_changes_it": (["--replay", "{tmp}/unstarted", "--seed", "3"], "--seed would change"),
    "with_example": (["--replay", "{tmp}/unstarted", "--example", "ring"], "not allowed with"),
}


def test_bad_replays_are_one_line_exit_2_and_write_nothing(tmp_path):
    (tmp_path / "unstarted").mkdir()
    _record(tmp_path / "unstarted", [])
    (tmp_path / "stepless").mkdir()
    _record(tmp_path / "stepless", [START])
    exp = write_file(tmp_path, "exp.py", "x = 1\n")
    (tmp_path / "changed").mkdir()
    RunConfig(example=None, experiment_file=str(exp), experiment_sha256="0" * 64).write_toml(
        tmp_path / "changed" / "config.toml")
    (tmp_path / "changed" / "events.jsonl").write_text(json.dumps(START) + "\n")
    commands = {name: main_cmd("--headless", *[a.format(tmp=tmp_path) for a in args], "--run-dir",
                               str(tmp_path / f"out_{name}")) for name, (args, _) in BAD.items()}
    for name, r in run_all(commands).items():
        lines = error_lines(r.stderr)
        assert r.returncode == 2 and len(lines) == 1, (name, r.stderr)
        assert BAD[name][1] in lines[0], (name, lines[0])
        assert not (tmp_path / f"out_{name}").exists()


def test_plan_replay_refuses_a_directory_without_a_config(tmp_path):
    with pytest.raises(UserError, match="no config.toml"):
        plan_replay(tmp_path)

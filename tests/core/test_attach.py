"""Issue 12, part 2 (the window's Qt-free half): attaching to a headless run another process writes.
Two watchers attached to one run: each sees the scope tree (from the `start` event), every control
change whoever sent it, its own commands in flight and then acknowledged at a step, samples on request;
detaching leaves the run training."""
from __future__ import annotations

import os

import numpy as np
import pytest

from training_core import RunConfig, SetFreeze, SetLearningRate, Stop, Trainer, read_events
from training_core.base.errors import UserError
from training_core.runs import read_run
from training_core.runs.attach import AttachedRun

from .helpers import Script, assert_same_model, config, main_cmd, start, tiny_gan, wait_for

TIMEOUT = 120


def _until(watchers, predicate) -> bool:
    return wait_for(lambda: ([w.poll() for w in watchers], predicate())[1], TIMEOUT)


@pytest.fixture(scope="module")
def attached(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("attach")
    exp = tiny_gan(tmp)
    run_dir = tmp / "run"
    proc = start(main_cmd("--headless", "--experiment", str(exp), "--run-dir", str(run_dir), "--quiet"))
    try:
        assert wait_for(lambda: (run_dir / "events.jsonl").is_file(), TIMEOUT), proc.stderr
        a, b = AttachedRun(run_dir), AttachedRun(run_dir)
        assert _until([a, b], lambda: a.start is not None and b.start is not None and a.data.last_step > 0)
        yield exp, proc, a, b
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_the_scope_tree_comes_from_the_record(attached, tmp_path):
    exp, _, a, _ = attached
    trainer = Trainer(RunConfig(experiment_file=str(exp), example=None, run_dir=str(tmp_path / "unused")))
    trainer.prepare()
    assert a.tree.all_variables() == trainer.prepared.var_infos
    assert a.tree.params() == trainer.prepared.tree.params() > 0
    assert a.tree.children["generator"].children["dense_1"].variables[0].shape == (2, 4)
    assert a.writer().pid == attached[1].pid


def test_two_watchers_see_each_others_changes_and_their_own_acknowledgements(attached):
    _, _, a, b = attached
    fa = a.send(SetFreeze(scopes=["discriminator/dense_1"]))
    assert a.status_text() == "attached · freeze in flight"
    assert _until([a, b], lambda: a.sent[fa].step is not None and b.controls.freeze == ["discriminator/dense_1"])
    assert a.status_text() == f"attached · freeze acknowledged at step {a.sent[fa].step:,}"
    lb = b.send(SetLearningRate(phase="G", value=5e-4))
    bad = b.send(SetLearningRate(phase="X", value=1.0))
    assert _until([a, b], lambda: a.controls.lr.get("G") == 5e-4 and b.sent[bad].step is not None)
    assert b.sent[lb].rejected is None and "unknown phase 'X'" in b.sent[bad].rejected
    assert b.status_text().startswith(f"attached · lr rejected at step {b.sent[bad].step:,}: unknown phase")
    assert a.sent.keys() == {fa} and fa not in b.sent  # each tracks only its own commands
    marks = [m.label for m in a.data.markers]
    assert "freeze: discriminator/dense_1" in marks and "lr G=0.0005" in marks


def test_a_sample_request_does_not_hide_the_last_commands_acknowledgement(attached):
    """A window asks for samples every 2 s: that request's acknowledgement replaced the freeze's, and the
    status bar lost "freeze acknowledged" (a window test missed it under load)."""
    _, _, a, b = attached
    fa = a.send(SetFreeze(scopes=["generator/dense_1"]))
    sample = a.request_samples()
    assert _until([a, b], lambda: a.sent[fa].step is not None and a.sent[sample].step is not None)
    assert a.status_text() == f"attached · freeze acknowledged at step {a.sent[fa].step:,}"


def test_samples_arrive_on_request(attached):
    _, _, a, b = attached
    cid = a.request_samples()  # a headless run draws every --sample-every seconds; a watcher asks for now
    assert _until([a, b], lambda: a.sent[cid].step is not None and a.samples is not None
                  and a.samples["step"] >= a.sent[cid].step and b.samples is not None
                  and b.samples["step"] >= a.sent[cid].step)
    assert a.samples["kind"] == "points2d"
    assert a.samples["fake"].shape[1] == 2 and np.isfinite(a.samples["fake"]).all()
    assert b.data.samples is b.samples


def test_sample_requests_are_answered_by_drawings_and_leave_no_events(attached):
    """A window asks for samples every 2 s: each request was a `sample_requested` event in events.jsonl (12 at
    one paused step in a tester's run). A request is no control: it is answered by the drawing, and recorded
    nowhere but the commands file the run reads."""
    _, _, a, b = attached
    for _ in range(3):
        cid = a.request_samples()
        assert _until([a, b], lambda: a.sent[cid].step is not None)
        assert a.samples is not None and a.samples["step"] >= 1
    fa = a.send(SetFreeze(scopes=["generator/dense_1"]))  # a control still is an event, and acknowledged
    assert _until([a, b], lambda: a.sent[fa].step is not None)
    kinds = [e.kind for e in read_events(a.dir)]
    assert "sample" not in kinds and "freeze" in kinds
    assert a.status_text() == f"attached · freeze acknowledged at step {a.sent[fa].step:,}"


def test_detaching_leaves_the_run_training_and_a_stop_ends_it(attached):
    _, proc, a, b = attached
    last = a.data.last_step
    # a detaches: it simply stops polling; nothing is undone
    assert _until([b], lambda: b.data.last_step > last + 100)
    b.send(Stop())
    assert _until([b], lambda: b.finished)
    assert proc.wait(TIMEOUT) == 0 and b.writer() is None
    assert b.status_text().endswith("run ended (stopped)")


@pytest.mark.parametrize("where, says", [("", "has no events.jsonl"), ("nope/run", "does not exist")])
def test_attaching_to_a_directory_without_a_run_is_refused(tmp_path, where, says):
    with pytest.raises(UserError, match=says):
        AttachedRun(tmp_path / where)


def test_a_resumed_run_shows_its_new_target_and_its_checkpoint_settings(tmp_path):
    """A run resumed with `--steps 60 --lr G=1e-4`: a watcher's progress counts to 60, not to the first
    process's 40, and shows the learning rate the resume set (the progress bar said 43% at the end)."""
    d = tmp_path / "run"
    Trainer(RunConfig(experiment_file=str(tiny_gan(tmp_path)), example=None, run_dir=str(d), steps=40)).run()
    from training_core.cli.headless import main
    assert main(["--headless", "--resume", str(d), "--steps", "60", "--lr", "G=1e-4", "--quiet"]) == 0
    run = AttachedRun(d)
    run.poll()
    assert run.finished and run.status().target_steps == 60 and run.status().step == 60
    info = run.prepared_info()
    assert info.config.steps == 60 and info.config.lr["G"] == 1e-4 and run.controls.lr["G"] == 1e-4


def test_a_watcher_that_read_a_crashed_run_sees_its_resume_as_one_timeline(tmp_path):
    """The tester's case without its timing: a watcher read a run that failed at step 33 (no checkpoint after
    an error: the last is at 20), then the run is resumed to step 90 while the watcher does not poll. The
    resume cut the record back to step 20 in place and appended past where the watcher had read; the
    watcher used to read on from its old offsets (steps twice and out of order, the failed process's rows
    21 to 33 kept). One poll after the resume: the record as read afresh, and the resumed run's target."""
    d = tmp_path / "run"

    def crash(trainer):
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        Trainer(config(tiny_gan(tmp_path), d, steps=60, checkpoint_every=20), Script({33: [crash]})).run()
    watcher = AttachedRun(d)
    watcher.poll()
    before = watcher.data.last_step
    assert before >= 30 and watcher.finished and watcher.controls.steps == 60
    from training_core.cli.headless import main
    assert main(["--headless", "--resume", str(d), "--steps", "90", "--quiet"]) == 0
    watcher.poll()
    assert_same_model(watcher.data, read_run(d))
    steps = np.sort(np.concatenate([watcher.data.loss(p)[0] for p in watcher.data.phases]))
    np.testing.assert_array_equal(steps, np.arange(1, 91))  # each step once
    assert all((np.diff(watcher.data.loss(p)[0]) > 0).all() for p in watcher.data.phases)
    assert [(e.step, e.steps) for e in watcher.data.events if e.kind == "resumed"] == [(20, 90)]
    assert watcher.finished and watcher.data.stop.reason == "done"
    assert watcher.controls.steps == 90 and watcher.status().step == 90
    events = watcher.data.events
    kept = next(i for i, e in enumerate(events) if e.kind == "checkpoint" and e.step == 20) + 1
    assert watcher.new_events == events[kept:]  # new: what follows the checkpoint (the rest it had seen)


def test_a_watcher_sees_a_writer_killed_on_this_host_as_ended_and_a_resume_as_live_again(tmp_path):
    """A writer killed with kill -9 leaves its lock and no `stop` event: the watcher showed it training,
    and the commands it sent stayed in flight for ever. Its lock names a process that no longer runs, so
    the run reads as ended, with the way to resume it; a new writer's lock makes it live again."""
    import json
    import socket
    import subprocess
    import sys

    from training_core.rundir.layout import LOCK_FILE
    d = tmp_path / "run"
    Trainer(config(tiny_gan(tmp_path), d, steps=6)).run()
    events = d / "events.jsonl"
    lines = events.read_text(encoding="utf-8").splitlines(keepends=True)
    events.write_text("".join(ln for ln in lines if '"kind": "stop"' not in ln), encoding="utf-8")  # as killed
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock = {"host": socket.gethostname(), "pid": int(dead.stdout), "since": 0.0, "token": "x"}
    (d / LOCK_FILE).write_text(json.dumps(lock), encoding="utf-8")
    watcher = AttachedRun(d)
    watcher.request_samples()  # in flight when the writer died: nobody will apply it
    watcher.poll()
    assert not watcher.finished and watcher.ended and not watcher.status().running
    assert watcher.in_flight == []  # (a sample request left in flight stopped the next ones for ever)
    text = watcher.status_text()
    assert f"pid {lock['pid']}" in text and "is gone after step 6" in text and f"--resume {d}" in text, text
    (d / LOCK_FILE).write_text(json.dumps(lock | {"pid": os.getpid()}), encoding="utf-8")  # a resume took it
    with open(events, "a", encoding="utf-8") as f:
        f.write(json.dumps({"step": 6, "kind": "pause", "time": 0.0, "reason": "user"}) + "\n")  # it writes on
    watcher.poll()
    assert watcher.gone is None and not watcher.ended and watcher.status().running

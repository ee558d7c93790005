"""When things go wrong mid-run: SIGTERM stops like Ctrl-C; a signal during start-up is one line and
nothing written; a full disk (a small tmpfs where this machine can mount one, an injected ENOSPC
otherwise) ends in one line naming the directory and the cause, a true `stop` reason, no partial
checkpoint and a readable record; experiment code raising mid-run is one line with the traceback in
the `error` event; a NaN is rolled back to the last good checkpoint (`--on-nan rollback`, or the
window's Rollback command), and after 3 rollbacks training gives up.
"""
from __future__ import annotations

import errno
import os
from dataclasses import replace
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests import zygote
from training_core import Continue, Observer, RunConfig, Trainer, read_events, read_scalars
from training_core.runs import RunData, read_run, reload_resumed
from training_core.rundir.layout import checkpoint_steps
from training_core.cli.headless import HeadlessObserver
from training_core.base.commands import Rollback
from training_core.base.errors import WriteFailed

from .helpers import SCALAR_MODEL, FullDisk, config, error_lines, main_cmd, nan_experiment, start, tiny_gan, wait_for, write_file

_DIVERGE = '''
"""SGD(1.5) on w**2 diverges: w doubles each step, so the loss overflows to inf at step 65; half the rate
(0.75) converges."""
import keras

from training_core import Experiment, Phase


''' + SCALAR_MODEL + '''

def build():
    return Experiment(name="diverge", models={"m": Scalar(name="m")}, data=None,
                      phases=[Phase("P", lambda ctx: keras.ops.square(ctx.models["m"]()), trains=["m"],
                                    optimizer=keras.optimizers.SGD(1.5))])
'''

_SLOW_IMPORT = '''
import pathlib, time
pathlib.Path({marker!r}).write_text("importing")
time.sleep(120)
'''

_RAISES_MID_RUN = '''
import keras, numpy as np, tensorflow as tf
from training_core import Experiment, Phase

calls = [0]


def check(x):
    calls[0] += 1
    if calls[0] > 30:
        raise RuntimeError("the data source went away")
    return x


def loss(ctx):
    return tf.py_function(check, [keras.ops.mean(ctx.models["n"](ctx.batch))], tf.float32)


def build():
    n = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="d")], name="n")
    return Experiment(name="x", models={"n": n}, phases=[Phase("A", loss, trains=["n"])],
                      data=np.ones((8, 2), "float32"))
'''


def _loss_steps(d: Path) -> np.ndarray:
    sc = read_scalars(d)
    return np.sort(np.concatenate([s.steps for t, s in sc.items() if t.startswith("loss/")] or [np.zeros(0, int)]))


def _no_partial_checkpoint(d: Path) -> None:
    left = [p.name for p in (d / "checkpoints").iterdir() if "_temp" in p.name or ".tmp" in p.name] \
        if (d / "checkpoints").is_dir() else []
    assert left == [], left


# -- signals ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def signalled(tmp_path_factory):
    """Endless headless runs, started together: SIGTERM mid-run; SIGINT and SIGTERM while the experiment
    file is still being imported; and a run whose experiment raises at its 31st step."""
    tmp = tmp_path_factory.mktemp("signals")
    exp = tiny_gan(tmp)
    procs = {"term": start(main_cmd("--headless", "--experiment", str(exp), "--run-dir", str(tmp / "term"),
                                    "--fetch-every", "20", "--quiet"))}
    for sig in ("int", "term_start"):
        marker = tmp / f"{sig}.marker"
        slow = write_file(tmp, f"slow_{sig}.py", _SLOW_IMPORT.format(marker=str(marker)))
        procs[sig] = start(main_cmd("--headless", "--experiment", str(slow), "--run-dir", str(tmp / sig)))
    raises = write_file(tmp, "raises_mid_run.py", _RAISES_MID_RUN)
    procs["raises"] = start(main_cmd("--headless", "--experiment", str(raises), "--run-dir", str(tmp / "raises"),
                                     "--fetch-every", "5", "--quiet"))
    sent = {"term": (lambda: _loss_steps(tmp / "term").size > 100, signal.SIGTERM),
            "int": (lambda: (tmp / "int.marker").exists(), signal.SIGINT),
            "term_start": (lambda: (tmp / "term_start.marker").exists(), signal.SIGTERM)}
    out = {}
    for name, proc in procs.items():
        if name in sent:
            ready, sig = sent[name]
            try:
                assert wait_for(lambda: ready() or proc.poll() is not None, timeout=120), name
            finally:
                proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
        out[name] = (tmp / name, proc.returncode, stdout, stderr)
    return out


def test_sigterm_stops_like_ctrl_c(signalled):
    d, code, stdout, stderr = signalled["term"]
    assert code == 0, stderr
    events = read_events(d)
    last = int(_loss_steps(d)[-1])
    np.testing.assert_array_equal(_loss_steps(d), np.arange(1, last + 1))
    assert events[-1].kind == "stop" and events[-1].reason == "stopped" and events[-1].step == last
    assert events[-2].kind == "checkpoint" and checkpoint_steps(d)[-1] == last
    assert f"{last} steps" in stdout and "Traceback" not in stderr


@pytest.mark.parametrize("name", ["int", "term_start"])
def test_a_signal_during_start_up_is_one_line_and_writes_nothing(signalled, name):
    d, code, stdout, stderr = signalled[name]
    lines = error_lines(stderr)
    assert code == 130, stderr
    assert len(lines) == 1 and lines[0].startswith("error: interrupted while starting"), stderr
    assert not d.exists() and stdout == ""


def test_experiment_code_raising_mid_run_is_one_line_and_keeps_the_record(signalled):
    d, code, stdout, stderr = signalled["raises"]
    lines = error_lines(stderr)
    assert code == 1, stderr
    assert len(lines) == 1, stderr
    assert "phase A failed at step 31: RuntimeError: the data source went away at line 10" in lines[0], lines[0]
    assert str(d) in lines[0] and "Traceback" not in stderr
    events = read_events(d)
    assert [e.kind for e in events[-2:]] == ["error", "stop"] and events[-1].reason == "error"
    assert "Traceback" in events[-2].detail and "RuntimeError" in events[-2].detail
    np.testing.assert_array_equal(_loss_steps(d), np.arange(1, 31))


# -- a full disk --------------------------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path):
    """A 300 KB tmpfs, where this machine lets the tests mount one (root in a container); else None."""
    d = tmp_path / "disk"
    d.mkdir()
    if os.geteuid() != 0:
        yield None
        return
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(d)], capture_output=True)
    if r.returncode != 0:
        yield None
        return
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def _check_failed_record(d: Path) -> None:
    steps = _loss_steps(d)
    np.testing.assert_array_equal(steps, np.arange(1, len(steps) + 1))  # a readable prefix, no gap
    stops = [e for e in read_events(d) if e.kind == "stop"]
    assert all(e.reason == "error" for e in stops), "a failed run must never say done"
    _no_partial_checkpoint(d)


def test_a_full_disk_is_one_line_naming_the_directory_and_the_cause(small_disk, tmp_path):
    if small_disk is None:
        pytest.skip("no tmpfs can be mounted here; test_write_failures_injected covers this with ENOSPC")
    exp = tiny_gan(tmp_path)
    d = small_disk / "run"
    r = zygote.run(main_cmd("--headless", "--experiment", str(exp), "--run-dir", str(d), "--checkpoint-every",
                            "50", "--fetch-every", "20", "--var-every", "1", "--quiet"),
                   capture_output=True, text=True, timeout=300)
    lines = [ln for ln in error_lines(r.stderr) if ln.startswith("error: ")]
    assert r.returncode == 1, r.stderr
    assert len(lines) == 1 and str(d) in lines[0] and "No space left on device" in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    _check_failed_record(d)
    # where the record ends, not where training was when the write failed (it named a step past the record)
    assert f"the record up to step {_loss_steps(d)[-1]} is in" in lines[0], (lines[0], _loss_steps(d)[-1])


class _Fail(Observer):
    """Makes a write fail with ENOSPC at a chosen point: the scalars file after step `at`, or the final
    checkpoint (leaving the `_temp` directory TensorFlow leaves on a full disk)."""

    def __init__(self, what: str, at: int = 0) -> None:
        self.what, self.at, self.trainer = what, at, None

    def on_run_begin(self, trainer) -> None:
        self.trainer = trainer

    def on_step_end(self, run) -> None:
        if run.step != self.at:
            return
        trainer = run._t  # the fault is injected behind the handle, into the trainer's own record and store
        if self.what == "scalars":
            rec = next(o for o in trainer.observers if type(o).__name__ == "RunRecord")
            rec.writer._scalars = FullDisk(rec.writer._scalars)
        else:
            store = trainer.checkpoints

            def save(checkpoint_number):
                (store.dir / f"ckpt-{checkpoint_number}_temp").mkdir()
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            store.manager.save = save


@pytest.mark.parametrize("what", ["scalars", "final checkpoint"])
def test_write_failures_injected(tmp_path, what):
    """ENOSPC injected where the disk would fill: while writing scalars mid-run, and in the final checkpoint
    (which used to end with `stop` reason `done`)."""
    exp = tiny_gan(tmp_path)
    d = tmp_path / "run"
    trainer = Trainer(config(exp, d, steps=70, checkpoint_every=20, fetch_every=5),
                      _Fail(what, at=33 if what == "scalars" else 70))
    with pytest.raises(WriteFailed) as info:
        trainer.run()
    assert "No space left on device" in str(info.value) and str(d) in str(info.value)
    events = read_events(d)
    assert [e.kind for e in events[-2:]] == ["error", "stop"] and events[-1].reason == "error"
    assert "No space left on device" in events[-2].message
    _check_failed_record(d)
    if what == "final checkpoint":
        assert checkpoint_steps(d) == [20, 40, 60] and not (d / "models").exists()
        np.testing.assert_array_equal(_loss_steps(d), np.arange(1, 71))


# -- NaN ----------------------------------------------------------------------------------------------------
class _Live(Observer):
    """The window's model, fed live (batches and events as they come)."""

    def __init__(self) -> None:
        self.data = RunData()

    def on_metrics(self, batch) -> None:
        self.data.add_batch(batch)

    def on_event(self, e) -> None:
        self.data.add_event(e)


def _same_as_disk(data: RunData, d: Path) -> None:
    disk = read_run(d)
    assert sorted(data.tags()) == sorted(disk.tags())
    for tag in disk.tags():  # the record keeps float32 values and wall times to the millisecond
        (s1, w1, v1), (s2, w2, v2) = data.series(tag), disk.series(tag)
        np.testing.assert_array_equal(s1, s2, err_msg=tag)
        np.testing.assert_array_equal(np.float32(v1), np.float32(v2), err_msg=tag)
        np.testing.assert_allclose(w1, w2, atol=2e-3, rtol=0, err_msg=tag)
    assert [e.to_dict() for e in data.events] == [e.to_dict() for e in disk.events]
    assert [(m.step, m.label) for m in data.markers] == [(m.step, m.label) for m in disk.markers]


def test_on_nan_rollback_goes_back_to_the_last_good_checkpoint_with_half_the_rate(tmp_path):
    """The loss overflows at step 65, seen at the fetch of step 80 (metrics come in batches of 30), so the
    checkpoint at 80 is not written (its weights are not finite) and the run goes back to 60, strictly
    before the NaN, with half the rate; then it converges to the end. The window's model, fed live, cuts
    itself back as the record on disk is cut."""
    exp = write_file(tmp_path, "diverge.py", _DIVERGE)
    d = tmp_path / "run"
    live = _Live()
    Trainer(config(exp, d, steps=200, checkpoint_every=20, fetch_every=30, fetch_seconds=1e9,
                   on_nan="rollback", tensorboard=True), live).run()
    _same_as_disk(live.data, d)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(d / "tb" / "training"), size_guidance={"scalars": 0})
    acc.Reload()
    tb = acc.Scalars("loss/P")  # the SessionLog START at step 61 purged the first 61..80
    assert [e.step for e in tb] == list(range(1, 201)) and np.isfinite([e.value for e in tb]).all()
    from tensorboard.backend.event_processing import plugin_event_accumulator
    served = plugin_event_accumulator.EventAccumulator(str(d / "tb" / "training"), size_guidance={"tensors": 0})
    served.Reload()  # what `tensorboard --logdir` serves: it purges only at a run's second START
    assert [e.step for e in served.Tensors("loss/P")] == list(range(1, 201))
    events = read_events(d)
    rollbacks = [e for e in events if e.kind == "rollback"]
    assert len(rollbacks) == 1
    rb = rollbacks[0]
    assert (rb.step, rb.from_step, rb.checkpoint) == (60, 80, "checkpoints/ckpt-60")
    assert "nan: loss of P was inf at step 65" == rb.reason
    lr = [e for e in events if e.kind == "lr"]
    assert [(e.step, e.phase, e.value) for e in lr] == [(60, "P", 0.75)]
    assert "nan" not in [e.kind for e in events] and events[-1].reason == "done"
    steps = _loss_steps(d)
    np.testing.assert_array_equal(steps, np.arange(1, 201))
    assert np.isfinite(read_scalars(d)["loss/P"].values).all()
    dropped = (d / rb.dropped["dir"] / "scalars.csv").read_text().splitlines()
    assert any(",inf" in row for row in dropped) and rb.dropped["scalars"] == 20  # steps 61..80
    assert '"kind": "nan"' in (d / rb.dropped["dir"] / "events.jsonl").read_text()


def test_on_nan_rollback_gives_up_after_three(tmp_path):
    """log(w) under SGD(10) is NaN at step 2 whatever the rate is halved to: three rollbacks, then the
    headless run stops with a line saying so."""
    d = tmp_path / "run"
    observer = HeadlessObserver(None, quiet=True)
    trainer = Trainer(config(nan_experiment(tmp_path), d, checkpoint_every=1, on_nan="rollback"), observer)
    trainer.run()
    events = read_events(d)
    # each rollback went back to the checkpoint at step 1, and the next cut the one before from the record
    # (it lies after that checkpoint): the record keeps the last, which says it was the third
    rollbacks = [e for e in events if e.kind == "rollback"]
    assert [(e.step, e.count) for e in rollbacks] == [(1, 3)]
    assert [(e.step, e.value) for e in events if e.kind == "lr"] == [(1, 1.25)]  # 10 halved three times
    assert len(list((d / "dropped").glob("rollback-*"))) == 3
    assert "after this run's 3 rollbacks; gave up" in observer.halted and events[-1].reason == "halted"
    # cause, then effect: the last `nan`, then the warning that gave up on it and the pause (they came first)
    kinds = [e.kind for e in events]
    last_nan = len(kinds) - 1 - kinds[::-1].index("nan")
    assert kinds[last_nan:last_nan + 3] == ["nan", "warning", "pause"], kinds[-8:]


class _RollBackOnNan(Observer):
    """What the window does: the NaN pauses training; "Roll back to step N" sends Rollback (here with the
    learning rate halved), then Continue."""

    def __init__(self) -> None:
        self.trainer = None

    def on_prepared(self, trainer) -> None:
        self.trainer = trainer

    def on_event(self, e) -> None:
        if e.kind == "nan":
            good = max(s for s in checkpoint_steps(self.trainer.run_dir) if s < e.at_step)
            self.trainer.send(Rollback(step=good, phase=e.phase, lr_factor=0.5))
            self.trainer.send(Continue())


def test_paused_on_nan_the_user_rolls_back_and_continues(tmp_path):
    exp = write_file(tmp_path, "diverge.py", _DIVERGE)
    d = tmp_path / "run"
    Trainer(config(exp, d, steps=120, checkpoint_every=25, on_nan="pause"), _RollBackOnNan()).run()
    events = read_events(d)
    kinds = [e.kind for e in events]
    assert kinds.count("rollback") == 1 and kinds[-1] == "stop" and events[-1].reason == "done"
    rb = events[kinds.index("rollback")]
    assert rb.step == 50 and rb.reason == "user"
    np.testing.assert_array_equal(_loss_steps(d), np.arange(1, 121))


def test_the_window_model_of_a_resumed_run_is_its_record(tmp_path):
    """File → Resume Run…: the window's model is the record up to the `resumed` event, then what comes live;
    at the end it equals the record on disk."""
    exp = tiny_gan(tmp_path)
    d = tmp_path / "run"
    Trainer(config(exp, d, steps=90, checkpoint_every=25, fetch_every=7)).run()
    (d / "checkpoints" / "ckpt-90.index").unlink()  # as if killed before the final checkpoint: resume from 75

    class Window(_Live):
        def on_event(self, e) -> None:
            if e.kind == "resumed":
                reload_resumed(self.data, d, e)
            else:
                self.data.add_event(e)

    window = Window()
    window.data.add_event(read_events(d)[0])  # whatever it showed before is replaced
    Trainer(replace(RunConfig.read_toml(d / "config.toml"), steps=120), window, resume=True).run()
    _same_as_disk(window.data, d)
    assert int(window.data.loss("D")[0][-1]) in (119, 120)


class _Recorder:
    """The parts of a run's handle the NaN observers use: events go to both observers, as `emit` does."""

    def __init__(self, observers) -> None:
        self.observers, self.events, self.sent, self.nan_at, self.rollbacks = observers, [], [], None, 0

    def checkpoint_steps(self) -> list[int]:
        return [0, 5]

    def note_nan(self, at_step) -> None:
        self.nan_at = None if at_step is None else at_step if self.nan_at is None else min(self.nan_at, at_step)

    def emit(self, e) -> None:
        self.events.append(e)
        for o in self.observers:
            o.on_event(e)

    def pause(self, reason: str) -> None:
        self.events.append(("pause", reason))

    def send(self, cmd) -> None:
        self.sent.append(cmd)


@pytest.mark.parametrize("on_nan", ["pause", "stop", "rollback"])
def test_a_batch_with_two_phases_gone_non_finite_names_the_earliest_first(on_nan):
    """D's block comes first in a batch, but G went non-finite a step earlier: G is reported first, the
    rollback lowers G's rate, and the pause follows both `nan` events (it came between them)."""
    from training_core import MetricsBatch, PhaseBlock
    from training_core.base.commands import Stop
    from training_core.observers.alarms import NanAlarm, NanRollback
    alarm, rollback = NanAlarm(on_nan), NanRollback(0.5)
    tr = _Recorder([alarm, rollback] if on_nan == "rollback" else [alarm])
    for o in tr.observers:
        o.on_run_begin(tr)

    def block(phase, steps, loss):
        n = len(steps)
        z = np.zeros((n, 1))
        return PhaseBlock(phase, ("w",), np.array(steps), np.zeros(n), np.array(loss), z, z, z, np.zeros((n, 1), bool))

    alarm.on_metrics(MetricsBatch([block("D", [7, 9], [1.0, np.nan]), block("G", [6, 8], [0.5, np.inf])]))
    nans = [e for e in tr.events if getattr(e, "kind", None) == "nan"]
    assert [(e.phase, e.at_step) for e in nans] == [("G", 8), ("D", 9)] and tr.nan_at == 8
    if on_nan == "rollback":
        [rb] = tr.sent
        assert (rb.phase, rb.step) == ("G", 5) and "loss of G was inf at step 8" in rb.reason
    else:
        assert tr.events[-1] == ("pause", "nan") and tr.events.count(("pause", "nan")) == 1
        assert tr.sent == ([Stop(reason="halted")] if on_nan == "stop" else [])


def test_the_headless_halt_names_the_phase_that_went_non_finite_first():
    """G's loss went NaN at step 2 (D's update at step 1 poisoned it), D's at step 3: both `nan` events
    come before the pause, earliest first. The one line must name G, the phase that failed first, and
    suggest lowering G's rate, not D's (the later event used to overwrite the first)."""
    from training_core.base import events as E

    class _Trainer:
        run_dir = "runs/x"
        sent: list = []

        def send(self, c):
            self.sent.append(c)

    observer = HeadlessObserver(None, quiet=True)
    observer.on_prepared(_Trainer())
    for e in [E.Nan(step=36, phase="G", at_step=2, value="nan"), E.Nan(step=36, phase="D", at_step=3, value="nan"),
              E.Pause(step=36, reason="nan")]:
        observer.on_event(e)
    assert "phase G became nan at step 2" in observer.halted and "--lr G=" in observer.halted


def test_a_damaged_checkpoint_is_named_damaged_with_the_earlier_one_to_resume_from(tmp_path):
    """A cut data file of the newest checkpoint used to be refused as one that "does not fit the experiment
    as it is now; resume with the experiment file the run started with", which sends the user after the
    wrong cause; the line says it is damaged, and how to resume from the checkpoint before it."""
    import pytest
    from training_core.base.errors import UserError
    from training_core.rundir.resume_point import resume_config
    d = tmp_path / "run"
    Trainer(RunConfig(example="factorization", steps=20, checkpoint_every=10, run_dir=str(d),
                      tensorboard=False)).run()
    [data] = (d / "checkpoints").glob("ckpt-20.data-*")
    os.truncate(data, data.stat().st_size // 2)
    cfg = resume_config(d)
    cfg.steps = 30
    with pytest.raises(UserError) as e:
        Trainer(cfg, resume=True).run()
    assert "checkpoint at step 20" in str(e.value) and "is damaged" in str(e.value), str(e.value)
    assert "ckpt-20.* out of the way to resume from the checkpoint at step 10" in str(e.value)
    for f in (d / "checkpoints").glob("ckpt-20.*"):  # the fix the line names works
        f.unlink()
    cfg = resume_config(d)
    cfg.steps = 30
    assert Trainer(cfg, resume=True).run().step == 30

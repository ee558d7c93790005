"""Multi-worker on loopback: two real processes, each its own TensorFlow with `TF_CONFIG` (worker 0 is the
chief). Commands sent to the chief from code reach both at the same step boundary, so both end with the
same weights bit for bit; pause pauses both; a worker that dies stops the chief with one line and the
record kept.

Each side runs `DRIVER` (the Python API, as a user's script would) or `main.py --headless`, and waits on
files and exit codes only: nothing here depends on how fast the machine is.
"""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from training_core import UserError, read_events
from training_core.engine.distribute import is_chief

from .helpers import REPO, env, main_cmd, tiny_gan, wait_for, write_file

DRIVER = '''
import hashlib, json, sys
sys.path.insert(0, {repo!r})
from training_core import Continue, Observer, Pause, RunConfig, SetFreeze, SetLearningRate, Trainer
from training_core.engine.distribute import is_chief

class Drive(Observer):
    """On the chief: a freeze and a learning rate at step 20, a pause at 40, resumed while paused."""
    def __init__(self):
        self.sent, self.applied = set(), []
    def on_prepared(self, trainer):
        self.trainer = trainer
    def on_metrics(self, batch):
        step = batch.status.step
        if not is_chief("multiworker"):
            return
        if step >= 20 and "freeze" not in self.sent:
            self.sent.add("freeze")
            self.trainer.send(SetFreeze(["generator/dense_1"]))
            self.trainer.send(SetLearningRate("D", 0.002))
        if step >= 40 and "pause" not in self.sent:
            self.sent.add("pause")
            self.trainer.send(Pause())
    def on_idle(self, trainer):
        if "continue" not in self.sent:
            self.sent.add("continue")
            trainer.send(Continue())
    def on_event(self, e):
        if e.kind in ("freeze", "lr", "pause", "continue", "stop"):
            self.applied.append([e.kind, e.step])

drive = Drive()
cfg = RunConfig(experiment_file={experiment!r}, example=None, strategy="multiworker", sync_every=10, steps=80,
                run_dir={run_dir!r}, fetch_every=1, checkpoint_every=0, tensorboard=False)
trainer = Trainer(cfg, drive)
trainer.run()
digest = hashlib.sha256(b"".join(v.numpy().tobytes() for v in trainer.prepared.variables)).hexdigest()
print(json.dumps({{"applied": drive.applied, "weights": digest, "step": trainer.step}}), flush=True)
'''


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def tf_config(ports: list[int], index: int) -> str:
    return json.dumps({"cluster": {"worker": [f"localhost:{p}" for p in ports]},
                       "task": {"type": "worker", "index": index}})


def start_cluster(args: list[str], n: int = 2) -> list[subprocess.Popen]:
    """Real interpreters, not forks of one that imported TensorFlow (tests/zygote.py): a multi-worker run
    sets TensorFlow's log level before it imports TensorFlow (`distribute.quiet_collective_logs`)."""
    ports = free_ports(n)
    return [subprocess.Popen(args, cwd=REPO, env={**env(), "TF_CONFIG": tf_config(ports, i)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(n)]


def test_commands_sent_to_the_chief_apply_on_every_worker_at_the_same_step(tmp_path):
    run_dir = tmp_path / "run"
    driver = write_file(tmp_path, "driver.py", DRIVER.format(repo=str(REPO), experiment=str(tiny_gan(tmp_path, "adam")),
                                                             run_dir=str(run_dir)))
    procs = start_cluster([sys.executable, str(driver)])
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-3000:] for o in outs]
    chief, worker = (json.loads(o[0].strip().splitlines()[-1]) for o in outs)

    assert chief["applied"] == worker["applied"], "a command applied at different steps"
    kinds = [k for k, _ in chief["applied"]]
    assert kinds == ["freeze", "lr", "pause", "continue", "stop"]
    assert all(step % 10 == 0 for kind, step in chief["applied"] if kind != "stop")  # at the shared boundaries
    assert chief["weights"] == worker["weights"] and chief["step"] == worker["step"] == 80

    events = read_events(run_dir)  # the chief's record; the worker wrote none
    freeze = next(e for e in events if e.kind == "freeze")
    assert freeze.step >= 20 and next(e for e in events if e.kind == "start").strategy == "multiworker"
    rows = [json.loads(ln) for ln in (run_dir / "events.jsonl").read_text().splitlines()]
    assert rows[-1]["kind"] == "stop" and rows[-1]["reason"] == "done"


def test_a_killed_worker_stops_the_chief_with_one_line_and_the_record_kept(tmp_path):
    run_dir = tmp_path / "run"
    chief, worker = start_cluster(main_cmd("--headless", "--experiment", str(tiny_gan(tmp_path)), "--strategy",
                                           "multiworker", "--run-dir", str(run_dir), "--quiet", "--fetch-every", "1",
                                           "--no-tensorboard"))
    try:
        assert wait_for(lambda: _steps_recorded(run_dir) >= 20, timeout=600), "the cluster did not train"
        worker.send_signal(signal.SIGKILL)
        _, err = chief.communicate(timeout=300)
    finally:
        for p in (chief, worker):
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert chief.returncode == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err[-3000:]
    assert "worker 1 of the multiworker run stopped responding after step" in lines[0]
    assert str(run_dir) in lines[0]
    events = read_events(run_dir)
    error = next(e for e in events if e.kind == "error")
    assert error.message == lines[0][len("error: "):] and events[-1].kind == "stop" and events[-1].reason == "error"
    assert _steps_recorded(run_dir) >= 20


def _steps_recorded(run_dir: Path) -> int:
    f = run_dir / "scalars.csv"
    try:
        return max(0, len(f.read_text().splitlines()) - 1)
    except OSError:
        return 0


@pytest.mark.parametrize("value, expected", [
    ("", "TF_CONFIG, which is not set"),
    ("{not json", "TF_CONFIG is not a cluster"),
    ('{"cluster": {"worker": ["a:1"]}}', "TF_CONFIG is not a cluster"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}',
     "its cluster has 1 worker(s), numbered from 0; give each process an index from 0 to 0"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "ps", "index": 0}}', "TF_CONFIG is not a cluster"),
])
def test_a_bad_tf_config_is_one_line(monkeypatch, value, expected):
    monkeypatch.setenv("TF_CONFIG", value)
    with pytest.raises(UserError) as e:
        is_chief("multiworker")
    assert expected in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("cluster, task, chief", [
    ({"worker": ["a:1", "b:1"]}, {"type": "worker", "index": 0}, True),
    ({"worker": ["a:1", "b:1"]}, {"type": "worker", "index": 1}, False),
    ({"chief": ["c:1"], "worker": ["a:1"]}, {"type": "worker", "index": 0}, False),
    ({"chief": ["c:1"], "worker": ["a:1"]}, {"type": "chief", "index": 0}, True),
])
def test_the_chief_is_tensorflows(monkeypatch, cluster, task, chief):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": task}))
    assert is_chief("multiworker") is chief and is_chief("single") is True


def test_a_multiworker_run_resumed_on_every_worker_goes_on_with_its_record(tmp_path):
    """`--resume RUN_DIR` on both workers, as at the start: the chief takes the run directory and cuts it
    back; the other worker reads the checkpoint there and writes nothing (it took the lock and, at its end,
    deleted the whole run directory, the chief's record)."""
    run_dir = tmp_path / "run"
    args = ["--headless", "--quiet", "--fetch-every", "1", "--no-tensorboard", "--checkpoint-every", "20"]
    first = start_cluster(main_cmd(*args, "--experiment", str(tiny_gan(tmp_path)), "--strategy", "multiworker",
                                   "--steps", "40", "--run-dir", str(run_dir)))
    outs = [p.communicate(timeout=600) for p in first]
    assert [p.returncode for p in first] == [0, 0], [o[1][-2000:] for o in outs]
    before = (run_dir / "config.toml").read_bytes()
    second = start_cluster(main_cmd(*args, "--resume", str(run_dir), "--steps", "60"))
    outs = [p.communicate(timeout=600) for p in second]
    assert [p.returncode for p in second] == [0, 0], [o[1][-2000:] for o in outs]
    assert (run_dir / "config.toml").read_bytes() == before and (run_dir / "events.jsonl").is_file()
    events = read_events(run_dir)
    kinds = [e.kind for e in events]
    assert kinds.count("start") == 1 and kinds.count("resumed") == 1 and events[-1].kind == "stop"
    assert next(e for e in events if e.kind == "resumed").step == 40 and events[-1].step == 60
    steps = sorted(int(ln.split(",")[0]) for ln in (run_dir / "scalars.csv").read_text().splitlines()[1:]
                   if ",loss/" in ln)
    assert steps == list(range(1, 61))  # one timeline, each step once


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_worker_waiting_for_its_cluster_says_so_and_stops_on_a_signal(tmp_path, sig):
    """Worker 0 of two, the other never started: TensorFlow waits in C++ holding the GIL, where no Python
    signal handler runs (only kill -9 stopped it, and it printed nothing). It says what it waits for, and
    either signal ends it at once (their default action), with nothing written."""
    run_dir = tmp_path / "run"
    ports = free_ports(2)
    cmd = main_cmd("--headless", "--experiment", str(tiny_gan(tmp_path)), "--strategy", "multiworker",
                   "--run-dir", str(run_dir))
    proc = subprocess.Popen(cmd, cwd=REPO, env={**env(), "TF_CONFIG": tf_config(ports, 0)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # a read that returns once the line is out
        want = f"worker 0 (localhost:{ports[0]}): connecting to the other workers of TF_CONFIG (Ctrl-C stops)"
        assert line.strip() == want
        proc.send_signal(sig)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == -sig  # ended by the signal itself: the shell says 130 (Ctrl-C) or 143
    assert not run_dir.exists()


ROLLBACK_DRIVER = '''
import hashlib, json, sys
sys.path.insert(0, {repo!r})
from training_core import Observer, RunConfig, Trainer
from training_core.base.commands import Rollback
from training_core.engine.distribute import is_chief

class Back(Observer):
    """On the chief, once, from step {at} on: {rollback}."""
    sent = False
    def on_prepared(self, trainer):
        self.trainer = trainer
    def on_metrics(self, batch):
        if is_chief("multiworker") and not self.sent and batch.status.step >= {at}:
            self.sent = True
            self.trainer.send({rollback})
    def on_event(self, e):
        if e.kind in ("rollback", "rejected", "error"):
            print(json.dumps({{"event": e.kind, "step": e.step}}), flush=True)

{config}
trainer = Trainer(cfg, Back(), resume={resume})
trainer.run()
digest = hashlib.sha256(b"".join(v.numpy().tobytes() for v in trainer.prepared.variables)).hexdigest()
print(json.dumps({{"weights": digest, "step": trainer.step}}), flush=True)
'''


def rollback_driver(directory: Path, name: str, at: int, rollback: str, config: str, resume: bool) -> Path:
    """A script for every worker: `config` (Python that makes `cfg`) run with `Rollback(...)` sent once on the chief
    from step `at` on; it prints each rollback, rejection or error, then a digest of the weights and the last step."""
    return write_file(directory, name, ROLLBACK_DRIVER.format(repo=str(REPO), at=at, rollback=rollback, config=config,
                                                              resume=resume))


def assert_rolled_back_alike(procs: list[subprocess.Popen], steps: int, timeout: float) -> None:
    """Every worker of `procs` (running a `rollback_driver`) ends with exit 0, applied the rollback (none was
    rejected, nothing failed), and ends with the others' weights bit for bit at step `steps`."""
    try:
        outs = [p.communicate(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    lines = [[json.loads(ln) for ln in o[0].splitlines() if ln.startswith("{")] for o in outs]
    for got in lines:
        assert [d["event"] for d in got if "event" in d] == ["rollback"], got
    chief, worker = (got[-1] for got in lines)
    assert chief["weights"] == worker["weights"] and chief["step"] == worker["step"] == steps


def test_a_resumed_multiworker_run_rolls_back_to_a_checkpoint_from_before_the_resume_on_every_worker(tmp_path):
    """After a resume the other worker's own checkpoints start at the resume; the chief's go back further. A
    rollback to one of those was rejected on the other worker alone, and the workers' weights parted."""
    run_dir = tmp_path / "run"
    first = start_cluster(main_cmd("--headless", "--quiet", "--fetch-every", "1", "--no-tensorboard",
                                   "--checkpoint-every", "20", "--experiment", str(tiny_gan(tmp_path)),
                                   "--strategy", "multiworker", "--steps", "40", "--run-dir", str(run_dir)))
    outs = [p.communicate(timeout=600) for p in first]
    assert [p.returncode for p in first] == [0, 0], [o[1][-2000:] for o in outs]
    # on the chief, once: a rollback to step 20, a checkpoint from before the resume at 40
    driver = rollback_driver(tmp_path, "back.py", at=45, rollback="Rollback(step=20)", resume=True,
                             config=f"cfg = RunConfig.read_toml({str(run_dir)!r} + '/config.toml')\ncfg.steps = 70")
    assert_rolled_back_alike(start_cluster([sys.executable, str(driver)]), steps=70, timeout=600)


class Loopback:
    """A one-worker collective: what the chief broadcasts comes back to it (a non-chief worker would receive the
    same bytes), each message kept with the step it was sent at."""

    def __init__(self, trainer) -> None:
        self.trainer, self.sent = trainer, []

    def __call__(self, message: bytes) -> bytes:
        self.sent.append((self.trainer.step, json.loads(message)))
        return message


def test_a_nan_found_before_a_command_pauses_every_worker_at_one_boundary(tmp_path):
    """The chief fetches before it applies a command (so the alarms see the steps before the change); a NaN found
    by that fetch paused the chief at once, outside the broadcast every worker acts on, and the workers trained on
    into the next all-reduce while the chief waited in the broadcast. Now an observer's pause waits for the next
    boundary's broadcast, which carries it to every worker. In process: the chief's command source with a
    loopback broadcast; D's weights become NaN after step 30, and a learning rate is sent after step 31 (no
    fetch but that one sees the NaN)."""
    import numpy as np

    from training_core import Observer, RunConfig, SetLearningRate, Stop, Trainer
    from training_core.loop.multiworker import CommandSync

    class Diverge(Observer):
        def on_prepared(self, run) -> None:
            self.t = run._t

        def on_step_end(self, run) -> None:
            if run.step == 30:
                for v in self.t.prepared.experiment.models["discriminator"].trainable_variables:
                    v.assign(np.full(v.shape, np.nan, "float32"))
            if run.step == 31:
                run.send(SetLearningRate(phase="D", value=1e-4))

        def on_event(self, e) -> None:
            if e.kind == "pause":
                self.t.send(Stop())

    run_dir = tmp_path / "run"
    t = Trainer(RunConfig(example="ring", steps=200, seed=0, run_dir=str(run_dir), fetch_every=10**6,
                          fetch_seconds=1e6, checkpoint_every=0, metrics_seconds=1e6, on_nan="pause",
                          tensorboard=False), Diverge())
    t.prepare()
    bc = Loopback(t)
    t.source = CommandSync(bc, chief=True, every=1)
    t.run()
    events = read_events(run_dir)
    nan = next(e for e in events if e.kind == "nan")
    pause = next(e for e in events if e.kind == "pause")
    carried = [(step, m["pause"]) for step, m in bc.sent if m["pause"]]
    assert nan.step == 31 and pause.reason == "nan"
    assert carried == [(pause.step, "nan")], (carried, pause.step)  # the pause every worker applies, where it applies
    assert events[-1].kind == "stop" and events[-1].step == pause.step


def test_workers_skip_the_same_checkpoints_while_a_loss_is_not_finite(tmp_path):
    """The loss turns NaN at step 2 and the run goes on (`on_nan="continue"`); only the chief has the NaN alarm. It
    skipped its checkpoints at once while the other worker saved every one, whose "last 3 kept" then deleted the
    checkpoint at step 0: a rollback there was rejected on that worker alone, and the workers parted. Now every
    worker skips by the NaN state the last boundary's broadcast carried, so they keep the same checkpoints and
    the rollback applies on both."""
    from .helpers import nan_experiment
    run_dir = tmp_path / "run"
    # on the chief, once, 20 steps into the NaN: a rollback to the checkpoint at step 0, the one before it
    config = (f"cfg = RunConfig(experiment_file={str(nan_experiment(tmp_path))!r}, example=None, strategy='multiworker', "
              f"sync_every=5, steps=40, run_dir={str(run_dir)!r}, fetch_every=1, checkpoint_every=5, "
              "tensorboard=False, on_nan='continue')")
    driver = rollback_driver(tmp_path, "nan_driver.py", at=22, rollback="Rollback(step=0, lr_factor=1.0)",
                             config=config, resume=False)
    assert_rolled_back_alike(start_cluster([sys.executable, str(driver)]), steps=40, timeout=300)

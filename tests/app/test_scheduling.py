"""Training started from the window runs in a process of its own, at a lower priority than the GUI
(Linux: a higher nice value, which every thread of it, TensorFlow's included, inherits).

TensorFlow starts its thread pools lazily, at the first op, so the test has the service prepare a real
experiment (building the models runs ops) before it reads the threads. No thread count: what matters
is that every thread there is, TensorFlow's pools included, runs at the nice value."""
from __future__ import annotations

import os
import sys

import pytest

from app import scheduling
from app.training_process import TrainingProcess
from training_core import RunConfig

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")


def _thread_stats(pid: int, field: int) -> dict[str, int]:
    """Field `field` of /proc/PID/task/*/stat, counted from the state after the name (16: nice, 38: policy)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        out[f"{name}:{tid}"] = int(stat[stat.rindex(")") + 2:].split()[field])
    return out


def _thread_nices(pid: int) -> dict[str, int]:
    return _thread_stats(pid, 16)


@pytest.mark.parametrize("env, want", [(None, scheduling.DEFAULT_TRAINING_NICE), ("", scheduling.DEFAULT_TRAINING_NICE),
                                       ("7", 7), (" 3 ", 3), ("0", 0), ("25", 19), ("-4", 0),
                                       ("not a number", scheduling.DEFAULT_TRAINING_NICE)])
def test_the_nice_value_comes_from_the_environment_within_0_to_19(monkeypatch, env, want):
    if env is None:
        monkeypatch.delenv(scheduling.NICE_ENV, raising=False)
    else:
        monkeypatch.setenv(scheduling.NICE_ENV, env)
    assert scheduling.training_nice() == want


@pytest.mark.parametrize("env, want", [(None, None), ("", None), ("1", 1), (" 3 ", 3), ("0", None), ("-2", None),
                                       ("two", None)])
def test_the_thread_count_comes_from_the_environment_else_all_cores_but_one(monkeypatch, env, want):
    if env is None:
        monkeypatch.delenv(scheduling.THREADS_ENV, raising=False)
    else:
        monkeypatch.setenv(scheduling.THREADS_ENV, env)
    assert scheduling.gui_intra_op_threads() == (want or max(1, (os.cpu_count() or 2) - 1))


@pytest.mark.parametrize("env, want", [(None, scheduling.DEFAULT_TRAINING_POLICY), ("batch", "batch"),
                                       (" Batch ", "batch"), ("other", "other"), ("fifo", scheduling.DEFAULT_TRAINING_POLICY)])
def test_the_policy_comes_from_the_environment(monkeypatch, env, want):
    if env is None:
        monkeypatch.delenv(scheduling.POLICY_ENV, raising=False)
    else:
        monkeypatch.setenv(scheduling.POLICY_ENV, env)
    assert scheduling.training_policy() == want


def test_training_process_runs_nicer_than_the_window(qtbot, monkeypatch):
    """One real training process (each costs a TensorFlow import): a value other than the default, so
    the environment is seen to reach the process and every thread in it."""
    want = 7
    monkeypatch.setenv(scheduling.NICE_ENV, str(want))
    policy = "other" if scheduling.DEFAULT_TRAINING_POLICY == "batch" else "batch"  # not the default, as the nice
    monkeypatch.setenv(scheduling.POLICY_ENV, policy)
    base = os.getpriority(os.PRIO_PROCESS, 0)
    proc = TrainingProcess()
    try:
        prepared, failed = [], []
        proc.reports.prepared.connect(prepared.append)
        proc.reports.failed.connect(lambda *a: failed.append(a))
        proc.load()
        proc.prepare(RunConfig(example="ring", seed=0))  # builds and calls the models: TF's pools start
        qtbot.waitUntil(lambda: bool(prepared or failed), timeout=120_000)
        assert not failed, failed
        nices = _thread_nices(proc.process.pid)
        assert any(name.startswith("tf_") for name in nices), nices  # TensorFlow's pools are among them
        assert set(nices.values()) == {max(base, want)}, nices
        want_policy = os.SCHED_BATCH if policy == "batch" else os.sched_getscheduler(0)  # (the window's own)
        assert set(_thread_stats(proc.process.pid, 38).values()) == {want_policy}
        assert os.getpriority(os.PRIO_PROCESS, 0) == base  # the window's own process is untouched
    finally:
        assert proc.shutdown(60)
    assert proc.process.returncode == 0 and not proc.alive()

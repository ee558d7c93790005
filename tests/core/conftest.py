"""Fixtures several core test modules share, and two logical CPU devices for the core tests' process, so
mirrored runs (2 replicas) are tested in-process.

TensorFlow fixes its devices when its runtime starts (the first op), so this happens at collection,
before any test runs. Single-device runs place everything on /CPU:0 and share the same thread pools,
so they are unaffected (the bit-for-bit exactness tests run in this same process).
"""
from __future__ import annotations

import fcntl
import pickle

import pytest

from training_core.engine.distribute import ensure_logical_cpus

from .steering import SteeredRun, steer_a_run

ensure_logical_cpus(2)


@pytest.fixture(scope="session")
def steered_run(tmp_path_factory, worker_id) -> SteeredRun:
    """A headless run steered through commands.jsonl (tests/core/steering.py), run once per test session:
    with several pytest workers the first that needs it runs it and the others read it (pytest-xdist's
    recipe: a lock in the workers' shared temporary directory). Its tests only read it."""
    if worker_id == "master":
        return steer_a_run(tmp_path_factory.mktemp("steered"))
    shared = tmp_path_factory.getbasetemp().parent
    with open(shared / "steered.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        done = shared / "steered.pickle"
        if done.is_file():
            return pickle.loads(done.read_bytes())
        (shared / "steered").mkdir(exist_ok=True)
        run = steer_a_run(shared / "steered")
        done.write_bytes(pickle.dumps(run))
        return run

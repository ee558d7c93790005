"""Fixtures several core test modules share, and two logical CPU devices for the core tests' process, so
mirrored runs (2 replicas) are tested in-process.

TensorFlow fixes its devices when its runtime starts (the first op), so this happens at collection,
before any test runs. Single-device runs place everything on /CPU:0 and share the same thread pools,
so they are unaffected (the bit-for-bit exactness tests run in this same process).
"""
from __future__ import annotations

import pytest

from training_core.distribute import ensure_logical_cpus

from .steering import SteeredRun, steer_a_run

ensure_logical_cpus(2)


@pytest.fixture(scope="session")
def steered_run(tmp_path_factory) -> SteeredRun:
    """A headless run steered through commands.jsonl (tests/core/steering.py), run once per session."""
    return steer_a_run(tmp_path_factory.mktemp("steered"))

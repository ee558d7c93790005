"""Fixtures several core test modules share."""
from __future__ import annotations

import pytest

from .steering import SteeredRun, steer_a_run


@pytest.fixture(scope="session")
def steered_run(tmp_path_factory) -> SteeredRun:
    """A headless run steered through commands.jsonl (tests/core/steering.py), run once per session."""
    return steer_a_run(tmp_path_factory.mktemp("steered"))

"""Pairs of runs that must give the same losses (test_resume.py, test_datasets.py): two identical headless runs
started together, one killed with SIGKILL after some checkpoints (at a random moment, or at once) while the other
runs to its end, and the check that two run directories hold the same losses, bit for bit, in the same steps.

Why one module: the resume tests and the tf.data pipeline tests each had a copy of the kill and of the check."""
from __future__ import annotations

import random
import signal
from pathlib import Path

import numpy as np

from training_core import read_scalars
from training_core.rundir.layout import checkpoint_steps

from .helpers import main_cmd, start, wait_for


def losses(d) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each loss tag's (steps, values) in a run directory."""
    return {t: (s.steps, s.values) for t, s in read_scalars(d).items() if t.startswith("loss/")}


def last_step(d) -> int:
    """The last step whose loss a run directory holds."""
    return max(int(s[-1]) for s, _ in losses(d).values())


def assert_same_losses(a, b, tags: set[str] | None = None, steps: int | None = None) -> None:
    """Every loss row of run directories `a` and `b` equal, bit for bit, in the same steps (and the tags are
    `tags`, when given); with `steps`, the steps are 1..steps, each once."""
    la, lb = losses(a), losses(b)
    assert la.keys() == lb.keys()
    if tags is not None:
        assert la.keys() == tags
    for tag in la:
        np.testing.assert_array_equal(la[tag][0], lb[tag][0], err_msg=tag)
        assert np.array_equal(la[tag][1], lb[tag][1]), (tag, la[tag][0][la[tag][1] != lb[tag][1]][:5])
    if steps is not None:  # no step twice, none missing
        assert sorted(np.concatenate([s for s, _ in la.values()]).tolist()) == list(range(1, steps + 1))


def kill_one_of_two(args: list[str], killed: Path, whole: Path, checkpoints: int, at_random: bool = True) -> float:
    """`main.py *args` twice, into `killed` and `whole`: the first gets SIGKILL once it has `checkpoints`
    checkpoints (then anywhere in the next 0.4 s when `at_random`: mid-step, mid-write, mid-checkpoint), the second
    runs to its end. Returns the delay the kill came after."""
    victim = start(main_cmd(*args, "--run-dir", str(killed)))
    reference = start(main_cmd(*args, "--run-dir", str(whole)))
    delay = 0.0
    try:
        assert wait_for(lambda: len(checkpoint_steps(killed)) >= checkpoints or victim.poll() is not None, timeout=180)
        if at_random:
            delay = random.Random().uniform(0.0, 0.4)
            wait_for(lambda: False, timeout=delay, interval=0.01)
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.communicate(timeout=60)
    assert victim.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    _, err = reference.communicate(timeout=300)
    assert reference.returncode == 0, err
    return delay

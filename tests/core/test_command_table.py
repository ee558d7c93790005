"""loop/command_table.py: what a live or remote command does to a run, steered as a user steers one, through
`commands.jsonl` (append_command) of a headless run in a process of its own.

A command the run cannot take is refused with a `rejected` event naming the problem and the fix, and the run
goes on: a learning rate float32 cannot hold (finite in Python, infinite in the step; the command line refuses
it too) and a fixed ratio that gives a phase no steps.
"""
from __future__ import annotations

from training_core import SetLearningRate, SetRatio, Stop, append_command
from training_core.base import events as E

from .helpers import main_cmd, start, tiny_gan
from .steering import TIMEOUT, Steer


def test_a_rate_float32_cannot_hold_and_a_ratio_without_a_phase_are_rejected_and_the_run_goes_on(tmp_path):
    """`lr` 1e39 was applied (the event said so), the next step's loss was NaN and the run stopped on it; a
    ratio 5:0 was applied and G never ran again. Both are `rejected` now, with one line each, and a good rate
    sent after them applies."""
    run_dir = tmp_path / "run"
    proc = start(main_cmd("--headless", "--experiment", str(tiny_gan(tmp_path)), "--run-dir", str(run_dir),
                          "--quiet"))
    try:
        s = Steer(run_dir)
        s.advance(10)
        big = s.send(SetLearningRate("D", 1e39), "big")
        zero = s.send(SetRatio({"policy": "fixed", "ratio": [5, 0]}), "zero")
        s.advance(20)
        good = s.send(SetLearningRate("D", 1e-3), "good")
        s.advance(10)
        append_command(run_dir, Stop(), "stop")
        proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0
    assert isinstance(big, E.Rejected), big
    assert big.message == ("learning rate for D is 1e+39, more than float32 holds (at most 3.4e+38; the optimizer "
                           "keeps its rate in float32, where this is infinite); give a smaller rate, e.g. 1e-3")
    assert isinstance(zero, E.Rejected), zero
    assert zero.message.startswith("ratio 5:0 gives phase 'G' 0 steps, so it would never train; give every phase "
                                   "a count >= 1 (e.g. 5:1)")
    assert isinstance(good, E.LearningRate) and good.value == 1e-3
    s.poll()
    assert not [e for e in s.data.events if isinstance(e, E.Nan)]
    assert [e.value for e in s.data.events if isinstance(e, E.LearningRate)] == [1e-3]
    assert [e.policy for e in s.data.events if isinstance(e, E.Ratio)] == []
    assert {"loss/D", "loss/G"} <= set(s.data.scalar_tags) and len(s.data.loss("G")[0]) > 10  # G went on running

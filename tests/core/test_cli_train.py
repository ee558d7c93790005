"""cli/train.py: a headless run (or a sweep) called in-process leaves the signal handlers as it found them.

Why: `train()` installed its stop-at-the-next-step handler for SIGINT and SIGTERM and never took it away, so in
a process that goes on after a run (a test worker, a notebook, a script that trains and then monitors its own
loop) SIGTERM kept calling the finished run's handler: a later `start_run` loop saw a handler not its own, left
it alone, and trained on through SIGTERM (found by the suite: a stop test ended 'done' instead of 'stopped').
"""
from __future__ import annotations

import signal

from training_core import read_events
from training_core.cli.headless import main


def test_a_headless_run_in_process_gives_back_the_handlers_it_found(tmp_path):
    def mine(*_):
        pass
    before = signal.signal(signal.SIGTERM, mine)
    try:
        interrupt = signal.getsignal(signal.SIGINT)
        assert main(["--headless", "--example", "ring", "--steps", "5", "--run-dir", str(tmp_path / "a"),
                     "--quiet"]) == 0
        assert read_events(tmp_path / "a")[-1].kind == "stop"  # it trained: its handlers were installed
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGINT) is interrupt
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_bad_input_refused_in_process_gives_back_the_handlers_too(tmp_path):
    assert main(["--headless", "--example", "nope"]) == 2
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

"""SIGINT and SIGTERM handled one way for a block, then given back as they were.

Why: Freezeframe is also called in-process (a test worker, a notebook, a sweep training its points one after
another, a script that trains and then monitors its own loop); a handler of a finished run left installed made
a later monitored loop in that process ignore SIGTERM. Every place that sets the two signals for a while
(a run's stop at the next step, a sweep's pool, a worker waiting for its cluster) goes through this one block.
"""
from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def handlers(handler: Any, term: Any = None) -> Iterator[None]:
    """SIGINT gets `handler` and SIGTERM `term` (the same when not given) while the block runs, then both get
    back what they had (the default where Python had none of its own). Call it on the main thread."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler if term is None else term)
    try:
        yield
    finally:
        for sig, old in before.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)

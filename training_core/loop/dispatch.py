"""How an event reaches every observer, in order, and what an observer emits while handling one."""
from __future__ import annotations

import threading
from collections import deque
from typing import Callable, Sequence

from training_core.base import events as E
from training_core.observers.base import Observer


class EventDispatch:
    """Hands each event to every observer, in order. An observer that emits while it handles an event
    (NanRollback giving up on a `nan`: a warning and a pause) has its events handed out once that event
    has reached every observer, so the record reads cause, then effect: they used to come before the `nan`
    they answered. Per thread: the warm-up thread's `trace` events are its own."""

    def __init__(self, observers: Callable[[], Sequence[Observer]]) -> None:
        self._observers = observers
        self._local = threading.local()

    def __call__(self, event: E.Event) -> None:
        queue = getattr(self._local, "queue", None)  # (threading.local: unset on a thread that never dispatched)
        if queue is not None:  # inside an observer's on_event: after the event it handles
            queue.append(event)
            return
        self._local.queue = queue = deque([event])
        try:
            while queue:
                e = queue.popleft()
                for o in self._observers():
                    o.on_event(e)
        finally:
            self._local.queue = None

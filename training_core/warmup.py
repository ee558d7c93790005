"""Which step variants are traced when, and the honest count of traces.

Why: tracing is Python building a graph one op at a time, seconds for a wide model (README, Performance),
and the first step needs only one variant per phase: `fast` when nothing of the phase is frozen at the
start, `masked` when something is. So `prepare` traces just those (a loss that fails to trace still
fails there, before the run directory exists), and `WarmUp` traces the others on a thread of its own,
started once the first step's metrics are in: while the loop runs (on a wide model, mostly the C++ of
the other phase's first call), not before the first step.

Exactness does not depend on timing: a variant is called only once it is traced, whoever traced it.
A freeze that needs a masked variant not traced yet (`ensure`, from `Trainer.set_freeze`) waits for the
thread tracing it, or traces it on the spot if no thread has begun it, then applies at the same step
boundary as always. Each variant is traced exactly once (one lock each); the thread only ever traces a
variant nobody has traced yet.

Counts: a variant's first trace, at preparing or later on the thread, is a warm-up `trace` event; any
further trace of it would be a `retrace` (the thing "traces after warm-up: 0" counts). Events are
emitted on the training thread only: a trace made on the thread is reported at the next metrics batch
(or when the training thread waits for it), stamped with the step reached by then. At the end of the
run the thread is joined, so a finished run has traced every variant once (4 for two phases).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from .observers import Observer

if TYPE_CHECKING:
    from .trainer import Trainer

VARIANTS = ("fast", "masked")


class WarmUp(Observer):
    """`on_trace` is what the compiled steps call when they are traced; `emit(phase, variant, retrace)`
    reports a trace on the training thread."""

    def __init__(self, emit: Callable[[str, str, bool], None]) -> None:
        self._emit = emit
        self._seen: set[tuple[str, str]] = set()
        self._queued: list[tuple[str, str, bool]] = []
        self._guard = threading.Lock()  # _seen, _queued, _locks
        self._locks: dict[tuple[int, str], threading.Lock] = {}
        self._thread: threading.Thread | None = None
        self._deferred: list[tuple[Any, str]] = []  # (step, variant) the thread traces, in order
        self._device = ""
        self._ended = False
        #: what a trace on the thread raised; a variant it left untraced is traced by `ensure` when needed,
        #: where the error then surfaces as any failure of the run does
        self.error: BaseException | None = None

    # -- called inside a trace, on whichever thread traces ------------------------------------------------
    def on_trace(self, phase: str, variant: str) -> None:
        with self._guard:
            retrace = (phase, variant) in self._seen
            self._seen.add((phase, variant))
            if threading.current_thread() is self._thread:
                self._queued.append((phase, variant, retrace))
                return
        self._emit(phase, variant, retrace)

    # -- the training thread ------------------------------------------------------------------------------
    def ensure(self, step: Any, variant: str) -> None:
        """Return once `step`'s `variant` is traced: at once if it is, after the thread finishes it if the
        thread is tracing it, else after tracing it here."""
        self._trace(step, variant)
        self.drain()

    def drain(self) -> None:
        """Report the traces the thread made since the last call."""
        with self._guard:
            queued, self._queued = self._queued, []
        for phase, variant, retrace in queued:
            self._emit(phase, variant, retrace)

    def on_prepared(self, trainer: "Trainer") -> None:
        p = trainer.prepared
        self._device = p.device
        self._deferred = [(p.steps[i], v) for i, v in getattr(p, "deferred", [])]

    def on_metrics(self, batch: Any) -> None:
        if self._thread is None and self._deferred and not self._ended:
            self._thread = threading.Thread(target=self._run, name="freezeframe-warm-up", daemon=True)
            self._thread.start()
        elif self._queued:
            self.drain()

    def on_run_end(self, trainer: "Trainer", reason: str) -> None:
        """Every variant traced by the end (the counts of a finished run do not depend on its speed)."""
        self._ended = True
        if self._thread is not None:
            self._thread.join()
        self.drain()

    # -- both ---------------------------------------------------------------------------------------------
    def _trace(self, step: Any, variant: str) -> None:
        import contextlib

        import tensorflow as tf
        with self._guard:
            lock = self._locks.setdefault((id(step), variant), threading.Lock())
        fn = getattr(step, variant)
        with lock:  # one trace per variant: a second caller waits for the first
            if fn.experimental_get_tracing_count() == 0:
                # where prepare traced and the loop calls (the device is part of tf.function's cache key;
                # the device scope is per thread)
                with tf.device(self._device) if self._device else contextlib.nullcontext():
                    fn.get_concrete_function()

    def _run(self) -> None:
        try:
            for step, variant in self._deferred:
                self._trace(step, variant)
        except BaseException as e:  # noqa: BLE001 - the training thread traces it again if it needs it
            self.error = e

"""Which step variants are traced when, and the honest count of traces.

Why: tracing is Python building a graph one op at a time, seconds for a wide model (README, Performance),
and the first step needs only one variant of one phase. So `prepare` traces the first phase's starting
variant (`fast`, or `masked` when the start's freeze set touches the phase) and, of every other phase,
only its forward and backward pass (`PhaseStep.check_loss`): that is where user code fails, so a loss
that cannot be traced still fails there, before the run directory exists. `WarmUp` traces the rest on a
thread of its own once the first step's metrics are in: first the other phases' starting variants (the
loop needs them next and waits for them), then, once every phase has stepped, every other variant.
Measured on the 2-core machine: tracing during the first call (TensorFlow's C++ optimising the graph,
which releases the GIL) made that call 2-3x slower, as the machine has no core to spare; tracing the
masked variants while steps run costs those steps a few seconds of Python, not the first step.

Exactness does not depend on timing: a variant is only ever called traced, whoever traced it. The loop
calls the step functions directly; `tf.function` traces on a first call and a call waits, on the
function's lock, for a trace under way on another thread, then uses it. A freeze that needs a masked
variant (`ensure`, from `Trainer.set_freeze`) waits for it explicitly, so its trace is reported before
the `freeze` event, and applies at the same step boundary as always. Each variant is traced once.

Counts: a variant's first trace, while preparing, on the training thread or on this thread, is a warm-up
`trace` event; any further trace of it would be a `retrace` (what "traces after warm-up: 0" counts).
Events are emitted on the training thread only: a trace made on the thread is reported at the next
metrics batch (or when the training thread waits for it), stamped with the step reached by then. At the
end of a run that stepped the thread is finished, so it has traced every variant once (4 for two phases).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

from training_core.engine import keras_private

VARIANTS = ("fast", "masked")


class WarmUp:
    """`on_trace` is what the compiled steps call when they are traced; `emit(phase, variant, retrace)`
    reports a trace on the training thread. The trainer calls `prepared`, `begin`, `after_metrics` and `end`
    at those points of a run."""

    def __init__(self, emit: Callable[[str, str, bool], None]) -> None:
        self._emit = emit
        self._seen: set[tuple[str, str]] = set()
        self._queued: list[tuple[str, str, bool]] = []
        self._guard = threading.Lock()  # _seen, _queued, _locks
        self._locks: dict[tuple[int, str], threading.Lock] = {}
        self._thread: threading.Thread | None = None
        self._at_start: list[tuple[Any, str]] = []  # (step, variant) the thread traces after the first step
        self._deferred: list[tuple[Any, str]] = []  # and once every phase stepped
        self._all_stepped = threading.Event()
        self._began = False
        self._keras_state: dict = {}
        self._device = ""
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
        thread is tracing it, else after tracing it here. Before the run begins (a resume restoring its freeze
        set), nothing: the loop's first call traces it."""
        if not self._began:
            return
        self._trace(step, variant)
        self.drain()

    def drain(self) -> None:
        """Report the traces the thread made since the last call."""
        with self._guard:
            queued, self._queued = self._queued, []
        for phase, variant, retrace in queued:
            self._emit(phase, variant, retrace)

    def prepared(self, p: Any) -> None:
        """Preparing is done (`p`: engine.prepare.Prepared): what is left to trace, and where."""
        self._keras_state = _keras_state()
        self._device = p.device
        self._at_start = [(p.steps[i], v) for i, v in p.at_start]
        self._deferred = [(p.steps[i], v) for i, v in p.deferred]

    def begin(self) -> None:
        """The run began (a resume has restored its freeze set): from now on `ensure` traces what it needs."""
        self._began = True

    def after_metrics(self, phase_counts: Sequence[int]) -> None:
        """After the loop fetched a batch: the thread starts after the first step, and goes on to the other
        variants once every phase has stepped."""
        if self._thread is None and (self._at_start or self._deferred):
            self._thread = threading.Thread(target=self._run, name="freezeframe-warm-up", daemon=True)
            self._thread.start()
        if not self._all_stepped.is_set() and all(phase_counts):
            self._all_stepped.set()
        if self._queued:
            self.drain()

    def end(self) -> None:
        """Every variant traced by the end of a run that stepped (its counts do not depend on its speed)."""
        self._all_stepped.set()
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
        _keras_state(self._keras_state)
        try:
            for step, variant in self._at_start:
                self._trace(step, variant)
            self._all_stepped.wait()
            for step, variant in self._deferred:
                self._trace(step, variant)
        except BaseException as e:  # noqa: BLE001 - the training thread traces it again if it needs it
            self.error = e


def _keras_state(restore: dict | None = None) -> dict:
    """Keras keeps its global state per thread (the global seed generator of unseeded `keras.random` draws,
    `keras.config` switches such as flash attention): the thread traces with the training thread's, as if it
    had traced there (engine/keras_private.py reads and sets it). (Every phase's loss is first traced on the
    training thread, by its first variant or by `check_loss`, so a loss that fails fails there; the thread
    traces the other variants, which the fast ones build with their own forward and backward pass, as a
    plain loop's step does: engine/phase_step.py.)
    Read (no argument) on the training thread between steps, where no call's scope is open.

    The name-scope stack is the one thing the thread gets a copy of: a model call traced there pushes its
    layers' scopes onto it, and on the training thread's own list they prefixed whatever that thread named
    meanwhile (the benchmark caught a model built then with variables `discriminator/discriminator/...`)."""
    if restore is None:
        return keras_private.keras_thread_state()
    keras_private.set_keras_thread_state(restore)
    return restore

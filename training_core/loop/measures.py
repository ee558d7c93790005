"""The measure in flight beside training: `metrics(ctx)` on a snapshot of the weights, in shadow models, on a
thread of its own (engine/beside.py), asked for by observers/health.py through the run's handle.

A measure beside training (engine/beside.py, asked for by observers/health.py) holds back the record's rows
of the steps after its snapshot until its values are in (loop/fetch.py), so that scalars.csv stays in step
order. Whatever must see every step up to now waits for the measure first (`collect_measure`): a checkpoint
(the record must hold every step it holds; one at the snapshot's own step need not wait: nothing of it is held),
a rollback, the end of the run, and the commands applied at a boundary (the batch before a change is reported
before the change's event, so the alarms tell the steps before it from those after). So does the loop when
`HOLD_MAX_STEPS` steps wait. Each of those waits at most one measure's time, and the health observer paces
measures (and keeps them clear of the periodic checkpoints) so that it is rare.
"""
from __future__ import annotations

from typing import Any, Callable

from training_core.loop.fetch import Fetcher


class Measures:
    """At most one measure in flight, and what to call with its result (on the training thread)."""

    def __init__(self, fetcher: Fetcher) -> None:
        self._fetcher = fetcher
        self._beside: Any = None  # engine.beside.MetricsBeside, once metrics(ctx) runs beside training
        self._done: Callable[[Any], None] | None = None  # what to call with the measure in flight, once done

    @property
    def step(self) -> int | None:
        """The step of the snapshot in flight (None: none)."""
        return None if self._beside is None else self._beside.step

    def shadow_models(self, prepared: Any) -> str | None:
        """Make the shadow models metrics(ctx) runs on beside training; None, or why they cannot be made."""
        from training_core.engine.beside import MetricsBeside
        if self._beside is None:
            try:
                got = MetricsBeside.create(prepared)
            except Exception as e:  # noqa: BLE001 - (the device's memory, ...): measured on this thread instead
                return f"the shadow models could not be made ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
            if isinstance(got, str):
                return got
            self._beside = got
        return None

    def start(self, step: int, done: Callable[[Any], None]) -> None:
        """Snapshot this step's weights for a measure on the metrics thread; `done(Measured)` is called on the
        training thread when its result is taken (`collect`), and the record holds back later steps until then."""
        if self._beside is None:
            raise RuntimeError("no shadow models: call shadow_models() first")
        self._beside.start(step)
        self._done = done
        self._fetcher.hold(step)

    def collect(self, wait: bool = False) -> bool:
        """Hand a finished measure to its `done` and let the steps it held back go on; `wait`: wait for it.
        Whether one was handed."""
        got = None if self._beside is None else self._beside.result(wait)
        if got is None:
            return False
        done, self._done = self._done, None
        try:
            if done is not None:
                done(got)
        finally:
            self._fetcher.release()
        return True

    def close(self) -> None:
        b, self._beside = self._beside, None
        if b is not None:
            b.close()
            self._fetcher.release()

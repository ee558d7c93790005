"""The measure in flight beside training: `metrics(ctx)` on a snapshot of the weights, in shadow models, on a
thread of its own (engine/beside.py), asked for by observers/health.py through the run's handle.

This is the one place that knows which measure is in flight (`step`): the health observer asks it whether to
collect, and the record (observers/record.py) holds back its rows of the steps after that one until the measure's
values are in, so that scalars.csv stays in step order. Nothing else waits: the alarms, the live views and the
command table get every batch as it is fetched.

Waiting for the measure (`collect(wait=True)`) is for what needs the record to hold every step up to now: a
checkpoint (one at the measure's own step does not wait: nothing of it is held back, and a resumed run measures
that step again when its record has no measure there, observers/health.py), a rollback, a run that reached its
step target (its last measure is worth its wait), and the loop when `HOLD_MAX_STEPS` steps wait
(loop/trainer.py). A Stop or an error does not wait: the measure is dropped (`close`), and the rows it held are
written with the `stop` event.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NamedTuple

if TYPE_CHECKING:
    from training_core.engine.beside import Measured, MetricsBeside


class InFlight(NamedTuple):
    step: int  # the step whose weights the snapshot holds
    on_result: "Callable[[Measured], None]"  # called on the training thread with its outcome


class Measures:
    """At most one measure in flight, and what to call with its result (on the training thread)."""

    def __init__(self) -> None:
        self._shadows: "MetricsBeside | None" = None  # once metrics(ctx) runs beside training
        self._in_flight: InFlight | None = None

    @property
    def step(self) -> int | None:
        """The step of the measure in flight (None: none)."""
        return None if self._in_flight is None else self._in_flight.step

    def shadow_models(self, prepared: Any) -> str | None:
        """Make the shadow models metrics(ctx) runs on beside training; None, or why they cannot be made."""
        from training_core.engine.beside import MetricsBeside
        if self._shadows is None:
            try:
                got = MetricsBeside.create(prepared)
            except Exception as e:  # noqa: BLE001 - (the device's memory, ...): measured on this thread instead
                return f"the shadow models could not be made ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
            if isinstance(got, str):
                return got
            self._shadows = got
        return None

    def start(self, step: int, on_result: "Callable[[Measured], None]") -> None:
        """Snapshot this step's weights for a measure on the metrics thread; `on_result(Measured)` is called on
        the training thread when its result is taken (`collect`)."""
        if self._shadows is None:
            raise RuntimeError("no shadow models: call shadow_models() first")
        if self._in_flight is not None:
            raise RuntimeError(f"a measure is in flight (step {self._in_flight.step})")
        self._in_flight = InFlight(step, on_result)  # (first: the metrics thread may read `step` at once)
        self._shadows.start(step)

    def collect(self, wait: bool = False) -> bool:
        """Hand a finished measure to its `on_result`; `wait`: wait for it. Whether one was handed."""
        if self._in_flight is None:
            return False
        got = self._shadows.result(wait)
        if got is None:
            return False
        on_result, self._in_flight = self._in_flight.on_result, None
        on_result(got)
        return True

    def close(self) -> None:
        """Drop the measure in flight, if any (its `on_result` is never called), and end the metrics thread."""
        shadows, self._shadows, self._in_flight = self._shadows, None, None
        if shadows is not None:
            shadows.close()

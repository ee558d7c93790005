"""Markers on a wall-time axis (runs/data.py `RunData.marker_time`, figures/data.py): a leak or a NaN is found
when its step's numbers are fetched, so its event's time is the report's, seconds after its step ran; drawn at
that time it sat to the right of the step it marks. It goes at its step's time now, interpolated from the loss
rows' (step, time), while a control keeps its own time. And a record cut back (a rollback, a resume) keeps its
markers' times: `cut_back` rebuilt them at time 0, the epoch, far left of the run on a time axis."""
from __future__ import annotations

import numpy as np
import pytest

from training_core import MetricsBatch, PhaseBlock
from training_core.base import events
from training_core.figures import FigureData, FigureSpec
from training_core.runs import RunData

T0 = 1e9


def _block(phase: str, steps: np.ndarray) -> PhaseBlock:
    n, r = len(steps), np.full((len(steps), 1), 1e-3)
    return PhaseBlock(phase, ("v",), steps, T0 + steps * 0.5, np.ones(n), r, r, r, np.zeros((n, 1), bool),
                      np.ones(n, bool))


def _store() -> tuple[RunData, events.Leak]:
    """D at steps 1, 4, 7, ..., G at 3, 6, 9, ... (step k ran at T0 + k/2 s), a freeze at step 5 and a leak at
    step 8 (no row of its own) reported at step 20, 30 s after the start."""
    store = RunData()
    store.add_event(events.Start(time=T0, phases=["D", "G"]))
    store.add_batch(MetricsBatch([_block("D", np.arange(1, 21, 3)), _block("G", np.arange(3, 21, 3))]))
    store.add_event(events.Freeze(step=5, time=T0 + 2.6, scopes=["g"]))
    leak = events.Leak(step=20, time=T0 + 30.0, at_step=8, variable="g/v", phase="G")
    store.add_event(leak)
    return store, leak


def test_a_leak_found_at_report_time_is_drawn_at_its_steps_time_on_a_time_axis():
    store, _ = _store()
    timed = FigureData.from_runs([("run", store)], FigureSpec(plots=["losses"], x_axis="time", markers=True))
    assert [(m[1], m[0]) for m in timed.markers] == [("freeze", pytest.approx(2.6)), ("leak", pytest.approx(4.0))]
    freeze, leak = store.markers
    assert (freeze.late, leak.late) == (False, True)
    assert store.marker_time(freeze) == T0 + 2.6 and store.marker_time(leak) == pytest.approx(T0 + 4.0)
    assert store.step_time(21) is None  # after the last row: not known yet (the marker keeps its own time)


def test_a_record_cut_back_keeps_its_markers_times():
    store, leak = _store()
    store.cut_back(20, through=leak)
    assert [(m.kind, m.time) for m in store.markers] == [("freeze", T0 + 2.6), ("leak", T0 + 30.0)]
    timed = FigureData.from_runs([("run", store)], FigureSpec(plots=["losses"], x_axis="time", markers=True))
    assert [m[0] for m in timed.markers] == [pytest.approx(2.6), pytest.approx(4.0)]

"""figures/frozen.py: the update plot's legend names a frozen stretch by what happened in that run (the gate's
leak, a monitor run's `trainable = False` that fit() ignored, exact freezing), not always by the gate."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from training_core import MetricsBatch, PhaseBlock
from training_core.base import events
from training_core.figures import FigureData, FigureSpec
from training_core.figures.frozen import (FROZEN_EXACT, FROZEN_LEAKING, FROZEN_MOVED, NOT_TRAINABLE_EXACT,
                                          NOT_TRAINABLE_MOVED)
from training_core.runs import RunData, read_run

PATHS = ("discriminator/h1/kernel", "discriminator/h1/bias", "generator/h1/kernel", "generator/h1/bias")


def run_with_frozen(moved: float, monitor: str = "", method: str = "exact", freeze: tuple[str, ...] = (),
                    start: bool = True) -> RunData:
    """40 steps; the discriminator counts as frozen from step 21, its records `moved` there (0: still)."""
    store = RunData()
    store.monitor = monitor
    if start:
        store.add_event(events.Start(step=0, phases=["D"], phase_variables={"D": list(PATHS)}, method=method,
                                     freeze=list(freeze)))
    n, steps = 40, np.arange(1, 41, dtype=np.int64)
    frozen = np.zeros((n, 4), bool)
    frozen[20:, :2] = True
    ratio = np.where(frozen, moved, 1e-3)
    store.add_batch(MetricsBatch([PhaseBlock("D", PATHS, steps, steps * 0.1, np.linspace(2, 1, n), ratio * 10,
                                             ratio, ratio * 100, frozen, np.ones(n, bool))]))
    return store


def frozen_label(store: RunData, runs: int = 1) -> str:
    data = FigureData.from_runs([(f"run{i}", store) for i in range(runs)], FigureSpec(plots=["updates"]))
    got = [e.label for e in data.plots[0].legend if e.frozen]
    assert len(got) == 1
    return got[0]


@pytest.mark.parametrize("runs", [1, 2])
@pytest.mark.parametrize("moved, monitor, method, freeze, start, expected", [
    (3e-3, "fit", "exact", (), True, NOT_TRAINABLE_MOVED),  # the keras.io GAN's discriminator.trainable = False
    (0.0, "fit", "exact", (), True, NOT_TRAINABLE_EXACT),
    (3e-3, "loop", "exact", ("discriminator",), True, FROZEN_MOVED),  # declared frozen, moved by the loop
    (0.0, "loop", "exact", ("discriminator",), True, FROZEN_EXACT),  # run.apply_gradients froze it exactly
    (3e-3, "", "gate", (), True, FROZEN_LEAKING),  # the gate: momentum and decay move it
    (0.0, "", "exact", (), True, FROZEN_EXACT),
    (3e-3, "", "exact", (), False, FROZEN_LEAKING),  # no start event: as before
])
def test_the_frozen_entry_says_what_happened_in_that_run(runs, moved, monitor, method, freeze, start, expected):
    assert frozen_label(run_with_frozen(moved, monitor, method, freeze, start), runs) == expected


def test_a_gate_chosen_after_the_start_is_still_the_gate():
    store = run_with_frozen(3e-3)
    assert frozen_label(store) == FROZEN_MOVED
    store.add_event(events.Method(step=30, method="gate"))
    assert frozen_label(store) == FROZEN_LEAKING


def test_overlaid_runs_whose_moves_differ_name_no_single_cause():
    a, b = run_with_frozen(3e-3, "fit"), run_with_frozen(3e-3, "", "gate")
    data = FigureData.from_runs([("fit", a), ("gate", b)], FigureSpec(plots=["updates"]))
    labels = [e.label for e in data.plots[0].legend if e.frozen]
    assert labels == ["frozen (ΔW ≠ 0: a leak)"]


def test_a_variable_never_trainable_in_a_monitor_run_is_named_so_in_the_tree():
    store = RunData()
    store.monitor = "fit"
    steps = np.arange(1, 11, dtype=np.int64)
    frozen = np.zeros((10, 4), bool)
    frozen[:, :2] = True
    v = np.full((10, 4), 1e-3)
    store.add_batch(MetricsBatch([PhaseBlock("D", PATHS, steps, steps * 1.0, np.ones(10), v, v, v, frozen,
                                             np.ones(10, bool))]))
    labels = [e.label for e in FigureData.from_store(store, FigureSpec(plots=["updates"])).plots[0].legend]
    # it moved all the same (1e-3 a step): named as the window names it, not a bare "(not trainable)"
    assert "discriminator/h1 — not trainable (moved: a leak)" in labels and not any("frozen" in t for t in labels)
    still = RunData()
    still.monitor = "fit"
    v = np.where(frozen, 0.0, v)
    still.add_batch(MetricsBatch([PhaseBlock("D", PATHS, steps, steps * 1.0, np.ones(10), v, v, v, frozen,
                                             np.ones(10, bool))]))
    labels = [e.label for e in FigureData.from_store(still, FigureSpec(plots=["updates"])).plots[0].legend]
    assert "discriminator/h1 (not trainable)" in labels


def test_reading_a_record_learns_whether_the_monitor_recorded_it(tmp_path: Path):
    for kind in ("fit", ""):
        d = tmp_path / (kind or "trainer")
        d.mkdir()
        (d / "config.toml").write_text(f'monitor = "{kind}"\n' if kind else "steps = 10\n")
        (d / "events.jsonl").write_text(json.dumps({"step": 0, "kind": "start", "time": 1.0, "phases": ["D"]}) + "\n")
        (d / "scalars.csv").write_text("step,wall_time,tag,value\n1,1.0,loss/D,0.5\n")
        assert read_run(d).monitor == kind

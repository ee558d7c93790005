"""The update plot's refresh with 6 of its 12 variables frozen against none frozen: what a frozen stretch costs
a window tick (issue 26). A variable with frozen records has a second curve (app/plots/update_stretches.py);
each tick handed both curves their points, though a frozen variable's trained curve only gained gaps (NaN) and
a trained one's frozen curve too. `VarCurve.draw` now skips a curve that gained no drawable point.

Four plots panels on the real widgets, fed the same synthetic records (12 variables, D and G alternating, 50
records of each variable a tick): none frozen and the generator's 6 frozen, each drawn by today's `draw`
("after") and by the one before the skip ("before", kept here as `draw_before`), their ticks interleaved in a
rotating order so that whatever else the machine does weighs on all four alike. A tick is the panel's refresh
and its paint; the median of the ticks after the first `WARMUP` is reported, and the ratio of frozen to none
frozen for each `draw` (the goal: within 1.05x).

`python -m bench.frozen_window --runs 3` prints each run's hour, load and table, then the ratios' spread."""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.window_bench import qapp  # noqa: E402

WARMUP = 20
PATHS = {"D": tuple(f"discriminator/{layer}/{leaf}" for layer in ("dense_1", "dense_2", "out")
                    for leaf in ("kernel", "bias")),
         "G": tuple(f"generator/{layer}/{leaf}" for layer in ("dense_1", "dense_2", "out") for leaf in ("kernel", "bias"))}


def draw_before(self, grown: bool) -> None:
    """`VarCurve.draw` as it was before the skip (commit a53b9bf): every curve handed its points every tick."""
    x = self.x.view()
    self.curve.setData(x, self.log.view() if self.trained_y is None else self.trained_y.view(), grown=grown)
    if self.frozen_curve is not None:
        if self.frozen_y is None:
            self.frozen_curve.setData([], [])
        else:
            self.frozen_curve.setData(x, self.frozen_y.view(), grown=grown)


def _batch(first: int, records: int, frozen_g: bool, rng: np.random.Generator):
    """2 * `records` steps from `first`, D and G alternating, a record of every variable at each of its steps;
    G's variables frozen (exact zeros) if `frozen_g`."""
    from training_core import MetricsBatch, PhaseBlock
    blocks = []
    for k, (phase, names) in enumerate(PATHS.items()):
        steps = np.arange(first + k, first + 2 * records, 2)
        v = len(names)
        ratio = np.tile(np.logspace(-4, -2, v), (len(steps), 1)) * rng.lognormal(0, 0.3, (len(steps), v))
        frozen = np.full((len(steps), v), frozen_g and phase == "G")
        ratio = np.where(frozen, 0.0, ratio)
        blocks.append(PhaseBlock(phase, names, steps, time.time() + steps * 1e-3, np.ones(len(steps)), ratio * 10,
                                 ratio, ratio * 100, frozen, np.ones(len(steps), bool)))
    return MetricsBatch(blocks)


class _Panel:
    def __init__(self, frozen: bool, before: bool) -> None:
        from app.plots import PlotsPanel
        from training_core.base import events
        from training_core.runs import RunData
        self.app, self.frozen, self.before = qapp(), frozen, before
        self.data = RunData()
        if frozen:
            self.data.add_event(events.Freeze(step=0, scopes=["generator"]))
        self.panel = PlotsPanel(self.data)
        self.panel.resize(1100, 800)
        self.panel.show()
        self.rng = np.random.default_rng(0)
        self.step = 1
        self.ms: list[float] = []

    def tick(self, records: int, counted: bool) -> None:
        from app.plots.update_stretches import VarCurve
        self.data.add_batch(_batch(self.step, records, self.frozen, self.rng))
        self.step += 2 * records
        today = VarCurve.draw
        if self.before:
            VarCurve.draw = draw_before
        try:
            t0 = time.perf_counter()
            self.panel.refresh()
            self.panel.repaint()
            dt = time.perf_counter() - t0
        finally:
            VarCurve.draw = today
        self.app.processEvents()
        if counted:
            self.ms.append(dt * 1e3)

    def close(self) -> float:
        self.panel.close()
        return statistics.median(self.ms)


def measure(ticks: int = 200, records: int = 50) -> dict[str, float]:
    """Median ms per tick of the four panels, and frozen / none frozen for each `draw`."""
    panels = {(f, b): _Panel(f, b) for b in (True, False) for f in (False, True)}
    order = list(panels)
    for tick in range(ticks):
        for key in order[tick % 4:] + order[:tick % 4]:
            panels[key].tick(records, tick >= WARMUP)
    ms = {key: p.close() for key, p in panels.items()}
    return {"before_none": ms[(False, True)], "before_frozen": ms[(True, True)], "after_none": ms[(False, False)],
            "after_frozen": ms[(True, False)], "before_ratio": ms[(True, True)] / ms[(False, True)],
            "after_ratio": ms[(True, False)] / ms[(False, False)]}


def main() -> int:
    quick = "--quick" in sys.argv
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 1
    rs = []
    for k in range(runs):
        hour, load = time.strftime("%H:%M:%S", time.gmtime()), os.getloadavg()[0]
        r = measure(WARMUP + 5 if quick else 200)
        rs.append(r)
        print(f"run {k + 1} of {runs}, {hour} UTC, load {load:.1f}")
        print("| draw (median ms per tick) | none frozen | 6 of 12 frozen | frozen / none |")
        print("| --- | --- | --- | --- |")
        for name in ("before", "after"):
            print(f"| {name} | {r[name + '_none']:.2f} | {r[name + '_frozen']:.2f} | {r[name + '_ratio']:.3f} |")
    if runs > 1:
        for name in ("before", "after"):
            xs = [r[name + "_ratio"] for r in rs]
            print(f"{name}: ratios {', '.join(f'{x:.3f}' for x in xs)}; median {statistics.median(xs):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

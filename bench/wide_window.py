"""The window's periodic refresh with 500 variables against 12: what each 25 Hz tick that brought data
costs the GUI thread, by part (the scope tree's states and values, the plots, one paint), measured on
the real widgets with the same synthetic batches for both sizes, in the same run, ticks interleaved. The
goal (issue 26): a 500-variable tick within 1.2x of a 12-variable one. The 500-variable
model is bench/wide_gan.py's shape (2 models × 125 layers × kernel and bias), drawn as the heat map
(above 48 variables); the 12-variable one is the ring's, drawn as curves.

`python bench/wide_window.py` prints the table; bench/run.py adds its summary row."""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.window_bench import qapp  # noqa: E402


def _variables(layers: int) -> list:
    from training_core import VarInfo
    return [VarInfo(f"{model}/dense_{i}/{leaf}", (64, 64) if leaf == "kernel" else (64,), "float32", True)
            for model in ("generator", "discriminator") for i in range(layers) for leaf in ("kernel", "bias")]


def _batch(paths: dict[str, tuple[str, ...]], first: int, n: int, rng: np.random.Generator):
    """n steps from `first`, D and G alternating, per-variable records every 25th step of a phase."""
    from training_core import MetricsBatch, PhaseBlock
    blocks = []
    for k, (phase, names) in enumerate(paths.items()):
        steps = np.arange(first + k, first + n, 2)
        v = len(names)
        ratio = np.tile(np.logspace(-4, -2, v), (len(steps), 1)) * rng.lognormal(0, 0.3, (len(steps), v))
        frozen = np.zeros((len(steps), v), bool)
        blocks.append(PhaseBlock(phase, names, steps, time.time() + steps * 1e-3, np.ones(len(steps)), ratio * 10,
                                 ratio, ratio * 100, frozen, (np.arange(len(steps)) % 25) == 0))
    return MetricsBatch(blocks)


class _Window:
    """The scope tree and the plots panel of one model size, fed the same synthetic batches."""

    def __init__(self, layers: int) -> None:
        from app.panels import ScopeTree
        from app.plots import PlotsPanel
        from training_core import build_scope_tree
        from training_core.runs import RunData, VariableStates
        self.app = qapp()
        self.variables = _variables(layers)
        tree_model = build_scope_tree(self.variables)
        self.paths = {"D": tuple(v.path for v in self.variables if v.path.startswith("discriminator/")),
                      "G": tuple(v.path for v in self.variables if v.path.startswith("generator/"))}
        self.data = RunData()
        self.tree = ScopeTree()
        self.tree.set_tree(tree_model)
        self.tree.resize(430, 500)
        self.tree.show()
        self.panel = PlotsPanel(self.data)
        self.panel.resize(1100, 800)
        self.panel.show()
        self.states = VariableStates(tree_model)
        self.rng = np.random.default_rng(0)
        self.step = 1
        self.parts: dict[str, list[float]] = {"states": [], "tree": [], "plots": [], "paint": []}

    def tick(self, steps: int, counted: bool) -> None:
        self.data.add_batch(_batch(self.paths, self.step, steps, self.rng))
        self.step += steps
        t0 = time.perf_counter()
        self.states.update(self.data)
        t1 = time.perf_counter()
        self.tree.show_states(self.states.states)
        t2 = time.perf_counter()
        self.panel.refresh()
        t3 = time.perf_counter()
        self.panel.repaint()
        self.tree.repaint()
        t4 = time.perf_counter()
        self.app.processEvents()
        if counted:
            for name, dt in zip(self.parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                self.parts[name].append(dt * 1e3)

    def result(self) -> dict:
        out = {name: statistics.median(v) for name, v in self.parts.items()}
        out["variables"] = len(self.variables)
        out["heat_map"] = self.panel.update_views.showing_heat
        self.panel.close()
        self.tree.close()
        return out


def measure(ticks: int = 30, steps_per_tick: int = 200) -> dict:
    """Both sizes in one run, their ticks interleaved (small, wide, small, ...) so that whatever else the
    machine does weighs on both alike: 12 variables (the ring's count) and 500 (bench/wide_gan.py's). Each
    part's median ms per tick with data; the first 3 ticks (building things) are not counted."""
    small, wide = _Window(3), _Window(125)
    for tick in range(ticks + 3):
        for w in (small, wide):
            w.tick(steps_per_tick, tick >= 3)
    small_r, wide_r = small.result(), wide.result()
    total = {k: sum(d[p] for p in ("states", "tree", "plots", "paint")) for k, d in (("small", small_r),
                                                                                    ("wide", wide_r))}
    return {"small": small_r, "wide": wide_r, "total_small_ms": total["small"], "total_wide_ms": total["wide"],
            "ratio": total["wide"] / total["small"]}


def main() -> int:
    """`--runs N`: N measures one after another, each with its hour and load, and their median ratio (the
    machine is shared: one run's ratio says little)."""
    quick = "--quick" in sys.argv
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 1
    ratios = []
    for k in range(runs):
        hour, load = time.strftime("%H:%M:%S", time.gmtime()), os.getloadavg()[0]
        r = measure(5 if quick else 30)
        ratios.append(r["ratio"])
        print(f"run {k + 1} of {runs}, {hour} UTC, load {load:.1f}")
        print("| part (median ms per tick with data) | 12 variables | 500 variables | ratio |")
        print("| --- | --- | --- | --- |")
        for part in ("states", "tree", "plots", "paint"):
            a, b = r["small"][part], r["wide"][part]
            print(f"| {part} | {a:.2f} | {b:.2f} | {b / a:.2f} |")
        print(f"| whole tick | {r['total_small_ms']:.2f} | {r['total_wide_ms']:.2f} | {r['ratio']:.2f} |")
        print(f"(500 variables drawn as {'the heat map' if r['wide']['heat_map'] else 'curves'})")
    if runs > 1:
        print(f"ratios {', '.join(f'{x:.2f}' for x in ratios)}; median {statistics.median(ratios):.2f}; "
              f"within 1.2x in {sum(x <= 1.2 for x in ratios)} of {runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

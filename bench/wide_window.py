"""The window's periodic refresh with 500 variables against 12: what each 25 Hz tick that brought data
costs the GUI thread, by part (the scope tree's states and values, the plots, one paint), measured on
the real widgets with the same synthetic batches for both sizes, in the same run. The 500-variable
model is bench/wide_gan.py's shape (2 models × 125 layers × kernel and bias), drawn as the heat map
(above 48 variables); the 12-variable one is the ring's, drawn as curves.

`python bench/wide_window.py` prints the table; bench/run.py adds its summary row."""
from __future__ import annotations

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


def measure_size(layers: int, ticks: int, steps_per_tick: int = 200) -> dict:
    """Median ms per tick of each part, for a model of 2 × `layers` layers (4 × `layers` variables)."""
    from app.panels import ScopeTree
    from app.plots import PlotsPanel
    from training_core import build_scope_tree
    from training_core.runs import RunData, VariableStates
    app = qapp()
    variables = _variables(layers)
    tree_model = build_scope_tree(variables)
    paths = {"D": tuple(v.path for v in variables if v.path.startswith("discriminator/")),
             "G": tuple(v.path for v in variables if v.path.startswith("generator/"))}
    data = RunData()
    tree = ScopeTree()
    tree.set_tree(tree_model)
    tree.resize(430, 500)
    tree.show()
    panel = PlotsPanel(data)
    panel.resize(1100, 800)
    panel.show()
    states = VariableStates(tree_model)
    rng = np.random.default_rng(0)
    parts: dict[str, list[float]] = {"states": [], "tree": [], "plots": [], "paint": []}
    step = 1
    for tick in range(ticks + 3):  # the first ticks build things: not counted
        data.add_batch(_batch(paths, step, steps_per_tick, rng))
        step += steps_per_tick
        t0 = time.perf_counter()
        states.update(data)
        t1 = time.perf_counter()
        tree.show_states(states.states)
        t2 = time.perf_counter()
        panel.refresh()
        t3 = time.perf_counter()
        panel.repaint()
        tree.repaint()
        t4 = time.perf_counter()
        app.processEvents()
        if tick >= 3:
            for name, dt in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                parts[name].append(dt * 1e3)
    out = {name: statistics.median(v) for name, v in parts.items()}
    out["variables"] = len(variables)
    out["heat_map"] = panel.update_views.showing_heat
    panel.close()
    tree.close()
    return out


def measure(ticks: int = 30) -> dict:
    """Both sizes in one run: 12 variables (the ring's count) and 500 (bench/wide_gan.py's)."""
    small, wide = measure_size(3, ticks), measure_size(125, ticks)
    total = {k: sum(d[p] for p in ("states", "tree", "plots", "paint")) for k, d in (("small", small), ("wide", wide))}
    return {"small": small, "wide": wide, "total_small_ms": total["small"], "total_wide_ms": total["wide"],
            "ratio": total["wide"] / total["small"]}


def main() -> int:
    quick = "--quick" in sys.argv
    r = measure(5 if quick else 30)
    print("| part (median ms per tick with data) | 12 variables | 500 variables | ratio |")
    print("| --- | --- | --- | --- |")
    for part in ("states", "tree", "plots", "paint"):
        a, b = r["small"][part], r["wide"][part]
        print(f"| {part} | {a:.2f} | {b:.2f} | {b / a:.1f} |")
    print(f"| whole tick | {r['total_small_ms']:.2f} | {r['total_wide_ms']:.2f} | {r['ratio']:.1f} |")
    print(f"(500 variables drawn as {'the heat map' if r['wide']['heat_map'] else 'curves'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A figure's numbers: a snapshot of a `RunData`, smoothed once, shared by the drawing and the CSV.

Qt-free, so the window's exporter, the headless `--export` and a future review read one model: the
painter (app/export/figure.py) only draws these `Curve`s and `LegendEntry`s, and the CSV writer
writes the very same ones, so the file holds exactly the curves and the smoothing of the figure.
Exporting never touches the trainer: it copies arrays the window's `RunData` already holds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..scopes import in_scope
from ..smoothing import ema_smooth
from .spec import FigureSpec

if TYPE_CHECKING:
    from ..runs import RunData

REFERENCE_RATIO = 1e-3  # the usual healthy ‖ΔW‖/‖W‖ per step (Karpathy's rule of thumb)

#: dash patterns (in pen widths) for the leaves of a scope: kernel solid, bias dashed, ...; a curve
#: names one by index (`Curve.dash`), and the legend carries the pattern itself
DASHES: list[list[float] | None] = [None, [4.0, 2.5], [5.0, 2.0, 1.0, 2.0], [1.0, 1.8]]


@dataclass
class Curve:
    tag: str  # as in scalars.csv: loss/D, update_ratio/generator/dense_1/kernel, ...
    steps: np.ndarray
    wall: np.ndarray
    values: np.ndarray
    smoothed: np.ndarray
    colour: int  # palette index
    dash: int = 0  # index into DASHES
    frozen: np.ndarray | None = None  # per point: the variable was frozen (drawn grey, dotted)


@dataclass
class LegendEntry:
    label: str
    colour: int | str | None  # palette index, "fg" / "muted", or None for a header (no line sample)
    dash: list[float] | None = None
    frozen: bool = False


@dataclass
class PlotData:
    name: str
    curves: list[Curve]
    legend: list[LegendEntry]
    log_y: bool = False
    reference: float | None = None  # dashed horizontal line

    @property
    def empty(self) -> bool:
        return not any(len(c.steps) for c in self.curves)


@dataclass
class FigureData:
    plots: list[PlotData]
    markers: list[tuple[int, str, str]] = field(default_factory=list)  # (step, kind, label)
    last_step: int = 0

    @classmethod
    def from_store(cls, store: "RunData", spec: FigureSpec) -> "FigureData":
        """Copy what `spec` shows out of `store` (every marker the store has, once per step and label)."""
        plots = [_losses(store, spec) if name == "losses" else _updates(store, spec) for name in spec.plots]
        seen, markers = set(), []
        for m in list(store.markers):
            key = (int(m.step), m.label)
            if key not in seen:
                seen.add(key)
                markers.append((int(m.step), m.kind, m.label))
        return cls(plots, markers, int(store.last_step))


def _curve(tag: str, series: tuple, weight: float, colour: int, dash: int = 0,
           frozen: np.ndarray | None = None) -> Curve:
    steps, wall, values = (np.array(a, copy=True) for a in series)
    values = values.astype(np.float64)
    smoothed, _ = ema_smooth(values, weight)
    return Curve(tag, steps, wall, values, smoothed, colour, dash,
                 None if frozen is None else np.array(frozen, dtype=bool, copy=True))


def _losses(store: "RunData", spec: FigureSpec) -> PlotData:
    curves, legend = [], []
    for i, phase in enumerate(store.phases):
        curves.append(_curve(f"loss/{phase}", store.loss(phase), spec.smoothing, i))
        legend.append(LegendEntry(phase, i))
    return PlotData("losses", curves, legend)


def _updates(store: "RunData", spec: FigureSpec) -> PlotData:
    """One curve per variable, coloured by its parent scope and dashed by its leaf name.

    With two or more leaves per scope (kernel, bias) the legend lists scopes (colours) and leaves
    (dash styles) separately, and scopes as a tree under their top-level name: short labels that
    fit beside the plot in a journal column instead of 12 long paths. Variables frozen for the whole
    run appear in their place in the tree, grey and dotted like their curves.
    """
    kind = spec.update_kind
    paths = [p for p in store.var_paths if not spec.variables or any(in_scope(p, s) for s in spec.variables)]
    frozen = {p: np.asarray(store.frozen_series(p), dtype=bool) for p in paths}
    always = {p for p in paths if len(frozen[p]) and frozen[p].all()}
    live = [p for p in paths if p not in always]
    parents = list(dict.fromkeys(_split(p)[0] for p in live))
    leaves = list(dict.fromkeys(_split(p)[1] for p in live))
    per_variable = len(parents) == len(live)  # one variable per scope: colour each, name it in full
    units = live if per_variable else parents
    curves, items = [], {}
    for p in paths:
        parent, leaf = _split(p)
        if p in always:
            whole = all(q in always for q in paths if _split(q)[0] == parent)
            unit = parent if whole and not per_variable else p
            items.setdefault(unit, (unit, "muted", True))
            curves.append(_curve(f"{kind}/{p}", store.var_series(p, kind), spec.smoothing, 0, 0, frozen[p]))
            continue
        unit = p if per_variable else parent
        colour = units.index(unit)
        dash = 0 if per_variable else leaves.index(leaf) % len(DASHES)
        items.setdefault(unit, (unit, colour, False))
        curves.append(_curve(f"{kind}/{p}", store.var_series(p, kind), spec.smoothing, colour, dash, frozen[p]))
    legend = _tree(list(items.values()))
    if not per_variable and len(leaves) > 1:
        legend += [LegendEntry(leaf, "fg", DASHES[i % len(DASHES)]) for i, leaf in enumerate(leaves)]
    if any(frozen[p].any() for p in live):
        legend.append(LegendEntry("frozen (ΔW = 0)", "muted", frozen=True))
    reference = REFERENCE_RATIO if kind == "update_ratio" else None
    if reference is not None:
        legend.append(LegendEntry("10⁻³ reference", "muted", [3.0, 2.0]))
    return PlotData("updates", curves, legend, log_y=True, reference=reference)


def _tree(items: list[tuple[str, int | str, bool]]) -> list[LegendEntry]:
    """Entries under a header per top-level scope when that saves width (several entries per head)."""
    heads = [u.partition("/")[0] for u, _, _ in items]
    use_tree = all("/" in u for u, _, _ in items) and len(set(heads)) < len(items)
    out, current = [], None
    for (unit, colour, is_frozen), head in zip(items, heads):
        label = unit.partition("/")[2] if use_tree else unit
        if use_tree and head != current:
            out.append(LegendEntry(head, None))
            current = head
        out.append(LegendEntry(label + (" (frozen)" if is_frozen else ""), colour, frozen=is_frozen))
    return out


def _split(path: str) -> tuple[str, str]:
    """(parent scope, leaf name): generator/dense_1/kernel -> (generator/dense_1, kernel)."""
    parent, sep, leaf = path.rpartition("/")
    return (parent, leaf) if sep else (path, "")

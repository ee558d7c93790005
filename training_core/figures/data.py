"""A figure's numbers: a snapshot of one or several `RunData`, smoothed once, shared by the drawing and
the CSV.

Qt-free, so the window's exporter, the headless `--export` and review read one model: the painter
(app/export/figure.py) only draws these `Curve`s and `LegendEntry`s, and the CSV writer writes the
very same ones, so the file holds exactly the curves and the smoothing of the figure. Exporting never
touches the trainer: it copies arrays the window's `RunData` already holds.

Several runs overlay: by default colour names the run and line style the phase (or the variable),
`colour_by="phase"` swaps the two; the figure's legend (`run_legend`) names each run once by its label (its
directory name unless the user typed another), and each panel's legend only what that panel draws (the same
run legend under three panels was three times the ink for one fact). With `bands`, seeds of one setting are
one entity: one mean line and band, one name (figures/bands.py). The x axis is the step, or the time since
each run began (`x_axis="time"`), so runs of different speed can be compared as they ran, or one phase's steps
so far (`x_axis="G"`): GAN papers count generator iterations, and at 5:1 step 600 is G's 100th. Every point
(a D loss too) is drawn at the number of that phase's steps done by its step, so D's five losses between two
G steps stand at one x, as they were measured at that G iteration.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np

from training_core.base.scopes import in_scope
from training_core.base.smoothing import ema_smooth
from training_core.figures.bands import SPREAD_TEXT, Entity, band_curve, entities, seed_groups
from training_core.figures.curves import DASHES, N_COLOURS, Curve, LegendEntry, PlotData
from training_core.figures.frozen import frozen_entry, frozen_label, moved_while_frozen, step_x
from training_core.figures.markers import MarkerLine, entity_markers, figure_markers
from training_core.base.errors import UserError
from training_core.figures.metric_groups import band_edges, metric_groups, wants_log
from training_core.figures.spec import PHASE_UNIT, X_AXES, FigureSpec, marker_kinds
from training_core.figures.styles import leaves_of, split_path, variable_styles
from training_core.runs.heat import scope_order

if TYPE_CHECKING:
    from training_core.runs import RunData

REFERENCE_RATIO = 1e-3  # the usual healthy ‖ΔW‖/‖W‖ per step (Karpathy's rule of thumb)
METRIC_PREFIX = "metric/"
NO_UPDATE_NOTE = "0 = no update (not frozen)"


@dataclass
class FigureData:
    plots: list[PlotData]
    markers: list[MarkerLine] = field(default_factory=list)  # (x, kind, label), the chosen kinds only
    last_step: int = 0
    runs: list[str] = field(default_factory=list)  # the legend's names (runs, or groups of seeds), in drawing order
    x_unit: str = "step"  # step, s, min or h
    #: the runs (or groups) named once for the whole figure, not in every panel; empty for one run
    run_legend: list[LegendEntry] = field(default_factory=list)

    @classmethod
    def from_store(cls, store: "RunData", spec: FigureSpec, label: str = "") -> "FigureData":
        """One run (every marker it has, once per step and label)."""
        return cls.from_runs([(label or _dir_label(store), store)], spec)

    @classmethod
    def from_runs(cls, runs: Sequence[tuple[str, "RunData"]], spec: FigureSpec,
                  groups: Sequence[Sequence[int]] | None = None, names: Sequence[str] | None = None) -> "FigureData":
        """Several runs overlaid, each named by its label; with `spec.bands` the runs of one setting (`groups`
        of indices into `runs`, by default their configurations' settings) as one mean line and a band,
        named by `names` (by default what their labels share)."""
        runs = list(runs)
        clock = _Clock(runs, spec.x_axis)
        if spec.bands == "off":
            groups = None
        elif groups is None:
            groups = seed_groups(runs)
        ents = entities(runs, groups, names)
        shown = [(e.label, e.store) for e in ents]
        plots: list[PlotData] = []
        for name in spec.plots:
            if name == "losses":
                plots.append(_losses(shown, spec, clock))
            elif name == "updates":
                plots.append(_updates(shown, spec, clock))
            else:
                plots += _metrics(shown, spec, clock)
        if any(len(e.members) > 1 for e in ents):
            _as_bands(plots, ents, spec, clock)
        kinds = marker_kinds(spec.markers)
        per_entity = [entity_markers(e.members, clock.marker_x, kinds) for e in ents]
        return cls(plots, figure_markers(per_entity, [e.label for e in ents]),
                   max((int(s.last_step) for _, s in runs), default=0), [e.label for e in ents], clock.unit,
                   _run_legend(ents, spec))


def _as_bands(plots: list[PlotData], ents: list[Entity], spec: FigureSpec, clock: "_Clock") -> None:
    """Each curve of a group of seeds replaced by their mean line and band."""
    by_label = {e.label: e for e in ents}
    for plot in plots:
        weight = 0.0 if plot.name.startswith(METRIC_PREFIX) else spec.smoothing
        seeds = [c.run in by_label and len(by_label[c.run].members) > 1 for c in plot.curves]
        plot.curves = [band_curve(c, by_label[c.run], spec.bands, weight, clock.x) if s else c
                       for c, s in zip(plot.curves, seeds)]
        if plot.name.startswith(METRIC_PREFIX) and any(seeds):  # a band is the seeds' spread now, never a std
            plot.legend = [e for e in plot.legend if not e.band]
            for c, s in zip(plot.curves, seeds):
                if not s:
                    c.low = c.high = None


def _run_legend(ents: list[Entity], spec: FigureSpec) -> list[LegendEntry]:
    """The runs (or groups) by colour, or by line style with `colour_by="phase"`; and, when seeds are drawn as
    bands, what the lines and bands are."""
    out = []
    if len(ents) > 1:
        for i, e in enumerate(ents):
            look = (i, None) if spec.colour_by == "run" else ("fg", DASHES[i % len(DASHES)])
            out.append(LegendEntry(e.label, look[0], look[1], band=len(e.members) > 1))
    seeds = sorted({len(e.members) for e in ents if len(e.members) > 1})
    if seeds:
        n = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"
        out.append(LegendEntry(f"line: mean of {n} seeds, band: {SPREAD_TEXT[spec.bands]}", None))
    return out


def metric_tags(runs: Sequence[tuple[str, "RunData"]]) -> list[str]:
    """Every `metric/<name>` any of the runs recorded, in order of first appearance."""
    return list(dict.fromkeys(t for _, s in runs for t in s.scalar_tags if t.startswith(METRIC_PREFIX)))


def _dir_label(store: "RunData") -> str:
    return store.run_dir.name if store.run_dir is not None else "run"


class _Clock:
    """Step, seconds since each run began scaled to s/min/h for the whole figure, or one phase's steps."""

    def __init__(self, runs: Sequence[tuple[str, "RunData"]], axis: str) -> None:
        self.axis = axis
        self.t0 = {id(s): s.start_time() for _, s in runs}
        self.unit, self.scale = "step", 1.0
        self._counted: dict[int, np.ndarray] = {}  # a phase's axis: each run's steps of that phase, in order
        if axis == "time":
            span = max((_wall_span(s, self.t0[id(s)]) for _, s in runs), default=0.0)
            self.unit, self.scale = ("h", 3600.0) if span > 7200 else ("min", 60.0) if span > 600 else ("s", 1.0)
        elif axis not in X_AXES:
            for label, s in runs:
                if axis not in s.phases:
                    raise UserError(f"x axis {axis!r} is not a phase of {label} (its phases: {', '.join(s.phases)}); "
                                    f"choose step, time or one of its phases")
                self._counted[id(s)] = np.asarray(s.loss(axis)[0])
            self.unit = PHASE_UNIT + axis

    def _count(self, store: "RunData", steps: np.ndarray) -> np.ndarray:
        """How many of the phase's steps were done by each step (that step included)."""
        return np.searchsorted(self._counted[id(store)], np.asarray(steps), side="right").astype(np.float64)

    def x(self, store: "RunData", steps: np.ndarray, wall: np.ndarray) -> np.ndarray:
        if self._counted:
            return self._count(store, steps)
        if self.axis != "time":
            return np.asarray(steps).astype(np.float64)
        return (np.asarray(wall, dtype=np.float64) - self.t0[id(store)]) / self.scale

    def marker_x(self, store: "RunData", m) -> float:
        if self._counted:
            return float(self._count(store, np.asarray([m.step]))[0])
        return float(m.step) if self.axis != "time" else (store.marker_time(m) - self.t0[id(store)]) / self.scale


def _wall_span(store: "RunData", t0: float) -> float:
    lasts = [store.series(t)[1][-1:] for t in store.scalar_tags]
    return max((float(w[0]) - t0 for w in lasts if len(w)), default=0.0)


def _curve(tag: str, series: tuple, weight: float, colour: int, dash: int = 0, frozen: np.ndarray | None = None,
           run: str = "", x: np.ndarray | None = None) -> Curve:
    steps, wall, values = (np.array(a, copy=True) for a in series)
    values = values.astype(np.float64)
    smoothed, _ = ema_smooth(values, weight)
    return Curve(tag, steps, wall, values, smoothed, colour, dash,
                 None if frozen is None else np.array(frozen, dtype=bool, copy=True), run, x)


def _stepped(curve: Curve, store: "RunData", clock: _Clock) -> Curve:
    """`curve` with the x of each change of frozen state, where the painter draws it as a step: at the freeze's
    step, as the window does (figures/frozen.py `freeze_at`)."""
    curve.step_x = step_x(store, curve.steps, curve.wall, curve.frozen, clock.x)
    return curve


def _pair(run: int, item: int, spec: FigureSpec) -> tuple[int, int]:
    """(colour, dash) of a curve in an overlay of several runs."""
    return (run, item % len(DASHES)) if spec.colour_by == "run" else (item, run % len(DASHES))


def _overlay_legend(items: list[str], spec: FigureSpec) -> list[LegendEntry]:
    """A panel's own entries in an overlay: its items (phases, variables) by line style, or by colour with
    `colour_by="phase"`; the runs are named once for the figure (`_run_legend`)."""
    if spec.colour_by == "run":
        return [LegendEntry(name, "fg", DASHES[i % len(DASHES)]) for i, name in enumerate(items)] if len(items) > 1 \
            else []
    return [LegendEntry(name, i) for i, name in enumerate(items)]


def overlay_problem(n_items: int, spec: FigureSpec) -> str:
    """'' if `n_items` variables of each run get looks of their own in an overlay, else the one line that
    says they do not and how to choose fewer (as the window says: its legend gives up the same way)."""
    limit, look = (len(DASHES), "line styles") if spec.colour_by == "run" else (N_COLOURS, "colours")
    if n_items <= limit:
        return ""
    return (f"{n_items} variables per run share {limit} {look}; choose up to {limit} with --vars "
            "(Variables in the export dialog)")


def _losses(runs: list, spec: FigureSpec, clock: _Clock) -> PlotData:
    phases = list(dict.fromkeys(p for _, s in runs for p in s.phases))
    curves, legend = [], []
    for r, (label, store) in enumerate(runs):
        for phase in store.phases:
            k = phases.index(phase)
            colour, dash = (k, 0) if len(runs) == 1 else _pair(r, k, spec)
            series = store.loss(phase)
            curves.append(_curve(f"loss/{phase}", series, spec.smoothing, colour, dash, run=label,
                                 x=clock.x(store, series[0], series[1])))
    if len(runs) == 1:
        legend = [LegendEntry(p, i) for i, p in enumerate(phases)]
    else:
        legend = _overlay_legend(phases, spec)
    return PlotData("losses", curves, legend, log_y=spec.log_losses)


def _metrics(runs: list, spec: FigureSpec, clock: _Clock) -> list[PlotData]:
    """One panel per measure (their scales differ: modes 0-8, a fraction 0-1), drawn as measured; a measure's
    `<name>_std` is a band around it in its panel (figures/metric_groups.py), and a panel whose values are
    positive and span more than a decade is drawn on a log axis, as in the window."""
    tags = metric_tags(runs)
    if not tags:
        return [PlotData("metrics", [], [])]
    plots = []
    for group in metric_groups(tags):
        curves = []
        for r, (label, store) in enumerate(runs):
            if group.tag not in store.scalar_tags:
                continue
            series = store.scalar(group.tag)
            curve = _curve(group.tag, series, 0.0, r, 0, run=label, x=clock.x(store, series[0], series[1]))
            if group.std is not None and group.std in store.scalar_tags:
                _with_spread(curve, store.scalar(group.std))
            curves.append(curve)
        legend = []  # several runs: named in the figure's legend
        if group.std is not None:
            name, std = group.tag.removeprefix(METRIC_PREFIX), group.std.removeprefix(METRIC_PREFIX)
            legend.append(LegendEntry(f"{name} ± {std}", 0 if len(runs) == 1 else "fg", band=True))
        plots.append(PlotData(group.tag, curves, legend, log_y=wants_log(c.values for c in curves)))
    return plots


def _with_spread(curve: Curve, spread: tuple) -> None:
    """`curve` (a measure) with the band measure ∓ spread, on its steps that have a spread (NaN on the others)."""
    idx, lo, hi = band_edges(curve.steps, curve.values, spread[0], spread[2])
    curve.low, curve.high = np.full(len(curve.values), np.nan), np.full(len(curve.values), np.nan)
    curve.low[idx], curve.high[idx] = lo, hi


def _updates(runs: list, spec: FigureSpec, clock: _Clock) -> PlotData:
    kind = spec.update_kind
    chosen = [[p for p in s.var_paths if not spec.variables or any(in_variables(s, p, v) for v in spec.variables)]
              for _, s in runs]
    # a variable several phases train: its phases' series side by side (one legend head per model), not each
    # in its phase's place; a run whose variables one phase each trains keeps their order as it was
    chosen = [scope_order(ps) if any(s.var_path(p) != p for p in ps) else ps for ps, (_, s) in zip(chosen, runs)]
    if len(runs) == 1:
        plot = _updates_one(runs[0], chosen[0], spec, clock)
    else:
        paths = list(dict.fromkeys(p for ps in chosen for p in ps))
        curves = []
        for r, ((label, store), ps) in enumerate(zip(runs, chosen)):
            for p in ps:
                colour, dash = _pair(r, paths.index(p), spec)
                series = store.var_series(p, kind)
                curves.append(_stepped(_curve(f"{kind}/{p}", series, spec.smoothing, colour, dash,
                                              store.frozen_series(p), label, clock.x(store, series[0], series[1])),
                                       store, clock))
        problem = overlay_problem(len(paths), spec)
        if problem:  # a legend of repeated looks would name curves wrongly: why there is none
            legend = [LegendEntry(problem.split(";")[0], None)]
        else:
            legend = _overlay_legend(paths, spec)
        if len(paths) == 1:  # the one variable compared: named, since no line style stands for it
            legend.insert(0, LegendEntry(paths[0], None))
        if any(c.frozen is not None and c.frozen.any() for c in curves):
            legend.append(frozen_entry(curves, dict(runs)))
        plot = PlotData("updates", curves, legend, log_y=True, zero_floor=True, problem=problem)
    if _has_unfrozen_zero(plot.curves):
        plot.legend.append(LegendEntry(NO_UPDATE_NOTE, None))
    plot.reference = REFERENCE_RATIO if kind == "update_ratio" else None
    if plot.reference is not None:
        plot.legend.append(LegendEntry("10⁻³ reference", "muted", [3.0, 2.0]))
    return plot


def in_variables(store: "RunData", key: str, scope: str) -> bool:
    """Whether the series `key` (a variable's path, or path@phase: RunData.var_paths) is under `scope`, which
    may name the variable itself (both phases of a shared variable) or one phase's series of it."""
    return in_scope(key, scope) or in_scope(store.var_path(key), scope)


def _has_unfrozen_zero(curves: list[Curve]) -> bool:
    for c in curves:
        live = np.ones(len(c.values), bool) if c.frozen is None else ~c.frozen
        if np.any(c.values[live] == 0):
            return True
    return False


def _updates_one(run: tuple[str, "RunData"], paths: list[str], spec: FigureSpec, clock: _Clock) -> PlotData:
    """One run: each variable coloured by its layer and dashed by its leaf (styles.variable_styles).

    With two or more leaves per scope (kernel, bias) the legend lists scopes (colours) and leaves
    (dash styles) separately, and scopes as a tree under their top-level name: short labels that
    fit beside the plot in a journal column instead of 12 long paths. Variables frozen for the whole
    run appear in their place in the tree, grey and dotted like their curves.

    More kinds of leaf than dashes (kernel, bias, gamma, beta, moving_mean on 4): the key lists only the first
    `len(DASHES)` kinds, each its own dash, and a layer holding any other kind is named line by line, each name
    beside its own look. The key had listed moving_mean solid like kernel (`i % len(DASHES)`), so a solid line
    of a norm layer's colour read as its kernel. Why names and not markers for the extra kinds: a marker on a
    curve of thousands of points clutters it, and the painter and the window would both need them; naming each
    line is what the legend does already for a layer whose looks had to differ.
    """
    label, store = run
    kind = spec.update_kind
    frozen = {p: np.asarray(store.frozen_series(p), dtype=bool) for p in paths}
    always = {p for p in paths if len(frozen[p]) and frozen[p].all()}
    live = [p for p in paths if p not in always]
    styles = variable_styles(live, N_COLOURS, len(DASHES))
    per_variable = len({split_path(p)[0] for p in live}) == len(live)
    leaves = leaves_of(live)
    # a layer drawn in one colour with each leaf's own dash is named once (its leaves by the dash legend); one
    # whose looks had to differ (more layers than colours) names each of its variables with its own look
    looks: dict[str, set] = {}
    for p in live:
        parent, leaf = split_path(p)
        looks.setdefault(parent, set()).add((styles[p][0], styles[p][1] == leaves.index(leaf)))
    regular = {parent for parent, seen in looks.items() if len(seen) == 1 and next(iter(seen))[1]}
    curves, items, moved = [], {}, set()
    for p in paths:
        parent, _ = split_path(p)
        series = store.var_series(p, kind)
        x = clock.x(store, series[0], series[1])
        if p in always:
            whole = all(q in always for q in paths if split_path(q)[0] == parent)
            unit = parent if whole and not per_variable else p
            items.setdefault(unit, (unit, "muted", None, True))
            curves.append(_stepped(_curve(f"{kind}/{p}", series, spec.smoothing, 0, 0, frozen[p], label, x),
                                   store, clock))
            if moved_while_frozen(curves[-1]):
                moved.add(unit)
            continue
        colour, dash = styles[p]
        unit = parent if parent in regular and not per_variable else p
        unit_dash = DASHES[dash] if unit == p else None
        items.setdefault(unit, (unit, colour, unit_dash, False))
        curves.append(_stepped(_curve(f"{kind}/{p}", series, spec.smoothing, colour, dash, frozen[p], label, x),
                               store, clock))
    legend = _tree(list(items.values()), store, moved)
    if not per_variable and len(leaves) > 1:  # the key: only the leaves with a dash of their own
        legend += [LegendEntry(leaf, "fg", DASHES[i]) for i, leaf in enumerate(leaves[:len(DASHES)])]
    if any(frozen[p].any() for p in live):
        legend.append(frozen_entry(curves, {label: store}))
    return PlotData("updates", curves, legend, log_y=True, zero_floor=True)


def _tree(items: list[tuple[str, int | str, list[float] | None, bool]], store: "RunData | None" = None,
          moved: set[str] = frozenset()) -> list[LegendEntry]:
    """Entries under a header per top-level scope when that saves width (several entries per head); a variable
    (or layer) frozen the whole run is named by `frozen_label`, as the window names it: "(frozen)", "(not
    trainable)" in a monitor run, and what moved it if a frozen record of it is not 0 (`moved`: those units)."""
    heads = [u.partition("/")[0] for u, _, _, _ in items]
    use_tree = all("/" in u for u, _, _, _ in items) and len(set(heads)) < len(items)
    out, current = [], None
    for (unit, colour, dash, is_frozen), head in zip(items, heads):
        label = unit.partition("/")[2] if use_tree else unit
        if use_tree and head != current:
            out.append(LegendEntry(head, None))
            current = head
        out.append(LegendEntry(frozen_label(label, store, unit in moved) if is_frozen else label, colour, dash,
                               frozen=is_frozen, under=use_tree))
    return out

"""One variable's update curve, split by frozen state: the records it trained drawn in the variable's own style,
the records it was frozen on a second curve drawn grey and dotted (the legend's "(frozen)" style), each stretch
by the state it had then.

Why two curves and not one pen: a pen chosen from the variable's state at the end of the run drew a variable
frozen at step 424 dotted from step 0, and one frozen for steps 1–681 then unfrozen solid on the "0 (frozen)"
floor. Each curve holds every point of the variable (so both stay appendable, grown=True, as records arrive),
with NaN where the other state holds: the stroke breaks there (`connect="finite"`, canvas.py). A change of state
adds two points at the step of the change (`freeze_at`: a freeze's own step, a record's step too), the level
before and the level after; the frozen curve draws that vertical step, so a freeze and an unfreeze read as a
drop and a lift at their step. A variable never frozen has no second curve and its trained curve is its log
values themselves: no per-point cost for it.
"""
from __future__ import annotations

import numpy as np

from training_core.figures.frozen import freeze_at
from training_core.runs import GrowArray

from .curves import LiveCurve, nearest_index
from .plot_view import Layer, PlotView


class VarCurve:
    """One variable's points (x, log10 value), for each the record it stands for, and the two curves drawing
    them: `curve` (trained stretches; the legend, hover and click name it) and `frozen_curve` (frozen
    stretches, None until the variable has a frozen record)."""

    def __init__(self, name: str, layer: Layer, path: str, curve: LiveCurve) -> None:
        self.name, self.layer, self.path, self.curve = name, layer, path, curve
        self.variable = layer.data.var_path(path)  # `path` is a series' name: path@phase for a shared variable
        self.frozen_curve: LiveCurve | None = None
        self.color, self.dash = "#000000", 0
        self.frozen = False  # frozen at its latest record (the legend's "(frozen)")
        self.moved = False  # a frozen record is not exactly 0 (a leak: the legend says so; UpdateCurves.update)
        self.style: tuple | None = None
        self.reset()

    def reset(self) -> None:
        self.log = GrowArray(np.float64)
        self.x = GrowArray(np.float64)
        self.record = GrowArray(np.int64)  # the record each point stands for
        self.trained_y: GrowArray | None = None  # None: never frozen, the trained curve is `log` itself
        self.frozen_y: GrowArray | None = None
        self.n = 0  # records taken in

    @property
    def has_frozen(self) -> bool:
        return self.frozen_y is not None

    def note_moved(self, values: np.ndarray, frozen: np.ndarray) -> None:
        """`moved` from records `self.n:` (their raw values; all of them after a reset): a frozen one not exactly 0."""
        f = np.asarray(frozen[self.n:len(values)], dtype=bool)
        self.moved = (self.moved and self.n > 0) or bool(np.any(values[self.n:self.n + len(f)][f] != 0))

    def extend(self, view: PlotView, steps: np.ndarray, wall: np.ndarray, log: np.ndarray,
               frozen: np.ndarray) -> None:
        """Take in records `self.n:` (`log`: their log10 values, already floored), with a step at each change
        of frozen state; each new point goes to the curve of its record's state (the step's two, to both)."""
        n0, n1 = self.n, min(len(log) + self.n, len(frozen))
        if n1 <= n0:
            return
        f = np.asarray(frozen[max(n0 - 1, 0):n1], dtype=bool)
        if f[n0 - max(n0 - 1, 0):].any() and self.frozen_y is None:  # the first frozen record: a second curve
            self.trained_y, self.frozen_y = GrowArray(np.float64), GrowArray(np.float64)
            self.trained_y.extend(self.log.view())
            self.frozen_y.extend(np.full(len(self.log), np.nan))
        changes = (np.flatnonzero(f[1:] != f[:-1]) + max(n0 - 1, 0) + 1).tolist()  # records after a change
        cuts = sorted({n0, n1, *changes})
        xs = view.x(self.layer, steps[n0:n1], wall[n0:n1])
        for a, b in zip(cuts[:-1], cuts[1:]):
            if a in changes:  # the step: the level before at the change, then the level after
                at, t = freeze_at(self.layer.data, int(steps[a - 1]), int(steps[a]), float(wall[a]))
                x = float(view.x(self.layer, np.array([at]), np.array([t]))[0])
                before = float(self.log.view()[-1]) if len(self.log) else float(log[a - n0])
                pair = np.array([before, log[a - n0]])
                was = bool(frozen[a - 1])  # the point before the step is trained when the step is a freeze
                self._put(np.array([x, x]), pair, np.array([a - 1, a]),
                          np.array([np.nan, pair[1]]) if was else np.array([pair[0], np.nan]), pair)
            seg = np.asarray(log[a - n0:b - n0], dtype=np.float64)
            gap = np.full(len(seg), np.nan)
            now = bool(frozen[a])
            self._put(np.asarray(xs[a - n0:b - n0], dtype=np.float64), seg, np.arange(a, b),
                      gap if now else seg, seg if now else gap)
        self.n = n1

    def _put(self, x: np.ndarray, log: np.ndarray, record: np.ndarray, trained: np.ndarray,
             frozen: np.ndarray) -> None:
        self.x.extend(x)
        self.log.extend(log)
        self.record.extend(record)
        if self.frozen_y is not None:
            self.trained_y.extend(trained)
            self.frozen_y.extend(frozen)

    def draw(self, grown: bool) -> None:
        """Hand each curve its points (`grown`: they only gained points at the end since the last draw), but not
        a grown curve whose new points are gaps only (`LiveCurve.keep`): a frozen stretch's trained curve, a
        trained stretch's frozen one."""
        x = self.x.view()
        for curve, y in ((self.curve, self.log.view() if self.trained_y is None else self.trained_y.view()),
                         (self.frozen_curve, None if self.frozen_y is None else self.frozen_y.view())):
            if curve is None:
                continue
            if y is None:  # reset (a new floor, a new mode) and not frozen yet again
                if curve.yData is not None and len(curve.yData):
                    curve.setData([], [])
            elif not (grown and curve.keep(y)):
                curve.setData(x, y, grown=grown)

    def stretches(self) -> list[tuple[float, float, str]]:
        """The drawn stretches by x: (first x, last x, "trained" or "frozen"), in order, for the tests and
        for whoever must say what the plot shows; a step's two points belong to the frozen stretch."""
        out = []
        for kind, y in (("trained", self.log.view() if self.trained_y is None else self.trained_y.view()),
                        ("frozen", None if self.frozen_y is None else self.frozen_y.view())):
            if y is None or not len(y):
                continue
            fin = np.r_[False, np.isfinite(y), False].astype(np.int8)
            edges = np.flatnonzero(np.diff(fin))
            x = self.x.view()
            out += [(float(x[s]), float(x[e - 1]), kind) for s, e in zip(edges[::2], edges[1::2])]
        return sorted(out, key=lambda s: (s[0], s[1]))

    def point_near(self, x: float) -> tuple[int, float] | None:
        """(record index, plotted log10 value) of the point nearest `x`, of either state; None if none or a gap."""
        xs = self.x.view()
        if not len(xs):
            return None
        i = nearest_index(xs, x)
        y = float(self.log.view()[i])
        return (int(self.record.view()[i]), y) if np.isfinite(y) else None


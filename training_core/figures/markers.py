"""Event markers of a figure, Qt-free: which events are marked, what each label says, and where each label
goes so that a reader can tell which dashed line it belongs to.

Why labels are "flags": a label stacked or centred somewhere over the plot, or a number with its text in a
footnote, made readers match labels to lines by counting ("1 lr G=5e-05  2 pause  3 pause (step) ×2").
Here every label starts at its own line (or ends at it, near the right edge), in a band above the plot, and
its line is drawn on up to the label's row: the line itself leads to its label. Rows are chosen so that no
label touches another and no line runs through a label's text; the band takes as many rows as the labels
need, and the figure grows to hold them (figure.py).

With several runs (or groups of seeds), an event that every one of them has at the same step is one line
with a plain label; an event only some have is labelled with their names ("1:1: lr D=5e-05").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence

import numpy as np

if TYPE_CHECKING:
    from training_core.runs import RunData


class MarkerLine(NamedTuple):
    x: float  # in axis units (a step, or the time since the run began)
    kind: str  # the event's kind: freeze, ratio, lr, ...
    label: str


@dataclass
class Flag:
    """Where one label goes: its line at `x` (pt), its text from `left` to `left + width`, in `row` (0 is the
    row next to the plot), on the line's right ("right") or, near the figure's right edge, its left."""

    x: float
    left: float
    width: float
    row: int
    side: str = "right"
    text: str = ""
    kind: str = ""

    @property
    def right(self) -> float:
        return self.left + self.width


Key = tuple[int, str, str]  # (step, kind, label): the same event in two runs


def entity_markers(members: Sequence[tuple[str, "RunData"]], x_of: Callable[["RunData", Any], float],
                   kinds: Sequence[str]) -> dict[Key, tuple[float, bool]]:
    """The markers of the chosen kinds of an entity (one run, or a group of seeds given as its member runs),
    each once, as key -> (x, named): an event every member has at the same step is the entity's own (at the
    members' mean x, which differs on a time axis); one only some members have is named after its run
    ("seed-2: pause"), and `named` says so."""
    per = []
    for _, store in members:
        marks: dict[Key, float] = {}
        for m in list(store.markers):
            if m.kind in kinds:
                marks.setdefault((int(m.step), m.kind, m.label), x_of(store, m))
        per.append(marks)
    common = set(per[0]).intersection(*per[1:]) if per else set()
    out = {k: (float(np.mean([p[k] for p in per])), False) for k in (per[0] if per else {}) if k in common}
    for (label, _), marks in zip(members, per):
        for (step, kind, text), x in marks.items():
            if (step, kind, text) not in common:
                out.setdefault((step, kind, f"{label}: {text}"), (x, True))
    return out


def figure_markers(per_entity: Sequence[dict[Key, tuple[float, bool]]], names: Sequence[str]) -> list[MarkerLine]:
    """One line per event: unprefixed when every entity has it, else prefixed by the names of the entities
    that do ("1:1, 3:1: ratio 2:1"), unless it names its run already."""
    owners: dict[Key, list[tuple[str, float, bool]]] = {}
    for name, marks in zip(names, per_entity):
        for key, (x, named) in marks.items():
            owners.setdefault(key, []).append((name, x, named))
    out = []
    for (_, kind, label), who in owners.items():
        plain = len(names) <= 1 or len(who) == len(names) or all(named for _, _, named in who)
        text = label if plain else f"{_owners_text([n for n, _, _ in who], names)}: {label}"
        out.append(MarkerLine(float(np.mean([x for _, x, _ in who])), kind, text))
    return sorted(out)


def _owners_text(owners: Sequence[str], names: Sequence[str]) -> str:
    """Who has a marker, in as few words as tell them apart: the words (of names such as a sweep's settings,
    "ratio=3:1 freeze=discriminator/dense_1@1500") that every owner has and no other entity has, when there
    are such words and several owners ("freeze=discriminator/dense_1@1500" for the two settings that froze it);
    else the owners' names, listed."""
    if len(owners) > 1:
        shared = set(owners[0].split()).intersection(*(o.split() for o in owners[1:]))
        others = [n for n in names if n not in owners]
        own = [w for w in owners[0].split() if w in shared and all(w not in n.split() for n in others)]
        if own and others:
            return " ".join(own)
    return ", ".join(owners)


def merge_repeats(lines: Sequence[MarkerLine]) -> list[tuple[MarkerLine, int]]:
    """Consecutive lines of the same kind and label as one label at the first of them, with their count
    (every Step click pauses: "pause (step) ×12", not twelve labels)."""
    out: list[list] = []
    for m in lines:
        if out and out[-1][0].label == m.label and out[-1][0].kind == m.kind:
            out[-1][1] += 1
        else:
            out.append([m, 1])
    return [(m, n) for m, n in out]


def repeat_text(m: MarkerLine, n: int) -> str:
    return m.label if n == 1 else f"{m.label} ×{n}"


def place_flags(xs: Sequence[float], widths: Sequence[float], lo: float, hi: float, gap: float,
                space: float) -> list[Flag]:
    """Rows and sides for labels of `widths` at lines `xs` (pt, in order along the axis), their text kept
    within [lo, hi]. A label starts `gap` right of its line, or ends `gap` left of it where it would pass
    `hi`; labels in one row keep `space` apart; a line drawn up to its label's row never crosses another
    label's text where that can be avoided (each constraint below), so the labels form steps, and the
    lowest row that satisfies them is taken.

    Returns the flags in the order given."""
    n = len(xs)
    side = ["right" if x + gap + w <= hi or x - gap - w < lo else "left" for x, w in zip(xs, widths)]

    def span(i: int) -> tuple[float, float]:
        left = xs[i] + gap if side[i] == "right" else xs[i] - gap - widths[i]
        left = min(max(left, lo), max(lo, hi - widths[i]))  # wider than the room: kept inside it
        return left, left + widths[i]

    # a right-pointing label whose text covers a left-pointing neighbour's line, while that one's text covers
    # its line, would cross either way: it points left too (near the right edge, where left labels are)
    for _ in range(n):
        changed = False
        for i in range(n):
            if side[i] != "right":
                continue
            for j in range(i + 1, n):
                a, b = span(i), span(j)
                if side[j] == "left" and a[0] <= xs[j] <= a[1] and b[0] <= xs[i] <= b[1] and xs[i] - gap - widths[i] >= lo:
                    side[i], changed = "left", True
                    break
        if not changed:
            break
    spans = [span(i) for i in range(n)]

    margin = min(space, gap) / 2  # lines this close to a text would touch it; lines at one x do not cross

    def covers(i: int, j: int) -> bool:  # j's line, drawn up to its row, would run through i's text
        return spans[i][0] - margin <= xs[j] <= spans[i][1] + margin

    above: list[tuple[int, int]] = []  # (a, b): a's row must be higher than b's
    apart: list[tuple[int, int]] = []  # texts that would touch in one row: (the one to lift first, the other)
    for i in range(n):
        for j in range(i + 1, n):
            ci, cj = covers(i, j), covers(j, i)
            if ci and cj:  # each line runs through the other's text: the left one's over the right one's line
                above.append((i, j))
            elif ci or cj:
                above.append((i, j) if ci else (j, i))
            elif spans[i][0] < spans[j][1] + space and spans[j][0] < spans[i][1] + space:
                apart.append((i, j) if side[i] == "right" else (j, i))
    rows = _layer(n, above, apart)
    if rows is None:  # the constraints go round in a circle: texts apart at least, in order along the axis
        rows = []
        for k in range(n):
            taken = {rows[j] for j in range(k) if spans[j][0] < spans[k][1] + space and spans[k][0] < spans[j][1] + space}
            rows.append(next(r for r in range(n + 1) if r not in taken))
    return [Flag(xs[i], spans[i][0], widths[i], rows[i], side[i]) for i in range(n)]


def _layer(n: int, above: list[tuple[int, int]], apart: list[tuple[int, int]]) -> list[int] | None:
    """The lowest rows with a row higher than b's for every (a, b) of `above` and different rows for every
    pair of `apart` (its first lifted when they meet); None when `above` has a cycle."""
    rows = [0] * n
    for _ in range(4 * n + 4):
        for _ in range(n + 1):
            moved = False
            for a, b in above:
                if rows[a] <= rows[b]:
                    rows[a], moved = rows[b] + 1, True
            if not moved:
                break
        else:
            return None
        clash = next(((a, b) for a, b in apart if rows[a] == rows[b]), None)
        if clash is None:
            return rows
        rows[clash[0]] += 1
    return None

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

A label wider than the room beside its line (a sweep's setting named in a panel a third of a page wide) is
wrapped, as a typesetter would: in as few lines as fit, broken where a reader minds it least (after the names
of its owners, "freeze=discriminator/dense_1@150:" over "freeze: discriminator/dense_1"; else at a space,
after a path's "/", after "=" or "_"). It was pushed along the band to
fit instead, away from its line and over the panel letter "(a)"; a label turned 90° along its line would
need a band as tall as the label is long, and a key ("A") would send the reader to a footnote.
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
    row next to the plot) and the `height - 1` rows above it (a wrapped label's lines, the first at the top), on
    the line's right ("right") or, near the figure's right edge, its left."""

    x: float
    left: float
    width: float
    row: int
    side: str = "right"
    text: str = ""
    kind: str = ""
    height: int = 1
    lines: tuple[str, ...] = ()  # the text as drawn, a line per row, the first at the top

    @property
    def right(self) -> float:
        return self.left + self.width

    @property
    def top_row(self) -> int:
        return self.row + self.height - 1


Key = tuple[int, str, str]  # (step, kind, label): the same event in two runs
Share = tuple[int, int] | None  # (how many of an entity's seeds have a marker, how many it has); None: every one


def entity_markers(members: Sequence[tuple[str, "RunData"]], x_of: Callable[["RunData", Any], float],
                   kinds: Sequence[str]) -> dict[Key, tuple[float, Share]]:
    """The markers of the chosen kinds of an entity (one run, or a group of seeds given as its member runs),
    each once, as key -> (x, share) at the mean x of the members that have it (which differs on a time axis):
    an event every member has at the same step is the entity's own (share None); one only some have says how
    many (1 of 2 seeds resumed from a checkpoint: (1, 2)), and `figure_markers` names the group with that count.
    It named the one seed's run instead ("…-seed=1: resumed"), a run the figure draws nowhere."""
    per = []
    for _, store in members:
        marks: dict[Key, float] = {}
        for m in list(store.markers):
            if m.kind in kinds:
                marks.setdefault((int(m.step), m.kind, m.label), x_of(store, m))
        per.append(merge_leaks(marks))
    have: dict[Key, list[float]] = {}
    for marks in per:
        for k, x in marks.items():
            have.setdefault(k, []).append(x)
    return {k: (float(np.mean(xs)), None if len(xs) == len(per) else (len(xs), len(per))) for k, xs in have.items()}


LEAK_PREFIX = "leak "  # a leak marker's label: "leak <variable>" (runs/data.py)


def merge_leaks(marks: dict[Key, float]) -> dict[Key, float]:
    """A run's leaks found at one step as one marker, "leak: discriminator (4 variables)" (the scope they share),
    not a label per variable: a model whose `trainable = False` fit() ignored leaks in all its weights at once,
    and four labels stacked over one line (six for a DCGAN) said one thing four times."""
    leaks: dict[int, list[tuple[Key, float]]] = {}
    for key, x in marks.items():
        if key[1] == "leak" and key[2].startswith(LEAK_PREFIX):
            leaks.setdefault(key[0], []).append((key, x))
    out = {k: x for k, x in marks.items() if not (k[1] == "leak" and len(leaks.get(k[0], ())) > 1)}
    for step, group in leaks.items():
        if len(group) > 1:
            out[(step, "leak", leak_text([k[2][len(LEAK_PREFIX):] for k, _ in group]))] = group[0][1]
    return out


def leak_text(variables: Sequence[str]) -> str:
    """The label of several variables' leaks at one step: their shared scope and how many they are."""
    parts = [v.split("/") for v in variables]
    shared: list[str] = []
    for names in zip(*parts):
        if len(set(names)) > 1:
            break
        shared.append(names[0])
    shared = shared[:min(len(p) for p in parts) - 1]  # a scope, never a variable's own name
    n = f"{len(set(variables))} variables"
    return f"leak: {'/'.join(shared)} ({n})" if shared else f"leak: {n}"


def figure_markers(per_entity: Sequence[dict[Key, tuple[float, Share]]], names: Sequence[str]) -> list[MarkerLine]:
    """One line per event: unprefixed when every entity has it (every seed of each), else prefixed by the names
    of the entities that do ("1:1, 3:1: ratio 2:1"), a group that has it in only some of its seeds with their
    count ("ratio=1:1 (1 of 2 seeds): resumed"; in a figure of one group the count alone)."""
    owners: dict[Key, list[tuple[str, float, Share]]] = {}
    for name, marks in zip(names, per_entity):
        for key, (x, share) in marks.items():
            owners.setdefault(key, []).append((name, x, share))
    out = []
    for (step, kind, label), who in owners.items():
        whole = [n for n, _, share in who if share is None]
        part = [(n, share) for n, _, share in who if share is not None]
        if not part and (len(names) <= 1 or len(who) == len(names)):
            text = label
        elif not part and _names_the_event(_owners_text(whole, names), step, kind, label):
            text = _owners_text(whole, names)  # "freeze=d@150", not "freeze=d@150: freeze: d"
        else:
            named = [_owners_text(whole, names)] if whole else []
            named += [f"({k} of {of} seeds)" if len(names) <= 1 else f"{n} ({k} of {of} seeds)" for n, (k, of) in part]
            text = f"{', '.join(named)}: {label}"
        out.append(MarkerLine(float(np.mean([x for _, x, _ in who])), kind, text))
    return sorted(out)


def _names_the_event(owners: str, step: int, kind: str, label: str) -> bool:
    """Whether the owners' shared words are this very event: a sweep's planned freeze `freeze=SCOPES@STEP`,
    its scopes and step those of the marker. The label then said it twice ("freeze=discriminator/dense_1@150:
    freeze: discriminator/dense_1", wrapped onto two rows of a narrow panel)."""
    axis, _, value = owners.partition("=")
    scopes, at, when = value.rpartition("@")
    if " " in owners or axis != kind or kind != "freeze" or not at or when != str(step):
        return False
    return set(scopes.split("+")) == set(label.partition(": ")[2].split(", "))


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


#: where a line may break, and how little a reader minds it there: after the owners' names (or the kind, when
#: no owner is named: "freeze:"), at a space, after a path's "/", after "=" or "@", after "_", "-" or ","; anywhere in a word only
#: where nothing else fits (dearer than a line: a word too wide is cut as few times as can be)
_BREAKS = {": ": 0, " ": 1, "/": 3, "=": 4, "@": 4, "_": 6, "-": 6, ",": 6}
_PER_LINE = 100  # fewer lines first
_ANYWHERE = 1000


def label_lines(text: str, x: float, lo: float, hi: float, gap: float, width: Callable[[str], float]) -> list[str]:
    """The label of the line at `x` as the lines it is drawn in: one, when it fits within [lo, hi] on either side
    of its line (`gap` from it); else wrapped to the room of the wider side (`wrap_label`), so it still starts
    (or ends) at its line and stays in the band."""
    room = max(hi - x - gap, x - gap - lo)
    return [text] if width(text) <= room else wrap_label(text, width, room)


def wrap_label(text: str, width: Callable[[str], float], room: float) -> list[str]:
    """`text` in the fewest lines no wider than `room` (measured by `width`), and of those the one broken where a
    reader minds it least (`_BREAKS`): "freeze=discriminator/dense_1@150:" over "freeze: discriminator/dense_1",
    not "freeze=discriminator/dense_1@150: freeze:" over "discriminator/dense_1". A word wider than the room
    is broken anywhere (one character a line at the least)."""
    if width(text) <= room:
        return [text]
    cuts = _cuts(text)
    lines = _best_breaks(text, cuts, width, room)
    if lines is None:  # a piece between two breaks is wider than the room: anywhere, too
        anywhere = {i: _ANYWHERE for i in range(1, len(text))}
        lines = _best_breaks(text, {**anywhere, **cuts}, width, room, fallback=True)
    return lines


def _cuts(text: str) -> dict[int, int]:
    """Where a line may end (an index into `text`: the line is text[:i], stripped) and what a break there costs."""
    out: dict[int, int] = {}
    owners = text.find(": ")  # the first ": " ends the owners' names ("1:1, 3:1: ratio 2:1") or the kind's
    for i, ch in enumerate(text):
        if ch == " ":
            out[i] = _BREAKS[": "] if i == owners + 1 else _BREAKS[" "]
        elif ch in _BREAKS and text[i + 1:i + 2] not in (" ", ""):
            out[i + 1] = _BREAKS[ch]
    return out


def _best_breaks(text: str, cuts: dict[int, int], width: Callable[[str], float], room: float,
                 fallback: bool = False) -> list[str] | None:
    ends = sorted(cuts) + [len(text)]
    best: dict[int, tuple[float, list[str]]] = {0: (0.0, [])}
    for e in ends:
        for s in [0, *ends]:
            if s >= e:
                break
            if s not in best:
                continue
            line = text[s:e].strip()
            if not line:
                continue
            w = width(line)
            if not (w <= room or (fallback and e - s == 1)):
                continue
            ragged = 0.0 if e == len(text) else 0.5 * max(0.0, 1.0 - w / room)  # full lines, of cuts alike
            cost = best[s][0] + _PER_LINE + cuts.get(e, 0) + ragged
            if e not in best or cost < best[e][0]:
                best[e] = (cost, best[s][1] + [line])
    return best[len(text)][1] if len(text) in best else None


def place_flags(xs: Sequence[float], widths: Sequence[float], lo: float, hi: float, gap: float,
                space: float, heights: Sequence[int] | None = None) -> list[Flag]:
    """Rows and sides for labels of `widths` at lines `xs` (pt, in order along the axis), their text kept
    within [lo, hi], each `heights` rows tall (default 1; a wrapped label's lines). A label starts `gap` right
    of its line, or ends `gap` left of it where it would pass `hi`; labels in one row keep `space` apart; a
    line drawn up to its label's top row never crosses another label's text where that can be avoided (each
    constraint below), so the labels form steps, and the lowest row that satisfies them is taken.

    Returns the flags in the order given."""
    n = len(xs)
    h = [1] * n if heights is None else [max(1, int(k)) for k in heights]
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

    above: list[tuple[int, int]] = []  # (a, b): a's row must be higher than b's top row
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
    rows = _layer(h, above, apart)
    if rows is None:  # the constraints go round in a circle: texts apart at least, in order along the axis
        rows = []
        for k in range(n):
            near = [j for j in range(k) if spans[j][0] < spans[k][1] + space and spans[k][0] < spans[j][1] + space]
            rows.append(next(r for r in range(sum(h) + 1)
                             if all(r + h[k] <= rows[j] or rows[j] + h[j] <= r for j in near)))
    return [Flag(xs[i], spans[i][0], widths[i], rows[i], side[i], height=h[i]) for i in range(n)]


def _layer(h: list[int], above: list[tuple[int, int]], apart: list[tuple[int, int]]) -> list[int] | None:
    """The lowest rows (of labels `h` rows tall) with a's bottom row above b's top row for every (a, b) of
    `above` and rows that do not share a row for every pair of `apart` (its first lifted when they meet); None
    when `above` has a cycle."""
    n = len(h)
    rows = [0] * n
    for _ in range(4 * sum(h) + 4):
        for _ in range(n + 1):
            moved = False
            for a, b in above:
                if rows[a] < rows[b] + h[b]:
                    rows[a], moved = rows[b] + h[b], True
            if not moved:
                break
        else:
            return None
        clash = next(((a, b) for a, b in apart if rows[a] < rows[b] + h[b] and rows[b] < rows[a] + h[a]), None)
        if clash is None:
            return rows
        rows[clash[0]] += 1
    return None

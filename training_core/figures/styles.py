"""Which colour and line style each variable gets, in the window and in exported figures alike.

Why not one colour per variable: a 12-colour cycle repeated after 12 variables (digits has 16:
`discriminator/conv_1/kernel` and `generator/bn_2/gamma` came out the same blue). Variables come in
layers (kernel and bias, or gamma and beta), so a layer gets a colour and each kind of leaf a line
style: `n_colours` x `n_dashes` distinct looks (8 x 4 = 32 on paper, 12 x 4 = 48 on screen), enough
that 24 variables never share one. When every layer has a single variable, the variables take the
colours in turn and the line style changes once the colours run out.
"""
from __future__ import annotations

from typing import Sequence

from training_core.rundir.varstore import PHASE_MARK


def split_path(path: str) -> tuple[str, str]:
    """(parent scope, leaf name): generator/dense_1/kernel -> (generator/dense_1, kernel). A variable several
    phases train is named path@phase (rundir/varstore.py): each phase's series is a layer of its own, its
    leaves the same, encoder/dense/kernel@rec -> (encoder/dense@rec, kernel), so kernel and bias keep one
    line style each and the phases get colours of their own."""
    parent, sep, leaf = path.rpartition("/")
    if not sep:
        return (path, "")
    leaf, mark, phase = leaf.partition(PHASE_MARK)
    return (parent + mark + phase, leaf) if mark and leaf and phase else (parent, leaf + mark + phase)


def variable_styles(paths: Sequence[str], n_colours: int, n_dashes: int) -> dict[str, tuple[int, int]]:
    """path -> (colour index, dash index), distinct for up to `n_colours * n_dashes` variables, whatever the
    shape of their layers; past that a look repeats only once every look is taken, and no layer repeats an
    earlier layer's looks.

    A layer keeps one colour and each leaf its own dash (the leaf's index, which the legend names) while that
    colour has the dashes free; a layer with no colour left that has room for all its leaves takes free looks
    one variable at a time. Why not a formula of (layer, leaf): the dash shifted by whole sets of leaves
    repeated a look as soon as the leaves do not divide the dashes (4 leaves of 4 dashes: layer 9 drew as
    layer 1, 3 leaves: layer 8's kernel as layer 0's bias)."""
    paths = list(dict.fromkeys(paths))
    parents = list(dict.fromkeys(split_path(p)[0] for p in paths))
    if len(parents) == len(paths):  # one variable per scope: colour each, then change the style
        return {p: (i % n_colours, (i // n_colours) % n_dashes) for i, p in enumerate(paths)}
    leaves = {leaf: j for j, leaf in enumerate(dict.fromkeys(split_path(p)[1] for p in paths))}
    members: dict[str, list[str]] = {}
    for p in paths:
        members.setdefault(split_path(p)[0], []).append(p)
    used: set[tuple[int, int]] = set()
    cycle = 0  # how many times every look has been taken (more variables than looks)
    out: dict[str, tuple[int, int]] = {}
    for i, parent in enumerate(parents):
        js = [leaves[split_path(p)[1]] for p in members[parent]]
        looks = _one_colour(i % n_colours, js, used, n_colours, n_dashes) if cycle == 0 else None
        if looks is None:
            looks = []
            for j in js:
                if len(used) == n_colours * n_dashes:  # every look taken: a new cycle of them
                    used.clear()
                    cycle += 1
                # past the first cycle a layer's leaves take neighbouring colours, so it matches no earlier layer
                first = (i + (j if cycle else 0)) % n_colours
                looks.append(next((c % n_colours, d) for c in range(first, first + n_colours)
                                  for d in [j % n_dashes, *range(n_dashes)] if (c % n_colours, d) not in used))
                used.add(looks[-1])
        used.update(looks)
        out.update(zip(members[parent], looks))
    return out


def _one_colour(first: int, js: list[int], used: set[tuple[int, int]], n_colours: int,
                n_dashes: int) -> list[tuple[int, int]] | None:
    """Looks of one colour for a layer's leaves `js` (the first colour from `first` with as many dashes free),
    each leaf its own dash where that is free; None when no colour has the room."""
    for c in [(first + k) % n_colours for k in range(n_colours)]:
        free = [d for d in range(n_dashes) if (c, d) not in used]
        if len(free) < len(js):
            continue
        own = {j: j for j in js if j in free}
        rest = iter(d for d in free if d not in own.values())
        return [(c, own[j] if j in own else next(rest)) for j in js]
    return None


def leaves_of(paths: Sequence[str]) -> list[str]:
    """The leaf names in order of first appearance (the dash index of `variable_styles` for layered paths)."""
    return list(dict.fromkeys(split_path(p)[1] for p in paths))

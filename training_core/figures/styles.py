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
    """path -> (colour index, dash index), distinct for up to `n_colours * n_dashes` variables laid out
    as layers of the same leaves (the usual case), and for any `n_colours * n_dashes` one-variable scopes."""
    paths = list(dict.fromkeys(paths))
    parents = list(dict.fromkeys(split_path(p)[0] for p in paths))
    if len(parents) == len(paths):  # one variable per scope: colour each, then change the style
        return {p: (i % n_colours, (i // n_colours) % n_dashes) for i, p in enumerate(paths)}
    leaves = list(dict.fromkeys(split_path(p)[1] for p in paths))
    out = {}
    for p in paths:
        parent, leaf = split_path(p)
        i, j = parents.index(parent), leaves.index(leaf)
        # layers beyond the colours move on by a whole set of leaf styles, so they do not repeat a look
        out[p] = (i % n_colours, (j + (i // n_colours) * len(leaves)) % n_dashes)
    return out


def leaves_of(paths: Sequence[str]) -> list[str]:
    """The leaf names in order of first appearance (the dash index of `variable_styles` for layered paths)."""
    return list(dict.fromkeys(split_path(p)[1] for p in paths))

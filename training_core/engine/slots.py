"""Which optimizer variables belong to which model variable.

Keras 3 names a slot variable `<variable path with _ for />_<slot>` (Adam's
`generator_dense_1_kernel_momentum`); the optimizer-wide ones are `iteration` and `learning_rate`. Exact
freezing restores a frozen variable's slots, and checkpoints file each slot under its variable's path,
so both need the mapping; the longest matching path wins, so `g/dense_1` never claims `g/dense_10`'s slots.
"""
from __future__ import annotations

from typing import Any, Sequence


def slots_by_variable(optimizer: Any, paths: Sequence[str]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """({variable path: {slot name: slot variable}}, {optimizer-wide name: variable})."""
    prefixes = sorted(((p.replace("/", "_") + "_", p) for p in paths), key=lambda t: -len(t[0]))
    per_var: dict[str, dict[str, Any]] = {p: {} for p in paths}
    wide: dict[str, Any] = {}
    for v in optimizer.variables:
        owner = next((p for prefix, p in prefixes if v.name.startswith(prefix)), None)
        if owner is None:
            wide[v.name] = v
        else:
            per_var[owner][v.name[len(owner) + 1:]] = v
    return per_var, wide

"""Which sub-models of a `fit()` model `Monitor` records, and which of them are phases with which optimizer.

Why a guess at all: a `keras.Model` whose own `train_step` trains several sub-models says nowhere which
optimizer trains which; only its step knows. The names usually say it (`d_optimizer` goes with
`discriminator`), and once the step ran, the optimizers say it exactly (the variables each was built for).

Why the care: the keras.io data-efficient GAN keeps an EMA copy of its generator (`keras.models.clone_model`,
updated by `assign` in `train_step`). A sub-model that no optimizer trains is recorded (its variables, its
checkpoints) but is no phase, and must never replace the model it copies: the clone keeps its original's name
and variable paths, so keyed by name it shadowed the trained generator, and named otherwise
(`generator_ema`) its name matched `g_optimizer` too, and the run was refused as if the two shared it.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import keras

from training_core.base.errors import UserError
from training_core.engine import keras_private


def _path(v: Any) -> str:
    return str(getattr(v, "path", None) or v.name)


def sub_models(model: Any) -> dict[str, Any]:
    """The model's own sub-models with weights, by name (a model without any: itself). Two of one name whose
    variable paths collide cannot both be recorded: one line naming both attributes and the fix; two of one
    name whose paths differ are both kept, the second under its attribute's name."""
    attrs: dict[int, str] = {}
    for key, value in vars(model).items():
        if isinstance(value, keras.layers.Layer):
            attrs.setdefault(id(value), key)
    subs: dict[str, Any] = {}
    for m in getattr(model, "layers", []):
        if not getattr(m, "weights", None) or any(o is m for o in subs.values()):
            continue
        other = subs.get(m.name)
        if other is None:
            subs[m.name] = m
            continue
        a, b = (f".{attrs[id(x)]}" if id(x) in attrs else f"a sub-model named {x.name!r}" for x in (other, m))
        if {_path(v) for v in m.weights} & {_path(v) for v in other.weights}:
            raise UserError(
                f"Monitor: the model's {a} and {b} are both named {m.name!r} with the same variable paths "
                f"(keras.models.clone_model keeps the name), so the record cannot tell them apart; build the copy "
                f"under a name of its own (name='ema_{m.name}'), or pass models={{'{m.name}': model{a}, ...}} "
                f"with the models to record")
        subs[attrs.get(id(m), f"{m.name}_{len(subs)}")] = m
    return subs or {model.name: model}


def match(names: Sequence[str], keys: Sequence[str], given: Mapping[str, str] | None, what: str) -> dict[str, str]:
    """Each name's key: `given`, else the key that is the name, holds it, or shares its first letter (`d_loss`
    for `discriminator`), when exactly one does."""
    if given:
        return dict(given)
    out = {}
    for name in names:
        low = name.lower()
        found = [k for k in keys if k.lower() == low or low in k.lower()]
        found = found or [k for k in keys if k[:1].lower() == low[:1] and (len(k) < 2 or not k[1].isalpha())]
        if len(found) == 1:
            out[name] = found[0]
        elif len(names) == 1 and len(keys) == 1:
            out[name] = keys[0]
    return out


def phase_optimizers(model: Any, models: Mapping[str, Any],
                     given: Mapping[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """(each phase's optimizer where known, the phases in order): every sub-model but those no optimizer
    trains. What an optimizer trains: the variables it was built for, once a step applied it; before that
    (the first fit()), its name. One optimizer whose name fits several sub-models (`g_optimizer`: `generator`
    and `generator_ema`) goes to the one whose name the others' hold (the copy is named after its original);
    the others train with none. `given` (`optimizers=`): those, and every sub-model a phase."""
    names = list(models)
    if given:
        return dict(given), names
    found = {k: v for k, v in vars(model).items() if isinstance(v, keras.optimizers.Optimizer)}
    guess = match(names, list(found), None, "optimizer")
    untrained: set[str] = set()
    for key in set(guess.values()):
        rivals = [n for n in names if guess.get(n) == key]
        if len(rivals) > 1:
            root = [n for n in rivals if all(n.lower() in r.lower() for r in rivals)]
            if len(root) != 1:
                raise UserError(f"Monitor: {key} could train {' or '.join(repr(n) for n in rivals)} (their names "
                                f"all fit it); pass optimizers={{'{rivals[0]}': model.{key}, ...}} with the one "
                                f"it trains")
            untrained |= {n for n in rivals if n != root[0]}
    trains = {k: {id(v) for v in vs} for k, opt in found.items()
              if (vs := keras_private.optimizer_trains(opt)) is not None}
    got: dict[str, Any] = {}
    for name in names:
        ids = {id(v) for v in models[name].weights}
        by_vars = [k for k, vs in trains.items() if vs & ids]
        if by_vars:  # measured: what the optimizers were built for
            got[name] = found[guess[name] if guess.get(name) in by_vars else by_vars[0]]
            untrained.discard(name)
        elif trains and (guess.get(name) in trains or guess.get(name) is None):
            untrained.add(name)  # the optimizers that ran train none of its weights: an EMA copy
        elif name in guess and name not in untrained:
            got[name] = found[guess[name]]
    if not got and len(names) == 1 and getattr(model, "optimizer", None) is not None:
        return {names[0]: model.optimizer}, names
    phases = [n for n in names if n not in untrained]
    return {n: o for n, o in got.items() if n in phases}, phases or names


def misread_phases(model: Any, models: Mapping[str, Any], phases: Sequence[str],
                   optimizers: Mapping[str, Any]) -> dict[str, str]:
    """After the first step (every optimizer the step applied is built now): one line for each phase the names
    got wrong, which the record can no longer change (its `start` event holds the phases): an optimizer that
    trains none of its phase's weights, or a phase that no optimizer trains (an EMA copy whose name fits none)."""
    found = {k: v for k, v in vars(model).items() if isinstance(v, keras.optimizers.Optimizer)}
    trains = {k: {id(v) for v in vs} for k, opt in found.items()
              if (vs := keras_private.optimizer_trains(opt)) is not None}
    if not trains:
        return {}
    key_of = {id(v): k for k, v in found.items()}
    out = {}
    for name in phases:
        ids = {id(v) for v in models[name].weights}
        opt = optimizers.get(name)
        key = key_of.get(id(opt))
        if key in trains and not trains[key] & ids:
            out[name] = (f"Monitor: {key} trains none of {name}'s variables (their names fit, its step says "
                         f"otherwise); pass optimizers= and models= with the sub-models the step trains, e.g. "
                         f"models={{'{name}': ...}}, optimizers={{'{name}': model.{key}}}")
        elif opt is None and not any(vs & ids for vs in trains.values()):
            out[name] = (f"Monitor: no optimizer trains {name} (an EMA copy?), yet it is recorded as a phase; pass "
                         f"models= without it to record it as no phase")
    return out

"""What the monitor knows of a user's models and phases, checked once at the start, in the shape the
trainer's own pieces read (`Described` stands where engine/prepare.py's `Prepared` stands).

Why that shape: the checkpoint store (engine/checkpoints.py), beginning and resuming a run directory
(loop/restore.py), the command table (loop/command_table.py) and the observers' handle (loop/handle.py) all
read a prepared run's phase names, variable paths, optimizers, alternation policy and generators. A user's own
loop offers those as well, so the monitor hands them over in the same names and reuses every one of those
pieces unchanged: its record, checkpoints and commands are a Freezeframe run's, not a copy of them.

Bad use is found here, before anything is written, each as one line: a model without variables, two
variables with one path (two models of one name), a phase that trains a variable of no model, an optimizer
shared by two phases.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Mapping, Sequence

from training_core.base.alternation import Policy, policy_from_dict
from training_core.base.config import RunConfig
from training_core.base.errors import UserError
from training_core.base.scopes import VarInfo, frozen_mask
from training_core.engine import keras_private
from training_core.engine.experiment_checks import is_stat, model_variables
from training_core.experiment.api import Models

#: where the monitor's run says it trains: one device, in this process (the `start` event's strategy)
PLACEMENT = SimpleNamespace(kind="single", replicas=1, chief=True, strategy=None)


@dataclass
class Described:
    """A user's models and phases, as the trainer's pieces read a prepared run (see the module docstring)."""

    config: RunConfig
    experiment: Any  # .models (checkpoints, samples), .metrics = None (no measure beside training)
    device_name: str
    variables: list[Any]  # every variable of every model, once
    var_infos: list[VarInfo]
    phase_names: list[str]
    phase_paths: list[tuple[str, ...]]
    phase_vars: list[list[Any]]
    optimizers: list[Any]  # one per phase; None where the monitor does not know it (fit())
    policy: Policy
    rng: Any  # tf.random.Generator: checkpointed, for a loop that draws its batches from it
    sample_rng: Any
    placement: Any = field(default_factory=lambda: PLACEMENT)
    made_trainable: set[int] = field(default_factory=set)  # ids of the weights the models made trainable
    stat_paths: tuple[str, ...] = ()
    #: (phase, freeze, declared) -> the phase's scoped-frozen mask, statistics left out (`frozen_flags`)
    scoped_cache: dict = field(default_factory=dict)

    @property
    def steps(self) -> list[Any]:
        """The trainer's compiled steps: none here (the user's loop steps)."""
        return []


def _path_of(v: Any) -> str:
    return str(getattr(v, "path", None) or v.name)


def describe(models: Mapping[str, Any], phases: Sequence[tuple[str, Any, Sequence[Any]]], config: RunConfig,
             schedule: dict | None = None) -> Described:
    """`models` by name; `phases` as (name, optimizer or None, the variables its record holds), in order."""
    import tensorflow as tf

    from training_core.engine.devices import resolve_device
    if not isinstance(models, Mapping) or not models:
        raise UserError("models must be a dict of name -> Keras model, e.g. models={'generator': g, "
                        "'discriminator': d}")
    variables = model_variables(Models(models))
    _check_paths(models, variables)
    known = {id(v) for v in variables}
    names, seen_opts = [], {}
    for name, opt, vs in phases:
        if not isinstance(name, str) or not name or "/" in name:
            raise UserError(f"a phase name must be a non-empty string without '/', got {name!r}")
        stray = [v for v in vs if id(v) not in known]
        if stray:
            raise UserError(f"phase {name!r} trains {_path_of(stray[0])}, a variable of none of the run's models "
                            f"({', '.join(models)}); add its model to models=")
        if not vs:
            raise UserError(f"phase {name!r} trains no variable; give it a model or the scopes of trainable weights")
        if opt is not None:
            other = seen_opts.get(id(opt))
            if other is not None:
                raise UserError(f"phases {other!r} and {name!r} share one optimizer; give each phase an optimizer "
                                f"of its own (its slots, step count and learning rate are the phase's)")
            seen_opts[id(opt)] = name
        names.append(name)
    made = {id(v) for m in models.values() for v in keras_private.weights_made_trainable(m)}
    infos = [VarInfo(_path_of(v), tuple(int(d) for d in v.shape), str(v.dtype), bool(v.trainable)) for v in variables]
    with tf.init_scope():
        rng = tf.random.Generator.from_seed(config.seed)
        sample_rng = tf.random.Generator.from_seed(config.seed + 1)
    return Described(
        config=config, experiment=SimpleNamespace(models=Models(models), metrics=None, sample=None, extra={}),
        device_name=resolve_device("auto")[1], variables=variables, var_infos=infos, phase_names=names,
        phase_paths=[tuple(_path_of(v) for v in vs) for _, _, vs in phases],
        phase_vars=[list(vs) for _, _, vs in phases], optimizers=[opt for _, opt, _ in phases],
        policy=policy_from_dict(schedule or {}, names, "the run"), rng=rng, sample_rng=sample_rng, made_trainable=made,
        stat_paths=tuple(_path_of(v) for v in variables if is_stat(v) and id(v) not in made))


def _check_paths(models: Mapping[str, Any], variables: list[Any]) -> None:
    """Freezing, the record and checkpoints name a variable by its path: two with one path (two models Keras
    gave one name) would be one variable to all of them."""
    by_path: dict[str, Any] = {}
    for v in variables:
        p = _path_of(v)
        if p in by_path:
            raise UserError(f"two variables are both named {p!r} (two models with the name {p.split('/')[0]!r}?); "
                            f"name each model (keras.Sequential([...], name='generator'))")
        by_path[p] = v


def resolve_trains(trains: Any, models: Mapping[str, Any], what: str) -> list[Any]:
    """The trainable variables a phase trains: a Keras model (its `trainable_variables`), a scope path
    (`"discriminator"`, `"generator/dense_1"`), or a list of those."""
    items = trains if isinstance(trains, (list, tuple)) else [trains]
    out, seen = [], set()
    everything = model_variables(Models(models))
    for item in items:
        if isinstance(item, str):
            got = [v for v, m in zip(everything, frozen_mask([_path_of(v) for v in everything], [item]))
                   if m and v.trainable]
            if not got:
                raise UserError(f"{what} trains {item!r}, which names no trainable variable of the run's models "
                                f"(their scopes start with {', '.join(sorted({_path_of(v).split('/')[0] for v in everything}))})")
        elif hasattr(item, "trainable_variables"):
            got = list(item.trainable_variables)
        else:
            raise UserError(f"{what} trains {item!r}; give a Keras model or a scope path such as 'discriminator'")
        out += [v for v in got if id(v) not in seen and not seen.add(id(v))]
    return out


def frozen_flags(d: Described, phase: int, freeze: Sequence[str], declared: Sequence[str]) -> Any:
    """Per variable of a phase: frozen now, as the record's `frozen` column says it. A variable is frozen when
    the run's freeze set or the user's declared-frozen scopes cover it (statistics never: they move in a
    forward pass), or when it is a weight its model made trainable and its flag now reads False
    (`layer.trainable = False`, which does nothing to a step compiled before it)."""
    import numpy as np
    key = (phase, tuple(freeze), tuple(declared))
    scoped = d.scoped_cache.get(key)
    if scoped is None:  # (matching scopes against paths is the costly part, and the set seldom changes)
        paths, stats = d.phase_paths[phase], set(d.stat_paths)
        scoped = d.scoped_cache[key] = (np.array(frozen_mask(paths, list(freeze) + list(declared)), dtype=bool)
                                        & np.array([p not in stats for p in paths], dtype=bool))
    made = d.made_trainable
    return scoped | np.array([id(v) in made and not v.trainable for v in d.phase_vars[phase]], dtype=bool)

"""monitor/described.py: a user's models and phases, checked once, and which variables count as frozen.

Why: bad use must be one line before anything is written; and the leak check stands on `frozen_flags`, which
must call a weight its author set `trainable = False` frozen, and a BatchNormalization statistic never (it moves
in every forward pass, and its flag reads False too).
"""
from __future__ import annotations

import keras
import pytest

from training_core.base.config import RunConfig
from training_core.base.errors import UserError
from training_core.monitor.described import describe, frozen_flags, resolve_trains


def _models():
    g = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="dense"),
                          keras.layers.BatchNormalization(name="bn")], name="generator")
    d = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="dense")], name="discriminator")
    return {"generator": g, "discriminator": d}


def _described(models):
    phases = [(name, None, list(m.weights)) for name, m in models.items()]
    return describe(models, phases, RunConfig(example="own-loop"))


def test_a_weight_set_not_trainable_is_frozen_and_a_statistic_never():
    models = _models()
    d = _described(models)
    g_paths = d.phase_paths[0]
    assert "generator/bn/moving_mean" in g_paths and d.stat_paths == ("generator/bn/moving_mean",
                                                                     "generator/bn/moving_variance")
    assert not frozen_flags(d, 0, (), ()).any()
    models["generator"].trainable = False
    flags = dict(zip(g_paths, frozen_flags(d, 0, (), ())))
    assert flags["generator/dense/kernel"] and flags["generator/bn/gamma"] and not flags["generator/bn/moving_mean"]
    models["generator"].trainable = True
    flags = dict(zip(g_paths, frozen_flags(d, 0, ("generator",), ())))  # the freeze set: weights, not statistics
    assert flags["generator/dense/kernel"] and not flags["generator/bn/moving_variance"]
    assert frozen_flags(d, 1, (), ("discriminator/dense/bias",)).tolist() == [False, True]  # declared


def test_two_models_of_one_name_are_one_line():
    a = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="dense")], name="net")
    b = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="dense")], name="net")
    with pytest.raises(UserError, match=r"two variables are both named 'net/dense/kernel' \(two models with the "
                                        r"name 'net'\?\); name each model"):
        _described({"a": a, "b": b})


def test_a_model_without_variables_is_one_line():
    with pytest.raises(UserError, match="model 'g' has no variables yet; build it"):
        _described({"g": keras.Sequential([keras.layers.Dense(1)])})


def test_what_a_phase_trains_by_model_or_scope():
    models = _models()
    assert [v.path for v in resolve_trains("generator/dense", models, "phase 'G'")] == [
        "generator/dense/kernel", "generator/dense/bias"]
    assert len(resolve_trains([models["discriminator"], "generator/bn"], models, "phase 'X'")) == 4
    with pytest.raises(UserError, match=r"phase 'G' trains 'gen', which names no trainable variable of the run's "
                                        r"models \(their scopes start with discriminator, generator\)"):
        resolve_trains("gen", models, "phase 'G'")

"""The plain Keras loop the exactness tests hold the trainer to (test_exactness.py, test_datasets.py): the 12-layer
net of their experiment files, the freeze set changed mid-run, and the loop that trains it by hand, per step
`optimizer.apply(gradients of the unfrozen variables, unfrozen variables)` (`exact`) or the gradients times a gate
of 0 or 1 applied to all of them (`gate`), with the check that a run's weights, optimizer slots and every loss
equal the loop's bit for bit.

Why one module: the in-memory regression and the tf.data pipeline are held to the same loop, and each had its own
copy of it."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import tensorflow as tf

from training_core import read_scalars
from training_core.experiment.api import Models
from training_core.experiment.loading import load_module

from .helpers import assert_bitwise_equal, snapshot

#: the net of the experiment files (text): phase A trains its first six layers (12 variables), phase B the last six
DEEP_NET = '''
def net():
    layers = [keras.layers.Dense(7, activation="tanh", name=f"a{i}") for i in range(6)]
    layers += [keras.layers.Dense(7 if i < 5 else 2, activation="tanh" if i < 5 else None, name=f"b{i}")
               for i in range(6)]
    return keras.Sequential([keras.Input((5,)), *layers], name="net")
'''

STEPS = 24
#: steps after which the freeze set changes: 4 of A's and 5 of B's 12 variables, then others, then none
FREEZES = {0: ["net/a1", "net/a3/bias", "net/a4/kernel", "net/b0", "net/b2/kernel", "net/b5/bias", "net/b3"],
           8: ["net/a0/kernel", "net/a5", "net/b1", "net/b4/bias"],
           16: []}


def frozen_at(step: int, paths: list[str]) -> set[str]:
    """Which of `paths` the freeze set in force at `step` holds."""
    scopes = FREEZES[max(k for k in FREEZES if k < step)]
    return {p for p in paths if any(p == s or p.startswith(s + "/") for s in scopes)}


def reference(path, initial: dict, method: str = "exact",
              batches: Callable[[ModuleType], Iterator[Any]] | None = None) -> tuple[dict, dict, list[float]]:
    """The plain Keras loop over the file at `path`, from the weights `initial`: per step (A on odd steps, B on
    even ones), gradients of the phase's loss; `exact` applies those of the unfrozen variables to the unfrozen
    variables, `gate` applies g * gradient to all of them. The loss reads `ctx.data`, the file's whole `DATA`, or,
    with `batches`, `ctx.batch`, one batch a step of the iterator `batches(module)` makes. Returns the weights,
    each phase's optimizer slots and every step's loss."""
    mod = load_module(path)
    net = mod.net()
    for v in net.variables:
        v.assign(initial[v.path])
    stream = None if batches is None else batches(mod)
    data = tf.constant(mod.DATA) if stream is None else None
    phases = {name: [v for v in net.trainable_variables if v.path.startswith(f"net/{name.lower()}")]
              for name in ("A", "B")}
    assert all(len(vs) == 12 for vs in phases.values())
    opts = {name: mod.make_optimizer(name) for name in phases}
    for name, vs in phases.items():
        opts[name].build(vs)
    compiled, losses = {}, []
    #: gate's g per variable, a variable as in the trainer, so that one trace serves every freeze set
    gates = {name: [tf.Variable(1.0) for _ in vs] for name, vs in phases.items()}

    def ctx(batch: tuple) -> SimpleNamespace:
        return SimpleNamespace(data=data, batch=batch[0] if batch else None, models=Models(net=net))

    def make(name: str, frozen: frozenset):
        opt, vs = opts[name], phases[name]

        @tf.function(autograph=False)
        def exact(*batch):
            live = [v for v in vs if v.path not in frozen]
            with tf.GradientTape() as tape:
                loss = mod.loss(ctx(batch))
            opt.apply(tape.gradient(loss, live), live)
            return loss

        @tf.function(autograph=False)
        def gate(*batch):
            with tf.GradientTape() as tape:
                loss = mod.loss(ctx(batch))
            grads = tape.gradient(loss, vs)
            # d/dx [g*x + (1-g)*stop_gradient(x)] = g
            opt.apply([grad * g for grad, g in zip(grads, gates[name])], vs)
            return loss
        return exact if method == "exact" else gate

    for s in range(1, STEPS + 1):
        name = "A" if s % 2 else "B"
        frozen = frozenset(frozen_at(s, [v.path for v in phases[name]]))
        for g, v in zip(gates[name], phases[name]):
            g.assign(0.0 if v.path in frozen else 1.0)
        key = (name, frozen if method == "exact" else None)
        if key not in compiled:
            compiled[key] = make(name, frozen)
        losses.append(float(compiled[key](*(() if stream is None else (next(stream),))).numpy()))
    weights = {v.path: v.numpy() for v in net.variables}
    slots = {name: {v.path.split("/", 1)[1]: v.numpy() for v in opt.variables} for name, opt in opts.items()}
    return weights, slots, losses


def assert_equals_reference(trainer, run_dir, path, initial: dict, method: str = "exact",
                            batches: Callable[[ModuleType], Iterator[Any]] | None = None) -> None:
    """Weights, optimizer slots and every recorded loss of `trainer`'s run equal the plain loop's bit for bit."""
    weights, slots, losses = reference(path, initial, method, batches)
    assert_bitwise_equal(snapshot(trainer), weights, "model variables")
    for name, opt_t in zip(trainer.prepared.phase_names, trainer.prepared.optimizers):
        assert_bitwise_equal({v.path.split("/", 1)[1]: v.numpy() for v in opt_t.variables}, slots[name],
                             f"optimizer of phase {name}")
    sc = read_scalars(run_dir)
    recorded = sorted([(s, v) for tag in ("loss/A", "loss/B") for s, v in zip(sc[tag].steps, sc[tag].values)])
    np.testing.assert_array_equal(np.array([v for _, v in recorded], dtype=np.float32), np.float32(losses))

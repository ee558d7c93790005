"""Exact means exact: on phases of 12 variables, with the freeze set changed mid-run, the trainer's `exact`
method equals a plain Keras loop that calls `optimizer.apply(grads_of_unfrozen, unfrozen)` bit for bit
(weights, optimizer slots and every loss), for SGD with momentum, Adam and AdamW, with `clipnorm`,
`clipvalue` and `global_clipnorm`; and `gate` equals the loop that freezes by
`g*x + (1-g)*tf.stop_gradient(x)`, whose gradient is the gradient times g.

Each run pairs two optimizer settings, one per phase (each phase has its own optimizer, and its
arithmetic does not depend on the other's): every setting is checked with half the runs, which are
mostly tracing.

A 2-variable phase hides float-order effects (a global norm over two values barely has an order), hence
the depth. Both sides return their loss from the compiled function, as a training loop does: TensorFlow
fuses the forward pass differently when the loss is an output, so a reference that drops its loss is
not the same arithmetic.
"""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from training_core import SetFreeze, SetFreezeMethod, read_scalars
from training_core.experiment.api import Models
from training_core.experiment.loading import load_module

from .helpers import Script, assert_bitwise_equal, config, run, snapshot, write_file

_DEEP = '''
"""A deterministic 12-layer regression (build() form): phase A trains the first six layers (12 variables),
phase B the last six; the whole data every step and no random draws, so a test can recompute every step."""
import keras
import numpy as np

from training_core import Experiment, Phase

_rng = np.random.default_rng(0)
X = _rng.normal(size=(64, 5)).astype("float32")
Y = np.sin(X @ _rng.normal(size=(5, 2))).astype("float32")
DATA = np.concatenate([X, Y], 1)


def make_optimizer(phase):
    return {opt_a} if phase == "A" else {opt_b}


def net():
    layers = [keras.layers.Dense(7, activation="tanh", name=f"a{{i}}") for i in range(6)]
    layers += [keras.layers.Dense(7 if i < 5 else 2, activation="tanh" if i < 5 else None, name=f"b{{i}}")
               for i in range(6)]
    return keras.Sequential([keras.Input((5,)), *layers], name="net")


def loss(ctx):
    x, y = ctx.data[:, :5], ctx.data[:, 5:]
    return keras.ops.mean(keras.ops.square(ctx.models["net"](x, training=True) - y))


def build():
    return Experiment(name="deep", models={{"net": net()}}, data=DATA, batch_size=None,
                      phases=[Phase("A", loss, trains=["net/a0", "net/a1", "net/a2", "net/a3", "net/a4", "net/a5"],
                                    optimizer=make_optimizer("A")),
                              Phase("B", loss, trains=["net/b0", "net/b1", "net/b2", "net/b3", "net/b4", "net/b5"],
                                    optimizer=make_optimizer("B"))],
                      default_ratio=[1, 1])
'''

def deep_source(opt_a: str, opt_b: str | None = None) -> str:
    """The 12-layer experiment file with these optimizer expressions for phase A and phase B (default: A's)."""
    return _DEEP.format(opt_a=opt_a, opt_b=opt_a if opt_b is None else opt_b)


OPTIMIZERS = {
    "sgdm": "keras.optimizers.SGD(0.05, momentum=0.9)",
    "adam": "keras.optimizers.Adam(0.01)",
    "adamw": "keras.optimizers.AdamW(0.01, weight_decay=0.1)",
    "sgdm_global": "keras.optimizers.SGD(0.05, momentum=0.9, global_clipnorm=0.05)",
    "adam_global": "keras.optimizers.Adam(0.01, global_clipnorm=0.05)",
    "adamw_global": "keras.optimizers.AdamW(0.01, weight_decay=0.1, global_clipnorm=0.05)",
    "adam_clipnorm": "keras.optimizers.Adam(0.01, clipnorm=0.02)",
    "adamw_clipvalue": "keras.optimizers.AdamW(0.01, weight_decay=0.1, clipvalue=0.005)",
}
STEPS = 24
#: steps after which the freeze set changes: 4 of A's and 5 of B's 12 variables, then others, then none
FREEZES = {0: ["net/a1", "net/a3/bias", "net/a4/kernel", "net/b0", "net/b2/kernel", "net/b5/bias", "net/b3"],
           8: ["net/a0/kernel", "net/a5", "net/b1", "net/b4/bias"],
           16: []}


def _frozen_at(step: int, paths: list[str]) -> set[str]:
    scopes = FREEZES[max(k for k in FREEZES if k < step)]
    return {p for p in paths if any(p == s or p.startswith(s + "/") for s in scopes)}


def _reference(path, initial: dict, method: str) -> tuple[dict, dict, list[float]]:
    """The plain Keras loop: per step, gradients of the phase's loss; `exact` applies those of the unfrozen
    variables to the unfrozen variables, `gate` applies g * gradient to all of them."""
    mod = load_module(path)
    net = mod.net()
    for v in net.variables:
        v.assign(initial[v.path])
    ctx = type("Ctx", (), {"data": tf.constant(mod.DATA), "models": Models(net=net)})()
    phases = {name: [v for v in net.trainable_variables if v.path.startswith(f"net/{name.lower()}")]
              for name in ("A", "B")}
    assert all(len(vs) == 12 for vs in phases.values())
    opts = {name: mod.make_optimizer(name) for name in phases}
    for name, vs in phases.items():
        opts[name].build(vs)
    compiled, losses = {}, []
    #: gate's g per variable, a variable as in the trainer, so that one trace serves every freeze set
    gates = {name: [tf.Variable(1.0) for _ in vs] for name, vs in phases.items()}

    def make(name: str, frozen: frozenset):
        opt, vs = opts[name], phases[name]

        @tf.function(autograph=False)
        def exact():
            live = [v for v in vs if v.path not in frozen]
            with tf.GradientTape() as tape:
                loss = mod.loss(ctx)
            opt.apply(tape.gradient(loss, live), live)
            return loss

        @tf.function(autograph=False)
        def gate():
            with tf.GradientTape() as tape:
                loss = mod.loss(ctx)
            grads = tape.gradient(loss, vs)
            # d/dx [g*x + (1-g)*stop_gradient(x)] = g
            opt.apply([grad * g for grad, g in zip(grads, gates[name])], vs)
            return loss
        return exact if method == "exact" else gate

    for s in range(1, STEPS + 1):
        name = "A" if s % 2 else "B"
        frozen = frozenset(_frozen_at(s, [v.path for v in phases[name]]))
        for g, v in zip(gates[name], phases[name]):
            g.assign(0.0 if v.path in frozen else 1.0)
        key = (name, frozen if method == "exact" else None)
        if key not in compiled:
            compiled[key] = make(name, frozen)
        losses.append(float(compiled[key]().numpy()))
    weights = {v.path: v.numpy() for v in net.variables}
    slots = {name: {v.path.split("/", 1)[1]: v.numpy() for v in opt.variables} for name, opt in opts.items()}
    return weights, slots, losses


def assert_equals_reference(trainer, run_dir, path, initial: dict, method: str) -> None:
    """Weights, optimizer slots and every recorded loss of `trainer`'s run equal the plain loop's bit for bit."""
    weights, slots, losses = _reference(path, initial, method)
    assert_bitwise_equal(snapshot(trainer), weights, "model variables")
    for name, opt_t in zip(trainer.prepared.phase_names, trainer.prepared.optimizers):
        assert_bitwise_equal({v.path.split("/", 1)[1]: v.numpy() for v in opt_t.variables}, slots[name],
                             f"optimizer of phase {name}")
    sc = read_scalars(run_dir)
    recorded = sorted([(s, v) for tag in ("loss/A", "loss/B") for s, v in zip(sc[tag].steps, sc[tag].values)])
    np.testing.assert_array_equal(np.array([v for _, v in recorded], dtype=np.float32), np.float32(losses))


#: (phase A's optimizer, phase B's, method): exact with every optimizer setting; gate (whose arithmetic is the
#: plain loop's with zeroed gradients) with one of each family, clipping included: its cases took as long as
#: exact's and found nothing exact's did not
CASES = [("sgdm", "adam_global", "exact"), ("adam", "adamw_clipvalue", "exact"), ("adamw", "sgdm_global", "exact"),
         ("adamw_global", "adam_clipnorm", "exact"), ("sgdm", "adamw_global", "gate"),
         ("adam_clipnorm", "adam", "gate")]
assert {o for a, b, _ in CASES for o in (a, b)} == set(OPTIMIZERS)


@pytest.mark.parametrize("opt_a, opt_b, method", CASES)
def test_wide_phases_equal_a_plain_keras_loop_bit_for_bit(tmp_path, run_dir, opt_a, opt_b, method):
    path = write_file(tmp_path, f"deep_{opt_a}_{opt_b}.py",
                      deep_source(OPTIMIZERS[opt_a], OPTIMIZERS[opt_b]))
    initial = {}
    script = Script({0: [lambda t: initial.update(snapshot(t))],
                     8: [SetFreeze(FREEZES[8])], 16: [SetFreeze(FREEZES[16])]})
    trainer = run(config(path, run_dir, steps=STEPS, freeze=FREEZES[0], freeze_method=method), script)
    assert len(trainer.prepared.phase_paths[0]) == len(trainer.prepared.phase_paths[1]) == 12
    assert trainer.retraces == 0

    assert_equals_reference(trainer, run_dir, path, initial, method)
    if method == "gate":  # momentum and decay move gated variables: the leak is real, in Adam's phases
        leaking = {e.phase for e in script.events if e.kind == "leak"}
        assert {p for p, o in (("A", opt_a), ("B", opt_b)) if "adam" in o} <= leaking, leaking


def test_switching_method_mid_run_keeps_each_methods_arithmetic(tmp_path, run_dir):
    """exact -> gate -> exact on one run: frozen variables hold still exactly while exact is on, and move
    under gate (they trained for 4 steps first, so Adam's momentum is not zero)."""
    path = write_file(tmp_path, "deep_adam.py", deep_source(OPTIMIZERS["adam_global"]))
    held = {}

    def keep(name):
        return lambda t: held.__setitem__(name, snapshot(t, ["net/a1/kernel", "net/b0/bias"]))

    script = Script({4: [SetFreeze(["net/a1", "net/b0"]), keep("exact_1")], 8: [keep("exact_2"),
                                                                                   SetFreezeMethod("gate")],
                     14: [keep("gate_end"), SetFreezeMethod("exact")], 20: [keep("exact_3")]})
    run(config(path, run_dir, steps=20), script)
    assert_bitwise_equal(held["exact_1"], held["exact_2"], "exact")
    assert_bitwise_equal(held["gate_end"], held["exact_3"], "exact again")
    assert held["exact_2"]["net/a1/kernel"].tobytes() != held["gate_end"]["net/a1/kernel"].tobytes(), "gate leaks"

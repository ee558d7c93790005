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

import pytest

from training_core import SetFreeze, SetFreezeMethod

from .helpers import Script, assert_bitwise_equal, config, run, snapshot, write_file
from .plain_loop import DEEP_NET, FREEZES, STEPS, assert_equals_reference

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

{net}

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
    return _DEEP.format(opt_a=opt_a, opt_b=opt_a if opt_b is None else opt_b, net=DEEP_NET)


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

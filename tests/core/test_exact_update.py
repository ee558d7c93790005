"""monitor/exact_update.py through `run.apply_gradients`: a hand-written loop's update with the run's live
freeze set honoured exactly. On two phases of 12 variables, with the freeze set changed twice mid-run (by
commands, as the window sends them), the weights, every optimizer variable and every loss equal a plain Keras
loop that calls `optimizer.apply(grads_of_unfrozen, unfrozen)` bit for bit (np.array_equal), for every
optimizer option the trainer's exact method supports; and the user's step is traced once per phase. Also
with a phase frozen whole mid-run (then the whole model, then thawed), against a plain loop that skips that
phase's update: its optimizer's step count must not move while it is frozen.

Why: the monitored step takes one graph for every freeze set (a `tf.cond` between `apply`'s own pieces and the
masked update); a difference of one bit in either, or a retrace, would be the kind of silent change the
product exists to show.
"""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from training_core import SetFreeze
from training_core.base.errors import UserError
from training_core.monitor import start_run
from training_core.monitor.exact_update import ExactUpdate

OPTIMIZERS = {
    "sgdm": lambda: keras.optimizers.SGD(0.05, momentum=0.9),
    "adam": lambda: keras.optimizers.Adam(0.01),
    "adamw": lambda: keras.optimizers.AdamW(0.01, weight_decay=0.1),
    "sgdm_global": lambda: keras.optimizers.SGD(0.05, momentum=0.9, global_clipnorm=0.05),
    "adam_global": lambda: keras.optimizers.Adam(0.01, global_clipnorm=0.05),
    "adamw_global": lambda: keras.optimizers.AdamW(0.01, weight_decay=0.1, global_clipnorm=0.05),
    "adam_clipnorm": lambda: keras.optimizers.Adam(0.01, clipnorm=0.02),
    "adamw_clipvalue": lambda: keras.optimizers.AdamW(0.01, weight_decay=0.1, clipvalue=0.005),
}
STEPS = 24
#: before which step each freeze set is in force: 4 of A's and 5 of B's 12 variables, then others, then none
FREEZES = {1: ["net/a1", "net/a3/bias", "net/a4/kernel", "net/b0", "net/b2/kernel", "net/b5/bias", "net/b3"],
           9: ["net/a0/kernel", "net/a5", "net/b1", "net/b4/bias"],
           17: []}
_rng = np.random.default_rng(0)
X = _rng.normal(size=(64, 5)).astype("float32")
Y = np.sin(X @ _rng.normal(size=(5, 2))).astype("float32")


def _net() -> keras.Model:
    layers = [keras.layers.Dense(7, activation="tanh", name=f"a{i}") for i in range(6)]
    layers += [keras.layers.Dense(7 if i < 5 else 2, activation="tanh" if i < 5 else None, name=f"b{i}")
               for i in range(6)]
    return keras.Sequential([keras.Input((5,)), *layers], name="net")


def _loss(net: keras.Model) -> tf.Tensor:
    return keras.ops.mean(keras.ops.square(net(X, training=True) - Y))


def _frozen_at(step: int, freezes: dict) -> list[str]:
    return freezes[max(k for k in freezes if k <= step)]


def _phase_vars(net: keras.Model) -> dict[str, list]:
    return {name: [v for v in net.trainable_variables if v.path.startswith(f"net/{name.lower()}")]
            for name in ("A", "B")}


def _reference(initial: dict, opt_a: str, opt_b: str, freezes: dict) -> tuple[dict, dict, list]:
    """The plain Keras loop: gradients of the unfrozen variables applied to the unfrozen variables (none: a
    phase frozen whole calls `apply([], [])`, which Keras makes a no-op, its step count included)."""
    net = _net()
    for v in net.variables:
        v.assign(initial[v.path])
    phases = _phase_vars(net)
    opts = {"A": OPTIMIZERS[opt_a](), "B": OPTIMIZERS[opt_b]()}
    for name, vs in phases.items():
        opts[name].build(vs)
    compiled, losses = {}, []
    for s in range(1, STEPS + 1):
        name = "A" if s % 2 else "B"
        live = tuple(v for v in phases[name] if not any(v.path == f or v.path.startswith(f + "/")
                                                           for f in _frozen_at(s, freezes)))
        key = (name, tuple(v.path for v in live))
        if key not in compiled:
            compiled[key] = _plain_step(net, opts[name], list(live))
        losses.append(compiled[key]().numpy())
    return ({v.path: v.numpy() for v in net.variables},
            {name: {v.path.split("/", 1)[1]: v.numpy() for v in opt.variables} for name, opt in opts.items()}, losses)


def _plain_step(net: keras.Model, opt: keras.optimizers.Optimizer, live: list):
    @tf.function(autograph=False)
    def step():
        with tf.GradientTape() as tape:
            loss = _loss(net)
        opt.apply(tape.gradient(loss, live), live)
        return loss
    return step


PAIRS = [("sgdm", "adam_global"), ("adam", "adamw_clipvalue"), ("adamw", "sgdm_global"), ("adamw_global", "adam_clipnorm")]
#: a phase frozen whole mid-run, then the whole model (both phases), then thawed: the plain loop skips a frozen
#: phase's update, so its step count (Adam's bias correction, a schedule) stays where it was
WHOLE = {1: ["net/a1", "net/b0"], 5: [f"net/a{i}" for i in range(6)] + ["net/b3"], 11: ["net"], 15: ["net/b2"]}


def _monitored(tmp_path, opt_a: str, opt_b: str, freezes: dict) -> None:
    """The loop with `run.apply_gradients`, the freeze set sent as the window sends it at each of `freezes`'
    steps, checked against `_reference`: weights, optimizer variables and losses bit for bit, one trace a phase,
    and no update recorded for a variable at a step it is frozen."""
    keras.utils.set_random_seed(1)
    net = _net()
    initial = {v.path: v.numpy() for v in net.variables}
    phases = _phase_vars(net)
    assert all(len(vs) == 12 for vs in phases.values())
    opts = {"A": OPTIMIZERS[opt_a](), "B": OPTIMIZERS[opt_b]()}
    run = start_run(tmp_path / "run", models={"net": net},
                    phases={"A": (opts["A"], [f"net/a{i}" for i in range(6)]),
                            "B": (opts["B"], [f"net/b{i}" for i in range(6)])},
                    freeze=freezes[1], var_every=1, tensorboard=False, quiet=True)

    steps, losses = _steps(run, net, opts), []
    with run:
        for s in range(1, STEPS + 1):
            if s in freezes and s > 1:
                run.send(SetFreeze(tuple(freezes[s])))  # as the window sends it: applied at the next boundary
            assert run.boundary()
            name = "A" if s % 2 else "B"
            loss = steps[name]()
            losses.append(loss.numpy())
            run.log(s, {name: loss})

    weights, slots, ref_losses = _reference(initial, opt_a, opt_b, freezes)
    assert [steps[n].experimental_get_tracing_count() for n in "AB"] == [1, 1]  # no retrace for the freeze changes
    for v in net.variables:
        assert np.array_equal(v.numpy(), weights[v.path]), f"{v.path} differs from the plain loop"
    for name, opt in opts.items():
        mine = {v.path.split("/", 1)[1]: v.numpy() for v in opt.variables}  # (optimizers are named sgd, sgd_1)
        assert mine.keys() == slots[name].keys()
        for path, value in mine.items():
            assert np.array_equal(value, slots[name][path]), f"optimizer variable {path} differs from the plain loop"
    assert np.array_equal(np.float32(losses), np.float32(ref_losses))
    # and frozen means frozen in the record: the steps at which a variable is frozen have no update
    from training_core.rundir.varstore import read_variables
    for rows in read_variables(tmp_path / "run"):
        assert rows.frozen.any() and (rows.update_norm[rows.frozen] == 0).all()


def _steps(run, net, opts) -> dict:
    """Each phase's user step, traced with `tf.function`: its loss's gradients through `run.apply_gradients`."""
    phases = _phase_vars(net)

    def make(name):
        def step():
            vs = phases[name]
            with tf.GradientTape() as tape:
                loss = _loss(net)
            run.apply_gradients(name, opts[name], tape.gradient(loss, vs), vs)
            return loss
        return tf.function(step, autograph=False)
    return {"A": make("A"), "B": make("B")}


@pytest.mark.parametrize("opt_a, opt_b", PAIRS)
def test_apply_gradients_equals_optimizer_apply_on_the_unfrozen_bit_for_bit(tmp_path, opt_a, opt_b):
    _monitored(tmp_path, opt_a, opt_b, FREEZES)


@pytest.mark.parametrize("opt_a, opt_b", PAIRS)
def test_a_phase_frozen_whole_then_thawed_equals_a_loop_that_skips_its_update(tmp_path, opt_a, opt_b):
    """A phase frozen whole (its model ticked in the scope tree) is a loop that does not call its optimizer:
    the step count stays, so Adam's bias correction after the thaw is the plain loop's (it counted 10 of 7)."""
    _monitored(tmp_path, opt_a, opt_b, WHOLE)


def test_a_phase_is_told_of_a_variable_it_does_not_train(tmp_path):
    net = _net()
    update = ExactUpdate("A", keras.optimizers.Adam(0.01), _phase_vars(net)["A"])
    with pytest.raises(UserError, match=r"'net/b0/kernel' is not a variable phase 'A' trains"):
        update.apply([tf.zeros_like(v) for v in _phase_vars(net)["B"][:1]], _phase_vars(net)["B"][:1])


@pytest.mark.parametrize("options, refused", [(dict(use_ema=True), "use_ema"),
                                              (dict(gradient_accumulation_steps=2), "gradient_accumulation_steps"),
                                              (dict(loss_scale_factor=128.0), "loss-scaling")])
def test_optimizer_options_the_exact_method_cannot_honour_are_refused_in_one_line(options, refused):
    with pytest.raises(UserError, match=refused):
        ExactUpdate("A", keras.optimizers.Adam(0.01, **options), _phase_vars(_net())["A"])

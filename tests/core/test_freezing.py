"""Exact freezing: a frozen variable and its optimizer slots do not change by a single bit, whatever
the optimizer and however often the freeze set changes; the masked step is Keras' own "leave it out
of var_list"; the leaky gate method really leaks; BatchNormalization statistics stay put."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from training_core import SetFreeze, SetFreezeMethod, Trainer, UserError, read_events
from training_core.experiment.api import Models
from training_core.experiment.loading import load_module

from .helpers import (OPTIMIZERS, Script, assert_bitwise_equal, config, frozen_state, phase_of_step, regression, run,
                      snapshot, tiny_gan, variables, write_file)

G1 = ("generator/dense_1/kernel", "generator/dense_1/bias")


@pytest.mark.parametrize("opt", ["sgdm", "adam", "adamw"])
def test_frozen_variable_and_slots_bitwise_unchanged_through_freeze_unfreeze_refreeze(tmp_path, run_dir, opt):
    """D steps run the fast variant (nothing of D is frozen), G steps the masked one."""
    states: dict[str, dict] = {}

    def keep(name):
        return lambda t: states.__setitem__(name, frozen_state(t, G1))

    script = Script({
        10: [keep("before_freeze"), SetFreeze(["generator/dense_1"])],
        30: [keep("end_freeze_1"), SetFreeze([])],
        40: [keep("before_refreeze"), SetFreeze(["generator/dense_1"])],
    })
    trainer = run(config(tiny_gan(tmp_path, opt), run_dir, steps=60), script)
    final = frozen_state(trainer, G1)

    assert_bitwise_equal(states["before_freeze"], states["end_freeze_1"], "first freeze")
    assert_bitwise_equal(states["before_refreeze"], final, "refreeze")
    moved = [k for k in final if final[k].tobytes() != states["end_freeze_1"][k].tobytes()]
    assert sorted(moved) == sorted(final), f"unfrozen in between, but only {moved} moved"

    steps, norm, frozen = script.column("update_norm", "generator/dense_1/kernel")
    assert (steps % 2 == 0).all()  # ratio 1:1: G runs every second step
    in_freeze = ((steps > 10) & (steps <= 30)) | (steps > 40)
    np.testing.assert_array_equal(frozen, in_freeze)
    assert (norm[in_freeze] == 0).all() and (norm[~in_freeze] > 0).all()
    _, other, _ = script.column("update_norm", "generator/dense_10/kernel")
    assert (other > 0).all(), "generator/dense_10 is not under generator/dense_1 and keeps training"
    assert trainer.retraces == 0 and not script.kinds("leak", "retrace")
    assert [e.step for e in script.kinds("freeze")] == [10, 30, 40]


@pytest.mark.parametrize("opt", ["sgdm", "adam", "adamw", "adam_clip"])
def test_masked_step_equals_keras_apply_on_a_subset_bit_for_bit(tmp_path, run_dir, opt):
    """Two copies of one model from the same weights: the trainer (masked and fast variants, freeze set
    changed twice) and a plain loop calling `opt.apply(grads, vars)` without the frozen variables."""
    path = regression(tmp_path, opt)
    first = {"net/dense_1/kernel", "net/out/bias"}
    initial = {}
    script = Script({0: [lambda t: initial.update(snapshot(t))],
                     6: [SetFreeze([])], 12: [SetFreeze(["net/dense_1/kernel"])]})
    trainer = run(config(path, run_dir, steps=18, freeze=sorted(first)), script)
    assert list(phase_of_step(run_dir).values()) == ["A", "B"] * 9

    mod = load_module(path)
    net = mod.net()
    for v in net.variables:
        v.assign(initial[v.path])
    ctx = type("Ctx", (), {"data": tf.constant(mod.DATA), "models": Models(net=net)})()
    phases = {"A": [v for v in net.trainable_variables if v.path.startswith("net/dense_1/")],
              "B": [v for v in net.trainable_variables if v.path.startswith("net/out/")]}
    opts = {name: mod.make_optimizer() for name in phases}
    for name, vs in phases.items():
        opts[name].build(vs)
    compiled = {}

    def keras_step(opt, live):
        @tf.function(autograph=False)
        def f():
            with tf.GradientTape() as tape:
                loss = mod.loss(ctx)
            opt.apply(tape.gradient(loss, live), live)
        return f

    def step(name, frozen):
        key = (name, frozenset(frozen))
        if key not in compiled:
            compiled[key] = keras_step(opts[name], [v for v in phases[name] if v.path not in frozen])
        compiled[key]()

    for s in range(1, 19):
        step("A" if s % 2 else "B", first if s <= 6 else set() if s <= 12 else {"net/dense_1/kernel"})

    mine = {v.path: v.numpy() for v in net.variables}
    assert_bitwise_equal(snapshot(trainer), mine, "model variables")
    p = trainer.prepared
    for name, opt_t in zip(p.phase_names, p.optimizers):
        a = {v.path.split("/", 1)[1]: v.numpy() for v in opt_t.variables}
        b = {v.path.split("/", 1)[1]: v.numpy() for v in opts[name].variables}
        assert_bitwise_equal(a, b, f"optimizer of phase {name}")
    assert not np.array_equal(initial["net/dense_1/kernel"], mine["net/dense_1/kernel"])


def test_gate_method_leaks_under_adam_and_records_it(tmp_path, run_dir):
    """The gate zeroes the gradient but Adam's momentum from earlier steps still moves the variable."""
    states = {}
    script = Script({10: [lambda t: states.update(before=frozen_state(t, G1)),
                          SetFreezeMethod("gate"), SetFreeze(["generator/dense_1"])]})
    trainer = run(config(tiny_gan(tmp_path, "adam"), run_dir, steps=30), script)
    after = frozen_state(trainer, G1)

    for path in G1:
        assert not np.array_equal(after[path], states["before"][path]), f"{path} did not move under the gate"
    steps, norm, frozen = script.column("update_norm", "generator/dense_1/kernel")
    assert frozen[steps > 10].all() and (norm[steps > 10] > 0).all()
    leaks = [e for e in read_events(run_dir) if e.kind == "leak"]
    assert {e.variable for e in leaks} == set(G1)
    assert all(e.method == "gate" and e.at_step == 12 and e.update_norm > 0 for e in leaks)
    assert [e.command["method"] for e in script.kinds("method")] == ["gate"]


BN_STATS = ("generator/bn_1/moving_mean", "generator/bn_1/moving_variance")
BN_PARAMS = ("generator/bn_1/gamma", "generator/bn_1/beta")


def test_batchnorm_statistics_stay_in_a_frozen_scope_unless_asked(tmp_path, run_dir):
    """D steps run the generator in training mode too, so both phases must put the statistics back."""
    snaps = {}

    def keep(k):
        return lambda t: snaps.__setitem__(k, snapshot(t))

    script = Script({0: [keep(0)], 10: [keep(10), SetFreeze(["generator/bn_1"], update_frozen_stats=True)],
                     20: [keep(20), SetFreeze(["generator/bn_1"])]})
    trainer = run(config(tiny_gan(tmp_path, "adam", bn=True), run_dir, steps=30, freeze=["generator/bn_1"]), script)
    snaps[30] = snapshot(trainer)

    def part(k, paths):
        return {p: snaps[k][p] for p in paths}

    for k in (10, 20, 30):
        assert_bitwise_equal(part(0, BN_PARAMS), part(k, BN_PARAMS), f"gamma/beta at step {k}")
    assert_bitwise_equal(part(0, BN_STATS), part(10, BN_STATS), "statistics while frozen")
    assert all(snaps[20][p].tobytes() != snaps[10][p].tobytes() for p in BN_STATS), "opted in: they update"
    assert_bitwise_equal(part(20, BN_STATS), part(30, BN_STATS), "statistics frozen again")
    assert not np.array_equal(snaps[0]["generator/dense_1/kernel"], snaps[30]["generator/dense_1/kernel"])


def test_update_frozen_stats_from_the_config(tmp_path, run_dir):
    before = {}
    script = Script({0: [lambda t: before.update(snapshot(t))]})
    trainer = run(config(tiny_gan(tmp_path, "sgdm", bn=True), run_dir, steps=10, freeze=["generator/bn_1"],
                         update_frozen_stats=True), script)
    after = snapshot(trainer)
    assert_bitwise_equal({p: before[p] for p in BN_PARAMS}, {p: after[p] for p in BN_PARAMS}, "gamma/beta")
    assert all(after[p].tobytes() != before[p].tobytes() for p in BN_STATS)


def test_phase_with_everything_frozen_is_skipped_with_a_warning(tmp_path, run_dir):
    script = Script()
    trainer = run(config(tiny_gan(tmp_path), run_dir, steps=12, freeze=["discriminator"]), script)
    assert set(phase_of_step(run_dir).values()) == {"G"} and trainer.step == 12
    warnings = [e for e in read_events(run_dir) if e.kind == "warning"]
    assert [w.phase for w in warnings] == ["D"] and "skipped" in warnings[0].message
    assert not [e for e in read_events(run_dir) if e.kind == "error"]
    d_vars = [p for p in variables(trainer) if p.startswith("discriminator/")]
    assert d_vars and all(np.isfinite(variables(trainer)[p].numpy()).all() for p in d_vars)


@pytest.mark.parametrize("expr", ["keras.optimizers.Adam(0.01, loss_scale_factor=8.0)",
                                  "keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.05))"])
def test_optimizers_the_masked_step_cannot_reproduce_are_refused(tmp_path, run_dir, expr):
    """Loss scaling needs the loss scaled before differentiation: the fast variant (optimizer.apply) would
    unscale gradients that were never scaled and the masked one would not, so the two would disagree."""
    exp = write_file(tmp_path, "scaled.py", tiny_gan(tmp_path).read_text().replace(OPTIMIZERS["adam"], expr))
    with pytest.raises(UserError) as e:
        Trainer(config(exp, run_dir, steps=2)).prepare()
    assert "loss-scaling" in str(e.value) and "\n" not in str(e.value)
    assert not run_dir.exists()

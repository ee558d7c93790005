"""monitor/fixed_update.py through `start_run(..., live_freeze=False)`: a hand-written loop whose freeze set is
fixed for the run. On two phases of 12 variables with 7 of the 24 frozen from the start, the weights, every
optimizer variable and every loss equal a plain Keras loop's `optimizer.apply(grads_of_unfrozen, unfrozen)` bit
for bit, each step traced once; a freeze sent mid-run (as the window sends it) is a `rejected` event naming the
option, the set and the bits unchanged; a resumed loop keeps the set its checkpoint holds; a replay that
changes the set, and a `live_freeze` that is not a bool, are one line with nothing written.

Why: the option exists to drop live freezing's cost (docs/monitor.md, Cost); what must not go with it is
exactness, or a freeze the loop says it honours and does not (the `trainable = False`-after-compile bug).
"""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from training_core import SetFreeze, read_events
from training_core.base.errors import UserError
from training_core.monitor import start_run
from training_core.monitor.fixed_update import FixedUpdate
from training_core.monitor.own_loop import FIXED_FREEZE
from training_core.rundir.varstore import read_variables

from .test_exact_update import OPTIMIZERS, STEPS, _net, _phase_vars, _reference, _steps

#: frozen for the whole run: 3 of A's 12 variables and 4 of B's
FIXED = ["net/a1", "net/a4/kernel", "net/b0", "net/b2/kernel", "net/b5/bias"]


def _fixed(paths) -> list[str]:
    return [p for p in paths if any(p == f or p.startswith(f + "/") for f in FIXED)]


def _phases(opts: dict) -> dict:
    return {"A": (opts["A"], [f"net/a{i}" for i in range(6)]), "B": (opts["B"], [f"net/b{i}" for i in range(6)])}


@pytest.mark.parametrize("opt_a, opt_b", [("adam", "adamw_clipvalue"), ("adamw_global", "sgdm")])
def test_a_fixed_freeze_set_equals_optimizer_apply_on_the_unfrozen_bit_for_bit(tmp_path, opt_a, opt_b):
    keras.utils.set_random_seed(1)
    net = _net()
    initial = {v.path: v.numpy() for v in net.variables}
    assert all(len(vs) == 12 for vs in _phase_vars(net).values())
    opts = {"A": OPTIMIZERS[opt_a](), "B": OPTIMIZERS[opt_b]()}
    run = start_run(tmp_path / "run", models={"net": net}, phases=_phases(opts), freeze=FIXED, var_every=1,
                    tensorboard=False, quiet=True, live_freeze=False)
    steps, losses = _steps(run, net, opts), []
    with run:
        for s in range(1, STEPS + 1):
            if s == 9:
                run.send(SetFreeze(("net/a0",)))  # refused: the set is fixed, so the plain loop's stays right
            assert run.boundary()
            name = "A" if s % 2 else "B"
            losses.append(steps[name]().numpy())
            run.log(s, {name: losses[-1]})

    weights, slots, ref_losses = _reference(initial, opt_a, opt_b, {1: FIXED})
    assert [steps[n].experimental_get_tracing_count() for n in "AB"] == [1, 1]
    for v in net.variables:
        assert np.array_equal(v.numpy(), weights[v.path]), f"{v.path} differs from the plain loop"
    for name, opt in opts.items():
        mine = {v.path.split("/", 1)[1]: v.numpy() for v in opt.variables}
        assert mine.keys() == slots[name].keys()
        for path, value in mine.items():
            assert np.array_equal(value, slots[name][path]), f"optimizer variable {path} differs from the plain loop"
    assert np.array_equal(np.float32(losses), np.float32(ref_losses))
    now, kept = {v.path: v.numpy() for v in net.variables}, _fixed(initial)  # (the set is not empty by mistake)
    assert len(kept) == 7 and all(np.array_equal(now[p], initial[p]) for p in kept)
    events = read_events(tmp_path / "run")
    assert [e.message for e in events if e.kind == "rejected"] == [FIXED_FREEZE]
    assert not [e for e in events if e.kind == "freeze"]
    for rows in read_variables(tmp_path / "run"):
        assert rows.frozen.any() and (rows.update_norm[rows.frozen] == 0).all()


def test_a_resumed_loop_keeps_the_freeze_set_of_its_checkpoint(tmp_path):
    """Resumed with `freeze=` left out, the loop still freezes what the run froze: the set is the record's."""
    net = _net()
    opts = {"A": keras.optimizers.Adam(0.01), "B": keras.optimizers.Adam(0.01)}
    with start_run(tmp_path / "run", models={"net": net}, phases=_phases(opts), freeze=FIXED, steps=4,
                   tensorboard=False, quiet=True, live_freeze=False) as run:
        steps = _steps(run, net, opts)
        for s in run.steps():
            run.log(s, {"AB"[s % 2 == 0]: steps["AB"[s % 2 == 0]]()})
    frozen = {v.path: v.numpy() for v in net.variables if v.path in _fixed([v.path])}
    moving = {v.path: v.numpy() for v in net.variables if v.path not in frozen}
    with start_run(tmp_path / "run", models={"net": net}, phases=_phases(opts), steps=8, resume=True,
                   tensorboard=False, quiet=True, live_freeze=False) as run:
        steps = _steps(run, net, opts)
        for s in run.steps():
            run.log(s, {"AB"[s % 2 == 0]: steps["AB"[s % 2 == 0]]()})
    assert all(np.array_equal(v.numpy(), frozen[v.path]) for v in net.variables if v.path in frozen)
    assert all(not np.array_equal(v.numpy(), moving[v.path]) for v in net.variables if v.path in moving)
    assert [e.freeze for e in read_events(tmp_path / "run") if e.kind == "resumed"] == [FIXED]


def test_a_freeze_set_changed_after_the_step_was_traced_is_an_error_not_a_no_op():
    net = _net()
    update = FixedUpdate("A", keras.optimizers.Adam(0.01), _phase_vars(net)["A"])
    update.set_frozen([True] + [False] * 11)  # before any trace: the start's (or a resume's) set
    vs = _phase_vars(net)["A"]
    update.apply([tf.ones_like(v) for v in vs], vs)
    update.set_frozen([True] + [False] * 11)  # the same set again is no change
    with pytest.raises(UserError, match=r"live_freeze=False"):
        update.set_frozen([False] * 12)


def test_bad_live_freeze_and_a_replay_that_changes_the_set_are_one_line_with_nothing_written(tmp_path):
    net = _net()
    opts = {"A": keras.optimizers.Adam(0.01), "B": keras.optimizers.Adam(0.01)}
    with pytest.raises(UserError) as e:
        start_run(tmp_path / "new", models={"net": net}, phases=_phases(opts), live_freeze="no")
    assert str(e.value) == "live_freeze must be True or False, got 'no'"
    with start_run(tmp_path / "old", models={"net": net}, phases=_phases(opts), steps=3, tensorboard=False,
                   quiet=True) as run:
        for s in run.steps():
            if s == 2:
                run.send(SetFreeze(("net/a0",)))
            run.log(s, {"A": 1.0})
    with pytest.raises(UserError) as e:
        start_run(tmp_path / "new", models={"net": net}, phases=_phases(opts), replay=tmp_path / "old",
                  live_freeze=False)
    assert str(e.value) == (f"replay={str(tmp_path / 'old')!r} changes the freeze set mid-run, which a loop with "
                            f"live_freeze=False cannot do; replay it with live_freeze=True (the default)")
    assert not (tmp_path / "new").exists()

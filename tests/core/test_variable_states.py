"""The scope rows of the tree (training_core/runs/variables.py): every scope's state, computed for all scopes at
once with numpy, equals the rule written out a scope at a time (the code it replaced, with NaN ignored by the
largest value), on random trees and random variable states, alarms, frozen mixes, NaN and None included. And
the states of a model refilled from scratch (a followed record read afresh) are the refilled model's. Every
variable's state, now numpy arrays a phase at a time, equals the rule a variable at a time on random runs; a tick
with no new per-variable row computes nothing, and a row's VarState is made only when it is read (counted)."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings, strategies as st

from training_core import VarInfo, build_scope_tree
from training_core.runs.variables import FROZEN_STATES, STATES, VarState, _Rollup


def one_scope(under: list[VarState], paths: list[str], tracked: list[bool]) -> VarState:
    """The rule, one scope at a time: only variables a phase trains (`tracked`) count towards frozen."""
    present = [s.value for s in under if s.value is not None]
    numbers = [v for v in present if not math.isnan(v)]
    value = max(numbers) if numbers else (math.nan if present else None)
    n_frozen = sum(s.state in FROZEN_STATES for s, t in zip(under, tracked) if t)
    size = sum(tracked)
    state = next((k for k in ("LEAK", "leaked") if any(s.state == k for s in under)), "")
    state = state or ("frozen" if n_frozen and n_frozen == size else "partly" if n_frozen else "")
    leaking = [p for p, s in zip(paths, under) if s.alarm]
    tip = f"leaked: {', '.join(leaking)}" if leaking else (
        f"{n_frozen} of {size} variables frozen" if n_frozen else "")
    return VarState(value, state, tip)


def same(a: VarState, b: VarState) -> bool:
    both_nan = a.value is not None and b.value is not None and math.isnan(a.value) and math.isnan(b.value)
    return (both_nan or a.value == b.value) and a.state == b.state and a.tip == b.tip


paths_st = st.lists(st.tuples(st.sampled_from("gdm"), st.integers(0, 3), st.sampled_from(["kernel", "bias"])),
                    min_size=1, max_size=40, unique=True).map(lambda ts: [f"{m}/dense_{i}/{k}" for m, i, k in ts])
value_st = st.one_of(st.none(), st.just(math.nan), st.just(math.inf), st.floats(0, 1e3, allow_nan=False))


@settings(max_examples=200, deadline=None)
@given(paths=paths_st, data=st.data())
def test_every_scope_equals_the_rule_one_scope_at_a_time(paths, data):
    tree = build_scope_tree([VarInfo(p, (1,), "float32", True) for p in paths])
    order = [v.path for v in tree.all_variables()]
    scopes = {n.path: [v.path for v in n.all_variables()] for n in tree.walk() if n.path}
    states = [VarState(data.draw(value_st), data.draw(st.sampled_from(STATES))) for _ in order]
    tracked = [data.draw(st.booleans()) for _ in order]  # untracked: moving statistics, no phase trains them
    by_path, is_tracked = dict(zip(order, states)), dict(zip(order, tracked))
    got = _Rollup(order, scopes).scopes(states, tracked)
    assert got.keys() == scopes.keys()
    for scope, under in scopes.items():
        want = one_scope([by_path[p] for p in under], under, [is_tracked[p] for p in under])
        assert same(got[scope], want), (scope, got[scope], want)


def test_a_model_read_afresh_forgets_the_leaks_of_the_record_it_replaced():
    """A follower that reads a record afresh (a resume cut it back: runs/follow.py) clears and refills the
    same `RunData`; the refilled one may hold more events than before, so their count cannot tell. The leak
    the cut dropped is gone from the state."""
    from training_core.base import events as E
    from training_core.runs import RunData, VariableStates
    from training_core.rundir.varstore import VarRows

    path = "g/w"

    def fill(data: RunData, leak: bool, events: int) -> None:
        data.add_event(E.Start(phases=["G"], phase_variables={"G": [path]}))
        one = np.ones((1, 1), dtype=np.float32)
        data.add_var_rows(VarRows("G", (path,), np.array([5]), np.array([1.0]), one, one, one, np.ones((1, 1), bool)))
        for step in range(events):
            data.add_event(E.Leak(step=step, variable=path, at_step=step, method="gate") if leak else
                           E.Checkpoint(step=step))

    data = RunData()
    states = VariableStates(build_scope_tree([VarInfo(path, (1,), "float32", True)]))
    fill(data, True, 1)
    assert states.update(data) and states.states[path].state == "LEAK"
    data.clear()
    fill(data, False, 3)
    assert states.update(data) and states.states[path].state == "frozen"


def test_a_frozen_batchnorm_layer_reads_frozen_not_partly():
    """Its moving statistics have no update records (no phase trains them): they used to count as
    variables not frozen, so a fully ticked BatchNormalization layer read "partly"."""
    from training_core.runs import RunData, VariableStates
    from training_core.rundir.varstore import VarRows
    trained = ("g/bn_1/gamma", "g/bn_1/beta")
    infos = [VarInfo(p, (4,), "float32", True) for p in trained] + [
        VarInfo(f"g/bn_1/{p}", (4,), "float32", False) for p in ("moving_mean", "moving_variance")]
    data = RunData()
    zero, frozen = np.zeros((1, 2), dtype=np.float32), np.ones((1, 2), bool)
    data.add_var_rows(VarRows("G", trained, np.array([25]), np.array([1.0]), zero, zero, zero, frozen))
    states = VariableStates(build_scope_tree(infos))
    states.update(data)
    assert states.states["g/bn_1"].state == "frozen" and states.states["g/bn_1"].tip == "2 of 2 variables frozen"


def test_a_variable_two_phases_train_reads_its_newest_record_by_its_path_and_each_phase_by_its_name():
    """The encoder of an autoencoder, trained by reg (listed first here) and rec, frozen after step 20: reg can
    no longer run (it trains nothing else), rec goes on with it frozen. The scope tree (paths) read reg's stale
    record, the first phase's, as "not frozen"; it reads the newest record of either phase now, and the Runs
    tab's tree (series names, path@phase) reads each phase's own."""
    from training_core import MetricsBatch, PhaseBlock
    from training_core.runs import RunData, VariableStates

    def rows(phase, steps, paths, frozen):
        n, v = len(steps), len(paths)
        ratio = np.full((n, v), 0.0 if frozen else 1e-3)
        return PhaseBlock(phase, paths, np.asarray(steps), np.zeros(n), np.ones(n), ratio, ratio, ratio,
                          np.full((n, v), frozen), np.ones(n, bool))

    enc, dec = ("encoder/dense/kernel",), ("encoder/dense/kernel", "decoder/dense/kernel")
    data = RunData()
    data.add_batch(MetricsBatch([rows("reg", range(2, 21, 2), enc, False), rows("rec", range(1, 20, 2), dec, False)]))
    data.add_batch(MetricsBatch([rows("rec", range(21, 41), dec, False)]))
    after = np.tile([0.0, 1e-3], (10, 1))  # the encoder frozen (exactly 0), the decoder training
    data.add_batch(MetricsBatch([PhaseBlock("rec", dec, np.arange(41, 51), np.zeros(10), np.ones(10), after, after,
                                            after, np.tile([True, False], (10, 1)), np.ones(10, bool))]))
    states = VariableStates(build_scope_tree([VarInfo(p, (2, 2), "float32", True) for p in dec]))
    states.update(data)
    assert states.states["encoder/dense/kernel"].state == "frozen"
    assert states.states["decoder/dense/kernel"].state == "" and states.states["encoder"].state == "frozen"
    runs_tab = VariableStates(build_scope_tree([VarInfo(p, (), "float32", True) for p in data.var_paths]))
    runs_tab.update(data)
    reg = runs_tab.states["encoder/dense/kernel@reg"]
    assert reg.state == "" and math.isclose(reg.value, 1e-3, rel_tol=1e-6)
    assert runs_tab.states["encoder/dense/kernel@rec"].state == "frozen"


# -- the states as arrays, made when read (VariableStates._arrays, _States) --------------------------------

def rule_latest(data) -> dict:
    """The rule for a variable's latest (ratio, norm, frozen), a phase at a time (the code the arrays replaced):
    by each series' name, and by its path with the newest record of any phase that trains it."""
    out, newest = {}, {}
    for phase in data.var_phases:
        keys, steps, _, ratio, frozen = data.var_block(phase, "update_ratio")
        if not len(steps):
            row = [(None, None, False)] * len(keys)
        else:
            row = list(zip(ratio[-1].tolist(), data.var_block(phase, "update_norm")[3][-1].tolist(),
                           frozen[-1].tolist()))
        last = int(steps[-1]) if len(steps) else -1
        for key, r in zip(keys, row):
            out[key] = r
            path = data.var_path(key)
            if path != key and (path not in newest or last > newest[path]):
                out[path], newest[path] = r, last
    return out


def rule_variable(value, norm, frozen, leak) -> VarState:
    from training_core.runs.variables import NO_UPDATE_TIP, leak_tip
    if frozen and leak is not None:
        moving = (norm or 0.0) > 0
        return VarState(value, "LEAK" if moving else "leaked", leak_tip(leak, moving))
    if not frozen and value == 0:
        return VarState(value, "no update", NO_UPDATE_TIP)
    return VarState(value, "frozen" if frozen else "")


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_every_row_equals_the_rule_a_variable_at_a_time(data):
    """Random runs: phases sharing variables (path@phase), phases with no record yet, tree variables no phase
    trains, zeros, NaN, leaks before and after a freeze-set change; every variable's and scope's state is the
    rule's, for the scope tree (paths) and the Runs tab's tree (series names)."""
    from training_core import MetricsBatch, PhaseBlock
    from training_core.base import events as E
    from training_core.runs import RunData, VariableStates
    pool = [f"{m}/dense_{i}/{k}" for m in "gd" for i in range(3) for k in ("kernel", "bias")]
    phases = {ph: data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=6, unique=True), label=ph)
              for ph in ("D", "G", "E")[:data.draw(st.integers(1, 3))]}
    run = RunData()
    run.add_event(E.Start(phases=list(phases), phase_variables=phases))
    values = st.sampled_from([0.0, math.nan, 1e-3, 2.5e-2, math.inf])
    step = 0
    for _ in range(data.draw(st.integers(0, 4))):
        blocks = []
        for ph in data.draw(st.lists(st.sampled_from(list(phases)), max_size=3, unique=True)):
            step += 1
            v = len(phases[ph])
            ratio = np.array([[data.draw(values) for _ in range(v)]])
            norm = np.where(np.array([[data.draw(st.booleans()) for _ in range(v)]]), ratio, 0.0)
            frozen = np.array([[data.draw(st.booleans()) for _ in range(v)]])
            blocks.append(PhaseBlock(ph, tuple(phases[ph]), np.array([step]), np.zeros(1), np.ones(1), norm,
                                     ratio, ratio, frozen, np.ones(1, bool)))
        run.add_batch(MetricsBatch(blocks))
        for p in data.draw(st.lists(st.sampled_from(pool), max_size=3)):
            run.add_event(E.Leak(step=step, variable=p, at_step=step, update_norm=1e-4,
                                 method=data.draw(st.sampled_from(["gate", "fit"]))))
        if data.draw(st.booleans()):
            run.add_event(E.Freeze(step=step, scopes=[]))
    leaks, reset = {}, -1
    for e in run.events:
        if isinstance(e, E.Leak) and e.at_step > reset:
            leaks[e.variable] = e
        elif isinstance(e, E.Freeze):
            leaks, reset = {}, e.step
    for names in (pool + ["m/untrained/w"], run.var_paths):  # the scope tree's paths, the Runs tab's names
        tree = build_scope_tree([VarInfo(p, (1,), "float32", True) for p in names])
        order = [v.path for v in tree.all_variables()]
        latest = rule_latest(run)
        want = {p: rule_variable(*latest[p], leaks.get(p) if latest[p][2] else None) if p in latest
                else VarState(None, "") for p in order}
        scopes = {n.path: [v.path for v in n.all_variables()] for n in tree.walk() if n.path}
        want.update({s: one_scope([want[p] for p in under], under, [p in latest for p in under]) if under
                     else VarState(None, "") for s, under in scopes.items()})
        states = VariableStates(tree)
        assert states.update(run)
        assert list(states.states) == list(want)
        for p, w in want.items():
            assert same(states.states[p], w), (p, states.states[p], w)


def ring_run():
    """A 2-phase run of 4 variables, its tree, and a function that adds a batch of `n` steps (the variables'
    rows every 5th step; `frozen`: the D variables report frozen)."""
    from training_core import MetricsBatch, PhaseBlock
    from training_core.runs import RunData
    paths = {"D": ("d/dense/kernel", "d/dense/bias"), "G": ("g/dense/kernel", "g/dense/bias")}
    run = RunData()
    step = [0]

    def add(n: int, frozen: bool = False) -> None:
        steps = np.arange(step[0] + 1, step[0] + n + 1)
        step[0] += n
        blocks = [PhaseBlock(ph, p, steps, np.zeros(n), np.ones(n), np.full((n, 2), 1e-2), np.full((n, 2), 1e-3),
                             np.ones((n, 2)), np.full((n, 2), frozen and ph == "D"), steps % 5 == 0)
                  for ph, p in paths.items()]
        run.add_batch(MetricsBatch(blocks))

    tree = build_scope_tree([VarInfo(p, (2,), "float32", True) for ps in paths.values() for p in ps])
    return run, tree, add


def test_a_tick_without_new_rows_computes_nothing_and_a_new_row_reaches_the_states(monkeypatch):
    """25 Hz ticks most of which bring losses only (a row every var_every-th step): those compute nothing (the
    data's version moved, its per-variable rows did not); the tick whose row reports a freeze does."""
    from training_core.runs import VariableStates
    calls = []
    arrays = VariableStates._arrays
    monkeypatch.setattr(VariableStates, "_arrays", lambda self, data: calls.append(1) or arrays(self, data))
    run, tree, add = ring_run()
    states = VariableStates(tree)
    add(5)
    assert states.update(run) and len(calls) == 1
    shown = states.states
    assert shown["d/dense/kernel"].state == "" and math.isclose(shown["d/dense/kernel"].value, 1e-3, rel_tol=1e-6)
    add(3)  # steps 6-8: losses only
    assert not states.update(run) and len(calls) == 1 and states.states is shown
    add(2, frozen=True)  # step 10: a row, D frozen
    assert states.update(run) and len(calls) == 2
    assert states.states["d/dense/kernel"].state == "frozen" and states.states["d"].state == "frozen"
    assert states.states["g"].state == "" and states.states["d/dense"].tip == "2 of 2 variables frozen"


def test_a_leak_event_alone_reaches_the_states():
    """No new row, but a leak event: the frozen variable reads LEAK at once."""
    from training_core.base import events as E
    from training_core.runs import VariableStates
    run, tree, add = ring_run()
    states = VariableStates(tree)
    add(5, frozen=True)
    assert states.update(run) and states.states["d/dense/kernel"].state == "frozen"
    run.add_event(E.Leak(step=5, variable="d/dense/kernel", at_step=5, update_norm=1e-4, method="gate"))
    assert states.update(run) and states.states["d/dense/kernel"].state == "LEAK"
    assert states.states["d"].state == "LEAK" and states.states["d"].tip == "leaked: d/dense/kernel"


def test_a_row_is_made_when_read_not_every_row_every_tick(monkeypatch):
    """The tree reads the rows on screen: a refresh makes the VarStates of the rows read, once each."""
    from training_core.runs import VariableStates
    from training_core.runs import variables
    made = []
    for name in ("_variable", "_scope"):
        original = getattr(variables._States, name)
        monkeypatch.setattr(variables._States, name,
                            lambda self, i, _f=original, _n=name: made.append(_n) or _f(self, i))
    run, tree, add = ring_run()
    states = VariableStates(tree)
    add(5)
    states.update(run)
    assert made == []
    for _ in range(3):
        assert states.states["g/dense/bias"].state == "" and states.states["g"].value is not None
    assert made == ["_variable", "_scope"]
    assert len(states.states) == 4 + 4 and "g/dense" in states.states and "nowhere" not in states.states

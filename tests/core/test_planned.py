"""Planned changes (`config.planned`: base/planned.py, observers/planned.py): "freeze X from step N" is the same
freeze a user sends at step N, bit for bit; a resumed run sends only the changes its checkpoint lacks; a replay
applies each once; a bad plan is one line before anything is written."""
from __future__ import annotations

import numpy as np
import pytest

from training_core import RunConfig, SetFreeze, SetLearningRate, Trainer, plan_replay, read_events, read_scalars
from training_core.base import events as E
from training_core.base.errors import UserError
from training_core.rundir.resume_point import resume_config

from .helpers import Script, config, run, snapshot, write_file
from .test_exactness import OPTIMIZERS, deep_source

STEPS = 24
FREEZE_A = ["net/a1", "net/a3/bias", "net/b0", "net/b2/kernel"]
PLAN = [{"step": 8, "kind": "freeze", "scopes": FREEZE_A},
        {"step": 13, "kind": "lr", "phase": "B", "value": 0.002},
        {"step": 18, "kind": "freeze", "scopes": ["net/a0"]}]


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    return write_file(tmp_path_factory.mktemp("planned"), "deep_planned.py",
                      deep_source(OPTIMIZERS["adam"], OPTIMIZERS["sgdm"]))


@pytest.fixture(scope="module")
def whole(deep, tmp_path_factory):
    """The planned run, uninterrupted: what the others are compared with."""
    d = tmp_path_factory.mktemp("whole") / "run"
    return d, snapshot(run(config(deep, d, steps=STEPS, planned=PLAN)))


def _controls(run_dir) -> list[tuple[int, str, str | None]]:
    return [(e.step, e.kind, e.id) for e in read_events(run_dir) if isinstance(e, (E.Freeze, E.LearningRate))]


def _losses(run_dir) -> dict[str, np.ndarray]:
    return {t: s.values for t, s in read_scalars(run_dir).items() if t.startswith("loss/")}


def test_a_planned_change_is_the_same_change_sent_at_that_step(deep, whole, tmp_path):
    planned_dir, a = whole
    # the same changes sent by hand: Script acts right after step k, so the command applies before step k + 1
    sent = run(config(deep, tmp_path / "sent", steps=STEPS),
               Script({8: [SetFreeze(tuple(FREEZE_A))], 13: [SetLearningRate("B", 0.002)],
                       18: [SetFreeze(("net/a0",))]}))
    b = snapshot(sent)
    assert len(a) >= 24 and a.keys() == b.keys()
    assert all(np.array_equal(a[k], b[k]) for k in a), [k for k in a if not np.array_equal(a[k], b[k])]
    la, lb = _losses(planned_dir), _losses(tmp_path / "sent")
    assert all(np.array_equal(la[t], lb[t]) for t in la) and la.keys() == lb.keys()
    assert _controls(planned_dir) == [(8, "freeze", "planned-0"), (13, "lr", "planned-1"),
                                               (18, "freeze", "planned-2")]
    assert [(s, k) for s, k, _ in _controls(tmp_path / "sent")] == [(8, "freeze"), (13, "lr"), (18, "freeze")]


@pytest.mark.parametrize("first_steps", [10, 13])  # the second: a change planned at the final checkpoint's step
def test_a_resumed_run_sends_only_the_changes_its_checkpoint_lacks(deep, whole, tmp_path, first_steps):
    d = tmp_path / "resumed"
    run(config(deep, d, steps=first_steps, planned=PLAN, checkpoint_every=5))
    cfg = resume_config(d)
    cfg.steps = STEPS
    resumed = Trainer(cfg, resume=True)
    resumed.run()
    a, b = whole[1], snapshot(resumed)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    # each change once, at its step, whether the checkpoint held it (8; 13 at the end of the first run) or not
    assert _controls(d) == _controls(whole[0])


def test_a_replay_of_a_planned_run_applies_each_change_once(whole, tmp_path):
    plan = plan_replay(whole[0], str(tmp_path / "replay"))
    assert plan.commands == [] and plan.config.planned == PLAN  # the plan sends them, not the replayer
    from training_core import Replayer
    Trainer(plan.config, Replayer(plan)).run()
    assert _controls(tmp_path / "replay") == _controls(whole[0])


@pytest.mark.parametrize("planned, line", [
    ([{"step": 5, "kind": "freeze", "scopes": ["net/zz"]}], "[[planned]] #1 (the freeze at step 5): "),
    ([{"step": 5, "kind": "lr", "phase": "Q", "value": 0.1}], "unknown phase 'Q'"),
    ([{"step": 5, "kind": "ratio", "policy": {"policy": "fixed", "ratio": [1, 1, 1]}}], "[[planned]] #1 (the ratio"),
])
def test_a_plan_the_experiment_cannot_take_is_refused_before_anything_is_written(deep, tmp_path, planned, line):
    with pytest.raises(UserError, match=line.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        Trainer(config(deep, tmp_path / "bad", steps=4, planned=planned)).run()
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("planned, line", [
    ([{"kind": "freeze", "scopes": []}], "[[planned]] #1 needs step = a whole number >= 0"),
    ([{"step": 1, "kind": "pause"}], "kind 'pause' cannot be planned; use one of freeze, ratio, lr, method"),
    ([{"step": 1, "kind": "method", "method": "leaky"}], "freeze method 'leaky' is unknown"),
    ([{"step": 1, "kind": "lr", "phase": "D", "value": 1e39}], "more than float32 holds"),
    (["freeze"], "planned = ['freeze'] must be a list of tables"),
])
def test_a_malformed_plan_is_one_line(planned, line):
    with pytest.raises(UserError) as e:
        RunConfig(planned=planned).validate()
    assert line in str(e.value) and "\n" not in str(e.value)

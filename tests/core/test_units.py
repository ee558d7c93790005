"""The TF-free pieces: commands, scopes, smoothing, run-directory readers and the configuration."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from training_core import (Continue, Pause, RunConfig, SampleNow, SaveCheckpoint, SetFreeze, SetFreezeMethod,
                           SetLearningRate, SetRatio, Step, Stop, UserError, VarInfo, build_scope_tree,
                           command_from_dict, ema_smooth, format_tree, in_scope, read_config, read_events,
                           read_scalars)
from training_core.base.commands import COMMANDS, Rollback
from training_core.base.smoothing import EmaState
from training_core.base.scopes import frozen_mask, resolve_scopes

ALL_COMMANDS = [Pause(), Continue(), Step(7), Stop(), SetFreeze(["generator/dense_1", "discriminator"], True),
                SetRatio({"policy": "adaptive", "thresholds": [0.5, 0.7], "max_steps": 20}),
                SetLearningRate("G", 5e-5), SetFreezeMethod("gate"), SampleNow(), SaveCheckpoint(),
                Rollback(step=500, phase="D", lr_factor=0.5)]
# optional fields left out or null, other values: each kind's variants (Rollback's `phase: str | None` was
# missing from the type check, and a rollback read from commands.jsonl ended the run with a KeyError)
VARIANTS = [Rollback(step=5), Stop(reason="halted")]


# -- commands -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cmd", ALL_COMMANDS + VARIANTS, ids=lambda c: c.kind)
def test_command_round_trips_through_json(cmd):
    d = json.loads(json.dumps(cmd.to_dict()))  # what events.jsonl holds
    assert d["kind"] == cmd.kind
    assert command_from_dict(d) == cmd


def test_command_kinds_are_distinct_and_freeze_scopes_become_a_tuple():
    assert len({c.kind for c in ALL_COMMANDS}) == len(ALL_COMMANDS) and {c.kind for c in ALL_COMMANDS} == set(COMMANDS)
    assert SetFreeze(["a", "b"]).scopes == ("a", "b") and hash(SetFreeze(["a"])) == hash(SetFreeze(("a",)))


@pytest.mark.parametrize("d, word", [({"kind": "nope"}, "nope"), ({}, "None"),
                                     ({"kind": "lr", "phase": "D", "rate": 1.0}, "rate"),
                                     ({"kind": "rollback", "step": 5, "phase": 3}, "'phase' must be a string"),
                                     ({"kind": "stop", "reason": "tired"}, "reason must be one of")])
def test_command_from_dict_rejects_with_one_line(d, word):
    with pytest.raises(UserError) as e:
        command_from_dict(d)
    assert word in str(e.value) and "\n" not in str(e.value)


def test_an_old_resume_line_in_commands_jsonl_and_events_jsonl_is_read_as_continue(tmp_path):
    """Before issue 23 the un-pause was `resume`; it is `continue` now ("resume" means only a run continued
    from its checkpoint on disk). A `resume` line a user's script appends to commands.jsonl, or that an older
    run wrote to events.jsonl, is read as Continue and ends the pause; only `continue` is written. `Resume`
    still imports, as the same class, with a DeprecationWarning."""
    import warnings
    from training_core.base import events as E
    from training_core.base.commands import Envelope
    from training_core.rundir.commands_file import parse_command_line
    from training_core.runs.attach import Controls

    assert parse_command_line(b'{"id": "old", "kind": "resume"}') == Envelope(Continue(), "old")
    assert command_from_dict({"kind": "resume"}) == Continue() and Continue().to_dict() == {"kind": "continue"}
    (tmp_path / "events.jsonl").write_text(
        '{"step": 5, "kind": "pause", "time": 1.0, "reason": "user", "command": {"kind": "pause"}}\n'
        '{"step": 5, "kind": "resume", "time": 2.0, "command": {"kind": "resume"}, "id": "q1"}\n', encoding="utf-8")
    events = read_events(tmp_path)
    assert [type(e) for e in events] == [E.Pause, E.Continue] and events[1].id == "q1"
    assert events[1].to_dict()["kind"] == "continue" and not Controls.of(events).paused
    assert Controls.of(events[:1]).paused
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from training_core import Resume
        assert Resume is Continue and E.Resume is E.Continue and Resume() == Continue()
    assert caught and all(issubclass(w.category, DeprecationWarning) for w in caught)


# -- scopes ---------------------------------------------------------------------------------------------
PATHS = ["generator/dense_1/kernel", "generator/dense_1/bias", "generator/dense_10/kernel",
         "generator/bn_1/moving_mean", "discriminator/dense_1/kernel"]
INFOS = [VarInfo(p, (3, 4) if p.endswith("kernel") else (4,), "float32", "moving" not in p) for p in PATHS]


def test_scope_is_a_prefix_of_whole_components():
    assert in_scope("generator/dense_1/kernel", "generator/dense_1")
    assert not in_scope("generator/dense_10/kernel", "generator/dense_1")
    assert in_scope("generator/dense_10/kernel", "generator")
    assert not in_scope("generator2/x", "generator")
    assert in_scope("generator/dense_1/kernel", "/generator//dense_1/ ")  # normalised
    assert in_scope("generator/dense_1/kernel", "generator/dense_1/kernel")
    assert frozen_mask(PATHS, ["generator/dense_1"]) == (True, True, False, False, False)


def test_resolve_scopes_normalises_deduplicates_and_rejects_unknown():
    assert resolve_scopes(["generator/dense_1/", "generator/dense_1", "discriminator"], INFOS) == (
        "generator/dense_1", "discriminator")
    for bad in (["generator/dense_2"], ["gen"], [""], ["generator/dense_1/kernel/x"]):
        with pytest.raises(UserError) as e:
            resolve_scopes(bad, INFOS)
        assert "--list-scopes" in str(e.value) and "\n" not in str(e.value)


def test_scope_tree_counts_parameters():
    root = build_scope_tree(INFOS)
    assert list(root.children) == ["generator", "discriminator"]
    g = root.children["generator"]
    assert list(g.children) == ["dense_1", "dense_10", "bn_1"]
    assert g.children["dense_1"].params() == 16 and g.params() == 32 and g.params(trainable=False) == 4
    assert root.params() == 44 and root.params(True) == 40
    text = format_tree(root)
    assert "generator/dense_10/" in text and "(3, 4)" in text and text.splitlines()[-1].split()[1] == "44"


# -- smoothing --------------------------------------------------------------------------------------------
def tensorboard_smooth(values, weight):
    """TensorBoard's scalar-chart smoothing, written out point by point (debiased EMA; non-finite values
    pass through and do not count)."""
    last, n, out = 0.0, 0, []
    for v in values:
        if not math.isfinite(v):
            out.append(v)
            continue
        last = last * weight + (1 - weight) * v
        n += 1
        out.append(last / (1 - weight ** n))
    return np.array(out)


@pytest.fixture
def noisy():
    rng = np.random.default_rng(1)
    x = np.cumsum(rng.normal(size=500)) + 3.0
    x[[7, 100, 101, 499]] = [np.nan, np.inf, -np.inf, np.nan]
    return x


@pytest.mark.parametrize("weight", [0.0, 0.3, 0.9, 0.999])
def test_ema_matches_tensorboard(noisy, weight):
    got, state = ema_smooth(noisy, weight)
    np.testing.assert_allclose(got, tensorboard_smooth(noisy, weight), rtol=1e-12, equal_nan=True)
    assert state.count == int(np.isfinite(noisy).sum())
    assert np.array_equal(np.isnan(got), np.isnan(noisy)) and np.isinf(got[[100, 101]]).all()


@pytest.mark.parametrize("cuts", [[1], [7, 8], [3, 100, 250, 498], list(range(0, 500, 37))])
def test_ema_incremental_equals_full(noisy, cuts):
    full, full_state = ema_smooth(noisy, 0.8)
    parts, state = [], None
    for a, b in zip([0, *cuts], [*cuts, len(noisy)]):
        out, state = ema_smooth(noisy[a:b], 0.8, state)
        parts.append(out)
    np.testing.assert_array_equal(np.concatenate(parts), full)
    assert state == full_state


def test_ema_edge_cases():
    assert ema_smooth([], 0.5)[0].size == 0
    out, st = ema_smooth([np.nan], 0.5)
    assert np.isnan(out[0]) and st == EmaState()
    np.testing.assert_array_equal(ema_smooth([2.0, 2.0, 2.0], 0.6)[0], [2.0, 2.0, 2.0])
    with pytest.raises(ValueError):
        ema_smooth([1.0], 1.0)


# -- run directory readers -------------------------------------------------------------------------------
HEADER = "step,wall_time,tag,value\n"


def test_read_scalars_ignores_a_torn_last_line(tmp_path):
    body = "1,10.5,loss/D,1.5\n1,10.5,update_norm/g/k,0\n2,11.0,loss/G,0.75\n"
    for torn in ["3,11.5,loss/D,1.2", "3,11.5,loss/D,", "3,11", ""]:
        (tmp_path / "scalars.csv").write_text(HEADER + body + torn)
        sc = read_scalars(tmp_path)
        assert sc["loss/D"].steps.tolist() == [1] and sc["loss/D"].values.tolist() == [1.5]
        assert sc["loss/G"].wall_time.tolist() == [11.0] and sc["update_norm/g/k"].values.tolist() == [0.0]
    assert list(read_scalars(tmp_path, {"loss/G"})) == ["loss/G"]
    (tmp_path / "scalars.csv").write_text(HEADER + "4,1.0,loss/D,nan\n5,1.0,loss/D,inf\n")
    assert np.isnan(read_scalars(tmp_path)["loss/D"].values[0]) and read_scalars(tmp_path)["loss/D"].values[1] == np.inf
    (tmp_path / "scalars.csv").write_text("something,else\n")
    with pytest.raises(ValueError):
        read_scalars(tmp_path)


def test_read_events_ignores_a_torn_last_line(tmp_path):
    lines = [json.dumps({"step": s, "kind": k, "time": 1.0}) for s, k in [(0, "start"), (5, "freeze")]]
    for torn in ['{"step": 9, "kind": "pa', '{', ""]:
        (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n" + torn)
        assert [e.kind for e in read_events(tmp_path)] == ["start", "freeze"]


# -- configuration ------------------------------------------------------------------------------------------
def test_run_config_round_trips_through_toml(tmp_path):
    cfg = RunConfig(example="digits", steps=10, seed=4, schedule={"policy": "fixed", "ratio": [5, 1]},
                    lr={"D": 1e-4}, freeze=["generator/bn_1"], freeze_method="gate", update_frozen_stats=True)
    cfg.write_toml(tmp_path / "config.toml")
    assert RunConfig.from_dict(read_config(tmp_path)) == cfg == RunConfig.read_toml(tmp_path / "config.toml")
    assert "run_dir" not in read_config(tmp_path)  # TOML has no null: unset fields are left out
    other = RunConfig(experiment_file="/x/exp.py", example=None)
    other.write_toml(tmp_path / "b.toml")
    assert RunConfig.read_toml(tmp_path / "b.toml") == other


@pytest.mark.parametrize("kw", [{"steps": -1}, {"freeze_method": "leaky"}, {"fetch_every": 0}, {"var_every": 0},
                                {"checkpoint_every": -5}, {"lr": {"D": -1.0}}, {"lr": {"D": "fast"}},
                                {"batch_size": 0}])
def test_run_config_rejects_bad_values(kw):
    with pytest.raises(UserError) as e:
        RunConfig(**kw).validate()
    assert "\n" not in str(e.value)


def test_run_config_errors_name_the_file(tmp_path):
    with pytest.raises(UserError, match="unknown configuration key"):
        RunConfig.from_dict({"exmaple": "ring"})
    with pytest.raises(UserError, match="does not exist"):
        RunConfig.read_toml(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("steps = = 3\n")
    with pytest.raises(UserError, match="not valid TOML"):
        RunConfig.read_toml(tmp_path / "bad.toml")


def test_the_update_ratio_of_a_diverged_weight_is_nan_not_zero():
    """‖ΔW‖/‖W‖ is NaN when either norm is (a weight gone to Inf or NaN), not the exact 0 that means frozen
    or converged: the tree showed a diverged variable as "0 · no update", the plot put it on the 0 floor."""
    from training_core.base.metrics import PhaseBlock
    n = 4  # loss, then per variable: squared ‖ΔW‖, squared ‖W‖, squared ‖g‖
    upd2 = [0.0, 4.0, np.nan, 1.0]
    w2 = [1.0, 0.0, 4.0, np.nan]
    packed = np.array([[0.5, *upd2, *w2, *[1.0] * n]])
    b = PhaseBlock.from_packed("D", tuple(f"v{i}" for i in range(n)), [1], [0.0], packed, np.zeros((1, n), bool))
    r = b.update_ratio[0]
    assert r[0] == 0.0 and r[1] == np.inf and np.isnan(r[2]) and np.isnan(r[3])

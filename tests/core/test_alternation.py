"""Alternation policies: the pure-Python rules, then the same rules read back from a real run's record."""
from __future__ import annotations

import numpy as np
import pytest

from training_core import UserError, parse_ratio, read_events, read_scalars
from training_core.base.alternation import Adaptive, FixedRatio, policy_from_dict

from .helpers import Script, config, phase_of_step, run, runs_of, tiny_gan

ALL = (True, True, True)


def take(policy, n: int, runnable=ALL) -> list:
    return [policy.next_phase(runnable[:policy.n]) for _ in range(n)]


def test_fixed_ratio_cycles_through_the_counts():
    assert take(FixedRatio([5, 1]), 12) == [0] * 5 + [1] + [0] * 5 + [1]
    assert take(FixedRatio([2, 1, 3]), 12) == [0, 0, 1, 2, 2, 2] * 2


@pytest.mark.parametrize("counts, expected", [([0, 1], [1] * 6), ([3, 0], [0] * 6), ([0, 2, 0], [1] * 6),
                                              ([1, 0, 2], [0, 2, 2] * 2)])
def test_fixed_ratio_with_zero_counts_never_runs_those_phases(counts, expected):
    assert take(FixedRatio(counts), 6) == expected


def test_fixed_ratio_skips_phases_that_cannot_run():
    assert take(FixedRatio([5, 1]), 4, runnable=(True, False)) == [0] * 4
    assert take(FixedRatio([5, 1]), 4, runnable=(False, True)) == [1] * 4
    assert take(FixedRatio([1, 1, 1]), 4, runnable=(False, False, True)) == [2] * 4
    assert take(FixedRatio([1, 1]), 2, runnable=(False, False)) == [None, None]
    assert take(FixedRatio([1, 0]), 2, runnable=(False, True)) == [None, None]  # G may run, but has count 0


def test_continue_from_keeps_the_position_in_the_cycle():
    old = FixedRatio([5, 1])
    assert take(old, 3) == [0, 0, 0]
    new = FixedRatio([4, 2]).continue_from(old)
    assert take(new, 7) == [0, 1, 1, 0, 0, 0, 0]  # one more D to make 4, then 2 G
    shorter = FixedRatio([2, 1]).continue_from(FixedRatio([5, 1]).continue_from(old))
    assert take(shorter, 3) == [1, 0, 0]  # already 3 D in this stay: 2 is exceeded, go to G


def test_adaptive_leaves_at_its_threshold_or_after_max_steps():
    p = Adaptive([0.5, 0.3], max_steps=4)
    seen = []
    for loss in [0.9, 0.8, 0.4, 0.35, 0.31, 0.2, 0.9, 0.9, 0.9, 0.9, 0.9]:
        i = p.next_phase((True, True))
        seen.append(i)
        p.observe(i, loss)
    # phase 0 until its loss < 0.5 (3 steps); phase 1 until < 0.3 (3 steps); phase 0 at most 4 steps; then 1
    assert seen == [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1]


def test_adaptive_respects_min_steps_and_skips_unrunnable_phases():
    p = Adaptive([1.0, 1.0], max_steps=5, min_steps=2)
    seen = []
    for _ in range(6):
        i = p.next_phase((True, True))
        seen.append(i)
        p.observe(i, 0.0)  # always below: leave as soon as min_steps allows
    assert seen == [0, 0, 1, 1, 0, 0]
    q = Adaptive([1.0, 1.0], max_steps=2)
    assert take(q, 5, runnable=(False, True)) == [1] * 5


def test_policy_dicts_round_trip_and_are_validated():
    for d in ({"policy": "fixed", "ratio": [5, 1]},
              {"policy": "adaptive", "thresholds": [0.5, 0.7], "max_steps": 9, "min_steps": 2}):
        assert policy_from_dict(d, ["D", "G"]).to_dict() == d
    assert policy_from_dict({"policy": "adaptive", "thresholds": {"G": 0.6}}, ["D", "G"]).thresholds == [-np.inf, 0.6]
    assert policy_from_dict({"ratio": "3:2"}, ["D", "G"]).counts == [3, 2]
    for bad in ({"policy": "fixed", "ratio": [1, 2, 3]}, {"policy": "adaptive", "thresholds": [1.0]},
                {"policy": "adaptive", "thresholds": {"X": 1.0}}, {"policy": "nope"},
                {"policy": "adaptive", "thresholds": [1, 1], "max_steps": 0}):
        with pytest.raises(UserError):
            policy_from_dict(bad, ["D", "G"])


@pytest.mark.parametrize("text", ["0:0", "a:b", "1:-1", "", "1.5:1"])
def test_parse_ratio_rejects(text):
    with pytest.raises(UserError) as e:
        parse_ratio(text)
    assert "\n" not in str(e.value)


def test_parse_ratio_accepts():
    assert parse_ratio("5:1") == [5, 1] and parse_ratio(" 0 : 2 : 1 ") == [0, 2, 1]


def test_ratio_5_to_1_runs_five_d_steps_per_g_step(tmp_path, run_dir):
    run(config(tiny_gan(tmp_path), run_dir, steps=60, var_every=7, schedule={"policy": "fixed", "ratio": [5, 1]}))
    phases = phase_of_step(run_dir)
    assert list(phases) == list(range(1, 61))
    assert runs_of(list(phases.values())) == [("D", 5), ("G", 1)] * 10
    start = next(e for e in read_events(run_dir) if e.kind == "start")
    assert start.schedule == {"policy": "fixed", "ratio": [5, 1]}
    # per-variable rows: every 7th step *of each phase*, so the rare G steps are recorded too
    sc = read_scalars(run_dir)
    assert sc["update_norm/generator/out/kernel"].steps.tolist() == [42]  # the 7th G step
    assert sc["update_norm/discriminator/out/kernel"].steps.tolist() == [s for s in range(1, 61) if s % 6][6::7]


def test_adaptive_policy_switches_at_its_threshold_in_a_run(tmp_path, run_dir):
    th, max_steps = {"D": 1.25, "G": 0.6}, 4
    run(config(tiny_gan(tmp_path), run_dir, steps=80,
               schedule={"policy": "adaptive", "thresholds": th, "max_steps": max_steps}))
    phases = phase_of_step(run_dir)
    sc = read_scalars(run_dir)
    # the policy saw float32 losses; 9 significant digits in the CSV give back exactly those
    loss = {s: float(np.float32(v)) for ph in ("D", "G") for s, v in zip(sc[f"loss/{ph}"].steps.tolist(),
                                                                          sc[f"loss/{ph}"].values.tolist())}
    steps, stays, by_threshold, by_cap = list(phases), runs_of(list(phases.values())), 0, 0
    i = 0
    for n, (ph, length) in enumerate(stays):
        ls = [loss[s] for s in steps[i:i + length]]
        i += length
        assert length <= max_steps and all(x >= th[ph] for x in ls[:-1]), (ph, ls)
        if n < len(stays) - 1:
            if ls[-1] < th[ph]:
                by_threshold += 1
            else:
                assert length == max_steps, (ph, ls)
                by_cap += 1
    assert by_threshold >= 2 and by_cap >= 2, "the run should show both ways of switching"


@pytest.mark.parametrize("ratio, phase, fix", [([5, 0], "G", "5:1"), ("0:3", "D", "1:3"), ([0, 0], "D", "1:1"),
                                               ([2.0, 0.0], "G", "2:1")])
def test_a_zero_count_is_refused_naming_the_phase_and_the_fix(ratio, phase, fix):
    """`5:0` passed without a word and G never ran."""
    with pytest.raises(UserError) as e:
        policy_from_dict({"policy": "fixed", "ratio": ratio}, ["D", "G"])
    counts = parse_ratio(ratio) if isinstance(ratio, str) else [int(c) for c in ratio]
    assert str(e.value) == (f"ratio {':'.join(map(str, counts))} gives phase {phase!r} 0 steps, so it would never "
                            f"train; give every phase a count >= 1 (e.g. {fix}), or freeze what {phase} trains to "
                            f"stop it")
    assert "\n" not in str(e.value)


def test_counts_of_at_least_one_pass_and_the_source_is_named():
    from training_core.base.alternation import check_counts
    check_counts([5, 1], ["D", "G"])
    assert policy_from_dict({"ratio": "3:2"}, ["D", "G"]).counts == [3, 2]
    with pytest.raises(UserError, match=r"^default ratio 1:0 in x\.py gives phase 'B' 0 steps"):
        check_counts([1, 0], ["A", "B"], "default ratio", " in x.py")

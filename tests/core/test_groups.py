"""Runs grouped by setting, bands over seeds, values at a step (training_core/runs/groups.py)."""
import math

import numpy as np
import pytest

from training_core.runs.groups import Summary, band, group_runs, setting_of, summarise, value_at


def test_seeds_of_one_setting_fall_in_one_group_and_only_differing_keys_are_named():
    configs = {
        "a": {"example": "ring", "schedule": {"D": 5, "G": 1}, "lr": {}, "seed": 0, "fetch_every": 200},
        "b": {"example": "ring", "schedule": {"G": 1, "D": 5}, "lr": {}, "seed": 1, "fetch_every": 50},
        "c": {"example": "ring", "schedule": {"D": 1, "G": 1}, "lr": {}, "seed": 0},
    }
    groups = group_runs(configs)
    assert [g.members for g in groups] == [("a", "b"), ("c",)]
    assert groups[0].seeds == (0, 1)
    assert groups[0].differs == (("schedule", "{D=5, G=1}"),)
    assert groups[1].label == "schedule={D=1, G=1}"


def test_a_sweep_point_replaces_the_configuration_setting():
    configs = {"a": {"freeze": [], "seed": 0}, "b": {"freeze": [], "seed": 1}}
    settings = {"a": {"freeze_from": "discriminator@100"}, "b": {"freeze_from": "discriminator@300"}}
    groups = group_runs(configs, settings)
    assert [g.label for g in groups] == ['freeze_from="discriminator@100"', 'freeze_from="discriminator@300"']


def test_setting_ignores_recording_options():
    assert setting_of({"seed": 3, "tensorboard": False, "lr": {"G": 5e-05}}) == {"lr": "{G=5e-05}"}


def test_band_over_equal_grids_is_the_plain_mean_min_and_max():
    s = np.arange(5)
    curves = [(s, np.array([1., 2, 3, 4, 5])), (s, np.array([3., 2, 1, 0, 1]))]
    b = band(curves)
    assert np.array_equal(b.mean, [2, 2, 2, 2, 3]) and np.array_equal(b.low, [1, 2, 1, 0, 1])
    assert np.array_equal(b.high, [3, 2, 3, 4, 5]) and b.n == 2
    sd = band(curves, spread="sd")
    assert np.allclose(sd.high - sd.mean, np.std(np.stack([c[1] for c in curves]), axis=0, ddof=1))


def test_band_stops_where_the_shortest_seed_stops_and_interpolates_between_records():
    b = band([(np.array([0, 10, 20]), np.array([0., 10, 20])), (np.array([0, 5, 15]), np.array([1., 1, 1]))])
    assert b.steps.tolist() == [0, 5, 10, 15]
    assert b.mean.tolist() == [0.5, 3.0, 5.5, 8.0]


def test_band_refuses_an_unknown_spread():
    with pytest.raises(ValueError, match="minmax, sd"):
        band([], spread="iqr")


def test_value_at_a_step_and_summaries():
    steps, values = np.array([0, 10, 20]), np.array([3., 2, 1])
    assert value_at(steps, values) == 1 and value_at(steps, values, 15) == 2
    assert math.isnan(value_at(steps, values, -1))
    s = summarise([1.0, 3.0, math.nan])
    assert (s.mean, s.n) == (2.0, 2) and s.sd == pytest.approx(math.sqrt(2))
    assert summarise([]).n == 0 and summarise([0.5]) == Summary(0.5, 0.0, 1)


def test_band_with_smoothing_smooths_each_seed_then_combines_them():
    from training_core.base.smoothing import ema_smooth
    s = np.arange(6)
    a, b = np.array([5., 1, 4, 2, 3, 0]), np.array([0., 2, 1, 3, 2, 4])
    got = band([(s, a), (s, b)], spread="minmax", smoothing=0.6)
    sa, sb = ema_smooth(a, 0.6)[0], ema_smooth(b, 0.6)[0]
    assert np.array_equal(got.mean, (sa + sb) / 2)
    assert np.array_equal(got.low, np.minimum(sa, sb)) and np.array_equal(got.high, np.maximum(sa, sb))


def test_planned_changes_are_part_of_the_setting():
    """"Freeze X from step N" lives in `planned`: two such sweep points differ, seeds of one do not."""
    plan = lambda step: [{"step": step, "kind": "freeze", "scopes": ["discriminator/dense_1"]}]
    configs = {"a": {"planned": plan(100), "seed": 0}, "b": {"planned": plan(100), "seed": 1},
               "c": {"planned": plan(300), "seed": 0}}
    assert [g.members for g in group_runs(configs)] == [("a", "b"), ("c",)]


def test_an_sd_band_of_a_measure_never_below_0_stops_at_0():
    """A softplus loss (or FID, KID, ‖ΔW‖) near 0 with seeds far apart: mean - sd was below 0, where no seed ever
    was. Clipped at 0, and only there; a measure that can be negative (a Wasserstein loss) keeps its edge."""
    steps = np.arange(3)
    seeds = [(steps, np.array([0.01, 1.0, 2.0])), (steps, np.array([0.9, 1.2, 2.1]))]
    b = band(seeds, spread="sd")
    sd = np.std(np.stack([v for _, v in seeds]), axis=0, ddof=1)
    assert (b.mean - sd)[0] < 0 and b.low[0] == 0.0  # the step where the plain edge fell below 0
    assert np.allclose(b.low[1:], (b.mean - sd)[1:]) and np.allclose(b.high, b.mean + sd)
    signed = [(s, v - 0.02) for s, v in seeds]  # one value below 0: the edge as computed
    assert band(signed, spread="sd").low[0] < 0

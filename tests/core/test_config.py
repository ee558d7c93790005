"""base/config.py: a configuration is refused in one line that names the problem and the fix: a key nobody
knows with the key it was likely meant to be, a learning rate float32 cannot hold (the command line's check,
which a live or remote command shares: tests/core/test_command_table.py)."""
from __future__ import annotations

import pytest

from training_core import RunConfig, UserError


@pytest.mark.parametrize("key, meant", [("learnign_rate", "lr"), ("learning_rate", "lr"), ("sede", "seed"),
                                        ("batchsize", "batch_size"), ("ratio", "schedule"), ("tensorbord", "tensorboard")])
def test_an_unknown_key_suggests_the_key_it_was_meant_to_be(tmp_path, key, meant):
    """A typo in a config.toml given to --config was named, with no "did you mean"."""
    path = tmp_path / "config.toml"
    path.write_text(f'example = "ring"\n{key} = 1\n')
    with pytest.raises(UserError) as e:
        RunConfig.read_toml(path)
    assert str(e.value) == f"config file {path}: unknown configuration key(s) {key} (did you mean {meant}?); fix or " \
                           f"remove them"


def test_an_unknown_key_close_to_nothing_is_named_alone():
    with pytest.raises(UserError) as e:
        RunConfig.from_dict({"zzzz": 1, "sede": 2})
    assert str(e.value) == "unknown configuration key(s) sede (did you mean seed?), zzzz; fix or remove them"


@pytest.mark.parametrize("text, tables", [("[base]\nsteps = 50\n[grid]\nseed = [0, 1]\n", "[base] and [grid] tables"),
                                          ("[grid]\nratio = ['1:1', '5:1']\n", "[grid] table")])
def test_a_sweep_file_given_as_a_config_says_to_pass_it_with_sweep(tmp_path, text, tables):
    """`--config sweep.toml` said "unknown configuration key(s) base, grid; fix or remove them": nothing in it
    to fix, the file is a sweep's."""
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    with pytest.raises(UserError) as e:
        RunConfig.read_toml(path)
    assert str(e.value) == f"{path} is a sweep file, not a run's config.toml; run it with python main.py --headless " \
                           f"--sweep {path}"  # (the line every option given a sweep file says: base/config.py)


@pytest.mark.parametrize("value", [1e39, 3.5e38, float("inf"), -1.0, float("nan")])
def test_a_learning_rate_the_step_cannot_take_is_refused(value):
    """1e39 is finite in float64 and passed the check, then became inf in the optimizer's float32 variable."""
    with pytest.raises(UserError) as e:
        RunConfig(lr={"D": value}).validate()
    assert str(e.value).startswith("learning rate for D ") and "\n" not in str(e.value)
    if 3.4028234663852886e38 < value < float("inf"):
        assert "more than float32 holds (at most 3.4e+38" in str(e.value)


def test_rates_float32_holds_pass():
    from training_core.base.config import check_learning_rate
    for value in (0, 1e-3, 3.4028234663852886e38):
        assert check_learning_rate(value, "x") == float(value)
    for bad in (True, "1e-3"):  # not numbers
        with pytest.raises(UserError, match="must be a finite number"):
            check_learning_rate(bad, "x")
    RunConfig(lr={"D": 2e-4, "G": 0}).validate()

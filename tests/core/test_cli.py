"""`python main.py --headless` as a user runs it: bad input is one line on stderr, exit code 2 and
nothing written; --list-scopes prints the tree; --config reruns a run; a headless run that can no
longer train stops instead of waiting forever for a Resume nobody can send.

Every subprocess pays TensorFlow's import, so they all start at once (module fixture) and the
tests only read their results.
"""
from __future__ import annotations

import numpy as np
import pytest

from training_core import RunConfig, Trainer, read_events, read_scalars

from .helpers import error_lines, main_cmd, nan_experiment, run_all, write_file

BAD = {  # name: (arguments, a word the one line must contain)
    "unknown_scope": (["--freeze", "nosuch"], "nosuch"),
    "scope_typo": (["--freeze", "generator/dense1"], "did you mean generator/dense_1?"),
    "ratio_zero": (["--ratio", "0:0"], "0:0"),
    "ratio_phases": (["--ratio", "1:2:3"], "3 counts"),
    "missing_file": (["--experiment", "{tmp}/nope.py"], "does not exist"),
    "raises_at_import": (["--experiment", "{tmp}/raises.py"], "ZeroDivisionError"),
    "build_raises": (["--experiment", "{tmp}/build_raises.py"], "boom"),
    "unknown_example": (["--example", "nope"], "nope"),
    "lr_syntax": (["--lr", "D"], "PHASE=NUMBER"),
    "lr_phase": (["--lr", "X=1e-4"], "X"),
    "run_dir_not_empty": (["--run-dir", "{tmp}/full"], "not empty"),
    "negative_steps": (["--steps", "-1"], "--steps"),
    "unknown_option": (["--frezee", "generator"], "--frezee"),
    "models_do_not_fit": (["--experiment", "{tmp}/misfit.py"], "noise_dim"),
}


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    write_file(tmp, "raises.py", "import keras\n\nx = 1 / 0\n")
    write_file(tmp, "build_raises.py", "def build():\n    raise RuntimeError('boom')\n")
    write_file(tmp, "misfit.py", """
        import keras, numpy as np
        noise_dim = 3
        def generator():
            return keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="out")], name="generator")
        def discriminator():
            return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")], name="discriminator")
        real_data = np.zeros((10, 2), "float32")
        """)
    (tmp / "full").mkdir()
    (tmp / "full" / "keep.txt").write_text("an earlier run\n")
    nan = nan_experiment(tmp)
    RunConfig(example="ring", steps=40, seed=5, schedule={"policy": "fixed", "ratio": [2, 1]}, var_every=4,
              run_dir="/elsewhere").write_toml(tmp / "rerun.toml")

    commands = {}
    for name, (args, _) in BAD.items():
        args = [a.format(tmp=tmp) for a in args]
        run_dir = [] if "--run-dir" in args else ["--run-dir", str(tmp / f"out_{name}")]
        commands[name] = main_cmd("--headless", "--steps", "5", *run_dir, *args)
    commands["list_scopes"] = main_cmd("--headless", "--example", "digits", "--list-scopes",
                                       "--run-dir", str(tmp / "out_list"))
    commands["rerun"] = main_cmd("--headless", "--config", str(tmp / "rerun.toml"), "--run-dir", str(tmp / "rerun"))
    commands["nan"] = main_cmd("--headless", "--experiment", str(nan), "--steps", "100000",
                               "--run-dir", str(tmp / "nan"))
    commands["all_frozen"] = main_cmd("--headless", "--example", "factorization", "--freeze", "W", "--freeze", "C",
                                      "--run-dir", str(tmp / "frozen"))
    return tmp, run_all(commands)


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_is_one_line_exit_2_and_nothing_written(cli, name):
    tmp, results = cli
    r = results[name]
    lines = error_lines(r.stderr)
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: ") and BAD[name][1] in lines[0], lines[0]
    assert "Traceback" not in r.stderr and r.stdout == ""
    if name == "run_dir_not_empty":
        assert sorted(p.name for p in (tmp / "full").iterdir()) == ["keep.txt"]
    else:
        assert not (tmp / f"out_{name}").exists()


def test_list_scopes_prints_the_tree_and_writes_nothing(cli):
    tmp, results = cli
    r = results["list_scopes"]
    assert r.returncode == 0, r.stderr
    assert not (tmp / "out_list").exists()
    lines = r.stdout.splitlines()
    tree, phases = lines[:lines.index("Phases:")], lines[lines.index("Phases:"):]
    assert tree[-1] == ""  # the phases stand apart from the table
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[1:] if ln.strip()}
    assert rows["generator/"][-1] == rows["generator/"][0] and int(rows["generator/"][0].replace(",", "")) > 0
    bn = [ln for ln in lines if ln.strip().startswith("generator/bn_1/")]
    assert len(bn) == 1
    i = lines.index(bn[0])
    assert [ln.split()[0] for ln in lines[i + 1:i + 5]] == ["gamma", "beta", "moving_mean", "moving_variance"]
    mean = lines[i + 3].split()
    assert "(512,)" in lines[i + 3] and mean[-2:] == ["512", "non-trainable"]
    total = next(ln for ln in lines if ln.startswith("total"))
    assert int(total.split()[1].replace(",", "")) == sum(
        int(ln.split()[-2].replace(",", "")) for ln in lines if ln.rstrip().endswith("trainable") and "(" in ln)
    # one line per phase with what it trains, then the total; the counts add up to the table's
    params = {name: int(rows[name + "/"][0].replace(",", "")) for name in ("discriminator", "generator")}
    trainable = int(total.split("(")[1].split()[0].replace(",", ""))
    assert phases == [
        "Phases:",
        f"  D  trains discriminator: 6 variables, {params['discriminator']:,} parameters",
        f"  G  trains generator: 10 variables, {trainable - params['discriminator']:,} parameters",
        f"  2 phases train 16 of 20 variables, {trainable:,} of {int(total.split()[1].replace(',', '')):,} parameters"]


def test_config_rerun_in_a_subprocess_matches_an_in_process_run(cli):
    """Determinism across processes: `--config` in a fresh interpreter and a Trainer here agree digit for digit."""
    tmp, results = cli
    r = results["rerun"]
    assert r.returncode == 0, r.stderr
    assert "run directory: " + str(tmp / "rerun") in r.stdout
    here = tmp / "rerun_here"
    cfg = RunConfig.read_toml(tmp / "rerun.toml")
    cfg.run_dir = str(here)
    Trainer(cfg).run()
    a, b = read_scalars(tmp / "rerun"), read_scalars(here)
    assert a.keys() == b.keys() and len(a["loss/D"].steps) == 27
    for tag in a:
        if not tag.startswith("metric/"):  # metrics are taken on a clock (every 2 s), not at fixed steps
            np.testing.assert_array_equal(a[tag].values, b[tag].values, err_msg=tag)


@pytest.mark.parametrize("name, cause", [("nan", "became nan at step 2"), ("all_frozen", "nothing can train")])
def test_headless_run_that_cannot_train_stops_with_one_error_line(cli, name, cause):
    tmp, results = cli
    r = results[name]
    assert r.returncode == 1, r.stderr
    errors = [ln for ln in error_lines(r.stderr) if ln.startswith("error: ")]
    assert len(errors) == 1 and cause in errors[0], r.stderr
    events = read_events(tmp / ("nan" if name == "nan" else "frozen"))
    assert events[-1].kind == "stop" and events[-1].reason == "stopped"

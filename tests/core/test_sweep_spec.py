"""A sweep's specification (training_core/runs/sweep_spec.py): the grid's points in order, seeds innermost, each
point's configuration; and every bad spec refused by the real command line with one line naming the problem and
the fix, exit code 2, nothing written."""
from __future__ import annotations

import pytest

from training_core.runs.sweep import Sweep, write_sweep
from training_core.runs.sweep_spec import spec_from_dict

from .helpers import error_lines, main_cmd, run_all

SPEC = {"base": {"example": "ring", "steps": 40},
        "grid": {"seed": [0, 1], "ratio": ["1:1", "5:1"], "lr": {"D": [1e-4, 4e-4]},
                 "freeze": [[], "discriminator/dense_1@20", {"scopes": ["generator/out", "generator/dense_1"]}]}}


def test_points_are_every_combination_in_the_order_written_with_seeds_innermost():
    spec = spec_from_dict(SPEC)
    points = spec.points()
    assert len(points) == spec.count() == 2 * 2 * 3 * 2
    assert [a.name for a in spec.axes] == ["seed", "ratio", "lr.D", "freeze"]
    assert [p.values["seed"] for p in points[:4]] == [0, 1, 0, 1]  # innermost, wherever it was written
    assert points[0].values == {"ratio": "1:1", "lr.D": 1e-4, "freeze": "none", "seed": 0}
    assert points[3].texts["freeze"] == "discriminator/dense_1@20"
    assert points[3].name == "003-ratio=1_1-lr.D=0.0001-freeze=discriminator_dense_1@20-seed=1"
    assert points[-1].setting() == {"ratio": "5:1", "lr.D": "0.0004", "freeze": "generator/out+generator/dense_1"}
    assert len({p.name for p in points}) == len(points)


def test_each_point_is_a_configuration_with_its_values_and_the_base():
    spec = spec_from_dict(SPEC)
    p = spec.points()
    static, planned = spec.config(p[-1]), spec.config(p[3])
    assert static.schedule == {"policy": "fixed", "ratio": [5, 1]} and static.lr == {"D": 4e-4}
    assert static.freeze == ["generator/out", "generator/dense_1"] and static.planned == [] and static.steps == 40
    # "freeze X from step N": nothing frozen at the start, a freeze planned at step N
    assert planned.freeze == [] and planned.seed == 1
    assert planned.planned == [{"step": 20, "kind": "freeze", "scopes": ["discriminator/dense_1"],
                                "update_frozen_stats": False}]


def test_a_sweep_file_read_back_gives_the_same_points(tmp_path):
    spec = spec_from_dict(SPEC)
    sweep = write_sweep(spec, tmp_path / "sw")
    again = Sweep.open(tmp_path / "sw")
    assert [p.name for p in again.points] == [p.name for p in sweep.points]
    assert [again.config(p).to_dict() | {"run_dir": None} for p in again.points] == \
        [spec.config(p).to_dict() | {"run_dir": None} for p in spec.points()]
    assert again.config(again.points[5]).run_dir == str(tmp_path / "sw" / "runs" / again.points[5].name)
    assert {s.state for s in again.states()} == {"new"}


# -- bad specs: one line each, exit 2, nothing written ------------------------------------------------------------
GRID = "[grid]\nseed = [0, 1]\n"
BAD = {  # name: (sweep file text or None, extra arguments, what the one line says)
    "missing_file": (None, ["--sweep", "{tmp}/nope.toml"], "does not exist"),
    "not_toml": ("grid = [", [], "is not valid TOML"),
    "unknown_table": ("[sweeps]\n" + GRID, [], "unknown table or key 'sweeps'"),
    "unknown_axis": ("[grid]\nratioo = ['1:1']\n", [], "unknown axis 'ratioo' (did you mean ratio?)"),
    "axis_not_a_list": ("[grid]\nratio = '1:1'\n", [], 'grid.ratio must be a non-empty list of values, e.g. ["1:1"'),
    "bad_ratio": ("[grid]\nratio = ['5-1']\n", [], "grid.ratio[0] = \"5-1\": ratio '5-1' is not of the form A:B"),
    "lr_in_quotes": ("[grid]\nlr.D = ['1e-4']\n", [], "write it without quotes"),
    "bad_freeze_step": ("[grid]\nfreeze = ['discriminator@soon']\n", [], "after @ comes the step to freeze from"),
    "bad_method": ("[grid]\nmethod = ['leaky']\n", [], "the method is exact or gate"),
    "seed_twice": ("[grid]\nseed = [0, 0]\n", [], "grid.seed lists 0 twice"),
    # a point of 0 steps trained nothing and the sweep exited 0, as --steps 0 did before it was refused
    "base_steps_zero": ("[base]\nsteps = 0\n" + GRID, [], "base_steps_zero.toml: base.steps = 0 trains no step; set "
                                                          "it to the steps every point trains"),
    "base_steps_negative": ("[base]\nsteps = -3\n" + GRID, [], "base: steps must be a whole number >= 1 (or left "
                                                               "out, to train until stopped), got -3"),
    "grid_steps_zero": ("[grid]\nsteps = [100, 0]\n", [], "grid.steps[1] = 0: the number of steps must be a whole "
                                                          "number from 1 or more"),
    "no_axes": ("[base]\nsteps = 5\n", [], "the grid has no axes"),
    # a bad value in the base is named by its key there, not by the option that sets it (--lr, --nan-lr-factor)
    "base_lr_negative": ("[base]\nsteps = 5\nlr = {D = -1.0}\n" + GRID, [],
                         "base_lr_negative.toml: base: lr.D must be a finite number >= 0, got -1.0"),
    "base_nan_lr_factor": ("[base]\nsteps = 5\nnan_lr_factor = 2.0\n" + GRID, [],
                           "base_nan_lr_factor.toml: base: nan_lr_factor = 2.0 must be in (0, 1]"),
    "base_lr_phase": ("[base]\nsteps = 5\nlr = {X = 1e-4}\n" + GRID, [],
                      "base_lr_phase.toml: base: lr.X names no phase of the experiment; phases are D, G: fix the key"),
    "base_ratio_zero": ("[base]\nsteps = 5\nschedule = {policy = 'fixed', ratio = [0, 1]}\n" + GRID, [],
                        "base_ratio_zero.toml: base: schedule: ratio 0:1 gives phase 'D' 0 steps"),
    "base_and_axis": ("[base]\nseed = 3\n" + GRID, [], "base.seed is also set by the axis seed; keep one of them"),
    "base_typo": ("[base]\nstepz = 3\n" + GRID, [], "unknown configuration key(s) stepz (did you mean steps?)"),
    "base_run_dir": ("[base]\nrun_dir = 'x'\n" + GRID, [], "each point's run directory is in the sweep directory"),
    "too_many": ("[grid]\nseed = [" + ", ".join(map(str, range(101))) + "]\nbatch_size = ["
                 + ", ".join(map(str, range(1, 101))) + "]\n", [], "more than 10,000"),
    "grid_text": (None, ["--sweep", "--grid", "ratio"], "is not NAME=V1,V2"),
    "option_and_axis": (None, ["--sweep", "--ratio", "5:1", "--grid", "ratio=1:1,2:1"],
                        "--ratio/--adaptive sets what the axis ratio of the sweep varies"),
    "grid_without_sweep": (None, ["--grid", "seed=0,1"], "--grid belongs to a sweep; add --sweep"),
    "run_dir": (GRID, ["--run-dir", "{tmp}/r"], "--run-dir with --sweep: each point's run directory is in the sweep"),
    "devices_cpu": (GRID, ["--devices", "cpu"], "--devices cpu: a CPU trains one point at a time"),
    "devices_missing": (GRID, ["--devices", "gpu:99"], "--devices gpu:99: this machine has"),
    # checked against the experiment (prepared once, as --list-scopes does)
    # a problem an axis's value makes is named as the user wrote it: the file's grid.NAME = VALUE, or --grid
    "unknown_scope": ("[grid]\nfreeze = ['none', 'discriminator/dense_9@10']\n", [],
                      "unknown_scope.toml: grid.freeze = \"discriminator/dense_9@10\": unknown scope "
                      "'discriminator/dense_9'; did you mean discriminator/dense_2?"),
    "ratio_length": ("[grid]\nratio = ['1:1', '1:1:1']\n", [], "grid.ratio = \"1:1:1\": ratio 1:1:1 has 3 counts"),
    "unknown_phase": ("[grid]\nlr.Q = [1e-4]\n", [], "unknown_phase.toml: grid.lr.Q = 0.0001: the experiment has "
                                                       "no phase 'Q'; its phases are D, G (an axis per phase: lr.D, lr.G)"),
    "grid_phase": (None, ["--sweep", "--steps", "5", "--grid", "lr.X=1e-4"],
                   "error: --grid lr.X=0.0001: the experiment has no phase 'X'; its phases are D, G"),
    "grid_scope": (None, ["--sweep", "--steps", "5", "--grid", "freeze=none,discriminator/dens_1@3"],
                   "error: --grid freeze=discriminator/dens_1@3: unknown scope 'discriminator/dens_1'; did you mean "
                   "discriminator/dense_1?"),
    "existing_dir": (GRID, ["--sweep-dir", "{tmp}/existing"], "already exists and is not empty; continue that sweep "
                                                              "with --resume"),
    # an existing sweep
    "point_out_of_range": (None, ["--sweep", "{tmp}/existing", "--point", "9"], "has points 0 to 1; pick one"),
    "changed_on_resume": (None, ["--resume", "{tmp}/existing", "--steps", "5"], "--steps would change the sweep in"),
    "no_such_sweep": (None, ["--sweep", "{tmp}/nope", "--point", "0"], "sweep directory {tmp}/nope does not exist"),
}


def _tree(d):
    return sorted((str(p.relative_to(d)), p.read_bytes() if p.is_file() else b"") for p in d.rglob("*"))


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad_specs")
    write_sweep(spec_from_dict({"base": {"steps": 5}, "grid": {"seed": [0, 1]}}), tmp / "existing")
    before = _tree(tmp)
    commands = {}
    for name, (text, extra, _) in BAD.items():
        args = [a.format(tmp=tmp) for a in extra]
        if text is not None:
            (tmp / f"{name}.toml").write_text("[base]\nsteps = 5\n" + text if not text.startswith(("[base]", "grid ="))
                                              and "steps" not in text else text, encoding="utf-8")
            args = ["--sweep", str(tmp / f"{name}.toml"), *args]
        if not any(a in extra for a in ("--sweep-dir", "{tmp}/existing", "{tmp}/nope")):  # a new sweep: where to
            args += ["--sweep-dir", str(tmp / f"out-{name}")]
        commands[name] = main_cmd("--headless", *args, "--quiet")
    results = run_all(commands, timeout=300)
    return tmp, before, results


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_spec_is_one_line_naming_the_problem_and_the_fix_and_nothing_is_written(refused, name):
    tmp, before, results = refused
    r = results[name]
    lines = error_lines(r.stderr)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert BAD[name][2].format(tmp=tmp) in lines[0]
    assert not (tmp / f"out-{name}").exists()
    written = {p.name for p in tmp.iterdir()} - {n for n, _ in before} - {f"{n}.toml" for n in BAD}
    assert written == set(), written  # no sweep directory, no half-made one beside it
    assert _tree(tmp / "existing") == [(n[len("existing/"):], b) for n, b in before if n.startswith("existing/")]

"""A sweep from a TOML file, end to end (`--sweep FILE.toml`, docs/sweeps.md "The sweep file"): the documentation's
own `resources/docs/ablation.toml` written with `--print-commands` makes the points the docs name, and a small
sweep file written here runs on the ring, its grid recorded in the sweep directory and in each point."""
from __future__ import annotations

import re
import tomllib

import pytest

from training_core import read_config
from training_core.runs.sweep import Sweep

from .helpers import REPO, main_cmd, run_all

TIMEOUT = 600


def test_print_commands_of_the_documented_sweep_file_makes_the_documented_points(tmp_path):
    d = tmp_path / "ablation"
    r = run_all({"print": main_cmd("--headless", "--sweep", str(REPO / "resources/docs/ablation.toml"), "--sweep-dir",
                                   str(d), "--print-commands")}, timeout=TIMEOUT)["print"]
    assert r.returncode == 0, r.stderr
    docs = (REPO / "docs/sweeps.md").read_text()
    m = re.search(r"the file above makes\s+(\d+) points, `([^`]+)` to `([^`]+)`", docs)
    assert m, "docs/sweeps.md no longer names the points of ablation.toml"
    count, first, last = int(m[1]), m[2], m[3]
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"# {count} points of {d.resolve()}")  # the count a Slurm array takes (--array=0-7)
    assert lines[1:] == [f"python {main_cmd()[1]} --headless --sweep {d.resolve()} --point {k}" for k in range(count)]
    names = [p.name for p in Sweep.open(d).points]
    assert len(names) == count and (names[0], names[-1]) == (first, last)
    assert sorted(f.stem for f in (d / "points").iterdir()) == names  # one file per point, named so
    assert [s.state for s in Sweep.open(d).states()] == ["new"] * count  # written, nothing run


GRID = {"ratio": ["1:1", "2:1"]}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("toml")
    spec = tmp / "small.toml"
    spec.write_text('[base]\nexample = "ring"\nsteps = 20\ncheckpoint_every = 0\ntensorboard = false\n\n'
                    '[grid]\nratio = ["1:1", "2:1"]\n')
    d = tmp / "small-sweep"
    r = run_all({"run": main_cmd("--headless", "--sweep", str(spec), "--sweep-dir", str(d), "--quiet")},
                timeout=TIMEOUT)["run"]
    return d, r


def test_a_toml_sweep_runs_every_point_and_records_its_grid(small):
    d, r = small
    assert r.returncode == 0, r.stderr
    assert f"sweep {d}: 2 of 2 points done" in r.stdout
    recorded = tomllib.loads((d / "sweep.toml").read_text())
    assert recorded["grid"] == GRID and recorded["base"]["steps"] == 20  # the sweep as asked
    sweep = Sweep.open(d)
    assert [p.name for p in sweep.points] == ["000-ratio=1_1", "001-ratio=2_1"]
    assert [s.state for s in sweep.states()] == ["done", "done"]
    for p, ratio in zip(sweep.points, GRID["ratio"]):
        point = tomllib.loads(sweep.point_file(p).read_text())
        assert point["index"] == p.index and point["values"] == {"ratio": ratio}  # its grid point
        cfg = read_config(sweep.run_dir(p))  # and the configuration its run took
        assert cfg["schedule"]["ratio"] == [int(c) for c in ratio.split(":")] and cfg["steps"] == 20

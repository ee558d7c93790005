"""`main.py --export SWEEP_DIR --table FILE` (training_core/cli/table_export.py): the table of the sweep's run
records, as CSV or LaTeX, sorted as asked, on stdout with `-`; a point not yet done is named in a warning; bad
input is one line, exit 2, nothing written. The records are written with the run record's own writer (no
training: tests/core/test_sweep.py checks the numbers of a real sweep)."""
from __future__ import annotations

import numpy as np
import pytest

from training_core.base import events as E
from training_core.rundir.writer import RecordWriter
from training_core.runs.sweep import Sweep, write_sweep
from training_core.runs.sweep_spec import spec_from_dict
from training_core.runs.sweep_table import build_table, read_members

from .helpers import error_lines, main_cmd, run_all


def _record(sweep: Sweep, index: int, losses: list[float], done: bool = True) -> None:
    point = sweep.points[index]
    d = sweep.run_dir(point)
    d.mkdir(parents=True)
    w = RecordWriter(d, [("D", ["d/kernel"])], config=sweep.config(point), tensorboard=False)
    w.event(E.Start(step=0, time=1.0, phases=["D"], phase_variables={"D": ["d/kernel"]}))
    steps = np.arange(1, len(losses) + 1)
    w.metrics([], {"loss/D": (steps, steps * 1.0, np.asarray(losses, dtype=np.float64))})
    w.sync()
    if done:
        w.event(E.Stop(step=len(losses), time=9.0, reason="done"))
    w.close()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("table")
    sweep = write_sweep(spec_from_dict({"base": {"steps": 3}, "grid": {"ratio": ["1:1", "5:1", "3:1"],
                                                                        "seed": [0, 1]}}), tmp / "sw")
    for i, losses in enumerate([[3, 2, 1], [3, 2, 2], [5, 4, 3.5], [5, 4, 3], [1, 1, 0.25], [1, 1]]):
        _record(sweep, i, losses, done=i != 5)  # the last one still training (or cut)
    (tmp / "keep.csv").write_text("mine")
    r = sweep.run_dir(sweep.points[0])
    bad = {
        "extension": ["--table", f"{tmp}/t.pdf"], "in_the_sweep": ["--table", f"{tmp}/sw/points/t.csv"],
        "over_a_record": ["--table", f"{r}/scalars.csv"], "metric": ["--metrics", "loss/Q"],
        "sort": ["--sort", "ratioo"], "step": ["--step", "-1"], "smoothing": ["--smoothing", "1"],
        "digits": ["--digits", "0"], "folder": ["--table", str(tmp)], "ylabel": ["--ylabel", "loss/Q=Q loss"],
    }
    commands = {name: main_cmd("--export", f"{tmp}/sw", *(["--table", f"{tmp}/out-{name}.csv"] if "--table"
                                                        not in args else []), *args) for name, args in bad.items()}
    commands |= {"not_a_sweep": main_cmd("--export", str(r), "--table", f"{tmp}/out-not.csv"),
                 "stdout": main_cmd("--export", f"{tmp}/sw", "--table", "-"),
                 "sorted": main_cmd("--export", f"{tmp}/sw", "--table", "-", "--format", "tex", "--sort", "loss/D",
                                    "--descending"),
                 "renamed": main_cmd("--export", f"{tmp}/sw", "--table", "-", "--format", "tex", "--ylabel",
                                     "loss/D=Critic loss", "--step", "2")}
    return tmp, sweep, run_all(commands, timeout=120)


def test_the_table_on_stdout_is_the_records_table(exported):
    tmp, sweep, results = exported
    r = results["stdout"]
    assert r.returncode == 0, r.stderr
    assert r.stdout == build_table(read_members(sweep)).to_csv()
    assert r.stdout.splitlines()[1:] == ["1:1,2,1.5,0.7071067811865476,2", "5:1,2,3.25,0.3535533905932738,2",
                                         "3:1,2,0.625,0.5303300858899106,2"]
    assert error_lines(r.stderr) == [f"warning: 1 of 6 points are not done (e.g. {sweep.points[5].name}); the table "
                                     "holds what the others recorded"]


def test_sorted_descending_by_a_metric(exported):
    r = exported[2]["sorted"]
    assert r.returncode == 0, r.stderr
    body = r.stdout.splitlines()[5:8]
    assert [line.split(" & ")[0] for line in body] == ["5:1", "1:1", "3:1"]


def test_columns_are_titled_readably_and_renamed_by_ylabel(exported):
    r = exported[2]["renamed"]
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[3] == "ratio & Critic loss & Critic loss @ 2 \\\\"


SAYS = {"extension": "the format follows the extension, .csv or .tex", "in_the_sweep": "is part of the sweep in",
        "over_a_record": "is part of the run record in", "metric": "--metrics loss/Q: no point recorded it",
        "sort": "--sort ratioo: the columns are ratio, seeds, loss/D", "step": "--step must be >= 0",
        "smoothing": "--smoothing must be in [0, 1)", "digits": "--digits must be 1 to 12", "folder": "is a folder",
        "ylabel": "--ylabel loss/Q=...: no column 'loss/Q' in this table; use one of: loss/D",
        "not_a_sweep": "has no sweep.toml, so it is not a sweep directory"}


@pytest.mark.parametrize("name", list(SAYS))
def test_bad_input_is_one_line_and_nothing_is_written(exported, name):
    tmp, sweep, results = exported
    r = results[name]
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = error_lines(r.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: ") and SAYS[name] in lines[0], lines
    assert not list(tmp.glob("out-*")) and not (tmp / "t.pdf").exists() and not (tmp / "sw" / "points" / "t.csv").exists()
    assert (sweep.run_dir(sweep.points[0]) / "scalars.csv").read_text().startswith("step,wall_time,tag,value")

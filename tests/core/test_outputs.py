"""Where exports may write (training_core/outputs.py): never over a run's record, anywhere beside it."""
from __future__ import annotations

import pytest

from training_core import UserError
from training_core.rundir.layout import RECORD_NAMES
from training_core.rundir.outputs import check_output, record_owner


def make_run(path):
    path.mkdir(parents=True)
    (path / "events.jsonl").write_text("")
    (path / "scalars.csv").write_text("step,wall_time,tag,value\n")
    return path


@pytest.mark.parametrize("name", sorted(RECORD_NAMES))
def test_every_name_a_run_writes_is_refused(tmp_path, name):
    run = make_run(tmp_path / "runs" / "a")
    assert record_owner(run / name) == run.resolve()
    assert record_owner(run / name / "deeper" / "x.pdf") == run.resolve()
    with pytest.raises(UserError, match="part of the run record"):
        check_output(run / name)


def test_other_names_beside_a_run_and_outside_runs_are_fine(tmp_path):
    run = make_run(tmp_path / "a")
    for ok in (run / "figure.pdf", run / "notes" / "x.csv", tmp_path / "scalars.csv", tmp_path / "fig.png"):
        assert record_owner(ok) is None
    (run / "notes").mkdir()
    check_output(run / "notes" / "x.csv")
    check_output(tmp_path / "scalars.csv")  # not inside a run directory: just a file name
    with pytest.raises(UserError, match="is a folder"):
        check_output(run / "notes")
    with pytest.raises(UserError, match="does not exist"):
        check_output(tmp_path / "missing" / "x.pdf")

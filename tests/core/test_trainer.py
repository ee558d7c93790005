"""loop/trainer.py: what the loop itself decides (the rest of its behaviour is covered by the tests the file
map names): here, a step target that counts one phase's steps (`--steps 100 --count G`), as GAN papers count
generator iterations, through a run, a resume, the progress bar and bad input; and the steps still on the
device read before a run is called done (a NaN among them halts or rolls back as one mid-run does)."""
from __future__ import annotations

import io

import pytest

from training_core import RunConfig, Trainer, UserError, read_events, read_scalars
from training_core.base.metrics import Status
from training_core.cli.headless import HeadlessObserver, ProgressBar
from training_core.cli.train import _steps_run
from training_core.rundir.resume_point import check_target, resume_config

from .helpers import config, nan_experiment

RATIO = {"policy": "fixed", "ratio": [3, 1]}  # the ring's phases: D, G


def _config(run_dir, **kw) -> RunConfig:
    return RunConfig(example="ring", schedule=RATIO, run_dir=str(run_dir), checkpoint_every=0, sample_seconds=0,
                     metrics_seconds=1e9, **kw)


def test_a_target_of_one_phases_steps_ends_after_that_many_of_its_steps_and_a_resume_continues_it(tmp_path):
    d = tmp_path / "run"
    trainer = Trainer(_config(d, steps=12, count="G"))
    status = trainer.run()
    assert dict(zip(trainer.prepared.phase_names, trainer.phase_counts)) == {"D": 36, "G": 12} and trainer.step == 48
    assert status.count_phase == "G" and status.counted == 12 and status.step == 48
    sc = read_scalars(d)
    assert len(sc["loss/G"].steps) == 12 and len(sc["loss/D"].steps) == 36
    with pytest.raises(UserError, match="is at G step 12 and its step target is 12"):
        check_target(d, 12, "G")
    assert check_target(d, 15, "G") == 48  # the resume starts at the final checkpoint, step 48
    cfg = resume_config(d)
    assert cfg.count == "G"  # the run's own count, from its config.toml
    cfg.steps = 15
    Trainer(cfg, resume=True).run()
    sc = read_scalars(d)
    assert len(sc["loss/G"].steps) == 15 and len(sc["loss/D"].steps) == 45 and sc["loss/G"].steps[-1] == 60


def test_the_progress_bar_says_whose_steps_it_counts():
    out = io.StringIO()
    bar = ProgressBar(target=100, stream=out)
    bar._draw(Status(step=400, phase="G", target_steps=100, count_phase="G", counted=80))
    assert "80/100 G steps (step 400)" in out.getvalue() and " 80.0%" in out.getvalue()
    out.truncate(0)
    bar._draw(Status(step=40, phase="G", target_steps=100))
    assert "40/100 " in out.getvalue() and "G steps" not in out.getvalue()


def test_the_summary_counts_this_processs_steps_and_the_counted_phases():
    """A resumed run's last line said "300 steps" when 100 ran; with --count G it gave no G count."""
    assert _steps_run(Status(step=300), None) == "300 steps"
    assert _steps_run(Status(step=300), 200) == "100 steps (from step 200 to 300)"
    assert _steps_run(Status(step=600, count_phase="G", counted=150), 400) == \
        "200 steps (from step 400 to 600), 150 G steps in all"


def test_a_count_of_a_phase_the_experiment_lacks_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(UserError, match="--count X: the experiment has no phase of that name; phases are D, G"):
        Trainer(_config(tmp_path / "run", steps=5, count="X")).run()
    assert not (tmp_path / "run").exists()
    with pytest.raises(UserError, match="no --steps is given"):
        _config(tmp_path / "run", count="G").validate()


# -- the last steps' numbers are read before a run is called done ------------------------------------------
def _nan_at_the_end(tmp_path, **kw):
    """log(w) under SGD(10) is NaN from step 2; nothing is fetched before the step target (fetch_every and
    fetch_seconds beyond the run), so the NaN reaches the host only after the last step, as it did for a
    short run on a fast machine (a sweep point whose record said `done` with its loss inf)."""
    d = tmp_path / "run"
    return d, config(nan_experiment(tmp_path), d, steps=20, fetch_every=10**6, fetch_seconds=1e9, **kw)


def test_a_nan_first_read_after_the_last_step_halts_a_headless_run(tmp_path):
    d, cfg = _nan_at_the_end(tmp_path)
    observer = HeadlessObserver(None, quiet=True)
    Trainer(cfg, observer).run()
    events = read_events(d)
    assert [(e.at_step, e.value) for e in events if e.kind == "nan"] == [(2, "nan")]
    assert [e.reason for e in events if e.kind == "pause"] == ["nan"]
    assert events[-1].kind == "stop" and events[-1].reason == "halted" and events[-1].step == 20
    assert "the loss of phase P became nan at step 2" in observer.halted  # the CLI's exit code 1
    assert not (d / "models").exists() or not list((d / "models").iterdir())  # no weights exported


def test_a_nan_first_read_after_the_last_step_is_rolled_back_and_trained_to_the_target(tmp_path):
    """`--on-nan rollback` at the end as mid-run: back to the last checkpoint before the NaN (step 0's: no
    other is saved, and saving one would read the NaN), and on to the target again; the NaN comes whatever the
    rate, each time read after the last step, so it gives up after three and pauses: headless, it halts."""
    d, cfg = _nan_at_the_end(tmp_path, on_nan="rollback")
    observer = HeadlessObserver(None, quiet=True)
    Trainer(cfg, observer).run()
    events = read_events(d)
    assert [(e.step, e.count) for e in events if e.kind == "rollback"] == [(0, 3)]  # the record keeps the third's
    assert len(list((d / "dropped").glob("rollback-*"))) == 3
    assert events[-1].reason == "halted" and "gave up" in observer.halted

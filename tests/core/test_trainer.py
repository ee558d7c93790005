"""loop/trainer.py: what the loop itself decides (the rest of its behaviour is covered by the tests the file
map names): here, a step target that counts one phase's steps (`--steps 100 --count G`), as GAN papers count
generator iterations, through a run, a resume, the progress bar and bad input."""
from __future__ import annotations

import io

import pytest

from training_core import RunConfig, Trainer, UserError, read_scalars
from training_core.base.metrics import Status
from training_core.cli.headless import ProgressBar
from training_core.cli.train import _steps_run
from training_core.rundir.resume_point import check_target, resume_config

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

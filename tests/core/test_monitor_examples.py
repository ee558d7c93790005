"""The monitor's shipped examples (resources/examples/) run offline as documented: the keras.io-style DCGAN
under `Monitor` shows its `--bug` (discriminator.trainable = False after the first epoch) as leaks, and the
GradientTape loop with an EMA generator and lazy R1 records its steps and R1 penalty, and a second start with a
larger step target continues the same record.

Why: docs/monitor.md points users at these files; an example that no longer runs is a broken promise.
"""
from __future__ import annotations

import sys

import numpy as np

from training_core import read_events, read_scalars
from training_core.rundir.samples import list_samples, load_samples

from .helpers import REPO, start

EXAMPLES = REPO / "resources" / "examples"


def _run(*args: str) -> str:
    proc = start([sys.executable, *args])
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return err


def test_the_fit_example_shows_its_frozen_discriminator_as_leaks(tmp_path):
    err = _run(str(EXAMPLES / "keras_dcgan_fit.py"), "--run-dir", str(tmp_path / "run"), "--epochs", "2",
               "--batches", "30", "--bug")
    leaks = [e for e in read_events(tmp_path / "run") if e.kind == "leak"]
    assert {e.variable.split("/")[0] for e in leaks} == {"discriminator"} and len(leaks) == 6
    assert all(e.at_step > 30 for e in leaks)  # after the flag was set, at the end of the first epoch
    assert "leak: discriminator/conv_1/kernel moved by" in err
    assert read_scalars(tmp_path / "run")["loss/generator"].steps.tolist() == list(range(1, 61))
    assert load_samples(list_samples(tmp_path / "run")[-1][1])["fake"].shape == (64, 8, 8, 1)


def test_the_gradient_tape_example_records_r1_and_continues_its_record(tmp_path):
    script = str(EXAMPLES / "gradient_tape_ema_r1.py")
    _run(script, "--run-dir", str(tmp_path / "run"), "--steps", "40")
    _run(script, "--run-dir", str(tmp_path / "run"), "--steps", "48")  # started again: it continues
    sc = read_scalars(tmp_path / "run")
    assert sc["loss/D"].steps.tolist() == list(range(1, 49)) and sc["loss/G"].steps.tolist() == list(range(1, 49))
    assert sc["metric/r1"].steps.tolist() == [16, 32, 48] and np.all(sc["metric/r1"].values > 0)
    kinds = [e.kind for e in read_events(tmp_path / "run")]
    assert kinds.count("resumed") == 1 and "leak" not in kinds and kinds[-1] == "stop"
    start_event = read_events(tmp_path / "run")[0]
    assert "generator_ema/dense/kernel" in {v["path"] for v in start_event.variables}  # shown, checkpointed

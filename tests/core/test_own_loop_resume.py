"""monitor/own_loop.py's resume: what the script passes to `start_run(..., resume=True)` and the run does not take.

Why: a resumed run goes on with its checkpoint's freeze set and learning rates (those the window set included),
so that it continues the run it was; a tester who edited the script's `freeze=` before resuming saw the old set
honoured with no word of it. Each difference is a warning in the record and on the terminal, naming what the
run keeps and how to change it.
"""
from __future__ import annotations

import keras

from training_core import SetLearningRate, read_events
from training_core.monitor import start_run

from .test_own_loop import _models


def _train(run) -> None:
    for step in run.steps():
        run.log(step, {"D": 1.0, "G": 2.0})


def test_a_resume_says_which_of_the_scripts_settings_the_checkpoint_overrides(tmp_path, capsys):
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(2e-4), d), "G": (keras.optimizers.Adam(2e-4), g)}
    with start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, steps=3,
                   freeze="discriminator") as run:
        run.send(SetLearningRate("G", 5e-4))  # as the window sets it
        _train(run)
    phases = {"D": (keras.optimizers.Adam(2e-4), d), "G": (keras.optimizers.Adam(2e-4), g)}
    with start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, steps=6,
                   freeze="discriminator", resume=True) as run:  # the same script again: the window's rate differs
        _train(run)
    phases = {"D": (keras.optimizers.Adam(1e-4), d), "G": (keras.optimizers.Adam(5e-4), g)}  # (G: the window's)
    with start_run(tmp_path / "run", models={"generator": g, "discriminator": d}, phases=phases, steps=9,
                   resume=True, freeze="generator/h") as run:  # edited: another freeze, D's rate halved
        _train(run)
    warnings = [(e.step, e.message) for e in read_events(tmp_path / "run") if e.kind == "warning"
                and e.message.startswith("resumed")]
    assert warnings == [
        (3, "resumed with the run's learning rates, G 0.0005 (the script's 0.0002); send SetLearningRate(...) "
            "(run.send, the window) to change them"),
        (6, "resumed with the run's freeze set ['discriminator'] (its checkpoint's), not "
            "start_run(freeze=['generator/h']); send SetFreeze(...) (run.send, the window) to change it"),
        (6, "resumed with the run's learning rates, D 0.0002 (the script's 0.0001); send SetLearningRate(...) "
            "(run.send, the window) to change them")]
    assert "freezeframe: warning: resumed with the run's freeze set ['discriminator']" in capsys.readouterr().err

"""monitor/stop_signal.py: SIGTERM to a script's `start_run` loop (what Slurm, docker and systemd send).

Why: Python's default for SIGTERM is to die at once, and a tester's loop so stopped lost the ~200 steps since its
last checkpoint on resume, its record ending without a `stop` event. The run must end as after Ctrl-C: at its
next step boundary, with its final checkpoint at the last step and the `stop` event, the script going on after
its loop (exit 0); started again with `resume=True`, it continues from that step, computing the losses of the
run never interrupted. A handler of the script's own is left alone.
"""
from __future__ import annotations

import signal

import keras
import numpy as np
import pytest

from training_core import read_events, read_scalars
from training_core.monitor import Monitor, start_run

from .test_own_loop import _loop, _models, _run


@pytest.fixture(autouse=True)
def default_sigterm():
    """Each test starts with SIGTERM at its default, as a script does, whatever ran before in this process."""
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGTERM, before)


def test_sigterm_stops_the_loop_at_its_boundary_with_a_final_checkpoint_and_a_resume_loses_nothing(tmp_path):
    script = _loop(tmp_path)
    code, err = _run(script, tmp_path / "whole", 240)
    assert code == 0, err
    out: list = []
    code, err = _run(script, tmp_path / "termed", 240, term_at=173, out=out)  # 23 steps after the checkpoint at 150
    assert code == 0, err
    assert "freezeframe: SIGTERM: the run stops at its next step boundary" in err
    stopped_at = int(out[0].split("after the loop")[1])  # the script went on after its loop
    events = read_events(tmp_path / "termed")
    stop = events[-1]
    assert stop.kind == "stop" and stop.reason == "stopped" and stop.step == stopped_at >= 173
    assert [e.step for e in events if e.kind == "checkpoint"][-1] == stopped_at
    assert read_scalars(tmp_path / "termed")["loss/D"].steps[-1] == stopped_at

    code, err = _run(script, tmp_path / "termed", 240)
    assert code == 0, err
    assert next(e for e in read_events(tmp_path / "termed") if e.kind == "resumed").step == stopped_at
    whole, resumed = read_scalars(tmp_path / "whole"), read_scalars(tmp_path / "termed")
    for tag in ("loss/D", "loss/G"):
        assert resumed[tag].steps.tolist() == list(range(1, 241))
        assert np.array_equal(resumed[tag].values, whole[tag].values)


def test_the_handler_is_installed_only_over_the_default_and_removed_at_the_end(tmp_path):
    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with start_run(tmp_path / "a", models={"generator": g, "discriminator": d}, phases=phases, quiet=True) as run:
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        run.log(1, {"D": 1.0})
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

    def mine(*_):
        pass
    signal.signal(signal.SIGTERM, mine)
    try:
        with start_run(tmp_path / "b", models={"generator": g, "discriminator": d}, phases=phases, quiet=True) as run:
            assert signal.getsignal(signal.SIGTERM) is mine
            run.log(1, {"D": 1.0})
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_sigterm_during_fit_ends_the_record_as_a_stop_at_a_batch_boundary(tmp_path, capsys):
    """The Monitor in `fit()`: the signal stops fit() at a batch's end, the record closed with `stop: stopped`."""
    import os

    from .keras_gan import dataset, make_gan

    class Term(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 3:
                assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # (else the signal ends pytest)
                os.kill(os.getpid(), signal.SIGTERM)

    gan = make_gan()
    gan.fit(dataset(), epochs=4, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True), Term()])
    events = read_events(tmp_path / "run")
    steps = read_scalars(tmp_path / "run")["loss/generator"].steps
    assert events[-1].kind == "stop" and events[-1].reason == "stopped" and 4 <= events[-1].step < 64
    assert steps[-1] == events[-1].step
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert "freezeframe: SIGTERM" in capsys.readouterr().err


def test_a_run_left_open_does_not_keep_sigterm_from_the_next_one(tmp_path, capsys):
    """A fit() that raised (Keras ends it without `on_train_end`) leaves its run open with its handler; the
    suite found the next run in that process then trained on through SIGTERM (the stop went to the dead run).
    The next run takes SIGTERM over and is the one stopped; at its end the open one has it back, and once that
    one closes, the default."""
    import os

    from .keras_gan import dataset, make_gan

    g, d = _models()
    phases = {"D": (keras.optimizers.Adam(), d), "G": (keras.optimizers.Adam(), g)}
    left = start_run(tmp_path / "left", models={"generator": g, "discriminator": d}, phases=phases, quiet=True)
    left.log(1, {"D": 1.0})
    stale = signal.getsignal(signal.SIGTERM)
    assert stale is not signal.SIG_DFL

    class Term(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 3:
                assert signal.getsignal(signal.SIGTERM) is not stale
                os.kill(os.getpid(), signal.SIGTERM)

    make_gan().fit(dataset(), epochs=4, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True), Term()])
    stop = read_events(tmp_path / "run")[-1]
    assert stop.kind == "stop" and stop.reason == "stopped" and stop.step < 64
    assert signal.getsignal(signal.SIGTERM) == stale
    left.close()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert read_events(tmp_path / "left")[-1].reason == "done"


def test_a_fit_refused_at_its_first_batch_gives_sigterm_back(tmp_path):
    from training_core.base.errors import UserError

    from .keras_gan import dataset, make_gan

    with pytest.raises(UserError, match="d_loss_typo"):
        make_gan().fit(dataset(), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True, losses={
            "discriminator": "d_loss_typo", "generator": "g_loss"})])
    assert read_events(tmp_path / "run")[-1].kind == "stop"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

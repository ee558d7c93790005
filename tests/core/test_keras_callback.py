"""monitor/keras_callback.py: `Monitor` on a keras.io-style GAN (a `train_step` of its own training two
sub-models) trained by `fit()`.

Why: this is the code most GAN authors have, and its most common bug is the product's question. After the step
is compiled, `discriminator.trainable = False` changes nothing in it, and the discriminator trains on while its
author believes it frozen. The Monitor must record the run as a Freezeframe run (losses from `logs`, every
variable's update and trainable flag) and report that discriminator as leaking, naming each variable, the step
and the size of the move, without a false alarm for what legitimately moves (the generator, its
BatchNormalization statistics).
"""
from __future__ import annotations

import keras
import numpy as np
import pytest

from training_core import read_events, read_scalars
from training_core.base.errors import UserError
from training_core.monitor import Monitor
from training_core.rundir.samples import list_samples, load_samples
from training_core.rundir.varstore import read_variables
from training_core.base.scopes import build_scope_tree
from training_core.runs import VariableStates, read_run
from training_core.runs.attach import var_infos_of

from .keras_gan import dataset, make_gan, points

D_WEIGHTS = {"discriminator/dense_1/kernel", "discriminator/dense_1/bias", "discriminator/out/kernel",
             "discriminator/out/bias"}


def test_a_discriminator_frozen_once_its_step_was_traced_is_reported_as_a_leak(tmp_path, capsys):
    gan = make_gan()
    gan.fit(dataset(), epochs=1, verbose=0)  # the step is traced and compiled
    gan.discriminator.trainable = False  # the bug: the compiled step still updates it
    before = {v.path: v.numpy() for v in gan.discriminator.weights}
    gan.fit(dataset(), epochs=3, verbose=0, callbacks=[Monitor(tmp_path / "run", sample=points, var_every=4)])
    moved = max(float(np.abs(v.numpy() - before[v.path]).max()) for v in gan.discriminator.weights)
    assert moved > 0  # it did train

    events = read_events(tmp_path / "run")
    leaks = [e for e in events if e.kind == "leak"]
    assert {e.variable for e in leaks} == D_WEIGHTS  # each of its weights; nothing of the generator, no statistic
    assert all(e.update_norm > 0 and 1 <= e.at_step <= 48 and e.phase == "discriminator" for e in leaks)
    said = capsys.readouterr().err
    for e in leaks:
        assert (f"leak: {e.variable} moved by {e.update_norm:.3g} (||dW||) at step {e.at_step} while frozen: fit()'s "
                f"compiled train_step still updates it (trainable = False set once fit() has traced the step does "
                f"not reach it)") in said

    start = events[0]
    flags = {v["path"]: v["trainable"] for v in start.variables}
    assert {p for p, t in flags.items() if not t} >= D_WEIGHTS and flags["generator/dense_1/kernel"]
    assert start.phases == ["discriminator", "generator"]
    sc = read_scalars(tmp_path / "run")
    assert sc["loss/discriminator"].steps.tolist() == list(range(1, 49))  # 3 epochs of 16 batches, from logs
    assert sc["loss/generator"].steps.tolist() == list(range(1, 49))
    rows = {r.phase: r for r in read_variables(tmp_path / "run")}
    d, g = rows["discriminator"], rows["generator"]
    assert len(d.steps) >= 12 and d.frozen[:, [d.paths.index(p) for p in D_WEIGHTS]].all()
    assert (d.update_norm[:, [d.paths.index(p) for p in D_WEIGHTS]] > 0).all()  # it moves while frozen
    assert "generator/bn/moving_mean" in g.paths and not g.frozen.any() and (g.update_ratio > 0).any()
    assert events[-1].kind == "stop" and events[-1].reason == "done"
    run = read_run(tmp_path / "run")  # what the window opens, and its scope tree's words for the variables
    assert run.last_step == 48
    # a leak is placed at the step it moved at (`at_step`), not at the step its alarm was raised (`step`)
    marks = sorted((m.step, m.label) for m in run.markers if m.kind == "leak")
    assert [s for s, _ in marks] == sorted(e.at_step for e in leaks)
    from training_core.figures.data import _Clock  # the x of a marker in --export's figures
    axis = _Clock([("run", run)], "step")
    assert sorted(axis.marker_x(run, m) for m in run.markers if m.kind == "leak") == sorted(float(e.at_step)
                                                                                            for e in leaks)
    states = VariableStates(build_scope_tree(var_infos_of(run.start)))
    states.update(run)
    kernel = states.states["discriminator/out/kernel"]
    assert kernel.state == "LEAK" and "fit()'s compiled train_step still updates it" in kernel.tip
    assert states.states["discriminator"].state == "LEAK" and states.states["generator/bn/moving_mean"].state == ""
    drawn = load_samples(list_samples(tmp_path / "run")[-1][1])  # sample(model), at the end
    assert drawn["kind"] == "points2d" and drawn["step"] == 48 and drawn["fake"].shape == (256, 2)


class _FreezeAt(keras.callbacks.Callback):
    """Sets `discriminator.trainable = False` before global batch `at` (as a user's on_epoch_begin would), and
    turns the Monitor's clock-driven hand-off off, so that one batch of the record holds measured steps from
    before and after the flag (what a busy machine's timing did in the tester's runs), every run."""

    def __init__(self, monitor: Monitor, at: int) -> None:
        super().__init__()
        self.monitor, self.at, self.step = monitor, at, 0

    def on_train_begin(self, logs=None):
        self.monitor.core._next_fetch = float("inf")  # only fetch_every (200 > this run's 48) or the end flushes

    def on_train_batch_begin(self, batch, logs=None):
        self.step += 1
        if self.step == self.at:
            self.model.discriminator.trainable = False


def test_a_flag_set_mid_fit_freezes_only_the_rows_measured_after_it(tmp_path):
    """D2: the frozen column and the leak are those at the step measured, not at the batch's hand-off."""
    at = 27
    gan = make_gan()
    gan.fit(dataset(), epochs=1, verbose=0)
    monitor = Monitor(tmp_path / "run", var_every=4, quiet=True)
    gan.fit(dataset(), epochs=3, verbose=0, callbacks=[monitor, _FreezeAt(monitor, at)])
    d = {r.phase: r for r in read_variables(tmp_path / "run")}["discriminator"]
    cols = [d.paths.index(p) for p in D_WEIGHTS]
    steps = d.steps.tolist()
    assert min(steps) < at < max(steps)  # rows on both sides of the flag
    frozen = d.frozen[:, cols].all(axis=1)
    assert not d.frozen[:, cols][[s < at for s in steps]].any()
    assert frozen[[s >= at for s in steps]].all()
    leaks = [e for e in read_events(tmp_path / "run") if e.kind == "leak"]
    first_after = min(s for s in steps if s >= at)
    assert leaks and {e.variable for e in leaks} == D_WEIGHTS
    assert min(e.at_step for e in leaks) == first_after  # the first measured step after the flag


def test_a_gan_trained_as_written_shows_no_leak(tmp_path):
    gan = make_gan()
    gan.fit(dataset(), epochs=2, verbose=0, callbacks=[Monitor(tmp_path / "run", var_every=4, quiet=True)])
    events = read_events(tmp_path / "run")
    assert [e for e in events if e.kind == "leak"] == []
    rows = {r.phase: r for r in read_variables(tmp_path / "run")}
    assert not rows["discriminator"].frozen.any() and (rows["discriminator"].update_norm > 0).any()


def test_a_scope_declared_frozen_that_moves_is_a_leak(tmp_path, capsys):
    """Its reason is the declaration, not a trainable flag (whose words it used to get: "trainable = False after
    compile does not reach it", for a weight whose flag read True all along)."""
    gan = make_gan()
    gan.fit(dataset(), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", frozen=["discriminator/out"],
                                                                var_every=2, quiet=True)])
    leaks = [e for e in read_events(tmp_path / "run") if e.kind == "leak"]
    assert {e.variable for e in leaks} == {"discriminator/out/kernel", "discriminator/out/bias"}
    assert {e.method for e in leaks} == {"fit declared"}
    said = capsys.readouterr().err
    assert said.count("while frozen: it is declared frozen (Monitor(frozen=...), declare_frozen), but fit()'s "
                      "train_step still updates it (the Monitor only watches: leave it out of the step's update)") == 2
    assert "trainable = False" not in said
    states = VariableStates(build_scope_tree(var_infos_of(read_run(tmp_path / "run").start)))
    states.update(read_run(tmp_path / "run"))
    assert "it is declared frozen" in states.states["discriminator/out/kernel"].tip


def test_logs_without_a_loss_for_each_sub_model_is_one_line(tmp_path):
    class Renamed(type(make_gan())):
        def train_step(self, real):
            out = super().train_step(real)
            return {"critic": out["d_loss"], "actor": out["g_loss"]}

    gan = Renamed(make_gan().discriminator, make_gan(1).generator)
    gan.compile(*(__import__("keras").optimizers.Adam() for _ in range(2)))
    with pytest.raises(UserError) as e:
        gan.fit(dataset(), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True)])
    assert str(e.value) == ("Monitor: no loss in fit()'s logs for 'discriminator', 'generator' (logs has actor, "
                            "critic); pass losses={'discriminator': 'd_loss', ...}, one logs key per sub-model")
    assert read_events(tmp_path / "run")[-1].reason == "error"  # the record says why it ended
    # it recorded no step: the fixed script runs in the same directory (the tester's re-run was refused)
    gan.fit(dataset(), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True, losses={
        "discriminator": "critic", "generator": "actor"})])
    assert read_scalars(tmp_path / "run")["loss/discriminator"].steps.tolist() == list(range(1, 17))
    assert [e.kind for e in read_events(tmp_path / "run")] == ["start", "stop"]
    with pytest.raises(UserError, match="already holds a run"):  # a run that recorded steps is kept
        Monitor(tmp_path / "run")


def test_an_unknown_frozen_scope_is_one_line_at_construction_with_models(tmp_path):
    gan = make_gan()
    models = {"discriminator": gan.discriminator, "generator": gan.generator}
    with pytest.raises(UserError) as e:
        Monitor(tmp_path / "run", models=models, frozen=["discriminatr"])
    assert str(e.value).startswith("unknown scope 'discriminatr'; did you mean discriminator? (scopes start with "
                                   "discriminator, generator: ")
    Monitor(tmp_path / "one", models=models, frozen="discriminator")  # one string: one scope, not its letters
    monitor = Monitor(tmp_path / "run", frozen=["discriminatr"], quiet=True)  # the models are fit()'s: known there
    with pytest.raises(UserError, match="unknown scope 'discriminatr'"):
        gan.fit(dataset(), epochs=1, verbose=0, callbacks=[monitor])
    assert not (tmp_path / "run").exists()  # refused before anything is written


def test_keep_open_records_several_fit_calls_as_one_run(tmp_path):
    gan = make_gan()
    monitor = Monitor(tmp_path / "run", keep_open=True, quiet=True)
    for _ in range(2):
        gan.fit(dataset(), epochs=1, verbose=0, callbacks=[monitor])
    assert read_scalars(tmp_path / "run")["loss/generator"].steps.tolist() == list(range(1, 33))  # on record so far
    assert [e.kind for e in read_events(tmp_path / "run")] == ["start"]
    monitor.close()
    assert [e.kind for e in read_events(tmp_path / "run")] == ["start", "stop"]


def test_an_exception_inside_fit_still_ends_the_record_with_its_error(tmp_path):
    """fit() calls no callback when the user's code raises in it; the run is closed at the interpreter's exit,
    with the error and its traceback in the record (as a hand-written loop's `with run:` does)."""
    import sys

    from .helpers import REPO, start
    script = tmp_path / "crash.py"
    script.write_text(f"""import sys
sys.path.insert(0, {str(REPO)!r})
import keras
from tests.core.keras_gan import dataset, make_gan
from training_core.monitor import Monitor


class Boom(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 5:
            raise RuntimeError("the user's code failed")


make_gan().fit(dataset(), epochs=1, verbose=0, callbacks=[Monitor(sys.argv[1], quiet=True), Boom()])
""")
    proc = start([sys.executable, str(script), str(tmp_path / "run")])
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1 and "RuntimeError: the user's code failed" in err
    *_, error, stop = read_events(tmp_path / "run")
    assert (error.kind, error.message, stop.kind, stop.reason) == ("error", "the user's code failed", "stop", "error")
    assert "Traceback" in error.detail


def test_a_wrong_loss_key_is_one_line_naming_it_the_logs_keys_and_the_fix(tmp_path):
    """A typo in `losses=` used to read "no loss in fit()'s logs for 'discriminator', 'generator', 'd_loss_typo'",
    mixing sub-models and keys. A key that is no sub-model's name is refused before anything is written; a logs
    key `logs` lacks, at the first batch, with the record closed by an `error` event saying the same line."""
    gan = make_gan()
    with pytest.raises(UserError) as e:
        gan.fit(dataset(), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "a", quiet=True,
                                                                   losses={"D": "d_loss_typo"})])
    assert str(e.value) == ("Monitor: losses names 'D', not a sub-model of the model (its sub-models: discriminator, "
                            "generator); key losses by the sub-models' names, e.g. losses={'discriminator': 'd_loss', "
                            "'generator': 'g_loss'}")
    assert not (tmp_path / "a").exists()  # refused before anything is written

    with pytest.raises(UserError) as e:
        gan.fit(dataset(), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "b", quiet=True,
                                                                   losses={"discriminator": "d_loss_typo"})])
    line = ("Monitor: losses={'discriminator': 'd_loss_typo'} names 'd_loss_typo', which fit()'s logs does not have "
            "(logs has d_loss, g_loss); pass losses={'discriminator': 'd_loss'}, one logs key per sub-model")
    assert str(e.value) == line and "\n" not in line
    events = read_events(tmp_path / "b")
    assert [ev.kind for ev in events] == ["start", "error", "stop"] and events[1].message == line
    assert events[-1].reason == "error" and not any(ev.step for ev in events)  # closed cleanly, no step recorded
    assert "loss/discriminator" not in read_scalars(tmp_path / "b")
    # the given key is used, the other guessed: the fixed script runs in the same directory
    gan.fit(dataset(), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "b", quiet=True,
                                                               losses={"discriminator": "d_loss"})])
    sc = read_scalars(tmp_path / "b")
    assert sc["loss/discriminator"].steps.tolist() == sc["loss/generator"].steps.tolist() == list(range(1, 17))


def test_losses_giving_every_sub_models_key_leaves_nothing_to_guess(tmp_path, monkeypatch):
    """`losses=` naming every sub-model's key used to be guessed at all the same, and the guess thrown away."""
    from training_core.monitor import keras_callback

    def guess(names, keys, given, what):
        assert what != "loss", "the loss keys were guessed although losses= gave them all"
        return real(names, keys, given, what)
    real = keras_callback.match
    monkeypatch.setattr(keras_callback, "match", guess)
    make_gan().fit(dataset(2), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True, losses={
        "discriminator": "g_loss", "generator": "d_loss"})])  # the reverse of the guess: the given keys are used
    sc = read_scalars(tmp_path / "run")
    assert sc["loss/discriminator"].steps.tolist() == sc["loss/generator"].steps.tolist() == [1, 2]


def test_a_sub_model_untrainable_before_fit_is_named_before_keras_error(tmp_path, capsys):
    """`discriminator.trainable = False` before fit(): the keras.io-style train_step zips its gradients with an
    empty `trainable_weights`, and Keras' "not enough values to unpack (expected 2, got 0)" names neither the
    model nor the cause. A warning naming both comes first, on the terminal and in the record."""
    gan = make_gan()
    gan.discriminator.trainable = False
    monitor = Monitor(tmp_path / "run")
    with pytest.raises(ValueError, match="not enough values to unpack"):
        gan.fit(dataset(), epochs=1, verbose=0, callbacks=[monitor])
    monitor.close()
    warnings = [e.message for e in read_events(tmp_path / "run") if e.kind == "warning"]
    assert len(warnings) == 1 and warnings[0].startswith(
        "model 'discriminator' has no trainable weights as fit() starts (discriminator.trainable = False before "
        "fit()): a train_step that applies gradients to discriminator.trainable_weights gets empty lists")
    assert f"freezeframe: warning: {warnings[0]}" in capsys.readouterr().err

"""monitor/fit_models.py: which sub-models of a `fit()` model the Monitor records, and which are phases.

Why: the keras.io data-efficient GAN keeps an EMA copy of its generator, a third sub-model its `train_step`
updates by `assign` and no optimizer trains. Made by `keras.models.clone_model`, it keeps the name `generator`
and the same variable paths, and keyed by name it silently replaced the trained generator in the record; named
otherwise, its name matched `g_optimizer` too and the run was refused as if two phases shared it.
"""
from __future__ import annotations

import keras
import pytest
import tensorflow as tf

from training_core import read_events, read_scalars
from training_core.base.errors import UserError
from training_core.monitor import Monitor
from training_core.rundir.varstore import read_variables

from .keras_gan import EMAGAN, dataset, make_ema_gan


def test_a_clone_with_its_originals_name_and_paths_is_one_line_naming_both_attributes(tmp_path):
    gan = make_ema_gan()
    assert gan.ema_generator.name == "generator"  # what clone_model does
    with pytest.raises(UserError) as e:
        gan.fit(dataset(2), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True)])
    assert str(e.value) == (
        "Monitor: the model's .generator and .ema_generator are both named 'generator' with the same variable paths "
        "(keras.models.clone_model keeps the name), so the record cannot tell them apart; build the copy under a "
        "name of its own (name='ema_generator'), or pass models={'generator': model.generator, ...} with the "
        "models to record")
    assert not (tmp_path / "run").exists()  # refused before anything is written
    # the fix it names: the trained generator is recorded, the copy left out
    gan.fit(dataset(2), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True, models={
        "discriminator": gan.discriminator, "generator": gan.generator})])
    rows = {r.phase: r for r in read_variables(tmp_path / "run")}
    assert rows.keys() == {"discriminator", "generator"} and (rows["generator"].update_norm > 0).any()


@pytest.mark.parametrize("fits_before", [0, 1])  # its optimizers not built yet (named), or built (measured)
def test_an_ema_copy_of_another_name_is_recorded_but_no_phase(tmp_path, fits_before):
    gan = make_ema_gan("generator_ema")
    for _ in range(fits_before):
        gan.fit(dataset(2), epochs=1, verbose=0)
    gan.fit(dataset(4), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", var_every=2, quiet=True)])
    events = read_events(tmp_path / "run")
    start = events[0]
    assert start.phases == ["discriminator", "generator"]  # the copy trains with no optimizer: no phase
    paths = {v["path"] for v in start.variables}
    assert {"generator/out/kernel", "generator_ema/out/kernel"} <= paths  # both recorded
    rows = {r.phase: r for r in read_variables(tmp_path / "run")}
    assert all(p.startswith("generator/") for p in rows["generator"].paths)  # the trained one, not the copy
    assert (rows["generator"].update_norm > 0).any()
    assert [e for e in events if e.kind in ("leak", "error")] == [] and events[-1].reason == "done"
    assert read_scalars(tmp_path / "run")["loss/generator"].steps.tolist() == [1, 2, 3, 4]
    assert [e for e in events if e.kind == "warning"] == []


def _refused_at_the_first_batch(tmp_path, ema_name: str):
    """(the GAN, the line) of a first fit() refused at its first batch, its record ended with no step recorded."""
    gan = make_ema_gan(ema_name)
    with pytest.raises(UserError) as e:
        gan.fit(dataset(2), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True)])
    events = read_events(tmp_path / "run")
    assert events[-1].reason == "error" and not any(ev.step for ev in events)
    return gan, str(e.value)


def test_a_copy_whose_name_fits_no_optimizer_is_one_line_at_the_first_batch_in_a_first_fit(tmp_path):
    """Before the first step no optimizer says what it trains, and `ema` fits no optimizer's name: it was a phase,
    and the run ended with "no loss in fit()'s logs for 'ema'". The first step tells (the optimizers are built
    then): the line says no optimizer trains it and names the fix; with that fix, or in a later fit(), it is no
    phase."""
    gan, line = _refused_at_the_first_batch(tmp_path, "ema")
    assert line == (
        "Monitor: no optimizer trains 'ema' (an EMA copy?) and fit()'s logs has no loss for it (logs has d_loss, "
        "g_loss); pass models={'discriminator': model.discriminator, 'generator': model.generator}, the sub-models "
        "the step trains")
    gan.fit(dataset(2), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True, models={
        "discriminator": gan.discriminator, "generator": gan.generator})])  # the fix, in the same directory
    assert read_events(tmp_path / "run")[0].phases == ["discriminator", "generator"]
    gan.fit(dataset(2), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "again", quiet=True)])  # now built
    events = read_events(tmp_path / "again")
    assert events[0].phases == ["discriminator", "generator"] and not [e for e in events if e.kind == "warning"]


def test_an_optimizer_the_names_gave_to_the_wrong_sub_model_is_one_line_at_the_first_batch(tmp_path):
    """A copy named `gene` beside `generator`: the names give `g_optimizer` to the copy (its name is the one the
    other holds). The first step builds the optimizer on the generator's variables: the record would be wrong,
    so the run ends there with one line, no step recorded."""
    gan, line = _refused_at_the_first_batch(tmp_path, "gene")
    assert line == (
        "Monitor: g_optimizer trains none of gene's variables (their names fit, its step says otherwise); pass "
        "optimizers= and models= with the sub-models the step trains, e.g. models={'gene': ...}, "
        "optimizers={'gene': model.g_optimizer}")
    gan.fit(dataset(2), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "again", quiet=True)])  # built: measured
    assert read_events(tmp_path / "again")[0].phases == ["discriminator", "generator"]


class _LoggedEMAGAN(EMAGAN):
    """An EMA copy whose train_step also logs a loss for it (how far its drawings are from the origin)."""

    def train_step(self, real):
        out = super().train_step(real)
        z = tf.random.normal((8, 2), seed=1)
        return {**out, "ema_loss": tf.reduce_mean(tf.square(self.ema_generator(z, training=False)))}


def test_a_phase_no_optimizer_trains_that_has_a_loss_is_a_warning_and_the_run_goes_on(tmp_path):
    """`ema` fits no optimizer's name: in a first fit() it is a phase, and the first step shows no optimizer trains
    it. Its loss is in `logs`, so the record can still hold it: one warning naming the fix, every step recorded."""
    base = make_ema_gan("ema")
    gan = _LoggedEMAGAN(base.discriminator, base.generator, base.ema_generator)
    gan.compile(keras.optimizers.Adam(1e-3, beta_1=0.5), keras.optimizers.Adam(1e-3, beta_1=0.5))
    gan.fit(dataset(3), epochs=1, verbose=0, callbacks=[Monitor(tmp_path / "run", quiet=True)])
    events = read_events(tmp_path / "run")
    assert events[0].phases == ["discriminator", "generator", "ema"]
    assert [e.message for e in events if e.kind == "warning"] == [
        "Monitor: no optimizer trains ema (an EMA copy?), yet it is recorded as a phase; pass models= without it to "
        "record it as no phase"]
    assert [e for e in events if e.kind == "error"] == [] and events[-1].reason == "done"
    scalars = read_scalars(tmp_path / "run")
    assert scalars["loss/ema"].steps.tolist() == scalars["loss/generator"].steps.tolist() == [1, 2, 3]

"""rundir/reading.py: what `read_scalars` makes of a run directory, checked on real runs.

A variable that several phases train (an autoencoder's encoder, trained by a reconstruction phase and by a
regularisation phase) has one row per step of each phase in `variables/`; the readers, the window's
`RunData` and the figures keep every phase's rows, the series of such a variable named `path@phase`
(rundir/varstore.py `var_keys`). A variable one phase trains keeps its path as its name.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from training_core import SetFreeze, read_scalars
from training_core.figures import FigureData
from training_core.figures.spec import FigureSpec
from training_core.rundir.varstore import read_variables
from training_core.runs import read_run

from .helpers import Script, config, run, write_file

AUTOENCODER = '''
"""A tiny autoencoder: phase rec trains encoder and decoder (reconstruction), phase reg the encoder alone."""
import keras
import numpy as np

from training_core import Experiment, Phase

DATA = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")


def build():
    enc = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="dense")], name="encoder")
    dec = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4, name="dense")], name="decoder")

    def rec(ctx):
        return keras.ops.mean(keras.ops.square(dec(enc(ctx.batch)) - ctx.batch))

    def reg(ctx):
        return keras.ops.mean(keras.ops.square(enc(ctx.batch)))

    return Experiment(name="ae", models={"encoder": enc, "decoder": dec}, data=DATA, batch_size=16,
                      phases=[Phase("rec", rec, trains=["encoder", "decoder"], optimizer=keras.optimizers.SGD(0.05)),
                              Phase("reg", reg, trains=["encoder"], optimizer=keras.optimizers.SGD(0.05))])
'''
SHARED = ("encoder/dense/kernel", "encoder/dense/bias")
ONE_PHASE = ("decoder/dense/kernel", "decoder/dense/bias")
KINDS = ("update_norm", "update_ratio", "grad_norm")


@pytest.fixture(scope="module", params=["frozen at step 20", "frozen from the start"])
def autoencoder(request, tmp_path_factory) -> Path:
    """40 steps, 1:1, with the encoder (all that reg trains) frozen after step 20, or from the start: reg
    then stops running (it has nothing left to train), and rec goes on with the encoder frozen."""
    tmp = tmp_path_factory.mktemp("reading")
    d = tmp / "run"
    path = write_file(tmp, "autoencoder.py", AUTOENCODER)
    if request.param == "frozen from the start":
        run(config(path, d, steps=40, freeze=["encoder"]))
    else:
        run(config(path, d, steps=40), Script({20: [SetFreeze(("encoder",))]}))
    return d


def test_a_variable_two_phases_train_keeps_both_phases_rows_in_every_reader(autoencoder):
    """read_scalars kept one `update_norm/<path>` series per variable: the phase read last replaced the other's
    rows (reg's 10 rows hid rec's 30), and a phase frozen from the start (no rows) left the variable none. The
    window's RunData (and the figures drawn from it) kept the first phase's alone."""
    d = autoencoder
    on_disk = {rows.phase: rows for rows in read_variables(d)}
    rec, reg = on_disk["rec"], on_disk["reg"]
    assert len(rec) == 40 - len(reg) and len(rec) > 0  # every step recorded (var_every 1), rec or reg
    scalars = read_scalars(d)
    store = read_run(d)
    fig = FigureData.from_store(store, FigureSpec(plots=["updates"]))
    curves = {c.tag: c for c in fig.plots[0].curves}
    for kind in KINDS:
        for j, path in enumerate(rec.paths):
            for rows in ([rec, reg] if path in SHARED else [rec]):
                key = f"{path}@{rows.phase}" if path in SHARED else path
                tag = f"{kind}/{key}"
                want_steps, want = rows.steps, getattr(rows, kind)[:, rows.paths.index(path)].astype(np.float64)
                np.testing.assert_array_equal(scalars[tag].steps, want_steps, err_msg=tag)
                np.testing.assert_array_equal(scalars[tag].values, want, err_msg=tag)
                steps, _, values = store.var_series(key, kind)
                np.testing.assert_array_equal(steps, want_steps, err_msg=tag)
                np.testing.assert_array_equal(np.asarray(values, np.float64), want, err_msg=tag)
                np.testing.assert_array_equal(store.frozen_series(key), rows.frozen[:, rows.paths.index(path)])
                assert store.var_path(key) == path and store.phase_of(key) == rows.phase
                if kind == "update_ratio":
                    np.testing.assert_array_equal(curves[tag].steps, want_steps, err_msg=tag)
                    np.testing.assert_array_equal(curves[tag].values, want, err_msg=tag)
    # a shared variable has no series under its bare path; a variable one phase trains keeps its path
    assert not {f"{k}/{p}" for k in KINDS for p in SHARED} & set(scalars)
    assert store.var_paths == [f"{p}@rec" for p in SHARED] + list(ONE_PHASE) + [f"{p}@reg" for p in SHARED]
    assert set(store.tags()) - {t for t in scalars if t.startswith("metric/")} \
        == set(scalars) - {t for t in scalars if t.startswith("metric/")}
    # the encoder's rows of rec after the freeze read frozen, and reg never ran again
    frozen = store.frozen_series("encoder/dense/kernel@rec")
    assert frozen[-1] and not store.frozen_series("decoder/dense/kernel").any()
    assert set(reg.steps.tolist()).isdisjoint(rec.steps.tolist()) and (not len(reg) or reg.steps[-1] <= 20)


def test_a_variable_of_one_phase_keeps_its_path_as_its_name(tmp_path):
    """What one phase trains reads as it always did (the tags of a GAN's variables, and of every existing run)."""
    from .helpers import tiny_gan
    d = tmp_path / "run"
    run(config(tiny_gan(tmp_path), d, steps=6))
    scalars, store = read_scalars(d), read_run(d)
    paths = {p for rows in read_variables(d) for p in rows.paths}
    assert {t.partition("/")[2] for t in scalars if t.startswith("update_norm/")} == paths
    assert set(store.var_paths) == paths and all(store.var_path(p) == p for p in paths)


@pytest.mark.parametrize("damage", ["bytes over the header", "the header of another format"])
def test_a_damaged_header_line_is_refused_by_read_scalars_and_the_export_with_one_line(tmp_path, damage):
    """read_scalars refused a scalars.csv whose first line is not the header, while `--export` (read_run) drew
    the run without a word: they disagreed. Both refuse it now with the same line, naming the file and the fix
    (the export: tests/app/test_export_cli.py); putting the header back makes every row readable again. A cut
    run never has such a line: a torn header is not read yet, and a resume cuts it away."""
    from .helpers import tiny_gan
    d = tmp_path / "run"
    run(config(tiny_gan(tmp_path), d, steps=8))
    whole = read_scalars(d)
    path = d / "scalars.csv"
    data = path.read_bytes()
    rows = data[data.index(b"\n") + 1:]
    header = b"XXXX,wall_time,tag,value\n" if damage.startswith("bytes") else b"step,wall_time,tag,value,run\n"
    path.write_bytes(header + rows)
    from training_core.rundir.reading import scalars_header_problem
    line = (f"{path} does not start with its header line step,wall_time,tag,value (the file is damaged, or not a "
            f"Freezeframe record); make that its first line again and every complete row after it is read")
    assert scalars_header_problem(d) == line
    with pytest.raises(ValueError) as e:
        read_scalars(d)
    assert str(e.value) == line
    path.write_bytes(data[:data.index(b"\n")])  # a header not yet complete (a kill as the run began): no rows
    assert scalars_header_problem(d) is None and not any(t.startswith("loss/") for t in read_scalars(d))
    path.write_bytes(b"step,wall_time,tag,value\n" + rows)  # the header put back: every row again
    assert scalars_header_problem(d) is None
    for tag, s in read_scalars(d).items():
        np.testing.assert_array_equal(s.values, whole[tag].values, err_msg=tag)

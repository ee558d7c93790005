"""The GAN shortcut with labelled data (training_core/experiment/gan.py): `real_data()` returning `(x, y)` arrays
or a Dataset of them (a directory loader's), `conditional = True` giving the labels to both models in the
losses, the samples and the dry run; what does not fit is one line."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from training_core import RunConfig, read_scalars
from training_core.base.errors import UserError
from training_core.engine.prepare import prepare
from training_core.rundir.samples import list_samples, load_samples

from .helpers import config, error_lines, main_cmd, run, run_all, write_file

_CGAN = '''
"""A conditional GAN on 8x8 images of 3 classes."""
import keras
import numpy as np
import tensorflow as tf

noise_dim = 4
batch_size = 8
conditional = {conditional}
HERE = __import__("pathlib").Path(__file__).parent


def real_data():
    {real_data}


def generator():
    with keras.name_scope("generator"):
        z, y = keras.Input((noise_dim,)), keras.Input((), dtype="int32")
        h = keras.layers.Concatenate()([z, keras.layers.Flatten()(keras.layers.Embedding(3, 2, name="classes")(y))])
        out = keras.layers.Reshape((8, 8, 1))(keras.layers.Dense(64, activation="tanh")(h))
        return keras.Model([z, y], out, name="generator")


def discriminator():
    with keras.name_scope("discriminator"):
        x, y = keras.Input((8, 8, 1)), keras.Input((), dtype="int32")
        h = keras.layers.Concatenate()([keras.layers.Flatten()(x),
                                        keras.layers.Flatten()(keras.layers.Embedding(3, 2, name="classes")(y))])
        return keras.Model([x, y], keras.layers.Dense(1)(h), name="discriminator")
'''

ARRAYS = '''rng = np.random.default_rng(0)
    y = np.arange(60) % 3
    return (rng.uniform(-1, 1, (60, 8, 8, 1)) * (y[:, None, None, None] + 1) / 3).astype("float32"), y.astype("int32")'''
DIRECTORY = '''ds = keras.utils.image_dataset_from_directory(HERE / "images", image_size=(8, 8), color_mode="grayscale",
                                                  batch_size=4, seed=1, verbose=False)
    return ds.map(lambda x, y: (x / 127.5 - 1.0, y))'''


def _images(folder) -> None:
    rng = np.random.default_rng(0)
    for c in range(3):
        (folder / "images" / f"c{c}").mkdir(parents=True)
        for i in range(6):
            img = (rng.uniform(0, 255, (8, 8, 1)) * (c + 1) / 3).astype("uint8")
            tf.io.write_file(str(folder / "images" / f"c{c}" / f"{i}.png"), tf.io.encode_png(img))


@pytest.mark.parametrize("data", ["arrays", "directory"])
def test_a_conditional_gan_trains_with_the_labels_in_both_models(tmp_path, run_dir, data):
    if data == "directory":
        _images(tmp_path)
    path = write_file(tmp_path, f"cgan_{data}.py", _CGAN.format(conditional=True,
                                                                real_data=ARRAYS if data == "arrays" else DIRECTORY))
    trainer = run(config(path, run_dir, steps=40, sample_seconds=0.0))
    p = trainer.prepared
    assert p.data.kind == ("memory" if data == "arrays" else "pipeline") and p.experiment.sample_kind == "images"
    before = {v.path: v.numpy() for v in run(config(path, tmp_path / "none", steps=0)).prepared.variables}
    moved = [v.path for v in p.variables if "classes" in v.path and not np.array_equal(v.numpy(), before[v.path])]
    # the labels' embeddings train in both models: the labels reached both, in both phases' losses
    assert sorted(moved) == ["discriminator/classes/embeddings", "generator/classes/embeddings"], moved
    sc = read_scalars(run_dir)
    assert len(sc["loss/D"].values) == len(sc["loss/G"].values) == 20 and np.isfinite(sc["loss/D"].values).all()
    got = load_samples(list_samples(run_dir)[-1][1])
    assert got["real"].shape == got["fake"].shape == (64, 8, 8, 1)


def test_an_unconditional_gan_takes_the_images_of_labelled_data(tmp_path, run_dir):
    source = _CGAN.format(conditional=False, real_data=ARRAYS)
    source = source[:source.index("def generator")] + '''
def generator():
    return keras.Sequential([keras.Input((noise_dim,)), keras.layers.Dense(64, activation="tanh"),
                             keras.layers.Reshape((8, 8, 1))], name="generator")


def discriminator():
    return keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(1)],
                            name="discriminator")
'''
    trainer = run(config(write_file(tmp_path, "gan_xy.py", source), run_dir, steps=10, sample_seconds=0.0))
    assert trainer.step == 10
    assert load_samples(list_samples(run_dir)[-1][1])["real"].shape == (64, 8, 8, 1)


_UNLABELLED = ('''rng = np.random.default_rng(0)
    return rng.uniform(-1, 1, (60, 8, 8, 1)).astype("float32")''')
BAD = {
    "unlabelled": (dict(conditional=True, real_data=_UNLABELLED),
                   "conditional = True in bad.py needs labelled data: real_data() returning (x, y) arrays or a "
                   "Dataset of (x, y), got an array"),
    "not a bool": (dict(conditional='"yes"', real_data=ARRAYS), "conditional in bad.py must be True or False, got 'yes'"),
    "three members": (dict(conditional=True, real_data="x = np.zeros((6, 8, 8, 1), 'float32')\n    return x, x, x"),
                      "real_data() in bad.py gives a tuple of 3; the GAN shortcut takes x or (x, y): images and "
                      "labels"),
    "a dict without images": (dict(conditional=True, real_data="x = np.zeros((6, 8, 8, 1), 'float32')\n    "
                                                              "return {'pixels': x, 'label': np.arange(6)}"),
                              "real_data() in bad.py gives a dict with keys 'pixels', 'label'; the GAN shortcut takes "
                              "its images from \"image\" (or \"x\") and its labels from \"label\" (or \"y\")"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_labelled_data_the_shortcut_cannot_use_is_one_line(tmp_path, name):
    kw, line = BAD[name]
    path = write_file(tmp_path, "bad.py", _CGAN.format(**kw))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert str(e.value) == line


def test_conditional_models_that_do_not_take_labels_are_one_line_naming_the_fix(tmp_path):
    source = _CGAN.format(conditional=True, real_data=ARRAYS)
    source = source[:source.index("def generator")] + '''
def generator():
    return keras.Sequential([keras.Input((noise_dim,)), keras.layers.Dense(64), keras.layers.Reshape((8, 8, 1))],
                            name="generator")


def discriminator():
    return keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(1)],
                            name="discriminator")
'''
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(write_file(tmp_path, "plain.py", source))), lambda *_: None)
    assert str(e.value) == ("conditional = True in plain.py, but its generator takes 1 input; give it two, [z, y] (a "
                            "functional keras.Model([z, y], ...))")


def test_conditional_models_whose_label_input_does_not_fit_are_one_line_naming_the_fix(tmp_path):
    source = _CGAN.format(conditional=True, real_data=ARRAYS).replace('keras.Input((), dtype="int32")',
                                                                      'keras.Input((3,), dtype="int32")')
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(write_file(tmp_path, "labels.py", source))), lambda *_: None)
    line = str(e.value)
    assert "\n" not in line and line.startswith("the models in labels.py do not fit together: "), line
    assert line.endswith("; check noise_dim, the data shape and that both models take [input, label] (the generator "
                         "[z, y], the discriminator [x, y])"), line


def _refused(tmp_path, name: str, source: str) -> str:
    """The command line on the file: exit 2, one line, no run directory; the line."""
    run_dir = tmp_path / "run"
    done = run_all({"bad": main_cmd("--headless", "--experiment", str(write_file(tmp_path, name, source)),
                                    "--run-dir", str(run_dir), "--steps", "3")})
    assert done["bad"].returncode == 2, done["bad"].stderr
    lines = error_lines(done["bad"].stderr)
    assert len(lines) == 1 and not run_dir.exists(), done["bad"].stderr
    return lines[0]


def test_one_hot_labels_for_models_with_an_embedding_are_one_line_naming_label_mode(tmp_path):
    _images(tmp_path)
    source = _CGAN.format(conditional=True, real_data=DIRECTORY.replace('verbose=False', 'verbose=False, '
                                                                        'label_mode="categorical"'))
    line = _refused(tmp_path, "onehot.py", source)
    assert line.startswith("error: the models in onehot.py do not fit together: "), line
    assert line.endswith('; the labels are one-hot (rank 2, shape (2, 3) for 2 rows): give class numbers '
                         '(image_dataset_from_directory(..., label_mode="int")) to models with an Embedding, or give '
                         'models without an Embedding that take one-hot labels of shape (3,)'), line


@pytest.mark.parametrize("data", ["arrays", "directory"])
def test_labels_beyond_an_embedding_are_one_line_before_anything_is_written(tmp_path, data):
    if data == "directory":
        _images(tmp_path)  # 3 classes: labels 0..2
        source = _CGAN.format(conditional=True, real_data=DIRECTORY).replace("Embedding(3, 2", "Embedding(2, 2")
        largest, dim = 2, 2
    else:
        source = _CGAN.format(conditional=True, real_data=ARRAYS.replace("% 3", "% 8"))
        largest, dim = 7, 3
    line = _refused(tmp_path, "classes.py", source)
    assert line == (f"error: the labels of real_data() in classes.py go up to {largest}, but the generator's Embedding "
                    f"'classes' takes input_dim={dim} (labels 0 to {dim - 1}); give it input_dim={largest + 1}, the "
                    f"number of classes")


def test_the_description_is_the_docstrings_first_paragraph_whole(tmp_path):
    """The shapes example's description in the Experiment panel ended mid-parenthesis, "after 3,000 steps (85-190 s":
    it was the docstring's first line, cut where the source line broke, not its first paragraph."""
    from .helpers import tiny_gan
    src = tiny_gan(tmp_path).read_text(encoding="utf-8").replace(
        '"""A tiny GAN (GAN shortcut), adam; generator/dense_10 sits next to generator/dense_1 on purpose."""',
        '"""A tiny GAN: after 300 steps (5-9 s\non a busy CPU) it draws\nthe ring.\n\nWhat it shows: nothing more."""')
    path = write_file(tmp_path, "described.py", src)
    prepared = prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert prepared.experiment.description == "A tiny GAN: after 300 steps (5-9 s on a busy CPU) it draws the ring."


_PLAIN = """
import keras, numpy as np
noise_dim = 8
def generator():
    return keras.Sequential([keras.Input(({g_in},)), keras.layers.Dense({g_out}, name="out")], name="generator")
def discriminator():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")], name="discriminator")
def real_data():
    return np.zeros((16, {row}), "float32")
"""

#: (generator input, generator output, data row width): the one line when two shapes disagree
SHAPES = {
    "noise_dim": ((4, 2, 2), "the generator in bad.py takes inputs of shape (4,), but noise_dim = 8; set noise_dim = "
                             "4, or give the generator keras.Input((8,))"),
    "data rows": ((8, 2, 3), "real_data() in bad.py gives rows of shape (3,), but the discriminator takes (2,); give "
                             "the discriminator keras.Input((3,)), or reshape the data"),
    "generator output": ((8, 5, 2), "the generator in bad.py makes rows of shape (5,), but the discriminator takes (2,) "
                                    "(the data's rows are (2,)); make the generator's last layer give (2,)"),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_shapes_that_disagree_are_one_line_naming_both(tmp_path, name):
    (g_in, g_out, row), line = SHAPES[name]
    path = write_file(tmp_path, "bad.py", _PLAIN.format(g_in=g_in, g_out=g_out, row=row))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path), run_dir=str(tmp_path / "run")), lambda *_: None)
    assert str(e.value) == line
    assert not (tmp_path / "run").exists()

"""What an experiment's data may be (training_core/experiment/data.py): every kind it may not be is refused
before anything is built or written, with one line naming what it is and what is accepted (checked word for
word here, through `prepare`, as a run meets it), and the one private TensorFlow call it relies on, whether a
Dataset is batched, is checked against the installed versions."""
from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf

from training_core import RunConfig
from training_core.base.errors import UserError
from training_core.engine.prepare import prepare
from training_core.experiment.data import describe, dataset_is_batched

from .helpers import error_lines, main_cmd, run_all, write_file

_FILE = '''
"""An experiment whose data is {name}."""
import keras
import numpy as np
import tensorflow as tf

from training_core import Experiment, Phase

DATA = {data}


def loss(ctx):
    return keras.ops.mean(ctx.models["net"](keras.ops.zeros((2, 2))))


def build():
    net = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)], name="net")
    return Experiment(name="x", models={{"net": net}}, data=DATA, batch_size=4,
                      phases=[Phase("fit", loss, trains=["net"])])
'''

ACCEPTED = ("give a NumPy array, a tuple or dict of arrays with the same rows, or a tf.data.Dataset (e.g. "
            "keras.utils.image_dataset_from_directory)")
WHERE = "the data of the experiment in bad.py"
#: (the data, the one line): each kind of data that is not accepted
CASES = {
    "a string": ('"images/"', f"{WHERE} is a string ('images/'); {ACCEPTED}"),
    "a generator": ("(np.zeros(2) for _ in range(3))",
                    f"{WHERE} is a Python generator (an iterator, which can be neither checkpointed nor replayed); "
                    f"{ACCEPTED}"),
    "ragged rows": ("[np.zeros(3), np.zeros(4)]",
                    f"{WHERE} is a list whose items have different shapes ((3,), (4,), ...); give one array (rows "
                    f"of one shape), or a tuple (x, y) of arrays with the same rows"),
    "objects": ("np.array([{}, {}], dtype=object)",
                f"{WHERE} is an array of Python objects (dtype object); give numbers (float or int), e.g. "
                f"np.asarray(..., dtype='float32')"),
    "strings": ('np.array(["a", "b"])',
                f"{WHERE} is an array of strings (dtype <U1); give numbers (float or int), e.g. "
                f"np.asarray(..., dtype='float32')"),
    "a number": ("3.0", f"{WHERE} is a single number, not rows; give an array with one row per example"),
    "no rows": ("np.zeros((0, 2))", f"{WHERE} has no rows (shape (0, 2)); give at least one row"),
    "NaN": ("np.array([[0, 1], [np.nan, 2]])",
            f"{WHERE} has 1 NaN or Inf values (the first in row 1); clean it (np.nan_to_num, or drop those rows)"),
    "members of other lengths": ("(np.zeros((8, 2)), np.zeros(7, 'int32'))",
                                 f"{WHERE} has members with different numbers of rows ([0] 8, [1] 7); give every "
                                 f"member one row per example"),
    "a label member of strings": ('{"x": np.zeros((2, 2)), "label": np.array(["cat", "dog"])}',
                                  f"{WHERE}['label'] is an array of strings (dtype <U3); give numbers (float or "
                                  f"int), e.g. np.asarray(..., dtype='float32')"),
    "a nested tuple": ("(np.zeros((2, 2)), (np.zeros(2), np.zeros(2)))",
                       f"{WHERE}[1] is a nested tuple; give one level: a tuple or a dict of arrays"),
    "a Dataset of strings": ('tf.data.Dataset.from_tensor_slices(["a.png", "b.png"])',
                             f"{WHERE} is a Dataset of string; give numbers: decode or convert it in a .map(...) "
                             f"(e.g. tf.io.decode_png, tf.strings.to_number)"),
    "a Dataset of labelled strings": ('tf.data.Dataset.from_tensor_slices({"x": np.zeros((2, 2)), '
                                      '"name": ["a", "b"]})',
                                      f"{WHERE} is a Dataset of string (element 'name'); give numbers: decode or "
                                      f"convert it in a .map(...) (e.g. tf.io.decode_png, tf.strings.to_number)"),
    "a ragged Dataset": ("tf.data.Dataset.from_tensor_slices(tf.ragged.constant([[1.0], [2.0, 3.0]]))",
                         f"{WHERE} is a Dataset of RaggedTensors; give a Dataset of dense tensors (e.g. "
                         f".map(lambda x: x.to_tensor()) for ragged ones)"),
    "rows of no fixed shape": ("tf.data.Dataset.range(4).map(lambda i: tf.zeros(tf.stack([i])))",
                               f"{WHERE} is a Dataset whose rows have no fixed shape ((None)); every batch must "
                               f"have one shape: resize or pad in a .map(...) (e.g. tf.image.resize)"),
    "an empty Dataset": ("tf.data.Dataset.from_tensor_slices(np.zeros((0, 2), 'float32'))",
                         f"{WHERE} is an empty Dataset (no element); give it data"),
    "a Dataset that yields nothing": ("tf.data.Dataset.from_tensor_slices(np.zeros((4, 2))).filter(lambda x: False)",
                                      f"{WHERE} is a Dataset that yields no element; give it data"),
    "stateful augmentation": ("tf.data.Dataset.from_tensor_slices(np.zeros((8, 2), 'float32')).map("
                              "lambda x: x + tf.random.uniform([2], seed=1))",
                              f"{WHERE} is a Dataset whose state cannot be checkpointed (RandomUniform is "
                              f"stateful.), so its runs could not be resumed; use stateless random ops in its map "
                              f"(tf.random.stateless_uniform, tf.image.stateless_random_*) and no from_generator or "
                              f"prefetch_to_device"),
    "a Dataset from a generator": ("tf.data.Dataset.from_generator(lambda: iter([np.zeros(2)] * 8), "
                                   "output_signature=tf.TensorSpec((2,), tf.float64))",
                                   f"{WHERE} is a Dataset whose state cannot be checkpointed (PyFunc is stateful.), "
                                   f"so its runs could not be resumed; use stateless "
                                   f"random ops in its map (tf.random.stateless_uniform, tf.image.stateless_random_*) "
                                   f"and no from_generator or prefetch_to_device"),
    "a Keras random layer in a map": ("tf.data.Dataset.from_tensor_slices(np.zeros((8, 4, 4, 1), 'float32')).map("
                                      "lambda x, flip=keras.layers.RandomFlip('horizontal'): flip(x, training=True))",
                                      f"{WHERE} is a Dataset whose state cannot be checkpointed (ReadVariableOp is "
                                      f"stateful: its map reads a variable, as Keras' random layers such as "
                                      f"keras.layers.RandomFlip do for their seed), so its runs could not be resumed; "
                                      f"use tf.image.stateless_random_* in its map with a seed from the element's "
                                      f"number (Dataset.enumerate()), or apply the layer to ctx.batch in the loss as "
                                      f"a model of the experiment (models={{..., \"augment\": "
                                      f"keras.Sequential([layer])}}), whose variables every checkpoint holds"),
    "beyond float32": ("np.full((4, 2), 1e300)",
                       f"{WHERE} has values beyond float32's range (largest 1e+300; float32 holds up to 3.4e38), which "
                       f"the models take; scale them"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_data_of_a_kind_not_accepted_is_one_line(tmp_path, name):
    data, line = CASES[name]
    path = write_file(tmp_path, "bad.py", _FILE.format(name=name, data=data))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path), run_dir=str(tmp_path / "run")), lambda *_: None)
    assert str(e.value) == line
    assert not (tmp_path / "run").exists()


def test_a_batch_size_larger_than_structured_data_is_one_line(tmp_path):
    path = write_file(tmp_path, "bad.py", _FILE.format(name="labelled", data="(np.zeros((8, 2)), np.arange(8))"))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path), batch_size=9), lambda *_: None)
    assert str(e.value) == ("batch size 9 is larger than the data of the experiment in bad.py (8 rows); give "
                            "--batch-size 8 or less")


def test_a_dataset_with_jit_or_without_a_batch_size_is_one_line(tmp_path):
    ds = "tf.data.Dataset.from_tensor_slices(np.zeros((8, 2), 'float32'))"
    path = write_file(tmp_path, "bad.py", _FILE.format(name="a Dataset", data=ds))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path), jit=True), lambda *_: None)
    assert str(e.value) == ("--jit compiles the step with XLA, which cannot read a tf.data iterator inside it; run "
                            "bad.py without --jit, or give its data as arrays")
    path.write_text(path.read_text().replace("batch_size=4", "batch_size=None"))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert str(e.value) == (f"{WHERE} is a Dataset, and batch_size=None (the whole data every step) needs in-memory "
                            f"data; give the experiment a batch_size")


def test_the_command_line_exits_2_with_the_line_and_writes_nothing(tmp_path):
    path = write_file(tmp_path, "bad.py", _FILE.format(name="a Dataset of strings", data=CASES["a Dataset of strings"][0]))
    run_dir = tmp_path / "run"
    done = run_all({"bad": main_cmd("--headless", "--experiment", str(path), "--run-dir", str(run_dir), "--steps", "3")})
    assert done["bad"].returncode == 2, done["bad"].stderr
    assert error_lines(done["bad"].stderr) == [f"error: {CASES['a Dataset of strings'][1]}"]
    assert not run_dir.exists()


def test_what_is_accepted_is_told_apart():
    x, y = np.zeros((6, 3), "float64"), np.arange(6)
    one = describe(x, "x")
    assert one.kind == "array" and one.arrays.dtype == np.float32 and one.count == 6
    pair = describe((x, y), "x")
    assert pair.kind == "structure" and pair.arrays[0].dtype == np.float32 and pair.arrays[1].dtype == y.dtype
    assert [r.shape for r in pair.rows] == [(3,), ()]
    named = describe({"image": x, "label": y}, "x")
    assert set(named.arrays) == {"image", "label"} and named.rows["label"].dtype == str(y.dtype)
    ds = describe(tf.data.Dataset.from_tensor_slices((x, y)).batch(4), "x")
    assert ds.kind == "dataset" and ds.batched and [r.shape for r in ds.rows] == [(3,), ()]


def _slices():
    return tf.data.Dataset.from_tensor_slices(np.zeros((10, 3), "float32"))


#: (a Dataset, whether its elements are batches): every batching transformation tf.data has, and chains of them
BATCHING = {
    "rows": (lambda: _slices(), False),
    "batch": (lambda: _slices().batch(4), True),
    "batch, drop_remainder": (lambda: _slices().batch(4, drop_remainder=True), True),
    "batch, then map and prefetch": (lambda: _slices().batch(4, drop_remainder=True).map(lambda x: x * 2).prefetch(1),
                                     True),
    "padded_batch": (lambda: _slices().padded_batch(4, drop_remainder=True), True),
    "rebatch": (lambda: _slices().batch(4).rebatch(2, drop_remainder=True), True),
    "unbatch": (lambda: _slices().batch(4).unbatch(), False),
    "batch, parallel": (lambda: _slices().batch(4, num_parallel_calls=2, drop_remainder=True), True),
    "zip of batches": (lambda: tf.data.Dataset.zip(_slices().batch(2, drop_remainder=True),
                                                   _slices().batch(2, drop_remainder=True)), True),
    "shuffle and repeat of rows": (lambda: _slices().shuffle(4, seed=0).repeat(), False),
    "ragged_batch": (lambda: _slices().ragged_batch(4), True),
}


@pytest.mark.parametrize("name", list(BATCHING))
def test_whether_a_dataset_is_batched_against_the_installed_tensorflow(name):
    """`dataset_is_batched` walks the chain of transformations through the private `Dataset._inputs()`: if
    this fails after a TensorFlow upgrade, that method or the transformations' class names changed."""
    make, batched = BATCHING[name]
    ds = make()
    assert callable(getattr(ds, "_inputs", None)), (f"tensorflow {tf.__version__}: Dataset._inputs() is gone; "
                                                   f"experiment/data.dataset_is_batched needs a new way to walk a "
                                                   f"Dataset's transformations")
    assert dataset_is_batched(ds) is batched


def test_a_directory_loaders_result_is_batched(tmp_path):
    import keras
    for c in ("a", "b"):
        (tmp_path / c).mkdir()
        for i in range(3):
            tf.io.write_file(str(tmp_path / c / f"{i}.png"), tf.io.encode_png(np.zeros((4, 4, 1), np.uint8)))
    ds = keras.utils.image_dataset_from_directory(tmp_path, image_size=(4, 4), color_mode="grayscale", batch_size=2,
                                                  verbose=False)
    spec = describe(ds, "x")
    assert spec.batched and [r.shape for r in spec.rows] == [(4, 4, 1), ()]


UNSCALED = ("the data of the experiment in px.py gives uint8 values 0–255, which the models take as they are; scale "
            "them, e.g. to [-1, 1] with x / 127.5 - 1 (what a tanh generator makes)")


@pytest.mark.parametrize("data, warnings", [
    ("(np.arange(256 * 2).reshape(256, 2) % 256).astype('uint8')", [UNSCALED]),  # pixels as an image file holds them
    ("np.ones((8, 2), 'uint8')", []),  # 0/1: nothing to scale
    ("np.zeros((8, 2), 'float64')", []),  # float64: rounded to float32, as Keras does, without a word
    ("[[0.5, 1.0], [0.25, 2.0]]", []),  # a list of rows: an array of them
])
def test_accepted_data_is_float32_and_integer_pixels_are_a_warning(tmp_path, data, warnings):
    path = write_file(tmp_path, "px.py", _FILE.format(name="pixels", data=data))
    p = prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert p.warnings == warnings
    assert describe(p.experiment.data, "x").arrays.dtype == np.float32


_GAN_U8 = """
import keras, numpy as np
noise_dim = 4
batch_size = 8
def generator():
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="tanh", name="out")], name="generator")
def discriminator():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")], name="discriminator")
def real_data():
    return {data}
"""


@pytest.mark.parametrize("data", ["np.arange(64).reshape(32, 2).astype('uint8') * 4",
                                  "(np.arange(64).reshape(32, 2).astype('uint8') * 4, np.arange(32) % 3)"])
def test_uint8_pixels_from_real_data_are_a_warning_event_and_a_terminal_line(tmp_path, data):
    path = write_file(tmp_path, "u8.py", _GAN_U8.format(data=data))
    run_dir = tmp_path / "run"
    done = run_all({"u8": main_cmd("--headless", "--experiment", str(path), "--run-dir", str(run_dir), "--steps", "2")})
    assert done["u8"].returncode == 0, done["u8"].stderr
    line = ("real_data() in u8.py gives uint8 values 0–252, which the models take as they are; scale them, e.g. to "
            "[-1, 1] with x / 127.5 - 1 (what a tanh generator makes)")
    assert f"[step 0] warning: {line}" in (done["u8"].stdout + done["u8"].stderr).splitlines()
    events = [json.loads(t) for t in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["message"] for e in events if e["kind"] == "warning"] == [line]


#: what the GAN shortcut's real_data() may not return (the Experiment form's are CASES), and the line for each
GAN_CASES = {
    "a generator": ("(np.zeros(2) for _ in range(3))", "is a Python generator (an iterator, which can be neither "
                                                       "checkpointed nor replayed)"),
    "a string path": ('"images/"', "is a string ('images/')"),
    "an iterator of a Dataset": ("iter(tf.data.Dataset.from_tensor_slices(np.zeros((8, 2), 'float32')))",
                                 "is an iterator over a Dataset (OwnedIterator: give the Dataset itself, not "
                                 "iter(...))"),
}
_GAN = _GAN_U8.replace("import keras, numpy as np", "import keras, numpy as np, tensorflow as tf")


@pytest.mark.parametrize("name", list(GAN_CASES))
def test_data_of_a_kind_not_accepted_from_real_data_is_one_line_and_exit_2(tmp_path, name):
    data, what = GAN_CASES[name]
    path = write_file(tmp_path, "g.py", _GAN.format(data=data))
    run_dir = tmp_path / "run"
    done = run_all({"g": main_cmd("--headless", "--experiment", str(path), "--run-dir", str(run_dir), "--steps", "2")})
    assert done["g"].returncode == 2, done["g"].stderr
    assert error_lines(done["g"].stderr) == [f"error: real_data() in g.py {what}; {ACCEPTED}"]
    assert not run_dir.exists()


def test_a_keras_random_layer_in_real_datas_map_is_one_line_naming_real_data(tmp_path):
    """keras.io's augmentation, `ds.map(lambda x: RandomFlip(...)(x))`: its seed is a variable a pipeline's checkpoint
    cannot hold. The line names real_data() (as the shortcut's other data errors do) and what to do instead."""
    source = _GAN.format(data="tf.data.Dataset.from_tensor_slices(np.zeros((16, 2), 'float32')).map(flip)").replace(
        "def real_data():", "FLIP = keras.layers.RandomFlip('horizontal')\ndef flip(x):\n    return tf.reshape("
                           "FLIP(tf.reshape(x, (1, 2, 1)), training=True), (2,))\ndef real_data():")
    path = write_file(tmp_path, "flip.py", source)
    run_dir = tmp_path / "run"
    done = run_all({"g": main_cmd("--headless", "--experiment", str(path), "--run-dir", str(run_dir), "--steps", "2")})
    assert done["g"].returncode == 2, done["g"].stderr
    assert error_lines(done["g"].stderr) == [
        "error: real_data() in flip.py is a Dataset whose state cannot be checkpointed (ReadVariableOp is stateful: "
        "its map reads a variable, as Keras' random layers such as keras.layers.RandomFlip do for their seed), so its "
        "runs could not be resumed; use tf.image.stateless_random_* in its map with a seed from the element's number "
        "(Dataset.enumerate()), or make the layer the discriminator's first (it then augments real and fake images "
        "alike), whose variables every checkpoint holds"]
    assert not run_dir.exists()

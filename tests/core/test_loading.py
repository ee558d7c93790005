"""Loading experiment files (experiment/loading.py, engine/prepare.py): a module beside the file is imported as
Python would, models made at import are seeded, variable paths do not drift from one preparation to the next, and
what the file gives is checked, each problem one line naming it and the fix (a model that is not a Keras model, a
layer shared or two nested under one name, a loss that returns None, a learning rate or a ratio the phases cannot
take, a batch size larger than the data).

Each file is prepared for real (`prepare`, as a run would), so the line tested is the line a user sees on the
terminal and in the window. Failures of user code are in test_usercode.py, scopes in test_scopes.py, the checks
of models, losses and optimizers in test_experiment_checks.py, random draws in test_randomness.py."""
from __future__ import annotations

import pytest

from training_core import RunConfig, UserError
from training_core.engine.prepare import prepare

from .experiment_texts import ONE_NET
from .helpers import write_file


_DROPOUT_GAN = '''
    import keras, numpy as np
    noise_dim = 2
    def generator():
        return keras.Sequential([keras.Input((2,)), keras.layers.Dropout(0.1, name="drop"),
                                 keras.layers.Dense(2, name="out")], name="generator")
    def discriminator():
        return keras.Sequential([keras.Input((2,)), keras.layers.Dropout(0.1, name="drop"),
                                 keras.layers.Dense(1)], name="discriminator")
    real_data = np.zeros((10, 2), "float32")
    '''


def test_variable_paths_do_not_drift_from_one_preparation_to_the_next(tmp_path):
    """The window's training process prepares run after run on one thread. Keras numbers Dropout's seed
    generators and unnamed layers by a counter global to the thread, so the second run of a file read
    seed_generator_2/..., and a resume (a fresh process: seed_generator/...) found its checkpoint unfit."""
    path = write_file(tmp_path, "dropout_gan.py", _DROPOUT_GAN)
    first = [v.path for v in prepare(RunConfig(experiment_file=str(path)), lambda *_: None).var_infos]
    second = [v.path for v in prepare(RunConfig(experiment_file=str(path)), lambda *_: None).var_infos]
    assert any("seed_generator" in p for p in first) and any(p.startswith("discriminator/dense") for p in first)
    assert second == first


def test_models_made_at_import_are_seeded(tmp_path):
    """`generator = keras.Sequential(...)` at module level (the GAN shortcut takes a model as well as a
    function) got other initial weights in every run of the same seed, so --deterministic replays differed."""
    path = write_file(tmp_path, "module_level.py", '''
        import keras, numpy as np
        noise_dim = 2
        generator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, name="out")], name="generator")
        discriminator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")],
                                         name="discriminator")
        real_data = np.zeros((10, 2), "float32")
        ''')

    def weights(seed):
        p = prepare(RunConfig(experiment_file=str(path), seed=seed), lambda *_: None)
        return [v.numpy() for v in p.variables]

    a, b, c = weights(3), weights(3), weights(4)
    assert all((x == y).all() for x, y in zip(a, b))
    assert not all((x == z).all() for x, z in zip(a, c))


def test_a_layer_shared_by_two_models_is_one_variable_not_a_clash(tmp_path):
    """The same layer in G and D was refused as two models with one path ("give each model its own name",
    though each had one); two different layers nested under one name still are, with the fix that helps."""
    src = '''
        import keras, numpy as np
        noise_dim = 2
        SHARED = keras.layers.Dense(2, name="shared")
        def inner():
            return keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, name="d")], name="inner")
        def generator():
            return keras.Sequential([keras.Input((2,)), {g_layer}, keras.layers.Dense(2, name="out")],
                                    name="generator")
        def discriminator():
            return keras.Sequential([keras.Input((2,)), {d_layer}, keras.layers.Dense(1, name="out")],
                                    name="discriminator")
        real_data = np.zeros((10, 2), "float32")
        '''
    shared = write_file(tmp_path, "shared.py", src.format(g_layer="SHARED", d_layer="SHARED"))
    paths = [v.path for v in prepare(RunConfig(experiment_file=str(shared)), lambda *_: None).var_infos]
    assert paths.count("generator/shared/kernel") == 1
    nested = write_file(tmp_path, "nested_twice.py", src.format(g_layer="inner()", d_layer="inner()"))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(nested)), lambda *_: None)
    assert str(e.value) == ("models 'generator' and 'discriminator' in nested_twice.py both have a variable "
                            "inner/d/kernel; the layer or model 'inner' in each keeps its own name; name them apart")


def test_a_learning_rate_for_a_phase_the_gan_shortcut_has_not_is_one_line(tmp_path):
    """learning_rate = {"D": ..., "g": ...} left G at the default rate without a word."""
    path = write_file(tmp_path, "lr_typo.py", '''
        import keras, numpy as np
        noise_dim = 2
        learning_rate = {"D": 1e-4, "g": 1e-3}
        def generator():
            return keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, name="out")], name="generator")
        def discriminator():
            return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")], name="discriminator")
        real_data = np.zeros((10, 2), "float32")
        ''')
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert str(e.value) == ("learning_rate in lr_typo.py names 'g', but the GAN shortcut's phases are D and G; "
                            'write learning_rate = {"D": ..., "G": ...}')


def test_a_loss_that_returns_none_says_so(tmp_path):
    """TensorFlow's "None values not supported", with no line, was all a forgotten `return` got."""
    path = write_file(tmp_path, "none.py", ONE_NET.format(loss="None"))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert str(e.value) == "the loss of phase 'fit' returned None; end it with `return` and the loss (a scalar tensor)"


def test_a_model_that_is_not_a_keras_model_says_so(tmp_path):
    """A function given as a model was told to "build it (keras.Input or model.build(shape))"."""
    path = write_file(tmp_path, "fn.py", ONE_NET.format(loss="ctx.models.net(ctx.batch)").replace(
        '{"net": net()}', '{"net": lambda x: x}'))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert str(e.value) == ("model 'net' in fn.py is a function, not a Keras model; give a keras.Model or layer "
                            "(e.g. keras.Sequential([...], name='net'))")


SIBLING_EXPERIMENT = '''
import keras
import numpy as np
from training_core import Experiment, Phase
import ff_sibling_models as sib  # a module beside this file, as `python this_file.py` would find it


def build():
    g = sib.make("generator", 4)
    d = sib.make("discriminator", 1)
    def d_loss(ctx):
        return keras.ops.mean(keras.ops.square(d(ctx.batch) - 1.0)) + keras.ops.mean(keras.ops.square(d(g(ctx.normal((8, 2))))))
    def g_loss(ctx):
        return keras.ops.mean(keras.ops.square(d(g(ctx.normal((8, 2)))) - 1.0))
    return Experiment(name="sibling", models={"generator": g, "discriminator": d},
                      phases=[Phase("D", d_loss, ["discriminator"]), Phase("G", g_loss, ["generator"])],
                      data=np.random.default_rng(0).normal(size=(64, 2)).astype("float32"), batch_size=8)
'''

SIBLING = '''
import keras

def make(name, width):
    with keras.name_scope(name):
        return keras.Sequential([keras.Input((2,)), keras.layers.Dense({units}), keras.layers.Dense(2 if name == "generator" else 1)], name=name)
'''


def test_an_experiment_file_imports_a_module_beside_it_as_python_would(tmp_path):
    """`import ff_sibling_models` in an experiment file finds the module in the file's folder (it raised
    ModuleNotFoundError), the run trains, and an edited sibling is imported afresh by the next load in the same
    process (the window's training process prepares run after run)."""
    from training_core.experiment.loading import load_module

    from .helpers import run
    folder = tmp_path / "project"
    folder.mkdir()
    exp = write_file(folder, "sibling_gan.py", SIBLING_EXPERIMENT)
    write_file(folder, "ff_sibling_models.py", SIBLING.format(units=3))
    trainer = run(RunConfig(experiment_file=str(exp), steps=4, run_dir=str(tmp_path / "run"), checkpoint_every=0))
    shapes = {v.path: v.shape for v in trainer.prepared.var_infos}
    assert [s for p, s in shapes.items() if p.startswith("generator/") and p.endswith("kernel")][0] == (2, 3)
    assert trainer.step == 4
    write_file(folder, "ff_sibling_models.py", SIBLING.format(units=5))
    module = load_module(exp)
    assert "Dense(5)" in open(module.sib.__file__).read() and module.sib.make("generator", 1).layers[0].units == 5


def test_a_batch_size_larger_than_the_data_is_one_line_naming_both(tmp_path):
    """`--batch-size 9` on 8 rows of data passed without a word (the step draws its batch with replacement, so it
    repeated rows). The experiment's own batch size, which a resume or replay asks for again, still passes."""
    path = write_file(tmp_path, "eight_rows.py", ONE_NET.format(loss="keras.ops.mean(ctx.models['net'](ctx.batch[:, :2]))"))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path), batch_size=9), lambda *_: None)
    assert str(e.value) == ("batch size 9 is larger than the data of the experiment in eight_rows.py (8 rows); give "
                            "--batch-size 8 or less")
    assert prepare(RunConfig(experiment_file=str(path), batch_size=8), lambda *_: None).experiment.batch_size == 8
    assert prepare(RunConfig(experiment_file=str(path), batch_size=4), lambda *_: None).experiment.batch_size == 4


def test_a_default_ratio_that_gives_a_phase_no_steps_names_the_file(tmp_path):
    path = write_file(tmp_path, "ratio_zero.py", ONE_NET.format(loss="keras.ops.mean(ctx.models['net'](ctx.batch[:, :2]))")
                      .replace('phases=[Phase("fit", loss, trains=["net"])]',
                               'phases=[Phase("fit", loss, trains=["net"]), Phase("idle", loss, trains=["net"])], '
                               'default_ratio=[3, 0]'))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert str(e.value) == ("default ratio 3:0 in ratio_zero.py gives phase 'idle' 0 steps, so it would never train; "
                            "give every phase a count >= 1 (e.g. 3:1), or freeze what idle trains to stop it")


def _refusal(path) -> str:
    """The one line preparing `path` as a run would ends in."""
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    return str(e.value)


def test_a_training_script_given_as_an_experiment_says_to_run_it_with_python(tmp_path):
    """The shipped GradientTape script, its `main()` behind `if __name__ == "__main__"`, never calls `start_run`
    at import, so it read as a GAN shortcut missing real_data and noise_dim. A file that imports the monitor's
    module itself and defines no experiment is a script too, and so is one that imports `start_run` and then fails
    at import. Each: one line, nothing prepared."""
    from training_core.experiment.loading import EXAMPLES_DIR
    assert _refusal(EXAMPLES_DIR.parent / "examples" / "gradient_tape_ema_r1.py") == (
        "gradient_tape_ema_r1.py imports start_run: it is a script that trains with training_core.monitor, not an "
        "experiment file; run it with python gradient_tape_ema_r1.py (the window can attach to its run)")
    assert _refusal(write_file(tmp_path, "my_loop.py", "import training_core.monitor as ffm\n")).startswith(
        "my_loop.py imports training_core.monitor: it is a script that trains with ")
    # a script that fails at import where `python my_tape.py RUN STEPS` would not (its arguments are not there)
    tape = write_file(tmp_path, "my_tape.py", "import sys\nfrom training_core.monitor import start_run\n"
                                              "STEPS = int(sys.argv[2])\n")
    assert _refusal(tape).startswith("my_tape.py imports start_run: it is a script that trains with ")


def test_a_file_without_an_experiment_points_at_the_page_that_exists(tmp_path):
    """The line pointed at "README 'Experiment files'", a section the README does not have."""
    half = write_file(tmp_path, "half_gan.py", "noise_dim = 2\ndef generator():\n    pass\n")
    assert _refusal(half) == ("experiment file half_gan.py defines generator, noise_dim but not discriminator, "
                              "real_data; the GAN shortcut needs all four (docs/experiments.md)")
    assert _refusal(write_file(tmp_path, "empty.py", "x = 1\n")).endswith("; see docs/experiments.md")


def test_an_experiment_file_sees_its_own_path_as_sys_argv_while_imported(tmp_path):
    """A file that reads `sys.argv` at import (`int(sys.argv[1]) if len(sys.argv) > 1 else 100`) got main.py's
    flags and raised "invalid literal for int() with base 10: '--experiment'"; `python file.py` gives it
    `[file.py]`. The process's own argv is back afterwards."""
    import sys

    from training_core.experiment.loading import load_module
    path = write_file(tmp_path, "argv_net.py", "import sys\nSTEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 100\n"
                      "SEEN = list(sys.argv)\n" + ONE_NET.format(loss="keras.ops.mean(ctx.models['net'](ctx.batch[:, :2]))"))
    before = list(sys.argv)
    sys.argv[1:] = ["--headless", "--experiment", str(path)]
    try:
        module = load_module(path)
        assert module.SEEN == [str(path)] and module.STEPS == 100
        assert sys.argv == before[:1] + ["--headless", "--experiment", str(path)]
    finally:
        sys.argv[:] = before

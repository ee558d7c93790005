"""Loading experiment files: every failure of user code is one line in one format (what failed, the
exception, the line of the user's file, the fix) with the traceback as detail; an unknown scope
suggests the closest one; a loss that draws from tf.random gets a warning.

Each bad file is prepared for real (`prepare`, as a run would), so the line tested is the line a
user sees on the terminal and in the window.
"""
from __future__ import annotations

import pytest

from training_core import RunConfig, UserError, VarInfo
from training_core.engine.prepare import prepare
from training_core.base.scopes import resolve_scopes
from training_core.experiment.usercode import MAX_MESSAGE, user_code

from .helpers import tiny_gan, write_file

_BUILD = '''
import keras
import numpy as np
from training_core import Experiment, Phase

def net():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")], name="net")

def loss(ctx):
    return {loss}

def build():
    return Experiment(name="x", models={{"net": net()}}, data=np.ones((8, 3), "float32"), batch_size=4,
                      phases=[Phase("fit", loss, trains=["net"])])
'''

BAD_FILES = {  # name: (source, the exact line, up to where the exception's own message starts)
    "raises_at_import": ("import keras\n\nx = 1 / 0\n",
                         "experiment file raises_at_import.py raised ZeroDivisionError: division by zero at line 3; "
                         "fix the file"),
    "build_raises": ("def build():\n    raise RuntimeError('boom')\n",
                     "build() in build_raises.py raised RuntimeError: boom at line 2; fix the file"),
    "loss_fails_to_trace": (_BUILD.format(loss="ctx.models.nosuch(ctx.batch)"),
                            "the loss of phase 'fit' in loss_fails_to_trace.py raised AttributeError: no model named "
                            "'nosuch'; models are net at line 9; fix the file"),
    "gan_builder_raises": ("noise_dim = 2\nreal_data = None\ndiscriminator = None\n"
                           "def generator():\n    return undefined_name\n",
                           "building the models of gan_builder_raises.py raised NameError: name 'undefined_name' is "
                           "not defined at line 5; fix the file"),
    "models_do_not_fit": ('''
        import keras, numpy as np
        noise_dim = 3
        def generator():
            return keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="out")], name="generator")
        def discriminator():
            return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")], name="discriminator")
        real_data = np.zeros((10, 2), "float32")
        ''', "the models in models_do_not_fit.py do not fit together: ValueError: "),
}


@pytest.mark.parametrize("name", list(BAD_FILES))
def test_user_code_failures_are_one_line_in_one_format(tmp_path, name):
    source, want = BAD_FILES[name]
    path = write_file(tmp_path, f"{name}.py", source)
    with pytest.raises(UserError) as info:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    line = str(info.value)
    assert "\n" not in line
    if name == "models_do_not_fit":  # Keras words the shape error; we word the rest
        assert line.startswith(want) and line.endswith("; check noise_dim and the data shape"), line
        assert "expected axis -1 of input shape to have value 4" in line and "\x1b" not in line and len(line) < MAX_MESSAGE + 200, line
    else:
        assert line == want
    assert "Traceback" in info.value.detail
    assert (path.name in info.value.detail) == (name != "models_do_not_fit")  # Keras raised, not the file


def test_user_code_passes_our_own_errors_and_ctrl_c_through():
    for e in (UserError("a check of our own"), KeyboardInterrupt()):
        with pytest.raises(type(e)) as info, user_code("x", None):
            raise e
        assert info.value is e
    with pytest.raises(UserError) as info, user_code("the thing", None, fix="do that"):
        raise ValueError("x" * 1000)
    assert str(info.value).startswith("the thing raised ValueError: xxx") and str(info.value).endswith("…; do that")
    assert len(str(info.value)) < MAX_MESSAGE + 50


RING_LIKE = [VarInfo(f"{m}/{layer}/{w}", (2, 2), "float32", True)
             for m in ("generator", "discriminator") for layer in ("dense_1", "dense_10", "out")
             for w in ("kernel", "bias")]


@pytest.mark.parametrize("scope, want", [
    ("generator/dense1", "unknown scope 'generator/dense1'; did you mean generator/dense_1? "
                         "(see them all with --list-scopes)"),
    ("discriminatr", "unknown scope 'discriminatr'; did you mean discriminator? (see them all with --list-scopes)"),
    ("generator/out/kernl", "unknown scope 'generator/out/kernl'; did you mean generator/out/kernel? "
                            "(see them all with --list-scopes)"),
    ("nosuch", "unknown scope 'nosuch'; scopes start with discriminator, generator (see them all with --list-scopes)"),
])
def test_unknown_scope_suggests_the_closest(scope, want):
    with pytest.raises(UserError) as info:
        resolve_scopes([scope], RING_LIKE)
    assert str(info.value) == want
    assert resolve_scopes(["generator/dense_1/"], RING_LIKE) == ("generator/dense_1",)


_RANDOM_LOSS = '''
import keras
import numpy as np
import tensorflow as tf
from training_core import Experiment, Phase

own = tf.random.Generator.from_seed(3)

def net():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")], name="net")

def seeded(ctx):
    return keras.ops.mean(ctx.models.net(ctx.batch + ctx.normal((4, 2))) ** 2)

def escapes(ctx):
    return keras.ops.mean(ctx.models.net(ctx.batch + tf.random.normal((4, 2))) ** 2)

def own_generator(ctx):
    return keras.ops.mean(ctx.models.net(ctx.batch + own.uniform((4, 2))) ** 2)

def build():
    return Experiment(name="r", models={"net": net()}, data=np.ones((8, 2), "float32"), batch_size=4,
                      phases=[Phase("S", seeded, trains=["net"]), Phase("D", escapes, trains=["net"]),
                              Phase("O", own_generator, trains=["net"])])
'''


def test_a_loss_drawing_from_tf_random_is_warned_about(tmp_path):
    path = write_file(tmp_path, "random_loss.py", _RANDOM_LOSS)
    p = prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert p.warnings == [
        "phase D's loss draws from tf.random (RandomStandardNormal), whose state the run's checkpoints do not "
        "save; use ctx.normal/ctx.uniform",
        "phase O's loss draws from tf.random (RngReadAndSkip), whose state the run's checkpoints do not "
        "save; use ctx.normal/ctx.uniform"]
    gan = prepare(RunConfig(experiment_file=str(tiny_gan(tmp_path))), lambda *_: None)
    assert gan.warnings == []  # ctx.normal, and the batch drawn by the run's generator, are covered


def test_models_left_with_keras_default_names_are_warned_of(tmp_path):
    """Unnamed Sequentials train, but their scopes read sequential/... and sequential_1/...: a warning names
    the model and the fix; named ones (and a model whose key is its default name) get none."""
    unnamed = write_file(tmp_path, "unnamed.py", '''
        import keras, numpy as np
        noise_dim = 2
        def generator():
            return keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])
        def discriminator():
            return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)], name="discriminator")
        real_data = np.zeros((10, 2), "float32")
        ''')
    prepared = prepare(RunConfig(experiment_file=str(unnamed)), lambda *_: None)
    [warning] = [w for w in prepared.warnings if "Keras' default" in w]
    name = prepared.experiment.models["generator"].name
    assert warning.startswith(f"model 'generator' is named {name!r} by Keras' default, so its variables read {name}/")
    assert "name='generator'" in warning and "\n" not in warning
    assert all(v.path.startswith((f"{name}/", "discriminator/")) for v in prepared.var_infos)
    named = write_file(tmp_path, "named.py", (tmp_path / "unnamed.py").read_text().replace(
        "keras.layers.Dense(2)])", "keras.layers.Dense(2)], name='generator')"))
    assert not [w for w in prepare(RunConfig(experiment_file=str(named)), lambda *_: None).warnings
                if "Keras' default" in w]


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


@pytest.mark.parametrize("optimizers, want", [
    ('"adam", keras.optimizers.Adam()', "phase 'A': optimizer must be a Keras optimizer, got str 'adam'; "
                                         "give e.g. keras.optimizers.Adam(1e-3)"),
    ("opt, opt", "phases 'A' and 'B' share one optimizer object; give each phase its own (make a new one per "
                 "phase, e.g. in a function)"),
])
def test_an_optimizer_that_is_not_one_or_is_shared_is_one_line(tmp_path, optimizers, want):
    """A string crashed with a traceback in opt.build; one Adam for two phases was refused with
    "use a Keras optimizer", which it was."""
    path = write_file(tmp_path, "opts.py", f'''
        import keras, numpy as np
        from training_core import Experiment, Phase
        def net(name):
            return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")], name=name)
        def loss(ctx):
            return keras.ops.mean(keras.ops.square(ctx.models.a(ctx.batch) - ctx.models.b(ctx.batch)))
        def build():
            opt = keras.optimizers.Adam(1e-3)
            oa, ob = {optimizers}
            return Experiment(name="x", models={{"a": net("a"), "b": net("b")}}, data=np.ones((8, 2), "float32"),
                              batch_size=4, phases=[Phase("A", loss, trains=["a"], optimizer=oa),
                                                    Phase("B", loss, trains=["b"], optimizer=ob)])
        ''')
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert str(e.value) == want


def test_a_nested_model_no_phase_trains_is_warned_of(tmp_path):
    """A backbone built before it is nested in the classifier keeps its own scope (backbone/...), so
    trains=["classifier"] silently left it untrained; a warning names it and the fix."""
    path = write_file(tmp_path, "nested.py", '''
        import keras, numpy as np
        from training_core import Experiment, Phase
        def build():
            backbone = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="d")], name="backbone")
            clf = keras.Sequential([keras.Input((2,)), backbone, keras.layers.Dense(1, name="out")], name="classifier")
            loss = lambda ctx: keras.ops.mean(keras.ops.square(ctx.models.classifier(ctx.batch)))
            return Experiment(name="x", models={"classifier": clf}, data=np.ones((8, 2), "float32"), batch_size=4,
                              phases=[Phase("fit", loss, trains={trains})])
        ''')
    untrained = write_file(tmp_path, "untrained.py", path.read_text().replace("{trains}", '["classifier"]'))
    [warning] = prepare(RunConfig(experiment_file=str(untrained)), lambda *_: None).warnings
    assert warning == ("model 'classifier' has 2 trainable variables outside its scope classifier/ that no phase "
                       "trains (backbone/d/kernel, ...: a model nested in it keeps its own name); add 'backbone' to "
                       "the trains of the phase that should train them")
    trained = write_file(tmp_path, "trained.py", path.read_text().replace("{trains}", '["classifier", "backbone"]'))
    assert prepare(RunConfig(experiment_file=str(trained)), lambda *_: None).warnings == []


def test_a_functional_model_in_the_gan_shortcut_names_the_fix(tmp_path):
    """keras.Model(inputs, outputs) names its variables by its layers alone (d_h/kernel): the shortcut trains
    the model by its name and was refused with "name scopes that exist", which the file had not named."""
    src = '''
        import keras, numpy as np
        noise_dim = 2
        def generator():
            return keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, name="out")], name="generator")
        def discriminator():
            {scope}x = keras.Input((2,))
            {scope}return keras.Model(x, keras.layers.Dense(1, name="d_out")(x), name="discriminator")
        real_data = np.zeros((10, 2), "float32")
        '''
    bare = write_file(tmp_path, "functional.py", src.replace("{scope}", ""))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(bare)), lambda *_: None)
    assert str(e.value) == ("phase 'D' trains model 'discriminator', but its variables do not read discriminator/... "
                            "(d_out/kernel, ...: Keras names a functional model's variables by its layers alone); "
                            "build its layers inside `with keras.name_scope('discriminator'):`, or make it a "
                            "keras.Sequential")
    scoped = write_file(tmp_path, "scoped.py", src.replace(
        "{scope}x = ", "with keras.name_scope('discriminator'):\n                x = ").replace("{scope}return", "    return"))
    assert "discriminator/d_out/kernel" in [v.path for v in prepare(RunConfig(experiment_file=str(scoped)),
                                                                    lambda *_: None).var_infos]


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


@pytest.mark.parametrize("loss_b, want", [
    ("ctx.models.a(ctx.batch)", "error"),  # B's loss never reaches b: nothing in B would ever train
    # reaches b's first layer's bias only: its kernel and the other layer never train
    ("ctx.models.a(ctx.batch) + keras.ops.sum(ctx.models.b.layers[0].bias)", "warning"),
])
def test_variables_a_loss_has_no_gradient_for_are_named(tmp_path, loss_b, want):
    """Phase B's loss did not depend on (some of) the variables it trains: the run trained nothing there,
    exit 0, not a word. All of them: one line before anything is written; some: a warning naming them."""
    path = write_file(tmp_path, "nograd.py", f'''
        import keras, numpy as np
        from training_core import Experiment, Phase
        def net(name):
            return keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, name="h"),
                                     keras.layers.Dense(1, name="out")], name=name)
        def loss_a(ctx):
            return keras.ops.mean(keras.ops.square(ctx.models.a(ctx.batch)))
        def loss_b(ctx):
            return keras.ops.mean({loss_b})
        def build():
            return Experiment(name="x", models={{"a": net("a"), "b": net("b")}}, data=np.ones((8, 2), "float32"),
                              batch_size=4, phases=[Phase("A", loss_a, trains=["a"]), Phase("B", loss_b, trains=["b"])])
        ''')
    if want == "error":
        with pytest.raises(UserError) as e:
            prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
        assert str(e.value) == ("phase 'B' in nograd.py: its loss has no gradient for any of the 4 variables it trains "
                                "(b/h/kernel, b/h/bias, b/out/kernel, ...); compute the loss from the models in its "
                                "trains, or train the scopes its loss uses")
    else:
        p = prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
        assert [w for w in p.warnings if "no gradient" in w] == [
            "phase B's loss has no gradient for 3 of its 4 variables (b/h/kernel, b/out/kernel, b/out/bias): they "
            "never train; compute the loss from them, or leave them out of the phase's trains"]


def test_a_loss_that_returns_none_says_so(tmp_path):
    """TensorFlow's "None values not supported", with no line, was all a forgotten `return` got."""
    path = write_file(tmp_path, "none.py", _BUILD.format(loss="None"))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert str(e.value) == "the loss of phase 'fit' returned None; end it with `return` and the loss (a scalar tensor)"


def test_counts_read_as_written():
    from training_core.base.scopes import counted
    assert (counted(1, "phase"), counted(2, "phase"), counted(0, "variable")) == ("1 phase", "2 phases", "0 variables")


def test_a_model_that_is_not_a_keras_model_says_so(tmp_path):
    """A function given as a model was told to "build it (keras.Input or model.build(shape))"."""
    path = write_file(tmp_path, "fn.py", _BUILD.format(loss="ctx.models.net(ctx.batch)").replace(
        '{"net": net()}', '{"net": lambda x: x}'))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert str(e.value) == ("model 'net' in fn.py is a function, not a Keras model; give a keras.Model or layer "
                            "(e.g. keras.Sequential([...], name='net'))")


@pytest.mark.parametrize("trains", [["nett"], ["net", "net/outt"]])
def test_a_typo_in_a_phases_trains_names_the_scope_it_meant(tmp_path, trains):
    """An unknown scope in Phase(trains=...) said "name scopes that exist" (all unknown) or nothing at all
    (one of two unknown: those variables silently never trained); --freeze has always said what it meant."""
    path = write_file(tmp_path, "typo.py", _BUILD.format(loss="ctx.models.net(ctx.batch)").replace(
        'trains=["net"]', f"trains={trains!r}"))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    meant = "net" if trains == ["nett"] else "net/out"
    assert str(e.value) == (f"phase 'fit' trains an unknown scope {trains[-1]!r}; did you mean {meant}? "
                            "(see them all with --list-scopes)")


def test_a_scope_keras_made_untrainable_is_no_typo(tmp_path):
    """A backbone frozen the Keras way (trainable=False) exists: a phase that names it with its head trains the
    head; one that names only it is told why nothing is left to train."""
    src = _BUILD.format(loss="keras.ops.mean(ctx.models.net(keras.ops.ones((4, 2))))").replace(
        'keras.layers.Dense(1, name="out")', 'keras.layers.Dense(2, name="body", trainable=False), '
        'keras.layers.Dense(1, name="out")')
    both = write_file(tmp_path, "both.py", src.replace('trains=["net"]', 'trains=["net/body", "net/out"]'))
    p = prepare(RunConfig(experiment_file=str(both)), lambda *_: None)
    assert p.phase_paths == [("net/out/kernel", "net/out/bias")]
    only = write_file(tmp_path, "only.py", src.replace('trains=["net"]', 'trains=["net/body"]'))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(only)), lambda *_: None)
    assert str(e.value) == ("phase 'fit' trains net/body, but none of their variables is trainable (Keras "
                            "trainable=False); train scopes with trainable variables")


def test_a_typo_beside_a_model_with_a_nested_backbone_is_named_as_a_typo(tmp_path):
    """`trains=["classifier", "backbon"]`, the classifier a Sequential nesting a backbone (backbone/...): the
    line blamed the classifier for being a functional model; the typo is what is unknown."""
    path = write_file(tmp_path, "typo_nested.py", '''
        import keras, numpy as np
        from training_core import Experiment, Phase
        def loss(ctx):
            return keras.ops.mean(ctx.models.classifier(ctx.batch))
        def build():
            backbone = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, name="d")], name="backbone")
            classifier = keras.Sequential([keras.Input((2,)), backbone, keras.layers.Dense(1, name="out")],
                                          name="classifier")
            return Experiment(name="x", models={"classifier": classifier}, data=np.ones((8, 2), "float32"),
                              batch_size=4, phases=[Phase("fit", loss, trains=["classifier", "backbon"])])
        ''')
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert str(e.value) == ("phase 'fit' trains an unknown scope 'backbon'; did you mean backbone? "
                            "(see them all with --list-scopes)")


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
    path = write_file(tmp_path, "eight_rows.py", _BUILD.format(loss="keras.ops.mean(ctx.models['net'](ctx.batch[:, :2]))"))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path), batch_size=9), lambda *_: None)
    assert str(e.value) == ("batch size 9 is larger than the data of the experiment in eight_rows.py (8 rows); give "
                            "--batch-size 8 or less")
    assert prepare(RunConfig(experiment_file=str(path), batch_size=8), lambda *_: None).experiment.batch_size == 8
    assert prepare(RunConfig(experiment_file=str(path), batch_size=4), lambda *_: None).experiment.batch_size == 4


def test_a_default_ratio_that_gives_a_phase_no_steps_names_the_file(tmp_path):
    path = write_file(tmp_path, "ratio_zero.py", _BUILD.format(loss="keras.ops.mean(ctx.models['net'](ctx.batch[:, :2]))")
                      .replace('phases=[Phase("fit", loss, trains=["net"])]',
                               'phases=[Phase("fit", loss, trains=["net"]), Phase("idle", loss, trains=["net"])], '
                               'default_ratio=[3, 0]'))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    assert str(e.value) == ("default ratio 3:0 in ratio_zero.py gives phase 'idle' 0 steps, so it would never train; "
                            "give every phase a count >= 1 (e.g. 3:1), or freeze what idle trains to stop it")

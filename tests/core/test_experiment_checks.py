"""What preparing checks of an experiment's models, losses and optimizers (engine/experiment_checks.py, called by
engine/prepare.py), each problem one line before anything is written: an optimizer that is not one, or is shared
by two phases; a functional model in the GAN shortcut whose variables do not carry its name; variables a loss has
no gradient for (all of them: refused; some: a warning naming them).

The experiment files are prepared for real (`prepare`, as a run would)."""
from __future__ import annotations

import pytest

from training_core import RunConfig, UserError
from training_core.engine.prepare import prepare

from .helpers import write_file


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

"""Scopes (base/scopes.py) as an experiment's phases and the GAN shortcut name them: an unknown scope suggests the
closest one, in `resolve_scopes` and in a phase's `trains`; a scope Keras made untrainable is no typo; models left
with Keras' default names, and a nested model that keeps its own scope which no phase trains, are warned of.

The experiment files are prepared for real (`prepare`, as a run would)."""
from __future__ import annotations

import pytest

from training_core import RunConfig, UserError, VarInfo
from training_core.base.scopes import resolve_scopes
from training_core.engine.prepare import prepare

from .experiment_texts import ONE_NET
from .helpers import write_file


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


def test_counts_read_as_written():
    from training_core.base.scopes import counted
    assert (counted(1, "phase"), counted(2, "phase"), counted(0, "variable")) == ("1 phase", "2 phases", "0 variables")


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


@pytest.mark.parametrize("trains", [["nett"], ["net", "net/outt"]])
def test_a_typo_in_a_phases_trains_names_the_scope_it_meant(tmp_path, trains):
    """An unknown scope in Phase(trains=...) said "name scopes that exist" (all unknown) or nothing at all
    (one of two unknown: those variables silently never trained); --freeze has always said what it meant."""
    path = write_file(tmp_path, "typo.py", ONE_NET.format(loss="ctx.models.net(ctx.batch)").replace(
        'trains=["net"]', f"trains={trains!r}"))
    with pytest.raises(UserError) as e:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    meant = "net" if trains == ["nett"] else "net/out"
    assert str(e.value) == (f"phase 'fit' trains an unknown scope {trains[-1]!r}; did you mean {meant}? "
                            "(see them all with --list-scopes)")


def test_a_scope_keras_made_untrainable_is_no_typo(tmp_path):
    """A backbone frozen the Keras way (trainable=False) exists: a phase that names it with its head trains the
    head; one that names only it is told why nothing is left to train."""
    src = ONE_NET.format(loss="keras.ops.mean(ctx.models.net(keras.ops.ones((4, 2))))").replace(
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

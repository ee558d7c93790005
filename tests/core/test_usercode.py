"""Failures of user code (experiment/usercode.py): an experiment file that raises, a `build()` that raises, a loss
that fails to trace, the GAN shortcut's models that raise or do not fit: each one line in one format (what failed,
the exception, the line of the user's file, the fix) with the traceback as detail; our own errors and Ctrl-C pass
through.

Each bad file is prepared for real (`prepare`, as a run would), so the line tested is the line a user sees on the
terminal and in the window."""
from __future__ import annotations

import pytest

from training_core import RunConfig, UserError
from training_core.engine.prepare import prepare
from training_core.experiment.usercode import MAX_MESSAGE, user_code

from .experiment_texts import MISFIT_GAN, ONE_NET
from .helpers import write_file


BAD_FILES = {  # name: (source, the exact line, up to where the exception's own message starts)
    "raises_at_import": ("import keras\n\nx = 1 / 0\n",
                         "experiment file raises_at_import.py raised ZeroDivisionError: division by zero at line 3; "
                         "fix the file"),
    "build_raises": ("def build():\n    raise RuntimeError('boom')\n",
                     "build() in build_raises.py raised RuntimeError: boom at line 2; fix the file"),
    "loss_fails_to_trace": (ONE_NET.format(loss="ctx.models.nosuch(ctx.batch)"),
                            "the loss of phase 'fit' in loss_fails_to_trace.py raised AttributeError: no model named "
                            "'nosuch'; models are net at line 9; fix the file"),
    "gan_builder_raises": ("noise_dim = 2\nreal_data = None\ndiscriminator = None\n"
                           "def generator():\n    return undefined_name\n",
                           "building the models of gan_builder_raises.py raised NameError: name 'undefined_name' is "
                           "not defined at line 5; fix the file"),
    # the shapes, named before Keras is called (gan.check_shapes): no Keras exception in the line
    "models_do_not_fit": (MISFIT_GAN, "the generator in models_do_not_fit.py takes inputs of shape (4,), but "
                                      "noise_dim = 3; set noise_dim = 4, or give the generator keras.Input((3,))"),
}


@pytest.mark.parametrize("name", list(BAD_FILES))
def test_user_code_failures_are_one_line_in_one_format(tmp_path, name):
    source, want = BAD_FILES[name]
    path = write_file(tmp_path, f"{name}.py", source)
    with pytest.raises(UserError) as info:
        prepare(RunConfig(experiment_file=str(path)), lambda *_: None)
    line = str(info.value)
    assert "\n" not in line
    assert line == want
    if name == "models_do_not_fit":  # our own check: no traceback to keep
        return
    assert "Traceback" in info.value.detail and path.name in info.value.detail


def test_user_code_passes_our_own_errors_and_ctrl_c_through():
    for e in (UserError("a check of our own"), KeyboardInterrupt()):
        with pytest.raises(type(e)) as info, user_code("x", None):
            raise e
        assert info.value is e
    with pytest.raises(UserError) as info, user_code("the thing", None, fix="do that"):
        raise ValueError("x" * 1000)
    assert str(info.value).startswith("the thing raised ValueError: xxx") and str(info.value).endswith("…; do that")
    assert len(str(info.value)) < MAX_MESSAGE + 50
